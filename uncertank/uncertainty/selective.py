"""Selective prediction: answer only the queries whose top candidate is most certain.

A ranker that can say "I am not sure" lets a system abstain (hand the query
to a person, ask a clarifying question) instead of returning a wrong answer.
Order the queries by a certainty score, answer the top fraction (the
*coverage*) and measure the error rate among the answered ones (the *risk*):
the risk-coverage curve (El-Yaniv & Wiener, JMLR 2010; Geifman & El-Yaniv,
NeurIPS 2017). Its area (AURC, lower is better) summarises how well the
certainty ranks the queries; an oracle that abstains on exactly the wrong
answers first gives the lowest possible area for the ranker's errors.

Here the loss of a query is 1 when its top-ranked candidate is not relevant
(1 - R@1), and the certainty of a query is one of:

- ``"probability"``: the mean P(relevant) of its top candidate;
- ``"margin"``: the top candidate's mean minus the runner-up's;
- ``"std"``: minus the predictive standard deviation of the top candidate
  (stochastic rankers only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import PredictiveSamples, RankedLists
from uncertank.validation import as_float_array, check_instance

__all__ = ["RiskCoverage", "query_certainty", "risk_coverage_curve", "top1_loss"]

Certainty = Literal["probability", "margin", "std"]
_CERTAINTIES = ("probability", "margin", "std")


@dataclass(frozen=True)
class RiskCoverage:
    """A risk-coverage curve.

    Attributes
    ----------
    coverage : ndarray of shape (n_queries,)
        ``(i + 1) / n`` for the ``i + 1`` most certain queries.
    risk : ndarray of shape (n_queries,)
        Mean loss over those queries.
    aurc : float
        Area under the curve: the mean of ``risk`` (each coverage step has
        width ``1 / n``).
    oracle_aurc : float
        The area when the queries are ordered by their loss (the best any
        certainty could do with these answers).
    """

    coverage: NDArray[np.float64]
    risk: NDArray[np.float64]
    aurc: float
    oracle_aurc: float

    @property
    def excess_aurc(self) -> float:
        """``aurc - oracle_aurc``: what the certainty loses against the oracle."""
        return self.aurc - self.oracle_aurc


def _curve(certainty: NDArray[np.float64], loss: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    order = np.argsort(-certainty, kind="stable")
    n = loss.size
    risk = np.cumsum(loss[order]) / np.arange(1, n + 1)
    return risk, float(risk.mean())


def risk_coverage_curve(certainty: ArrayLike, loss: ArrayLike) -> RiskCoverage:
    """The risk-coverage curve of per-query ``loss`` ordered by ``certainty``.

    Parameters
    ----------
    certainty : array-like of shape (n_queries,)
        Higher means more certain; ties keep the input order (a stable sort).
    loss : array-like of shape (n_queries,)
        Per-query loss, e.g. :func:`top1_loss`.

    Returns
    -------
    RiskCoverage

    Examples
    --------
    >>> rc = risk_coverage_curve([0.9, 0.2, 0.6], [0, 1, 0])
    >>> rc.risk.tolist()
    [0.0, 0.0, 0.3333333333333333]
    >>> round(rc.aurc, 4), round(rc.oracle_aurc, 4)
    (0.1111, 0.1111)
    """
    c = as_float_array(certainty, "certainty")
    ell = as_float_array(loss, "loss")
    if c.ndim != 1 or ell.ndim != 1:
        raise ValueError(f"certainty and loss must be 1-D; got shapes {c.shape} and {ell.shape}")
    if c.shape != ell.shape:
        raise ValueError(f"certainty and loss must have the same length; got {c.size} and {ell.size}")
    if c.size == 0:
        raise ValueError("certainty must hold at least one query; got none")
    if not np.isfinite(c).all():
        raise ValueError(f"certainty must be finite; got {int((~np.isfinite(c)).sum())} non-finite values")
    if not np.isfinite(ell).all():
        raise ValueError(f"loss must be finite; got {int((~np.isfinite(ell)).sum())} non-finite values")
    risk, aurc = _curve(c, ell)
    _, oracle = _curve(-ell, ell)
    coverage = np.arange(1, c.size + 1, dtype=np.float64) / c.size
    return RiskCoverage(coverage=coverage, risk=risk, aurc=aurc, oracle_aurc=oracle)


def _top(ranked: RankedLists) -> NDArray[np.int64]:
    """Flat index of each query's top candidate (ties to the earlier position)."""
    scores, offsets = ranked.scores, ranked.offsets
    n_q = offsets.size - 1
    lengths = np.diff(offsets)
    if (lengths == 0).any():
        raise ValueError("every query must have at least one candidate; some lists are empty")
    qid = np.repeat(np.arange(n_q), lengths)
    # Sort by (query, -score, position): the first entry of each query is its top candidate.
    order = np.lexsort((np.arange(scores.size), -scores, qid))
    return np.asarray(order[offsets[:-1]], dtype=np.int64)


def top1_loss(ranked: RankedLists) -> NDArray[np.float64]:
    """1 where a query's top-ranked candidate is not relevant, else 0; shape (n_queries,).

    Ties break as in every ranking metric: the earlier position wins.
    """
    check_instance(ranked, "ranked", RankedLists, "a RankedLists (scores, labels, offsets)")
    return (ranked.labels[_top(ranked)] <= 0).astype(np.float64)


def query_certainty(
    ranked: RankedLists, *, certainty: Certainty = "probability", samples: PredictiveSamples | None = None
) -> NDArray[np.float64]:
    """A per-query certainty score, shape (n_queries,); higher means answer first.

    Parameters
    ----------
    ranked : RankedLists
        Mean scores per pair.
    certainty : {"probability", "margin", "std"}
        See the module docstring.
    samples : PredictiveSamples, optional
        Needed for ``"std"``; must have the same pairs as ``ranked``.
    """
    check_instance(ranked, "ranked", RankedLists, "a RankedLists (scores, labels, offsets)")
    if not isinstance(certainty, str) or certainty not in _CERTAINTIES:
        raise ValueError(f"certainty must be one of {', '.join(_CERTAINTIES)}; got {certainty!r}")
    top = _top(ranked)
    if certainty == "probability":
        return np.asarray(ranked.scores[top], dtype=np.float64)
    if certainty == "margin":
        lengths = np.diff(ranked.offsets)
        if (lengths < 2).any():
            raise ValueError("certainty='margin' needs at least two candidates per query")
        s = ranked.scores.copy()
        s[top] = -np.inf
        second = np.maximum.reduceat(s, ranked.offsets[:-1])
        return np.asarray(ranked.scores[top] - second, dtype=np.float64)
    if samples is None:
        raise ValueError("certainty='std' needs samples (a stochastic ranker's PredictiveSamples); got None")
    if samples.n_pairs != ranked.scores.size:
        raise ValueError(f"samples must cover the same {ranked.scores.size} pairs as ranked; got {samples.n_pairs}")
    return -np.sqrt(np.asarray(samples.var(), dtype=np.float64)[top])
