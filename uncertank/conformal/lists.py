"""What every conformal procedure reads off flat scored lists, vectorised over the CSR ``offsets``.

No Python loop runs over queries: each function is a few array operations
on the flat ``scores`` (and ``labels``) of shape (n_pairs,) and the
``offsets`` of shape (n_queries + 1,). Ranks follow the tie rule of every
ranking metric of uncertank: a stable sort on descending score, equal
scores in input order (the earlier candidate ranks higher).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import query_index
from uncertank.validation import as_float_array, as_label_array, check_choice, check_offsets, check_positive_int

__all__ = [
    "best_relevant",
    "best_relevant_rank",
    "list_positions",
    "mass_above",
    "query_max",
    "ranked_order",
    "top_candidates",
    "top_k_mask",
]


def _arrays(values: ArrayLike, offsets: ArrayLike, name: str = "scores", *,
            finite: bool = True) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``values`` as 1-D float64 (finite unless ``finite=False``) and ``offsets`` checked against their length."""
    if finite:
        v = as_float_array(values, name)
    else:
        v = np.asarray(values)
        if v.dtype.kind not in "biuf" or v.ndim != 1 or v.size == 0 or np.isnan(v.astype(np.float64)).any():
            raise ValueError(f"{name} must be a non-empty 1-D array of numbers (no NaN); "
                             f"got {type(values).__name__} of shape {np.shape(values)}")
        v = v.astype(np.float64)
    return v, check_offsets(offsets, v.size)


def _labels(labels: ArrayLike, n: int) -> NDArray[np.int64]:
    lab = as_label_array(labels, "labels")
    if lab.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), one per score; got {lab.shape}")
    return lab


def _dense_width(offsets: NDArray[np.int64]) -> int | None:
    """The common list length when every list has it, else None."""
    lengths = np.diff(offsets)
    width = int(lengths[0])
    return width if bool((lengths == width).all()) else None


def query_max(values: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """The largest of ``values`` within each query, shape (n_queries,)."""
    values, offsets = _arrays(values, offsets, "values", finite=False)
    width = _dense_width(offsets)
    if width is not None:
        return values.reshape(-1, width).max(axis=1)  # type: ignore[no-any-return]
    return np.maximum.reduceat(values, offsets[:-1])


def best_relevant(scores: NDArray[np.float64], labels: NDArray[np.int64],
                  offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per query, the highest score of a relevant candidate (label > 0); ``-inf`` when none is relevant.

    The set ``{candidates scoring >= t}`` holds a relevant candidate exactly
    when this is ``>= t``: it is the conformity score of a query for
    split conformal candidate sets.
    """
    scores, offsets = _arrays(scores, offsets)
    labels = _labels(labels, scores.size)
    return query_max(np.where(labels > 0, scores, -np.inf), offsets)


def ranked_order(scores: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """The flat positions of the pairs, query by query, each query's in ranked order (tie rule).

    One stable ``argsort`` along the rows for equal-length lists, one
    ``lexsort`` by (query, -score) otherwise; shape (n_pairs,).
    """
    scores, offsets = _arrays(scores, offsets, finite=False)
    width = _dense_width(offsets)
    if width is not None:
        order = np.argsort(-scores.reshape(-1, width), axis=1, kind="stable")
        order += offsets[:-1, None]
        return order.reshape(-1)
    return np.lexsort((-scores, query_index(offsets))).astype(np.int64)  # stable: ties keep input order


def list_positions(scores: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """0-based position of every pair in its query's list ranked by score, ties in input order; shape (n_pairs,).

    :func:`uncertank.metrics.ranks.pair_ranks` on flat arrays, without
    building :class:`~uncertank.metrics.Lists` (the conformal stage calls it
    per calibration draw); a test holds the two equal.
    """
    scores, offsets = _arrays(scores, offsets, finite=False)
    order = ranked_order(scores, offsets)
    ranks = np.empty(scores.size, dtype=np.int64)
    ranks[order] = np.arange(scores.size) - np.repeat(offsets[:-1], np.diff(offsets))
    return ranks


def best_relevant_rank(scores: NDArray[np.float64], labels: NDArray[np.int64],
                       offsets: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per query, the 0-based rank of its best-ranked relevant candidate; ``inf`` when none is relevant.

    For equal-length lists no sort is needed: the rank is the number of
    candidates that beat the best relevant one (a higher score, or the same
    score at an earlier position), counted with comparisons along the rows.
    """
    scores, offsets = _arrays(scores, offsets)
    labels = _labels(labels, scores.size)
    rel = labels > 0
    width = _dense_width(offsets)
    if width is None:
        ranks = np.where(rel, list_positions(scores, offsets), np.iinfo(np.int64).max)
        out: NDArray[np.float64] = np.minimum.reduceat(ranks, offsets[:-1]).astype(np.float64)
        out[out == np.iinfo(np.int64).max] = np.inf
        return out
    s2, r2 = scores.reshape(-1, width), rel.reshape(-1, width)
    best = np.where(r2, s2, -np.inf).max(axis=1)[:, None]
    tied = s2 == best
    first = np.argmax(r2 & tied, axis=1)[:, None]  # position of the best relevant candidate
    beat = s2 > best
    beat |= tied & (np.arange(width) < first)
    out = np.count_nonzero(beat, axis=1).astype(np.float64)
    out[~r2.any(axis=1)] = np.inf
    return out


def top_k_mask(scores: NDArray[np.float64], offsets: NDArray[np.int64], k: int) -> NDArray[np.bool_]:
    """True for the ``k`` best-ranked candidates of every query (the whole list when shorter), tie rule.

    For equal-length lists: one stable ``argsort`` along the rows, and the
    first ``k`` columns of the order set (no inverse permutation).
    """
    scores, offsets = _arrays(scores, offsets)
    k = check_positive_int(k, "k", minimum=0)
    width = _dense_width(offsets)
    if k <= 0:
        return np.zeros(scores.size, dtype=bool)
    if width is None or k >= width:
        return list_positions(scores, offsets) < k if width is None else np.ones(scores.size, dtype=bool)
    order = np.argsort(-scores.reshape(-1, width), axis=1, kind="stable")
    mask = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(mask, order[:, :k], True, axis=1)
    return mask.reshape(-1)


def top_candidates(scores: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """Flat index of each query's top candidate (ties to the earlier position), shape (n_queries,)."""
    scores, offsets = _arrays(scores, offsets)
    width = _dense_width(offsets)
    if width is not None:
        top: NDArray[np.int64] = (np.argmax(scores.reshape(-1, width), axis=1) + offsets[:-1]).astype(np.int64)
        return top
    best = np.repeat(query_max(scores, offsets), np.diff(offsets))
    pos = np.where(scores == best, np.arange(scores.size), scores.size)
    return np.minimum.reduceat(pos, offsets[:-1]).astype(np.int64)


Mass = Literal["sum", "softmax"]


def mass_above(scores: NDArray[np.float64], offsets: NDArray[np.int64], mass: Mass) -> NDArray[np.float64]:
    """Per pair, the normalised score mass of the candidates of its query ranked above it.

    The scores of a query are normalised to sum to 1 (``"sum"``: divided
    by their sum, for scores >= 0, uniform when all are 0; ``"softmax"``:
    ``exp(s - max) / sum``), then summed down the ranking (tie rule) over
    the candidates ranked strictly above. This is the score of adaptive
    prediction sets (Romano, Sesia & Candès, NeurIPS 2020, without their
    randomisation): a set keeps the candidates whose mass above is ``<=``
    its calibrated threshold, so the top candidate (mass above 0) is always
    kept.

    Returns
    -------
    ndarray of shape (n_pairs,), in input order
    """
    scores, offsets = _arrays(scores, offsets)
    check_choice(mass, "mass", ("sum", "softmax"))
    q = query_index(offsets)
    lengths = np.diff(offsets)
    if mass == "softmax":
        w = np.exp(scores - np.repeat(query_max(scores, offsets), lengths))
    else:
        if scores.size and float(scores.min()) < 0.0:
            raise ValueError(f"mass='sum' needs scores >= 0; got {float(scores.min())!r} (use mass='softmax')")
        w = scores.astype(np.float64, copy=True)
    total = np.bincount(q, weights=w, minlength=lengths.size)
    zero = total <= 0.0
    if zero.any():  # every score 0: uniform over the list
        w = np.where(np.repeat(zero, lengths), 1.0, w)
        total = np.where(zero, lengths.astype(np.float64), total)
    w = w / np.repeat(total, lengths)
    order = ranked_order(scores, offsets)
    ws = w[order]
    width = _dense_width(offsets)
    out = np.empty(scores.size, dtype=np.float64)
    if width is not None:  # per-row sums: no drift across queries
        w2 = ws.reshape(-1, width)
        out[order] = (np.cumsum(w2, axis=1) - w2).reshape(-1)
        return out
    cum_sorted = np.cumsum(ws)
    base = np.repeat(cum_sorted[offsets[1:] - 1] - np.bincount(q, weights=ws, minlength=lengths.size), lengths)
    out[order] = cum_sorted - ws - base  # the mass of the queries before, and the pair's own, subtracted
    return out
