"""Posterior predictive replicates of a fitted comparison, per observation and per cell.

The replicates come from the model itself:
:func:`uncertank.bayes.models.posterior_predictive` evaluates the model's own
:func:`~uncertank.bayes.models.linear_predictor` at posterior draws and draws
from the family's likelihood. This module picks the draws, works in chunks,
and sums replicates into system-by-topic matrices (the input of URisk).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from uncertank._validation import check_positive_int
from uncertank.bayes import models

if TYPE_CHECKING:
    from uncertank.bayes._fitted import Fitted

__all__ = ["cell_sums", "draw_index", "replicates"]

#: Largest number of replicated values held per chunk.
_CHUNK_VALUES = 2_000_000


def draw_index(total: int, n_draws: int | None) -> NDArray[np.int64]:
    """Indices of ``n_draws`` posterior samples evenly spaced over ``total`` (all when None or larger)."""
    if n_draws is None or (not isinstance(n_draws, bool) and isinstance(n_draws, (int, np.integer))
                           and n_draws >= total):
        return np.arange(total, dtype=np.int64)
    n = check_positive_int(n_draws, "n_draws")
    return np.unique(np.linspace(0, total - 1, n).round().astype(np.int64))


def replicates(cmp: Fitted, idx: NDArray[np.int64], *, seed: int) -> NDArray[np.float64]:
    """Replicated scores at the posterior samples ``idx``: shape (idx.size, n_obs).

    Column ``i`` replicates row ``i`` of ``cmp.data``.
    """
    rng = np.random.default_rng(seed)
    out = np.empty((idx.size, cmp.design.n_obs), dtype=np.float64)
    chunk = max(1, _CHUNK_VALUES // max(cmp.design.n_obs, 1))
    for start in range(0, idx.size, chunk):
        sl = idx[start:start + chunk]
        out[start:start + sl.size] = models.posterior_predictive(cmp.design, cmp.params(sl), rng=rng)
    return out


def cell_sums(values: NDArray[np.float64], s_code: NDArray[np.int64], t_code: NDArray[np.int64],
              n_systems: int, n_topics: int) -> NDArray[np.float64]:
    """Sum ``values`` of shape (k, n_obs) into (k, n_systems, n_topics); NaN for empty cells."""
    from scipy import sparse

    cell = s_code * n_topics + t_code
    a = sparse.csr_matrix((np.ones(cell.size), (np.arange(cell.size), cell)), shape=(cell.size, n_systems * n_topics))
    sums = np.asarray(a.T @ values.T).T
    counts = np.bincount(cell, minlength=n_systems * n_topics)
    sums[:, counts == 0] = np.nan
    return sums.reshape(values.shape[0], n_systems, n_topics)  # type: ignore[no-any-return]
