"""MC dropout over a BERT cross-encoder (ranker ``mc_dropout``) for uncertank.

Importing this package is light: torch loads when :class:`MCDropoutRanker` is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = ["MCDropoutRanker"]

__getattr__ = lazy_exports(__name__, {"MCDropoutRanker": "uncertank_mcdropout.ranker"})
