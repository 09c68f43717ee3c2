"""The entry point ``sngp`` of the group ``uncertank``: rankers ``sngp`` and ``gpf_bert`` (torch loads on first use)."""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


def sngp(*, show_progress: bool = True, **params: Any) -> Any:
    """Build :class:`uncertank_sngp.SNGPRanker` with ``params``."""
    from uncertank_sngp.ranker import SNGPRanker

    return SNGPRanker(show_progress=show_progress, **params)


def gpf_bert(*, show_progress: bool = True, **params: Any) -> Any:
    """Build :class:`uncertank_sngp.GPFBertRanker` with ``params``."""
    from uncertank_sngp.ranker import GPFBertRanker

    return GPFBertRanker(show_progress=show_progress, **params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the rankers ``sngp`` and ``gpf_bert``."""
    return {"sngp": sngp, "gpf_bert": gpf_bert}
