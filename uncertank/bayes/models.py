"""The three hierarchical models of Benham, Moffat & Culpepper (ECIR 2021), in PyMC.

Each function takes the data as arrays and returns a ``pymc.Model`` with named
coords ``system`` and ``topic`` (and ``rank`` for :func:`zoib_rank`); nothing
is sampled here. The structure is brms's ``score ~ (1 | topic) + (1 | system)``
(plus ``rank`` for the per-rank model), written directly in PyMC:

- a linear predictor ``eta = Intercept + r_system[s] + r_topic[t]``;
- partial pooling: ``r_system = sd_system * z_system`` with
  ``z_system ~ Normal(0, 1)`` (the non-centred form, which samples without
  divergences when the group scale is small), and the same for topics;
- brms's default priors: ``Intercept ~ StudentT(3, centre, 2.5)``, group
  scales ``sd_* ~ HalfStudentT(3, 2.5)`` (for the Gaussian, 2.5 or the
  scaled MAD of the scores when larger, and ``centre`` is the median score;
  for the logit link ``centre = 0``).

Variable names follow brms (``Intercept``, ``sd_system``, ``r_system``,
``sigma``, ``phi``, ``zoi``, ``coi``, ``b_rank``), so summaries read like the
paper's R output. The system effect ``r_system`` is on the scale of the link:
score units for :func:`gaussian`, log-odds of the Beta mean for the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._validation import as_float_array, check_choice
from uncertank.bayes._deps import require_pymc
from uncertank.bayes.likelihood import zoib_logp_graph, zoib_rvs

if TYPE_CHECKING:
    import pymc as pm

__all__ = ["FAMILIES", "gaussian", "zoib", "zoib_rank"]

#: The model families, by the name :func:`uncertank.bayes.compare` takes.
FAMILIES: tuple[str, ...] = ("gaussian", "zoib", "zoib_rank")

#: brms's default scale for Student-t priors on intercepts and group scales.
PRIOR_SCALE = 2.5


def _encode(values: ArrayLike, name: str, n: int) -> tuple[NDArray[np.int64], list[Any]]:
    """Integer codes and sorted unique labels of a 1-D label array of length ``n``."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be 1-D with one entry per score ({n}); got shape {arr.shape}")
    labels, codes = np.unique(arr, return_inverse=True)
    if labels.size < 2:
        raise ValueError(f"{name} must hold at least 2 distinct values; got {labels.size}")
    return codes.astype(np.int64), [x.item() if hasattr(x, "item") else x for x in labels]


def _scores(score: ArrayLike, *, unit: bool) -> NDArray[np.float64]:
    y = as_float_array(score, "score")
    if unit:
        bad = (y < 0) | (y > 1)
        if bad.any():
            raise ValueError(
                f"score must lie in [0, 1] for a beta family; got {int(bad.sum())} values outside, "
                f"e.g. {float(y[bad][0])!r}"
            )
    return y


def _group_effects(pm: Any, name: str, scale: float = PRIOR_SCALE) -> Any:
    """Non-centred partial pooling over coord ``name``: ``r = sd * z`` with ``z ~ N(0, 1)``."""
    sd = pm.HalfStudentT(f"sd_{name}", nu=3, sigma=scale)
    z = pm.Normal(f"z_{name}", 0.0, 1.0, dims=name)
    return pm.Deterministic(f"r_{name}", sd * z, dims=name)


def _mad(y: NDArray[np.float64]) -> float:
    return float(1.4826 * np.median(np.abs(y - np.median(y))))


def gaussian(system: ArrayLike, topic: ArrayLike, score: ArrayLike) -> pm.Model:
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

    Returns
    -------
    pymc.Model
        Coords ``system`` and ``topic``; free variables ``Intercept``,
        ``sd_system``, ``z_system``, ``sd_topic``, ``z_topic``, ``sigma``;
        deterministics ``r_system`` and ``r_topic``; observed ``score``.
        Priors: ``Intercept ~ StudentT(3, median, s)``, ``sd_*`` and
        ``sigma ~ HalfStudentT(3, s)`` with ``s = max(2.5, MAD(score))``
        (brms's defaults).

    References
    ----------
    Benham, Moffat & Culpepper, "Bayesian System Inference on Shallow Pools",
    ECIR 2021, section 2 (the Gaussian model).
    """
    pm = require_pymc()
    y = _scores(score, unit=False)
    s_code, systems = _encode(system, "system", y.size)
    t_code, topics = _encode(topic, "topic", y.size)
    scale = max(PRIOR_SCALE, _mad(y))
    with pm.Model(coords={"system": systems, "topic": topics}) as model:
        intercept = pm.StudentT("Intercept", nu=3, mu=float(np.median(y)), sigma=scale)
        r_s = _group_effects(pm, "system", scale)
        r_t = _group_effects(pm, "topic", scale)
        sigma = pm.HalfStudentT("sigma", nu=3, sigma=scale)
        mu = intercept + r_s[s_code] + r_t[t_code]
        pm.Normal("score", mu=mu, sigma=sigma, observed=y)
    return model


def _zoib_random(mu: Any, phi: Any, zoi: Any, coi: Any, rng: np.random.Generator | None = None,
                 size: tuple[int, ...] | None = None) -> NDArray[np.float64]:
    return zoib_rvs(mu, phi, zoi, coi, rng=rng, size=size)


def _beta_family(pm: Any, eta: Any, y: NDArray[np.float64], *, one_inflation: bool) -> None:
    """The ZOiB (or zero-inflated beta) likelihood on ``eta``, brms's priors."""
    phi = pm.Gamma("phi", alpha=0.01, beta=0.01)
    zoi = pm.Beta("zoi", alpha=1.0, beta=1.0)
    coi = pm.Beta("coi", alpha=1.0, beta=1.0) if one_inflation else 0.0
    mu = pm.math.invlogit(eta)
    pm.CustomDist("score", mu, phi, zoi, coi, logp=zoib_logp_graph, random=_zoib_random,
                  observed=y)


def zoib(system: ArrayLike, topic: ArrayLike, score: ArrayLike) -> pm.Model:
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

    Returns
    -------
    pymc.Model
        Coords ``system`` and ``topic``; free variables ``Intercept``,
        ``sd_system``, ``z_system``, ``sd_topic``, ``z_topic``, ``phi``,
        ``zoi``, ``coi``; deterministics ``r_system``, ``r_topic`` (log-odds);
        observed ``score``. Priors (brms's defaults):
        ``Intercept ~ StudentT(3, 0, 2.5)``, ``sd_* ~ HalfStudentT(3, 2.5)``,
        ``phi ~ Gamma(0.01, 0.01)``, ``zoi, coi ~ Beta(1, 1)``.

    References
    ----------
    Benham, Moffat & Culpepper, ECIR 2021, section 2; Ospina & Ferrari,
    "Inflated beta distributions", Statistical Papers 51, 2010.
    """
    pm = require_pymc()
    y = _scores(score, unit=True)
    s_code, systems = _encode(system, "system", y.size)
    t_code, topics = _encode(topic, "topic", y.size)
    with pm.Model(coords={"system": systems, "topic": topics}) as model:
        intercept = pm.StudentT("Intercept", nu=3, mu=0.0, sigma=PRIOR_SCALE)
        r_s = _group_effects(pm, "system")
        r_t = _group_effects(pm, "topic")
        _beta_family(pm, intercept + r_s[s_code] + r_t[t_code], y, one_inflation=True)
    return model


def zoib_rank(
    system: ArrayLike,
    topic: ArrayLike,
    rank: ArrayLike,
    score: ArrayLike,
    *,
    rank_effect: Literal["linear", "categorical"] = "linear",
    one_inflation: bool | None = None,
    rank_prior_scale: float | None = None,
) -> pm.Model:
    """Per-rank gain model with a rank effect (the paper's third model, "ZOiB-Rank").

    Each observation is the gain of the document at one rank of one system's
    ranking for one topic; ``logit(mu) = Intercept + b_rank * (rank -
    mean(rank)) + r_system + r_topic``. This is the paper's brms formula
    ``score ~ rank + (1 | topic) + (1 | system)``, where ``rank`` is numeric
    (one slope) and brms centres it.

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
    pm = require_pymc()
    check_choice(rank_effect, "rank_effect", ("linear", "categorical"))
    y = _scores(score, unit=True)
    s_code, systems = _encode(system, "system", y.size)
    t_code, topics = _encode(topic, "topic", y.size)
    r = np.asarray(rank)
    if r.shape != y.shape:
        raise ValueError(f"rank must have one entry per score ({y.size}); got shape {r.shape}")
    if not np.issubdtype(r.dtype, np.number) or (r != np.round(r)).any() or (r < 1).any():
        raise ValueError("rank must hold integers >= 1")
    r = r.astype(np.int64)
    ranks = [int(v) for v in np.unique(r)]
    has_one = bool((y == 1.0).any())
    if one_inflation is None:
        one_inflation = has_one
    elif not one_inflation and has_one:
        raise ValueError(
            "one_inflation=False gives a 1 zero probability, but score holds "
            f"{int((y == 1.0).sum())} values equal to 1; pass one_inflation=True or None"
        )
    if rank_prior_scale is not None and not rank_prior_scale > 0:
        raise ValueError(f"rank_prior_scale must be > 0 or None; got {rank_prior_scale!r}")

    def coef(name: str, dims: str | None = None, shape: int | None = None) -> Any:
        if rank_prior_scale is None:
            return pm.Flat(name, dims=dims, shape=shape)
        return pm.Normal(name, 0.0, rank_prior_scale, dims=dims, shape=shape)

    with pm.Model(coords={"system": systems, "topic": topics, "rank": ranks}) as model:
        intercept = pm.StudentT("Intercept", nu=3, mu=0.0, sigma=PRIOR_SCALE)
        if rank_effect == "linear":
            rank_term = coef("b_rank") * (r - r.mean())
        else:
            if len(ranks) < 2:
                raise ValueError("rank must hold at least 2 distinct values for rank_effect='categorical'")
            dummies = (r[:, None] == np.asarray(ranks[1:])[None, :]).astype(np.float64)
            dummies -= dummies.mean(axis=0)
            b_free = coef("b_rank_free", shape=len(ranks) - 1)
            b = pm.Deterministic("b_rank", pm.math.concatenate([np.zeros(1), b_free]), dims="rank")
            rank_term = pm.math.dot(dummies, b[1:])
        r_s = _group_effects(pm, "system")
        r_t = _group_effects(pm, "topic")
        _beta_family(pm, intercept + rank_term + r_s[s_code] + r_t[t_code], y,
                     one_inflation=one_inflation)
    return model


def model_for(family: str, data: Any, **options: Any) -> pm.Model:
    """Build the model of ``family`` from a validated frame (internal)."""
    if family == "gaussian":
        return gaussian(data["system"].to_numpy(), data["topic"].to_numpy(), data["score"].to_numpy())
    if family == "zoib":
        return zoib(data["system"].to_numpy(), data["topic"].to_numpy(), data["score"].to_numpy())
    return zoib_rank(data["system"].to_numpy(), data["topic"].to_numpy(), data["rank"].to_numpy(),
                     data["score"].to_numpy(), **options)
