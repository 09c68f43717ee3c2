"""Deep ensembles of BERT cross-encoders (ranker ``ensemble``) for uncertank.

Importing this package is light: torch loads when :class:`DeepEnsembleRanker` is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = ["DeepEnsembleRanker"]

__getattr__ = lazy_exports(__name__, {"DeepEnsembleRanker": "uncertank_ensemble.ranker"})
