"""The BERT cross-encoder ranker ``bert`` (Penha & Hauff, EACL 2021) for uncertank.

Importing this package is light: torch loads when :class:`BertRanker` is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = ["BertRanker"]

__getattr__ = lazy_exports(__name__, {"BertRanker": "uncertank_bert.ranker"})
