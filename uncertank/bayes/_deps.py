"""Imports of the optional ``bayes`` dependencies, with an actionable error."""

from __future__ import annotations

import warnings
from types import ModuleType

__all__ = ["require_arviz", "require_pymc"]

_HINT = 'the Bayesian comparison needs PyMC and ArviZ: pip install "uncertank[bayes]"'


def require_pymc() -> ModuleType:
    """Import and return :mod:`pymc`, or raise ImportError naming the extra."""
    try:
        import pymc
    except ImportError as exc:
        raise ImportError(f"{_HINT} ({exc})") from exc
    return pymc


def require_arviz() -> ModuleType:
    """Import and return :mod:`arviz`, or raise ImportError naming the extra."""
    try:
        with warnings.catch_warnings():
            # ArviZ 0.2x announces its coming refactor on import; it concerns no call made here.
            warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
            import arviz
    except ImportError as exc:
        raise ImportError(f"{_HINT} ({exc})") from exc
    return arviz
