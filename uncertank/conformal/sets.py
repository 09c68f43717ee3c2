"""Split conformal candidate sets: a relevant candidate in the set with probability ``>= 1 - alpha``.

Calibrate once on labelled calibration queries; for a new query
exchangeable with them, its set holds a relevant candidate with
probability at least ``1 - alpha`` (marginal over the calibration draw and
the new query, for any ``n``: a finite-sample guarantee), and, when
conformity scores do not tie, at most ``1 - alpha + 1 / (n + 1)``.

Three ways to build a set, each with its per-query conformity score ``c``
(higher: easier to cover) and threshold ``c_(k)``, ``k = floor(alpha (n + 1))``
(:mod:`~uncertank.conformal.levels`):

- ``"threshold"``: the candidates whose score is ``>= t``; ``c`` is the
  best score of a relevant candidate, ``t = c_(k)``. One number to ship.
- ``"topk"``: the ``k`` best-ranked candidates of every list; ``c`` is
  minus the number of candidates down to the best-ranked relevant one
  (ranks under the tie rule), ``k = -c_(k)``.
- ``"aps"``: adaptive sets (Romano, Sesia & Candès, NeurIPS 2020, not
  randomised), a top-k whose ``k`` adapts to each query: the candidates
  whose normalised score mass ranked above them is ``<= q`` (so never an
  empty set); ``c`` is minus that mass for the best-ranked relevant
  candidate, ``q = -c_(k)``. A query whose mass is spread over many
  candidates gets a larger set, a confident one a smaller set.

A query with no relevant candidate has ``c = -inf``: no set covers it. When
the threshold itself is ``-inf`` because too many calibration queries are
such, coverage ``1 - alpha`` cannot be reached and the result says so
(``feasible=False``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import Predictions, RankedLists
from uncertank.conformal.calibrated import CandidateSets, ConformalThreshold
from uncertank.conformal.levels import conformal_rank
from uncertank.conformal.lists import best_relevant, best_relevant_rank, mass_above, query_max, top_k_mask
from uncertank.validation import as_float_array, check_choice, check_instance, check_unit_interval

__all__ = [
    "METHODS",
    "candidate_sets",
    "conformal_quantile",
    "query_conformity",
    "resolve_mass",
    "sets_from_thresholds",
    "split_conformal",
]

#: The ways to build a candidate set.
METHODS: tuple[str, ...] = ("threshold", "topk", "aps")
_MASSES = ("auto", "sum", "softmax")


def conformal_quantile(conformity: ArrayLike, alpha: float) -> float:
    """The split conformal threshold: the ``floor(alpha (n + 1))``-th smallest conformity score.

    Parameters
    ----------
    conformity : array-like of shape (n,)
        Per calibration query, higher meaning easier to cover (``-inf``
        allowed: a query no set covers).
    alpha : float
        Miscoverage level in (0, 1).

    Returns
    -------
    float
        ``-inf`` when ``floor(alpha (n + 1)) = 0`` (too few queries for
        anything but the whole list).

    Examples
    --------
    >>> conformal_quantile([0.9, 0.1, 0.5, 0.7, 0.3, 0.8, 0.6, 0.2, 0.4, 1.0], 0.2)
    0.2
    """
    alpha = check_unit_interval(alpha, "alpha")
    c = as_float_array(conformity, "conformity", allow_infinite=True)  # -inf: a query without a relevant one
    k = conformal_rank(alpha, c.size)
    if k == 0:
        return -np.inf
    return float(np.partition(c, k - 1)[k - 1])


def resolve_mass(mass: str, scores: NDArray[np.float64]) -> Literal["sum", "softmax"]:
    """``"auto"`` as ``"sum"`` for scores in [0, 1] and ``"softmax"`` otherwise; other names checked."""
    check_choice(mass, "mass", _MASSES)
    if mass != "auto":
        return mass  # type: ignore[return-value]
    return "sum" if float(scores.min()) >= 0.0 and float(scores.max()) <= 1.0 else "softmax"


def query_conformity(lists: RankedLists, method: str = "threshold", *, mass: str = "sum") -> NDArray[np.float64]:
    """The conformity score of every calibration query for ``method``, shape (n_queries,).

    See the module notes; ``-inf`` for a query without a relevant candidate.
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    check_choice(method, "method", METHODS)
    s, y, off = lists.scores, lists.labels, lists.offsets
    if method == "threshold":
        return best_relevant(s, y, off)
    if method == "topk":
        return -(best_relevant_rank(s, y, off) + 1.0)
    above = np.where(y > 0, mass_above(s, off, mass), np.inf)  # type: ignore[arg-type]
    return -_query_min(above, off)


def _query_min(values: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    return -query_max(-values, offsets)


def split_conformal(
    lists: RankedLists, *, alpha: float = 0.1, method: Literal["threshold", "topk", "aps"] = "threshold",
    mass: Literal["auto", "sum", "softmax"] = "auto",
) -> ConformalThreshold:
    """Calibrate split conformal candidate sets on labelled conformity scores.

    Parameters
    ----------
    lists : RankedLists
        Conformity scores and labels of the calibration queries
        (:func:`~uncertank.conformal.scores.labelled_scores`).
    alpha : float
        Miscoverage level in (0, 1): sets cover with probability ``>= 1 - alpha``.
    method : {"threshold", "topk", "aps"}
        See the module notes.
    mass : {"auto", "sum", "softmax"}
        How ``"aps"`` normalises a query's scores (``"auto"``: ``"sum"`` for
        scores in [0, 1], ``"softmax"`` otherwise).

    Returns
    -------
    ConformalThreshold
        ``risk="coverage"``; ``calibration_risk`` is the miscoverage on the
        calibration queries.

    Examples
    --------
    >>> from uncertank import RankedLists
    >>> cal = RankedLists.from_dense([[0.9, 0.1], [0.3, 0.6], [0.8, 0.7], [0.2, 0.4]], [[1, 0], [0, 1], [0, 1], [1, 0]])
    >>> split_conformal(cal, alpha=0.2).threshold
    0.2
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    alpha = check_unit_interval(alpha, "alpha")
    check_choice(method, "method", METHODS)
    resolved = resolve_mass(mass, lists.scores) if method == "aps" else None
    c = query_conformity(lists, method, mass=resolved or "sum")
    n = c.size
    t = conformal_quantile(c, alpha)
    unanswerable = int(np.isneginf(c).sum())
    feasible = not (t == -np.inf and unanswerable > 0)
    miscoverage = float(np.mean(c < t)) if t > -np.inf else unanswerable / n
    k = None
    threshold: float | None = t
    if method == "topk":
        k = int(np.diff(lists.offsets).max()) if t == -np.inf else int(-t)
        threshold = None
    elif method == "aps":
        threshold = np.inf if t == -np.inf else -t
    what = {"threshold": "its candidates scoring >= the threshold", "topk": f"its top {k} candidates",
            "aps": "its candidates with at most the calibrated score mass ranked above them"}
    if feasible:
        guarantee = (
            f"P(a relevant candidate is in the set) >= {1 - alpha:g} for a new query exchangeable with the "
            f"{n} calibration queries, the set being {what[method]} (split conformal; marginal over "
            f"queries, finite-sample)"
        )
        if conformal_rank(alpha, n) == 0:
            guarantee += f"; with n = {n} < {1 / alpha - 1:g} the set is the whole list"
    else:
        guarantee = (
            f"no set reaches coverage {1 - alpha:g}: {unanswerable} of the {n} calibration queries have no "
            f"relevant candidate in their list, and no set can cover them; the whole list is kept"
        )
    return ConformalThreshold(
        risk="coverage", method=method, alpha=alpha, delta=None, threshold=threshold, k=k, n_calibration=n,
        calibration_risk=miscoverage, feasible=feasible, guarantee=guarantee, mass=resolved,
    )


def _scores_offsets(scores: object) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    if isinstance(scores, (Predictions, RankedLists)):
        return scores.scores, scores.offsets
    raise TypeError(
        "scores must be conformity scores as Predictions or RankedLists "
        f"(see uncertank.conformal.conformity_scores); got {type(scores).__name__}"
    )


def sets_from_thresholds(scores: Predictions | RankedLists, thresholds: ArrayLike | float) -> CandidateSets:
    """The candidates scoring ``>=`` their query's threshold.

    Parameters
    ----------
    scores : Predictions or RankedLists
        Conformity scores of the queries.
    thresholds : float or array-like of shape (n_queries,)
        One threshold for every query, or one per query.
    """
    s, off = _scores_offsets(scores)
    t = np.asarray(thresholds, dtype=np.float64)
    if t.ndim == 0:
        return CandidateSets(s >= t, off)
    if t.shape != (off.size - 1,):
        raise ValueError(f"thresholds must be one number or one per query ({off.size - 1}); got shape {t.shape}")
    if np.isnan(t).any():
        raise ValueError("thresholds must not hold NaN")
    return CandidateSets(s >= np.repeat(t, np.diff(off)), off)


def candidate_sets(scores: Predictions | RankedLists, calibrated: ConformalThreshold) -> CandidateSets:
    """The candidate set of every query under a calibrated threshold.

    Parameters
    ----------
    scores : Predictions or RankedLists
        Conformity scores of the (test) queries, computed as they were for
        calibration.
    calibrated : ConformalThreshold
        From :func:`split_conformal` or
        :func:`~uncertank.conformal.risk_control.conformal_risk_control`
        (or :func:`~uncertank.conformal.fdr.fdr_control`).

    Returns
    -------
    CandidateSets
    """
    if not isinstance(calibrated, ConformalThreshold):
        raise TypeError(f"calibrated must be a ConformalThreshold; got {type(calibrated).__name__}")
    if calibrated.risk == "abstain":
        raise ValueError("calibrated controls abstention, not sets; use uncertank.conformal.answer")
    s, off = _scores_offsets(scores)
    if calibrated.method == "topk":
        return CandidateSets(top_k_mask(s, off, int(calibrated.k or 0)), off)
    if calibrated.method == "aps":
        mass = calibrated.mass or "sum"
        return CandidateSets(mass_above(s, off, mass) <= float(calibrated.threshold), off)  # type: ignore[arg-type]
    if calibrated.threshold is None:
        raise ValueError(f"calibrated has no threshold for method {calibrated.method!r}")
    return sets_from_thresholds(scores, float(calibrated.threshold))
