r"""Conformal risk control of the miss rate: ``E[1 - recall of the set] <= alpha``.

With several relevant candidates per query, "a relevant candidate is in the
set" says little; the miss rate of a query's set is the share of its
relevant candidates left out, ``L = 1 - recall`` (0 for a query without
relevant candidates), a loss in [0, 1] that only falls as the set grows.
Conformal risk control (Angelopoulos, Bates, Fisch, Lei & Schuster, ICLR
2024, Theorem 1) picks the smallest set whose calibration risk, inflated
for one more query, stays under ``alpha``:

$$
\hat\lambda = \inf\Bigl\{\lambda : \frac{n}{n + 1}\hat R_n(\lambda) + \frac{B}{n + 1}
\le \alpha\Bigr\}, \qquad B = 1,
$$

so that ``E[L_{n+1}(lambda_hat)] <= alpha`` for a new query exchangeable
with the ``n`` calibration queries (marginal, finite-sample). Here
``lambda`` runs over every set size: the score threshold ``t`` (candidates
scoring ``>= t``; the search is exact over every relevant score, with no
grid) or ``k`` (the ``k`` best-ranked candidates). With one relevant
candidate per query the miss rate is the miscoverage and the threshold is
that of split conformal.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

from uncertank._types import RankedLists, query_index
from uncertank.conformal.calibrated import ConformalThreshold
from uncertank.conformal.lists import list_positions
from uncertank.validation import check_choice, check_instance, check_unit_interval

__all__ = ["conformal_risk_control", "miss_weights"]

#: Slack on the comparison with the bound, against float sums of reciprocals (1/3 + 1/3 + 1/3 > 1).
_EPS = 1e-12


def miss_weights(lists: RankedLists) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The relevant pairs and what missing each costs the mean miss rate.

    Returns
    -------
    relevant : ndarray of int
        Flat positions of the relevant pairs (label > 0).
    weights : ndarray of float, same shape
        ``1 / (n_queries * n_relevant of its query)``: the empirical risk
        ``R_hat`` is the sum of the weights of the missed relevant pairs.
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    rel = np.flatnonzero(lists.labels > 0)
    q = query_index(lists.offsets)[rel]
    n_rel = np.bincount(q, minlength=lists.n_queries)
    return rel, 1.0 / (lists.n_queries * n_rel[q])


def conformal_risk_control(
    lists: RankedLists, *, alpha: float = 0.1, method: Literal["threshold", "topk"] = "threshold"
) -> ConformalThreshold:
    """Calibrate sets whose expected miss rate (1 - recall) is at most ``alpha``.

    Parameters
    ----------
    lists : RankedLists
        Conformity scores and labels of the calibration queries.
    alpha : float
        The risk level in (0, 1).
    method : {"threshold", "topk"}
        A score threshold (exact over the relevant scores) or a number of
        candidates.

    Returns
    -------
    ConformalThreshold
        ``risk="miss"``; ``calibration_risk`` is the mean miss rate on the
        calibration queries.

    Examples
    --------
    >>> from uncertank import RankedLists
    >>> cal = RankedLists.from_dense([[0.9, 0.8, 0.1], [0.7, 0.2, 0.6], [0.5, 0.4, 0.3]],
    ...                              [[1, 1, 0], [1, 0, 1], [0, 1, 1]])
    >>> conformal_risk_control(cal, alpha=0.5).threshold
    0.6
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    alpha = check_unit_interval(alpha, "alpha")
    check_choice(method, "method", ("threshold", "topk"))
    n = lists.n_queries
    bound = (alpha * (n + 1) - 1.0) / n  # R_hat <= bound  <=>  (n R_hat + 1) / (n + 1) <= alpha
    rel, w = miss_weights(lists)
    k: int | None = None
    threshold: float | None = None
    if method == "threshold":
        s = lists.scores[rel]
        uniq, inverse = np.unique(s, return_inverse=True)
        group = np.bincount(inverse, weights=w, minlength=uniq.size)
        # risk[j]: the miss rate with threshold uniq[j] (j < G), or above every relevant score (j = G)
        risk = np.concatenate(([0.0], np.cumsum(group)))
        if bound < 0:
            threshold, r_hat = -np.inf, 0.0
        else:
            j = int(np.searchsorted(risk, bound + _EPS, side="right")) - 1
            threshold = float(uniq[j]) if j < uniq.size else np.inf
            r_hat = float(risk[j])
    else:
        lengths = np.diff(lists.offsets)
        width = int(lengths.max())
        ranks = list_positions(lists.scores, lists.offsets)[rel]
        missed_at = np.bincount(ranks, weights=w, minlength=width)  # rank r is missed when k <= r
        # risk[k] for k = 0..width: the weight of ranks >= k
        risk = np.concatenate((np.cumsum(missed_at[::-1])[::-1], [0.0]))
        if bound < 0:
            k, r_hat = width, 0.0
        else:
            k = int(np.flatnonzero(risk <= bound + _EPS)[0])
            r_hat = float(risk[k])
    what = "its candidates scoring >= the threshold" if method == "threshold" else f"its top {k} candidates"
    guarantee = (
        f"E[miss rate] = E[1 - recall of the set] <= {alpha:g} for a new query exchangeable with the {n} "
        f"calibration queries, the set being {what} (conformal risk control; marginal, finite-sample)"
    )
    if bound < 0:
        guarantee += f"; with n = {n} < {1 / alpha - 1:g} only the whole list is certified"
    return ConformalThreshold(
        risk="miss", method=method, alpha=alpha, delta=None, threshold=threshold, k=k, n_calibration=n,
        calibration_risk=r_hat, feasible=True, guarantee=guarantee,
    )
