"""The Gaussian-process output layer of PG-DRR, with Pólya-Gamma Gibbs sampling.

A latent ``g ~ N(0, K)`` over a set of feature vectors with labels ``y`` in
{0, 1} and ``P(y = 1 | g) = sigmoid(g)``. Pólya-Gamma augmentation (Polson,
Scott & Windle 2013) makes the likelihood conditionally Gaussian: given
``omega_i ~ PG(1, g_i)``, the labels act as observations ``z = kappa / omega``
(``kappa = y - 1/2``) of ``g`` with noise variance ``1 / omega``, so Gibbs
alternates

- ``omega | g ~ PG(1, g)`` (:func:`uncertank_pgdrr.random_polya_gamma`), and
- ``g | omega ~ N(Sigma kappa, Sigma)``, ``Sigma = (K^-1 + Omega)^-1``.

(PG-DRR's Eq. 10, Ye et al. AAAI 2023, prints the mean in the other order.)
K^-1 is never formed: with ``S = Omega^1/2`` and ``B = I + S K S`` (eigenvalues
>= 1, one Cholesky per chain, batched over chains),

- ``(K + Omega^-1)^-1 = S B^-1 S``, ``Sigma = K - K S B^-1 S K``;
- a draw of ``g | omega`` is ``g0 + K S B^-1 (kappa / s - S g0 - eta)`` with
  ``g0 ~ N(0, K)`` and ``eta ~ N(0, I)`` (Matheron's rule: condition a prior
  draw on noisy pseudo-observations);
- ``-log N(z | 0, K + Omega^-1) = 1/2 (|L^-1 (kappa / s)|^2 + 2 sum log diag L
  - sum log omega + n log 2 pi)`` with ``L = chol(B)``: the Fisher-identity
  training loss (``omega`` detached);
- the predictive of a test point with cross-covariances ``k*`` is
  ``N(k*^T S B^-1 (kappa / s), k** - |L^-1 S k*|^2)`` per chain.

``K`` carries a small nugget (``jitter`` times the output scale on the
diagonal) so that its Cholesky factor, needed only for the prior draw
``g0``, exists; the same nugget is used everywhere, so the sampler is exact
for the kernel with the nugget.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

from uncertank.validation import (
    check_bool,
    check_instance,
    check_ndim,
    check_nonnegative,
    check_positive_int,
    check_scale,
    check_tensor,
)
from uncertank_pgdrr.polya_gamma import random_polya_gamma

__all__ = [
    "GaussianProcessHead",
    "conditional_moments",
    "gauss_hermite_sigmoid",
    "gibbs_sample",
    "marginal_nll",
    "rbf_kernel",
    "sample_latent",
]

DEFAULT_JITTER = 1e-6


# -- the checks at the door of the public functions (the loops inside call the unchecked forms) ------------


def _tensor(value: object, name: str, ndim: int) -> Tensor:
    """``value`` as a tensor of rank ``ndim`` holding finite real numbers; else the error naming ``name``."""
    tensor: Tensor = check_tensor(value, name, ndim=ndim)
    return tensor


def _same_device(first: Tensor, first_name: str, other: Tensor, name: str) -> None:
    if other.device != first.device:
        raise ValueError(f"{name} must be on the device of {first_name} ({first.device}); got {other.device}")


def _check_gp_inputs(kernel: object, omega: object, labels: object, jitter: object) -> tuple[Tensor, Tensor, Tensor]:
    """``kernel`` (n, n), ``omega`` (C, n) > 0 and ``labels`` (n,) in {0, 1} on one device, ``jitter`` >= 0."""
    k = _tensor(kernel, "kernel", 2)
    if k.shape[0] != k.shape[1]:
        raise ValueError(f"kernel must be square (n, n); got shape {tuple(k.shape)}")
    y = _labels(labels, k)
    om = _tensor(omega, "omega", 2)
    _same_device(k, "kernel", om, "omega")
    if om.shape[1] != k.shape[0]:
        raise ValueError(f"omega must have one column per kernel row ({k.shape[0]}); got shape {tuple(om.shape)}")
    if not bool((om > 0).all()):
        raise ValueError(f"omega must hold positive Pólya-Gamma draws; got {int((om <= 0).sum())} values <= 0")
    check_nonnegative(jitter, "jitter")
    return k, om, y


def _labels(labels: object, kernel: Tensor) -> Tensor:
    """``labels``: a tensor of shape (n,), each 0 or 1, on the kernel's device."""
    check_instance(labels, "labels", Tensor, "a torch tensor of 0s and 1s")
    assert isinstance(labels, Tensor)
    check_ndim(labels, "labels", 1)
    if labels.dtype.is_complex:
        raise TypeError(f"labels must hold 0s and 1s; got a tensor of {labels.dtype}")
    _same_device(kernel, "kernel", labels, "labels")
    if labels.shape[0] != kernel.shape[0]:
        raise ValueError(f"labels must have one entry per kernel row ({kernel.shape[0]}); got {labels.shape[0]}")
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError("labels must hold 0s and 1s only")
    return labels


def _check_generator(generator: object, device: torch.device) -> None:
    if generator is None:
        return
    check_instance(generator, "generator", torch.Generator, "a torch.Generator or None")
    assert isinstance(generator, torch.Generator)
    if generator.device.type != device.type:
        raise ValueError(f"generator must live on the device of kernel ({device}); got a generator on "
                         f"{generator.device}")


def _not_positive_definite(exc: Exception) -> ValueError:
    return ValueError(f"kernel must be positive semi-definite: a Cholesky factorisation failed ({exc})")


def rbf_kernel(
    x1: Tensor, x2: Tensor, *, length_scale: float | Tensor = 1.0, output_scale: float = 8.0
) -> Tensor:
    """RBF kernel ``output_scale * exp(-|x1 - x2|^2 / (2 length_scale^2))``.

    Parameters
    ----------
    x1 : Tensor of shape (n, d)
    x2 : Tensor of shape (m, d)
    length_scale, output_scale : float
        ``output_scale`` is the kernel's variance (the prior variance of a latent).

    Returns
    -------
    Tensor of shape (n, m)
        In the dtype of the inputs; differentiable.

    Raises
    ------
    TypeError
        When ``x1`` or ``x2`` is not a tensor of real numbers.
    ValueError
        For inputs that are not 2-D, finite, of one width and on one device,
        or a scale that is not a finite number > 0.
    """
    a1, a2 = _tensor(x1, "x1", 2), _tensor(x2, "x2", 2)
    _same_device(a1, "x1", a2, "x2")
    if a1.shape[1] != a2.shape[1]:
        raise ValueError(f"x2 must have the width of x1 ({a1.shape[1]} columns); got {a2.shape[1]}")
    if isinstance(length_scale, Tensor):
        check_tensor(length_scale, "length_scale")
        if not bool((length_scale > 0).all()):
            raise ValueError("length_scale must be finite and > 0")
    else:
        length_scale = check_scale(length_scale, "length_scale")
    return _rbf_kernel(a1, a2, length_scale=length_scale, output_scale=check_scale(output_scale, "output_scale"))


def _rbf_kernel(x1: Tensor, x2: Tensor, *, length_scale: float | Tensor, output_scale: float) -> Tensor:
    """:func:`rbf_kernel` of checked arguments."""
    a = x1 / length_scale
    b = x2 / length_scale
    sq = (a * a).sum(-1, keepdim=True) + (b * b).sum(-1)[None, :] - 2 * a @ b.T
    return output_scale * torch.exp(-0.5 * sq.clamp_min(0))


def _with_nugget(kernel: Tensor, jitter: float) -> Tensor:
    scale = kernel.diagonal(dim1=-2, dim2=-1).mean().clamp_min(1e-30) if kernel.numel() else 1.0
    eye = torch.eye(kernel.shape[-1], dtype=kernel.dtype, device=kernel.device)
    return kernel + (jitter * scale) * eye


def _kappa(labels: Tensor, dtype: torch.dtype) -> Tensor:
    return labels.to(dtype) - 0.5


def _chol_b(kernel: Tensor, omega: Tensor) -> tuple[Tensor, Tensor]:
    """``s = sqrt(omega)`` of shape (C, n) and ``L = chol(I + S K S)`` of shape (C, n, n)."""
    s = omega.sqrt()
    b = s[:, :, None] * kernel[None] * s[:, None, :]
    b = b + torch.eye(kernel.shape[-1], dtype=kernel.dtype, device=kernel.device)
    try:  # B = I + S K S is positive definite for a positive semi-definite K
        return s, torch.linalg.cholesky(b)
    except torch.linalg.LinAlgError as exc:  # type: ignore[attr-defined]
        raise _not_positive_definite(exc) from exc


def conditional_moments(
    kernel: Tensor, omega: Tensor, labels: Tensor, *, jitter: float = DEFAULT_JITTER
) -> tuple[Tensor, Tensor]:
    """Mean and covariance of ``g | omega, y`` per chain, in the stable form.

    Parameters
    ----------
    kernel : Tensor of shape (n, n)
    omega : Tensor of shape (C, n)
        Positive Pólya-Gamma draws, one row per chain.
    labels : Tensor of shape (n,)
        0 or 1.
    jitter : float
        Nugget relative to the mean diagonal of ``kernel``.

    Returns
    -------
    mean : Tensor of shape (C, n)
        ``Sigma kappa``.
    cov : Tensor of shape (C, n, n)
        ``Sigma = K - K S B^-1 S K``.

    Raises
    ------
    TypeError
        When ``kernel``, ``omega`` or ``labels`` is not a tensor.
    ValueError
        For shapes that do not match, values that are not finite, an
        ``omega`` <= 0, labels other than 0 and 1, tensors on different
        devices, a negative ``jitter``, or a kernel that is not positive
        semi-definite.
    """
    kernel, omega, labels = _check_gp_inputs(kernel, omega, labels, jitter)
    k = _with_nugget(kernel.double(), jitter)
    om = omega.double()
    s, chol = _chol_b(k, om)
    kappa = _kappa(labels, k.dtype)
    sk = s[:, :, None] * k[None]  # S K, (C, n, n)
    v = torch.linalg.solve_triangular(chol, sk, upper=False)  # L^-1 S K
    cov = k[None] - v.mT @ v
    mean = (cov @ kappa[:, None]).squeeze(-1).expand(om.shape[0], -1)
    return mean, cov


def sample_latent(
    kernel: Tensor,
    omega: Tensor,
    labels: Tensor,
    *,
    generator: torch.Generator | None = None,
    jitter: float = DEFAULT_JITTER,
    kernel_chol: Tensor | None = None,
) -> Tensor:
    """One draw of ``g | omega, y`` per chain (Matheron's rule, no K^-1).

    Parameters
    ----------
    kernel : Tensor of shape (n, n)
    omega : Tensor of shape (C, n)
    labels : Tensor of shape (n,)
    generator : torch.Generator, optional
    jitter : float
    kernel_chol : Tensor of shape (n, n), optional
        ``chol(K + nugget)``, when the caller already has it.

    Returns
    -------
    Tensor of shape (C, n), float64

    Raises
    ------
    TypeError
        When ``kernel``, ``omega``, ``labels`` or ``kernel_chol`` is not a
        tensor, or ``generator`` not a ``torch.Generator``.
    ValueError
        As :func:`conditional_moments`; and for a ``kernel_chol`` of another
        shape or device, or a ``generator`` on another device.
    """
    kernel, omega, labels = _check_gp_inputs(kernel, omega, labels, jitter)
    _check_generator(generator, kernel.device)
    if kernel_chol is not None:
        _tensor(kernel_chol, "kernel_chol", 2)
        _same_device(kernel, "kernel", kernel_chol, "kernel_chol")
        if kernel_chol.shape != kernel.shape:
            raise ValueError(f"kernel_chol must have the kernel's shape {tuple(kernel.shape)}; got "
                             f"{tuple(kernel_chol.shape)}")
    return _sample_latent(kernel, omega, labels, generator=generator, jitter=jitter, kernel_chol=kernel_chol)


def _sample_latent(
    kernel: Tensor,
    omega: Tensor,
    labels: Tensor,
    *,
    generator: torch.Generator | None,
    jitter: float,
    kernel_chol: Tensor | None,
) -> Tensor:
    """:func:`sample_latent` of checked arguments (the Gibbs sweeps call it)."""
    k = _with_nugget(kernel.double(), jitter)
    om = omega.double()
    n_chains, n = om.shape
    if kernel_chol is None:
        try:
            lk = torch.linalg.cholesky(k)
        except torch.linalg.LinAlgError as exc:  # type: ignore[attr-defined]
            raise _not_positive_definite(exc) from exc
    else:
        lk = kernel_chol.to(k.dtype)
    noise = torch.randn((2, n_chains, n), generator=generator, dtype=k.dtype, device=k.device)
    g0 = noise[0] @ lk.mT  # rows ~ N(0, K)
    s, chol = _chol_b(k, om)
    r = _kappa(labels, k.dtype)[None] / s - s * g0 - noise[1]
    u = torch.cholesky_solve(r[..., None], chol).squeeze(-1)
    return g0 + (s * u) @ k


def gibbs_sample(
    kernel: Tensor,
    labels: Tensor,
    *,
    n_chains: int = 30,
    n_steps: int = 10,
    generator: torch.Generator | None = None,
    jitter: float = DEFAULT_JITTER,
) -> tuple[Tensor, Tensor]:
    """Run ``n_chains`` Pólya-Gamma Gibbs chains for ``n_steps`` sweeps, all chains at once.

    Every chain starts at ``g = 0``; a sweep draws ``omega ~ PG(1, g)`` and
    then ``g | omega`` (:func:`sample_latent`).

    Parameters
    ----------
    kernel : Tensor of shape (n, n)
        Detached from any graph (the sampler does not differentiate).
    labels : Tensor of shape (n,)
    n_chains, n_steps : int
    generator : torch.Generator, optional
        On the kernel's device.
    jitter : float

    Returns
    -------
    omega : Tensor of shape (n_chains, n), float64
        The last sweep's Pólya-Gamma draws.
    latent : Tensor of shape (n_chains, n), float64
        The last sweep's latent draws.

    Raises
    ------
    TypeError
        When ``kernel`` or ``labels`` is not a tensor, a count not an int, or
        ``generator`` not a ``torch.Generator``.
    ValueError
        For a kernel that is not square, finite and positive semi-definite,
        labels other than 0 and 1 or of another length, counts below 1, a
        negative ``jitter`` or a ``generator`` on another device.
    """
    k = _tensor(kernel, "kernel", 2)
    if k.shape[0] != k.shape[1]:
        raise ValueError(f"kernel must be square (n, n); got shape {tuple(k.shape)}")
    labels = _labels(labels, k)
    n_chains = check_positive_int(n_chains, "n_chains")
    n_steps = check_positive_int(n_steps, "n_steps")
    _check_generator(generator, k.device)
    jitter = check_nonnegative(jitter, "jitter")
    return _gibbs_sample(k, labels, n_chains=n_chains, n_steps=n_steps, generator=generator, jitter=jitter)


def _gibbs_sample(
    kernel: Tensor, labels: Tensor, *, n_chains: int, n_steps: int, generator: torch.Generator | None, jitter: float
) -> tuple[Tensor, Tensor]:
    """:func:`gibbs_sample` of checked arguments (the training loop and the bank's refits call it)."""
    k = kernel.detach().double()
    n = k.shape[-1]
    lk = _stable_cholesky(_with_nugget(k, jitter))
    g = torch.zeros((n_chains, n), dtype=k.dtype, device=k.device)
    omega = g
    for _ in range(n_steps):
        omega = random_polya_gamma(1, g, generator=generator)
        g = _sample_latent(k, omega, labels, generator=generator, jitter=jitter, kernel_chol=lk)
    return omega, g


def _stable_cholesky(k: Tensor) -> Tensor:
    """Cholesky factor, adding a growing diagonal (1e-8 .. 1e-2 of the mean diagonal) when it fails."""
    chol, info = torch.linalg.cholesky_ex(k)
    extra = 1e-8
    scale = float(k.diagonal().mean()) if k.numel() else 1.0
    eye = torch.eye(k.shape[-1], dtype=k.dtype, device=k.device)
    while bool(info.any()) and extra <= 1e-2:
        chol, info = torch.linalg.cholesky_ex(k + extra * scale * eye)
        extra *= 10
    if bool(info.any()):
        raise ValueError("kernel must be positive definite: it is not even with a nugget of 1e-2 of its diagonal")
    return chol


def marginal_nll(kernel: Tensor, omega: Tensor, labels: Tensor, *, jitter: float = DEFAULT_JITTER) -> Tensor:
    """``-log N(kappa / omega | 0, K + Omega^-1)`` per chain: the Fisher-identity loss.

    By Fisher's identity the gradient of ``log p(y | X)`` is the posterior
    expectation over ``omega`` of the gradient of ``log p(y, omega | X)``,
    whose part that depends on the kernel is this Gaussian log density
    (Wenzel et al. 2019; PG-DRR section 3). ``omega`` is detached here.

    Parameters
    ----------
    kernel : Tensor of shape (n, n)
        Differentiable.
    omega : Tensor of shape (C, n)
    labels : Tensor of shape (n,)

    Returns
    -------
    Tensor of shape (C,)
        float64.

    Raises
    ------
    TypeError, ValueError
        As :func:`conditional_moments`.
    """
    kernel, omega, labels = _check_gp_inputs(kernel, omega, labels, jitter)
    return _marginal_nll(kernel, omega, labels, jitter=jitter)


def _marginal_nll(kernel: Tensor, omega: Tensor, labels: Tensor, *, jitter: float) -> Tensor:
    """:func:`marginal_nll` of checked arguments (the training loss calls it)."""
    k = _with_nugget(kernel.double(), jitter)
    om = omega.detach().double()
    s, chol = _chol_b(k, om)
    t = _kappa(labels, k.dtype)[None] / s
    v = torch.linalg.solve_triangular(chol, t[..., None], upper=False).squeeze(-1)
    logdet = 2 * torch.log(chol.diagonal(dim1=-2, dim2=-1)).sum(-1) - torch.log(om).sum(-1)
    n = k.shape[-1]
    return 0.5 * ((v * v).sum(-1) + logdet + n * math.log(2 * math.pi))


def gauss_hermite_sigmoid(mean: Tensor, var: Tensor, *, n_points: int = 64) -> tuple[Tensor, Tensor]:
    """``E[sigmoid(g)]`` and ``E[sigmoid(g)^2]`` for ``g ~ N(mean, var)`` by Gauss-Hermite quadrature.

    Parameters
    ----------
    mean, var : Tensor of the same shape
    n_points : int
        Quadrature nodes.

    Returns
    -------
    first, second : Tensor of the input shape

    Raises
    ------
    TypeError
        When ``mean`` or ``var`` is not a floating-point tensor, or
        ``n_points`` not an int.
    ValueError
        For shapes or devices that differ, values that are not finite, or
        ``n_points`` < 1.
    """
    for name, value in (("mean", mean), ("var", var)):
        check_instance(value, name, Tensor, "a floating-point torch tensor")
        if not value.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor; got a tensor of {value.dtype}")
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"{name} must be finite; got {int((~torch.isfinite(value)).sum())} NaN or infinite "
                             "values")
    if var.shape != mean.shape:
        raise ValueError(f"var must have the shape of mean {tuple(mean.shape)}; got {tuple(var.shape)}")
    _same_device(mean, "mean", var, "var")
    return _gauss_hermite_sigmoid(mean, var, n_points=check_positive_int(n_points, "n_points"))


def _gauss_hermite_sigmoid(mean: Tensor, var: Tensor, *, n_points: int) -> tuple[Tensor, Tensor]:
    """:func:`gauss_hermite_sigmoid` of checked arguments."""
    nodes, weights = np.polynomial.hermite.hermgauss(n_points)
    x = torch.as_tensor(nodes, dtype=mean.dtype, device=mean.device)
    w = torch.as_tensor(weights / math.sqrt(math.pi), dtype=mean.dtype, device=mean.device)
    g = mean[..., None] + torch.sqrt(2 * var.clamp_min(0))[..., None] * x
    p = torch.sigmoid(g)
    return (p * w).sum(-1), (p * p * w).sum(-1)


class GaussianProcessHead(nn.Module):
    """The GP output layer: optional projection, RBF kernel, memory bank and its Gibbs state.

    Parameters
    ----------
    in_features : int
        Size of the incoming feature vectors (the encoder's hidden size).
    projection_dim : int or None
        A linear projection (no bias) before the kernel, initialised so that
        projected vectors have squared norm about 1; ``None``: the kernel
        reads the incoming features as they are.
    length_scale, output_scale : float
        RBF kernel settings (PG-DRR: 1 and 8, fixed).
    learn_length_scale : bool
        Make the length scale a parameter (its logarithm, float64, starting
        at ``length_scale``) that the training loss moves: that loss is the
        Fisher-identity estimate of the batch's negative log marginal
        likelihood, so the length scale is learned by type-II maximum
        likelihood, as the projection is.
    bank_size : int
        M, the number of labelled training pairs a prediction conditions on.
    n_chains, n_bank_steps : int
        Gibbs chains and sweeps run on the memory bank.
    jitter : float
        Nugget relative to the kernel's diagonal.
    n_quadrature : int
        Gauss-Hermite nodes for P(relevant).
    seed : int
        Seeds the bank's Gibbs chains (with the count of refits).

    Raises
    ------
    TypeError
        For a count that is not an int or a scale that is not a number.
    ValueError
        For a count below 1 (``seed`` below 0), a scale or ``jitter`` that is
        not a finite number > 0, or sizes whose tensors cannot be allocated.

    Notes
    -----
    Buffers (saved with the weights): ``bank_features`` (M, dim) float64,
    ``bank_labels`` (M,), ``bank_count`` and ``bank_next`` (filled entries and
    the next write position), ``omega`` (n_chains, M) float64, the bank's
    last Gibbs draws, and ``n_refits``. What is derived from them (the
    Cholesky factors) is recomputed, deterministically, on first use.
    """

    bank_features: Tensor
    bank_labels: Tensor
    bank_count: Tensor
    bank_next: Tensor
    omega: Tensor
    n_refits: Tensor

    def __init__(
        self,
        in_features: int,
        *,
        projection_dim: int | None = 64,
        length_scale: float = 1.0,
        output_scale: float = 8.0,
        bank_size: int = 256,
        n_chains: int = 30,
        n_bank_steps: int = 50,
        jitter: float = DEFAULT_JITTER,
        n_quadrature: int = 64,
        seed: int = 0,
        learn_length_scale: bool = False,
    ) -> None:
        super().__init__()
        in_features = check_positive_int(in_features, "in_features")
        if projection_dim is not None:
            projection_dim = check_positive_int(projection_dim, "projection_dim")
        length_scale = check_scale(length_scale, "length_scale")
        output_scale = check_scale(output_scale, "output_scale")
        bank_size = check_positive_int(bank_size, "bank_size")
        n_chains = check_positive_int(n_chains, "n_chains")
        n_bank_steps = check_positive_int(n_bank_steps, "n_bank_steps")
        jitter = check_scale(jitter, "jitter")
        n_quadrature = check_positive_int(n_quadrature, "n_quadrature")
        seed = check_positive_int(seed, "seed", minimum=0, maximum=(2**64 - 2**32) // 1_000_003)  # seeds the refits
        learn_length_scale = check_bool(learn_length_scale, "learn_length_scale")
        try:
            self._allocate_state(in_features, projection_dim, length_scale, output_scale, bank_size, n_chains,
                                 n_bank_steps, jitter, n_quadrature, seed, learn_length_scale)
        except (RuntimeError, MemoryError) as exc:  # torch's allocator refuses sizes that do not fit in memory
            raise ValueError(
                f"in_features={in_features}, projection_dim={projection_dim}, bank_size={bank_size} and "
                f"n_chains={n_chains} ask for tensors that cannot be allocated ({type(exc).__name__}: {exc})"
            ) from exc

    def _allocate_state(
        self, in_features: int, projection_dim: int | None, length_scale: float, output_scale: float, bank_size: int,
        n_chains: int, n_bank_steps: int, jitter: float, n_quadrature: int, seed: int, learn_length_scale: bool,
    ) -> None:
        """The parameters and buffers of checked settings, built on the CPU at construction (from ``__init__``).

        Each tensor below is a parameter or a registered buffer, so it moves with the module's ``.to(device)``.
        """
        self.log_length_scale: nn.Parameter | None = None
        if learn_length_scale:
            log_scale = torch.tensor(math.log(float(length_scale)), dtype=torch.float64)  # cpu: moved by .to()
            self.log_length_scale = nn.Parameter(log_scale)
        self.length_scale = float(length_scale)
        self.output_scale = float(output_scale)
        self.n_chains = int(n_chains)
        self.n_bank_steps = int(n_bank_steps)
        self.jitter = float(jitter)
        self.n_quadrature = int(n_quadrature)
        self.seed = int(seed)
        dim = in_features if projection_dim is None else int(projection_dim)
        self.dim = dim
        self.projection: nn.Linear | None = None
        if projection_dim is not None:
            self.projection = nn.Linear(in_features, dim, bias=False)
            nn.init.normal_(self.projection.weight, std=1.0 / math.sqrt(in_features * dim))
        self.register_buffer("bank_features", torch.zeros(bank_size, dim, dtype=torch.float64))  # cpu: moved by .to()
        self.register_buffer("bank_labels", torch.zeros(bank_size, dtype=torch.int64))  # cpu: moved by .to()
        self.register_buffer("bank_count", torch.zeros((), dtype=torch.int64))  # cpu: moved by .to()
        self.register_buffer("bank_next", torch.zeros((), dtype=torch.int64))  # cpu: moved by .to()
        self.register_buffer("omega", torch.ones(self.n_chains, bank_size, dtype=torch.float64))  # cpu: moved by .to()
        self.register_buffer("n_refits", torch.zeros((), dtype=torch.int64))  # cpu: moved by .to()
        self.stale = False
        self._cache: tuple[Tensor, Tensor, Tensor] | None = None
        self.register_load_state_dict_post_hook(lambda module, keys: module.clear_cache())

    @property
    def length_scale(self) -> float | Tensor:
        """The RBF kernel's length scale: a float, or a float64 scalar tensor when it is learned."""
        if self.log_length_scale is None:
            return self._length_scale
        return self.log_length_scale.exp()

    @length_scale.setter
    def length_scale(self, value: float) -> None:
        value = float(value)
        if self.log_length_scale is None:
            self._length_scale = value
        else:
            with torch.no_grad():
                self.log_length_scale.fill_(math.log(value))
        self.clear_cache()

    # -- features and kernel ----------------------------------------------------

    def project(self, features: Tensor) -> Tensor:
        """The kernel's input: the (projected) features, shape (batch, dim)."""
        return features if self.projection is None else self.projection(features)

    def kernel(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The RBF kernel between projected features, shape (n, m), float64."""
        return _rbf_kernel(x1.double(), x2.double(), length_scale=self.length_scale, output_scale=self.output_scale)

    # -- training ---------------------------------------------------------------

    def loss(self, projected: Tensor, labels: Tensor, *, n_steps: int, generator: torch.Generator | None) -> Tensor:
        """Fisher-identity loss of a batch: mean over chains of the marginal NLL, per pair.

        Runs ``n_chains`` Gibbs chains for ``n_steps`` sweeps on the batch's
        kernel (detached), then differentiates ``-log N(kappa / omega | 0, K +
        Omega^-1)`` through ``K`` with the last ``omega`` held fixed.

        Parameters
        ----------
        projected : Tensor of shape (batch, dim)
            Differentiable.
        labels : Tensor of shape (batch,)
        n_steps : int
        generator : torch.Generator, optional

        Returns
        -------
        Tensor
            A scalar (float64).
        """
        k = self.kernel(projected, projected)
        omega, _ = _gibbs_sample(
            k.detach(), labels, n_chains=self.n_chains, n_steps=n_steps, generator=generator, jitter=self.jitter
        )
        return _marginal_nll(k, omega, labels, jitter=self.jitter).mean() / projected.shape[0]

    @torch.no_grad()
    def push(self, projected: Tensor, labels: Tensor) -> None:
        """Write a batch into the memory bank (first in, first out); the Gibbs state goes stale."""
        m = self.bank_features.shape[0]
        x = projected.detach().double()[-m:]
        y = labels.detach()[-m:]
        pos = (int(self.bank_next) + torch.arange(x.shape[0], device=x.device)) % m
        self.bank_features[pos] = x.to(self.bank_features.device)
        self.bank_labels[pos] = y.to(self.bank_labels.device, torch.int64)
        self.bank_next.fill_((int(self.bank_next) + x.shape[0]) % m)
        self.bank_count.fill_(min(m, int(self.bank_count) + x.shape[0]))
        self.stale = True

    @torch.no_grad()
    def set_bank(self, projected: Tensor, labels: Tensor) -> None:
        """Replace the memory bank by ``projected`` (at most M rows) and run its Gibbs chains."""
        m = self.bank_features.shape[0]
        if projected.shape[0] > m:
            raise ValueError(f"projected must have at most bank_size = {m} rows; got {projected.shape[0]}")
        self.bank_features.zero_()
        self.bank_labels.zero_()
        self.bank_count.zero_()
        self.bank_next.zero_()
        self.push(projected, labels)
        self.refit()

    @torch.no_grad()
    def refit(self) -> None:
        """Run ``n_chains`` Gibbs chains for ``n_bank_steps`` sweeps on the bank; keep the last omega."""
        n = int(self.bank_count)
        self.n_refits.add_(1)
        if n:
            dev = self.bank_features.device
            gen = torch.Generator(device=dev).manual_seed(self.seed * 1_000_003 + int(self.n_refits))
            x = self.bank_features[:n]
            omega, _ = _gibbs_sample(
                self.kernel(x, x), self.bank_labels[:n], n_chains=self.n_chains, n_steps=self.n_bank_steps,
                generator=gen, jitter=self.jitter,
            )
            self.omega[:, :n] = omega
        self.stale = False
        self.clear_cache()

    def clear_cache(self) -> None:
        """Forget the factors derived from the buffers (after loading or refitting)."""
        self._cache = None

    # -- prediction -------------------------------------------------------------

    def _factors(self) -> tuple[Tensor, Tensor, Tensor]:
        """``x`` (n, dim), ``alpha = S B^-1 (kappa / s)`` (C, n), ``W = L^-1 S`` (C, n, n)."""
        if self.stale:
            self.refit()
        if self._cache is None:
            n = int(self.bank_count)
            x = self.bank_features[:n]
            k = _with_nugget(self.kernel(x, x), self.jitter)
            om = self.omega[:, :n]
            s, chol = _chol_b(k, om)
            kappa = _kappa(self.bank_labels[:n], k.dtype)
            alpha = s * torch.cholesky_solve((kappa[None] / s)[..., None], chol).squeeze(-1)
            w = torch.linalg.solve_triangular(chol, torch.diag_embed(s), upper=False)
            self._cache = (x, alpha, w)
        return self._cache

    def predictive(self, projected: Tensor, *, chunk: int = 1024) -> tuple[Tensor, Tensor]:
        """Per-chain predictive mean and variance of the latent, each of shape (C, batch), float64.

        Computed ``chunk`` points at a time (memory ``C x M x chunk``).
        """
        with torch.no_grad():
            x, alpha, w = self._factors()
            z = projected.detach().double()
            if x.shape[0] == 0:
                zeros = torch.zeros((self.n_chains, z.shape[0]), dtype=torch.float64, device=z.device)
                return zeros, zeros + self.output_scale
            means, variances = [], []
            for lo in range(0, z.shape[0], chunk):
                ks = self.kernel(x, z[lo : lo + chunk])  # (n, b)
                v = w @ ks  # (C, n, b)
                means.append(alpha @ ks)
                variances.append((self.output_scale * (1 + self.jitter) - (v * v).sum(-2)).clamp_min(0))
            if not means:
                empty = torch.zeros((self.n_chains, 0), dtype=torch.float64, device=z.device)
                return empty, empty
            return torch.cat(means, -1), torch.cat(variances, -1)

    def joint_predictive(self, projected: Tensor) -> tuple[Tensor, Tensor]:
        """Per-chain joint predictive of blocks of points, each block jointly.

        Parameters
        ----------
        projected : Tensor of shape (q, size, dim)
            ``q`` blocks (the candidates of ``q`` queries) of ``size`` points.

        Returns
        -------
        mean : Tensor of shape (C, q, size)
        cov : Tensor of shape (C, q, size, size)
            float64; blocks are not correlated with each other here.
        """
        with torch.no_grad():
            x, alpha, w = self._factors()
            z = projected.detach().double()
            q, size, dim = z.shape
            d2 = torch.cdist(z / self.length_scale, z / self.length_scale).square()
            kzz = self.output_scale * torch.exp(-0.5 * d2)  # (q, size, size)
            kzz = kzz + (self.jitter * self.output_scale) * torch.eye(size, dtype=z.dtype, device=z.device)
            if x.shape[0] == 0:
                mean = torch.zeros((self.n_chains, q, size), dtype=z.dtype, device=z.device)
                return mean, kzz.expand(self.n_chains, q, size, size).clone()
            ks = self.kernel(x, z.reshape(q * size, dim))  # (n, q size)
            v = (w @ ks).reshape(self.n_chains, -1, q, size)  # (C, n, q, size)
            cov = kzz[None] - torch.einsum("cnqi,cnqj->cqij", v, v)
            return (alpha @ ks).reshape(self.n_chains, q, size), cov

    def probabilities(self, projected: Tensor) -> tuple[Tensor, Tensor]:
        """P(relevant) and its predictive variance, averaged over chains; each shape (batch,), float64."""
        mean, var = self.predictive(projected)
        first, second = _gauss_hermite_sigmoid(mean, var, n_points=self.n_quadrature)
        p = first.mean(0)
        return p, (second.mean(0) - p * p).clamp_min(0)

    def forward(self, projected: Tensor) -> Tensor:
        """One logit per row, ``log p - log(1 - p)`` of the predictive P(relevant): shape (batch, 1)."""
        p, _ = self.probabilities(projected)
        p = p.clamp(1e-300, 1 - 1e-16)
        return (torch.log(p) - torch.log1p(-p))[:, None]

    def extra_repr(self) -> str:
        """Kernel and bank settings."""
        learned = "" if self.log_length_scale is None else " (learned)"
        scale = float(torch.as_tensor(self.length_scale).detach())
        return (f"dim={self.dim}, length_scale={scale:g}{learned}, output_scale={self.output_scale}, "
                f"bank_size={self.bank_features.shape[0]}, n_chains={self.n_chains}")

