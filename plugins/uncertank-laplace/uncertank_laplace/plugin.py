"""The entry point ``laplace`` of the group ``uncertank``: the ranker ``laplace`` (torch loads on first use)."""

from __future__ import annotations

import importlib.util
from typing import Any

from uncertank import hookimpl

#: What the ranker imports when it is built: the extra ``laplace`` installs them.
NEEDS = ("torch", "transformers", "accelerate", "safetensors", "tqdm")


def laplace(*, show_progress: bool = True, **params: Any) -> Any:
    """Build :class:`uncertank_laplace.LaplaceRanker` with ``params``.

    Raises
    ------
    ImportError
        Naming ``pip install "uncertank[laplace]"`` when a dependency is missing.
    """
    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"the ranker laplace needs the optional dependency {', '.join(missing)}; "
            'install it with pip install "uncertank[laplace]"'
        )
    from uncertank_laplace.ranker import LaplaceRanker

    return LaplaceRanker(show_progress=show_progress, **params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the ranker ``laplace``."""
    return {"laplace": laplace}
