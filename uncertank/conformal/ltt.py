r"""Learn-then-Test: ``P(risk <= alpha) >= 1 - delta`` for a risk that need not be monotone.

Conformal risk control needs a loss that only falls as the set grows. The
false discovery proportion of a set and the error rate among the queries
answered are not so. Learn-then-Test (Angelopoulos, Bates, Candès, Jordan &
Lei, 2021) turns the choice of a threshold into multiple testing: for each
threshold ``lambda`` of a grid fixed in advance, test the null hypothesis
``H_lambda: R(lambda) > alpha`` with a valid p-value; every threshold whose
null is rejected by a procedure that controls the family-wise error rate
at ``delta`` then has ``R(lambda) <= alpha``, all at once, with probability
at least ``1 - delta``.

- The p-value is Hoeffding-Bentkus (their Proposition 3): for an empirical
  risk ``R_hat`` of a loss in [0, 1] on ``n`` samples,

  $$
  p^{HB} = \min\Bigl(\exp\bigl(-n\, h_1(\hat R \wedge \alpha, \alpha)\bigr),\;
  e\, P\bigl(\mathrm{Bin}(n, \alpha) \le \lceil n \hat R \rceil\bigr)\Bigr),
  \quad h_1(a, b) = a \log\frac{a}{b} + (1 - a) \log\frac{1 - a}{1 - b};
  $$

  for a binary loss the binomial term holds without the factor ``e``
  (``binary=True``), since ``n R_hat`` is then binomial itself.
- Fixed-sequence testing orders the grid from the safest threshold (the
  smallest set, the fewest answers) to the boldest, tests each at level
  ``delta`` with no correction, and stops at the first that is not
  rejected; it controls the family-wise error rate when the order is fixed
  in advance, and loses nothing to the size of the grid.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.validation import as_float_array, check_positive_int, check_probabilities, check_unit_interval

__all__ = ["fixed_sequence", "hoeffding_bentkus", "learn_then_test", "threshold_grid"]


def _h1(a: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """``a log(a / b) + (1 - a) log((1 - a) / (1 - b))`` for ``0 <= a <= b < 1``, with ``0 log 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(a > 0, a * np.log(a / b), 0.0)
    return first + (1 - a) * np.log((1 - a) / (1 - b))


def hoeffding_bentkus(risk: ArrayLike, n: ArrayLike, alpha: float, *, binary: bool = False) -> NDArray[np.float64]:
    """Hoeffding-Bentkus p-values of ``H: R > alpha`` from empirical risks.

    Parameters
    ----------
    risk : array-like of shape (m,)
        Empirical risks in [0, 1].
    n : int or array-like of shape (m,)
        The samples each risk is a mean over (for a conditional risk, such
        as the error rate among answered queries, the number answered).
    alpha : float
        The risk level in (0, 1).
    binary : bool
        The loss is 0 or 1 (then the binomial term needs no factor ``e``).

    Returns
    -------
    ndarray of shape (m,)
        p-values in [0, 1]; 1 where ``n`` is 0.

    Examples
    --------
    >>> hoeffding_bentkus([0.0, 0.05, 0.2], 100, 0.1, binary=True).round(4).tolist()
    [0.0, 0.0576, 0.9992]
    """
    from scipy.stats import binom

    alpha = check_unit_interval(alpha, "alpha")
    r = np.asarray(risk)
    if r.dtype.kind not in "biuf":
        raise TypeError(f"risk must be numeric (real numbers); got {type(risk).__name__} of dtype {r.dtype}")
    r = r.astype(np.float64)
    if r.ndim != 1:
        raise ValueError(f"risk must be 1-D; got shape {r.shape}")
    check_probabilities(r, "risk")
    m = np.broadcast_to(np.asarray(n, dtype=np.float64), r.shape)
    if m.size and (np.isnan(m).any() or float(m.min()) < 0.0):
        raise ValueError("n must be >= 0")
    hoeffding = np.exp(-m * _h1(np.minimum(r, alpha), alpha))
    # n R_hat counts errors for a binary loss; a float quotient can land a hair above the count
    # (1 - 100 / 105 gives 105 R_hat = 5.000000000000005), which ceil would make one error more.
    bentkus = binom.cdf(np.ceil(np.round(m * r, 9)), m, alpha) * (1.0 if binary else math.e)
    p = np.minimum(np.minimum(hoeffding, bentkus), 1.0)
    return np.where(m > 0, p, 1.0)


def fixed_sequence(pvalues: ArrayLike, delta: float) -> int:
    """How many hypotheses, in the order given, fixed-sequence testing rejects at level ``delta``.

    Hypothesis ``i`` is rejected when it and every one before it have a
    p-value ``<= delta``; the first that does not stops the sequence.

    Examples
    --------
    >>> fixed_sequence([0.01, 0.05, 0.2, 0.01], 0.1)
    2
    """
    delta = check_unit_interval(delta, "delta")
    p = as_float_array(pvalues, "pvalues", allow_infinite=True, allow_nan=True, allow_empty=True)  # NaN ends it
    fail = np.flatnonzero(~(p <= delta))
    return int(fail[0]) if fail.size else int(p.size)


def learn_then_test(
    risk: ArrayLike, n: ArrayLike, *, alpha: float, delta: float, binary: bool = False
) -> tuple[int, NDArray[np.float64]]:
    """Learn-then-Test over a grid ordered from the safest threshold to the boldest.

    Parameters
    ----------
    risk : array-like of shape (m,)
        Empirical risk at each threshold, in the testing order.
    n : int or array-like of shape (m,)
        Samples behind each risk.
    alpha, delta : float
        Risk level and failure probability, both in (0, 1).
    binary : bool
        The loss is 0 or 1.

    Returns
    -------
    n_rejected : int
        The first ``n_rejected`` thresholds all have risk ``<= alpha``, with
        probability ``>= 1 - delta``; the boldest of them is the one to
        ship (none when 0).
    pvalues : ndarray of shape (m,)
    """
    p = hoeffding_bentkus(risk, n, alpha, binary=binary)
    return fixed_sequence(p, delta), p


def threshold_grid(
    values: NDArray[np.float64], *, probabilistic: bool, thresholds: ArrayLike | None = None, size: int = 1001
) -> NDArray[np.float64]:
    """The thresholds Learn-then-Test tests, from the highest (the safest) down.

    Parameters
    ----------
    values : ndarray
        The calibration scores the thresholds apply to.
    probabilistic : bool
        The scores are probabilities: the default grid is then fixed in
        advance, ``1, 1 - 1/(size - 1), ..., 0``.
    thresholds : array-like, optional
        The user's grid (any order; tested from the highest down).
    size : int
        Points of the default grid.

    Returns
    -------
    ndarray of shape (m,), decreasing

    Notes
    -----
    For raw scores no grid can be fixed before seeing them; the default is
    then ``size`` quantiles of the calibration scores (their labels unseen).
    Pass ``thresholds`` chosen in advance for the guarantee as the theory
    states it.
    """
    if not isinstance(probabilistic, (bool, np.bool_)):
        raise TypeError(f"probabilistic must be a bool; got {type(probabilistic).__name__} {probabilistic!r}")
    size = check_positive_int(size, "size", minimum=2)
    if thresholds is None:
        values = as_float_array(values, "values")
    if thresholds is not None:
        g = np.asarray(thresholds)
        if g.dtype.kind not in "biuf":
            raise TypeError(f"thresholds must be numeric (real numbers); got dtype {g.dtype}")
        g = g.astype(np.float64)
        if g.ndim != 1 or g.size == 0:
            raise ValueError(f"thresholds must be 1-D with at least one value; got shape {g.shape}")
        if not np.isfinite(g).all():
            raise ValueError("thresholds must be finite")
        grid: NDArray[np.float64] = np.unique(g)[::-1].copy()
        return grid
    if probabilistic:
        return np.arange(size - 1, -1, -1) / (size - 1)  # j / (size - 1): 0.801, not 0.8009999999999999
    quantiles: NDArray[np.float64] = np.unique(
        np.quantile(values, np.linspace(0.0, 1.0, size), method="inverted_cdf"))[::-1].copy()
    return quantiles
