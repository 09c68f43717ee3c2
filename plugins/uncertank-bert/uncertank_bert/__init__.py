"""The BERT cross-encoder ranker ``bert`` (Penha & Hauff, EACL 2021) for uncertank.

Importing this package is light: torch loads when :class:`BertRanker` is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BertRanker"]


def __getattr__(name: str) -> Any:
    if name == "BertRanker":
        from uncertank_bert.ranker import BertRanker

        return BertRanker
    raise AttributeError(f"module 'uncertank_bert' has no attribute {name!r}")
