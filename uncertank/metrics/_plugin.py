"""Built-in metrics, registered through the ``uncertank_metrics`` hook."""

from __future__ import annotations

from typing import Any

from uncertank.hookspecs import hookimpl


@hookimpl
def uncertank_metrics() -> dict[str, Any]:
    """Register the built-in ranking and calibration metrics."""
    return {}
