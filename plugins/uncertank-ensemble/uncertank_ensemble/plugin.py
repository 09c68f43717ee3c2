"""The entry point ``ensemble`` of the group ``uncertank`` (torch loads on first use)."""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


def ensemble(*, show_progress: bool | None = None, **params: Any) -> Any:
    """Build :class:`uncertank_ensemble.DeepEnsembleRanker` with ``params``."""
    from uncertank_ensemble.ranker import DeepEnsembleRanker

    return DeepEnsembleRanker(show_progress=show_progress, **params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the ranker ``ensemble``."""
    return {"ensemble": ensemble}
