"""The study's Bayesian stage: a fit that fails its convergence checks gives no verdict, and the study goes on."""

from __future__ import annotations

import pytest

pytest.importorskip("pymc")


def _disagreeing_chains(df, **_):
    """The compare test's directly drawn comparison, with its first chain moved apart: R-hat far above 1.01."""
    from tests.bayes.test_cli import _fitted
    from uncertank.bayes import SystemComparison

    cmp = _fitted(df)
    cmp.idata.posterior["r_system"][0] += 1.0  # chain 0 disagrees
    return SystemComparison(cmp.idata, cmp.data, family="gaussian", sampler="test")


def test_an_unconverged_study_fit_records_no_verdict(tmp_path, monkeypatch):
    import uncertank.bayes
    from uncertank.experiment import demo_config
    from uncertank.experiment.systems import compare_systems

    monkeypatch.setattr(uncertank.bayes, "compare", _disagreeing_chains)
    config = demo_config("quick")
    config = type(config)(**{**config.__dict__, "bayes": type(config.bayes)(
        **{**config.bayes.__dict__, "families": ("gaussian",)})})
    lines: list[str] = []
    outcomes, steps = compare_systems(config, tmp_path, resume=False, log=lines.append)
    b = outcomes["gaussian"]
    assert not b.converged and any("R-hat" in p for p in b.diagnostics["problems"])
    assert b.best_distinguishable is None and b.worst_distinguishable is None and b.risk == {}
    assert len(b.effects) == b.n_systems  # the effects describe the fit; they decide nothing
    assert any("fails its convergence checks" in line and "no verdict" in line for line in lines)
    assert b.fits == 2 and any("fitting again with 600 draws" in line for line in lines)  # one retry, then none
    assert "bayes gaussian" in steps


def test_a_fits_step_records_its_estimate_beside_its_seconds(tmp_path, monkeypatch):
    """The plan's ``bayes <family>`` estimate reaches the fit's log line and its step in results.json."""
    import uncertank.bayes
    from uncertank.experiment import demo_config
    from uncertank.experiment.systems import compare_systems

    monkeypatch.setattr(uncertank.bayes, "compare", _disagreeing_chains)
    config = demo_config("quick")
    config = type(config)(**{**config.__dict__, "bayes": type(config.bayes)(
        **{**config.bayes.__dict__, "families": ("gaussian",), "retries": 0})})
    lines: list[str] = []
    _, steps = compare_systems(config, tmp_path, resume=False, log=lines.append, estimates={"bayes gaussian": 7.5})
    assert steps["bayes gaussian"].estimated_seconds == 7.5
    assert any(line.startswith("bayes: the gaussian fit took ") and line.endswith("(estimated 8 s)")
               for line in lines), lines
    _, steps = compare_systems(config, tmp_path / "none", resume=False, log=lines.append)
    assert steps["bayes gaussian"].estimated_seconds is None
