"""PG-DRR (ranker ``pgdrr``) and a batched Pólya-Gamma sampler in PyTorch, for uncertank.

Importing this package is light: torch loads when one of its names is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PGDRRRanker", "polya_gamma_moments", "random_polya_gamma"]

_HOMES = {
    "PGDRRRanker": "uncertank_pgdrr.ranker",
    "polya_gamma_moments": "uncertank_pgdrr.polya_gamma",
    "random_polya_gamma": "uncertank_pgdrr.polya_gamma",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'uncertank_pgdrr' has no attribute {name!r}")
