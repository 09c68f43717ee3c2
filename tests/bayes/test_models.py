"""Each model's full log-density equals the same density written with scipy.stats."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from uncertank.bayes import gaussian, zoib, zoib_rank
from uncertank.bayes.likelihood import zoib_logpdf

pm = pytest.importorskip("pymc")

S, T = 3, 5
SYS = np.repeat([f"sys{i}" for i in range(S)], T)
TOP = np.tile(np.arange(T), S)


def _scores(seed=0):
    y = np.random.default_rng(seed).uniform(0.05, 0.95, S * T)
    y[[0, 4]] = 0.0
    y[7] = 1.0
    return y


def _logp(model, point):
    # PyMC's Student-t log-density differs from scipy's by ~1e-8 (its constants), hence abs=1e-6 below.
    return float(model.compile_logp(jacobian=False, mode="FAST_COMPILE")(point))


def _random_point(model, seed):
    rng = np.random.default_rng(seed)
    return {k: np.asarray(v) + rng.normal(scale=0.4, size=np.shape(v)) for k, v in model.initial_point().items()}


def _half_t(x, scale):
    return stats.t.logpdf(x, 3, 0, scale) + np.log(2)


def _effects(pt, sys_code, top_code, scale=2.5):
    sd_s, sd_t = np.exp(pt["sd_system_log__"]), np.exp(pt["sd_topic_log__"])
    prior = _half_t(sd_s, scale) + _half_t(sd_t, scale)
    effects = []
    for name, sd, code in (("system", sd_s, sys_code), ("topic", sd_t, top_code)):
        if f"z_{name}" in pt:  # non-centred: r = sd * z, z ~ N(0, 1)
            prior += stats.norm.logpdf(pt[f"z_{name}"]).sum()
            effects.append(sd * pt[f"z_{name}"][code])
        else:  # centred: r ~ N(0, sd)
            prior += stats.norm.logpdf(pt[f"r_{name}"], 0, sd).sum()
            effects.append(pt[f"r_{name}"][code])
    return effects[0] + effects[1], prior


VARIANTS = pytest.mark.parametrize(("sufficient", "centred"), [(True, True), (False, True), (True, False),
                                                               (False, False), (True, None)])


@VARIANTS
def test_gaussian_logp_equals_scipy(sufficient, centred):
    y = np.random.default_rng(0).normal(0.5, 0.3, S * T)
    model = gaussian(SYS, TOP, y, sufficient=sufficient, centred=centred, system_effects="pooled")
    assert model.coords["system"] == ("sys0", "sys1", "sys2")
    assert model.coords["topic"] == tuple(range(T))
    pt = _random_point(model, 1)
    scale = max(2.5, 1.4826 * np.median(np.abs(y - np.median(y))))
    eff, prior = _effects(pt, np.repeat(np.arange(S), T), TOP, scale)
    sigma = np.exp(pt["sigma_log__"])
    ref = (prior + stats.t.logpdf(pt["Intercept"], 3, np.median(y), scale) + _half_t(sigma, scale)
           + stats.norm.logpdf(y, pt["Intercept"] + eff, sigma).sum())
    assert _logp(model, pt) == pytest.approx(ref, abs=1e-6)


@VARIANTS
def test_zoib_logp_equals_scipy(sufficient, centred):
    y = _scores()
    model = zoib(SYS, TOP, y, sufficient=sufficient, centred=centred, system_effects="pooled")
    pt = _random_point(model, 2)
    eff, prior = _effects(pt, np.repeat(np.arange(S), T), TOP)
    phi = np.exp(pt["phi_log__"])
    zoi, coi = special.expit(pt["zoi_logodds__"]), special.expit(pt["coi_logodds__"])
    mu = special.expit(pt["Intercept"] + eff)
    inner = stats.beta.logpdf(np.clip(y, 1e-12, 1 - 1e-12), mu * phi, (1 - mu) * phi)
    lik = np.where(y == 0, np.log(zoi * (1 - coi)), np.where(y == 1, np.log(zoi * coi), np.log(1 - zoi) + inner))
    ref = (prior + stats.t.logpdf(pt["Intercept"], 3, 0, 2.5) + stats.gamma.logpdf(phi, 0.01, scale=100)
           + stats.beta.logpdf(zoi, 1, 1) + stats.beta.logpdf(coi, 1, 1) + lik.sum())
    assert _logp(model, pt) == pytest.approx(ref, abs=1e-6)


@VARIANTS
@pytest.mark.parametrize("rank_effect", ["linear", "categorical"])
def test_zoib_rank_logp_equals_scipy(rank_effect, sufficient, centred):
    sys_ = np.repeat(SYS, 3)
    top = np.repeat(TOP, 3)
    rank = np.tile([1, 2, 3], S * T)
    y = np.random.default_rng(3).uniform(0.0, 0.2, rank.size)
    y[::4] = 0.0  # gains: many zeros, no ones
    model = zoib_rank(sys_, top, rank, y, rank_effect=rank_effect, sufficient=sufficient, centred=centred,
                      system_effects="pooled")
    assert "coi" not in model.named_vars  # one_inflation defaults to False without ones
    assert model.coords["rank"] == (1, 2, 3)
    pt = _random_point(model, 4)
    eff, prior = _effects(pt, np.repeat(np.arange(S), 3 * T), top)
    if rank_effect == "linear":
        term = pt["b_rank"] * (rank - rank.mean())
    else:
        dummies = np.stack([(rank == 2), (rank == 3)], axis=1).astype(float)
        term = (dummies - dummies.mean(axis=0)) @ pt["b_rank_free"]
    phi, zoi = np.exp(pt["phi_log__"]), special.expit(pt["zoi_logodds__"])
    mu = special.expit(pt["Intercept"] + term + eff)
    lik = zoib_logpdf(y, mu, phi, zoi, 0.0)
    ref = (prior + stats.t.logpdf(pt["Intercept"], 3, 0, 2.5) + stats.gamma.logpdf(phi, 0.01, scale=100)
           + stats.beta.logpdf(zoi, 1, 1) + lik.sum())  # b_rank: flat prior, log-density 0
    assert _logp(model, pt) == pytest.approx(ref, abs=1e-6)


def test_zoib_rank_options():
    rank = np.tile([1, 2, 3], S * T)
    y = np.full(rank.size, 0.1)
    y[0] = 1.0
    m = zoib_rank(np.repeat(SYS, 3), np.repeat(TOP, 3), rank, y, rank_prior_scale=1.0)
    assert "coi" in m.named_vars  # a 1 in the data switches one-inflation on
    assert isinstance(m["b_rank"].owner.op, type(pm.Normal.dist(0, 1).owner.op))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: zoib(SYS, TOP, _scores() + 0.5), r"score \(a beta family's\) must lie in \[0, 1\]"),
        (lambda: zoib(["a"] * (S * T), TOP, _scores()), "system must hold at least 2 distinct values; got 1"),
        (lambda: gaussian(SYS, np.zeros(S * T), _scores()), "topic must hold at least 2 distinct values"),
        (lambda: gaussian(SYS[:-1], TOP, _scores()), r"system must be 1-D with one entry per score \(15\)"),
        (lambda: gaussian(SYS, TOP, np.full(S * T, np.nan)), "score must be finite"),
        (lambda: zoib_rank(SYS, TOP, np.ones(S * T - 1), _scores()), "rank must have one entry per score"),
        (lambda: zoib_rank(SYS, TOP, np.full(S * T, 1.5), _scores()), "rank must hold integers >= 1"),
        (lambda: zoib_rank(SYS, TOP, np.ones(S * T), _scores(), rank_effect="spline"),
         "rank_effect must be one of 'linear', 'categorical'"),
        (lambda: zoib_rank(SYS, TOP, np.ones(S * T), _scores(), one_inflation=False),
         "one_inflation=False gives a 1 zero probability"),
        (lambda: zoib_rank(SYS, TOP, np.ones(S * T), _scores(), rank_prior_scale=0.0),
         "rank_prior_scale must be > 0 or None"),
        (lambda: zoib_rank(SYS, TOP, np.ones(S * T), _scores(), rank_effect="categorical"),
         "at least 2 distinct values for rank_effect='categorical'"),
    ],
)
def test_model_input_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_missing_pymc_names_the_extra(monkeypatch):
    import sys

    from uncertank import _optional

    monkeypatch.setitem(sys.modules, "pymc", None)
    with pytest.raises(ImportError, match=r'pip install "uncertank\[bayes\]"'):
        _optional.require_pymc()
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r'pip install "uncertank\[bayes\]"'):
        _optional.require_arviz()


def test_import_is_light():
    import subprocess
    import sys

    code = ("import sys, uncertank.bayes, uncertank.cli.compare_cmd; "
            "print(sorted(m for m in ('pymc', 'pytensor', 'arviz', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _multi_cell_data(family, seed=0):
    """Several observations per cell (so that the cell statistics really aggregate), with 0s and 1s."""
    rng = np.random.default_rng(seed)
    reps = 3
    sys_ = np.repeat(SYS, reps)
    top = np.repeat(TOP, reps)
    if family == "gaussian":
        return sys_, top, None, rng.normal(0.5, 0.3, sys_.size)
    y = rng.uniform(0.02, 0.98, sys_.size)
    y[rng.random(y.size) < 0.15] = 0.0
    if family == "zoib":
        y[rng.random(y.size) < 0.1] = 1.0
        return sys_, top, None, y
    rank = np.tile([1, 2, 3], sys_.size // 3)  # each (system, topic) has ranks 1..3: cells are per rank
    return np.repeat(sys_, 2), np.repeat(top, 2), np.repeat(rank, 2), np.repeat(y, 2)  # 2 obs per cell


def _pair(family, sufficient, centred, data):
    sys_, top, rank, y = data
    if family == "gaussian":
        return gaussian(sys_, top, y, sufficient=sufficient, centred=centred)
    if family == "zoib":
        return zoib(sys_, top, y, sufficient=sufficient, centred=centred)
    return zoib_rank(sys_, top, rank, y, sufficient=sufficient, centred=centred)


@pytest.mark.parametrize("centred", [True, False])
@pytest.mark.parametrize("family", ["gaussian", "zoib", "zoib_rank"])
def test_sufficient_statistics_give_the_per_observation_log_density(family, centred):
    data = _multi_cell_data(family)
    cells = _pair(family, True, centred, data)
    per_obs = _pair(family, False, centred, data)
    assert "score_loglik" in cells.named_vars and "score" in per_obs.named_vars
    logp_c = cells.compile_logp(mode="FAST_COMPILE")
    logp_o = per_obs.compile_logp(mode="FAST_COMPILE")
    dlogp_c = cells.compile_dlogp(mode="FAST_COMPILE")
    dlogp_o = per_obs.compile_dlogp(mode="FAST_COMPILE")
    for seed in range(5):
        pt = _random_point(per_obs, 10 + seed)
        a, b = float(logp_c(pt)), float(logp_o(pt))
        assert np.isfinite(a) and abs(a - b) <= 1e-8 * max(1.0, abs(b)), (a, b)
        np.testing.assert_allclose(dlogp_c(pt), dlogp_o(pt), rtol=1e-8, atol=1e-8)


def test_design_reduces_to_cells():
    from uncertank.bayes import design

    sys_, top, _, y = _multi_cell_data("zoib")
    d = design(sys_, top, y, family="zoib")
    assert d.n_obs == y.size and d.n_cells == S * T and (d.n == 3).all()
    for c in range(d.n_cells):
        ys = y[d.obs_cell == c]
        inner = ys[(ys > 0) & (ys < 1)]
        assert d.n0[c] == (ys == 0).sum() and d.n1[c] == (ys == 1).sum()
        assert d.sum_log_y[c] == pytest.approx(np.log(inner).sum())
        assert d.sum_log1m_y[c] == pytest.approx(np.log1p(-inner).sum())
        assert d.mean[c] == pytest.approx(ys.mean()) and d.ss[c] == pytest.approx(((ys - ys.mean()) ** 2).sum())
        assert d.systems[d.cell_system[c]] == sys_[d.obs_cell == c][0]
    r_sys, r_top, r_rank, r_y = _multi_cell_data("zoib_rank")
    dr = design(r_sys, r_top, r_y, r_rank, family="zoib_rank")
    assert dr.n_cells == S * T * 3 and dr.ranks == (1, 2, 3)
    np.testing.assert_allclose(dr.cell_rank[dr.obs_cell], r_rank - r_rank.mean())
    with pytest.raises(ValueError, match="rank must be given for family 'zoib_rank'"):
        design(r_sys, r_top, r_y, family="zoib_rank")


@pytest.mark.parametrize("centred", [True, False])
@pytest.mark.parametrize(("family", "rank_effect"), [("gaussian", "linear"), ("zoib", "linear"),
                                                     ("zoib_rank", "linear"), ("zoib_rank", "categorical")])
def test_numpy_linear_predictor_equals_the_pymc_graph(family, rank_effect, centred):
    """The posterior predictive's linear predictor is the model's: evaluated by PyMC, then by NumPy."""
    from uncertank.bayes import design, linear_predictor
    from uncertank.bayes.models import _build

    sys_, top, rank, y = _multi_cell_data(family)
    d = design(sys_, top, y, rank, family=family, rank_effect=rank_effect)
    model, eta = _build(d, centred=centred)
    names = ["Intercept", "r_system", "r_topic"] + (["b_rank"] if family == "zoib_rank" else [])
    import pytensor

    outs = model.replace_rvs_by_values([eta, *(model[n] for n in names)])
    graph = pytensor.function(model.value_vars, outs, on_unused_input="ignore", mode="FAST_COMPILE")
    for seed in range(3):
        pt = _random_point(model, 20 + seed)
        eta_graph, *values = graph(*(pt[v.name] for v in model.value_vars))
        params = {n: np.asarray(v)[None, ...] for n, v in zip(names, values, strict=True)}  # one draw
        np.testing.assert_allclose(linear_predictor(params, d)[0], eta_graph, rtol=1e-12, atol=1e-12)


def test_posterior_predictive_moments_follow_the_likelihood():
    from uncertank.bayes import design, posterior_predictive

    sys_, top, _, y = _multi_cell_data("zoib")
    d = design(sys_, top, y, family="zoib")
    rng = np.random.default_rng(0)
    n = 4000
    r_sys, r_top = np.array([0.5, 0.0, -0.5]), np.linspace(-0.4, 0.4, T)
    params = {"Intercept": np.full(n, 0.3), "r_system": np.tile(r_sys, (n, 1)), "r_topic": np.tile(r_top, (n, 1)),
              "phi": np.full(n, 6.0), "zoi": np.full(n, 0.2), "coi": np.full(n, 0.25)}
    rep = posterior_predictive(d, params, rng=rng)
    assert rep.shape == (n, d.n_obs) and rep.min() >= 0 and rep.max() <= 1
    mu = special.expit(0.3 + r_sys[d.cell_system] + r_top[d.cell_topic])
    expected = (0.8 * mu + 0.2 * 0.25)[d.obs_cell]  # E[y] = (1 - zoi) mu + zoi coi
    np.testing.assert_allclose(rep.mean(axis=0), expected, atol=0.03)
    assert (rep == 0).mean() == pytest.approx(0.2 * 0.75, abs=0.01)
    gauss = design(sys_, top, y, family="gaussian")
    g = posterior_predictive(gauss, {**params, "sigma": np.full(n, 0.1)}, rng=rng)
    np.testing.assert_allclose(g.std(axis=0), 0.1, rtol=0.1)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [({"sufficient": 1}, TypeError, "sufficient must be a bool; got int"),
     ({"centred": "yes"}, TypeError, "centred must be a bool or None; got str"),
     ({"system_effects": "random"}, ValueError, "system_effects must be None, 'pooled' or 'fixed'; got 'random'")],
)
def test_model_option_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        zoib(SYS, TOP, _scores(), **kwargs)


@pytest.mark.parametrize(
    ("n_sys", "n_top", "reps", "expected"),
    [(42, 30, 1, {"system": True, "topic": True}),  # TREC-COVID round 1
     (3, 5, 1, {"system": False, "topic": False}),  # few levels: the funnel
     (10, 5, 3, {"system": True, "topic": False}),  # 15 scores per system, but only 5 topics
     (40, 12, 1, {"system": True, "topic": True}),
     (20, 12, 1, {"system": True, "topic": True}),
     (30, 9, 1, {"system": False, "topic": False})],  # 9 scores per system, 9 topics
)
def test_centred_rule_per_group(n_sys, n_top, reps, expected):
    from uncertank.bayes import design
    from uncertank.bayes.models import _build, choose_centred

    sys_ = np.repeat(np.arange(n_sys), n_top * reps)
    top = np.tile(np.repeat(np.arange(n_top), reps), n_sys)
    d = design(sys_, top, np.full(sys_.size, 0.5), family="zoib")
    assert choose_centred(d) == expected
    assert choose_centred(d, False) == {"system": False, "topic": False}
    model, _ = _build(d, system_effects="pooled")  # the centring rule is about pooled effects
    for group, centred in expected.items():
        assert (f"z_{group}" in model.named_vars) is (not centred)
        assert (model[f"r_{group}"] in model.free_RVs) is centred


@pytest.mark.parametrize("sufficient", [True, False])
def test_fixed_system_effects_sum_to_zero_under_a_fixed_scale_prior(sufficient):
    """Below 10 systems the default: r_system ~ ZeroSumNormal(s), its log-density written out in numpy."""
    y = np.random.default_rng(0).normal(0.5, 0.3, S * T)
    model = gaussian(SYS, TOP, y, sufficient=sufficient)  # 3 systems: fixed by default
    assert "sd_system" not in model.named_vars and "sd_topic" in model.named_vars
    pooled = gaussian(SYS, TOP, y, sufficient=sufficient, system_effects="pooled")
    assert "sd_system" in pooled.named_vars
    pt = _random_point(model, 2)
    value = model.replace_rvs_by_values([model["r_system"]])[0]  # r_system at the point, not a draw
    r = model.compile_fn(value, inputs=model.value_vars, mode="FAST_COMPILE", on_unused_input="ignore")(pt)
    assert r.shape == (S,) and abs(r.sum()) < 1e-12
    scale = max(2.5, 1.4826 * np.median(np.abs(y - np.median(y))))
    # ZeroSumNormal's density on the (S - 1)-dimensional plane: S normal terms with S - 1 normalising constants
    zero_sum = -0.5 * np.sum((r / scale) ** 2) - (S - 1) * (0.5 * np.log(2 * np.pi) + np.log(scale))
    sd_t = np.exp(pt["sd_topic_log__"])
    top = pt["r_topic"] if "r_topic" in pt else sd_t * pt["z_topic"]
    topic_prior = _half_t(sd_t, scale) + (stats.norm.logpdf(pt["r_topic"], 0, sd_t).sum() if "r_topic" in pt
                                          else stats.norm.logpdf(pt["z_topic"]).sum())
    sigma = np.exp(pt["sigma_log__"])
    eff = r[np.repeat(np.arange(S), T)] + top[TOP]
    ref = (zero_sum + topic_prior + stats.t.logpdf(pt["Intercept"], 3, np.median(y), scale) + _half_t(sigma, scale)
           + stats.norm.logpdf(y, pt["Intercept"] + eff, sigma).sum())
    assert _logp(model, pt) == pytest.approx(ref, abs=1e-6)
