r"""Streaming evaluation: mergeable accumulators and a constant-memory reader of scored pairs.

Every accumulator has ``update(chunk, labels=None)`` (a chunk is any input
the metric accepts: a :class:`~uncertank.RankedLists`, a
:class:`~uncertank.Predictions` with labels, dense or flat arrays),
``merge(other)`` (combine two accumulators of the same metric and options,
built on different chunks or machines) and ``compute()`` (the metric's
value). They hold a fixed number of float64 and integer sums, so memory does
not grow with the data.

What equals what
----------------
For any split of the pairs into chunks, ``compute()`` equals the in-memory
function on all pairs at once:

- counts are integers and exact: the bin counts of ECE and the reliability
  curve, the number of pairs and queries, and the hits of R@k;
- sums of floating-point values (per-bin confidence sums, squared errors,
  per-query AP or nDCG) are accumulated in float64 and agree with the
  in-memory sums up to rounding in the order of addition (a relative
  difference of about 1e-15 per chunk; the tests ask for 1e-12).

Ranking metrics and :func:`~uncertank.metrics.calibration_by_rank` need
whole queries: a chunk must not split the candidate list of a query (the
reader below and :func:`~uncertank.metrics.sharded.evaluate_dask` cut
chunks at query boundaries; a caller that feeds chunks by hand must do the
same). The calibration metrics over pairs (ECE, MCE, reliability curve,
Brier, NLL) accept any split.

Equal-mass bins (``strategy="quantile"``) need the quantiles of all the
scores before the first pair can be binned. :func:`quantile_edges` finds
them exactly (equal to ``numpy.quantile`` on all the scores, bit for bit)
in a few more passes over the chunks, in constant memory: a radix selection
on the bits of the float64 scores, 16 bits a pass, that gathers the last
candidates once few enough remain (usually three passes in all). An
accumulator with ``strategy="quantile"`` takes these ``edges``;
:func:`evaluate_stream` and :func:`~uncertank.metrics.evaluate_dask` run
the extra passes themselves when a source can be read again.

Not streamed: the balanced ECE, which subsamples at random from all pairs,
and :func:`~uncertank.metrics.imbalance_sweep`; the accumulator raises
ValueError saying so.

Examples
--------
>>> import numpy as np
>>> from uncertank.metrics import expected_calibration_error
>>> rng = np.random.default_rng(0)
>>> p, y = rng.random(1000), rng.integers(0, 2, 1000)
>>> acc = ECEAccumulator()
>>> for lo in range(0, 1000, 300):
...     _ = acc.update(p[lo:lo + 300], y[lo:lo + 300])
>>> bool(np.isclose(acc.compute(), expected_calibration_error(p, y), rtol=1e-12))
True
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from uncertank._io import require
from uncertank._types import RankedLists
from uncertank._validation import check_choice, check_positive_int
from uncertank.metrics.binning import BinStats, bin_index, ece_from_stats
from uncertank.metrics.calibration import (
    Convention,
    Norm,
    ReliabilityCurve,
    Strategy,
    _as_pairs,
    _as_structured,
    _options,
)
from uncertank.metrics.ranking import _pair_ranks

if TYPE_CHECKING:
    from uncertank.metrics.metric import Metric

__all__ = [
    "Accumulator",
    "BrierAccumulator",
    "CalibrationByRankAccumulator",
    "ECEAccumulator",
    "NLLAccumulator",
    "PerQueryMean",
    "ReliabilityAccumulator",
    "evaluate_stream",
    "quantile_edges",
    "read_scored_pairs",
]

A = TypeVar("A", bound="_Base")
BinnedT = TypeVar("BinnedT", bound="_Binned")
PairMeanT = TypeVar("PairMeanT", bound="_PairMean")


@runtime_checkable
class Accumulator(Protocol):
    """A mergeable streaming evaluator of one metric."""

    def update(self, chunk: Any, labels: Any = None) -> Any:
        """Add a chunk of scored pairs; returns self."""
        ...

    def merge(self, other: Any) -> Any:
        """Add another accumulator of the same metric and options; returns self."""
        ...

    def compute(self) -> Any:
        """The metric's value over everything added so far."""
        ...


class _Sum:
    """A float64 running sum with Neumaier compensation (one term per chunk)."""

    __slots__ = ("comp", "total")

    def __init__(self) -> None:
        self.total = 0.0
        self.comp = 0.0

    def add(self, x: float) -> None:
        t = self.total + x
        if abs(self.total) >= abs(x):
            self.comp += (self.total - t) + x
        else:
            self.comp += (x - t) + self.total
        self.total = t

    def merge(self, other: _Sum) -> None:
        self.add(other.total)
        self.add(other.comp)

    @property
    def value(self) -> float:
        return self.total + self.comp


class _Base:
    """``merge`` for every accumulator: the same class with the same options, then ``_merge``."""

    def _key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def _merge(self, other: Any) -> None:
        """Add the state of ``other``, already checked to match."""
        raise NotImplementedError

    def merge(self: A, other: A) -> A:
        """Add ``other``'s state (an accumulator of the same class and options); returns self."""
        self._merge(self._check_merge(other))
        return self

    def _check_merge(self: A, other: Any) -> A:
        if type(other) is not type(self):
            raise TypeError(f"can only merge a {type(self).__name__} with another; got {type(other).__name__}")
        if other._key() != self._key():
            raise ValueError(
                f"can only merge {type(self).__name__}s with the same options; got {self._key()} and {other._key()}"
            )
        return other  # type: ignore[no-any-return]

    def _empty(self, what: str = "pairs") -> ValueError:
        return ValueError(f"{type(self).__name__}.compute() needs at least one chunk of {what}; none was added")


# --------------------------------------------------------------------------- ranking


class PerQueryMean(_Base):
    """The mean over queries of a metric's per-query values (any metric with ``per_query``).

    Every ranking metric is such a mean, so this one class streams all of
    them: ``update`` calls ``metric(chunk, per_query=True)`` and adds the
    values and their number. Chunks must hold whole queries.

    Parameters
    ----------
    metric : Metric
        A metric with a per-query value, its options bound.
    """

    def __init__(self, metric: Metric) -> None:
        if not metric.per_query:
            raise ValueError(f"metric {metric.name!r} has no per-query value; it cannot be averaged over queries")
        self.metric = metric
        self._sum = _Sum()
        self.n_queries = 0

    def _key(self) -> tuple[Any, ...]:
        return (self.metric.name, tuple(sorted((k, repr(v)) for k, v in self.metric.options.items())))

    def update(self, chunk: Any, labels: Any = None) -> PerQueryMean:
        """Add the queries of ``chunk`` (whole queries only)."""
        values = np.asarray(self.metric(chunk, labels, per_query=True), dtype=np.float64)
        self._sum.add(float(values.sum()))
        self.n_queries += int(values.size)
        return self

    def _merge(self, o: PerQueryMean) -> None:
        self._sum.merge(o._sum)
        self.n_queries += o.n_queries

    def compute(self) -> float:
        """The mean over every query added."""
        if self.n_queries == 0:
            raise self._empty("queries")
        return self._sum.value / self.n_queries


# --------------------------------------------------------------------------- calibration


def _streamable(strategy: str, balanced: Any, what: str) -> None:
    if balanced:
        raise ValueError(
            f"{what} cannot stream balanced=True: it subsamples at random from all pairs; "
            "compute it in memory"
        )


def _check_edges(edges: Any, n_bins: int) -> NDArray[np.float64] | None:
    if edges is None:
        return None
    arr = np.asarray(edges, dtype=np.float64)
    if arr.shape != (n_bins + 1,) or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) < 0):
        raise ValueError(
            f"edges must be {n_bins + 1} non-decreasing finite values (from quantile_edges); "
            f"got shape {arr.shape}"
        )
    return arr


class _Binned(_Base):
    """Per-bin count, sum of confidences, number relevant and sum of (p - y), over fixed edges."""

    def __init__(self, n_bins: int, strategy: str, convention: str, edges: Any = None) -> None:
        self.n_bins, self.strategy, self.convention = n_bins, strategy, convention
        self.counts = np.zeros(n_bins, dtype=np.int64)
        self.sum_conf = np.zeros(n_bins)
        self.sum_pos = np.zeros(n_bins)
        self.sum_gap = np.zeros(n_bins)
        self._gap_only = False
        self.n = 0
        self.edges: NDArray[np.float64] | None = None
        self.quantile_edges: NDArray[np.float64] | None = None
        if strategy == "quantile":
            self.set_edges(edges)
        elif edges is not None:
            raise ValueError(f"edges are for strategy='quantile'; got strategy={strategy!r}")

    @property
    def needs_quantile_edges(self) -> int | None:
        """The number of bins whose quantile edges this accumulator still needs (None: none)."""
        return self.n_bins if self.strategy == "quantile" and self.quantile_edges is None else None

    def set_edges(self, edges: Any) -> None:
        """Give the quantile edges (shape (n_bins + 1,), from :func:`quantile_edges`)."""
        if self.n:
            raise ValueError(f"{type(self).__name__}: set the edges before the first update")
        self.quantile_edges = _check_edges(edges, self.n_bins)

    def _add(self, p: NDArray[np.float64], y: NDArray[np.bool_]) -> None:
        if self.needs_quantile_edges is not None:
            raise ValueError(
                f"{type(self).__name__} with strategy='quantile' needs the quantile edges of all the scores "
                "before the first update: pass edges=quantile_edges(chunks, n_bins=...), or use evaluate_stream "
                "or evaluate_dask on a source that can be read twice"
            )
        idx, edges, minlength = bin_index(p, self.n_bins, self.strategy, self.convention, self.quantile_edges)
        c = self.n_bins
        self.counts += np.bincount(idx, minlength=minlength)[:c]
        if self._gap_only:  # the l1 ECE needs the per-bin sums of p - y only, as in memory
            self.sum_gap += np.bincount(idx, weights=p - y, minlength=minlength)[:c]
        else:
            self.sum_conf += np.bincount(idx, weights=p, minlength=minlength)[:c]
            self.sum_pos += np.bincount(idx, weights=y, minlength=minlength)[:c]
        self.n += int(p.size)
        self.edges = edges

    def _merge(self, o: _Binned) -> None:
        self.counts += o.counts
        self.sum_conf += o.sum_conf
        self.sum_pos += o.sum_pos
        self.sum_gap += o.sum_gap
        self.n += o.n
        self.edges = self.edges if self.edges is not None else o.edges

    def update(self: BinnedT, chunk: Any, labels: Any = None) -> BinnedT:
        """Add the pairs of ``chunk`` (any split)."""
        self._add(*_as_pairs(chunk, labels))
        return self

    def _stats(self) -> BinStats:
        if self.n == 0:
            raise self._empty()
        assert self.edges is not None  # set with the first pairs
        return BinStats(self.counts.copy(), self.sum_conf.copy(), self.sum_pos.copy(), self.edges, self.n)


class ECEAccumulator(_Binned):
    """Streaming :func:`~uncertank.metrics.expected_calibration_error` (and MCE, l2).

    Parameters
    ----------
    n_bins, strategy, norm, convention
        As in :func:`~uncertank.metrics.expected_calibration_error`.
    balanced : bool
        Must be False (see the module notes).
    seed : ignored
        Accepted so that the options of a bound ``ece`` metric pass through.
    edges : array-like of shape (n_bins + 1,), optional
        With ``strategy="quantile"``: the quantile edges of all the scores
        (:func:`quantile_edges`); they can also be given later with
        :meth:`set_edges`, before the first update.
    n_subsamples : int
        Must be 1 (it applies to ``balanced=True`` only).

    Raises
    ------
    ValueError
        For ``balanced=True``, ``n_subsamples`` other than 1, or edges of the
        wrong shape.
    """

    def __init__(
        self,
        *,
        n_bins: int | None = None,
        strategy: Strategy = "uniform",
        norm: Norm = "l1",
        balanced: bool = False,
        seed: Any = None,
        convention: Convention = "naeini",
        edges: Any = None,
        n_subsamples: int = 1,
    ) -> None:
        c, strategy, norm, convention = _options(n_bins, strategy, norm, convention)
        _streamable(strategy, balanced, "ECEAccumulator")
        if n_subsamples != 1:
            raise ValueError(f"ECEAccumulator: n_subsamples applies only to balanced=True, which cannot stream; "
                             f"got n_subsamples={n_subsamples!r}")
        super().__init__(c, strategy, convention, edges)
        self.norm = norm
        self._gap_only = norm == "l1"

    def _key(self) -> tuple[Any, ...]:
        edges = None if self.quantile_edges is None else tuple(self.quantile_edges.tolist())
        return (self.n_bins, self.strategy, self.norm, self.convention, edges)

    def compute(self) -> float:
        """The ECE (MCE, l2) of every pair added."""
        st = self._stats()
        if self.norm == "l1":
            ece = float(np.abs(self.sum_gap).sum()) / st.n
            return ece / self.n_bins if self.convention == "penha-hauff" else ece
        return ece_from_stats(st, self.norm, self.convention)


class ReliabilityAccumulator(_Binned):
    """Streaming :func:`~uncertank.metrics.reliability_curve`.

    Parameters
    ----------
    n_bins : int
        Number of bins, ``>= 1``; default 10.
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins (the latter with ``edges``).
    edges : array-like of shape (n_bins + 1,), optional
        With ``strategy="quantile"``: the quantile edges of all the scores
        (:func:`quantile_edges`), or later through :meth:`set_edges`.
    """

    def __init__(self, *, n_bins: int = 10, strategy: Strategy = "uniform", edges: Any = None) -> None:
        c, strategy, _, _ = _options(n_bins, strategy, "l1", "naeini")
        super().__init__(c, strategy, "naeini", edges)

    def _key(self) -> tuple[Any, ...]:
        edges = None if self.quantile_edges is None else tuple(self.quantile_edges.tolist())
        return (self.n_bins, self.strategy, edges)

    def compute(self) -> ReliabilityCurve:
        """The curve of every pair added (empty bins: NaN means, count 0)."""
        st = self._stats()
        with np.errstate(invalid="ignore", divide="ignore"):
            conf = st.sum_conf / st.counts
            frac = st.sum_pos / st.counts
        return ReliabilityCurve(conf, frac, st.counts, st.edges)


class _PairMean(_Base):
    """A mean over pairs: a compensated sum of per-pair terms and their number ``n``."""

    def __init__(self) -> None:
        self._sum = _Sum()
        self.n = 0

    def _total(self, p: NDArray[np.float64], y: NDArray[np.bool_]) -> float:
        """The sum of the per-pair terms of scores ``p`` and labels ``y``."""
        raise NotImplementedError

    def update(self: PairMeanT, chunk: Any, labels: Any = None) -> PairMeanT:
        """Add the pairs of ``chunk``."""
        p, y = _as_pairs(chunk, labels)
        self._sum.add(self._total(p, y))
        self.n += int(p.size)
        return self

    def _merge(self, o: _PairMean) -> None:
        self._sum.merge(o._sum)
        self.n += o.n

    def _mean(self) -> float:
        if self.n == 0:
            raise self._empty()
        return self._sum.value / self.n


class BrierAccumulator(_PairMean):
    """Streaming :func:`~uncertank.metrics.brier_score` (mean over pairs; any split)."""

    def _key(self) -> tuple[Any, ...]:
        return ()

    def _total(self, p: NDArray[np.float64], y: NDArray[np.bool_]) -> float:
        d = p - y
        return float(np.einsum("i,i->", d, d))

    def compute(self) -> float:
        """The Brier score of every pair added."""
        return self._mean()


class NLLAccumulator(_PairMean):
    """Streaming :func:`~uncertank.metrics.negative_log_likelihood` (mean over pairs; any split).

    Parameters
    ----------
    eps : float, optional
        As in :func:`~uncertank.metrics.negative_log_likelihood`.
    """

    def __init__(self, *, eps: float | None = None) -> None:
        e = float(np.finfo(np.float64).eps) if eps is None else eps
        if isinstance(e, bool) or not isinstance(e, (int, float, np.floating)) or not 0.0 < e < 0.5:
            raise ValueError(f"eps must be a float in (0, 0.5); got {eps!r}")
        super().__init__()
        self.eps = float(e)

    def _key(self) -> tuple[Any, ...]:
        return (self.eps,)

    def _total(self, p: NDArray[np.float64], y: NDArray[np.bool_]) -> float:
        pc = np.clip(p, self.eps, 1.0 - self.eps)
        ll = np.where(y, np.log(pc), np.log1p(-pc))
        return float(-ll.sum())

    def compute(self) -> float:
        """The NLL of every pair added."""
        return self._mean()


class CalibrationByRankAccumulator(_Base):
    """Streaming :func:`~uncertank.metrics.calibration_by_rank` (equal-width bins; whole queries).

    Parameters
    ----------
    n_bins, norm, convention, max_rank
        As in :func:`~uncertank.metrics.calibration_by_rank`.
    strategy : {"uniform"}
        Only equal-width bins stream.
    """

    def __init__(
        self,
        *,
        n_bins: int | None = None,
        strategy: Strategy = "uniform",
        norm: Norm = "l1",
        convention: Convention = "naeini",
        max_rank: int | None = None,
    ) -> None:
        c, strategy, norm, convention = _options(n_bins, strategy, norm, convention)
        if strategy != "uniform":
            raise ValueError(
                f"CalibrationByRankAccumulator streams equal-width bins only; got strategy={strategy!r}: "
                "equal-mass bins would need the quantiles of every rank position"
            )
        self.n_bins, self.strategy, self.norm, self.convention = c, strategy, norm, convention
        self.max_rank = None if max_rank is None else check_positive_int(max_rank, "max_rank")
        self.n_positions = 0 if self.max_rank is None else self.max_rank
        self.counts = np.zeros((self.n_positions, c), dtype=np.int64)
        self.sum_conf = np.zeros((self.n_positions, c))
        self.sum_pos = np.zeros((self.n_positions, c))
        self.n_at = np.zeros(self.n_positions, dtype=np.int64)  # pairs at each position
        self.edges: NDArray[np.float64] | None = None

    def _key(self) -> tuple[Any, ...]:
        return (self.n_bins, self.strategy, self.norm, self.convention, self.max_rank)

    def _grow(self, n_positions: int) -> None:
        if n_positions <= self.n_positions:
            return
        extra = n_positions - self.n_positions
        self.counts = np.vstack([self.counts, np.zeros((extra, self.n_bins), dtype=np.int64)])
        self.sum_conf = np.vstack([self.sum_conf, np.zeros((extra, self.n_bins))])
        self.sum_pos = np.vstack([self.sum_pos, np.zeros((extra, self.n_bins))])
        self.n_at = np.concatenate([self.n_at, np.zeros(extra, dtype=np.int64)])
        self.n_positions = n_positions

    def update(self, chunk: Any, labels: Any = None) -> CalibrationByRankAccumulator:
        """Add the queries of ``chunk`` (whole queries only)."""
        lists, p, y = _as_structured(chunk, labels)
        rank = _pair_ranks(lists)
        if self.max_rank is None:
            self._grow(int(lists.lengths.max()))
        else:
            keep = rank < self.max_rank
            rank, p, y = rank[keep], p[keep], y[keep]
        idx, edges, _ = bin_index(p, self.n_bins, self.strategy, self.convention)
        inside = idx < self.n_bins  # the penha-hauff overflow slot counts in no bin
        cell = rank[inside] * self.n_bins + idx[inside]
        size = self.n_positions * self.n_bins
        self.counts += np.bincount(cell, minlength=size).reshape(self.n_positions, self.n_bins)
        self.sum_conf += np.bincount(cell, weights=p[inside], minlength=size).reshape(self.n_positions, self.n_bins)
        self.sum_pos += np.bincount(cell, weights=y[inside], minlength=size).reshape(self.n_positions, self.n_bins)
        self.n_at += np.bincount(rank, minlength=self.n_positions)
        self.edges = edges
        return self

    def _merge(self, o: CalibrationByRankAccumulator) -> None:
        self._grow(o.n_positions)
        self.counts[: o.n_positions] += o.counts
        self.sum_conf[: o.n_positions] += o.sum_conf
        self.sum_pos[: o.n_positions] += o.sum_pos
        self.n_at[: o.n_positions] += o.n_at
        self.edges = self.edges if self.edges is not None else o.edges

    def compute(self) -> NDArray[np.float64]:
        """ECE at ranks 1, 2, ...; shape (n_positions,), NaN where no query reaches the position."""
        if self.edges is None:
            raise self._empty("queries")
        out = np.full(self.n_positions, np.nan)
        for r in range(self.n_positions):
            n = int(self.n_at[r])
            if n:
                st = BinStats(self.counts[r], self.sum_conf[r], self.sum_pos[r], self.edges, n)
                out[r] = ece_from_stats(st, self.norm, self.convention)
        return out


# --------------------------------------------------------------------------- quantiles

_DIGIT = 16  # bits of the float64 pattern resolved per pass
_COLLECT = 1 << 20  # gather the candidates once at most this many remain


def _bits(p: NDArray[np.float64]) -> NDArray[np.uint64]:
    """Order-preserving unsigned view of probabilities in [0, 1] (-0.0 made +0.0)."""
    return np.ascontiguousarray(p + 0.0).view(np.uint64)


def _select_pass(u: NDArray[np.uint64], level: int, prefixes: tuple[int, ...], collect: bool) -> list[Any]:
    """Per prefix group: the histogram of the next 16 bits, or (``collect``) the group's values."""
    if level == 0:
        return [np.bincount((u >> np.uint64(64 - _DIGIT)).astype(np.intp), minlength=1 << _DIGIT)]
    top = u >> np.uint64(64 - _DIGIT * level)
    out: list[Any] = []
    for pre in prefixes:
        sel = u[top == np.uint64(pre)]
        if collect:
            out.append(sel)
        else:
            shift = np.uint64(64 - _DIGIT * (level + 1))
            out.append(np.bincount(((sel >> shift) & np.uint64(0xFFFF)).astype(np.intp), minlength=1 << _DIGIT))
    return out


def _combine_pass(a: list[Any], b: list[Any], collect: bool) -> list[Any]:
    if collect:
        return [np.concatenate([x, y]) for x, y in zip(a, b, strict=True)]
    return [x + y for x, y in zip(a, b, strict=True)]


def _lerp(a: NDArray[np.float64], b: NDArray[np.float64], t: NDArray[np.float64]) -> NDArray[np.float64]:
    """numpy.quantile's linear interpolation, operation for operation (so the edges agree bit for bit)."""
    diff = b - a
    out = np.add(a, diff * t)
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def _exact_quantiles(run_pass: Any, n_bins: int) -> NDArray[np.float64]:
    """Edges equal to ``numpy.quantile(all scores, linspace(0, 1, n_bins + 1))``.

    ``run_pass(level, prefixes, collect)`` runs :func:`_select_pass` over
    every chunk and combines the results with :func:`_combine_pass`.
    """
    hist0 = run_pass(0, (0,), False)[0]
    n = int(hist0.sum())
    if n == 0:
        raise ValueError("quantile_edges needs at least one score; the chunks held none")
    q = np.linspace(0.0, 1.0, n_bins + 1)
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above] = n - 1
    nxt[above] = n - 1
    gamma = virtual - np.where(above, -1.0, prev)  # as numpy: the index of the last element is -1 there
    ranks = sorted({int(k) for k in np.concatenate([prev, nxt])})
    # per wanted rank: the bits found so far, how many levels they cover, the rank within that group
    state = {k: [0, 0, k] for k in ranks}
    value: dict[int, float] = {}
    hists: dict[int, NDArray[np.int64]] = {0: hist0}
    level = 0
    while len(value) < len(ranks):
        for k, st in state.items():  # descend one digit with the histograms of this level
            if k in value or st[1] != level:
                continue
            h = hists[st[0]]
            cum = np.cumsum(h)
            d = int(np.searchsorted(cum, st[2], side="right"))
            st[2] -= int(cum[d - 1]) if d else 0
            st[0] = (st[0] << _DIGIT) | d
            st[1] = level + 1
            if st[1] == 64 // _DIGIT:
                value[k] = float(np.array([st[0]], dtype=np.uint64).view(np.float64)[0])
        level += 1
        open_ = sorted({st[0] for k, st in state.items() if k not in value})
        if not open_:
            break
        if sum(_group_sizes(state, value, hists).values()) <= _COLLECT:
            groups = run_pass(level, tuple(open_), True)
            for pre, vals in zip(open_, groups, strict=True):
                srt = np.sort(vals.view(np.float64))
                for k, st in state.items():
                    if k not in value and st[0] == pre:
                        value[k] = float(srt[st[2]])
            break
        new = run_pass(level, tuple(open_), False)
        hists = dict(zip(open_, new, strict=True))
    a = np.array([value[int(i)] for i in prev])
    b = np.array([value[int(i)] for i in nxt])
    return _lerp(a, b, gamma)


def _group_sizes(
    state: dict[int, list[int]], value: dict[int, float], hists: dict[int, NDArray[np.int64]]
) -> dict[int, int]:
    """Size of every open prefix group, read off the histograms of the level just resolved."""
    sizes: dict[int, int] = {}
    for k, st in state.items():
        if k in value:
            continue
        parent, digit = st[0] >> _DIGIT, st[0] & 0xFFFF
        sizes[st[0]] = int(hists[parent][digit]) if parent in hists else 0
    return sizes


def _chunk_probs(chunk: Any) -> NDArray[np.float64]:
    if isinstance(chunk, tuple):
        if len(chunk) != 2:
            raise ValueError(f"a chunk tuple must be (scores, labels); got {len(chunk)} items")
        return _as_pairs(chunk[0], chunk[1])[0]
    return _as_pairs(chunk, None)[0]


def _reiterable(chunks: Any) -> Any:
    """A function returning a fresh iterator over ``chunks`` (a callable, or a list or tuple)."""
    if callable(chunks):
        return chunks
    if isinstance(chunks, (list, tuple)):
        return lambda: iter(chunks)
    raise ValueError(
        "equal-mass bins need the chunks twice (the quantile edges first): pass a function that returns "
        "a new iterator over them (e.g. lambda: read_scored_pairs(path)) or a list"
    )


def quantile_edges(chunks: Any, *, n_bins: int = 10) -> NDArray[np.float64]:
    """The equal-mass bin edges of all the scores in ``chunks``, exactly, in constant memory.

    Equal, bit for bit, to ``numpy.quantile(p, numpy.linspace(0, 1, n_bins
    + 1))`` on all the probabilities at once (the edges of
    ``strategy="quantile"``), found by a radix selection over the float64
    bit patterns: one pass counts the top 16 bits, each further pass the
    next 16 bits of the groups that hold a wanted order statistic, and once
    those groups hold at most about a million scores they are gathered and
    sorted. Three passes over the chunks on most data, five at most.

    Parameters
    ----------
    chunks : callable or list
        A function returning a new iterable of chunks on each call (e.g.
        ``lambda: read_scored_pairs(path)``), or a list of chunks. A chunk is
        a RankedLists (probabilities as scores), or a ``(probs, labels)``
        tuple.
    n_bins : int
        Number of bins, ``>= 1``.

    Returns
    -------
    ndarray of shape (n_bins + 1,)

    Raises
    ------
    ValueError
        For a one-shot iterator (it cannot be read twice), or no scores.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.random.default_rng(0).random(1000)
    >>> chunks = [(p[i:i + 100], np.zeros(100, dtype=int)) for i in range(0, 1000, 100)]
    >>> bool((quantile_edges(chunks, n_bins=4) == np.quantile(p, np.linspace(0, 1, 5))).all())
    True
    """
    c = check_positive_int(n_bins, "n_bins")
    source = _reiterable(chunks)

    def run_pass(level: int, prefixes: tuple[int, ...], collect: bool) -> list[Any]:
        acc: list[Any] | None = None
        for chunk in source():
            part = _select_pass(_bits(_chunk_probs(chunk)), level, prefixes, collect)
            acc = part if acc is None else _combine_pass(acc, part, collect)
        if acc is None:
            raise ValueError("quantile_edges needs at least one score; the chunks held none")
        return acc

    return _exact_quantiles(run_pass, c)


# --------------------------------------------------------------------------- reading


def _detect_format(path: str, fmt: str | None) -> str:
    if fmt is not None:
        return check_choice(fmt, "format", ("parquet", "csv"))
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    if lower.endswith((".csv", ".csv.gz", ".tsv")):
        return "csv"
    raise ValueError(f"cannot tell the format of {path!r} from its name; pass format='parquet' or format='csv'")


def _batches(path: str, fmt: str, columns: list[str], chunk_size: int) -> Iterator[Any]:
    if fmt == "parquet":
        pq = require("pyarrow.parquet", "scale", what="reading Parquet")
        pf = pq.ParquetFile(path)
        missing = [c for c in columns if c not in pf.schema_arrow.names]
        if missing:
            raise ValueError(f"{path}: no column {missing[0]!r}; the columns are {pf.schema_arrow.names}")
        yield from pf.iter_batches(batch_size=chunk_size, columns=columns)
        return
    pa = require("pyarrow", "scale", what="reading CSV")
    pacsv = require("pyarrow.csv", "scale", what="reading CSV")
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    # about 24 bytes per row of text: a block of chunk_size rows
    read = pacsv.ReadOptions(block_size=max(1 << 16, min(chunk_size * 24, 1 << 30)))
    convert = pacsv.ConvertOptions(
        include_columns=columns, column_types={columns[0]: pa.string(), columns[1]: pa.float64()}
    )
    try:
        reader = pacsv.open_csv(path, read_options=read, parse_options=pacsv.ParseOptions(delimiter=delimiter),
                                convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowKeyError) as exc:
        raise ValueError(f"{path}: cannot read columns {columns}: {exc}") from None
    try:
        yield from reader
    except pa.ArrowInvalid as exc:  # a value that does not parse, past the first block
        raise ValueError(f"{path}: cannot read columns {columns}: {exc}") from None


def read_scored_pairs(
    path: str | os.PathLike[str],
    *,
    query: str = "query_id",
    score: str = "score",
    label: str = "label",
    chunk_size: int = 1 << 20,
    format: str | None = None,
) -> Iterator[RankedLists]:
    """Stream scored pairs (query id, score, label) from Parquet or CSV in chunks of whole queries.

    The file is read in batches of about ``chunk_size`` rows with pyarrow
    (``ParquetFile.iter_batches`` or ``pyarrow.csv.open_csv``); the rows of
    the last query of a batch are carried into the next one, so that every
    chunk yielded holds whole queries and memory stays at about one batch.
    The rows of a query must be contiguous (a file sorted or grouped by
    query id, as a TREC run is): a query id that comes back after another
    query is an error wherever it comes back, in the same batch or a later
    one (the reader keeps the set of query ids seen, so its memory grows
    with the number of queries, not of rows). Candidates keep their file
    order (the tie rule ranks the earlier row first on equal scores).

    Parameters
    ----------
    path : path
        A ``.parquet``/``.pq`` or ``.csv``/``.tsv`` file (or give ``format``).
    query, score, label : str
        Column names: the query id (any type; read as text from CSV), the
        score (float), the label (integer ``>= 0``).
    chunk_size : int
        Rows per batch read, ``>= 1``.
    format : {"parquet", "csv"}, optional
        Default: from the file name.

    Yields
    ------
    RankedLists
        The whole queries read so far, in file order.

    Raises
    ------
    ValueError
        A missing column, a query whose rows are not contiguous (the message
        names the query and the file), an unknown format, or scores or
        labels that fail the checks of :class:`~uncertank.RankedLists`.
    ImportError
        Without pyarrow (``pip install "uncertank[scale]"``).
    """
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    path_s = os.fspath(path)
    fmt = _detect_format(path_s, format)
    pa = require("pyarrow", "scale", what="streaming scored pairs")
    pc = require("pyarrow.compute", "scale", what="streaming scored pairs")
    columns = [query, score, label]
    carry: tuple[Any, NDArray[np.float64], NDArray[Any]] | None = None
    seen: set[Any] = set()  # the ids of the queries yielded so far
    for batch in _batches(path_s, fmt, columns, chunk_size):
        names = batch.schema.names
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"{path_s}: no column {missing[0]!r}; the columns are {names}")
        q = batch.column(names.index(query))
        s = batch.column(names.index(score)).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        y = batch.column(names.index(label)).to_numpy(zero_copy_only=False)
        if carry is not None:
            q = pa.concat_arrays([carry[0], q])
            s = np.concatenate([carry[1], s])
            y = np.concatenate([carry[2], y])
        n = len(q)
        if n == 0:
            continue
        starts = np.zeros(1, dtype=np.int64)
        if n > 1:
            change = pc.not_equal(q.slice(1), q.slice(0, n - 1)).to_numpy(zero_copy_only=False)
            starts = np.concatenate([starts, np.flatnonzero(change) + 1])
        last = int(starts[-1])
        carry = (q.slice(last), s[last:], y[last:])
        if last > 0:
            yield _chunk(path_s, pc, q.slice(0, last), s[:last], y[:last], starts[:-1], seen)
    if carry is not None and len(carry[0]):
        yield _chunk(path_s, pc, carry[0], carry[1], carry[2], np.zeros(1, dtype=np.int64), seen)


def _chunk(
    path: str, pc: Any, q: Any, s: NDArray[np.float64], y: NDArray[Any], starts: NDArray[np.int64],
    seen: set[Any],
) -> RankedLists:
    """RankedLists of whole queries; refuses a query id that comes back after another, and adds the ids to ``seen``."""
    ids = q.take(starts)
    again = None
    if starts.size > 1 and pc.count_distinct(ids).as_py() != starts.size:
        counts = pc.value_counts(ids)
        again = next(v["values"] for v in counts.to_pylist() if v["counts"] > 1)
    new = ids.to_pylist()  # one id per query, not per row
    if again is None and not seen.isdisjoint(new):
        again = next(v for v in new if v in seen)
    if again is not None:
        raise ValueError(
            f"{path}: the rows of query {again!r} are not contiguous (it comes back after another query); "
            "sort or group the file by query id"
        )
    seen.update(new)
    offsets = np.append(starts, s.size).astype(np.int64)
    if y.dtype.kind not in "biuf":  # text: numpy's int() would read "1_0" as 10
        example = next((v for v in y if not re.fullmatch(r"[+-]?[0-9]+", str(v))), y[0])
        raise ValueError(f"{path}: the label column must hold integers >= 0; got text such as {example!r}")
    if y.dtype.kind == "f":
        yy = y
    else:
        yy = y.astype(np.int64, copy=False)
    return RankedLists.from_flat(s, yy, offsets)


# --------------------------------------------------------------------------- driver


def _accumulators(metrics: Any) -> tuple[list[str], list[Any]]:
    """Keys and empty accumulators for metric entries or accumulator instances."""
    from uncertank.metrics.metric import resolve_metrics

    items: list[tuple[str | None, Any]]
    if isinstance(metrics, Mapping):
        items = list(metrics.items())
    elif isinstance(metrics, (str, bytes)):
        raise TypeError(f"metrics must be a list or a mapping; got a single {type(metrics).__name__}")
    else:
        items = [(None, m) for m in metrics]
    keys: list[str] = []
    accs: list[Any] = []
    for key, entry in items:
        if isinstance(entry, Accumulator):
            accs.append(entry)
            keys.append(key if key is not None else type(entry).__name__)
        else:
            metric = resolve_metrics([entry])[0]
            accs.append(metric.accumulator())
            keys.append(key if key is not None else metric.display_label)
    if len(set(keys)) != len(keys):
        raise ValueError(f"metrics must have distinct labels; got {keys} (pass a mapping to name them)")
    return keys, accs


def evaluate_stream(chunks: Iterable[Any], metrics: Any) -> dict[str, Any]:
    """Evaluate ``metrics`` over an iterable of chunks (each of whole queries) in one pass.

    Parameters
    ----------
    chunks : iterable, or callable returning one
        Chunks of whole queries: RankedLists (from :func:`read_scored_pairs`)
        or ``(scores, labels)`` tuples of arrays. Equal-mass bins
        (``strategy="quantile"``) read the chunks more than once: pass a
        function returning a new iterable (``lambda:
        read_scored_pairs(path)``) or a list.
    metrics : list or mapping
        Metric entries (names, mappings or :class:`~uncertank.metrics.Metric`,
        resolved by :func:`~uncertank.metrics.resolve_metrics`) or empty
        accumulators (``ReliabilityAccumulator(n_bins=10)``); a mapping names
        the results.

    Returns
    -------
    dict
        ``{label or key: value}`` in the order given.

    Raises
    ------
    ValueError
        A chunk tuple that is not ``(scores, labels)``, or two metrics with
        the same label.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> chunks = [(rng.random((50, 10)), rng.integers(0, 2, (50, 10))) for _ in range(3)]
    >>> sorted(evaluate_stream(chunks, ["map", "ece"]))
    ['ECE', 'MAP']
    """
    keys, accs = _accumulators(metrics)
    wanted = sorted({b for acc in accs if (b := getattr(acc, "needs_quantile_edges", None)) is not None})
    if wanted:
        source = _reiterable(chunks)
        for b in wanted:
            edges = quantile_edges(source, n_bins=b)
            for acc in accs:
                if getattr(acc, "needs_quantile_edges", None) == b:
                    acc.set_edges(edges)
        chunks = source()
    for chunk in chunks:
        for acc in accs:
            if isinstance(chunk, tuple):
                if len(chunk) != 2:
                    raise ValueError(f"a chunk tuple must be (scores, labels); got {len(chunk)} items")
                acc.update(chunk[0], chunk[1])
            else:
                acc.update(chunk)
    return {key: acc.compute() for key, acc in zip(keys, accs, strict=True)}

