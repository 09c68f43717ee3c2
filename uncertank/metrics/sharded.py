"""Sharded evaluation on Dask: the streaming accumulators mapped over partitions and merged.

:func:`evaluate_dask` takes a Dask DataFrame of scored pairs (one row per
pair: query id, score, label), for example from
``dask.dataframe.read_parquet`` over files on many machines, and evaluates
metrics (and any accumulator of :mod:`uncertank.metrics.streaming`, such as
the reliability curve) in one pass: every partition is reduced to its
accumulators, and adjacent partitions are merged in a tree, by Dask's own
scheduler (threads, processes, or a ``distributed`` cluster).

Queries across partitions
-------------------------
The rows of a query must be contiguous in the frame (sorted or grouped by
query id) but may straddle partitions: each partition evaluates its
interior queries and hands its first and last query's rows to the merge,
which joins the pieces of a query split at a boundary before evaluating it.
The result is therefore the same as on all pairs in memory whatever the
partitioning. Equal-mass bins (``strategy="quantile"``) first find their
edges exactly with a few more passes over the score column (see
:func:`~uncertank.metrics.quantiles.quantile_edges`). A query id that comes back after other queries (not
contiguous) is an error, within a partition or across partitions (each
partial result carries the set of its query ids, so memory grows with the
number of queries, not of rows); ``frame.shuffle(query)`` followed by sorting within partitions
(``map_partitions(lambda df: df.sort_values(query, kind="stable"))``)
makes any frame contiguous, at the cost of a shuffle and of the input
order of candidates that straddled partitions (the tie rule uses it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from uncertank._optional import require
from uncertank._types import RankedLists
from uncertank.metrics._inputs import as_pairs
from uncertank.metrics.accumulators import Accumulator, QuantileEdged
from uncertank.metrics.quantiles import PassResult, combine_pass, exact_quantiles, float_bits, select_pass
from uncertank.metrics.streaming import MetricsArg, accumulators_for

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["evaluate_dask"]

T = TypeVar("T")


@dataclass
class _Fragment:
    """The rows of one query (possibly only part of them)."""

    qid: Hashable
    scores: NDArray[np.float64]
    labels: NDArray[np.generic]  # the label column as read; RankedLists checks it

    def join(self, other: _Fragment) -> _Fragment:
        return _Fragment(self.qid, np.concatenate([self.scores, other.scores]),
                         np.concatenate([self.labels, other.labels]))


@dataclass
class _Partial:
    """A partition reduced: accumulators of its interior queries, its first and last query's rows."""

    accs: list[Accumulator]
    head: _Fragment | None = None
    tail: _Fragment | None = None  # None when the partition holds a single query
    extra: list[_Fragment] = field(default_factory=list)
    ids: set[Hashable] = field(default_factory=set)  # every query id seen, to refuse one that comes back

    def update(self, frag: _Fragment) -> None:
        lists = RankedLists.from_flat(frag.scores, frag.labels, np.array([0, frag.scores.size]))
        for acc in self.accs:
            acc.update(lists)


def _partial(df: pd.DataFrame, templates: list[Accumulator], query: str, score: str, label: str) -> _Partial:
    out = _Partial([copy.deepcopy(t) for t in templates])
    n = len(df)
    if n == 0:
        return out
    missing = [c for c in (query, score, label) if c not in df.columns]
    if missing:
        raise ValueError(f"frame has no column {missing[0]!r}; its columns are {list(df.columns)}")
    q = df[query].to_numpy()
    s = np.asarray(df[score].to_numpy(), dtype=np.float64)
    y = df[label].to_numpy()
    starts = np.concatenate([[0], np.flatnonzero(q[1:] != q[:-1]) + 1]).astype(np.int64)
    ids = q[starts].tolist()
    if len(set(ids)) != len(ids):
        again = next(v for i, v in enumerate(ids) if v in ids[:i])
        raise ValueError(f"the rows of query {again!r} are not contiguous; sort or group the frame by query id")
    out.ids = set(ids)
    bounds = np.append(starts, n)
    out.head = _Fragment(q[0], s[: bounds[1]], y[: bounds[1]])
    if starts.size > 1:
        last = int(starts[-1])
        out.tail = _Fragment(q[last], s[last:], y[last:])
        if starts.size > 2:
            lo, hi = int(bounds[1]), last
            inner = RankedLists.from_flat(s[lo:hi], y[lo:hi], bounds[1:-1] - lo)
            for acc in out.accs:
                acc.update(inner)
    return out


def _merge(a: _Partial, b: _Partial) -> _Partial:
    if a.head is None:
        return b
    if b.head is None:
        return a
    a_last = a.tail if a.tail is not None else a.head
    again = (a.ids & b.ids) - ({b.head.qid} if a_last.qid == b.head.qid else set())
    if again:
        raise ValueError(
            f"the rows of query {next(iter(again))!r} are not contiguous (it comes back in a later partition); "
            "sort or group the frame by query id"
        )
    for x, y in zip(a.accs, b.accs, strict=True):
        x.merge(y)
    out = _Partial(a.accs, ids=a.ids | b.ids)
    if a_last.qid == b.head.qid:
        joined = a_last.join(b.head)
        out.head = joined if a.tail is None else a.head
        if b.tail is None:
            out.tail = None if a.tail is None else joined
        else:
            out.tail = b.tail
            if a.tail is not None:
                out.update(joined)
        return out
    out.head = a.head
    if a.tail is not None:
        out.update(a.tail)
    if b.tail is not None:
        out.update(b.head)
        out.tail = b.tail
    else:
        out.tail = b.head
    return out


def _finish(p: _Partial) -> list[Accumulator]:
    if p.head is not None:
        p.update(p.head)
    if p.tail is not None:
        p.update(p.tail)
    return p.accs


def _tree(items: list[T], merge: Callable[[T, T], T]) -> T:
    """Reduce ``items`` pairwise, neighbours with neighbours, in order."""
    while len(items) > 1:
        merged = [merge(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            merged.append(items[-1])
        items = merged
    return items[0]


def _select_partition(scores: pd.Series, level: int, prefixes: tuple[int, ...], collect: bool) -> PassResult:
    p = np.asarray(scores.to_numpy(), dtype=np.float64)
    if p.size == 0:
        return select_pass(np.zeros(0, dtype=np.uint64), level, prefixes, collect)
    return select_pass(float_bits(as_pairs(p, np.zeros(p.size, dtype=np.int64), "scores")[0]), level, prefixes, collect)


def evaluate_dask(
    frame: Any,  # a dask DataFrame (an optional dependency), read by duck typing
    metrics: MetricsArg,
    *,
    query: str = "query_id",
    score: str = "score",
    label: str = "label",
    scheduler: object = None,
) -> dict[str, object]:
    """Evaluate metrics over a Dask DataFrame of scored pairs; equal to the in-memory values.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        One row per pair with columns ``query``, ``score``, ``label``; the
        rows of a query contiguous (see the module notes).
    metrics : list or mapping
        Metric entries (names, mappings or :class:`~uncertank.metrics.Metric`,
        as for :func:`~uncertank.metrics.resolve_metrics`) or empty
        accumulators (``ReliabilityAccumulator(n_bins=10)``); a mapping
        names the results.
    query, score, label : str
        Column names.
    scheduler : optional
        Passed to ``dask.compute`` (``"threads"``, ``"processes"``,
        ``"synchronous"``, or a ``distributed.Client``); default Dask's.

    Returns
    -------
    dict
        ``{label or key: value}`` in the order given.

    Raises
    ------
    ValueError
        A missing column, a non-contiguous query (within or across partitions), an
        unknown metric, or two metrics with the same label.
    TypeError
        ``frame`` is not a Dask DataFrame, or ``metrics`` a single string.
    ImportError
        Without dask (``pip install "uncertank[scale]"``).
    """
    dask = require("dask", "scale", what="sharded evaluation")
    if not hasattr(frame, "to_delayed") or not hasattr(frame, "npartitions"):
        raise TypeError(f"frame must be a dask.dataframe.DataFrame; got {type(frame).__name__}")
    keys, templates = accumulators_for(metrics)
    missing = [c for c in (query, score, label) if c not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column {missing[0]!r}; its columns are {list(frame.columns)}")
    delayed = dask.delayed
    edged = [t for t in templates if isinstance(t, QuantileEdged)]
    wanted = sorted({b for t in edged if (b := t.needs_quantile_edges) is not None})
    if wanted:
        scores = frame[score].to_delayed()

        def run_pass(level: int, prefixes: tuple[int, ...], collect: bool) -> PassResult:
            tasks = [delayed(_select_partition)(part, level, prefixes, collect) for part in scores]
            (out,) = dask.compute(_tree(tasks, lambda a, b: delayed(combine_pass)(a, b, collect)),
                                  scheduler=scheduler)
            return out  # type: ignore[no-any-return]

        for b in wanted:
            edges = exact_quantiles(run_pass, b)
            for e in edged:
                if e.needs_quantile_edges == b:
                    e.set_edges(edges)
    parts = [delayed(_partial)(part, templates, query, score, label)
             for part in frame[[query, score, label]].to_delayed()]
    root = _tree(parts, delayed(_merge))  # merge neighbours, keeping the order of the partitions
    (accs,) = dask.compute(delayed(_finish)(root), scheduler=scheduler)
    return {key: acc.compute() for key, acc in zip(keys, accs, strict=True)}
