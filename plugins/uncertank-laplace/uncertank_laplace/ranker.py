"""The ranker ``laplace``: a trained cross-encoder with a Laplace posterior over its output layer."""

from __future__ import annotations

import contextlib
import copy
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from typing_extensions import Self

from uncertank import CostRates, NotFittedError, Predictions, QuerySet
from uncertank.nn import (
    CrossEncoderModel,
    EncodedPairs,
    NeuralRanker,
    PretrainedCrossEncoder,
    SamplingRanker,
    get_accelerator,
    training_pairs,
)
from uncertank.validation import check_choice, check_positive_int
from uncertank_laplace.posterior import STRUCTURES, LastLayerPosterior, _probit, fit_last_layer

__all__ = ["LaplaceRanker"]

#: The file of a checkpoint that holds the posterior, beside the network's ``model.safetensors``.
POSTERIOR_FILE = "laplace.safetensors"
_FORMAT = "uncertank-laplace/1"


def output_layer(model: torch.nn.Module) -> torch.nn.Linear:
    """The network's output layer: its last ``nn.Linear`` (``classifier``, ``out_proj``, the head's last layer).

    :meth:`LaplaceRanker.features` checks, on every batch, that the network's
    logits are this layer's output.

    Raises
    ------
    ValueError
        When the network has no ``nn.Linear``, or the last one has more than two outputs.
    """
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise ValueError(f"last-layer Laplace needs a network whose output layer is an nn.Linear; "
                         f"{type(model).__name__} has none")
    layer = linears[-1]
    if layer.out_features not in (1, 2):
        raise ValueError(
            f"last-layer Laplace needs an output layer with one logit or two; the last nn.Linear of "
            f"{type(model).__name__} has {layer.out_features} outputs"
        )
    return layer


class LaplaceRanker(SamplingRanker, NeuralRanker):
    """A trained cross-encoder whose output layer gets its Laplace posterior (last-layer Laplace).

    The network is a plain cross-encoder: a user's own Hugging Face or
    sentence-transformers classifier folder (``pretrained=``, its head kept),
    a fitted ``bert`` or ``mc_dropout`` (:meth:`from_ranker`, encoder *and*
    head copied), or, from a backbone, a cross-encoder that :meth:`fit`
    first fine-tunes exactly as ``bert`` does. Everything before the output
    layer is frozen; the output layer's trained weights are the posterior's
    mean (the MAP), and :meth:`fit` computes, in one eval-mode pass over the
    training pairs, the features that layer receives, then the Hessian
    (:func:`uncertank_laplace.fit_last_layer`), with the prior precision
    that maximises the marginal likelihood. The network's weights do not
    change after that pass: ``predict``'s mean logit is the network's own.

    - :meth:`predict`: the probit approximation ``sigmoid(m / sqrt(1 + pi v / 8))``
      of the relevance logit's mean ``m`` and posterior variance ``v``: one
      forward pass, no sampling.
    - :meth:`predict_samples`: joint draws; row ``s`` applies one draw of the
      output layer from its Gaussian posterior to every pair.
    - :meth:`latent_mean_variance`: ``m`` and ``v`` themselves.

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        As in :class:`uncertank.nn.NeuralRanker` (then :meth:`fit` fine-tunes first).
    hessian_structure : {"auto", "full", "kron"}
        ``"auto"``: the full Hessian of the output layer for one or two
        logits (every cross-encoder head this library reads), Kronecker
        factors otherwise.
    prior_precision : "marglik" or float
        ``"marglik"`` (default): maximise the Laplace marginal likelihood
        over the prior precision ``delta``; a number fixes it.
    n_samples : int
        Rows of :meth:`predict_samples` by default (100: a draw costs a
        product with the features, not a forward pass).
    **params
        Every other parameter of :class:`uncertank.nn.NeuralRanker`
        (``pretrained``, ``pair_format``, ``max_length``, ``train_ratio``,
        ``max_train_queries``, ``eval_batch_size``, ``device``, ``seed``,
        ...); ``seed`` also seeds the draws. ``train_ratio`` (1: balanced
        pairs) and ``max_train_queries`` choose the pairs the posterior is
        fitted on, as they choose ``bert``'s training pairs.

    Attributes
    ----------
    posterior_ : LastLayerPosterior or None
        Set by :meth:`fit` and :meth:`load`.
    """

    name = "laplace"

    def __init__(
        self,
        backbone: Any = None,
        *,
        hessian_structure: str = "auto",
        prior_precision: float | str = "marglik",
        n_samples: int = 100,
        **params: Any,
    ) -> None:
        self.hessian_structure = hessian_structure
        self.prior_precision = prior_precision
        self.n_samples = n_samples
        super().__init__(backbone, **params)
        self.posterior_: LastLayerPosterior | None = None
        self._contrast: tuple[torch.Tensor, torch.Tensor] | None = None

    def _check_params(self) -> None:
        super()._check_params()
        check_choice(self.hessian_structure, "hessian_structure", STRUCTURES)
        p = self.prior_precision
        if isinstance(p, str):
            if p != "marglik":
                raise ValueError(f"prior_precision must be 'marglik' or a number > 0; got {p!r}")
        elif isinstance(p, bool) or not isinstance(p, (int, float)) or not (math.isfinite(p) and p > 0):
            raise ValueError(f"prior_precision must be 'marglik' or a number > 0; got {p!r}")
        check_positive_int(self.n_samples, "n_samples")

    @property
    def prior_precision_(self) -> float | str:
        """``prior_precision`` as the fit uses it: ``"marglik"`` or a float."""
        p = self.prior_precision
        return p if isinstance(p, str) else float(p)

    # -- state ---------------------------------------------------------------------------------

    @property
    def is_fitted(self) -> bool:
        """True once the posterior is computed (:meth:`fit`) or loaded (:meth:`load`)."""
        return self.posterior_ is not None

    def check_fitted(self) -> None:
        """Raise :class:`uncertank.NotFittedError` until the posterior exists."""
        if self.posterior_ is None:
            raise NotFittedError(
                f"ranker {self.name!r} (LaplaceRanker) has no Laplace posterior yet: call fit(train) (a labelled "
                "QuerySet; a trained network is not changed, its output layer gets its posterior), or load a "
                "checkpoint with load(path)"
            )

    def warm_start(self, other: NeuralRanker) -> Self:
        """Start from a copy of ``other``'s whole trained network, output layer included.

        Unlike :meth:`uncertank.nn.NeuralRanker.warm_start` (a new head on the
        encoder), last-layer Laplace keeps the head that was trained: its
        weights are the posterior's mean. ``other`` is not changed; its
        tokenizer, pair format, pooling and ``max_length`` (unless this
        ranker was given one) are taken over.

        Raises
        ------
        TypeError
            When ``other`` is not a NeuralRanker.
        ValueError
            When ``other`` is not fitted, this ranker already has a network,
            or ``other``'s network is not a plain cross-encoder
            (``bert``, ``mc_dropout``, a pretrained classifier).
        """
        if not isinstance(other, NeuralRanker):
            raise TypeError(f"other must be a NeuralRanker; got {type(other).__name__}")
        if not other.is_fitted:
            raise ValueError(f"other must be fitted or loaded; got an untrained {other.name!r}")
        if self.model is not None:
            raise ValueError(f"warm_start needs a ranker whose network is not built yet; {self.name!r} has one")
        network = other.build_model()
        if not isinstance(network, (CrossEncoderModel, PretrainedCrossEncoder)):
            raise ValueError(
                f"laplace starts from a plain cross-encoder (bert, mc_dropout, a pretrained classifier); "
                f"{other.name!r} has a {type(network).__name__}"
            )
        self.model = copy.deepcopy(network).eval()
        self.tokenizer_ = other.tokenizer_
        self.read_pairs_like(other, whole_network=True)
        self.posterior_ = None
        self._contrast = None
        self.weights_source_ = "warm_start"
        return self

    # -- fitting ----------------------------------------------------------------------------------

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """The posterior on the training pairs: 495.6 s on 9,539 queries, ``predict`` 39.2 s on 6,000 pairs.

        Measured on two CPU cores on bert's trained encoder
        (docs/results/conformal_full.json, the conformal study's
        ``step_seconds``). Not started from a fitted ranker, it fine-tunes
        first as :class:`~uncertank.nn.NeuralRanker` does, at its rate.
        """
        posterior = 495.6 / 9539
        base = None if warm_start else super().cost_rates()
        return CostRates(posterior + (base.fit_per_query if base is not None else 0.0), 39.2 / 6000)

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Compute the Laplace posterior of the output layer on ``train``'s pairs.

        A network that was never trained (built from a backbone) is first
        fine-tuned as ``bert`` is (``valid`` picks the epoch); the posterior is
        then computed at the final weights. A trained network (``pretrained``,
        :meth:`from_ranker`, a loaded or earlier fit) is left as it is and
        only its posterior is (re)computed; ``valid`` is not used, since the
        prior precision comes from the marginal likelihood of ``train``.

        Parameters
        ----------
        train : QuerySet
            Labelled queries; their pairs are chosen by ``train_ratio`` and
            ``max_train_queries`` (seeded by ``seed``) as for training.
        valid : QuerySet, optional

        Returns
        -------
        self
        """
        self.posterior_ = None
        self._contrast = None
        if self.weights_source_ is None:  # a random head: fine-tune first, on_train_end fits the posterior
            return super().fit(train, valid)
        model = self.build_model()
        cfg = self.training_config
        queries = self.check_queries(train)
        if cfg.max_train_queries is not None and queries.n_queries > cfg.max_train_queries:
            keep = np.random.default_rng(cfg.seed).choice(queries.n_queries, size=cfg.max_train_queries, replace=False)
            queries = queries.subset(np.sort(keep))
        contexts, candidates, query_index, labels = training_pairs(queries, ratio=cfg.train_ratio, seed=cfg.seed)
        pairs = self.encode_texts(contexts, candidates, query_index)
        self._fit_posterior(model, pairs, labels, get_accelerator(self.device))
        return self

    def on_train_end(
        self, model: torch.nn.Module, pairs: EncodedPairs, labels: NDArray[np.int64], accelerator: Any
    ) -> None:
        """After fine-tuning: the posterior at the final weights, on the last epoch's training pairs."""
        self._fit_posterior(model, pairs, labels, accelerator)

    def _fit_posterior(
        self, model: torch.nn.Module, pairs: EncodedPairs, labels: NDArray[np.int64], accelerator: Any
    ) -> None:
        layer = output_layer(model)
        out = self._feature_batches(
            model, pairs, lambda phi, logits: torch.cat([phi.float(), logits.float()], 1), accelerator,
            f"{self.name} features",
        )
        d = layer.in_features
        bias = None if layer.bias is None else layer.bias.detach().cpu()
        self.posterior_ = fit_last_layer(
            out[:, :d], labels, layer.weight.detach().cpu(), bias,
            structure=self.hessian_structure, prior_precision=self.prior_precision_,
        )
        self._contrast = None

    # -- the forward pass ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _capture(self, layer: torch.nn.Linear) -> Iterator[dict[str, torch.Tensor]]:
        seen: dict[str, torch.Tensor] = {}

        def hook(module: torch.nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> None:
            seen["input"], seen["output"] = args[0], output

        handle = layer.register_forward_hook(hook)
        try:
            yield seen
        finally:
            handle.remove()

    def _feature_batches(
        self,
        model: torch.nn.Module,
        pairs: EncodedPairs,
        fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        accelerator: Any,
        desc: str,
    ) -> NDArray[np.float64]:
        """``fn(phi, logits)`` over every pair in batches: one eval-mode forward pass of the network each."""
        layer = output_layer(model)

        def batch_fn(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            seen.clear()
            logits = model(**batch)
            if "input" not in seen or not (seen["output"] is logits or torch.equal(seen["output"], logits)):
                raise ValueError(
                    f"the network's logits are not the output of its last nn.Linear ({type(model).__name__}); "
                    "last-layer Laplace needs a network whose output layer is linear and last"
                )
            return fn(seen["input"], logits)

        with self._capture(layer) as seen:
            return self.batch_outputs(pairs, batch_fn, desc, model=model, accelerator=accelerator)

    def _relevance(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, bool]:
        """The contrast weights, the square root of its covariance on ``device``, and whether there is a bias."""
        assert self.posterior_ is not None
        if self._contrast is None:
            _, cov = self.posterior_.contrast()
            self._contrast = (self.posterior_.contrast_weights(), torch.linalg.cholesky(cov))
        w, scale = self._contrast
        return w.to(device), scale.to(device), self.posterior_.has_bias

    def _relevance_batches(
        self, queries: QuerySet, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], desc: str
    ) -> NDArray[np.float64]:
        """``fn(m, x S^1/2)`` per batch: the relevance logit (b,) and its features times the contrast scale."""
        self.check_fitted()
        model = self.build_model()
        acc = get_accelerator(self.device)
        w, scale, has_bias = self._relevance(acc.device)

        def per_batch(phi: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
            with torch.autocast(phi.device.type, enabled=False):
                x = phi.double()
                if has_bias:
                    x = torch.cat([x, torch.ones_like(x[:, :1])], 1)
                m = logits.double() @ w
                return fn(m, x @ scale)

        return self._feature_batches(model, self.encode(queries), per_batch, acc, desc)

    # -- predictions --------------------------------------------------------------------------------

    def latent_mean_variance(self, queries: QuerySet) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The relevance logit of every pair and its posterior variance, in closed form.

        Returns
        -------
        mean : ndarray of shape (n_pairs,)
            ``m``: the network's logit (one logit) or ``l_1 - l_0`` (two), whose
            sigmoid is the network's own P(relevant).
        variance : ndarray of shape (n_pairs,)
            ``v = x^T S x`` (see :mod:`uncertank_laplace.posterior`).
        """
        queries = self.check_queries(queries)
        out = self._relevance_batches(
            queries, lambda m, xs: torch.stack([m, (xs**2).sum(1)], 1), f"{self.name} mean/variance"
        )
        return out[:, 0], out[:, 1]

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) by the probit approximation ``sigmoid(m / sqrt(1 + pi v / 8))``, shape (n_pairs,).

        Raises
        ------
        uncertank.NotFittedError
            Before :meth:`fit` or :meth:`load`.
        """
        queries = self.check_queries(queries)
        out = self._relevance_batches(
            queries, lambda m, xs: _probit(m, (xs**2).sum(1))[:, None], f"{self.name}"
        )
        return Predictions(out[:, 0], queries.offsets, ranker=self.name)

    def sample_probabilities(self, queries: QuerySet, n_samples: int) -> NDArray[np.float64]:
        """Draws for :meth:`predict_samples`, shape (n_samples, n_pairs).

        Row ``s`` is ``sigmoid(u_s^T x)`` for one draw ``u_s`` of the relevance
        contrast from its Gaussian posterior (the output layer's posterior,
        projected), over every pair, so that the candidates of a query covary
        as the posterior says. Seeded by ``seed``.
        """
        assert self.posterior_ is not None
        gen = torch.Generator().manual_seed(self.seed)
        z = torch.randn(self.posterior_.mean.shape[1], n_samples, generator=gen, dtype=torch.float64)  # cpu: seeded
        device_z: dict[torch.device, torch.Tensor] = {}

        def draws(m: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
            zz = device_z.setdefault(xs.device, z.to(xs.device))
            return torch.sigmoid(m[:, None] + xs @ zz)

        return self._relevance_batches(queries, draws, f"{self.name} samples").T

    # -- persistence ------------------------------------------------------------------------------

    def save_into(self, folder: Path, model: torch.nn.Module) -> None:
        """The network as :class:`uncertank.nn.NeuralRanker` writes it, and the posterior in ``laplace.safetensors``."""
        from safetensors.torch import save_file

        super().save_into(folder, model)
        assert self.posterior_ is not None
        tensors, meta = self.posterior_.to_tensors()
        save_file(tensors, str(Path(folder) / POSTERIOR_FILE), metadata={"format": _FORMAT, **meta})

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Self:
        """Rebuild a ranker written by :meth:`save`; predictions and draws are bit-identical.

        ``hessian_structure`` and ``prior_precision`` shaped the saved
        posterior: an override that contradicts it is refused.

        Raises
        ------
        ValueError
            When the folder holds no readable posterior, or an override contradicts it.
        """
        from safetensors import safe_open

        ranker = super().load(path, **overrides)
        file = Path(path) / POSTERIOR_FILE
        if not file.is_file():
            raise ValueError(f"checkpoint {str(path)!r} holds no Laplace posterior ({POSTERIOR_FILE}); save the "
                             "fitted laplace ranker again")
        try:
            with safe_open(str(file), framework="pt") as fh:
                meta = dict(fh.metadata() or {})
                tensors = {k: fh.get_tensor(k) for k in fh.keys()}
        except Exception as err:  # safetensors raises its own error type for a bad file
            raise ValueError(f"checkpoint posterior {str(file)!r} is not a readable safetensors file ({err})") from None
        if meta.get("format") != _FORMAT:
            raise ValueError(f"checkpoint posterior {str(file)!r} has format {meta.get('format')!r}; "
                             f"expected {_FORMAT!r}")
        posterior = LastLayerPosterior.from_tensors(tensors, meta)
        wanted = ranker.hessian_structure
        if wanted != "auto" and wanted != posterior.structure:
            raise ValueError(f"hessian_structure={wanted!r} contradicts the checkpoint's {posterior.structure!r} "
                             f"posterior in {str(path)!r}; leave it out or refit")
        if not isinstance(ranker.prior_precision, str) and ranker.prior_precision != posterior.prior_precision:
            raise ValueError(f"prior_precision={ranker.prior_precision!r} contradicts the checkpoint's "
                             f"{posterior.prior_precision!r} in {str(path)!r}; leave it out or refit")
        ranker.posterior_ = posterior
        return ranker
