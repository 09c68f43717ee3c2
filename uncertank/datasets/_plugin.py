"""Built-in datasets and negative samplers, registered through the hooks."""

from __future__ import annotations

from typing import Any

from uncertank.hookspecs import hookimpl


@hookimpl
def uncertank_datasets() -> dict[str, Any]:
    """Register the built-in datasets."""
    return {}


@hookimpl
def uncertank_negative_samplers() -> dict[str, Any]:
    """Register the built-in negative samplers."""
    return {}
