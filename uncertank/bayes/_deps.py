"""Imports of the optional ``bayes`` dependencies, with an actionable error (through :func:`uncertank._io.require`)."""

from __future__ import annotations

import warnings
from types import ModuleType

from uncertank._io import require

__all__ = ["require_arviz", "require_pymc"]

_WHAT = "the Bayesian comparison"


def require_pymc() -> ModuleType:
    """Import and return :mod:`pymc`, or raise ImportError naming the extra."""
    return require("pymc", "bayes", what=_WHAT)


def require_arviz() -> ModuleType:
    """Import and return :mod:`arviz`, or raise ImportError naming the extra."""
    with warnings.catch_warnings():
        # ArviZ 0.2x announces its coming refactor on import; it concerns no call made here.
        warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
        return require("arviz", "bayes", what=_WHAT)
