"""Beta calibration (Kull, Silva Filho & Flach, AISTATS 2017), constrained to keep the ranking.

``logit p = a ln s - b ln(1 - s) + c`` for a score ``s`` in [0, 1], fitted
by maximum likelihood on validation scores. With ``a, b >= 0`` (the
constraint the paper recommends) the map is non-decreasing in ``s``, so
recalibrating never reorders a list; it can only merge scores that the
clipping to ``[eps, 1 - eps]`` makes equal. The family contains the
identity (``a = b = 1, c = 0``) and, unlike Platt scaling on the raw score,
can bend both tails, which suits similarity scores such as TF-IDF cosines
that crowd near 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing_extensions import Self

__all__ = ["BetaCalibration"]


def _features(s: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    s = np.clip(s, eps, 1.0 - eps)
    return np.column_stack([np.log(s), -np.log1p(-s)])


def _as_scores(scores: ArrayLike, name: str) -> NDArray[np.float64]:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"{name} must have shape (n_pairs,); got {s.shape}")
    bad = ~((s >= 0) & (s <= 1))
    if bad.any():
        raise ValueError(f"{name} must lie in [0, 1]; got {int(bad.sum())} values outside, e.g. {float(s[bad][0])!r}")
    return s


class BetaCalibration:
    """Beta calibration with ``a, b >= 0``: a rank-preserving map of scores in [0, 1] to probabilities.

    Parameters
    ----------
    eps : float
        Scores are clipped to ``[eps, 1 - eps]`` before the logarithms.

    Attributes
    ----------
    coef_ : ndarray of shape (3,)
        ``(a, b, c)`` after :meth:`fit`.

    Examples
    --------
    >>> cal = BetaCalibration().fit([0.1, 0.2, 0.3, 0.6, 0.7, 0.9], [0, 0, 1, 0, 1, 1])
    >>> p = cal.transform([0.1, 0.5, 0.9])
    >>> bool(p[0] <= p[1] <= p[2])
    True
    """

    def __init__(self, *, eps: float = 1e-6) -> None:
        if not isinstance(eps, float) or not 0.0 < eps < 0.5:
            raise ValueError(f"eps must be a float in (0, 0.5); got {eps!r}")
        self.eps = eps
        self.coef_: NDArray[np.float64] | None = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> Self:
        """Fit ``(a, b, c)`` on validation scores and labels of shape (n_pairs,) (``> 0`` is relevant).

        Raises
        ------
        ValueError
            Scores outside [0, 1], shapes that differ, or labels of one class only.
        """
        from scipy.optimize import minimize

        s = _as_scores(scores, "scores")
        y = (np.asarray(labels) > 0).astype(np.float64)
        if y.shape != s.shape:
            raise ValueError(f"labels must have the shape of scores {s.shape}; got {y.shape}")
        if y.min() == y.max():
            raise ValueError("labels must hold both relevant and non-relevant pairs to fit a calibration map")
        x = np.column_stack([_features(s, self.eps), np.ones_like(s)])

        def nll(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            z = x @ w
            loss = float(np.sum(np.logaddexp(0.0, z) - y * z))
            grad = x.T @ (1.0 / (1.0 + np.exp(-z)) - y)
            return loss, grad

        res = minimize(nll, np.array([1.0, 1.0, 0.0]), jac=True, method="L-BFGS-B",
                       bounds=[(0.0, None), (0.0, None), (None, None)])
        self.coef_ = np.asarray(res.x, dtype=np.float64)
        return self

    def transform(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities of relevance, shape (n_pairs,).

        Raises
        ------
        RuntimeError
            Before :meth:`fit`.
        """
        if self.coef_ is None:
            raise RuntimeError("BetaCalibration must be fitted before transform(); call fit() first")
        s = _as_scores(scores, "scores")
        z = _features(s, self.eps) @ self.coef_[:2] + self.coef_[2]
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-z))
        return out

    def fit_transform(self, scores: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
        """``fit(scores, labels).transform(scores)``."""
        return self.fit(scores, labels).transform(scores)

    def __repr__(self) -> str:
        coef: Any = None if self.coef_ is None else np.round(self.coef_, 4).tolist()
        return f"BetaCalibration(coef_={coef})"
