"""Evaluators: ranking metrics (R_n@k, MAP, MRR, nDCG, RBP) and calibration metrics.

Every metric accepts a :class:`~uncertank.RankedLists`, a
:class:`~uncertank.Predictions` with its labels, or dense arrays of shape
(n_queries, n_candidates); the calibration metrics also accept flat arrays
of shape (n_pairs,). See :mod:`uncertank.metrics.ranking` for the tie rule,
:mod:`uncertank.metrics.calibration` for the ECE conventions,
:mod:`uncertank.metrics.metric` for the registry entries (:class:`Metric`,
:func:`resolve_metrics`).
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

__all__ = [
    "DEFAULT_STUDY_METRICS",
    "Metric",
    "as_metric",
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
