"""What the figures, the risk tables and the predictive draws read of a fitted comparison.

:class:`Fitted` is the structural type those modules accept. The fitted
comparison itself, :class:`uncertank.bayes.comparison.SystemComparison`, sits
above them and calls them, so they name this interface rather than the class:
the imports of :mod:`uncertank.bayes` go one way (see :mod:`uncertank.bayes`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.bayes.cells import Design

__all__ = ["Fitted", "check_fitted"]


class Fitted(Protocol):
    """A fitted comparison as its readers see it (:class:`~uncertank.bayes.SystemComparison` is one).

    Attributes
    ----------
    family : str
        The model family.
    systems : list
        The systems, in the posterior's order.
    data : pandas.DataFrame
        The frame the model was fitted to.
    design : Design
        The model's cells.
    """

    family: str
    systems: list[Hashable]
    data: pd.DataFrame
    design: Design

    def params(self, idx: NDArray[np.int64] | None = None) -> dict[str, NDArray[np.float64]]:
        """Posterior draws of the model's parameters, in the order of :attr:`design`."""

    def system_effects(self, *, prob: float = 0.95) -> pd.DataFrame:
        """Posterior mean and credible interval of each system effect."""

    def posterior_predictive(self, n_draws: int | None = 1000, *, seed: int | None = None) -> NDArray[np.float64]:
        """Replicated scores, shape (n_draws, n_obs)."""

    def replicate_matrix(self, n_draws: int | None = 1000, *, seed: int | None = None) -> NDArray[np.float64]:
        """Replicated per-topic scores, shape (n_draws, n_systems, n_topics)."""

    def observed_matrix(self) -> NDArray[np.float64]:
        """Observed per-topic scores, shape (n_systems, n_topics)."""


#: What a fitted comparison has, as :func:`check_fitted` looks for it.
_FITTED_ATTRIBUTES = ("family", "systems", "data", "design", "params", "system_effects")


_C = TypeVar("_C")


def check_fitted(cmp: _C, name: str = "cmp", needs: tuple[str, ...] = _FITTED_ATTRIBUTES) -> _C:
    """Raise a TypeError unless ``cmp`` is a fitted comparison; return it.

    ``needs``: the attributes the caller reads (what :class:`Fitted` names, by
    default); a caller that reads fewer names them, so that any object with
    them (a comparison of one's own) is accepted.
    """
    missing = [a for a in needs if not hasattr(cmp, a)]
    if missing:
        shown = repr(cmp)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{name} must be a fitted comparison (uncertank.bayes.compare); "
                        f"got {type(cmp).__name__} {shown}")
    return cmp
