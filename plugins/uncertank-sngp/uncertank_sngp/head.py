"""The SNGP head: soft spectral normalisation, a random-feature GP output layer, focal loss.

SNGP (Liu et al., NeurIPS 2020) makes a network distance aware with two
changes: spectral normalisation bounds how much the hidden layers can
stretch the input space, and the output layer is a Gaussian process,
approximated by random Fourier features (Rahimi & Recht 2007) with a
Laplace posterior over their output weights. GPF-BERT (Ye et al., ICASSP
2023, section 3.1) puts it on BERT's [CLS] vector and trains with focal loss.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from uncertank.nn import check_pooling, head_dimensions, pool_encoder
from uncertank.validation import (
    check_bool,
    check_choice,
    check_instance,
    check_ndim,
    check_positive_int,
    check_real,
    check_unit_interval,
)

__all__ = ["RandomFeatureGP", "SNGPModel", "SoftSpectralNorm", "apply_spectral_norm", "focal_loss"]

COV_MODES = ("exact", "momentum")
COV_LIKELIHOODS = ("logistic", "gaussian")


def _positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a finite number {'>= 0' if allow_zero else '> 0'}; got {value!r}")
    return check_real(value, name, minimum=0, exclusive_minimum=not allow_zero)


class SoftSpectralNorm(nn.Module):
    """A parametrisation ``W -> W / max(1, sigma(W) / bound)``: a soft spectral bound.

    ``sigma(W)``, the largest singular value, is estimated by power
    iteration (one step per training forward pass; ``u`` and ``v`` are saved
    buffers). Unlike ``torch.nn.utils.parametrizations.spectral_norm``, which
    always divides by sigma and so rescales pretrained weights, a layer whose
    norm is already below ``bound`` is left as it is (Liu et al. 2020, Eq. 8).

    Parameters
    ----------
    weight : Tensor of shape (out, in)
        The weight to be wrapped (sets the shapes and the warm-up).
    bound : float
        ``c`` in (0, inf): the largest spectral norm allowed.
    n_power_iterations : int
        Power-iteration steps per training forward pass.
    warmup_iterations : int
        Steps run once at wrapping time, so sigma is accurate from the start.

    Raises
    ------
    TypeError
        When ``weight`` is not a floating-point tensor, or a count not an int.
    ValueError
        For a ``weight`` that is not 2-D or has an empty side, a ``bound`` that
        is not a finite number > 0, or counts below 1 (``warmup_iterations``
        below 0).
    """

    _u: torch.Tensor
    _v: torch.Tensor

    def __init__(
        self, weight: torch.Tensor, *, bound: float = 0.95, n_power_iterations: int = 1, warmup_iterations: int = 20
    ) -> None:
        super().__init__()
        check_instance(weight, "weight", torch.Tensor, "a 2-D torch tensor (out, in)")
        if weight.ndim != 2:
            raise ValueError(f"weight must be 2-D (out, in); got shape {tuple(weight.shape)}")
        if not weight.is_floating_point():
            raise TypeError(f"weight must be a floating-point tensor; got a tensor of {weight.dtype}")
        if weight.numel() == 0:
            raise ValueError(f"weight must have no empty side; got shape {tuple(weight.shape)}")
        self.bound = _positive(bound, "bound")
        self.n_power_iterations = check_positive_int(n_power_iterations, "n_power_iterations")
        warmup_iterations = check_positive_int(warmup_iterations, "warmup_iterations", minimum=0)
        w = weight.detach()
        u = nn.functional.normalize(torch.randn(w.shape[0], dtype=w.dtype, device=w.device), dim=0)
        v = nn.functional.normalize(torch.randn(w.shape[1], dtype=w.dtype, device=w.device), dim=0)
        self.register_buffer("_u", u)
        self.register_buffer("_v", v)
        self._power(w, warmup_iterations)

    @torch.no_grad()
    def _power(self, weight: torch.Tensor, steps: int) -> None:
        for _ in range(steps):
            self._v.copy_(nn.functional.normalize(weight.T @ self._u, dim=0, eps=1e-12))
            self._u.copy_(nn.functional.normalize(weight @ self._v, dim=0, eps=1e-12))

    def sigma(self, weight: torch.Tensor) -> torch.Tensor:
        """The current estimate of ``weight``'s largest singular value (differentiable in ``weight``)."""
        return self._u.clone() @ weight @ self._v.clone()

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        """The bounded weight."""
        if self.training:
            self._power(weight.detach(), self.n_power_iterations)
        factor = torch.clamp(self.sigma(weight) / self.bound, min=1.0)
        return weight / factor


def apply_spectral_norm(
    module: nn.Linear, *, bound: float = 0.95, n_power_iterations: int = 1, warmup_iterations: int = 20
) -> nn.Linear:
    """Register :class:`SoftSpectralNorm` on ``module.weight`` (in place) and return ``module``."""
    if not isinstance(module, nn.Linear):
        raise TypeError(f"module must be an nn.Linear; got {type(module).__name__}")
    parametrize.register_parametrization(
        module, "weight",
        SoftSpectralNorm(module.weight, bound=bound, n_power_iterations=n_power_iterations,
                         warmup_iterations=warmup_iterations),
    )
    return module


class RandomFeatureGP(nn.Module):
    """A GP output layer: LayerNorm, random Fourier features, one logit, Laplace covariance.

    ``phi(x) = scale * cos(W LayerNorm(x) / lengthscale + b)`` with fixed
    ``W ~ N(0, 1)`` of shape (n_features, in_features) and ``b ~ U(0, 2 pi)``
    (saved buffers), so ``phi(x) . phi(y)`` approximates the RBF kernel
    ``exp(-||x' - y'||^2 / (2 lengthscale^2))`` of the normalised inputs
    (Rahimi & Recht 2007) when ``scale = sqrt(2 / n_features)``. The logit
    is ``m = phi(x) . beta + c``; ``beta`` is trained with the network (MAP)
    and the intercept ``c`` (the GP's constant prior mean, a point estimate
    outside the Laplace posterior) with it, or held at 0.

    The Laplace posterior of ``beta`` has precision
    ``ridge * I + sum_i w_i phi_i phi_i^T`` with ``w_i = p_i (1 - p_i)``
    (``cov_likelihood="logistic"``, the paper's Eq. 4) or ``w_i = 1``
    (``"gaussian"``, edward2's default), accumulated in float64 on detached
    features under ``no_grad``:

    - ``cov_mode="exact"``: only inside :meth:`accumulating` (the ranker opens
      it for one eval-mode pass over the training pairs after training);
    - ``cov_mode="momentum"``: in every training-mode forward pass,
      ``P <- m P + (1 - m) P_batch / batch`` (GPF-BERT's Eq. 5, edward2's
      update); the precision is then O(1) rather than O(N).

    Never in eval mode otherwise (validation does not touch it). The ridge
    enters only when inverting (:meth:`update_covariance`): a Cholesky factor
    ``L`` of the precision in float64, with jitter escalation on failure. In
    eval mode with a fitted covariance the output is the mean-field logit
    ``m / sqrt(1 + lambda v)`` with ``v = ||L^-1 phi||^2``, whose sigmoid
    approximates the predictive probability (``lambda = pi / 8``).

    Parameters
    ----------
    in_features : int
        Width of the input (the [CLS] vector).
    n_features : int
        D, the number of random features.
    lengthscale : float, optional
        The RBF length scale on the LayerNorm'ed input; ``sqrt(in_features / 2)``
        by default (edward2 JAX's He-normal weights; the kernel is then
        ``exp(-2 (1 - cos))`` of two normalised vectors).
    feature_scale : float, optional
        ``sqrt(2 / D)`` by default (the paper; edward2 TF).
    ridge : float
        The prior precision of ``beta`` (the ``I`` in ``I + sum ...``).
    cov_mode : {"exact", "momentum"}
    cov_momentum : float
        ``m`` in [0, 1) for the momentum mode.
    cov_likelihood : {"logistic", "gaussian"}
    mean_field_factor : float
        ``lambda``; 0 returns the posterior-mean logit.
    output_init_std : float
        Standard deviation of the normal initialisation of ``beta`` (0.01, as
        uncertainty-baselines' GP output layer; edward2's Keras default is
        Glorot). 0 starts ``beta`` at the prior mean, where the gradient that
        reaches the encoder (proportional to ``beta``) is exactly zero. A
        small start does not by itself rescue an encoder whose pooled vector
        carries no relevance signal at first (measured on the packaged
        MiniLM's untrained ``[CLS]``: docs/rankers.md); start from a
        fine-tuned encoder then (``NeuralRanker.from_ranker``).
    output_bias : bool
        Learn the intercept ``c`` (True; it starts at 0 here, and
        :class:`~uncertank_sngp.SNGPRanker` starts a new head's at the prior
        log-odds of its training pairs) or hold it at 0 (False, the layer of
        edward2 and uncertainty-baselines). Without it a base rate
        far from 1/2, such as the 10% of lists of ten, has to come from
        ``phi . beta`` itself (docs/rankers.md, "SNGP on lists"). Checkpoints
        saved before the intercept existed load with ``c = 0``.
    """

    feature_weight: torch.Tensor
    feature_bias: torch.Tensor
    precision: torch.Tensor
    cholesky: torch.Tensor
    n_seen: torch.Tensor
    covariance_ready: torch.Tensor
    jitter: torch.Tensor

    def __init__(
        self,
        in_features: int,
        *,
        n_features: int = 2048,
        lengthscale: float | None = None,
        feature_scale: float | None = None,
        ridge: float = 1.0,
        cov_mode: str = "exact",
        cov_momentum: float = 0.999,
        cov_likelihood: str = "logistic",
        mean_field_factor: float = math.pi / 8,
        output_init_std: float = 0.01,
        output_bias: bool = True,
    ) -> None:
        super().__init__()
        in_features = check_positive_int(in_features, "in_features")
        self.n_features = check_positive_int(n_features, "n_features")
        self.lengthscale = (
            math.sqrt(in_features / 2) if lengthscale is None else _positive(lengthscale, "lengthscale")
        )
        self.feature_scale = (
            math.sqrt(2.0 / self.n_features) if feature_scale is None else _positive(feature_scale, "feature_scale")
        )
        self.ridge = _positive(ridge, "ridge")
        self.cov_mode = check_choice(cov_mode, "cov_mode", COV_MODES)
        self.cov_likelihood = check_choice(cov_likelihood, "cov_likelihood", COV_LIKELIHOODS)
        self.cov_momentum = check_unit_interval(cov_momentum, "cov_momentum", closed="left")
        self.mean_field_factor = _positive(mean_field_factor, "mean_field_factor", allow_zero=True)
        self.norm = nn.LayerNorm(in_features)
        self.register_buffer("feature_weight", torch.randn(self.n_features, in_features))
        self.register_buffer("feature_bias", torch.rand(self.n_features) * (2 * math.pi))
        self.beta = nn.Linear(self.n_features, 1, bias=False)
        std = _positive(output_init_std, "output_init_std", allow_zero=True)
        if std > 0:
            nn.init.normal_(self.beta.weight, std=std)
        else:
            nn.init.zeros_(self.beta.weight)
        if not isinstance(output_bias, bool):
            raise TypeError(f"output_bias must be True or False; got {output_bias!r}")
        self.output_bias = output_bias
        # a parameter when learned, a buffer when held at 0: the state dict has "bias" either way
        if output_bias:
            self.bias = nn.Parameter(torch.zeros(()))
        else:
            self.register_buffer("bias", torch.zeros(()))
        self.register_buffer("precision", torch.zeros(self.n_features, self.n_features, dtype=torch.float64))
        self.register_buffer("cholesky", torch.eye(self.n_features, dtype=torch.float64) * math.sqrt(self.ridge))
        self.register_buffer("n_seen", torch.zeros((), dtype=torch.int64))
        self.register_buffer("covariance_ready", torch.zeros((), dtype=torch.bool))
        self.register_buffer("jitter", torch.zeros((), dtype=torch.float64))
        self._accumulating = False

    # -- features and logits ----------------------------------------------------

    def random_features(self, h: torch.Tensor) -> torch.Tensor:
        """``feature_scale * cos(W h / lengthscale + b)`` of already normalised ``h``, shape (batch, D), float32."""
        z = h.float() @ self.feature_weight.T / self.lengthscale + self.feature_bias
        return self.feature_scale * torch.cos(z)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """``phi(x)``: LayerNorm, then :meth:`random_features`; shape (batch, D), float32 (no autocast)."""
        with torch.autocast(device_type=x.device.type, enabled=False):
            return self.random_features(self.norm(x.float()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch,): ``phi . beta`` in training mode, the mean-field logit in eval mode."""
        with torch.autocast(device_type=x.device.type, enabled=False):
            phi = self.features(x)
            logit = self.mean_logit(phi)
            if self._accumulating or (self.training and self.cov_mode == "momentum"):
                self.update_precision(phi, logit)
            if not self.training and bool(self.covariance_ready) and self.mean_field_factor > 0:
                logit = logit / torch.sqrt(1.0 + self.mean_field_factor * self.variance(phi)).to(logit.dtype)
        return logit

    def mean_logit(self, phi: torch.Tensor) -> torch.Tensor:
        """The posterior-mean logit ``phi . beta + c``, shape (batch,), in ``phi``'s precision.

        It runs outside autocast: under bf16 autocast (CUDA) ``beta`` would
        otherwise round the logit to 8 bits of mantissa, about 2e-4 at 0.7.
        """
        with torch.autocast(device_type=phi.device.type, enabled=False):
            return self.beta(phi)[:, 0] + self.bias.to(phi.dtype)

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        # checkpoints from before the intercept have no "bias": theirs was 0
        state_dict.setdefault(prefix + "bias", torch.zeros((), device=self.bias.device))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    # -- the Laplace posterior ------------------------------------------------------

    @contextlib.contextmanager
    def accumulating(self) -> Iterator[None]:
        """Accumulate the precision in the forward passes inside the block (eval mode included)."""
        before = self._accumulating
        self._accumulating = True
        try:
            yield
        finally:
            self._accumulating = before

    @torch.no_grad()
    def update_precision(self, phi: torch.Tensor, logit: torch.Tensor) -> None:
        """Add one batch to the precision (detached, float64).

        Parameters
        ----------
        phi : Tensor of shape (batch, D)
        logit : Tensor of shape (batch,)
            The posterior-mean logits (the weights ``p (1 - p)`` come from them).
        """
        f = phi.detach().to(torch.float64)
        if self.cov_likelihood == "logistic":
            p = torch.sigmoid(logit.detach().to(torch.float64))
            weighted = f * (p * (1.0 - p))[:, None]
        else:
            weighted = f
        batch = weighted.T @ f
        if self.cov_mode == "momentum":
            m = self.cov_momentum
            self.precision.mul_(m).add_(batch / max(f.shape[0], 1), alpha=1.0 - m)
        else:
            self.precision.add_(batch)
        self.n_seen.add_(f.shape[0])

    @torch.no_grad()
    def reset_precision(self) -> None:
        """Forget the accumulated precision and the covariance."""
        self.precision.zero_()
        self.n_seen.zero_()
        self.covariance_ready.fill_(False)
        self.cholesky.copy_(torch.eye(self.n_features, dtype=torch.float64, device=self.cholesky.device))
        self.cholesky.mul_(math.sqrt(self.ridge))

    @torch.no_grad()
    def update_covariance(self, *, max_tries: int = 8) -> None:
        """Factor ``ridge * I + precision = L L^T`` (float64), adding jitter until it succeeds.

        Raises
        ------
        RuntimeError
            When even the largest jitter (``1e-2`` times the mean diagonal) fails.
        """
        a = self.precision + self.ridge * torch.eye(self.n_features, dtype=torch.float64, device=self.precision.device)
        a = 0.5 * (a + a.T)
        scale = float(a.diagonal().mean())
        jitter = 0.0
        for attempt in range(max_tries + 1):
            factor, info = torch.linalg.cholesky_ex(a + jitter * torch.eye(a.shape[0], dtype=a.dtype, device=a.device))
            if int(info) == 0:
                self.cholesky.copy_(factor)
                self.jitter.fill_(jitter)
                self.covariance_ready.fill_(True)
                return
            jitter = scale * 10.0 ** (attempt - 10)
        raise RuntimeError(
            f"the precision matrix is not positive definite even with jitter {jitter:.3g}; "
            "check the features for NaN or inf"
        )

    def variance(self, phi: torch.Tensor) -> torch.Tensor:
        """Posterior variance of the logit, ``phi^T (L L^T)^-1 phi = ||L^-1 phi||^2``; shape (batch,), float64."""
        f = phi.detach().to(torch.float64).T
        solved = torch.linalg.solve_triangular(self.cholesky, f, upper=False)
        return (solved * solved).sum(0)

    def sample_weights(self, n_samples: int, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """Joint draws of ``beta`` from its posterior ``N(beta_MAP, (L L^T)^-1)``: shape (D, n_samples), float64.

        ``beta = beta_MAP + L^-T z`` with ``z ~ N(0, I)`` drawn on the CPU
        (so a seeded generator gives the same draws on every device).
        """
        n_samples = check_positive_int(n_samples, "n_samples")
        z = torch.randn(self.n_features, n_samples, dtype=torch.float64, generator=generator).to(self.cholesky.device)
        noise = torch.linalg.solve_triangular(self.cholesky.T, z, upper=True)
        return self.beta.weight.detach().to(torch.float64).T + noise


class SNGPModel(nn.Module):
    """Encoder, then ``[CLS]`` (or the mean) -> dropout -> dense (soft spectral norm) -> tanh -> dropout -> GP head.

    The dense layer is the pooler/projection of BERT-SNGP (uncertainty-baselines
    normalises it only); with ``spec_norm_encoder=True`` every ``nn.Linear``
    of the encoder's layers (attention and feed-forward) is bounded too.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Returns ``last_hidden_state`` of shape (batch, seq, hidden).
    spec_norm_bound : float or None
        ``c`` of :class:`SoftSpectralNorm`; None switches spectral normalisation off.
    spec_norm_encoder : bool
        Also bound the encoder's attention and feed-forward linears.
    n_power_iterations, spec_norm_warmup : int
        Power iterations per training pass, and at wrapping time.
    dropout : float, optional
        The head's dropout; the encoder's ``hidden_dropout_prob`` by default.
    pooling : {"cls", "mean"}
        The encoder's output the head starts from (:func:`uncertank.nn.pool_encoder`);
        ``"cls"``, the paper's, by default.
    **gp
        The parameters of :class:`RandomFeatureGP`.
    """

    def __init__(
        self,
        encoder: nn.Module,
        *,
        spec_norm_bound: float | None = 0.95,
        spec_norm_encoder: bool = False,
        n_power_iterations: int = 1,
        spec_norm_warmup: int = 20,
        dropout: float | None = None,
        pooling: str = "cls",
        **gp: Any,
    ) -> None:
        super().__init__()
        check_instance(encoder, "encoder", nn.Module, "a transformers encoder (nn.Module)")
        if spec_norm_bound is not None:
            spec_norm_bound = _positive(spec_norm_bound, "spec_norm_bound")
        spec_norm_encoder = check_bool(spec_norm_encoder, "spec_norm_encoder")
        n_power_iterations = check_positive_int(n_power_iterations, "n_power_iterations")
        spec_norm_warmup = check_positive_int(spec_norm_warmup, "spec_norm_warmup", minimum=0)
        self.pooling = check_pooling(pooling)
        hidden, p = head_dimensions(encoder, dropout)
        self.encoder = encoder
        self.dropout = nn.Dropout(p)
        self.pooler = nn.Linear(hidden, hidden)
        if spec_norm_bound is not None:
            sn: dict[str, Any] = {"bound": spec_norm_bound, "n_power_iterations": n_power_iterations,
                  "warmup_iterations": spec_norm_warmup}
            apply_spectral_norm(self.pooler, **sn)
            if spec_norm_encoder:
                layers = getattr(getattr(encoder, "encoder", None), "layer", None)
                if layers is None:
                    raise ValueError(
                        "spec_norm_encoder=True needs a BERT-style encoder (encoder.encoder.layer); "
                        f"got {type(encoder).__name__}"
                    )
                for module in list(layers.modules()):
                    if isinstance(module, nn.Linear):
                        apply_spectral_norm(module, **sn)
        elif spec_norm_encoder:
            raise ValueError("spec_norm_encoder=True needs spec_norm_bound; got None")
        self.gp = RandomFeatureGP(hidden, **gp)

    def cls(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The projected pooled vector (``[CLS]`` by default) that enters the GP head, shape (batch, hidden)."""
        h = pool_encoder(self.encoder, input_ids, attention_mask, token_type_ids, pooling=self.pooling)
        return self.dropout(torch.tanh(self.pooler(self.dropout(h))))  # type: ignore[no-any-return]

    def features(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The random features ``phi``, shape (batch, D), float32."""
        return self.gp.features(self.cls(input_ids, attention_mask, token_type_ids))

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """One logit per pair, shape (batch,); see :meth:`RandomFeatureGP.forward`."""
        return self.gp(self.cls(input_ids, attention_mask, token_type_ids))  # type: ignore[no-any-return]


def focal_loss(logits: torch.Tensor, labels: torch.Tensor, *, gamma: float = 0.0) -> torch.Tensor:
    """Binary focal loss ``-(1 - p_t)^gamma log p_t`` (Lin et al. 2017), the mean over the batch.

    ``p_t`` is the probability of the true label, ``sigmoid(s * logit)`` with
    ``s = +1`` for relevant and ``-1`` otherwise; ``gamma = 0`` is the binary
    cross-entropy. Computed in float32 from ``log sigmoid`` (stable for large logits).

    Parameters
    ----------
    logits : Tensor of shape (batch,)
    labels : Tensor of shape (batch,)
        0 or 1.
    gamma : float
        >= 0.

    Raises
    ------
    TypeError
        When ``logits`` or ``labels`` is not a tensor (``logits`` of floats).
    ValueError
        For shapes that differ or are not 1-D, an empty batch, logits that
        are not finite, labels other than 0 and 1, tensors on different
        devices, or a ``gamma`` that is not a finite number >= 0.

    Examples
    --------
    >>> import torch
    >>> x, y = torch.tensor([2.0, -1.0]), torch.tensor([1, 1])
    >>> bool(torch.isclose(focal_loss(x, y), torch.nn.functional.binary_cross_entropy_with_logits(x, y.float())))
    True
    """
    gamma = _positive(gamma, "gamma", allow_zero=True)
    check_instance(logits, "logits", torch.Tensor, "a torch tensor of floats")
    check_instance(labels, "labels", torch.Tensor, "a torch tensor of 0s and 1s")
    if logits.shape != labels.shape:
        raise ValueError(
            f"logits and labels must have the same shape; got {tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    check_ndim(logits, "logits", 1)
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point tensor; got a tensor of {logits.dtype}")
    if labels.dtype.is_complex:
        raise TypeError(f"labels must hold 0s and 1s; got a tensor of {labels.dtype}")
    if labels.device != logits.device:
        raise ValueError(f"labels must be on the device of logits ({logits.device}); got {labels.device}")
    if logits.numel() == 0:
        raise ValueError("logits must hold at least one pair; got an empty batch")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError(f"logits must be finite; got {int((~torch.isfinite(logits)).sum())} NaN or infinite values")
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError("labels must hold 0s and 1s only")
    return _focal_loss(logits, labels, gamma=gamma)


def _focal_loss(logits: torch.Tensor, labels: torch.Tensor, *, gamma: float) -> torch.Tensor:
    """:func:`focal_loss` of checked arguments (the training loop calls it per batch)."""
    if logits.shape != labels.shape:  # constant time: a model's output of another shape would broadcast silently
        raise ValueError(
            f"logits and labels must have the same shape; got {tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    sign = 2.0 * labels.float() - 1.0
    log_pt = nn.functional.logsigmoid(sign * logits.float())
    if gamma == 0:
        return -log_pt.mean()
    return -(((1.0 - log_pt.exp()).clamp_min(0.0) ** gamma) * log_pt).mean()
