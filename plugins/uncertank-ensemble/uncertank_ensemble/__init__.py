"""Deep ensembles of BERT cross-encoders (ranker ``ensemble``) for uncertank.

Importing this package is light: torch loads when :class:`DeepEnsembleRanker` is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DeepEnsembleRanker"]


def __getattr__(name: str) -> Any:
    if name == "DeepEnsembleRanker":
        from uncertank_ensemble.ranker import DeepEnsembleRanker

        return DeepEnsembleRanker
    raise AttributeError(f"module 'uncertank_ensemble' has no attribute {name!r}")
