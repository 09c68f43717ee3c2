"""The entry point ``pgdrr`` of the group ``uncertank`` (torch loads on first use)."""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


def pgdrr(*, show_progress: bool = True, **params: Any) -> Any:
    """Build :class:`uncertank_pgdrr.PGDRRRanker` with ``params``."""
    from uncertank_pgdrr.ranker import PGDRRRanker

    return PGDRRRanker(show_progress=show_progress, **params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the ranker ``pgdrr``."""
    return {"pgdrr": pgdrr}
