"""What a ranker's uncertainty is worth: risk-aware reranking and NOTA prediction.

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

__all__ = [
    "NotaComparison",
    "NotaResult",
    "NotaTask",
    "RiskSelection",
    "compare_nota",
    "evaluate_nota",
    "make_nota_task",
    "risk_aware_rerank",
    "select_risk_aversion",
]
