"""Any ``rerankers.Reranker`` (AnswerDotAI's rerankers) as an uncertank ranker (``rerankers``).

Importing this package is light: rerankers loads when a model is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = ["RerankersRanker", "score_kind"]

__getattr__ = lazy_exports(__name__, {
    "RerankersRanker": "uncertank_rerankers.ranker",
    "score_kind": "uncertank_rerankers.ranker",
})
