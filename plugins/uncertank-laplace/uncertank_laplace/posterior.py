r"""The Laplace approximation of a linear output layer on fixed features.

A cross-encoder's output layer maps the vector ``phi`` (d,) it receives to
``k`` logits, ``l = W phi + b``; P(relevant) is ``sigmoid(l)`` for one logit
and ``softmax(l)[1]`` for two. With the encoder (and everything before the
output layer) frozen, ``phi`` is a fixed feature of each pair, and the
Laplace approximation of the output layer's posterior is exact in its
curvature (MacKay 1992; the last-layer Laplace of Kristiadi et al., ICML 2020,
and Daxberger et al., "Laplace Redux", NeurIPS 2021):

- the parameters are ``theta = [W | b]``, shape (k, d + 1), with the
  augmented feature ``x = [phi, 1]``; vectors over ``theta`` are row-major
  (logit by logit), ``P = k (d + 1)`` entries;
- the prior is ``N(0, I / delta)``, the same precision ``delta`` for every
  parameter (laplace-torch's scalar prior);
- the posterior is ``N(theta*, (H + delta I)^-1)`` around the trained
  weights ``theta*`` (the MAP), where ``H = sum_n Lambda_n (x) x_n x_n^T`` is
  the Hessian of the negative log-likelihood, ``Lambda_n = p(1 - p)`` for a
  sigmoid and ``diag(p) - p p^T`` for a softmax (for a linear layer under its
  canonical link the generalised Gauss-Newton matrix *is* that Hessian);
- ``structure="kron"`` replaces ``H`` by the Kronecker factors
  ``G (x) A`` with ``G = mean_n Lambda_n`` (k x k) and ``A = sum_n x_n x_n^T``
  ((d+1) x (d+1)), KFAC (Martens & Grosse, ICML 2015; Ritter et al., ICLR
  2018), whose eigen-decomposition gives the posterior in factored form;
- ``delta`` maximises the Laplace approximation of the log marginal
  likelihood (Immer et al., ICML 2021; laplace-torch's
  ``log_marginal_likelihood``)

  .. math::

     \log Z(\delta) = \log p(y \mid \theta^*) - \tfrac12 \delta \lVert\theta^*\rVert^2
       + \tfrac{P}{2} \log \delta - \tfrac12 \sum_i \log(\lambda_i + \delta),

  ``lambda_i`` the eigenvalues of ``H`` (of ``G (x) A``: the products of the
  factors' eigenvalues). Its derivative in ``log delta`` is
  ``(gamma(delta) - delta ||theta*||^2) / 2`` with
  ``gamma = sum_i lambda_i / (lambda_i + delta)`` decreasing in ``delta``, so
  the optimum is unique and found by bracketing the root (MacKay's
  ``delta = gamma / ||theta*||^2``).

P(relevant) depends on ``theta`` only through the *relevance contrast*
``u = sum_c w_c theta_c`` (``w = [1]`` for one logit, ``[-1, 1]`` for two:
``softmax(l)[1] = sigmoid(l_1 - l_0)``), Gaussian with mean ``u*`` and
covariance ``S`` (:meth:`LastLayerPosterior.contrast`). The probit
approximation of the predictive (MacKay 1992; Spiegelhalter & Lauritzen
1990) is ``sigmoid(m / sqrt(1 + pi v / 8))`` with ``m = u*^T x`` and
``v = x^T S x`` (:func:`probit`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from uncertank.validation import (
    as_float_array,
    check_choice,
    check_instance,
    check_nonnegative,
    check_real,
    check_scale,
    check_tensor,
)

__all__ = [
    "STRUCTURES",
    "LastLayerPosterior",
    "fit_last_layer",
    "log_marginal_likelihood",
    "optimize_prior_precision",
    "probit",
]

#: Hessian structures: ``"auto"`` (full for one or two logits, Kronecker-factored for more), ``"full"``, ``"kron"``.
STRUCTURES = ("auto", "full", "kron")

#: Where the marginal-likelihood search for the prior precision looks.
PRIOR_BOUNDS = (1e-6, 1e6)

_F64 = torch.float64


def _as_f64(value: Any, name: str, ndim: int) -> torch.Tensor:
    """``value`` (an array-like or a real tensor of rank ``ndim``, finite) as a float64 CPU tensor; else an error."""
    if not isinstance(value, torch.Tensor):
        return torch.from_numpy(np.array(as_float_array(value, name, ndim=ndim)))  # cpu: float64 posterior; a copy
    check_tensor(value, name, ndim=ndim)
    out = value.detach().to(device="cpu", dtype=_F64)
    if not bool(torch.isfinite(out).all()):  # an integer tensor past float64's range, read as infinite
        raise ValueError(f"{name} must be finite; got {int((~torch.isfinite(out)).sum())} non-finite values")
    return out


def _check_bounds(bounds: object) -> tuple[float, float]:
    """``bounds`` as two finite numbers ``0 < lo < hi``; else the error naming ``bounds``."""
    check_instance(bounds, "bounds", (tuple, list), "a pair (lo, hi) of numbers")
    assert isinstance(bounds, (tuple, list))
    if len(bounds) != 2:
        raise ValueError(f"bounds must be two finite numbers 0 < lo < hi; got {len(bounds)} values")
    lo = check_real(bounds[0], "bounds[0]")
    hi = check_real(bounds[1], "bounds[1]")
    if not 0 < lo < hi:
        raise ValueError(f"bounds must be two finite numbers 0 < lo < hi; got {tuple(bounds)!r}")
    return lo, hi


def _eigenvalues(eigenvalues: ArrayLike) -> np.ndarray:
    """The Hessian's eigenvalues (finite, 1-D), clipped at 0."""
    return np.clip(as_float_array(eigenvalues, "eigenvalues"), 0.0, None)


def _augment(features: torch.Tensor, has_bias: bool) -> torch.Tensor:
    """``[phi, 1]`` (or ``phi`` for a layer without bias), float64."""
    if not has_bias:
        return features
    return torch.cat([features, torch.ones(features.shape[0], 1, dtype=features.dtype, device=features.device)], 1)


def _check_curvature(hessian: torch.Tensor) -> None:
    """Raise unless the Hessian (or its input factor), a sum of squares of the features, is finite."""
    if not bool(torch.isfinite(hessian).all()):
        raise ValueError("features are too large: the Hessian of the log-likelihood overflows float64")


def _curvature(logits: torch.Tensor) -> torch.Tensor:
    """``Lambda_n``, the Hessian of ``-log p(y | l)`` in the logits: shape (n, k, k)."""
    if logits.shape[1] == 1:
        p = torch.sigmoid(logits)
        return (p * (1 - p))[:, :, None]
    p = torch.softmax(logits, dim=1)
    return torch.diag_embed(p) - p[:, :, None] * p[:, None, :]


def _log_likelihood(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """``sum_n log p(y_n | l_n)``: Bernoulli of a sigmoid for one logit, categorical of a softmax otherwise."""
    if logits.shape[1] == 1:
        y = labels.to(_F64)
        return float(-torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y, reduction="sum"))
    return float(torch.log_softmax(logits, dim=1).gather(1, labels[:, None]).sum())


def log_marginal_likelihood(
    log_likelihood: float, sq_norm: float, eigenvalues: ArrayLike, prior_precision: float
) -> float:
    r"""The Laplace log marginal likelihood ``log Z(delta)`` (the module's formula).

    Parameters
    ----------
    log_likelihood : float
        ``log p(y | theta*)`` at the trained weights.
    sq_norm : float
        ``||theta*||^2``.
    eigenvalues : array of shape (P,)
        The eigenvalues of the log-likelihood Hessian (or of its Kronecker approximation).
    prior_precision : float
        ``delta`` > 0.

    Returns
    -------
    float
        ``log p(y | theta*) - delta ||theta*||^2 / 2 + P log(delta) / 2 - sum_i log(lambda_i + delta) / 2``;
        the constant ``- P log(2 pi) / 2`` of prior and posterior cancels.

    Examples
    --------
    >>> round(log_marginal_likelihood(-10.0, 4.0, [3.0, 1.0], 1.0), 6)  # -10 - 2 + 0 - (log 4 + log 2) / 2
    -13.039721
    """
    loglik = check_real(log_likelihood, "log_likelihood")
    sq = check_nonnegative(sq_norm, "sq_norm")
    lam = _eigenvalues(eigenvalues)
    delta = check_scale(prior_precision, "prior_precision")
    out = loglik - 0.5 * delta * sq + 0.5 * lam.size * math.log(delta) - 0.5 * np.log(lam + delta).sum()
    if not math.isfinite(out):
        raise ValueError(
            f"the log marginal likelihood overflows: log_likelihood={loglik!r}, sq_norm={sq!r} and "
            f"prior_precision={delta!r} are too large together"
        )
    return float(out)


def optimize_prior_precision(
    sq_norm: float, eigenvalues: ArrayLike, *, bounds: tuple[float, float] = PRIOR_BOUNDS
) -> float:
    """The prior precision ``delta`` that maximises :func:`log_marginal_likelihood`.

    The stationarity condition ``gamma(delta) = delta ||theta*||^2``, with
    ``gamma(delta) = sum_i lambda_i / (lambda_i + delta)`` the effective
    number of parameters (MacKay 1992), has one root; it is bracketed in
    ``log delta`` within ``bounds`` and found by Brent's method to 1e-12.
    A maximum beyond a bound returns the bound.

    Parameters
    ----------
    sq_norm : float
        ``||theta*||^2``.
    eigenvalues : array of shape (P,)
        The eigenvalues of the log-likelihood Hessian.
    bounds : (float, float)
        The search interval (1e-6, 1e6).

    Returns
    -------
    float

    Examples
    --------
    >>> d = optimize_prior_precision(2.0, [1.0, 1.0])  # gamma = 2 / (1 + d) = 2 d
    >>> round(d, 6), round((-1 + 5 ** 0.5) / 2, 6)
    (0.618034, 0.618034)
    """
    from scipy.optimize import brentq

    sq = check_nonnegative(sq_norm, "sq_norm")
    lam = _eigenvalues(eigenvalues)
    lo, hi = _check_bounds(bounds)

    def slope(t: float) -> float:
        delta = math.exp(t)
        return float((lam / (lam + delta)).sum() - delta * sq)

    a, b = math.log(lo), math.log(hi)
    if slope(a) <= 0:
        return lo
    if slope(b) >= 0:
        return hi
    return math.exp(brentq(slope, a, b, xtol=1e-12, rtol=4 * np.finfo(float).eps, maxiter=500))


def probit(mean: Any, variance: Any) -> Any:
    """The probit approximation of ``E[sigmoid(f)]`` for ``f ~ N(mean, variance)``: ``sigmoid(m / sqrt(1 + pi v / 8))``.

    MacKay (1992); Spiegelhalter & Lauritzen (1990). Works on numpy arrays and torch tensors alike:
    ``mean`` and ``variance`` are both tensors (the result is one) or both array-likes (numbers,
    lists, arrays; the result is an array), of shapes that broadcast, finite, ``variance`` >= 0.

    Raises
    ------
    TypeError
        When one is a tensor and the other not, or either holds no real numbers.
    ValueError
        When either is not finite, a variance is negative, or the shapes do not broadcast.

    Examples
    --------
    >>> float(probit(np.array(0.0), np.array(5.0)))
    0.5
    >>> round(float(probit(np.array(2.0), np.array(8.0 / np.pi))), 6)  # sigmoid(2 / sqrt 2)
    0.80443
    """
    if isinstance(mean, torch.Tensor) or isinstance(variance, torch.Tensor):
        check_instance(mean, "mean", torch.Tensor, "a torch tensor, as variance is")
        check_instance(variance, "variance", torch.Tensor, "a torch tensor, as mean is")
        for name, t in (("mean", mean), ("variance", variance)):
            check_tensor(t, name)
        if bool((variance < 0).any()):
            raise ValueError(f"variance must be >= 0; got {int((variance < 0).sum())} negative values")
        _broadcast(tuple(mean.shape), tuple(variance.shape))
        return _probit(mean, variance)
    ranks = tuple(range(33))  # any rank numpy allows
    m, v = as_float_array(mean, "mean", ndim=ranks), as_float_array(variance, "variance", ndim=ranks)
    if (v < 0).any():
        raise ValueError(f"variance must be >= 0; got {int((v < 0).sum())} negative values, e.g. {v[v < 0].flat[0]!r}")
    _broadcast(m.shape, v.shape)
    return _probit(m, v)


def _broadcast(mean: tuple[int, ...], variance: tuple[int, ...]) -> None:
    """Raise unless the shapes of ``mean`` and ``variance`` broadcast together."""
    try:
        np.broadcast_shapes(mean, variance)
    except ValueError as exc:
        raise ValueError(f"mean and variance must have shapes that broadcast; got {mean} and {variance}") from exc


def _probit(mean: Any, variance: Any) -> Any:
    """:func:`probit` of checked values: tensors, or float64 arrays."""
    if isinstance(mean, torch.Tensor):
        return torch.sigmoid(mean / torch.sqrt(1 + math.pi / 8 * variance))
    with np.errstate(over="ignore"):  # exp(-m / s) = inf for a very negative m: 1 / (1 + inf) = 0 is the limit
        return 1.0 / (1.0 + np.exp(-mean / np.sqrt(1 + math.pi / 8 * variance)))


@dataclass(frozen=True, eq=False)
class LastLayerPosterior:
    """The Laplace posterior ``N(theta*, (H + delta I)^-1)`` of a linear output layer (see the module).

    Built by :func:`fit_last_layer`. Tensors are float64 on the CPU.

    Attributes
    ----------
    structure : {"full", "kron"}
    mean : Tensor of shape (k, d + 1)
        ``theta* = [W | b]`` (shape (k, d) for a layer without bias).
    has_bias : bool
    prior_precision : float
        ``delta``.
    log_likelihood : float
        ``log p(y | theta*)`` on the data the posterior was fitted on.
    log_marginal_likelihood : float
        ``log Z(delta)``.
    n_data : int
    hessian : Tensor of shape (P, P) or None
        ``H`` (``structure="full"``).
    kron_out, kron_in : Tensor or None
        ``G`` (k, k) and ``A`` ((d+1), (d+1)) (``structure="kron"``).
    """

    structure: str
    mean: torch.Tensor
    has_bias: bool
    prior_precision: float
    log_likelihood: float
    log_marginal_likelihood: float
    n_data: int
    hessian: torch.Tensor | None = None
    kron_out: torch.Tensor | None = None
    kron_in: torch.Tensor | None = None

    @property
    def n_outputs(self) -> int:
        """k, the number of logits."""
        return int(self.mean.shape[0])

    @property
    def n_params(self) -> int:
        """P = k (d + 1)."""
        return int(self.mean.numel())

    def _kron_eigen(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        assert self.kron_out is not None and self.kron_in is not None
        lg, qg = torch.linalg.eigh(self.kron_out)
        la, qa = torch.linalg.eigh(self.kron_in)
        return lg.clamp_min(0), qg, la.clamp_min(0), qa

    def hessian_eigenvalues(self) -> torch.Tensor:
        """The eigenvalues of ``H`` (``G (x) A`` for ``kron``), clipped at 0, shape (P,)."""
        if self.structure == "full":
            assert self.hessian is not None
            return torch.linalg.eigvalsh(self.hessian).clamp_min(0)
        lg, _, la, _ = self._kron_eigen()
        return torch.outer(lg, la).reshape(-1)

    def precision(self) -> torch.Tensor:
        """The posterior precision ``H + delta I`` (``G (x) A + delta I``), dense, shape (P, P)."""
        eye = torch.eye(self.n_params, dtype=_F64, device=self.mean.device)
        if self.structure == "full":
            assert self.hessian is not None
            return self.hessian + self.prior_precision * eye
        assert self.kron_out is not None and self.kron_in is not None
        return torch.kron(self.kron_out, self.kron_in) + self.prior_precision * eye

    def covariance(self) -> torch.Tensor:
        """The posterior covariance, dense, shape (P, P): for inspection and tests (P^2 memory)."""
        if self.structure == "full":
            chol = torch.linalg.cholesky(self.precision())
            return torch.cholesky_inverse(chol)
        lg, qg, la, qa = self._kron_eigen()
        q = torch.kron(qg, qa)
        return (q / (torch.outer(lg, la).reshape(-1) + self.prior_precision)) @ q.T

    def contrast_weights(self) -> torch.Tensor:
        """``w``: ``[1]`` for one logit (sigmoid), ``[-1, 1]`` for two (softmax column 1).

        Raises
        ------
        ValueError
            For more than two logits, which give no single P(relevant).
        """
        if self.n_outputs == 1:
            return torch.ones(1, dtype=_F64, device=self.mean.device)
        if self.n_outputs == 2:
            return torch.tensor([-1.0, 1.0], dtype=_F64, device=self.mean.device)
        raise ValueError(f"P(relevant) needs one logit or two; the layer has {self.n_outputs}")

    def contrast(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean ``u*`` (d+1,) and covariance ``S`` ((d+1), (d+1)) of the contrast ``u = sum_c w_c theta_c``."""
        w = self.contrast_weights()
        u = w @ self.mean
        if self.structure == "full":
            d = self.mean.shape[1]
            cov = self.covariance().reshape(self.n_outputs, d, self.n_outputs, d)
            s = torch.einsum("a,aibj,b->ij", w, cov, w)
            return u, 0.5 * (s + s.T)
        lg, qg, la, qa = self._kron_eigen()
        coef = (w @ qg) ** 2  # (k,): (w^T q_G,i)^2
        scale = (coef[:, None] / (torch.outer(lg, la) + self.prior_precision)).sum(0)  # (d+1,)
        s = (qa * scale) @ qa.T
        return u, 0.5 * (s + s.T)

    def logit_covariance(self, features: Any) -> torch.Tensor:
        """``J Sigma J^T``: the posterior covariance of each pair's k logits, shape (n, k, k)."""
        x = _augment(_as_f64(features, "features", 2), self.has_bias)
        k, d = self.mean.shape
        cov = self.covariance().reshape(k, d, k, d)
        return torch.einsum("ni,aibj,nj->nab", x, cov, x)

    # -- what a checkpoint stores -------------------------------------------------------------

    def to_tensors(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        """Tensors and string metadata that :meth:`from_tensors` rebuilds this posterior from, bit for bit."""
        tensors = {"mean": self.mean.contiguous()}
        for key in ("hessian", "kron_out", "kron_in"):
            value = getattr(self, key)
            if value is not None:
                tensors[key] = value.contiguous()
        meta = {
            "structure": self.structure,
            "has_bias": str(bool(self.has_bias)),
            "prior_precision": repr(float(self.prior_precision)),
            "log_likelihood": repr(float(self.log_likelihood)),
            "log_marginal_likelihood": repr(float(self.log_marginal_likelihood)),
            "n_data": str(int(self.n_data)),
        }
        return tensors, meta

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> LastLayerPosterior:
        """The posterior that :meth:`to_tensors` wrote."""
        return cls(
            structure=meta["structure"], mean=tensors["mean"].to(_F64), has_bias=meta["has_bias"] == "True",
            prior_precision=float(meta["prior_precision"]), log_likelihood=float(meta["log_likelihood"]),
            log_marginal_likelihood=float(meta["log_marginal_likelihood"]), n_data=int(meta["n_data"]),
            hessian=tensors.get("hessian"), kron_out=tensors.get("kron_out"), kron_in=tensors.get("kron_in"),
        )


def fit_last_layer(
    features: Any,
    labels: Any,
    weight: Any,
    bias: Any = None,
    *,
    structure: str = "auto",
    prior_precision: float | str = "marglik",
    bounds: tuple[float, float] = PRIOR_BOUNDS,
) -> LastLayerPosterior:
    """The Laplace posterior of the linear layer ``(weight, bias)`` at those weights, on fixed features.

    Parameters
    ----------
    features : array or Tensor of shape (n, d)
        The layer's inputs, one row per training pair.
    labels : array of shape (n,)
        Relevance labels; > 0 counts as relevant (class 1).
    weight : array or Tensor of shape (k, d)
        The trained weights (the MAP); k = 1 (sigmoid) or k >= 2 (softmax).
    bias : array or Tensor of shape (k,), optional
        The trained bias; None for a layer without one.
    structure : {"auto", "full", "kron"}
        The Hessian: ``"full"`` (exact), ``"kron"`` (KFAC), ``"auto"``: full
        for one or two logits, Kronecker-factored for more.
    prior_precision : float or "marglik"
        ``delta``; ``"marglik"`` maximises the log marginal likelihood
        (:func:`optimize_prior_precision`) within ``bounds``.
    bounds : (float, float)
        The search interval of ``"marglik"``.

    Returns
    -------
    LastLayerPosterior
    """
    structure = check_choice(structure, "structure", STRUCTURES)
    if isinstance(prior_precision, str):
        if prior_precision != "marglik":
            raise ValueError(f"prior_precision must be 'marglik' or a number > 0; got {prior_precision!r}")
    elif isinstance(prior_precision, bool) or not isinstance(prior_precision, numbers.Real):
        raise TypeError(
            f"prior_precision must be 'marglik' or a number > 0; got {type(prior_precision).__name__} "
            f"{prior_precision!r}"
        )
    elif not (math.isfinite(prior_precision) and prior_precision > 0):
        raise ValueError(f"prior_precision must be 'marglik' or a number > 0; got {prior_precision!r}")
    bounds = _check_bounds(bounds)
    phi = _as_f64(features, "features", 2)
    w = _as_f64(weight, "weight", 2)
    k, d = w.shape
    if phi.shape[1] != d:
        raise ValueError(f"features must have {d} columns, the layer's input width; got {phi.shape[1]}")
    y = torch.from_numpy(np.array(as_float_array(labels, "labels")))  # cpu: the posterior's; a copy (read-only labels)
    if y.shape[0] != phi.shape[0]:
        raise ValueError(f"labels must have one entry per feature row ({phi.shape[0]}); got {y.shape[0]}")
    if phi.shape[0] == 0:
        raise ValueError("features must hold at least one row; got none")
    y = (y > 0).to(torch.long)
    has_bias = bias is not None
    theta = w
    if has_bias:
        b = _as_f64(bias, "bias", 1)
        if b.shape[0] != k:
            raise ValueError(f"bias must have {k} entries, one per logit; got {b.shape[0]}")
        theta = torch.cat([w, b[:, None]], 1)
    if structure == "auto":
        structure = "full" if k <= 2 else "kron"
    x = _augment(phi, has_bias)
    logits = x @ theta.T
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("features and weight are too large: the layer's logits overflow float64")
    lam = _curvature(logits)
    loglik = _log_likelihood(logits, y)
    hessian = kron_out = kron_in = None
    if structure == "full":
        blocks = [[(x * lam[:, a, b, None]).T @ x for b in range(k)] for a in range(k)]
        hessian = torch.cat([torch.cat(row, 1) for row in blocks], 0)
        hessian = 0.5 * (hessian + hessian.T)
        _check_curvature(hessian)
        eig = torch.linalg.eigvalsh(hessian).clamp_min(0)
    else:
        kron_out = lam.mean(0)
        kron_in = x.T @ x
        kron_out, kron_in = 0.5 * (kron_out + kron_out.T), 0.5 * (kron_in + kron_in.T)
        _check_curvature(kron_in)
        eig = torch.outer(torch.linalg.eigvalsh(kron_out).clamp_min(0), torch.linalg.eigvalsh(kron_in).clamp_min(0))
    sq = float((theta**2).sum())
    if not math.isfinite(sq):
        raise ValueError("weight and bias are too large: their squared norm overflows float64")
    if isinstance(prior_precision, str):  # "marglik", as checked at the door
        delta = optimize_prior_precision(sq, eig.reshape(-1).numpy(), bounds=bounds)
    else:
        delta = float(prior_precision)
    return LastLayerPosterior(
        structure=structure, mean=theta, has_bias=has_bias, prior_precision=delta, log_likelihood=loglik,
        log_marginal_likelihood=log_marginal_likelihood(loglik, sq, eig.reshape(-1).numpy(), delta),
        n_data=int(phi.shape[0]), hessian=hessian, kron_out=kron_out, kron_in=kron_in,
    )
