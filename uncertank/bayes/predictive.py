"""The posterior predictive: replicated scores from the model, per observation and per cell.

The replicates come from the model itself: :func:`posterior_predictive`
evaluates the model's own :func:`~uncertank.bayes.cells.linear_predictor`
at posterior draws and draws from the family's likelihood (the sampler the
per-observation PyMC model's ``score`` uses). For a fitted comparison this
module picks the draws (:func:`draw_index`), works in chunks
(:func:`replicates`), and sums replicates into system-by-topic matrices
(:func:`cell_sums`, the input of URisk).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray
from scipy import special

from uncertank.bayes._fitted import check_fitted
from uncertank.bayes.cells import Design, linear_predictor
from uncertank.bayes.likelihood import zoib_rvs
from uncertank.validation import as_float_array, as_label_array, check_instance, check_positive_int, check_seed

if TYPE_CHECKING:
    from uncertank.bayes._fitted import Fitted

__all__ = ["cell_sums", "draw_index", "posterior_predictive", "replicates"]

#: Largest number of replicated values held per chunk.
_CHUNK_VALUES = 2_000_000


def posterior_predictive(
    d: Design, params: Mapping[str, NDArray[np.float64]], *, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Replicated scores: one data set per draw of ``params``, from the family's likelihood.

    The linear predictor is :func:`~uncertank.bayes.cells.linear_predictor`
    (the model's own), the noise the family's: a Normal with scale ``sigma``
    for the Gaussian, :func:`~uncertank.bayes.likelihood.zoib_rvs` (the
    sampler the per-observation model's ``score`` uses) for the beta
    families.

    Parameters
    ----------
    d : Design
        The model's cells.
    params : mapping of str to ndarray
        Posterior draws with a leading draw axis of length ``n_draws``:
        ``Intercept``, ``r_system``, ``r_topic`` (and ``b_rank``), plus
        ``sigma`` (Gaussian) or ``phi``, ``zoi`` and ``coi`` (beta families;
        ``coi`` absent means 0).
    rng : numpy.random.Generator
        Random state.

    Returns
    -------
    ndarray of shape (n_draws, n_obs)
        Column ``i`` replicates observation ``i``.
    """
    check_instance(d, "d", Design, "a Design (uncertank.bayes.design)")
    check_instance(params, "params", Mapping, "a mapping of parameter names to draws")
    check_instance(rng, "rng", np.random.Generator, "a numpy Generator")
    eta = np.asarray(linear_predictor(params, d), dtype=np.float64)[:, d.obs_cell]
    if d.family == "gaussian":
        sigma = np.asarray(params["sigma"], dtype=np.float64)[:, None]
        return eta + sigma * rng.standard_normal(eta.shape)
    mu = np.clip(special.expit(eta), 1e-12, 1 - 1e-12)
    phi = np.asarray(params["phi"], dtype=np.float64)[:, None]
    zoi = np.asarray(params["zoi"], dtype=np.float64)[:, None]
    coi = np.asarray(params["coi"], dtype=np.float64)[:, None] if "coi" in params else np.zeros_like(zoi)
    return zoib_rvs(mu, phi, zoi, coi, rng=rng)


def draw_index(total: int, n_draws: int | None) -> NDArray[np.int64]:
    """Indices of ``n_draws`` posterior samples evenly spaced over ``total`` (all when None or larger)."""
    total = check_positive_int(total, "total", minimum=0)
    if n_draws is None or (not isinstance(n_draws, bool) and isinstance(n_draws, (int, np.integer))
                           and n_draws >= total):
        return np.arange(total, dtype=np.int64)
    n = check_positive_int(n_draws, "n_draws")
    return np.unique(np.linspace(0, total - 1, n).round().astype(np.int64))


def replicates(cmp: Fitted, idx: NDArray[np.int64], *, seed: int) -> NDArray[np.float64]:
    """Replicated scores at the posterior samples ``idx``: shape (idx.size, n_obs).

    Column ``i`` replicates row ``i`` of ``cmp.data``.
    """
    check_fitted(cmp)
    check_seed(seed, "seed", allow_none=False)
    rng = np.random.default_rng(seed)
    out = np.empty((idx.size, cmp.design.n_obs), dtype=np.float64)
    chunk = max(1, _CHUNK_VALUES // max(cmp.design.n_obs, 1))
    for start in range(0, idx.size, chunk):
        sl = idx[start:start + chunk]
        out[start:start + sl.size] = posterior_predictive(cmp.design, cmp.params(sl), rng=rng)
    return out


def cell_sums(values: NDArray[np.float64], s_code: NDArray[np.int64], t_code: NDArray[np.int64],
              n_systems: int, n_topics: int) -> NDArray[np.float64]:
    """Sum ``values`` of shape (k, n_obs) into (k, n_systems, n_topics); NaN for empty cells."""
    values = as_float_array(values, "values", ndim=2)
    s_code = as_label_array(s_code, "s_code")
    t_code = as_label_array(t_code, "t_code")
    n_systems = check_positive_int(n_systems, "n_systems")
    n_topics = check_positive_int(n_topics, "n_topics")
    if not (s_code.size == t_code.size == values.shape[1]):
        raise ValueError(f"s_code and t_code must have one code per observation ({values.shape[1]}); "
                         f"got {s_code.size} and {t_code.size}")
    if s_code.max() >= n_systems or t_code.max() >= n_topics:
        raise ValueError(f"s_code must be below n_systems ({n_systems}) and t_code below n_topics ({n_topics})")
    from scipy import sparse

    cell = s_code * n_topics + t_code
    a = sparse.csr_matrix((np.ones(cell.size), (np.arange(cell.size), cell)), shape=(cell.size, n_systems * n_topics))
    sums = np.asarray(a.T @ values.T).T
    counts = np.bincount(cell, minlength=n_systems * n_topics)
    sums[:, counts == 0] = np.nan
    return sums.reshape(values.shape[0], n_systems, n_topics)  # type: ignore[no-any-return]
