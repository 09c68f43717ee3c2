"""Checks for the optional dependencies of :mod:`uncertank.nn`."""

from __future__ import annotations

import importlib.util

__all__ = ["require_torch"]

_MODULES = ("torch", "transformers", "accelerate", "safetensors", "tqdm")


def require_torch() -> None:
    """Raise ImportError naming the install line when the ``torch`` extra is missing."""
    missing = [m for m in _MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"uncertank.nn needs {', '.join(missing)}, which is not installed; "
            'install it with: pip install "uncertank[torch]"'
        )
