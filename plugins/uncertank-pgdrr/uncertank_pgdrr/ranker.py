"""PG-DRR: a cross-encoder with a Gaussian-process output layer and Pólya-Gamma Gibbs sampling."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from uncertank import CostRates, Predictions, QuerySet
from uncertank.nn import (
    EncodedPairs,
    NeuralRanker,
    SamplingRanker,
    balanced_pairs,
    check_pooling,
    get_accelerator,
    pool_encoder,
    score_batches,
)
from uncertank.validation import check_instance, check_positive_int, check_scale
from uncertank_pgdrr.gp import DEFAULT_JITTER, GaussianProcessHead

__all__ = ["PGDRRModel", "PGDRRRanker"]


class PGDRRModel(nn.Module):
    """Encoder, ``[CLS]``, then the GP output layer (:class:`~uncertank_pgdrr.gp.GaussianProcessHead`).

    In training mode ``model(**batch)`` returns the kernel's input features
    of shape (batch, dim), which the ranker's loss turns into the
    Fisher-identity loss; in eval mode it returns one logit per pair (the
    logit of the predictive P(relevant) given the memory bank), shape (batch, 1).

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
    pooling : {"cls", "mean"}
        The encoder's output the GP layer sees (:func:`uncertank.nn.pool_encoder`);
        ``"cls"``, the paper's, by default.
    **head
        Keyword arguments of :class:`~uncertank_pgdrr.gp.GaussianProcessHead`.
    """

    head: GaussianProcessHead

    def __init__(self, encoder: nn.Module, *, pooling: str = "cls", **head: Any) -> None:
        super().__init__()
        check_instance(encoder, "encoder", nn.Module, "a transformers encoder (nn.Module with config.hidden_size)")
        self.pooling = check_pooling(pooling)
        hidden = getattr(getattr(encoder, "config", None), "hidden_size", None)
        if isinstance(hidden, bool) or not isinstance(hidden, int):
            raise TypeError(f"encoder must be a transformers encoder whose config names its hidden_size (an int); "
                            f"got {type(encoder).__name__} with hidden_size {hidden!r}")
        self.encoder = encoder
        self.head = GaussianProcessHead(hidden, **head)

    def features(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """The kernel's input for every pair: pooled vectors (``[CLS]`` by default), projected; shape (batch, dim).

        The encoder runs under the caller's autocast (bf16 on CUDA); the
        projection runs in float32 outside it, as the kernel and the Gibbs
        sweeps after it run in float64.
        """
        pooled = pool_encoder(self.encoder, input_ids, attention_mask, token_type_ids, pooling=self.pooling)
        with _no_autocast(pooled.device):
            return self.head.project(pooled.float())

    def forward(self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        """Features (training mode) or one logit per pair (eval mode)."""
        z = self.features(input_ids, attention_mask, token_type_ids)
        if self.training:
            return z
        with _no_autocast(z.device):
            return self.head(z)


@contextlib.contextmanager
def _no_autocast(device: torch.device) -> Iterator[None]:
    with torch.autocast(device.type, enabled=False):
        yield


class PGDRRRanker(SamplingRanker, NeuralRanker):
    """PG-DRR (Ye et al., AAAI 2023): a GP output layer over ``[CLS]`` with Pólya-Gamma Gibbs.

    The encoder's ``[CLS]`` vector, optionally projected (``projection_dim``),
    is the input of an RBF kernel (``length_scale``, ``output_scale``: 1 and
    8 as in the paper, fixed). Training: for every minibatch, ``n_chains``
    Gibbs chains run ``n_gibbs_steps`` sweeps on the batch's kernel
    (Pólya-Gamma draws by :func:`uncertank_pgdrr.random_polya_gamma`, the
    latent by a batched Cholesky of ``I + Omega^1/2 K Omega^1/2``, never
    ``K^-1``), and the loss is the mean over chains of ``-log N(kappa/omega |
    0, K + Omega^-1)`` with omega detached (Fisher's identity), per pair.

    Prediction conditions on a memory bank of ``bank_size`` labelled training
    pairs (the paper does not say which labelled pairs a test pair is
    conditioned on; this is our choice): after training, ``bank_size`` pairs
    of the last epoch's training pairs (half relevant where possible, or
    at their own ratio with ``balanced_bank=False``; drawn with ``seed``) are scored again with the final weights,
    ``n_chains`` chains run ``n_bank_steps`` sweeps on them, and the last
    omega of every chain is kept. A test pair's latent is then Gaussian per
    chain; P(relevant) is its Gauss-Hermite expectation of the sigmoid,
    averaged over chains. During training (validation) the bank holds the
    most recent training batches' features.

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        As in :class:`uncertank.nn.NeuralRanker`.
    length_scale : float, "median" or "learned"
        RBF kernel length scale (1, the paper's). ``"median"``: without a
        projection, the median distance between the ``[CLS]`` vectors of 256
        training pairs, set once before training (the median heuristic); with
        one, 1 (the projection is scaled to it either way; see :meth:`fit`).
        ``"learned"``: starts where ``"median"`` sets it, then is a parameter
        of the GP layer (trained at ``head_lr``, no weight decay) that the
        training loss, the Fisher-identity estimate of each batch's negative
        log marginal likelihood, moves: type-II maximum likelihood. Its
        value once fitted is :attr:`kernel_length_scale`.
    output_scale : float
        The prior variance of a latent (8, the paper's).
    n_chains, n_gibbs_steps : int
        Gibbs chains and sweeps per training batch (30 and 10, the paper's).
    bank_size : int
        M, the training pairs a prediction conditions on (256).
    n_bank_steps : int
        Gibbs sweeps on the memory bank (50; run once after training).
    projection_dim : int, None or "none"
        Linear projection of ``[CLS]`` before the kernel (64); ``None`` (``"none"`` in a study file) keeps
        ``[CLS]`` as it is (the paper's literal setting; with BERT-sized
        features an RBF kernel of length scale 1 then sees every pair of
        distinct texts as nearly uncorrelated).
    n_quadrature : int
        Gauss-Hermite nodes (64: absolute error below 1e-6 for latent variances up to 8, the prior variance).
    jitter : float
        Nugget on the kernel's diagonal, relative to the output scale.
    balanced_bank : bool
        Draw the memory bank half relevant where possible (True, our
        default), or uniformly from the last epoch's training pairs (False),
        so that it holds them in the ratio they were trained at: the bank is
        what a test pair's latent is conditioned on, so its share of relevant
        pairs sets the base rate the predictive leans to.
    **params
        Every other parameter of :class:`uncertank.nn.NeuralRanker`
        (``max_length``, ``epochs``, ``batch_size``, ``lr``, ``seed``,
        ``num_hidden_layers``, ``device``, ...); ``seed`` also seeds the
        Gibbs chains and the joint draws.
    """

    name = "pgdrr"
    samples_param = "n_chains"

    def __init__(
        self,
        backbone: Any = None,
        *,
        length_scale: float | str = 1.0,
        output_scale: float = 8.0,
        n_chains: int = 30,
        n_gibbs_steps: int = 10,
        bank_size: int = 256,
        n_bank_steps: int = 50,
        projection_dim: int | None = 64,
        n_quadrature: int = 64,
        jitter: float = DEFAULT_JITTER,
        balanced_bank: bool = True,
        **params: Any,
    ) -> None:
        self.length_scale = length_scale
        self.output_scale = output_scale
        self.n_chains = n_chains
        self.n_gibbs_steps = n_gibbs_steps
        self.bank_size = bank_size
        self.n_bank_steps = n_bank_steps
        self.projection_dim = projection_dim
        self.n_quadrature = n_quadrature
        self.jitter = jitter
        self.balanced_bank = balanced_bank
        super().__init__(backbone, **params)
        self.length_scale_: float | None = None  # the median heuristic's value, once fitted
        self.generator: torch.Generator | None = None

    def _check_params(self) -> None:
        super()._check_params()
        if isinstance(self.length_scale, str):
            if self.length_scale not in ("median", "learned"):
                raise ValueError(
                    f"length_scale must be a finite number > 0, 'median' or 'learned'; got {self.length_scale!r}"
                )
        else:
            _positive_float(self.length_scale, "length_scale")
        _positive_float(self.output_scale, "output_scale")
        check_positive_int(self.n_chains, "n_chains")
        check_positive_int(self.n_gibbs_steps, "n_gibbs_steps")
        check_positive_int(self.bank_size, "bank_size", minimum=2)
        check_positive_int(self.n_bank_steps, "n_bank_steps")
        dim = self.projection_dim
        if dim is not None and not (isinstance(dim, str) and dim.lower() == "none"):
            check_positive_int(dim, "projection_dim")
        check_positive_int(self.n_quadrature, "n_quadrature")
        _positive_float(self.jitter, "jitter")
        if not isinstance(self.balanced_bank, bool):
            raise TypeError(f"balanced_bank must be a bool; got {type(self.balanced_bank).__name__}")

    @property
    def projection_dim_(self) -> int | None:
        """``projection_dim`` as the network uses it: an int, or None (also for ``"none"``, TOML having no null)."""
        dim = self.projection_dim
        if dim is None or (isinstance(dim, str) and dim.lower() == "none"):
            return None
        return int(dim)  # type: ignore[arg-type]

    # -- the network and its training ---------------------------------------------

    def create_model(self, encoder: nn.Module) -> nn.Module:
        """Encoder plus the GP output layer (:class:`PGDRRModel`)."""
        return PGDRRModel(
            encoder, pooling=self.pooling, projection_dim=self.projection_dim_, length_scale=self.kernel_length_scale,
            output_scale=float(self.output_scale), bank_size=int(self.bank_size), n_chains=int(self.n_chains),
            n_bank_steps=int(self.n_bank_steps), jitter=float(self.jitter), n_quadrature=int(self.n_quadrature),
            seed=self.seed, learn_length_scale=self.length_scale == "learned",
        )

    @property
    def kernel_length_scale(self) -> float:
        """The RBF kernel's length scale: as given, the median heuristic's (1 before fitting), or the learned one."""
        if self.length_scale == "learned" and self.model is not None:
            return float(torch.as_tensor(self.head().length_scale).detach())
        if isinstance(self.length_scale, str):
            return 1.0 if self.length_scale_ is None else self.length_scale_
        return float(self.length_scale)

    def extra_params(self) -> dict[str, Any]:
        """The GP settings a checkpoint stores: the parameters, a fitted median length scale as its value."""
        # a learned length scale is a parameter: the weights carry its value
        length_scale = self.length_scale if self.length_scale_ is None or self.length_scale == "learned" \
            else self.length_scale_
        return {**super().extra_params(), "length_scale": length_scale, "projection_dim": self.projection_dim_}

    def head(self) -> GaussianProcessHead:
        """The GP output layer of the model (built on first use)."""
        return _as_pgdrr(self.build_model()).head

    def loss(self, output: Any, labels: Tensor) -> Tensor:
        """Fisher-identity loss of a batch (Gibbs on its kernel), and the batch enters the bank.

        Parameters
        ----------
        output : Tensor of shape (batch, dim)
            The kernel's input features (the model in training mode).
        labels : Tensor of shape (batch,)

        Returns
        -------
        Tensor
            A scalar: the mean over chains of the marginal negative log
            likelihood, divided by the batch size.
        """
        head = self.head()
        if self.generator is None or self.generator.device != output.device:
            self.generator = torch.Generator(device=output.device).manual_seed(self.training_config.seed)
        loss = head.loss(output, labels, n_steps=int(self.n_gibbs_steps), generator=self.generator)
        head.push(output, labels)
        return loss

    def on_train_end(self, model: nn.Module, pairs: EncodedPairs, labels: NDArray[np.int64], accelerator: Any) -> None:
        """Fill the memory bank: ``bank_size`` training pairs, scored with the final weights, and their Gibbs chains."""
        head = _as_pgdrr(model).head
        idx = _bank_indices(labels, int(self.bank_size), seed=self.seed, balanced=self.balanced_bank)
        feats = self._features(model, _subset_pairs(pairs, idx), accelerator)
        head.set_bank(feats.to(head.bank_features.device), torch.as_tensor(labels[idx]).to(head.bank_labels.device))

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """One epoch with the real run's recipe: 689.8 s on 9,539 queries, ``predict`` 35.5 s on 6,000 pairs.

        Measured on two CPU cores (docs/results/real_run.json), the head put on
        bert's trained encoder.
        """
        return CostRates(689.8 / 9539, 35.5 / 6000)

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> PGDRRRanker:
        """Fine-tune on ``train`` (see :meth:`uncertank.nn.NeuralRanker.fit`).

        Before the first step, when there is a projection, its weights are
        rescaled so that the median distance between the projected features
        of up to 256 training pairs equals the length scale (1 with
        ``length_scale="median"``): an RBF kernel whose inputs all sit much
        closer than its length scale has almost no gradient (``dk/dx`` is
        proportional to the distance), and the ``[CLS]`` vectors of different
        pairs are nearly collinear. Without a projection,
        ``length_scale="median"`` sets the length scale to that median
        distance instead (the median heuristic; stored as its value).
        """
        train = self.check_queries(train)
        model = self.build_model()
        head = _as_pgdrr(model).head
        median_rule = isinstance(self.length_scale, str)
        if (head.projection is not None or median_rule) and self.history_ is None:
            ctx, cands, qidx, _ = balanced_pairs(train, seed=self.training_config.seed)
            enc = self.encode_texts(ctx, cands, qidx)
            idx = np.random.default_rng(self.training_config.seed).permutation(enc.n_pairs)[:256]
            z = self._features(model, _subset_pairs(enc, np.sort(idx)), get_accelerator(self.device))
            dist = torch.pdist(z)
            median = float(dist.median()) if dist.numel() else 0.0
            if median > 0 and head.projection is not None:
                with torch.no_grad():
                    head.projection.weight.mul_(self.kernel_length_scale / median)
            elif median > 0:
                self.length_scale_ = median
                head.length_scale = median
                head.clear_cache()
        super().fit(train, valid)
        return self

    # -- prediction -------------------------------------------------------------

    def _features(self, model: nn.Module, encoded: EncodedPairs, accelerator: Any) -> Tensor:
        net = _as_pgdrr(model)
        device = accelerator.device
        model.to(device)
        was = model.training
        model.eval()
        try:
            with torch.inference_mode():
                out = score_batches(
                    encoded, lambda batch: net.features(**batch), batch_size=self.training_config.eval_batch_size,
                    device=device, accelerator=accelerator, show_progress=self.training_config.show_progress,
                    desc=f"{self.name} features",
                )
        finally:
            model.train(was)
        return torch.from_numpy(out).to(device)

    def features(self, queries: QuerySet) -> Tensor:
        """The kernel's input of every pair, shape (n_pairs, dim), float64, on the model's device."""
        self.check_fitted()
        model = self.build_model()
        return self._features(model, self.encode(queries), get_accelerator(self.device))

    def predict_latent(self, queries: QuerySet) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Closed-form predictive mean and variance of every pair's latent logit, each shape (n_pairs,).

        The predictive is a mixture over chains of Gaussians; these are the
        mixture's mean and variance (the law of total variance over chains).
        """
        queries = self.check_queries(queries)
        head = self.head()
        z = self.features(queries)
        with torch.inference_mode():
            mean, var = head.predictive(z)
            m = mean.mean(0)
            v = (var + mean * mean).mean(0) - m * m
        return m.cpu().numpy(), v.clamp_min(0).cpu().numpy()

    def predict_moments(self, queries: QuerySet) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mean and variance of P(relevant) under the predictive, each shape (n_pairs,).

        Per chain, ``E[sigmoid(g)]`` and ``E[sigmoid(g)^2]`` by Gauss-Hermite
        quadrature, averaged over chains; variance = second moment - mean^2.
        """
        queries = self.check_queries(queries)
        head = self.head()
        z = self.features(queries)
        with torch.inference_mode():
            p, v = head.probabilities(z)
        return p.cpu().numpy(), v.cpu().numpy()

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) of every pair, shape (n_pairs,): the chain-averaged Gauss-Hermite predictive."""
        queries = self.check_queries(queries)
        p, _ = self.predict_moments(queries)
        return Predictions(p, queries.offsets, ranker=self.name)

    def sample_probabilities(self, queries: QuerySet, n_samples: int) -> NDArray[np.float64]:
        """Joint draws across every query's candidates for :meth:`predict_samples`, shape (n_samples, n_pairs).

        Draw ``s`` takes chain ``s mod n_chains``, draws the latents of each
        query's candidates jointly from that chain's Gaussian predictive
        (mean and full covariance of the query's block), and returns their
        sigmoids. Different queries are independent given the chain. Seeded
        by ``seed``; the normal draws are made on the CPU, so a checkpoint
        gives the same draws on every device (up to the device's rounding).
        ``n_samples`` is ``n_chains`` by default.
        """
        s = n_samples
        head = self.head()
        z = self.features(queries)
        out = np.empty((s, queries.n_pairs), dtype=np.float64)
        gen = torch.Generator().manual_seed(self.seed)  # CPU draws: the same on every device
        chains = torch.arange(s, device=z.device) % int(self.n_chains)
        lengths = np.diff(queries.offsets)
        with torch.inference_mode():
            for size in np.unique(lengths):
                qs = np.flatnonzero(lengths == size)
                per = max(1, 1024 // int(size))  # about 1,024 pairs per block: memory n_chains x M x 1,024
                for lo in range(0, qs.size, per):
                    block = qs[lo : lo + per]
                    cols = (queries.offsets[block][:, None] + np.arange(size)[None, :]).reshape(-1)
                    zq = z[torch.from_numpy(cols).to(z.device)].reshape(block.size, int(size), -1)
                    draws = _joint_draws(head, zq, chains, gen)  # (s, q, size)
                    out[:, cols] = torch.sigmoid(draws).reshape(s, -1).cpu().numpy()
        return out


def _joint_draws(head: GaussianProcessHead, zq: Tensor, chains: Tensor, gen: torch.Generator) -> Tensor:
    """Latent draws of shape (n_samples, q, size) for ``q`` queries of ``size`` candidates, ``zq`` (q, size, dim)."""
    q, size, _ = zq.shape
    mean, cov = head.joint_predictive(zq)  # (C, q, size), (C, q, size, size)
    root = _covariance_root(cov)
    # drawn on the CPU (``gen`` is a CPU generator): a seeded ranker gives the same draws on every device
    eps = torch.randn((chains.numel(), q, size, 1), generator=gen, dtype=torch.float64).to(zq.device)
    return mean[chains] + (root[chains] @ eps).squeeze(-1)


def _covariance_root(cov: Tensor) -> Tensor:
    """The symmetric square root of each covariance matrix in ``cov`` (..., n, n): ``root @ root = cov``.

    The principal root ``V sqrt(L) V^T`` is a function of ``cov`` alone, whatever eigenvectors the
    solver returns (their signs, or their basis within a repeated eigenvalue, differ between LAPACK
    on the CPU and cuSOLVER on a GPU), so the same normal draws give the same samples on every
    device, up to rounding. Negative eigenvalues from rounding count as 0.
    """
    evals, evecs = torch.linalg.eigh(cov)
    return (evecs * evals.clamp_min(0).sqrt()[..., None, :]) @ evecs.transpose(-1, -2)


def _as_pgdrr(model: nn.Module) -> PGDRRModel:
    if not isinstance(model, PGDRRModel):
        raise TypeError(f"model must be a PGDRRModel (built by PGDRRRanker.create_model); got {type(model).__name__}")
    return model


def _positive_float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return check_scale(value, name)  # finite (an int too large for a float too), > 0


def _bank_indices(labels: NDArray[np.int64], size: int, *, seed: int, balanced: bool = True) -> NDArray[np.int64]:
    """Up to ``size`` indices into ``labels``, drawn with ``seed``: half relevant where possible, or uniformly."""
    rng = np.random.default_rng(seed)
    if not balanced:  # the training pairs' own ratio of relevant to non-relevant
        return np.sort(rng.permutation(labels.size)[:size]).astype(np.int64)
    pos = rng.permutation(np.flatnonzero(labels > 0))
    neg = rng.permutation(np.flatnonzero(labels <= 0))
    n_pos = min(pos.size, max(size // 2, size - neg.size))
    n_neg = min(neg.size, size - n_pos)
    return np.sort(np.concatenate([pos[:n_pos], neg[:n_neg]])).astype(np.int64)


def _subset_pairs(pairs: EncodedPairs, idx: NDArray[np.int64]) -> EncodedPairs:
    """The pairs at ``idx`` as a new :class:`~uncertank.nn.EncodedPairs`."""
    lengths = pairs.lengths[idx]
    offsets = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    src = np.repeat(pairs.offsets[idx], lengths) + (np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], lengths))
    return EncodedPairs(
        input_ids=pairs.input_ids[src], token_type_ids=pairs.token_type_ids[src], offsets=offsets,
        pad_token_id=pairs.pad_token_id,
    )
