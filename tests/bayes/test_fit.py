"""Parameter recovery: simulate from each family with known effects, fit, find the truth.

These run real NUTS (PyMC's sampler, 2 chains of 300 draws) and are marked slow.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

from uncertank.bayes import compare, zoib_rvs

pytestmark = pytest.mark.slow

pytest.importorskip("pymc")

SYS_EFFECT = np.array([-0.8, -0.3, 0.2, 0.9])  # log-odds for the beta families
N_TOPICS = 40
FIT = {"draws": 300, "tune": 300, "chains": 2, "cores": 1, "seed": 11, "sampler": "pymc"}


def _grid(seed: int, topic_sd: float, n_topics: int = N_TOPICS):
    rng = np.random.default_rng(seed)
    topic = rng.normal(0.0, topic_sd, n_topics)
    s = np.repeat(np.arange(SYS_EFFECT.size), n_topics)
    t = np.tile(np.arange(n_topics), SYS_EFFECT.size)
    return rng, s, t, topic


def _frame(s, t, y, rank=None):
    df = pd.DataFrame({"system": [f"sys{i}" for i in s], "topic": t, "score": y})
    if rank is not None:
        df["rank"] = rank
    return df


def _fit(df, family):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few draws: the diagnostics may warn; checked below
        return compare(df, family=family, **FIT)


def _centred_effects(cmp):
    r = cmp._flat("r_system")
    return r - r.mean(axis=1, keepdims=True)


def _assert_recovered(cmp, truth, *, width_limit):
    """Each centred effect's truth lies in its 99% interval, and the intervals are informative."""
    rc = _centred_effects(cmp)
    lo, hi = np.quantile(rc, [0.005, 0.995], axis=0)
    tc = truth - truth.mean()
    assert ((lo <= tc) & (tc <= hi)).all(), (lo, tc, hi)
    assert (hi - lo < width_limit).all()
    # and the ordering of the systems is recovered
    assert np.argsort(rc.mean(axis=0)).tolist() == np.argsort(truth).tolist()


def _assert_in(cmp, name, value):
    x = cmp._flat(name)
    lo, hi = np.quantile(x, [0.005, 0.995])
    assert lo <= value <= hi, (name, lo, value, hi)


def test_zoib_recovers_effects_and_its_replicates_stay_in_unit_interval_unlike_gaussian():
    # One test (not a shared fixture) so that pytest-xdist never fits the same model twice.
    rng, s, t, topic = _grid(1, 0.5)
    mu = special.expit(0.3 + SYS_EFFECT[s] + topic[t])
    data = _frame(s, t, zoib_rvs(mu, 12.0, 0.12, 0.35, rng=rng))
    fit = _fit(data, "zoib")
    _assert_recovered(fit, SYS_EFFECT, width_limit=0.9)
    _assert_in(fit, "phi", 12.0)
    _assert_in(fit, "zoi", 0.12)
    _assert_in(fit, "coi", 0.35)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diag = fit.diagnostics()
    assert diag.n_divergences == 0 and diag.max_rhat < 1.05

    rep = fit.posterior_predictive(None)
    assert rep.min() >= 0.0 and rep.max() <= 1.0
    assert (rep == 0).mean() > 0.01 and (rep == 1).mean() > 0.01  # the inflation is reproduced
    gauss = _fit(data, "gaussian")
    g_rep = gauss.posterior_predictive(None)
    outside = ((g_rep < 0) | (g_rep > 1)).mean()
    assert outside > 0.02, outside  # the paper's point: the Gaussian puts mass outside [0, 1]


def test_gaussian_recovers_system_effects():
    truth = SYS_EFFECT / 8  # score units
    rng, s, t, topic = _grid(2, 0.15)
    y = 0.5 + truth[s] + topic[t] + rng.normal(0.0, 0.08, s.size)
    cmp = _fit(_frame(s, t, y), "gaussian")
    _assert_recovered(cmp, truth, width_limit=0.12)
    _assert_in(cmp, "sigma", 0.08)


def test_zoib_rank_recovers_system_and_rank_effects():
    rng, s, t, topic = _grid(3, 0.4, n_topics=24)
    ranks = np.arange(1, 6)
    s3, t3 = np.repeat(s, ranks.size), np.repeat(t, ranks.size)
    rank = np.tile(ranks, s.size)
    b_rank = -0.25
    mu = special.expit(-1.0 + b_rank * (rank - rank.mean()) + SYS_EFFECT[s3] + topic[t3])
    y = zoib_rvs(mu, 15.0, 0.3, 0.0, rng=rng)  # zero-inflated only, like RBP gains
    cmp = _fit(_frame(s3, t3, y, rank), "zoib_rank")
    assert "coi" not in cmp.idata.posterior
    _assert_recovered(cmp, SYS_EFFECT, width_limit=0.9)
    _assert_in(cmp, "b_rank", b_rank)
    _assert_in(cmp, "zoi", 0.3)
    rep = cmp.posterior_predictive(200)
    assert rep.min() >= 0.0 and rep.max() < 1.0
