"""Built-in metrics, registered through the ``uncertank_metrics`` hook.

Each registered metric is called as ``metric(scores, labels, **options)``
and returns a float (or, for the ranking metrics, an array with
``per_query=True``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import RankedLists
from uncertank.hookspecs import hookimpl
from uncertank.metrics.calibration import (
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
)
from uncertank.metrics.ranking import (
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    rank_biased_precision,
    recall_at_k,
)


def rbp(
    scores: RankedLists | ArrayLike, labels: ArrayLike | None = None, **options: Any
) -> float | NDArray[np.float64]:
    """Rank-biased precision without its residual; see :func:`rank_biased_precision`."""
    return rank_biased_precision(scores, labels, **options)[0]


def rbp_residual(
    scores: RankedLists | ArrayLike, labels: ArrayLike | None = None, **options: Any
) -> float | NDArray[np.float64]:
    """The residual of rank-biased precision; see :func:`rank_biased_precision`."""
    return rank_biased_precision(scores, labels, **options)[1]


def mce(probs: RankedLists | ArrayLike, labels: ArrayLike | None = None, **options: Any) -> float:
    """Maximum calibration error: :func:`expected_calibration_error` with ``norm="max"``."""
    return expected_calibration_error(probs, labels, norm="max", **options)


BUILTIN_METRICS: dict[str, Callable[..., Any]] = {
    "recall_at_k": recall_at_k,
    "map": mean_average_precision,
    "mrr": mean_reciprocal_rank,
    "ndcg": ndcg_at_k,
    "rbp": rbp,
    "rbp_residual": rbp_residual,
    "ece": expected_calibration_error,
    "mce": mce,
    "brier": brier_score,
    "nll": negative_log_likelihood,
}


@hookimpl
def uncertank_metrics() -> dict[str, Callable[..., Any]]:
    """Register the built-in ranking and calibration metrics."""
    return dict(BUILTIN_METRICS)
