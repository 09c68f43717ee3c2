"""The rankers ``sngp`` and ``gpf_bert``: a cross-encoder with a random-feature GP head."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from typing_extensions import Self

from uncertank import CostRates, Predictions, QuerySet
from uncertank.nn import EncodedPairs, NeuralRanker, SamplingRanker, score_batches
from uncertank.validation import check_bool, check_choice, check_positive_int, check_unit_interval
from uncertank_sngp.head import COV_LIKELIHOODS, COV_MODES, RandomFeatureGP, SNGPModel, _focal_loss, _positive

__all__ = ["GPFBertRanker", "SNGPRanker"]

# the head's defaults live in its signatures; the ranker's parameters default to them
_GP: dict[str, Any] = RandomFeatureGP.__init__.__kwdefaults__ or {}
_MODEL: dict[str, Any] = SNGPModel.__init__.__kwdefaults__ or {}


class SNGPRanker(SamplingRanker, NeuralRanker):
    """A cross-encoder whose output layer is a random-feature Gaussian process (SNGP).

    The network is :class:`~uncertank_sngp.SNGPModel`: the encoder's
    ``[CLS]`` vector, a pooler with a soft spectral bound, then
    :class:`~uncertank_sngp.RandomFeatureGP` (LayerNorm, D random Fourier
    features, one logit). It is trained like the other neural rankers
    (balanced pairs of the given candidates, AdamW, best validation epoch) on
    the focal loss of the single logit (``focal_gamma=0``: cross-entropy).
    After training, the Laplace covariance of the output weights is computed
    (``cov_mode="exact"``: one eval-mode pass over the training pairs; under
    several processes each scores a shard and the precisions are summed) and
    factored once; predictions then cost one forward pass plus a triangular
    solve per batch.

    - :meth:`predict`: the mean-field probability ``sigmoid(m / sqrt(1 + lambda v))``.
    - :meth:`predict_samples`: joint draws; each row is one draw of the
      output weights from their posterior applied to every pair
      (:meth:`sample_batch`, in the template of :class:`uncertank.nn.SamplingRanker`).
    - :meth:`latent_mean_variance`: the closed-form mean and variance of the logit.

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        As in :class:`uncertank.nn.NeuralRanker`.
    n_features : int
        D, the number of random features (2048).
    lengthscale : float, optional
        RBF length scale on the LayerNorm'ed [CLS] vector; ``sqrt(hidden / 2)`` by default.
    feature_scale : float, optional
        ``sqrt(2 / D)`` by default.
    ridge : float
        Prior precision of the output weights (1, the paper's ``I``).
    spec_norm_bound : float or None
        The soft spectral bound ``c`` of the pooler (0.95); None: no spectral normalisation.
    spec_norm_encoder : bool
        Also bound every attention and feed-forward linear of the encoder
        (off: it hurt BERT-base in uncertainty-baselines).
    n_power_iterations, spec_norm_warmup : int
        Power iterations per training step (1) and at wrapping time (20).
    cov_mode : {"exact", "momentum"}
        See :class:`~uncertank_sngp.RandomFeatureGP`.
    cov_momentum : float
        For ``cov_mode="momentum"`` (0.999).
    cov_likelihood : {"logistic", "gaussian"}
        Precision weights ``p (1 - p)`` (the paper's Eq. 4) or 1 (edward2).
    mean_field_factor : float
        ``lambda`` (pi / 8); 0 gives ``sigmoid(m)``.
    output_init_std : float
        Normal initialisation of the output weights (0.01); 0 starts them at
        the prior mean (see :class:`~uncertank_sngp.RandomFeatureGP`).
    output_bias : bool
        Learn the logit's intercept (True) or hold it at 0 (False, edward2's
        layer, and this ranker before the option existed); see
        docs/rankers.md, "SNGP on lists", for training on lists of ten.
    output_bias_init : float or None
        Where a new head's learned intercept starts. None (the default): the
        prior log-odds of the training pairs, ``-log(train_ratio)`` (0 on
        balanced pairs, ``-log 9`` on lists of ten; with ``train_ratio=None``
        the ratio of the training labels), as Lin et al. (2017) start a
        detector's output bias at its prior. A number starts it there.
    focal_gamma : float
        The focal loss's gamma; 0 is cross-entropy.
    n_samples : int
        Rows of :meth:`predict_samples` by default (10).
    **params
        Every other parameter of :class:`uncertank.nn.NeuralRanker`; ``seed``
        also seeds the random features and the posterior draws.
    """

    name = "sngp"

    def __init__(
        self,
        backbone: Any = None,
        *,
        n_features: int = _GP["n_features"],
        lengthscale: float | None = _GP["lengthscale"],
        feature_scale: float | None = _GP["feature_scale"],
        ridge: float = _GP["ridge"],
        spec_norm_bound: float | None = _MODEL["spec_norm_bound"],
        spec_norm_encoder: bool = _MODEL["spec_norm_encoder"],
        n_power_iterations: int = _MODEL["n_power_iterations"],
        spec_norm_warmup: int = _MODEL["spec_norm_warmup"],
        cov_mode: str = _GP["cov_mode"],
        cov_momentum: float = _GP["cov_momentum"],
        cov_likelihood: str = _GP["cov_likelihood"],
        mean_field_factor: float = _GP["mean_field_factor"],
        output_init_std: float = _GP["output_init_std"],
        output_bias: bool = _GP["output_bias"],
        output_bias_init: float | None = None,
        focal_gamma: float = 0.0,
        n_samples: int = 10,
        **params: Any,
    ) -> None:
        self.n_features = n_features
        self.lengthscale = lengthscale
        self.feature_scale = feature_scale
        self.ridge = ridge
        self.spec_norm_bound = spec_norm_bound
        self.spec_norm_encoder = spec_norm_encoder
        self.n_power_iterations = n_power_iterations
        self.spec_norm_warmup = spec_norm_warmup
        self.cov_mode = cov_mode
        self.cov_momentum = cov_momentum
        self.cov_likelihood = cov_likelihood
        self.mean_field_factor = mean_field_factor
        self.output_init_std = output_init_std
        self.output_bias = output_bias
        self.output_bias_init = output_bias_init
        self.focal_gamma = focal_gamma
        self.n_samples = n_samples
        super().__init__(backbone, **params)

    def _check_params(self) -> None:
        super()._check_params()
        # the head's settings, checked here (not first at fit, where create_model builds the head)
        check_bool(self.spec_norm_encoder, "spec_norm_encoder")
        check_bool(self.output_bias, "output_bias")
        for name in ("lengthscale", "feature_scale", "spec_norm_bound"):
            if getattr(self, name) is not None:
                _positive(getattr(self, name), name)
        _positive(self.ridge, "ridge")
        _positive(self.mean_field_factor, "mean_field_factor", allow_zero=True)
        _positive(self.output_init_std, "output_init_std", allow_zero=True)
        check_unit_interval(self.cov_momentum, "cov_momentum", closed="left")
        if self.spec_norm_encoder and self.pretrained is not None:
            raise ValueError(
                "spec_norm_encoder must be False with pretrained: a post-hoc head keeps the encoder's weights "
                "as trained"
            )
        check_positive_int(self.n_features, "n_features")
        check_positive_int(self.n_power_iterations, "n_power_iterations")
        check_positive_int(self.spec_norm_warmup, "spec_norm_warmup", minimum=0)
        check_choice(self.cov_mode, "cov_mode", COV_MODES)
        check_choice(self.cov_likelihood, "cov_likelihood", COV_LIKELIHOODS)
        b = self.output_bias_init
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b)):
            raise ValueError(f"output_bias_init must be None or a finite number; got {b!r}")
        _positive(self.focal_gamma, "focal_gamma", allow_zero=True)
        check_positive_int(self.n_samples, "n_samples")

    @property
    def head_params(self) -> dict[str, Any]:
        """The parameters of :class:`~uncertank_sngp.SNGPModel` (and its GP layer), from the constructor's."""
        return {
            "n_features": int(self.n_features), "lengthscale": self.lengthscale,
            "feature_scale": self.feature_scale, "ridge": self.ridge, "spec_norm_bound": self.spec_norm_bound,
            "spec_norm_encoder": bool(self.spec_norm_encoder), "n_power_iterations": int(self.n_power_iterations),
            "spec_norm_warmup": int(self.spec_norm_warmup), "cov_mode": self.cov_mode,
            "cov_momentum": self.cov_momentum, "cov_likelihood": self.cov_likelihood,
            "mean_field_factor": self.mean_field_factor, "output_init_std": self.output_init_std,
            "output_bias": self.output_bias,
        }

    # -- the extension API of NeuralRanker --------------------------------------------

    def create_model(self, encoder: torch.nn.Module) -> SNGPModel:
        """The :class:`~uncertank_sngp.SNGPModel` around ``encoder``."""
        return SNGPModel(encoder, pooling=self.pooling, **self.head_params)

    def loss(self, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Focal loss of the single logit (``focal_gamma``; 0 is cross-entropy)."""
        return _focal_loss(output, labels, gamma=float(self.focal_gamma))

    def on_train_end(
        self, model: torch.nn.Module, pairs: EncodedPairs, labels: NDArray[np.int64], accelerator: Any
    ) -> None:
        """Compute the Laplace covariance with the final weights (never a stale one).

        ``exact``: reset, then one eval-mode pass over the training pairs,
        accumulating the precision (summed over processes); ``momentum``: the
        precision accumulated during training. Then the Cholesky factor.
        """
        gp: RandomFeatureGP = model.gp  # type: ignore[assignment]
        if accelerator is not None:  # the pairs are batched on the accelerator's device: the model goes there too
            model.to(accelerator.device)
        if gp.cov_mode == "exact":
            gp.reset_precision()
            with torch.no_grad(), gp.accumulating():
                score_batches(
                    pairs, lambda batch: model(**batch)[:, None], batch_size=self.training_config.eval_batch_size,
                    accelerator=accelerator, show_progress=self.training_config.show_progress,
                    desc=f"{self.name} covariance",
                )
            if accelerator is not None and int(accelerator.num_processes) > 1:
                gp.precision.copy_(accelerator.reduce(gp.precision, reduction="sum"))
                gp.n_seen.copy_(accelerator.reduce(gp.n_seen, reduction="sum"))
        gp.update_covariance()

    def prior_log_odds(self, train: QuerySet) -> float:
        """The log-odds of a relevant training pair: ``-log(train_ratio)``, or the labels' own with ``None``."""
        ratio = self.training_config.train_ratio
        if ratio is not None:
            return -math.log(ratio)
        labels = np.asarray(train.labels) > 0
        pos, neg = int(labels.sum()), int(labels.size - labels.sum())
        return 0.0 if pos == 0 or neg == 0 else math.log(pos / neg)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """One epoch with the real run's recipe: 1049.8 s on 9,539 queries, ``predict`` 35.7 s on 6,000 pairs.

        Measured on two CPU cores (docs/results/real_run.json), the head put on
        bert's trained encoder.
        """
        return CostRates(1049.8 / 9539, 35.7 / 6000)

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Fine-tune on ``train`` (keeping the best validation epoch), then compute the covariance.

        A fitted covariance from an earlier :meth:`fit` is dropped first, so
        validation never uses it.
        """
        model: Any = self.build_model()
        model.gp.reset_precision()
        if model.gp.output_bias and self.history_ is None:  # a new head: its intercept starts at the prior
            start = self.prior_log_odds(train) if self.output_bias_init is None else float(self.output_bias_init)
            with torch.no_grad():
                model.gp.bias.fill_(start)
        return super().fit(train, valid)

    # -- predictions -------------------------------------------------------------------

    def latent_mean_variance(self, queries: QuerySet) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The posterior mean and variance of every pair's logit, in closed form.

        Returns
        -------
        mean : ndarray of shape (n_pairs,)
            ``phi . beta + c`` (``c`` the intercept).
        variance : ndarray of shape (n_pairs,)
            ``||L^-1 phi||^2``; the prior variance ``||phi||^2 / ridge`` before :meth:`fit`.
        """
        queries = self.check_queries(queries)
        self.check_fitted()

        def fn(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            phi = model.features(**batch)
            return torch.stack([model.gp.mean_logit(phi).double(), model.gp.variance(phi)], dim=1)

        out = self.batch_outputs(queries, fn, f"{self.name} mean/variance")
        return out[:, 0], out[:, 1]

    def predict(self, queries: QuerySet) -> Predictions:
        """The mean-field probability ``sigmoid(m / sqrt(1 + lambda v))`` of every pair, shape (n_pairs,)."""
        queries = self.check_queries(queries)
        return Predictions(self.score(queries)[0], queries.offsets, ranker=self.name)

    def sample_batch(self, n_samples: int) -> Any:
        """Draws for :meth:`predict_samples`: ``sigmoid(phi . beta_s + c)`` per pair, shape (batch, n_samples).

        ``beta_s`` is one draw of the output weights from their Laplace
        posterior, the same for every pair, so the candidates of a query
        covary as the posterior says. Seeded by ``seed``.
        """
        model: Any = self.build_model()
        gen = torch.Generator().manual_seed(self.seed)
        weights = model.gp.sample_weights(n_samples, generator=gen)  # (D, s)

        def fn(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            phi = model.features(**batch).double()
            return torch.sigmoid(phi @ weights.to(phi.device) + model.gp.bias.double())

        return fn


class GPFBertRanker(SNGPRanker):
    """GPF-BERT (Ye et al., ICASSP 2023): SNGP trained with focal loss, the paper's settings as defaults.

    The paper states BERT-base's [CLS], Adam at 5e-6, batch 16, one epoch,
    random Fourier features with ``W ~ N(0, 1)``, ``b ~ U(0, 2 pi)`` and
    scale ``sqrt(2 / D)``, and a focal loss with gamma >= 1; D, the spectral
    bound and gamma are not given. Defaults here: ``lr=5e-6``,
    ``weight_decay=0`` (Adam), ``batch_size=16``, ``epochs=1``,
    ``focal_gamma=2`` (Lin et al.'s default), D = 2048 and ``c = 0.95``
    (uncertainty-baselines' BERT-SNGP). Every parameter of
    :class:`SNGPRanker` can be changed.
    """

    name = "gpf_bert"

    def __init__(
        self,
        backbone: Any = None,
        *,
        focal_gamma: float = 2.0,
        lr: float = 5e-6,
        weight_decay: float = 0.0,
        batch_size: int = 16,
        epochs: int = 1,
        **params: Any,
    ) -> None:
        super().__init__(
            backbone, focal_gamma=focal_gamma, lr=lr, weight_decay=weight_decay, batch_size=batch_size,
            epochs=epochs, **params,
        )

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """One epoch with the real run's recipe: 929.4 s on 9,539 queries, ``predict`` 36.3 s on 6,000 pairs.

        Measured on two CPU cores (docs/results/real_run.json), the head put on
        bert's trained encoder.
        """
        return CostRates(929.4 / 9539, 36.3 / 6000)
