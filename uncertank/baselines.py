"""Non-neural baseline rankers, registered through ``uncertank_rankers``."""

from __future__ import annotations

from typing import Any

from uncertank.hookspecs import hookimpl


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the built-in baseline rankers."""
    return {}
