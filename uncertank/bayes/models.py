"""The three hierarchical models of Benham, Moffat & Culpepper (ECIR 2021) as PyMC models.

Each model is defined once, from pieces that every other part of
:mod:`uncertank.bayes` reuses:

- :class:`~uncertank.bayes.cells.Design` (:mod:`uncertank.bayes.cells`):
  the data reduced to *cells*, the distinct rows of the linear predictor
  (one per system and topic, and per rank for :func:`zoib_rank`), with the
  sufficient statistics of each cell;
- :func:`~uncertank.bayes.cells.linear_predictor`: ``eta = Intercept +
  r_system[s] + r_topic[t]`` (plus the rank term), one function that runs
  on PyTensor tensors (inside the PyMC model built here) and on NumPy draws
  (for the posterior predictive);
- :func:`~uncertank.bayes.predictive.posterior_predictive`: replicated
  scores drawn from the family's likelihood at posterior draws, through
  that linear predictor and the likelihood's own sampler
  (:func:`~uncertank.bayes.likelihood.zoib_rvs` for the beta families).

This module holds what only the PyMC model needs: the priors, the centring
of the group effects, the likelihood on sufficient statistics, the model
builders and their options. The structure is brms's ``score ~ (1 | topic) +
(1 | system)`` (plus ``rank`` for the per-rank model):

- partial pooling: ``r_system ~ Normal(0, sd_system)`` and the same for
  topics, written per group either centred or non-centred (``r = sd * z``
  with ``z ~ Normal(0, 1)``, brms's form); the posterior is the same. By
  default (``centred=None``) a group with at least 10 levels and at least 10
  observations per level is centred, the regime where the data pin the
  effects down and the centred form mixes best (on TREC-COVID round 1, 42
  systems x 30 topics, it gave about four times the bulk ESS per draw of
  the scale parameters), and any other group is non-centred (few levels or
  little data per level: a funnel that the centred form samples badly);
- brms's default priors: ``Intercept ~ StudentT(3, centre, 2.5)``, group
  scales ``sd_* ~ HalfStudentT(3, 2.5)`` (for the Gaussian, 2.5 or the
  scaled MAD of the scores when larger, and ``centre`` is the median score;
  for the logit link ``centre = 0``).

The likelihood is evaluated on sufficient statistics per cell by default
(``sufficient=True``): counts of zeros and ones and sums of ``log y`` and
``log(1 - y)`` over the interior scores for the beta families; count, mean
and sum of squared deviations (that is, sums of ``y`` and ``y**2``) for the
Gaussian. This is the same log-density as one term per observation (tested
to 1e-8), skips the Beta terms of exact zeros and ones, and costs one term
per cell. ``sufficient=False`` builds the per-observation model (an observed
``score`` variable that PyMC's own ``sample_posterior_predictive`` can draw
from).

Variable names follow brms (``Intercept``, ``sd_system``, ``r_system``,
``sigma``, ``phi``, ``zoi``, ``coi``, ``b_rank``), so summaries read like the
paper's R output. The system effect ``r_system`` is on the scale of the link:
score units for :func:`gaussian`, log-odds of the Beta mean for the others.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._optional import require_pymc
from uncertank.bayes.cells import Design, RankEffect, design, design_from_frame, linear_predictor
from uncertank.bayes.likelihood import zoib_logp_graph, zoib_rvs
from uncertank.validation import check_instance

if TYPE_CHECKING:
    import pandas as pd
    import pymc as pm

    from uncertank.bayes.likelihood import TensorGraph

__all__ = [
    "PARAMETERS",
    "POOLED_MIN_SYSTEMS",
    "SYSTEM_EFFECTS",
    "choose_centred",
    "choose_system_effects",
    "gaussian",
    "zoib",
    "zoib_rank",
]

#: The parameters a fit reports and checks (those a model has).
PARAMETERS: tuple[str, ...] = ("Intercept", "b_rank", "sd_system", "sd_topic", "r_system", "r_topic",
                               "sigma", "phi", "zoi", "coi")

#: brms's default scale for Student-t priors on intercepts and group scales.
PRIOR_SCALE = 2.5


def _mad(y: NDArray[np.float64]) -> float:
    return float(1.4826 * np.median(np.abs(y - np.median(y))))


#: A group is written centred by default when it has at least this many levels, each with (on
#: average) at least this many observations: then the data pin each effect down and the group
#: scale is well identified, the regime where the centred form mixes best.
CENTRED_MIN_LEVELS = 10
CENTRED_MIN_OBS_PER_LEVEL = 10

#: How the system effects are modelled (``system_effects``): ``"pooled"``, the paper's partial pooling
#: (``r_system ~ Normal(0, sd_system)``), or ``"fixed"``, one effect per system with a fixed-scale
#: sum-to-zero prior (``r_system ~ ZeroSumNormal(s)``, no ``sd_system``).
SYSTEM_EFFECTS = ("pooled", "fixed")

#: By default (``system_effects=None``) the system effects are pooled from this many systems on, and fixed
#: below. A group scale learned from a handful of levels is barely identified, and with it the split of
#: each system's mean between ``Intercept`` and ``r_system``: on simulated per-query scores (150 topics,
#: about 15% zeros and 15% ones, docs/scripts/few_systems.py, docs/results/few_systems.json), the pooled
#: Gaussian and ZOiB models failed the convergence checks with 2, 4 and 8 systems (with 2: R-hat 1.29 and
#: 1.05, 788 and 97 divergences; with 8: 1 and 2 divergences), while the fixed sum-to-zero effects passed
#: every check in all six fits (0 divergences, R-hat <= 1.008, bulk ESS >= 912; 4 chains x 1,000 draws).
POOLED_MIN_SYSTEMS = 10


def choose_system_effects(d: Design, system_effects: str | None = None) -> str:
    """``system_effects`` if given; else ``"pooled"`` from :data:`POOLED_MIN_SYSTEMS` systems on, ``"fixed"`` below."""
    check_instance(d, "d", Design, "a Design (uncertank.bayes.design)")
    if system_effects is None:
        return "pooled" if len(d.systems) >= POOLED_MIN_SYSTEMS else "fixed"
    if system_effects not in SYSTEM_EFFECTS:
        raise ValueError(f"system_effects must be None, 'pooled' or 'fixed'; got {system_effects!r}")
    return system_effects


def choose_centred(d: Design, centred: bool | None = None) -> dict[str, bool]:
    """Whether each group's effects are written centred.

    Parameters
    ----------
    d : Design
        The model's data.
    centred : bool, optional
        True or False for both groups; None (default) applies the rule: a
        group is centred when it has at least :data:`CENTRED_MIN_LEVELS`
        levels and at least :data:`CENTRED_MIN_OBS_PER_LEVEL` observations
        per level on average.

    Returns
    -------
    dict
        ``{"system": bool, "topic": bool}``.
    """
    check_instance(d, "d", Design, "a Design (uncertank.bayes.design)")
    if centred is not None:
        return {"system": centred, "topic": centred}
    out = {}
    for name, levels in (("system", d.systems), ("topic", d.topics)):
        out[name] = len(levels) >= CENTRED_MIN_LEVELS and d.n_obs / len(levels) >= CENTRED_MIN_OBS_PER_LEVEL
    return out


def _group_effects(pm: ModuleType, name: str, scale: float, centred: bool) -> TensorGraph:
    """Partial pooling over coord ``name``: ``r ~ Normal(0, sd)``, centred or as ``sd * z``."""
    sd = pm.HalfStudentT(f"sd_{name}", nu=3, sigma=scale)
    r: TensorGraph
    if centred:
        r = pm.Normal(f"r_{name}", 0.0, sd, dims=name)
    else:
        z = pm.Normal(f"z_{name}", 0.0, 1.0, dims=name)
        r = pm.Deterministic(f"r_{name}", sd * z, dims=name)
    return r


def _zoib_random(mu: ArrayLike, phi: ArrayLike, zoi: ArrayLike, coi: ArrayLike, rng: np.random.Generator | None = None,
                 size: tuple[int, ...] | None = None) -> NDArray[np.float64]:
    return zoib_rvs(mu, phi, zoi, coi, rng=rng, size=size)


def _gaussian_loglik(pt: ModuleType, eta: TensorGraph, sigma: TensorGraph, d: Design) -> TensorGraph:
    """Gaussian log-likelihood from each cell's count, mean and sum of squared deviations."""
    n = d.n.astype(np.float64)
    loglik: TensorGraph = (-float(n.sum()) * (pt.log(sigma) + 0.5 * math.log(2 * math.pi))
                           - (pt.sum(n * (d.mean - eta) ** 2) + float(d.ss.sum())) / (2.0 * sigma**2))
    return loglik


def _beta_loglik(
    pt: ModuleType, eta: TensorGraph, phi: TensorGraph, zoi: TensorGraph, coi: TensorGraph | float,
    d: Design,
) -> TensorGraph:
    """ZOiB log-likelihood from counts of 0s and 1s and sums of log y, log(1 - y) per cell."""
    n0, n1 = float(d.n0.sum()), float(d.n1.sum())
    n_in = d.n_interior
    keep = np.flatnonzero(n_in > 0)
    total: TensorGraph = float(n_in.sum()) * (pt.log1p(-zoi) + pt.gammaln(phi))
    if n0:
        total = total + n0 * (pt.log(zoi) + (pt.log1p(-coi) if d.one_inflation else 0.0))
    if n1:
        total = total + n1 * (pt.log(zoi) + pt.log(coi))
    if keep.size:
        mu = pt.sigmoid(eta[keep])
        a = mu * phi
        b = (1.0 - mu) * phi
        w = n_in[keep].astype(np.float64)
        total = total + pt.sum(-w * (pt.gammaln(a) + pt.gammaln(b))
                               + (a - 1.0) * d.sum_log_y[keep] + (b - 1.0) * d.sum_log1m_y[keep])
    return total


def _build(d: Design, *, sufficient: bool = True, centred: bool | None = None,
           rank_prior_scale: float | None = None, system_effects: str | None = None,
           ) -> tuple[pm.Model, TensorGraph]:
    """The PyMC model of a design and its linear-predictor tensor (shape (n_cells,))."""
    pm = require_pymc()
    import pytensor.tensor as pt

    if not isinstance(sufficient, bool):
        raise TypeError(f"sufficient must be a bool; got {type(sufficient).__name__}")
    if centred is not None and not isinstance(centred, bool):
        raise TypeError(f"centred must be a bool or None; got {type(centred).__name__}")
    centring = choose_centred(d, centred)
    systems = choose_system_effects(d, system_effects)
    if rank_prior_scale is not None and not (isinstance(rank_prior_scale, (int, float)) and rank_prior_scale > 0):
        raise ValueError(f"rank_prior_scale must be > 0 or None; got {rank_prior_scale!r}")
    coords: dict[str, list[Hashable]] = {"system": list(d.systems), "topic": list(d.topics)}
    if d.family == "zoib_rank":
        coords["rank"] = list(d.ranks)
    gaussian_family = d.family == "gaussian"
    if gaussian_family:
        centre, scale = float(np.median(d.score)), max(PRIOR_SCALE, _mad(d.score))
    else:
        centre, scale = 0.0, PRIOR_SCALE
    with pm.Model(coords=coords) as model:
        params: dict[str, TensorGraph] = {"Intercept": pm.StudentT("Intercept", nu=3, mu=centre, sigma=scale)}
        if d.family == "zoib_rank":
            n_free = 1 if d.rank_effect == "linear" else len(d.ranks) - 1

            def coef(name: str) -> TensorGraph:
                shape = None if d.rank_effect == "linear" else n_free
                b: TensorGraph = (pm.Flat(name, shape=shape) if rank_prior_scale is None
                                  else pm.Normal(name, 0.0, float(rank_prior_scale), shape=shape))
                return b

            if d.rank_effect == "linear":
                params["b_rank"] = coef("b_rank")
            else:
                free = coef("b_rank_free")
                params["b_rank"] = pm.Deterministic(
                    "b_rank", pt.concatenate([pt.zeros(1), free]), dims="rank")  # type: ignore[no-untyped-call]
        if systems == "fixed":
            params["r_system"] = pm.ZeroSumNormal("r_system", sigma=scale, dims="system")
        else:
            params["r_system"] = _group_effects(pm, "system", scale, centring["system"])
        params["r_topic"] = _group_effects(pm, "topic", scale, centring["topic"])
        eta = linear_predictor(params, d)
        if gaussian_family:
            sigma = pm.HalfStudentT("sigma", nu=3, sigma=scale)
            if sufficient:
                pm.Potential("score_loglik", _gaussian_loglik(pt, eta, sigma, d))
            else:
                pm.Normal("score", mu=eta[d.obs_cell], sigma=sigma, observed=d.score)
        else:
            phi = pm.Gamma("phi", alpha=0.01, beta=0.01)
            zoi = pm.Beta("zoi", alpha=1.0, beta=1.0)
            coi = pm.Beta("coi", alpha=1.0, beta=1.0) if d.one_inflation else 0.0
            if sufficient:
                pm.Potential("score_loglik", _beta_loglik(pt, eta, phi, zoi, coi, d))
            else:
                pm.CustomDist("score", pm.math.invlogit(eta[d.obs_cell]), phi, zoi, coi,
                              logp=zoib_logp_graph, random=_zoib_random, observed=d.score)
    return model, eta


def gaussian(system: ArrayLike, topic: ArrayLike, score: ArrayLike, *, sufficient: bool = True,
             centred: bool | None = None, system_effects: str | None = None) -> pm.Model:
    """Gaussian hierarchical model: ``score ~ Normal(Intercept + r_system + r_topic, sigma)``.

    The paper's first model. It ignores that scores live in [0, 1], so its
    posterior predictive puts mass outside that range.

    Parameters
    ----------
    system : array_like of shape (n_obs,)
        System label of each score (any hashable values; sorted for coords).
    topic : array_like of shape (n_obs,)
        Topic label of each score.
    score : array_like of shape (n_obs,)
        Per-topic effectiveness, finite.
    sufficient : bool
        Evaluate the likelihood on each cell's count, mean and sum of
        squared deviations (a ``Potential`` named ``score_loglik``; the
        default) or per observation (an observed ``score``).
    centred : bool, optional
        Centred (``r ~ Normal(0, sd)``) or non-centred (``r = sd * z``)
        group effects; None (default) chooses per group: centred when it
        has at least 10 levels with at least 10 observations each on
        average (:func:`choose_centred`).
    system_effects : {"pooled", "fixed"}, optional
        ``"pooled"``: the paper's ``r_system ~ Normal(0, sd_system)``;
        ``"fixed"``: ``r_system ~ ZeroSumNormal(s)``, effects that sum to 0
        under a fixed-scale prior, no ``sd_system``. None (default):
        pooled from :data:`POOLED_MIN_SYSTEMS` systems on, fixed below
        (:func:`choose_system_effects`).

    Returns
    -------
    pymc.Model
        Coords ``system`` and ``topic``; free variables ``Intercept``,
        ``sd_system``, ``r_system`` (``z_system`` when non-centred),
        ``sd_topic``, ``r_topic`` (``z_topic``), ``sigma``. Priors:
        ``Intercept ~ StudentT(3, median, s)``, ``sd_*`` and
        ``sigma ~ HalfStudentT(3, s)`` with ``s = max(2.5, MAD(score))``
        (brms's defaults).

    References
    ----------
    Benham, Moffat & Culpepper, "Bayesian System Inference on Shallow Pools",
    ECIR 2021, section 2 (the Gaussian model).
    """
    return _build(design(system, topic, score, family="gaussian"), sufficient=sufficient, centred=centred,
                  system_effects=system_effects)[0]


def zoib(system: ArrayLike, topic: ArrayLike, score: ArrayLike, *, sufficient: bool = True,
         centred: bool | None = None, system_effects: str | None = None) -> pm.Model:
    """Zero-one-inflated beta hierarchical model (the paper's second model).

    ``score ~ ZOiB(mu, phi, zoi, coi)`` with ``logit(mu) = Intercept +
    r_system + r_topic``: exact 0s and 1s come from the inflation part
    (``zoi``, ``coi``), the rest from a Beta with mean ``mu`` and precision
    ``phi`` (see :mod:`uncertank.bayes.likelihood`).

    Parameters
    ----------
    system, topic : array_like of shape (n_obs,)
        Labels of each score.
    score : array_like of shape (n_obs,)
        Per-topic effectiveness in [0, 1].
    sufficient : bool
        Evaluate the likelihood on each cell's counts of 0s and 1s and sums
        of ``log y`` and ``log(1 - y)`` (a ``Potential`` named
        ``score_loglik``; the default) or per observation (an observed
        ``score``).
    centred, system_effects : optional
        As in :func:`gaussian`.

    Returns
    -------
    pymc.Model
        Coords ``system`` and ``topic``; free variables ``Intercept``,
        ``sd_system``, ``r_system``, ``sd_topic``, ``r_topic`` (``z_*`` and
        deterministic ``r_*`` when non-centred), ``phi``, ``zoi``, ``coi``.
        Priors (brms's defaults): ``Intercept ~ StudentT(3, 0, 2.5)``,
        ``sd_* ~ HalfStudentT(3, 2.5)``, ``phi ~ Gamma(0.01, 0.01)``,
        ``zoi, coi ~ Beta(1, 1)``.

    References
    ----------
    Benham, Moffat & Culpepper, ECIR 2021, section 2; Ospina & Ferrari,
    "Inflated beta distributions", Statistical Papers 51, 2010.
    """
    return _build(design(system, topic, score, family="zoib"), sufficient=sufficient, centred=centred,
                  system_effects=system_effects)[0]


def zoib_rank(
    system: ArrayLike,
    topic: ArrayLike,
    rank: ArrayLike,
    score: ArrayLike,
    *,
    rank_effect: RankEffect = "linear",
    one_inflation: bool | None = None,
    rank_prior_scale: float | None = None,
    sufficient: bool = True,
    centred: bool | None = None,
    system_effects: str | None = None,
) -> pm.Model:
    """Per-rank gain model with a rank effect (the paper's third model, "ZOiB-Rank").

    Each observation is the gain of the document at one rank of one system's
    ranking for one topic; ``logit(mu) = Intercept + b_rank * (rank -
    mean(rank)) + r_system + r_topic``. This is the paper's brms formula
    ``score ~ rank + (1 | topic) + (1 | system)``, where ``rank`` is numeric
    (one slope) and brms centres it. A cell is one system, topic and rank.

    Parameters
    ----------
    system, topic : array_like of shape (n_obs,)
        Labels of each gain.
    rank : array_like of shape (n_obs,)
        Rank position (integers >= 1) of each gain.
    score : array_like of shape (n_obs,)
        Per-rank gains in [0, 1].
    rank_effect : {"linear", "categorical"}
        ``"linear"`` (the paper): one slope ``b_rank`` on the centred rank.
        ``"categorical"``: one coefficient per rank (dims ``rank``, the first
        rank fixed at 0), on brms-style centred dummy columns.
    one_inflation : bool, optional
        Whether 1s are inflated too (ZOiB) or only 0s (zero-inflated beta).
        By default, True exactly when some gain equals 1. The paper's RBP
        gains are at most 0.2, and its code fits the zero-inflated beta.
    rank_prior_scale : float, optional
        Standard deviation of a Normal(0, scale) prior on the rank
        coefficients; None (the default) keeps brms's improper flat prior.
    sufficient, centred, system_effects
        As in :func:`zoib`.

    Returns
    -------
    pymc.Model
        Coords ``system``, ``topic`` and ``rank`` (the distinct ranks); the
        variables of :func:`zoib` (without ``coi`` when ``one_inflation`` is
        False, ``zoi`` then being the probability of a zero) plus ``b_rank``.

    References
    ----------
    Benham, Moffat & Culpepper, ECIR 2021, section 2 (per-document model).
    """
    d = design(system, topic, score, rank, family="zoib_rank", rank_effect=rank_effect, one_inflation=one_inflation)
    return _build(d, sufficient=sufficient, centred=centred, rank_prior_scale=rank_prior_scale,
                  system_effects=system_effects)[0]


#: The options each family's model takes beyond the data (``model_options`` of :func:`~uncertank.bayes.compare`).
MODEL_OPTIONS: dict[str, tuple[str, ...]] = {
    "gaussian": ("sufficient", "centred", "system_effects"),
    "zoib": ("sufficient", "centred", "system_effects"),
    "zoib_rank": ("rank_effect", "one_inflation", "rank_prior_scale", "sufficient", "centred", "system_effects"),
}


def check_model_options(family: str, options: Mapping[str, object] | None) -> dict[str, object]:
    """Validate ``model_options`` for ``family`` (internal); unknown names list the known ones."""
    opts = dict(options or {})
    known = MODEL_OPTIONS[family]
    unknown = sorted(set(opts) - set(known))
    if unknown:
        raise ValueError(f"model_options for family {family!r} take {list(known)}; got unknown {unknown}")
    return opts


def model_for(family: str, data: pd.DataFrame, **options: object) -> pm.Model:
    """Build the model of ``family`` from a validated frame (internal)."""
    d = design_from_frame(family, data, **options)
    build = {k: v for k, v in options.items() if k in ("sufficient", "centred", "rank_prior_scale", "system_effects")}
    return _build(d, **build)[0]  # type: ignore[arg-type]  # _build checks the option values
