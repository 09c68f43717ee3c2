r"""Streaming evaluation: metrics over chunks of scored pairs, in one pass and constant memory.

The pieces live in modules of their own and are importable from here:
the mergeable accumulators in :mod:`uncertank.metrics.accumulators`, the
exact quantiles of equal-mass bins in :mod:`uncertank.metrics.quantiles`,
the Parquet/CSV reader in :mod:`uncertank.metrics.scored_pairs`; this
module drives them (:func:`evaluate_stream`).

The accumulators' protocol (``update``, ``merge``, ``compute``), what each
streamed value equals, which metrics need whole queries, the exact
equal-mass bins and what is not streamed are described once, in
:mod:`uncertank.metrics.accumulators` (with its example).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeAlias

from uncertank.metrics.accumulators import Accumulator, QuantileEdged
from uncertank.metrics.metric import MetricEntry, resolve_metrics
from uncertank.metrics.quantiles import Chunk, quantile_edges, reiterable
from uncertank.validation import check_instance

__all__ = ["evaluate_stream"]

#: The ``metrics`` argument of :func:`evaluate_stream`: metric entries or accumulators, in a list or named by a mapping.
MetricsArg: TypeAlias = Iterable[MetricEntry | Accumulator] | Mapping[str, MetricEntry | Accumulator]


def accumulators_for(metrics: MetricsArg) -> tuple[list[str], list[Accumulator]]:
    """Keys and empty accumulators for metric entries or accumulator instances.

    The one reading of the ``metrics`` argument of :func:`evaluate_stream`
    and :func:`~uncertank.metrics.evaluate_dask`: entries resolved by
    :func:`~uncertank.metrics.resolve_metrics`, accumulators kept as given.
    """
    items: list[tuple[str | None, MetricEntry | Accumulator]]
    if isinstance(metrics, Mapping):
        items = list(metrics.items())
    elif isinstance(metrics, (str, bytes)):
        raise TypeError(f"metrics must be a list or a mapping; got a single {type(metrics).__name__}")
    else:
        items = [(None, m) for m in check_instance(metrics, "metrics", Iterable, "a list or a mapping of metrics")]
    keys: list[str] = []
    accs: list[Accumulator] = []
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


def evaluate_stream(chunks: Iterable[Chunk] | Callable[[], Iterable[Chunk]], metrics: MetricsArg) -> dict[str, object]:
    """Evaluate ``metrics`` over an iterable of chunks (each of whole queries) in one pass.

    Parameters
    ----------
    chunks : iterable, or callable returning one
        Chunks of whole queries: RankedLists (from :func:`read_scored_pairs`)
        or ``(scores, labels)`` tuples of arrays; or a function of no
        arguments returning a new iterable of them on each call (``lambda:
        read_scored_pairs(path)``), called once per pass. Equal-mass bins
        (``strategy="quantile"``) read the chunks more than once: pass such a
        function or a list.
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
    TypeError
        ``chunks`` that is neither iterable nor a function returning an
        iterable (the message names ``chunks`` and what arrived).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> chunks = [(rng.random((50, 10)), rng.integers(0, 2, (50, 10))) for _ in range(3)]
    >>> sorted(evaluate_stream(chunks, ["map", "ece"]))
    ['ECE', 'MAP']
    """
    keys, accs = accumulators_for(metrics)
    edged = [acc for acc in accs if isinstance(acc, QuantileEdged)]
    wanted = sorted({b for acc in edged if (b := acc.needs_quantile_edges) is not None})
    if wanted:
        source = reiterable(chunks)
        for b in wanted:
            edges = quantile_edges(source, n_bins=b)
            for e in edged:
                if e.needs_quantile_edges == b:
                    e.set_edges(edges)
        chunks = source()
    elif callable(chunks):
        chunks = chunks()
    for chunk in _iterate(chunks):
        for acc in accs:
            if isinstance(chunk, tuple):
                if len(chunk) != 2:
                    raise ValueError(f"a chunk tuple must be (scores, labels); got {len(chunk)} items")
                acc.update(chunk[0], chunk[1])
            else:
                acc.update(chunk)
    return {key: acc.compute() for key, acc in zip(keys, accs, strict=True)}


def _iterate(chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """An iterator over ``chunks``, or TypeError naming the argument."""
    try:
        return iter(chunks)
    except TypeError:
        raise TypeError(
            "chunks must be an iterable of chunks (RankedLists or (scores, labels) tuples) or a function "
            f"returning one; got {type(chunks).__name__}"
        ) from None
