"""Where candidates rank under the tie rule: the ranks every ranking metric reads.

A stable sort on descending score, equal scores kept in input order (the
earlier candidate ranks higher): :func:`relevant_ranks` gives, for every
relevant candidate, its rank, the number of relevant candidates above it
and (optionally) its rank in the ideal ordering; :func:`pair_ranks` the rank
of every pair. Public inside the package: :mod:`uncertank.metrics.ranking`,
:mod:`uncertank.metrics.calibration` (ECE by rank) and the streaming
accumulators rank through them.

No Python loop runs over queries. For dense (or slightly ragged, padded)
lists, the rank of each relevant candidate is the number of candidates that
beat it, counted with vectorised comparisons when relevant candidates are
few, or read off one ``argsort`` along the candidate axis otherwise; very
ragged lists use one ``lexsort`` over the flat arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from uncertank.metrics._inputs import LabelArray, Lists
from uncertank.validation import check_bool, check_choice, check_instance

__all__ = ["RelevantRanks", "pair_ranks", "relevant_ranks"]

#: Work arrays of the comparison path hold at most this many cells per chunk.
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True, eq=False)
class RelevantRanks:
    """Where the relevant candidates land; one entry per relevant candidate.

    Entries are ordered by query, then by input position.

    Attributes
    ----------
    query : (n_relevant,) query index.
    rank : (n_relevant,) 0-based rank under the tie rule.
    above : (n_relevant,) number of relevant candidates ranked above it.
    gain : (n_relevant,) its label.
    ideal : (n_relevant,) its 0-based rank in the ideal ordering (labels
        descending, ties by input position), or None when not asked for.
    n_relevant : (n_queries,) relevant candidates per query.
    lengths : (n_queries,) candidates per query.
    """

    query: NDArray[np.int64]
    rank: NDArray[np.int64]
    above: NDArray[np.int64]
    gain: LabelArray
    ideal: NDArray[np.int64] | None
    n_relevant: NDArray[np.int64]
    lengths: NDArray[np.int64]

    @property
    def n_queries(self) -> int:
        """The number of queries."""
        return int(self.lengths.size)

    def per_query(self, weights: NDArray[np.floating], mask: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
        """Sum ``weights`` (one per relevant candidate) within each query."""
        q = self.query if mask is None else self.query[mask]
        w = weights if mask is None else weights[mask]
        return np.bincount(q, weights=w, minlength=self.n_queries).astype(np.float64, copy=False)


def _choose_method(lists: Lists, n_relevant: int) -> str:
    if lists.s2 is None:
        return "lexsort"
    width = lists.s2.shape[1]
    # Comparisons cost ~n_relevant * width cells, the sort ~(3 + log2(width) / 2) passes
    # over the block (measured on 1e7-cell blocks, widths 10 to 5000).
    budget = lists.s2.size * (3.0 + 0.5 * math.log2(max(width, 2)))
    return "compare" if n_relevant * width <= budget else "sort"


def relevant_ranks(lists: Lists, *, ideal: bool = False, method: str | None = None) -> RelevantRanks:
    """Rank, relevant-above count and (optionally) ideal rank of each relevant candidate."""
    check_instance(lists, "lists", Lists, "a Lists (uncertank.metrics._inputs)")
    ideal = check_bool(ideal, "ideal")
    if method is not None:
        check_choice(method, "method", ("lexsort", "compare", "sort"))
    if method != "lexsort":
        lists = lists.as_block()
    if lists.s2 is not None:
        assert lists.y2 is not None
        rel2 = lists.y2 > 0
        q, j = np.nonzero(rel2)
        method = method or _choose_method(lists, q.size)
        if method == "compare":
            rank, above, irank = _ranks_compare(lists.s2, lists.y2, rel2, q, j, ideal)
        elif method == "sort":
            rank, above, irank = _ranks_sort(lists.s2, lists.y2, rel2, q, j, ideal)
        else:
            return relevant_ranks(lists.as_flat(), ideal=ideal, method="lexsort")
        gain = lists.y2[q, j]
    else:
        rank, above, irank, q, gain = _ranks_lexsort(lists, ideal)
    q = q.astype(np.int64, copy=False)
    n_rel = np.bincount(q, minlength=lists.n_queries)
    return RelevantRanks(q, rank, above, gain, irank, n_rel, lists.lengths)


def _ranks_compare(
    s2: NDArray[np.float64], y2: LabelArray, rel2: NDArray[np.bool_],
    q: NDArray[np.intp], j: NDArray[np.intp], ideal: bool,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64] | None]:
    """Count, for each relevant candidate, the candidates that beat it.

    Candidate i beats j when s_i > s_j, or s_i == s_j and i comes first.
    """
    n_rel, width = q.size, s2.shape[1]
    rank = np.empty(n_rel, dtype=np.int64)
    above = np.empty(n_rel, dtype=np.int64)
    irank = np.empty(n_rel, dtype=np.int64) if ideal else None
    col = np.arange(width)
    step = max(1, _CHUNK_CELLS // width)
    for a in range(0, n_rel, step):  # chunks of relevant candidates, bounded memory
        qq, jj = q[a:a + step], j[a:a + step]
        earlier = col < jj[:, None]
        rows = s2[qq]
        sj = s2[qq, jj][:, None]
        beat = rows > sj
        beat |= (rows == sj) & earlier
        rank[a:a + step] = np.count_nonzero(beat, axis=1)
        beat &= rel2[qq]
        above[a:a + step] = np.count_nonzero(beat, axis=1)
        if irank is not None:
            g = y2[qq]
            gj = y2[qq, jj][:, None]
            better = g > gj
            better |= (g == gj) & earlier
            irank[a:a + step] = np.count_nonzero(better, axis=1)
    return rank, above, irank


def _inverse_rows(order: NDArray[np.intp]) -> NDArray[np.intp]:
    """Row-wise inverse permutation: ``inv[r, order[r, i]] = i``."""
    inv = np.empty_like(order)
    np.put_along_axis(inv, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
    return inv


def _ranks_sort(
    s2: NDArray[np.float64], y2: LabelArray, rel2: NDArray[np.bool_],
    q: NDArray[np.intp], j: NDArray[np.intp], ideal: bool,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64] | None]:
    """Ranks from one stable argsort along the candidate axis."""
    order = np.argsort(-s2, axis=1, kind="stable")
    rank = _inverse_rows(order)[q, j].astype(np.int64, copy=False)
    cum = np.cumsum(np.take_along_axis(rel2, order, axis=1), axis=1)
    above = (cum[q, rank] - 1).astype(np.int64, copy=False)
    irank = None
    if ideal:
        iorder = np.argsort(-y2.astype(np.int64, copy=False), axis=1, kind="stable")
        irank = _inverse_rows(iorder)[q, j].astype(np.int64, copy=False)
    return rank, above, irank


def _flat_rank(
    key: NDArray[np.float64] | NDArray[np.int64], qidx: NDArray[np.int64], starts: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
    """Rank of each flat item within its query by descending ``key``, ties by position."""
    order = np.lexsort((-key, qidx))
    rank = np.empty(key.size, dtype=np.int64)
    rank[order] = np.arange(key.size) - starts[qidx]
    return rank, order


def _ranks_lexsort(
    lists: Lists, ideal: bool
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64] | None, NDArray[np.int64], LabelArray]:
    """Ranks from one lexsort by (query, -score, position) over the flat arrays."""
    s, y = lists.flat()
    assert lists.offsets is not None
    qidx = lists.query_index()
    starts = lists.offsets[:-1]
    rank, order = _flat_rank(s, qidx, starts)
    rel = y > 0
    rel_sorted = rel[order]
    cum = np.cumsum(rel_sorted)
    base: NDArray[np.int64] = cum[starts] - rel_sorted[starts]
    above_sorted = cum - 1 - base[qidx]
    above = np.empty(s.size, dtype=np.int64)
    above[order] = above_sorted
    idx = np.flatnonzero(rel)
    irank = None
    if ideal:
        irank = _flat_rank(y.astype(np.int64, copy=False), qidx, starts)[0][idx]
    return rank[idx], above[idx], irank, qidx[idx], y[idx]


def pair_ranks(lists: Lists) -> NDArray[np.int64]:
    """0-based rank of every pair under the tie rule, shape (n_pairs,), in input order."""
    check_instance(lists, "lists", Lists, "a Lists (uncertank.metrics._inputs)")
    lists = lists.as_block()
    if lists.s2 is not None:
        inv = _inverse_rows(np.argsort(-lists.s2, axis=1, kind="stable")).astype(np.int64, copy=False)
        return inv.reshape(-1) if lists.valid is None else inv[lists.valid]
    flat = lists.as_flat()
    assert flat.offsets is not None
    s, _ = flat.flat()
    return _flat_rank(s, flat.query_index(), flat.offsets[:-1])[0]
