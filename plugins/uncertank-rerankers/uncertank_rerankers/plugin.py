"""The entry point ``rerankers`` of the group ``uncertank``: the ranker ``rerankers``."""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


def rerankers(**params: Any) -> Any:
    """Build :class:`uncertank_rerankers.RerankersRanker` with ``params`` (the model loads on first use)."""
    from uncertank_rerankers.ranker import RerankersRanker

    return RerankersRanker(**params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the ranker ``rerankers``."""
    return {"rerankers": rerankers}
