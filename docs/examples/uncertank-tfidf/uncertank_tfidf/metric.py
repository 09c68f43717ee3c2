"""Precision at k, registered as a :class:`uncertank.metrics.Metric` with its report metadata.

P@k of a query is the number of relevant candidates among its ``k``
highest-scored, divided by ``k`` (trec_eval's ``P_k``: a list shorter than
``k`` still divides by ``k``). Ties are broken as every uncertank metric
breaks them: by descending score, then ascending position in the input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from uncertank import Predictions, QuerySet, RankedLists
from uncertank.metrics import Metric

__all__ = ["PRECISION_AT_K", "precision_at_k"]


def _as_ranked(scores: Any, labels: Any) -> RankedLists:
    """Accept what a registered metric is given, through uncertank's public constructors."""
    if isinstance(scores, RankedLists):
        if labels is not None:
            raise ValueError("labels must be None when scores is a RankedLists (it carries its labels)")
        return scores
    if labels is None:
        raise ValueError(f"labels are required when scores is a {type(scores).__name__}")
    if isinstance(scores, Predictions):
        return scores.ranked(labels)
    if isinstance(labels, QuerySet):
        return labels.ranked(np.asarray(scores, dtype=np.float64))
    return RankedLists.from_dense(scores, labels)


def precision_at_k(
    scores: Any, labels: Any = None, *, k: int = 1, per_query: bool = False
) -> float | NDArray[np.float64]:
    """Mean precision at ``k`` over queries (trec_eval's ``P_k``).

    Parameters
    ----------
    scores : RankedLists, Predictions or ndarray of shape (n_queries, n_candidates)
        The scored lists (with ``labels`` None for a RankedLists).
    labels : ndarray or QuerySet, optional
        Labels of shape (n_pairs,) for Predictions, or (n_queries,
        n_candidates) for dense scores, or a labelled QuerySet.
    k : int
        The cutoff, >= 1.
    per_query : bool
        Return the value of every query, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> precision_at_k([[0.9, 0.8, 0.1], [0.2, 0.5, 0.4]], [[1, 0, 1], [1, 0, 0]], k=2)
    0.25
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1; got {k!r}")
    ranked = _as_ranked(scores, labels)
    qidx = ranked.query_index
    order = np.lexsort((np.arange(ranked.n_pairs), -ranked.scores, qidx))
    rank = np.arange(ranked.n_pairs) - ranked.offsets[qidx[order]]
    hits = (rank < k) & (ranked.labels[order] > 0)
    values: NDArray[np.float64] = np.bincount(qidx[order], weights=hits, minlength=ranked.n_queries) / k
    return values if per_query else float(values.mean())


#: The registry entry: a ranking metric, higher is better, labelled ``P@{k}``, k = 1 by default.
PRECISION_AT_K = Metric(
    precision_at_k, name="precision_at_k", kind="ranking", needs_probabilities=False,
    higher_is_better=True, label="P@{k}", options={"k": 1},
)
