"""What a calibration gives and what applying it gives: a threshold to ship, candidate sets, answers.

- :class:`ConformalThreshold`: the calibrated threshold (or ``k``) with the
  guarantee it carries, the conformity score it applies to and the size of
  the calibration set; it is all a user needs to ship.
- :class:`CandidateSets`: the candidate set of every query, as a flat mask
  over its pairs with CSR ``offsets``; with labels, it measures coverage,
  miss rate and false discovery proportion per query.
- :class:`Answers`: which queries an abstaining ranker answers (with its top
  candidate); with labels, the error rate among the answered ones.
- :class:`WeightedSets`: the sets of weighted split conformal, with the
  per-query thresholds that covariate shift calls for.

The functions that make them live in the modules above this one
(:mod:`~uncertank.conformal.sets`, :mod:`~uncertank.conformal.risk_control`,
:mod:`~uncertank.conformal.fdr`, :mod:`~uncertank.conformal.abstention`,
:mod:`~uncertank.conformal.weighted`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import query_index
from uncertank.validation import as_label_array

__all__ = ["Answers", "CandidateSets", "ConformalThreshold", "WeightedSets"]

Risk = Literal["coverage", "miss", "fdr", "abstain"]
Method = Literal["threshold", "topk", "aps"]


@dataclass(frozen=True)
class ConformalThreshold:
    """A calibrated threshold (or ``k``) and the guarantee it carries.

    Attributes
    ----------
    risk : {"coverage", "miss", "fdr", "abstain"}
        What is controlled: ``"coverage"``, a relevant candidate in the set
        (split conformal); ``"miss"``, the expected miss rate 1 - recall of
        the set (conformal risk control); ``"fdr"``, the false discovery
        proportion of the set (Learn-then-Test); ``"abstain"``, the error
        rate among the queries answered (Learn-then-Test).
    method : {"threshold", "topk", "aps"}
        How a set is built: the candidates whose conformity score is
        ``>= threshold``; the ``k`` best-ranked candidates; or (``"aps"``)
        the candidates with at most ``threshold`` of the normalised score
        mass ranked above them.
    alpha : float
        The risk level.
    delta : float or None
        The probability that the guarantee fails (Learn-then-Test); None for
        a guarantee in expectation over the calibration draw.
    threshold : float or None
        The calibrated threshold (a score; a mass for ``"aps"``); None for
        ``"topk"``. ``-inf`` keeps every candidate, ``+inf`` none (and, for
        ``"abstain"``, answers no query).
    k : int or None
        The calibrated number of candidates for ``"topk"``; None otherwise.
        ``k`` larger than a list keeps the whole list.
    n_calibration : int
        Calibration queries.
    calibration_risk : float
        The risk on the calibration queries at this threshold (the
        miscoverage, ``1 -`` coverage, for ``"coverage"``).
    feasible : bool
        False when no threshold meets the guarantee with this calibration
        set; the threshold is then the safe extreme (every candidate for
        ``"coverage"`` and ``"miss"``, no candidate or no answer for
        ``"fdr"`` and ``"abstain"``) and :attr:`guarantee` says why.
    score : str
        The conformity score: ``"score"``, ``"mean"``, ``"quantile"`` or
        ``"lower"``.
    quantile : float
        The quantile of the samples for ``score="quantile"``.
    k_std : float
        The ``k`` of ``score="lower"`` (mean minus ``k_std`` standard
        deviations).
    mass : {"sum", "softmax"} or None
        How ``"aps"`` normalises scores within a query; None otherwise.
    guarantee : str
        The guarantee in one sentence, with what it assumes.
    """

    risk: Risk
    method: Method
    alpha: float
    delta: float | None
    threshold: float | None
    k: int | None
    n_calibration: int
    calibration_risk: float
    feasible: bool
    guarantee: str
    score: str = "score"
    quantile: float = 0.1
    k_std: float = 1.0
    mass: str | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (infinite thresholds as the strings ``"inf"`` and ``"-inf"``)."""
        out: dict[str, object] = {
            "risk": self.risk, "method": self.method, "alpha": self.alpha, "delta": self.delta,
            "threshold": _json_float(self.threshold), "k": self.k, "n_calibration": self.n_calibration,
            "calibration_risk": self.calibration_risk, "feasible": self.feasible, "score": self.score,
            "guarantee": self.guarantee,
        }
        if self.score == "quantile":
            out["quantile"] = self.quantile
        if self.score == "lower":
            out["k_std"] = self.k_std
        if self.mass is not None:
            out["mass"] = self.mass
        return out


def _json_float(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"


def _labels(labels: ArrayLike, n_pairs: int) -> NDArray[np.bool_]:
    lab = as_label_array(labels, "labels")
    if lab.shape != (n_pairs,):
        raise ValueError(f"labels must have shape ({n_pairs},), one per pair; got {lab.shape}")
    return lab > 0


@dataclass(frozen=True, eq=False)
class CandidateSets:
    """The candidate set of every query.

    Attributes
    ----------
    mask : ndarray of shape (n_pairs,)
        True for a candidate in its query's set, in the input order of the
        pairs.
    offsets : ndarray of shape (n_queries + 1,)
        CSR offsets of the lists.
    """

    mask: NDArray[np.bool_]
    offsets: NDArray[np.int64]

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.offsets.size - 1)

    @property
    def sizes(self) -> NDArray[np.int64]:
        """Candidates in each set, shape (n_queries,)."""
        return _per_query(self.mask, self.offsets).astype(np.int64)

    def covered(self, labels: ArrayLike) -> NDArray[np.bool_]:
        """Whether each set holds a relevant candidate (label > 0), shape (n_queries,)."""
        rel = _labels(labels, self.mask.size)
        return _per_query(self.mask & rel, self.offsets) > 0

    def miss_rate(self, labels: ArrayLike) -> NDArray[np.float64]:
        """Per query, the share of its relevant candidates left out of its set (0 without any).

        ``1 - recall`` of the set, shape (n_queries,).
        """
        rel = _labels(labels, self.mask.size)
        n_rel = _per_query(rel, self.offsets)
        missed = _per_query(rel & ~self.mask, self.offsets)
        return np.divide(missed, n_rel, out=np.zeros_like(missed), where=n_rel > 0)

    def false_discovery(self, labels: ArrayLike) -> NDArray[np.float64]:
        """Per query, the share of its set that is not relevant (0 for an empty set), shape (n_queries,)."""
        rel = _labels(labels, self.mask.size)
        size = _per_query(self.mask, self.offsets)
        wrong = _per_query(self.mask & ~rel, self.offsets)
        return np.divide(wrong, size, out=np.zeros_like(wrong), where=size > 0)


def _per_query(flags: NDArray[np.bool_], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Sum of ``flags`` within each query, as float64."""
    return np.bincount(query_index(offsets), weights=flags, minlength=offsets.size - 1).astype(np.float64, copy=False)


@dataclass(frozen=True, eq=False)
class Answers:
    """Which queries an abstaining ranker answers, and with which candidate.

    Attributes
    ----------
    answered : ndarray of shape (n_queries,)
        True where the query is answered with its top candidate.
    top : ndarray of shape (n_queries,)
        Flat index of each query's top candidate (ties to the earlier
        position, as every ranking metric breaks them).
    offsets : ndarray of shape (n_queries + 1,)
        CSR offsets of the lists.
    """

    answered: NDArray[np.bool_]
    top: NDArray[np.int64]
    offsets: NDArray[np.int64]

    @property
    def answer_rate(self) -> float:
        """The share of queries answered."""
        return float(self.answered.mean())

    def error_rate(self, labels: ArrayLike) -> float:
        """The share of answered queries whose top candidate is not relevant (0 when none is answered)."""
        wrong = ~_labels(labels, int(self.offsets[-1]))[self.top[self.answered]]
        return float(wrong.mean()) if wrong.size else 0.0


@dataclass(frozen=True, eq=False)
class WeightedSets:
    """Weighted split conformal sets (Tibshirani et al., NeurIPS 2019).

    Attributes
    ----------
    sets : CandidateSets
        The candidates scoring ``>=`` their query's threshold.
    thresholds : ndarray of shape (n_queries,)
        Per test query, the weighted conformal threshold (``-inf``: every
        candidate, when the query's own weight is too large for the
        calibration set to bound its risk).
    alpha : float
        The risk level.
    n_calibration : int
        Calibration queries.
    effective_size : float
        The effective calibration size ``(sum w)^2 / sum w^2`` of the
        calibration weights: far below ``n_calibration`` means few
        calibration queries look like the test queries, and wide sets.
    """

    sets: CandidateSets
    thresholds: NDArray[np.float64]
    alpha: float
    n_calibration: int
    effective_size: float
