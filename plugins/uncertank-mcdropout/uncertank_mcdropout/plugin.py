"""The entry point ``mc_dropout`` of the group ``uncertank`` (torch loads on first use)."""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


def mc_dropout(*, show_progress: bool = True, **params: Any) -> Any:
    """Build :class:`uncertank_mcdropout.MCDropoutRanker` with ``params``."""
    from uncertank_mcdropout.ranker import MCDropoutRanker

    return MCDropoutRanker(show_progress=show_progress, **params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the ranker ``mc_dropout``."""
    return {"mc_dropout": mc_dropout}
