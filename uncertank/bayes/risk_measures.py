"""URisk, ZRisk and GeoRisk: risk-sensitive measures of systems on score matrices.

Not to be confused with :mod:`uncertank.uncertainty.risk` (risk-aware
reranking of one ranked list).

All functions are vectorised over leading axes, so that a stack of
posterior-predictive replicates of shape ``(n_draws, n_systems, n_topics)``
is one call. NaN marks a missing (system, topic) score and is skipped.

Conventions for the loss weight ``r``:

- ``convention="benham"`` (Benham, Moffat & Culpepper, ECIR 2021, after
  their released code): losses weigh ``r`` times as much as wins and URisk
  is a *risk*: positive means worse than the baseline.
  ``URisk = -(1/c) * sum_t (d_t if d_t > 0 else r * d_t)`` with
  ``d_t = score_t - baseline_t`` over the ``c`` topics.
- ``convention="trec"`` (TREC Web track 2013-14; Collins-Thompson et al.):
  ``r`` is TREC's ``alpha``, losses weigh ``1 + alpha``, and positive means
  better: ``URisk = (1/c) * sum_t (d_t if d_t > 0 else (1 + r) * d_t)``.

So Benham's ``r = 2`` is TREC's ``alpha = 1`` with the sign flipped.
ZRisk and GeoRisk (Dinçer, Macdonald & Ounis, SIGIR 2016) use the same loss
weight (``r``, or ``1 + r`` under ``"trec"``) and keep their own sign:
higher is better under both conventions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from uncertank.bayes._fitted import check_fitted
from uncertank.validation import check_choice

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.bayes._fitted import Fitted

__all__ = ["RISK_CONVENTIONS", "georisk", "loss_weight", "urisk", "urisk_table", "zrisk"]

RiskConvention = Literal["benham", "trec"]
RISK_CONVENTIONS: tuple[str, ...] = ("benham", "trec")


def _scores_with_gaps(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """Per-topic scores as float64, NaN allowed (a topic a system did not run), infinities and text not."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf" or arr.ndim == 0 or arr.size == 0:
        raise TypeError(f"{name} must be a non-empty array of numbers (NaN for a missing topic); "
                        f"got {type(x).__name__} of dtype {arr.dtype} and shape {arr.shape}")
    arr = arr.astype(np.float64)
    if np.isinf(arr).any():
        raise ValueError(f"{name} must be finite or NaN (a missing topic); got an infinite value")
    return arr


def loss_weight(r: float, convention: RiskConvention) -> float:
    """The multiplier of losses: ``r`` under ``"benham"``, ``1 + r`` under ``"trec"``.

    Parameters
    ----------
    r : float
        Benham's ``r`` (>= 1 is usual) or TREC's ``alpha`` (>= 0).
    convention : {"benham", "trec"}
        Which meaning ``r`` has.

    Returns
    -------
    float
        The weight applied to losses.
    """
    check_choice(convention, "convention", RISK_CONVENTIONS)
    if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)):
        raise TypeError(f"r must be a number; got {type(r).__name__}")
    w = float(r) if convention == "benham" else 1.0 + float(r)
    if not np.isfinite(w) or w < 0:
        raise ValueError(f"r must give a finite loss weight >= 0; got r={r!r} under {convention!r}")
    return w


def urisk(
    scores: ArrayLike, baseline: ArrayLike, *, r: float = 1.0, convention: RiskConvention = "benham"
) -> NDArray[np.float64]:
    """URisk of ``scores`` against ``baseline`` over the last (topic) axis.

    Parameters
    ----------
    scores : array_like of shape (..., n_topics)
        The system's per-topic scores (NaN for a missing topic).
    baseline : array_like broadcastable to ``scores``
        The baseline's per-topic scores (NaN for a missing topic).
    r : float
        Loss weight (``"benham"``) or TREC's alpha (``"trec"``); see the
        module docstring.
    convention : {"benham", "trec"}
        Sign and weight convention.

    Returns
    -------
    ndarray of shape (...)
        URisk averaged over the topics both have; NaN where they share none.

    Examples
    --------
    Two wins of 0.2 and one loss of 0.3 over three topics, losses doubled:

    >>> float(urisk([0.5, 0.5, 0.2], [0.3, 0.3, 0.5], r=2))  # -(0.2 + 0.2 - 2 * 0.3) / 3
    0.06666666666666665
    >>> float(urisk([0.5, 0.5, 0.2], [0.3, 0.3, 0.5], r=1, convention="trec"))
    -0.06666666666666665
    """
    w = loss_weight(r, convention)
    s, b = _scores_with_gaps(scores, "scores"), _scores_with_gaps(baseline, "baseline")
    if s.shape[-1:] != b.shape[-1:]:
        raise ValueError(f"scores and baseline must have one value per topic each; got shapes {s.shape} and {b.shape}")
    d = s - b
    valid = ~np.isnan(d)
    d0 = np.where(valid, d, 0.0)
    per_topic = np.where(d0 > 0, d0, w * d0)
    n = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = per_topic.sum(axis=-1) / n
    u = np.where(n > 0, u, np.nan)
    return -u if convention == "benham" else u


def _z_matrix(matrix: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x = _scores_with_gaps(matrix, "matrix")
    if x.ndim < 2:
        raise ValueError(f"matrix must have shape (..., n_systems, n_topics); got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError("matrix must be complete for ZRisk and GeoRisk (every system on every topic); "
                         f"got {int(np.isnan(x).sum())} NaN values")
    if (x < 0).any():
        raise ValueError(f"matrix must be non-negative for ZRisk and GeoRisk; got min {float(x.min())!r}")
    row = x.sum(axis=-1, keepdims=True)
    col = x.sum(axis=-2, keepdims=True)
    total = x.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = row * col / total
        z = (x - expected) / np.sqrt(expected)
    # A topic (or system) whose scores are all 0 expects 0 and observes 0: no evidence either way.
    z = np.where(expected > 0, z, 0.0)
    return x, z


def zrisk(matrix: ArrayLike, *, r: float = 1.0, convention: RiskConvention = "benham") -> NDArray[np.float64]:
    """ZRisk of every system against all of them (Dinçer, Macdonald & Ounis, SIGIR 2016).

    With ``x`` the system-by-topic matrix, ``S_i`` its row sums, ``T_j`` its
    column sums and ``N`` its total, the expected score is ``e_ij = S_i T_j /
    N``, ``z_ij = (x_ij - e_ij) / sqrt(e_ij)``, and
    ``ZRisk_i = sum_{z_ij > 0} z_ij + w * sum_{z_ij < 0} z_ij`` with loss
    weight ``w`` (:func:`loss_weight`). Higher is better.

    Parameters
    ----------
    matrix : array_like of shape (..., n_systems, n_topics)
        Non-negative scores, complete.
    r : float
        Loss weight or TREC alpha, as in :func:`urisk`.
    convention : {"benham", "trec"}
        Meaning of ``r``.

    Returns
    -------
    ndarray of shape (..., n_systems)

    Examples
    --------
    >>> zrisk([[1.0, 0.0], [0.0, 1.0]], r=1).round(4).tolist()
    [0.0, 0.0]
    """
    return _zrisk(matrix, r, convention)[1]


def _zrisk(matrix: ArrayLike, r: float, convention: RiskConvention) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The checked matrix and the ZRisk of every system, shape (..., n_systems)."""
    w = loss_weight(r, convention)
    x, z = _z_matrix(matrix)
    return x, np.where(z > 0, z, w * z).sum(axis=-1)


def georisk(matrix: ArrayLike, *, r: float = 1.0, convention: RiskConvention = "benham") -> NDArray[np.float64]:
    """GeoRisk of every system (Dinçer, Macdonald & Ounis, SIGIR 2016).

    ``GeoRisk_i = sqrt(S_i / c * Phi(ZRisk_i / c))``: the geometric mean of
    the mean score and the standard normal CDF of the per-topic ZRisk, with
    ``c`` topics. Higher is better.

    Parameters
    ----------
    matrix, r, convention
        As in :func:`zrisk`.

    Returns
    -------
    ndarray of shape (..., n_systems)
    """
    x, zr = _zrisk(matrix, r, convention)
    c = x.shape[-1]
    out: NDArray[np.float64] = np.sqrt(x.sum(axis=-1) / c * special.ndtr(zr / c))
    return out


def urisk_table(
    cmp: Fitted,
    baseline: str,
    *,
    r: float = 1.0,
    convention: RiskConvention = "benham",
    prob: float = 0.95,
    n_draws: int | None = 1000,
    seed: int | None = None,
) -> pd.DataFrame:
    """URisk of every system of a fit against ``baseline``, on posterior predictive replicates.

    For each posterior draw, the replicated per-topic scores of a system and
    of the baseline (``cmp.replicate_matrix``) give one URisk value
    (:func:`urisk`); the expected a posteriori (EAP) value is their mean and
    the credible interval their quantiles, as in Benham et al.'s Figure 3.
    ZRisk and GeoRisk (:func:`zrisk`, :func:`georisk`, against all systems)
    are computed on the same replicates; Gaussian replicates are clipped to
    [0, 1] for these two, which need non-negative scores.

    Parameters
    ----------
    cmp : SystemComparison
        The fit (anything with its :class:`~uncertank.bayes._fitted.Fitted` interface).
    baseline : str
        The baseline system's name.
    r : float
        Loss weight (``"benham"``, usually 1 or 2) or TREC's alpha (``"trec"``).
    convention : {"benham", "trec"}
        ``"benham"``: URisk > 0 means riskier than the baseline; ``"trec"``:
        URisk > 0 means better.
    prob : float
        Credible mass of the intervals.
    n_draws : int or None
        Posterior draws used (None for all).
    seed : int, optional
        Seed of the replicates; the fit's seed by default.

    Returns
    -------
    pandas.DataFrame
        One row per system other than the baseline: ``system``, ``urisk``
        (EAP), ``urisk_lower``, ``urisk_upper``, ``urisk_observed`` (on the
        data), ``p_risky`` (posterior probability of doing worse than the
        baseline in URisk terms), ``zrisk``, ``zrisk_lower``,
        ``zrisk_upper``, ``georisk``, ``georisk_lower``, ``georisk_upper``
        (NaN when some system has no score on some topic); sorted from least
        to most risky.
    """
    check_fitted(cmp)
    import pandas as pd

    from uncertank.bayes.summaries import check_prob, quantiles

    prob = check_prob(prob)
    loss_weight(r, convention)
    names = [str(x) for x in cmp.systems]
    if baseline not in names:
        raise ValueError(
            f"baseline must be one of the compared systems; got {baseline!r} "
            f"(systems: {', '.join(sorted(names)[:8])}{', ...' if len(names) > 8 else ''})"
        )
    b = names.index(baseline)
    rep = cmp.replicate_matrix(n_draws, seed=seed)  # (D, S, T)
    obs = cmp.observed_matrix()
    u = urisk(rep, rep[:, [b], :], r=r, convention=convention)  # (D, S)
    u_obs = urisk(obs, obs[[b], :], r=r, convention=convention)
    lo, hi = quantiles(u, prob)
    risky = (u > 0) if convention == "benham" else (u < 0)
    rows: dict[str, list[str] | NDArray[np.float64]] = {
        "system": names, "urisk": u.mean(axis=0),
        "urisk_lower": lo, "urisk_upper": hi, "urisk_observed": u_obs, "p_risky": risky.mean(axis=0),
    }
    if not np.isnan(obs).any():
        mat = np.clip(rep, 0.0, 1.0) if cmp.family == "gaussian" else rep
        for name, fn in (("zrisk", zrisk), ("georisk", georisk)):
            vals = fn(mat, r=r, convention=convention)
            v_lo, v_hi = quantiles(vals, prob)
            rows[name], rows[f"{name}_lower"], rows[f"{name}_upper"] = vals.mean(axis=0), v_lo, v_hi
    else:
        for name in ("zrisk", "georisk"):
            for suffix in ("", "_lower", "_upper"):
                rows[name + suffix] = np.full(len(names), np.nan)
    out = pd.DataFrame(rows).drop(index=b)
    ascending = convention == "benham"
    ranked: pd.DataFrame = (out.sort_values(["urisk", "system"], ascending=[ascending, True], kind="stable")
                            .reset_index(drop=True))
    return ranked
