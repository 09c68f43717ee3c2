r"""Sets whose false discovery rate is at most ``alpha`` with probability ``>= 1 - delta`` (Learn-then-Test).

The false discovery proportion of a set is the share of its candidates
that are not relevant (0 for an empty set); its mean over queries is the
false discovery rate, ``1 - precision`` of the sets. It does not fall
steadily as the threshold rises (one more relevant candidate can leave the
set before the next non-relevant one does), so conformal risk control does
not apply; Learn-then-Test (:mod:`~uncertank.conformal.ltt`) does: the
thresholds are tested from the highest (small sets) down, with
Hoeffding-Bentkus p-values over the ``n`` calibration queries and
fixed-sequence testing, and the lowest threshold rejected is shipped:

$$
P\Bigl(E\bigl[\mathrm{FDP}(C_{\hat\lambda}(X))\bigr] \le \alpha\Bigr) \ge 1 - \delta,
$$

the probability over the calibration draw, the expectation over a new
query exchangeable with them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import RankedLists
from uncertank.conformal.calibrated import ConformalThreshold
from uncertank.conformal.lists import ranked_order
from uncertank.conformal.ltt import learn_then_test, threshold_grid
from uncertank.validation import as_float_array, check_instance, check_unit_interval

__all__ = ["fdr_control", "fdr_curve"]

def fdr_curve(lists: RankedLists, grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """The mean false discovery proportion of the sets ``{score >= g}`` for each ``g`` of ``grid``.

    Parameters
    ----------
    lists : RankedLists
        Scores and labels.
    grid : ndarray of shape (m,), decreasing
        Thresholds.

    Returns
    -------
    ndarray of shape (m,)

    Notes
    -----
    A query's false discovery proportion changes only where one of its
    candidates enters the set. Walking each list in ranked order, the
    change at the ``j``-th candidate is ``FDP_j - FDP_(j-1)``; summed into
    the grid point at which that candidate enters (one histogram) and
    accumulated along the grid, it gives the mean over queries at every
    threshold, in ``O(n_pairs log(list length))`` whatever the size of the
    grid.
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    grid = as_float_array(grid, "grid")
    m = grid.size
    order = ranked_order(lists.scores, lists.offsets)
    s = lists.scores[order]
    wrong = np.cumsum(lists.labels[order] <= 0)
    starts = np.repeat(lists.offsets[:-1], lists.lengths)
    before = np.concatenate(([0], wrong[:-1]))[starts]  # the wrong candidates of the queries before
    position = np.arange(s.size) - starts + 1
    fdp = (wrong - before) / position  # the proportion once the top `position` candidates are in
    change = fdp - np.concatenate(([0.0], fdp[:-1]))
    change[lists.offsets[:-1]] = fdp[lists.offsets[:-1]]  # each query starts from an empty set
    first = m - np.searchsorted(grid[::-1], s, side="right")  # the first grid index that keeps the pair
    per_threshold = np.bincount(first, weights=change, minlength=m + 1)[:m]
    return np.clip(np.cumsum(per_threshold) / lists.n_queries, 0.0, 1.0)  # float sums can stray by 1e-16


def fdr_control(
    lists: RankedLists, *, alpha: float = 0.1, delta: float = 0.1, thresholds: ArrayLike | None = None,
    grid_size: int = 1001,
) -> ConformalThreshold:
    """Calibrate a score threshold whose sets have a false discovery rate ``<= alpha``, w.p. ``>= 1 - delta``.

    Parameters
    ----------
    lists : RankedLists
        Conformity scores and labels of the calibration queries.
    alpha : float
        The false discovery rate allowed, in (0, 1).
    delta : float
        The probability that the calibration draw breaks the guarantee, in (0, 1).
    thresholds : array-like, optional
        The grid to test (highest first); by default
        :func:`~uncertank.conformal.ltt.threshold_grid` (fixed for
        probabilities, quantiles of the calibration scores otherwise).
    grid_size : int
        Points of the default grid.

    Returns
    -------
    ConformalThreshold
        ``risk="fdr"``; ``threshold`` is ``+inf`` (every set empty, FDR 0)
        with ``feasible=False`` when no threshold is certified.

    Examples
    --------
    >>> import numpy as np
    >>> from uncertank import RankedLists
    >>> rng = np.random.default_rng(0)
    >>> y = (rng.random((400, 5)) < 0.3).astype(int)
    >>> cal = RankedLists.from_dense(np.clip(0.6 * y + 0.5 * rng.random((400, 5)), 0, 1), y)
    >>> fdr_control(cal, alpha=0.2, delta=0.1).threshold
    0.442
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    alpha = check_unit_interval(alpha, "alpha")
    delta = check_unit_interval(delta, "delta")
    s = lists.scores
    probabilistic = bool(float(s.min()) >= 0.0 and float(s.max()) <= 1.0)
    grid = threshold_grid(s, probabilistic=probabilistic, thresholds=thresholds, size=grid_size)
    risk = fdr_curve(lists, grid)
    n_rej, _ = learn_then_test(risk, lists.n_queries, alpha=alpha, delta=delta, binary=False)
    n = lists.n_queries
    if n_rej == 0:
        return ConformalThreshold(
            risk="fdr", method="threshold", alpha=alpha, delta=delta, threshold=np.inf, k=None, n_calibration=n,
            calibration_risk=0.0, feasible=False,
            guarantee=(f"no threshold is certified to keep the false discovery rate <= {alpha:g} with probability "
                       f">= {1 - delta:g} on {n} calibration queries; the sets are empty"),
        )
    j = n_rej - 1
    return ConformalThreshold(
        risk="fdr", method="threshold", alpha=alpha, delta=delta, threshold=float(grid[j]), k=None, n_calibration=n,
        calibration_risk=float(risk[j]), feasible=True,
        guarantee=(
            f"P(false discovery rate of the sets <= {alpha:g}) >= {1 - delta:g} over the draw of the {n} "
            f"calibration queries, for new queries exchangeable with them, the set being the candidates scoring "
            f">= the threshold (Learn-then-Test: Hoeffding-Bentkus p-values, fixed-sequence testing from the "
            f"highest of {grid.size} thresholds)"
        ),
    )
