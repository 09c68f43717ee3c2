"""What a ranker's uncertainty is worth: risk-aware reranking, NOTA and selective prediction.

Predictive means, variances and per-query covariance blocks come from
:class:`uncertank.PredictiveSamples`.
"""

from __future__ import annotations

from uncertank.uncertainty.nota import (
    NotaComparison,
    NotaResult,
    NotaTask,
    compare_nota,
    evaluate_nota,
    make_nota_task,
)
from uncertank.uncertainty.risk import RiskSelection, risk_aware_rerank, select_risk_aversion
from uncertank.uncertainty.selective import RiskCoverage, query_certainty, risk_coverage_curve, top1_loss

__all__ = [
    "NotaComparison",
    "NotaResult",
    "NotaTask",
    "RiskCoverage",
    "RiskSelection",
    "compare_nota",
    "evaluate_nota",
    "make_nota_task",
    "query_certainty",
    "risk_aware_rerank",
    "risk_coverage_curve",
    "select_risk_aversion",
    "top1_loss",
]
