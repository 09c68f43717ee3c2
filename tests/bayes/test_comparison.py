"""SystemComparison on hand-built posteriors (fast) and compare() argument checks."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uncertank.bayes import (
    ConvergenceError,
    ConvergenceWarning,
    SystemComparison,
    compare,
    linear_predictor,
    urisk,
    zrisk,
)

az = pytest.importorskip("arviz")

SYSTEMS = ["alpha", "bravo", "charlie", "delta", "echo"]
TOPICS = list(range(1, 9))
TRUE = np.array([0.8, 0.3, 0.0, -0.1, -0.9])


def _data(family: str, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"system": np.repeat(SYSTEMS, len(TOPICS)), "topic": np.tile(TOPICS, len(SYSTEMS))})
    if family == "zoib_rank":
        df = df.loc[df.index.repeat(3)].reset_index(drop=True)
        df["rank"] = np.tile([1, 2, 3], len(SYSTEMS) * len(TOPICS))
        df["score"] = rng.uniform(0, 0.2, len(df)) * (rng.random(len(df)) < 0.6)
    else:
        df["score"] = rng.uniform(size=len(df))
        if family == "zoib":
            df.loc[[0, 5], "score"] = [0.0, 1.0]
    return df


def _fake(family: str = "zoib", *, n_chains: int = 4, n_draws: int = 500, sd: float = 0.1,
          shift: float = 0.0, divergences: int = 0, seed: int = 0) -> SystemComparison:
    """A comparison whose posterior is drawn directly: r_system ~ N(TRUE, sd), independent."""
    rng = np.random.default_rng(seed)
    shape = (n_chains, n_draws)
    r_sys = TRUE + sd * rng.standard_normal((*shape, len(SYSTEMS)))
    r_sys += shift * np.arange(n_chains)[:, None, None]  # chains that disagree
    post = {
        "Intercept": 0.2 + 0.05 * rng.standard_normal(shape),
        "sd_system": np.abs(0.6 + 0.05 * rng.standard_normal(shape)),
        "sd_topic": np.abs(0.4 + 0.05 * rng.standard_normal(shape)),
        "r_system": r_sys,
        "r_topic": 0.3 * rng.standard_normal((*shape, len(TOPICS))),
    }
    if family == "gaussian":
        post["sigma"] = np.abs(0.3 + 0.01 * rng.standard_normal(shape))
    else:
        post["phi"] = np.abs(3.0 + 0.1 * rng.standard_normal(shape))
        post["zoi"] = np.clip(0.1 + 0.01 * rng.standard_normal(shape), 0.01, 0.99)
        if family == "zoib":
            post["coi"] = np.clip(0.4 + 0.02 * rng.standard_normal(shape), 0.01, 0.99)
        else:
            post["b_rank"] = -0.3 + 0.02 * rng.standard_normal(shape)
    coords = {"system": SYSTEMS, "topic": TOPICS}
    dims = {"r_system": ["system"], "r_topic": ["topic"]}
    diverging = np.zeros(shape, dtype=bool)
    diverging.ravel()[:divergences] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = az.from_dict(posterior=post, sample_stats={"diverging": diverging}, coords=coords, dims=dims)
    data = _data(family, seed)
    from uncertank.bayes import check_frame

    return SystemComparison(idata, check_frame(data, family), family=family, sampler="test",
                            timings={"sample_s": 1.0}, seed=seed)


def test_system_effects_match_direct_quantiles():
    cmp = _fake()
    eff = cmp.system_effects()
    assert eff["system"].tolist() == SYSTEMS  # TRUE is already in decreasing order
    r = np.asarray(cmp.idata.posterior["r_system"]).reshape(-1, len(SYSTEMS))
    np.testing.assert_allclose(eff["mean"], r.mean(axis=0))
    np.testing.assert_allclose(eff["lower"], np.quantile(r, 0.025, axis=0))
    np.testing.assert_allclose(eff["upper"], np.quantile(r, 0.975, axis=0))
    eff80 = cmp.system_effects(prob=0.8)
    assert (eff80["upper"] - eff80["lower"] < eff["upper"] - eff["lower"]).all()
    with pytest.raises(ValueError, match=r"prob must lie in \(0, 1\); got 1.5"):
        cmp.system_effects(prob=1.5)


def _plain_distinguishable(r, ref, method, prob=0.95):
    lo_q, hi_q = (1 - prob) / 2, (1 + prob) / 2
    out = {}
    for j in range(r.shape[1]):
        if j == ref:
            continue
        if method == "interval":
            a_lo, a_hi = np.quantile(r[:, ref], [lo_q, hi_q])
            b_lo, b_hi = np.quantile(r[:, j], [lo_q, hi_q])
            if a_lo > b_hi:
                out[SYSTEMS[j]] = "better"
            elif a_hi < b_lo:
                out[SYSTEMS[j]] = "worse"
        else:
            d_lo, d_hi = np.quantile(r[:, ref] - r[:, j], [lo_q, hi_q])
            if d_lo > 0:
                out[SYSTEMS[j]] = "better"
            elif d_hi < 0:
                out[SYSTEMS[j]] = "worse"
    return out


@pytest.mark.parametrize("method", ["interval", "contrast"])
@pytest.mark.parametrize("reference", ["best", "worst", "charlie", "delta"])
def test_distinguishable_matches_plain_loop(method, reference):
    cmp = _fake(sd=0.12)
    r = np.asarray(cmp.idata.posterior["r_system"]).reshape(-1, len(SYSTEMS))
    ref = {"best": 0, "worst": 4}.get(reference, SYSTEMS.index(reference) if reference in SYSTEMS else -1)
    got = cmp.distinguishable(reference, method=method)
    assert dict(zip(got["system"], got["relation"], strict=True)) == _plain_distinguishable(r, ref, method)
    if len(got):
        np.testing.assert_allclose(
            got["p_better"], [(r[:, ref] > r[:, SYSTEMS.index(s)]).mean() for s in got["system"]])


def test_contrast_separates_more_than_intervals():
    # charlie (0.0) and delta (-0.1) with sd 0.06: intervals overlap, the contrast may not.
    cmp = _fake(sd=0.06)
    assert len(cmp.distinguishable("charlie", method="contrast")) >= len(cmp.distinguishable("charlie"))


def test_distinguishable_errors():
    cmp = _fake()
    with pytest.raises(ValueError, match="reference must be 'best', 'worst' or a system name; got 'zulu'"):
        cmp.distinguishable("zulu")
    with pytest.raises(ValueError, match="method must be one of 'interval', 'contrast'; got 'overlap'"):
        cmp.distinguishable(method="overlap")  # type: ignore[arg-type]


def test_diagnostics_pass_warn_and_strict():
    good = _fake()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = good.diagnostics()
    assert d.ok and d.max_rhat < 1.01 and d.n_divergences == 0 and d.to_dict()["ok"] is True
    bad = _fake(shift=0.5, seed=1)
    with pytest.warns(ConvergenceWarning, match=r"max R-hat .* > 1.01 \(r_system\["):
        d = bad.diagnostics()
    assert not d.ok and d.max_rhat > 1.1
    with pytest.raises(ConvergenceError, match="fails convergence checks"):
        bad.diagnostics(strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bad.diagnostics()  # warned once already
    div = _fake(divergences=3, seed=2)
    with pytest.warns(ConvergenceWarning, match="3 divergent transitions"):
        assert div.diagnostics().n_divergences == 3
    one = _fake(n_chains=1, seed=3)
    with pytest.warns(ConvergenceWarning, match="R-hat unavailable with 1 chain"):
        assert np.isnan(one.diagnostics().max_rhat)
    short = _fake(n_draws=40, seed=4)
    with pytest.warns(ConvergenceWarning, match="min bulk ESS"):
        short.diagnostics()


def test_posterior_predictive_zoib_in_unit_interval_and_moments():
    cmp = _fake("zoib")
    rep = cmp.posterior_predictive(2000)
    assert rep.shape == (2000, len(cmp.data))
    assert rep.min() >= 0.0 and rep.max() <= 1.0
    assert (rep == 0).any() and (rep == 1).any()
    # E[y] = (1 - zoi) mu + zoi coi, averaged over the same draws
    idx = cmp._draw_index(2000)
    mu = 1 / (1 + np.exp(-linear_predictor(cmp.params(idx), cmp.design)[:, cmp.design.obs_cell]))
    zoi = cmp._flat("zoi")[idx, None]
    coi = cmp._flat("coi")[idx, None]
    expected = ((1 - zoi) * mu + zoi * coi).mean(axis=0)
    np.testing.assert_allclose(rep.mean(axis=0), expected, atol=0.05)
    assert cmp.posterior_predictive(2000) is rep  # cached
    assert not np.array_equal(cmp.posterior_predictive(2000, seed=9), rep)


def test_posterior_predictive_gaussian_leaves_unit_interval():
    cmp = _fake("gaussian")
    rep = cmp.posterior_predictive(500)
    assert ((rep < 0) | (rep > 1)).mean() > 0.01


def test_replicate_matrix_sums_ranks():
    cmp = _fake("zoib_rank")
    rep = cmp.posterior_predictive(50)
    mat = cmp.replicate_matrix(50)
    assert mat.shape == (50, len(SYSTEMS), len(TOPICS))
    rows = cmp.data.index[(cmp.data["system"] == "bravo") & (cmp.data["topic"] == 3)]
    np.testing.assert_allclose(mat[:, 1, 2], rep[:, rows].sum(axis=1))
    obs = cmp.observed_matrix()
    assert obs[1, 2] == pytest.approx(cmp.data.loc[rows, "score"].sum())


def test_urisk_on_replicates():
    cmp = _fake("zoib")
    table = cmp.urisk("charlie", r=2, n_draws=400)
    assert "charlie" not in set(table["system"]) and len(table) == 4
    mat = cmp.replicate_matrix(400)
    per_draw = urisk(mat, mat[:, [2], :], r=2)
    by_sys = dict(zip(table["system"], table["urisk"], strict=True))
    for i, s in enumerate(SYSTEMS):
        if s != "charlie":
            assert by_sys[s] == pytest.approx(per_draw[:, i].mean())
    obs = cmp.observed_matrix()
    obs_u = dict(zip(table["system"], table["urisk_observed"], strict=True))
    assert obs_u["alpha"] == pytest.approx(float(urisk(obs[0], obs[2], r=2)))
    z = zrisk(mat, r=2).mean(axis=0)
    assert dict(zip(table["system"], table["zrisk"], strict=True))["echo"] == pytest.approx(z[4])
    assert table["urisk"].is_monotonic_increasing  # least risky first under "benham"
    assert (table["urisk_lower"] <= table["urisk"]).all() and (table["urisk"] <= table["urisk_upper"]).all()
    trec = cmp.urisk("charlie", r=1, convention="trec", n_draws=400)
    assert trec["urisk"].is_monotonic_decreasing
    np.testing.assert_allclose(
        trec.set_index("system").loc[SYSTEMS[:2], "urisk"], -table.set_index("system").loc[SYSTEMS[:2], "urisk"])


def test_urisk_errors():
    cmp = _fake("zoib")
    with pytest.raises(ValueError, match="baseline must be one of the compared systems; got 'bm25'"):
        cmp.urisk("bm25")
    with pytest.raises(ValueError, match="convention must be one of"):
        cmp.urisk("alpha", convention="nist")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n_draws must be an integer"):
        cmp.urisk("alpha", n_draws=2.5)  # type: ignore[arg-type]


def test_urisk_incomplete_matrix_skips_zrisk():
    cmp = _fake("zoib")
    cmp2 = SystemComparison(cmp.idata, cmp.data.iloc[1:].reset_index(drop=True), family="zoib", sampler="test")
    table = cmp2.urisk("charlie", n_draws=50)
    assert table["zrisk"].isna().all() and table["urisk"].notna().all()


def test_netcdf_round_trip(tmp_path: Path):
    cmp = _fake("zoib_rank")
    path = cmp.to_netcdf(tmp_path / "sub" / "fit.nc")
    assert path.is_file() and [p.name for p in path.parent.iterdir()] == ["fit.nc"]  # no temp file left
    back = SystemComparison.from_netcdf(path)
    assert back.family == "zoib_rank" and back.sampler == "test" and back.timings == {"sample_s": 1.0}
    pd.testing.assert_frame_equal(back.system_effects(), cmp.system_effects())
    pd.testing.assert_frame_equal(back.data, cmp.data)
    np.testing.assert_array_equal(back.posterior_predictive(20), cmp.posterior_predictive(20))
    back.to_netcdf(path)  # rewriting a loaded comparison works too
    named = _fake("zoib")
    named.data["topic"] = named.data["topic"].map(lambda t: f"T{t}")
    named_idata = named.idata.assign_coords(topic=[f"T{t}" for t in TOPICS], groups="posterior")
    named = SystemComparison(named_idata, named.data, family="zoib", sampler="test")
    back2 = SystemComparison.from_netcdf(named.to_netcdf(tmp_path / "named.nc"))
    assert back2.topics == [f"T{t}" for t in TOPICS] and back2.data["topic"].tolist()[:2] == ["T1", "T2"]


def test_from_netcdf_errors(tmp_path: Path):
    with pytest.raises(ValueError, match="must be an existing netCDF file"):
        SystemComparison.from_netcdf(tmp_path / "none.nc")
    other = tmp_path / "plain.nc"
    cmp = _fake()
    az.InferenceData(posterior=cmp.idata.posterior).to_netcdf(str(other))
    with pytest.raises(ValueError, match="no uncertank_data group"):
        SystemComparison.from_netcdf(other)


def test_comparison_rejects_foreign_data():
    cmp = _fake()
    with pytest.raises(ValueError, match="no coords for"):
        SystemComparison(cmp.idata, cmp.data.assign(system="zulu"), family="zoib", sampler="test")


def test_plots(tmp_path: Path):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    cmp = _fake("zoib")
    ax = cmp.plot_effects()
    assert [t.get_text() for t in ax.get_yticklabels()] == SYSTEMS
    ax = cmp.plot_effects(top=1, bottom=1)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["alpha", "echo"]
    ax = cmp.plot_ppc(n_replicates=12)
    assert len(ax.lines) == 12 + 2  # replicates, observed, legend proxy
    assert ax.get_xlim() == (0.0, 1.0) and "outside" not in ax.get_title()
    gax = _fake("gaussian").plot_ppc(n_replicates=5)
    assert gax.get_xlim()[0] < 0 and "of replicated scores outside [0, 1]" in gax.get_title()
    ax.figure.savefig(tmp_path / "ppc.png")
    assert (tmp_path / "ppc.png").stat().st_size > 1000
    with pytest.raises(TypeError, match="n_replicates must be an integer"):
        cmp.plot_ppc(n_replicates=1.5)  # type: ignore[arg-type]
    plt.close("all")


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"family": "beta"}, ValueError, "family must be one of 'gaussian', 'zoib', 'zoib_rank'"),
        ({"sampler": "stan"}, ValueError, "sampler must be one of 'auto', 'pymc', 'nutpie', 'numpyro'"),
        ({"draws": 0}, ValueError, "draws must be an integer >= 1"),
        ({"chains": 2.0}, TypeError, "chains must be an integer"),
        ({"tune": -1}, ValueError, "tune must be an integer >= 0"),
        ({"seed": -3}, ValueError, "seed must be an integer >= 0"),
        ({"seed": "0"}, TypeError, "seed must be an integer >= 0"),
        ({"target_accept": 1.0}, ValueError, r"target_accept must lie in \(0, 1\)"),
        ({"drop_bottom": 1.0}, ValueError, r"drop_bottom must lie in \[0, 1\)"),
        ({"model_options": {"rank_effect": "linear"}}, ValueError,
         r"model_options for family 'zoib' take \['sufficient', 'centred', 'system_effects'\]; "
         r"got unknown \['rank_effect'\]"),
        ({"target_ess": 0}, ValueError, "target_ess must be a number > 0 or None; got 0"),
        ({"target_ess": 100, "time_budget": -1}, ValueError, "time_budget must be a number of seconds > 0"),
        ({"time_budget": 10}, ValueError, "time_budget applies with target_ess only"),
        ({"max_draws": 10}, ValueError, "max_draws applies with target_ess only"),
        ({"target_ess": 100, "max_draws": 10}, ValueError, "max_draws must be an integer >= 1000"),
        ({"cores": 0}, ValueError, "cores must be an integer >= 1"),
    ],
)
def test_compare_argument_errors(kwargs, exc, match):
    args = {"family": "zoib", **kwargs}
    with pytest.raises(exc, match=match):
        compare(_data("zoib"), **args)


def test_compare_rejects_bad_frames_before_sampling():
    with pytest.raises(ValueError, match=r"\(family 'zoib'\) must lie in \[0, 1\]"):
        compare(_data("zoib").assign(score=lambda d: d["score"] + 1), family="zoib")
    with pytest.raises(ValueError, match=r"missing \['rank'\]"):
        compare(_data("zoib"), family="zoib_rank")


def _title_inside(fig, ax) -> bool:
    fig.canvas.draw()
    box = ax.title.get_window_extent(fig.canvas.get_renderer())
    return bool(box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1)


def test_gaussian_ppc_title_is_not_clipped(tmp_path: Path):
    """The old one-line title ran past the figure's edges; now its second line carries the share outside [0, 1]."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    cmp = _fake("gaussian")
    ax = cmp.plot_ppc(n_replicates=5)
    fig = ax.figure
    fig.tight_layout()
    assert _title_inside(fig, ax)
    old = ax.get_title().replace("\n", " (") + ")"  # the old single-line title, for the record
    ax.set_title(old, fontsize=9)
    assert not _title_inside(fig, ax)
    plt.close(fig)
    path = cmp.write_ppc_figure(tmp_path / "figs" / "ppc.png", n_replicates=5)
    assert path.stat().st_size > 1000 and [p.name for p in path.parent.iterdir()] == ["ppc.png"]
    eff = cmp.write_effects_figure(tmp_path / "figs" / "effects.svg", top=2)
    assert eff.read_text().startswith("<?xml")
    assert not plt.get_fignums()  # the written figures were closed


def test_effects_figure_drawn_on_a_subfigure_is_written(tmp_path: Path):
    """An axes on a subfigure: the whole figure is written (a SubFigure has neither tight_layout nor savefig)."""
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    cmp = _fake("gaussian")
    fig = plt.figure()
    ax = fig.subfigures(1, 2)[0].subplots()
    path = cmp.write_effects_figure(tmp_path / "effects.png", top=2, ax=ax)
    assert path.stat().st_size > 1000
    assert not plt.get_fignums()  # the whole figure was closed


def test_gate_survives_netcdf(tmp_path: Path):
    from uncertank.bayes import Gate

    cmp = _fake("zoib")
    gate = Gate(target_ess=1000.0, time_budget=30.0, met=False, budget_exhausted=True,
                reason="time budget of 30 s ran out", draws=500, rounds=4, min_ess_bulk=812.5, max_rhat=1.004,
                elapsed_s=30.2)
    with_gate = SystemComparison(cmp.idata, cmp.data, family="zoib", sampler="nutpie", gate=gate)
    back = SystemComparison.from_netcdf(with_gate.to_netcdf(tmp_path / "g.nc"))
    assert back.gate == gate
    assert SystemComparison.from_netcdf(cmp.to_netcdf(tmp_path / "n.nc")).gate is None


def test_params_follow_the_design_whatever_the_coord_order():
    """A posterior whose system coords are in another order still feeds the predictor the right effects."""
    cmp = _fake("zoib", sd=0.01)
    post = cmp.idata.posterior
    rev = post.isel(system=slice(None, None, -1))  # same draws, coords reversed: e, d, c, b, a
    idata = az.InferenceData(posterior=rev, sample_stats=cmp.idata.sample_stats)
    flipped = SystemComparison(idata, cmp.data, family="zoib", sampler="test")
    assert flipped.systems == SYSTEMS[::-1]
    np.testing.assert_allclose(flipped.params()["r_system"], cmp.params()["r_system"])
    eff = flipped.system_effects().set_index("system")["mean"]
    np.testing.assert_allclose(eff.loc[SYSTEMS], TRUE, atol=0.01)
    np.testing.assert_allclose(flipped.posterior_predictive(300).mean(axis=0),
                               cmp.posterior_predictive(300).mean(axis=0), atol=1e-12)
