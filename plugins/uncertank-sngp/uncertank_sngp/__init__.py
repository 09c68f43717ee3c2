"""SNGP and GPF-BERT cross-encoders (rankers ``sngp`` and ``gpf_bert``) for uncertank.

Importing this package is light: torch loads when a class is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = ["GPFBertRanker", "RandomFeatureGP", "SNGPModel", "SNGPRanker", "SoftSpectralNorm", "focal_loss"]

__getattr__ = lazy_exports(__name__, {
    "GPFBertRanker": "uncertank_sngp.ranker",
    "SNGPRanker": "uncertank_sngp.ranker",
    "RandomFeatureGP": "uncertank_sngp.head",
    "SNGPModel": "uncertank_sngp.head",
    "SoftSpectralNorm": "uncertank_sngp.head",
    "focal_loss": "uncertank_sngp.head",
})
