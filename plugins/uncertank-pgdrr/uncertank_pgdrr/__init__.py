"""PG-DRR (ranker ``pgdrr``) and a batched Pólya-Gamma sampler in PyTorch, for uncertank.

Importing this package is light: torch loads when one of its names is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = ["PGDRRRanker", "polya_gamma_moments", "random_polya_gamma"]

__getattr__ = lazy_exports(__name__, {
    "PGDRRRanker": "uncertank_pgdrr.ranker",
    "polya_gamma_moments": "uncertank_pgdrr.polya_gamma",
    "random_polya_gamma": "uncertank_pgdrr.polya_gamma",
})
