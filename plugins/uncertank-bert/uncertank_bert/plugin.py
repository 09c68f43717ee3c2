"""The entry point ``bert`` of the group ``uncertank``.

The factory imports torch only when a ranker is built, so listing plugins
stays fast and a missing ``torch`` extra surfaces as an ImportError naming
``pip install "uncertank[torch]"`` at that moment.
"""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


def bert(*, show_progress: bool = True, **params: Any) -> Any:
    """Build :class:`uncertank_bert.BertRanker` with ``params``."""
    from uncertank_bert.ranker import BertRanker

    return BertRanker(show_progress=show_progress, **params)


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register the ranker ``bert``."""
    return {"bert": bert}
