"""Built-in metrics, registered through the ``uncertank_metrics`` hook as :class:`Metric` objects.

Every registered metric is called as ``metric(scores, labels=None, *,
per_query=False, **options)``; see :mod:`uncertank.metrics.metric`. Each is
built from its measure's one entry in :data:`uncertank.metrics.measures.MEASURES`
(function, label, options, accumulator and metadata live there).
"""

from __future__ import annotations

from uncertank.hookspecs import hookimpl
from uncertank.metrics.measures import MEASURES
from uncertank.metrics.metric import Metric

__all__ = ["BUILTIN_METRICS", "uncertank_metrics"]

#: Registry name -> Metric, one per measure of MEASURES.
BUILTIN_METRICS: dict[str, Metric] = {m.name: Metric.from_measure(m) for m in MEASURES.values()}


@hookimpl
def uncertank_metrics() -> dict[str, Metric]:
    """Register the built-in ranking and calibration metrics."""
    return dict(BUILTIN_METRICS)
