"""Evaluators: ranking metrics (R_n@k, P@k, recall, MAP, MRR, nDCG, RBP) and calibration metrics.

Every metric accepts a :class:`~uncertank.RankedLists`, a
:class:`~uncertank.Predictions` with its labels, or dense arrays of shape
(n_queries, n_candidates); the calibration metrics also accept flat arrays
of shape (n_pairs,). See :mod:`uncertank.metrics.ranking` for the tie rule,
:mod:`uncertank.metrics.calibration` for the ECE conventions,
:mod:`uncertank.metrics.measures` for the one entry of each measure (its
canonical identifier, label, function, accumulator and metadata:
:data:`MEASURES`), :mod:`uncertank.metrics.metric` for the registry entries
(:class:`Metric`, :func:`resolve_metrics`), :mod:`uncertank.metrics.names` for ir_measures'
names (``nDCG@10``, ``AP``, ``P@5``), :mod:`uncertank.metrics.streaming` and
:mod:`uncertank.metrics.sharded` for evaluating data that do not fit in
memory (mergeable accumulators, a Parquet/CSV reader, Dask).
"""

from __future__ import annotations

# Each submodule's ``__all__`` is its public API, re-exported here as listed there.
from uncertank.metrics import calibration, ranking, sharded, streaming
from uncertank.metrics.accumulators import (
    Accumulator,
    BrierAccumulator,
    CalibrationByRankAccumulator,
    ECEAccumulator,
    NLLAccumulator,
    PerQueryMean,
    ReliabilityAccumulator,
)
from uncertank.metrics.calibration import *  # noqa: F403
from uncertank.metrics.measures import MEASURES, Measure, MeasureRegistry, measure_id
from uncertank.metrics.metric import DEFAULT_STUDY_METRICS, Metric, as_metric, resolve_metrics
from uncertank.metrics.names import IR_MEASURES, parse_ir_measure
from uncertank.metrics.quantiles import quantile_edges
from uncertank.metrics.ranking import *  # noqa: F403
from uncertank.metrics.scored_pairs import read_scored_pairs
from uncertank.metrics.sharded import *  # noqa: F403
from uncertank.metrics.streaming import *  # noqa: F403

__all__ = ["DEFAULT_STUDY_METRICS", "IR_MEASURES", "Metric", "as_metric", "parse_ir_measure", "resolve_metrics"]
__all__ += ["MEASURES", "Measure", "MeasureRegistry", "measure_id"]
__all__ += ["Accumulator", "BrierAccumulator", "CalibrationByRankAccumulator", "ECEAccumulator", "NLLAccumulator",
            "PerQueryMean", "ReliabilityAccumulator", "quantile_edges", "read_scored_pairs"]
__all__ += streaming.__all__
__all__ += sharded.__all__
__all__ += calibration.__all__
__all__ += ranking.__all__
