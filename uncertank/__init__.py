"""uncertank: calibration, uncertainty and risk for the scores of any ranker.

Calibration, ranking effectiveness, uncertainty, risk-aware reranking, NOTA
prediction and Bayesian comparison of systems, for any ranker. Importing this
package is light: torch, transformers and PyMC load only inside the modules
that need them.
"""

from __future__ import annotations

from uncertank._folders import FolderInUseError
from uncertank._types import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.adapters import CallableRanker, CrossEncoderRanker, EnsembleRanker
from uncertank.compare import ComparisonReport, compare_runs
from uncertank.files import file_digest
from uncertank.hookspecs import hookimpl
from uncertank.plugins import get_plugin_manager, list_plugins, make_ranker
from uncertank.protocols import (
    Capabilities,
    CapabilityError,
    Cloneable,
    CostEstimating,
    CostRates,
    ModelBuilding,
    NotFittedError,
    Probabilistic,
    ProbeScaled,
    Ranker,
    RequirementChecking,
    Saveable,
    StochasticRanker,
    Trainable,
    TrainableRanker,
    TrainingLimited,
    WarmStartable,
    capabilities,
)

__version__ = "0.1.0"  # the only place the version is written: pyproject.toml reads it from here

__all__ = [
    "CallableRanker",
    "Capabilities",
    "CapabilityError",
    "Cloneable",
    "ComparisonReport",
    "CostEstimating",
    "CostRates",
    "CrossEncoderRanker",
    "EnsembleRanker",
    "FolderInUseError",
    "ModelBuilding",
    "NotFittedError",
    "PredictiveSamples",
    "Predictions",
    "Probabilistic",
    "ProbeScaled",
    "QuerySet",
    "RankedLists",
    "Ranker",
    "RequirementChecking",
    "Saveable",
    "StochasticRanker",
    "Trainable",
    "TrainableRanker",
    "TrainingLimited",
    "WarmStartable",
    "__version__",
    "capabilities",
    "compare_runs",
    "file_digest",
    "get_plugin_manager",
    "hookimpl",
    "list_plugins",
    "make_ranker",
]
