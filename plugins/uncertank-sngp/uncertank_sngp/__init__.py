"""SNGP and GPF-BERT cross-encoders (rankers ``sngp`` and ``gpf_bert``) for uncertank.

Importing this package is light: torch loads when a class is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["GPFBertRanker", "RandomFeatureGP", "SNGPModel", "SNGPRanker", "SoftSpectralNorm", "focal_loss"]

_WHERE = {
    "GPFBertRanker": "uncertank_sngp.ranker",
    "SNGPRanker": "uncertank_sngp.ranker",
    "RandomFeatureGP": "uncertank_sngp.head",
    "SNGPModel": "uncertank_sngp.head",
    "SoftSpectralNorm": "uncertank_sngp.head",
    "focal_loss": "uncertank_sngp.head",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'uncertank_sngp' has no attribute {name!r}")
