"""The ranker protocols every plugin implements.

They are :class:`typing.Protocol` classes checked structurally at run time
(``isinstance(obj, Ranker)``): a ranker need not inherit from anything.
"""

from __future__ import annotations

from os import PathLike
from typing import Any, Protocol, runtime_checkable

from typing_extensions import Self

from uncertank._types import Predictions, PredictiveSamples, QuerySet

__all__ = ["NotFittedError", "Ranker", "StochasticRanker", "TrainableRanker"]


class NotFittedError(ValueError, AttributeError):
    """A ranker was asked to predict before it was fitted, loaded or given trained weights.

    Subclasses ValueError and AttributeError, as scikit-learn's
    ``NotFittedError`` does, so existing ``except ValueError`` handlers keep working.
    """


@runtime_checkable
class Ranker(Protocol):
    """Scores every candidate of every query.

    Attributes
    ----------
    name : str
        A short name used in reports.
    """

    name: str

    def predict(self, queries: QuerySet) -> Predictions:
        """Return the (mean) probability of relevance of every pair, shape (n_pairs,)."""
        ...


@runtime_checkable
class StochasticRanker(Ranker, Protocol):
    """A ranker with a predictive distribution over its scores."""

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Return joint draws of shape (n_samples, n_pairs).

        Each row is one joint draw across all pairs (one dropout mask, one
        ensemble member, one posterior draw). ``n_samples=None`` uses the
        ranker's own default (T passes, M members, ...).
        """
        ...


@runtime_checkable
class TrainableRanker(Ranker, Protocol):
    """A ranker that can be fitted, saved and loaded."""

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Train on labelled queries; return self."""
        ...

    def save(self, path: str | PathLike[str]) -> None:
        """Write everything needed to rebuild the ranker into the folder ``path``."""
        ...

    @classmethod
    def load(cls, path: str | PathLike[str], **params: Any) -> Self:
        """Rebuild a ranker written by :meth:`save`.

        ``params`` are constructor parameters that override what the
        checkpoint stored (``device``, ``show_progress``, ...): a study's
        ``[[rankers]] checkpoint = ...`` with ``params`` calls
        ``load(folder, **params)`` (the checkpoint contract, docs/plugins.md).
        """
        ...
