r"""Risk-aware reranking with a stochastic ranker's mean, variance and covariance.

Penha & Hauff (EACL 2021, eq. 7), after the portfolio theory of ranking of
Wang & Zhu (SIGIR 2009): the list is built greedily, rank by rank; at rank
``n`` the candidate ``r`` not yet placed that maximises

.. math::

    RA(r) = E[R_r] - b\,\mathrm{var}[R_r]
            - 2b \sum_{i < n} w_i\, \mathrm{cov}[R_r, R_{r_i}]

is placed, where ``r_i`` is the candidate at rank ``i``. ``b > 0`` penalises
risk (``b < 0`` rewards it; ``b = 0`` is ranking by the mean). ``w_i = 1``
(``weights="uniform"``) reproduces Penha & Hauff; ``weights="dcg"`` uses the
rank discount ``w_i = 1 / log2(i + 1)`` of Wang & Zhu's portfolio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import PredictiveSamples, RankedLists
from uncertank.validation import as_float_array, as_label_array, check_choice, check_instance, check_real

__all__ = ["RiskSelection", "risk_aware_rerank", "select_risk_aversion"]

Weights = Literal["uniform", "dcg"]


def _rank_weights(weights: Weights | ArrayLike, length: int) -> NDArray[np.float64]:
    if isinstance(weights, str):
        check_choice(weights, "weights", ("uniform", "dcg"))
        if weights == "uniform":
            return np.ones(length)
        return 1.0 / np.log2(np.arange(2, length + 2))
    w = as_float_array(weights, "weights")
    if w.size < length:
        raise ValueError(f"weights must hold at least one weight per rank ({length}); got {w.size}")
    return w[:length]


def _greedy(mean: NDArray[np.float64], cov: NDArray[np.float64], b: float, w: NDArray[np.float64]) -> NDArray[np.int64]:
    """Greedy portfolio order for a stack of queries of equal length.

    mean : (n_q, L); cov : (n_q, L, L); returns positions (n_q, L) of the
    candidate placed at each rank.
    """
    n_q, length = mean.shape
    var = np.einsum("qii->qi", cov)
    # ra = E - b var - 2b sum_i w_i cov[., r_i], updated column by column; placed candidates get -inf.
    ra = mean - b * var
    order = np.empty((n_q, length), dtype=np.int64)
    rows = np.arange(n_q)
    for rank in range(length):
        # argmax returns the first maximum: ties go to the earlier input position.
        pick = np.argmax(ra, axis=1)
        order[:, rank] = pick
        if rank + 1 < length:
            column = cov[rows, :, pick]
            column *= -2.0 * b * w[rank]
            ra += column
            ra[rows, pick] = -np.inf
    return order


def risk_aware_rerank(
    samples: PredictiveSamples,
    *,
    b: float,
    weights: Weights | ArrayLike = "uniform",
) -> NDArray[np.float64]:
    """Rerank every query by the greedy risk-aware objective.

    Parameters
    ----------
    samples : PredictiveSamples
        Joint draws of shape (n_samples, n_pairs) from a stochastic ranker.
    b : float
        Risk aversion. 0 ranks by the predictive mean.
    weights : {"uniform", "dcg"} or array of shape (max_list_length,)
        Rank weights ``w_i`` of the covariance term.

    Returns
    -------
    ndarray of shape (n_pairs,)
        New scores whose descending order is the risk-aware ranking (the
        promise: per query of length ``L``, a permutation of ``1..L``, for
        any finite ``b``, ties and constant draws included):
        the candidate placed at rank ``i`` (0-based) of a list of length ``L``
        scores ``L - i``. Pair them with labels via
        ``RankedLists.with_scores`` to evaluate.

    Examples
    --------
    Two candidates with equal means; the second is riskier:

    >>> import numpy as np
    >>> from uncertank import PredictiveSamples
    >>> draws = np.array([[0.5, 0.1], [0.5, 0.9], [0.5, 0.5]])
    >>> risk_aware_rerank(PredictiveSamples(draws, np.array([0, 2])), b=1.0)
    array([2., 1.])
    """
    check_instance(samples, "samples", PredictiveSamples, "a PredictiveSamples (joint draws of a stochastic ranker)")
    b = check_real(b, "b")
    mean = samples.mean()
    offsets = samples.offsets
    lengths = np.diff(offsets)
    out = np.empty(samples.n_pairs, dtype=np.float64)
    w_all = _rank_weights(weights, int(lengths.max()))
    for queries, cov in samples.covariance_stacks():  # one stack per list length
        length = cov.shape[-1]
        cols = offsets[queries][:, None] + np.arange(length)[None, :]
        order = _greedy(mean[cols], cov, b, w_all[:length])
        new = np.empty_like(order, dtype=np.float64)
        np.put_along_axis(new, order, np.arange(length, 0, -1, dtype=np.float64)[None, :], axis=1)
        out[cols] = new
    return out


@dataclass(frozen=True)
class RiskSelection:
    """The outcome of :func:`select_risk_aversion`.

    Attributes
    ----------
    b : float
        The chosen risk aversion.
    grid : ndarray of shape (n_grid,)
        The values tried.
    scores : ndarray of shape (n_grid,)
        The validation metric at each value.
    """

    b: float
    grid: NDArray[np.float64]
    scores: NDArray[np.float64]


def select_risk_aversion(
    samples: PredictiveSamples,
    labels: ArrayLike,
    metric: Callable[[RankedLists], float],
    *,
    grid: Sequence[float] | ArrayLike = (-1.0, -0.5, -0.2, -0.1, 0.0, 0.1, 0.2, 0.5, 1.0),
    weights: Weights | ArrayLike = "uniform",
) -> RiskSelection:
    """Choose ``b`` on validation data by grid search, as Penha & Hauff do.

    Parameters
    ----------
    samples : PredictiveSamples
        Validation draws, shape (n_samples, n_pairs).
    labels : array of shape (n_pairs,)
        Validation labels.
    metric : callable
        Maps a :class:`RankedLists` to a number to maximise, e.g.
        ``lambda r: recall_at_k(r, k=1)``.
    grid : sequence of float
        Candidate values of ``b``. Among values tied for the best metric, the
        one closest to 0 (the least change to the mean ranking) wins.
    weights : {"uniform", "dcg"} or array
        As in :func:`risk_aware_rerank`.

    Raises
    ------
    ValueError
        An empty grid or labels, labels of the wrong shape, or a ``metric``
        that returns NaN or inf for a value of the grid (a validation set
        on which it is undefined, e.g. without a relevant candidate): the
        message names that ``b``.
    TypeError
        A ``metric`` that is not callable or returns something that is not
        a real number.
    """
    check_instance(samples, "samples", PredictiveSamples, "a PredictiveSamples (joint draws of a stochastic ranker)")
    if not callable(metric):
        raise TypeError(f"metric must be callable (RankedLists -> float); got {type(metric).__name__}")
    lab = as_label_array(labels, "labels")
    if lab.shape != (samples.n_pairs,):
        raise ValueError(f"labels must have shape ({samples.n_pairs},); got {lab.shape}")
    g = as_float_array(grid, "grid")
    _rank_weights(weights, int(np.diff(samples.offsets).max()))  # a bad weight is refused before any reranking
    values = np.empty(g.size)
    for i, b in enumerate(g):
        value = metric(RankedLists(risk_aware_rerank(samples, b=b, weights=weights), lab, samples.offsets))
        try:
            values[i] = float(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"metric must return a real number; got {type(value).__name__} {value!r} at b={float(b)!r}"
            ) from None
        if not np.isfinite(values[i]):
            raise ValueError(
                f"metric must return a finite number to choose b; got {float(values[i])!r} at b={float(b)!r} "
                "(is it defined on these labels, e.g. with a relevant candidate per query?)"
            )
    tied = np.flatnonzero(values == values.max())
    best = int(tied[np.argmin(np.abs(g[tied]))])
    return RiskSelection(float(g[best]), g, values)
