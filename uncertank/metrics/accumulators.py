r"""Mergeable streaming accumulators: one per metric, ``update``/``merge``/``compute``.

Every accumulator has ``update(chunk, labels=None)`` (a chunk is any input
the metric accepts: a :class:`~uncertank.RankedLists`, a
:class:`~uncertank.Predictions` with labels, dense or flat arrays),
``merge(other)`` (combine two accumulators of the same metric and options,
built on different chunks or machines) and ``compute()`` (the metric's
value). They hold a fixed number of float64 and integer sums, so memory does
not grow with the data. The calibration accumulators bin through
:mod:`uncertank.metrics.binning`, as the in-memory metrics do.

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

Ranking metrics and :class:`CalibrationByRankAccumulator` need whole
queries: a chunk must not split the candidate list of a query. The
calibration metrics over pairs (ECE, MCE, reliability curve, Brier, NLL)
accept any split. Equal-mass bins take their ``edges`` from
:func:`~uncertank.metrics.quantiles.quantile_edges`.

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

from collections.abc import Mapping
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing_extensions import Self

from uncertank.metrics._inputs import LabelsInput, ScoresInput, as_pairs, as_structured
from uncertank.metrics.binning import (
    BinStats,
    Convention,
    Norm,
    Strategy,
    bin_index,
    check_binning,
    ece_from_stats,
)
from uncertank.metrics.calibration import ReliabilityCurve
from uncertank.metrics.ranks import pair_ranks
from uncertank.validation import check_bool, check_instance, check_positive_int, check_real

__all__ = [
    "Accumulator",
    "BrierAccumulator",
    "CalibrationByRankAccumulator",
    "ECEAccumulator",
    "NLLAccumulator",
    "PerQueryMean",
    "PerQueryMetric",
    "QuantileEdged",
    "ReliabilityAccumulator",
]

A = TypeVar("A", bound="_Base")
BinnedT = TypeVar("BinnedT", bound="_Binned")
PairMeanT = TypeVar("PairMeanT", bound="_PairMean")


@runtime_checkable
class Accumulator(Protocol):
    """A mergeable streaming evaluator of one metric."""

    def update(self, chunk: ScoresInput, labels: LabelsInput = None) -> Self:
        """Add a chunk of scored pairs; returns self."""
        ...

    def merge(self, other: Self) -> Self:
        """Add another accumulator of the same metric and options; returns self."""
        ...

    def compute(self) -> object:
        """The metric's value over everything added so far."""
        ...


@runtime_checkable
class QuantileEdged(Protocol):
    """An accumulator with equal-mass bins, which needs the quantile edges of all the scores first."""

    @property
    def needs_quantile_edges(self) -> int | None:
        """The number of bins whose quantile edges it still needs (None: none)."""
        ...

    def set_edges(self, edges: ArrayLike | None) -> None:
        """Give the quantile edges (shape (n_bins + 1,), from :func:`quantile_edges`)."""
        ...


@runtime_checkable
class PerQueryMetric(Protocol):
    """What :class:`PerQueryMean` needs of a metric (a :class:`~uncertank.metrics.Metric` is one)."""

    name: str
    per_query: bool

    @property
    def options(self) -> Mapping[str, object]:
        """The bound options."""
        ...

    def __call__(
        self, scores: ScoresInput, labels: LabelsInput = None, *, per_query: bool = False
    ) -> float | NDArray[np.float64]:
        """The metric's value; with ``per_query=True`` one value per query."""
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

    def _key(self) -> tuple[object, ...]:
        raise NotImplementedError

    def _merge(self, other: Self) -> None:
        """Add the state of ``other``, already checked to match."""
        raise NotImplementedError

    def merge(self: A, other: A) -> A:
        """Add ``other``'s state (an accumulator of the same class and options); returns self."""
        self._merge(self._check_merge(other))
        return self

    def _check_merge(self: A, other: object) -> A:
        if type(other) is not type(self):
            raise TypeError(f"can only merge a {type(self).__name__} with another; got {type(other).__name__}")
        if other._key() != self._key():
            raise ValueError(
                f"can only merge {type(self).__name__}s with the same options; got {self._key()} and {other._key()}"
            )
        return other

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
        A metric with a per-query value, its options bound (any
        :class:`PerQueryMetric`).
    """

    def __init__(self, metric: PerQueryMetric) -> None:
        check_instance(metric, "metric", PerQueryMetric, "a metric with a per-query value (uncertank.metrics.Metric)")
        if not check_bool(metric.per_query, "metric.per_query"):
            raise ValueError(f"metric {metric.name!r} has no per-query value; it cannot be averaged over queries")
        self.metric = metric
        self._sum = _Sum()
        self.n_queries = 0

    def _key(self) -> tuple[object, ...]:
        return (self.metric.name, tuple(sorted((k, repr(v)) for k, v in self.metric.options.items())))

    def update(self, chunk: ScoresInput, labels: LabelsInput = None) -> PerQueryMean:
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


def _streamable(strategy: str, balanced: object, what: str) -> None:
    if check_bool(balanced, "balanced"):
        raise ValueError(
            f"{what} cannot stream balanced=True: it subsamples at random from all pairs; "
            "compute it in memory"
        )


def _check_edges(edges: ArrayLike | None, n_bins: int) -> NDArray[np.float64] | None:
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

    def __init__(self, n_bins: int, strategy: str, convention: str, edges: ArrayLike | None = None) -> None:
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

    def set_edges(self, edges: ArrayLike | None) -> None:
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

    def update(self: BinnedT, chunk: ScoresInput, labels: LabelsInput = None) -> BinnedT:
        """Add the pairs of ``chunk`` (any split)."""
        self._add(*as_pairs(chunk, labels))
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
        seed: object = None,
        convention: Convention = "naeini",
        edges: ArrayLike | None = None,
        n_subsamples: int = 1,
    ) -> None:
        c, strategy, norm, convention = check_binning(n_bins, strategy, norm, convention)
        _streamable(strategy, balanced, "ECEAccumulator")
        if check_positive_int(n_subsamples, "n_subsamples") != 1:
            raise ValueError(f"ECEAccumulator: n_subsamples applies only to balanced=True, which cannot stream; "
                             f"got n_subsamples={n_subsamples!r}")
        super().__init__(c, strategy, convention, edges)
        self.norm = norm
        self._gap_only = norm == "l1"

    def _key(self) -> tuple[object, ...]:
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

    def __init__(self, *, n_bins: int = 10, strategy: Strategy = "uniform", edges: ArrayLike | None = None) -> None:
        c, strategy, _, _ = check_binning(n_bins, strategy, "l1", "naeini")
        super().__init__(c, strategy, "naeini", edges)

    def _key(self) -> tuple[object, ...]:
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

    def update(self: PairMeanT, chunk: ScoresInput, labels: LabelsInput = None) -> PairMeanT:
        """Add the pairs of ``chunk``."""
        p, y = as_pairs(chunk, labels)
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

    def _key(self) -> tuple[object, ...]:
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
        e = check_real(e, "eps", minimum=0, maximum=0.5, exclusive_minimum=True, exclusive_maximum=True)
        super().__init__()
        self.eps = e

    def _key(self) -> tuple[object, ...]:
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
        c, strategy, norm, convention = check_binning(n_bins, strategy, norm, convention)
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

    def _key(self) -> tuple[object, ...]:
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

    def update(self, chunk: ScoresInput, labels: LabelsInput = None) -> CalibrationByRankAccumulator:
        """Add the queries of ``chunk`` (whole queries only)."""
        lists, p, y = as_structured(chunk, labels)
        rank = pair_ranks(lists)
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
