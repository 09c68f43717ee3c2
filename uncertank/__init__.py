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
from uncertank.files import file_digest
from uncertank.hookspecs import hookimpl
from uncertank.plugins import get_plugin_manager, list_plugins, make_ranker
from uncertank.protocols import (
    CostEstimating,
    CostRates,
    NotFittedError,
    Probabilistic,
    Ranker,
    Saveable,
    StochasticRanker,
    Trainable,
    TrainableRanker,
    WarmStartable,
)

__version__ = "0.1.0"  # the only place the version is written: pyproject.toml reads it from here

__all__ = [
    "CallableRanker",
    "CostEstimating",
    "CostRates",
    "CrossEncoderRanker",
    "EnsembleRanker",
    "FolderInUseError",
    "NotFittedError",
    "PredictiveSamples",
    "Predictions",
    "Probabilistic",
    "QuerySet",
    "RankedLists",
    "Ranker",
    "Saveable",
    "StochasticRanker",
    "Trainable",
    "TrainableRanker",
    "WarmStartable",
    "__version__",
    "file_digest",
    "get_plugin_manager",
    "hookimpl",
    "list_plugins",
    "make_ranker",
]
