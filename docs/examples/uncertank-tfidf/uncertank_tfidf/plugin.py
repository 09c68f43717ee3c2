"""The entry point ``tfidf`` of the group ``uncertank``: one function per hook.

Each hook returns factories (classes, or a :class:`uncertank.metrics.Metric`),
never built objects. The imports sit inside the hooks, so importing this
module (which ``uncertank`` does for every installed plugin) costs nothing;
the hooks themselves run only when a registry is first looked up.
"""

from __future__ import annotations

from typing import Any

from uncertank import hookimpl


@hookimpl
def uncertank_rankers() -> dict[str, Any]:
    """Register ``tfidf`` and ``tfidf-bootstrap``."""
    from uncertank_tfidf.ranker import BootstrapTfidfRanker, TfidfRanker

    return {"tfidf": TfidfRanker, "tfidf-bootstrap": BootstrapTfidfRanker}


@hookimpl
def uncertank_metrics() -> dict[str, Any]:
    """Register ``precision_at_k`` with its report metadata."""
    from uncertank_tfidf.metric import PRECISION_AT_K

    return {"precision_at_k": PRECISION_AT_K}


@hookimpl
def uncertank_recalibrators() -> dict[str, Any]:
    """Register the recalibrator ``beta``."""
    from uncertank_tfidf.recalibration import BetaCalibration

    return {"beta": BetaCalibration}


@hookimpl
def uncertank_datasets() -> dict[str, Any]:
    """Register the dataset ``ubuntu-questions``."""
    from uncertank_tfidf.dataset import ubuntu_questions

    return {"ubuntu-questions": ubuntu_questions}
