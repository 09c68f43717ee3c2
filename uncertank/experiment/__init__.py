"""Studies: a configuration, a runner over conditions, and the report writer."""

from __future__ import annotations

# The configuration's ``__all__`` is its public API, re-exported here as listed there.
from uncertank.experiment import config
from uncertank.experiment.config import *  # noqa: F403
from uncertank.experiment.runner import run_study

__all__ = ["run_study"]
__all__ += config.__all__
