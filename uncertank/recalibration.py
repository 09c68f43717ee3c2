"""Post-hoc recalibration of scores into probabilities.

Built-in recalibrators (registered through ``uncertank_recalibrators``):

- ``"platt"``: Platt scaling, ``p = sigmoid(a * s + b)`` fitted by maximum
  likelihood on (score, label) pairs (Platt 1999).
- ``"temperature"``: temperature scaling of logits, ``p = sigmoid(logit(s) / T)``
  (Guo et al. 2017), for scores that already are probabilities.

Both minimise the binary negative log-likelihood with L-BFGS (scipy).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._validation import as_float_array, as_label_array, check_probabilities, check_same_length
from uncertank.hookspecs import hookimpl

__all__ = ["PlattScaling", "TemperatureScaling"]

_EPS = 1e-12


def _fit_xy(scores: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    s = as_float_array(scores, "scores")
    y = (as_label_array(labels, "labels") > 0).astype(np.float64)
    check_same_length(s, "scores", y, "labels")
    return s, y


def _logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    p = np.clip(p, _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


def _nll_affine(
    params: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    a, b = params
    z = a * x + b
    # log(1 + exp(z)) - y z, stable
    loss = np.logaddexp(0.0, z) - y * z
    g = 1.0 / (1.0 + np.exp(-z)) - y
    return float(loss.sum()), np.array([float((g * x).sum()), float(g.sum())])


class PlattScaling:
    """``p = sigmoid(a * score + b)``, fitted by maximum likelihood.

    Examples
    --------
    >>> cal = PlattScaling().fit([-2.0, -1.0, 1.0, 2.0], [0, 1, 0, 1])
    >>> bool(0 < cal.transform([0.0])[0] < 1)
    True
    """

    def __init__(self) -> None:
        self.a_: float | None = None
        self.b_: float | None = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> PlattScaling:
        """Fit ``a`` and ``b`` on scores of shape (n_pairs,) and labels (> 0 relevant)."""
        from scipy.optimize import minimize

        x, y = _fit_xy(scores, labels)
        res = minimize(_nll_affine, np.array([1.0, 0.0]), args=(x, y), jac=True, method="L-BFGS-B")
        self.a_, self.b_ = (float(v) for v in res.x)
        return self

    def transform(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities, shape (n_pairs,)."""
        if self.a_ is None or self.b_ is None:
            raise RuntimeError("PlattScaling must be fitted before transform()")
        x = as_float_array(scores, "scores")
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-(self.a_ * x + self.b_)))
        return out


class TemperatureScaling:
    """``p = sigmoid(logit(score) / T)`` for probability scores, ``T > 0`` fitted by likelihood."""

    def __init__(self) -> None:
        self.temperature_: float | None = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> TemperatureScaling:
        """Fit ``T`` on probabilities of shape (n_pairs,) and labels (> 0 relevant)."""
        from scipy.optimize import minimize_scalar

        p, y = _fit_xy(scores, labels)
        check_probabilities(p, "scores")
        z = _logit(p)

        def nll(log_t: float) -> float:
            zt = z / np.exp(log_t)
            return float((np.logaddexp(0.0, zt) - y * zt).sum())

        res = minimize_scalar(nll, bounds=(-5.0, 5.0), method="bounded")
        self.temperature_ = float(np.exp(res.x))
        return self

    def transform(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Recalibrated probabilities, shape (n_pairs,)."""
        if self.temperature_ is None:
            raise RuntimeError("TemperatureScaling must be fitted before transform()")
        p = as_float_array(scores, "scores")
        check_probabilities(p, "scores")
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-_logit(p) / self.temperature_))
        return out


@hookimpl
def uncertank_recalibrators() -> dict[str, Any]:
    """Register the built-in recalibrators."""
    return {"platt": PlattScaling, "temperature": TemperatureScaling}
