"""A model's data reduced to cells, and the one linear predictor over them.

The three models of :mod:`uncertank.bayes.models` share their data layer,
written here once:

- :class:`Design`: the data reduced to *cells*, the distinct rows of the
  linear predictor (one per system and topic, and per rank for
  ``zoib_rank``), with the sufficient statistics of each cell: counts of
  zeros and ones and sums of ``log y`` and ``log(1 - y)`` over the interior
  scores for the beta families; count, mean and sum of squared deviations
  for the Gaussian;
- :func:`design`: builds one from labels and scores (and ranks);
- :func:`linear_predictor`: ``eta = Intercept + r_system[s] + r_topic[t]``
  (plus the rank term), one function that runs on PyTensor tensors (inside
  the PyMC model of :mod:`uncertank.bayes.models`) and on NumPy draws (for
  the posterior predictive of :mod:`uncertank.bayes.predictive`).

Nothing here needs PyMC.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.validation import as_float_array, check_choice, check_instance, check_probabilities

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.bayes.likelihood import TensorGraph

__all__ = ["FAMILIES", "Design", "design", "linear_predictor"]

#: The model families, by the name :func:`uncertank.bayes.compare` takes.
FAMILIES: tuple[str, ...] = ("gaussian", "zoib", "zoib_rank")

#: How rank enters the linear predictor of ``zoib_rank``.
RankEffect = Literal["linear", "categorical"]

# The linear predictor's parameters and value: NumPy draws (the predictive) or PyTensor tensors (the model).
_Values = TypeVar("_Values", "NDArray[np.float64]", "TensorGraph")


@dataclass(frozen=True, eq=False)
class Design:
    """A model's data reduced to cells, the distinct rows of its linear predictor.

    Built by :func:`design`. A cell is one system and topic (and one rank for
    ``zoib_rank``); every observation belongs to one cell, and the
    likelihood needs only each cell's sufficient statistics.

    Attributes
    ----------
    family : str
        One of :data:`FAMILIES`.
    systems, topics : tuple
        Sorted distinct labels (the ``system`` and ``topic`` coords).
    ranks : tuple of int
        Sorted distinct ranks (``zoib_rank``; empty otherwise).
    rank_effect : {"linear", "categorical"}
        How rank enters the linear predictor (``zoib_rank``).
    one_inflation : bool
        Whether exact 1s are inflated too (``coi`` exists).
    score : ndarray of shape (n_obs,)
        The scores, in input order.
    obs_cell : ndarray of shape (n_obs,)
        Cell of each observation.
    cell_system, cell_topic : ndarray of shape (n_cells,)
        System and topic code of each cell.
    cell_rank : ndarray of shape (n_cells,) or (n_cells, n_ranks - 1) or None
        The rank covariate of each cell, centred over the observations as
        brms centres it: ``rank - mean(rank)`` (linear) or centred dummy
        columns of the ranks after the first (categorical).
    n, n0, n1 : ndarray of shape (n_cells,)
        Observations, exact zeros and exact ones per cell.
    sum_log_y, sum_log1m_y : ndarray of shape (n_cells,)
        Sums of ``log y`` and ``log(1 - y)`` over the interior scores
        (``0 < y < 1``) of each cell (beta families).
    mean, ss : ndarray of shape (n_cells,)
        Mean and sum of squared deviations from it per cell (Gaussian).
    """

    family: str
    systems: tuple[Hashable, ...]
    topics: tuple[Hashable, ...]
    ranks: tuple[int, ...]
    rank_effect: str
    one_inflation: bool
    score: NDArray[np.float64]
    obs_cell: NDArray[np.int64]
    cell_system: NDArray[np.int64]
    cell_topic: NDArray[np.int64]
    cell_rank: NDArray[np.float64] | None
    n: NDArray[np.int64]
    n0: NDArray[np.int64]
    n1: NDArray[np.int64]
    sum_log_y: NDArray[np.float64]
    sum_log1m_y: NDArray[np.float64]
    mean: NDArray[np.float64]
    ss: NDArray[np.float64]

    @property
    def n_obs(self) -> int:
        """Number of observations."""
        return int(self.score.size)

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return int(self.cell_system.size)

    @property
    def n_interior(self) -> NDArray[np.int64]:
        """Interior scores (``0 < y < 1``) per cell, shape (n_cells,)."""
        return self.n - self.n0 - self.n1


def _encode(values: ArrayLike, name: str, n: int) -> tuple[NDArray[np.int64], tuple[Hashable, ...]]:
    """Integer codes and sorted unique labels of a 1-D label array of length ``n``."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with one entry per score ({n}); got shape {arr.shape}")
    labels, codes = np.unique(arr, return_inverse=True)
    if labels.size < 2:
        raise ValueError(f"{name} must hold at least 2 distinct values; got {labels.size}")
    return codes.astype(np.int64), tuple(x.item() if hasattr(x, "item") else x for x in labels)


def _scores(score: ArrayLike, *, unit: bool) -> NDArray[np.float64]:
    y = as_float_array(score, "score")
    if unit:
        check_probabilities(y, "score (a beta family's)")
    return y


def design(
    system: ArrayLike,
    topic: ArrayLike,
    score: ArrayLike,
    rank: ArrayLike | None = None,
    *,
    family: Literal["gaussian", "zoib", "zoib_rank"],
    rank_effect: RankEffect = "linear",
    one_inflation: bool | None = None,
) -> Design:
    """Reduce the data of one model to cells and their sufficient statistics.

    Parameters
    ----------
    system, topic : array_like of shape (n_obs,)
        Labels of each score (any sortable values).
    score : array_like of shape (n_obs,)
        The scores: finite, and in [0, 1] for the beta families.
    rank : array_like of shape (n_obs,), optional
        Rank (integers >= 1) of each score; required for ``"zoib_rank"``,
        ignored otherwise.
    family : {"gaussian", "zoib", "zoib_rank"}
        The model.
    rank_effect : {"linear", "categorical"}
        ``zoib_rank`` only; see :func:`~uncertank.bayes.zoib_rank`.
    one_inflation : bool, optional
        ``zoib_rank`` only; see :func:`~uncertank.bayes.zoib_rank` (``zoib`` always inflates 1s).

    Returns
    -------
    Design
    """
    check_choice(family, "family", FAMILIES)
    check_choice(rank_effect, "rank_effect", ("linear", "categorical"))
    y = _scores(score, unit=family != "gaussian")
    s_code, systems = _encode(system, "system", y.size)
    t_code, topics = _encode(topic, "topic", y.size)
    ranks: tuple[int, ...] = ()
    keys = [s_code, t_code]
    r = np.zeros(0, dtype=np.int64)
    if family == "zoib_rank":
        if rank is None:
            raise ValueError("rank must be given for family 'zoib_rank'")
        r_raw = np.asarray(rank)
        if r_raw.shape != y.shape:
            raise ValueError(f"rank must have one entry per score ({y.size}); got shape {r_raw.shape}")
        if not np.issubdtype(r_raw.dtype, np.number) or (r_raw != np.round(r_raw)).any() or (r_raw < 1).any():
            raise ValueError("rank must hold integers >= 1")
        r = r_raw.astype(np.int64)
        ranks = tuple(int(v) for v in np.unique(r))
        keys.append(r)
        if rank_effect == "categorical" and len(ranks) < 2:
            raise ValueError("rank must hold at least 2 distinct values for rank_effect='categorical'")
    has_one = bool((y == 1.0).any())
    if family == "zoib":
        inflate_one = True
    elif family == "zoib_rank":
        if one_inflation is None:
            inflate_one = has_one
        elif not one_inflation and has_one:
            raise ValueError(
                "one_inflation=False gives a 1 zero probability, but score holds "
                f"{int((y == 1.0).sum())} values equal to 1; pass one_inflation=True or None"
            )
        else:
            inflate_one = bool(one_inflation)
    else:
        inflate_one = False
    cells, obs_cell = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
    obs_cell = obs_cell.reshape(-1).astype(np.int64)
    n_cells = cells.shape[0]
    cell_rank: NDArray[np.float64] | None = None
    if family == "zoib_rank":
        if rank_effect == "linear":
            centred = r - r.mean()
        else:
            dummies = (r[:, None] == np.asarray(ranks[1:])[None, :]).astype(np.float64)
            centred = dummies - dummies.mean(axis=0)
        cell_rank = np.zeros((n_cells, *centred.shape[1:]), dtype=np.float64)
        cell_rank[obs_cell] = centred  # every observation of a cell has the same rank
    interior = (y > 0) & (y < 1)
    y_in = np.where(interior, y, 0.5)

    def per_cell(values: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(np.bincount(obs_cell, weights=values.astype(np.float64), minlength=n_cells),
                          dtype=np.float64)

    n = np.bincount(obs_cell, minlength=n_cells).astype(np.int64)
    mean = per_cell(y) / n
    return Design(
        family=family, systems=systems, topics=topics, ranks=ranks, rank_effect=rank_effect,
        one_inflation=inflate_one, score=y, obs_cell=obs_cell,
        cell_system=cells[:, 0].astype(np.int64), cell_topic=cells[:, 1].astype(np.int64), cell_rank=cell_rank,
        n=n, n0=np.bincount(obs_cell[y == 0.0], minlength=n_cells).astype(np.int64),
        n1=np.bincount(obs_cell[y == 1.0], minlength=n_cells).astype(np.int64),
        sum_log_y=per_cell(np.where(interior, np.log(y_in), 0.0)),
        sum_log1m_y=per_cell(np.where(interior, np.log1p(-y_in), 0.0)),
        mean=mean, ss=per_cell((y - mean[obs_cell]) ** 2),
    )


def design_from_frame(family: str, data: pd.DataFrame, **options: object) -> Design:
    """:func:`design` of a frame from :func:`~uncertank.bayes.check_frame` (internal)."""
    rank = data["rank"].to_numpy() if family == "zoib_rank" else None
    opts = {k: v for k, v in options.items() if k in ("rank_effect", "one_inflation")}
    return design(data["system"].to_numpy(), data["topic"].to_numpy(), data["score"].to_numpy(), rank,
                  family=family, **opts)  # type: ignore[arg-type]  # design() checks the option values


def linear_predictor(params: Mapping[str, _Values], d: Design) -> _Values:
    """The linear predictor of every cell: the one definition the model and its predictive share.

    ``eta = Intercept + r_system[s] + r_topic[t]`` plus, for ``zoib_rank``,
    ``b_rank * (rank - mean rank)`` (linear) or the centred rank dummies
    times ``b_rank[1:]`` (categorical). The same code runs on PyTensor
    tensors (the PyMC model) and on NumPy arrays with leading draw axes (the
    posterior predictive).

    Parameters
    ----------
    params : mapping
        ``Intercept`` of shape (...), ``r_system`` (..., n_systems),
        ``r_topic`` (..., n_topics) and, for ``zoib_rank``, ``b_rank`` of
        shape (...) (linear) or (..., n_ranks) (categorical, first entry 0).
        NumPy arrays or PyTensor tensors.
    d : Design
        The cells.

    Returns
    -------
    ndarray or TensorVariable of shape (..., n_cells)
    """
    check_instance(d, "d", Design, "a Design (uncertank.bayes.design)")
    check_instance(params, "params", Mapping, "a mapping of parameter names to draws")
    eta: _Values = (params["Intercept"][..., None] + params["r_system"][..., d.cell_system]
                    + params["r_topic"][..., d.cell_topic])
    if d.family == "zoib_rank":
        assert d.cell_rank is not None
        b = params["b_rank"]
        if d.rank_effect == "linear":
            eta = eta + b[..., None] * d.cell_rank
        else:
            eta = eta + (b[..., None, 1:] * d.cell_rank).sum(axis=-1)
    return eta

