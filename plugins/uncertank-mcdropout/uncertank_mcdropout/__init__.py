"""MC dropout over a BERT cross-encoder (ranker ``mc_dropout``) for uncertank.

Importing this package is light: torch loads when :class:`MCDropoutRanker` is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MCDropoutRanker"]


def __getattr__(name: str) -> Any:
    if name == "MCDropoutRanker":
        from uncertank_mcdropout.ranker import MCDropoutRanker

        return MCDropoutRanker
    raise AttributeError(f"module 'uncertank_mcdropout' has no attribute {name!r}")
