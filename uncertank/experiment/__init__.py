"""Studies: a configuration, a runner over conditions, and the report writer."""

from __future__ import annotations

from uncertank.experiment.config import (
    BayesConfig,
    ConditionConfig,
    RankerConfig,
    StudyConfig,
    demo_config,
    load_config,
)
from uncertank.experiment.runner import run_study

__all__ = [
    "BayesConfig",
    "ConditionConfig",
    "RankerConfig",
    "StudyConfig",
    "demo_config",
    "load_config",
    "run_study",
]
