"""The conformance check of metrics: :func:`check_metric`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from uncertank._types import Predictions, QuerySet, RankedLists
from uncertank.testing._errors import ConformanceError

__all__ = ["check_metric"]


def _toy_lists(seed: int) -> tuple[QuerySet, NDArray[np.int64], NDArray[np.float64]]:
    """Twelve queries of 3 to 8 candidates (one relevant and one not at least), their labels, scores in (0, 1)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 9, size=12)
    labels = []
    for n in lengths:
        lab = (rng.random(n) < 0.3).astype(int)
        lab[rng.integers(n)] = 1
        lab[(np.flatnonzero(lab == 1)[0] + 1) % n] = 0
        labels.append(lab.tolist())
    queries = QuerySet.from_lists([f"q{i}" for i in range(lengths.size)],
                                  [[f"c{j}" for j in range(n)] for n in lengths], labels)
    flat = np.array([v for lab in labels for v in lab], dtype=np.int64)
    scores = np.clip(0.6 * flat + 0.4 * rng.random(queries.n_pairs), 0.01, 0.99)
    return queries, flat, scores


def _who_metric(metric: object) -> str:
    return f"metric {getattr(metric, 'name', type(metric).__name__)!r}"


def _metric_fail(metric: object, check: str, message: str) -> ConformanceError:
    return ConformanceError(f"{_who_metric(metric)} fails check {check!r}: {message}")


def check_metric(metric: object, *, name: str | None = None, seed: int = 0, atol: float = 1e-9) -> list[str]:
    """Check that a metric keeps the contract of the ``uncertank_metrics`` hook.

    The metric is wrapped as the registry wraps it
    (:func:`uncertank.metrics.as_metric`) and evaluated on seeded lists of
    different lengths with scores in (0, 1). The checks:

    ``value``
        A finite float, the same on a second call.
    ``inputs agree``
        The same value from a :class:`~uncertank.RankedLists`, from
        :class:`~uncertank.Predictions` with their labels, and, on lists of
        equal length, from dense (n_queries, n_candidates) arrays.
    ``per query`` (every ranking metric: a study reads per-query values)
        ``per_query=True`` gives a finite array of shape (n_queries,) whose
        mean is the metric's value.
    ``direction``
        Scores equal to the labels are at least as good as scores equal to
        one minus the labels, in the direction ``higher_is_better`` says.
    ``label``
        A non-empty column label.

    Parameters
    ----------
    metric : Metric or callable
        What the plugin registers.
    name : str, optional
        Its registry name (for a bare callable); ``metric.name`` otherwise.
    seed : int
        Seeds the lists.
    atol : float
        Tolerance of the comparisons.

    Returns
    -------
    list of str
        The checks that ran and passed.

    Raises
    ------
    ConformanceError
        When a check fails, or the metric raises inside one (the original
        kept as ``__cause__``).
    TypeError
        When ``metric`` is not callable.

    Examples
    --------
    >>> from uncertank.plugins import get_factory
    >>> check_metric(get_factory("metrics", "map"))
    ['value', 'inputs agree', 'per query', 'direction', 'label']
    """
    from uncertank.metrics import Metric, as_metric

    if not callable(metric):
        raise TypeError(f"metric must be a Metric or a callable; got {type(metric).__name__}")
    label = name or getattr(metric, "name", None) or getattr(metric, "__name__", "metric")
    m: Metric = as_metric(metric, name=str(label))
    done: list[str] = []
    order = ["value", "inputs agree"] + (["per query"] if m.kind == "ranking" or m.per_query else []) + [
        "direction", "label"]
    try:
        _metric_checks(m, seed, atol, done)
    except ConformanceError:
        raise
    except Exception as exc:  # the metric's own error: name it, keep it as the cause
        check = order[min(len(done), len(order) - 1)]
        raise _metric_fail(m, check, f"raised {type(exc).__name__}: {exc}") from exc
    return done


def _metric_checks(m: Any, seed: int, atol: float, done: list[str]) -> None:
    """The checks of :func:`check_metric`, appending each one passed to ``done``."""
    queries, labels, scores = _toy_lists(seed)
    ranked = queries.ranked(scores)
    value = m(ranked)
    if not isinstance(value, (float, np.floating)) or not np.isfinite(value):
        raise _metric_fail(m, "value", f"must return a finite float; got {value!r}")
    again = m(ranked)
    if abs(float(again) - float(value)) > atol:
        raise _metric_fail(m, "value", f"must give the same value twice; got {value!r} and {again!r}")
    done.append("value")
    from_pred = m(Predictions(scores, queries.offsets), labels)
    dense_q, dense_s = _toy_dense(seed)
    dense_ranked = RankedLists.from_dense(dense_s, dense_q)
    from_dense = m(dense_s, dense_q)
    if abs(float(from_pred) - float(value)) > atol or abs(float(from_dense) - float(m(dense_ranked))) > atol:
        raise _metric_fail(m, "inputs agree", "RankedLists, Predictions with labels and dense arrays must give "
                           f"the same value; got {value!r}, {from_pred!r} (and dense {from_dense!r} vs "
                           f"{m(dense_ranked)!r})")
    done.append("inputs agree")
    if m.kind == "ranking" or m.per_query:
        if not m.per_query:
            raise _metric_fail(m, "per query", "a ranking metric must accept per_query=True (a study reads "
                               "per-query values for its significance tests)")
        per = np.asarray(m(ranked, per_query=True), dtype=np.float64)
        if per.shape != (queries.n_queries,) or not np.isfinite(per).all():
            raise _metric_fail(m, "per query", f"per_query=True must give {queries.n_queries} finite values, "
                               f"shape ({queries.n_queries},); got shape {per.shape}")
        if m.kind == "ranking" and abs(float(per.mean()) - float(value)) > atol:
            raise _metric_fail(m, "per query", f"the mean of the per-query values ({per.mean():.6g}) must be "
                               f"the metric's value ({float(value):.6g})")
        done.append("per query")
    y = labels.astype(np.float64)
    good, bad = float(m(queries.ranked(np.clip(y, 0.0, 1.0)))), float(m(queries.ranked(1.0 - y)))
    if (good < bad - atol) if m.higher_is_better else (good > bad + atol):
        raise _metric_fail(m, "direction", f"scores equal to the labels give {good:.6g}, their opposite "
                           f"{bad:.6g}: higher_is_better={m.higher_is_better} says the first is better")
    done.append("direction")
    shown = m.display_label
    if not isinstance(shown, str) or not shown.strip():
        raise _metric_fail(m, "label", f"the column label must be a non-empty str; got {shown!r}")
    done.append("label")


def _toy_dense(seed: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    rng = np.random.default_rng(seed + 1)
    labels = (rng.random((6, 5)) < 0.3).astype(np.int64)
    labels[:, 0] = 1
    labels[:, 1] = 0
    scores = np.clip(0.5 * labels + 0.5 * rng.random((6, 5)), 0.01, 0.99)
    return labels, scores
