"""Evaluators: ranking metrics (R_n@k, MAP, MRR, nDCG, RBP) and calibration metrics.

Every metric accepts a :class:`~uncertank.RankedLists`, a
:class:`~uncertank.Predictions` with its labels, or dense arrays of shape
(n_queries, n_candidates); the calibration metrics also accept flat arrays
of shape (n_pairs,). See :mod:`uncertank.metrics.ranking` for the tie rule,
:mod:`uncertank.metrics.calibration` for the ECE conventions,
:mod:`uncertank.metrics.metric` for the registry entries (:class:`Metric`,
:func:`resolve_metrics`), :mod:`uncertank.metrics.streaming` and
:mod:`uncertank.metrics.sharded` for evaluating data that do not fit in
memory (mergeable accumulators, a Parquet/CSV reader, Dask).
"""

from __future__ import annotations

from uncertank.metrics.calibration import (
    ImbalanceSweep,
    ReliabilityCurve,
    brier_score,
    calibration_by_rank,
    expected_calibration_error,
    imbalance_sweep,
    negative_log_likelihood,
    reliability_curve,
)
from uncertank.metrics.metric import DEFAULT_STUDY_METRICS, Metric, as_metric, resolve_metrics
from uncertank.metrics.ranking import (
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    rank_biased_precision,
    recall_at_k,
)
from uncertank.metrics.sharded import evaluate_dask
from uncertank.metrics.streaming import (
    BrierAccumulator,
    CalibrationByRankAccumulator,
    ECEAccumulator,
    NLLAccumulator,
    PerQueryMean,
    ReliabilityAccumulator,
    evaluate_stream,
    quantile_edges,
    read_scored_pairs,
)

__all__ = [
    "DEFAULT_STUDY_METRICS",
    "BrierAccumulator",
    "CalibrationByRankAccumulator",
    "ECEAccumulator",
    "Metric",
    "NLLAccumulator",
    "PerQueryMean",
    "ReliabilityAccumulator",
    "as_metric",
    "evaluate_dask",
    "evaluate_stream",
    "quantile_edges",
    "read_scored_pairs",
    "resolve_metrics",
    "ImbalanceSweep",
    "ReliabilityCurve",
    "brier_score",
    "calibration_by_rank",
    "expected_calibration_error",
    "imbalance_sweep",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "ndcg_at_k",
    "negative_log_likelihood",
    "rank_biased_precision",
    "recall_at_k",
    "reliability_curve",
]
