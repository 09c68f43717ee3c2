"""The study's Bayesian stage: a fit that fails its convergence checks gives no verdict, and the study goes on."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("pymc")


@pytest.mark.slow
def test_an_unconverged_study_fit_records_no_verdict(tmp_path):
    from uncertank.experiment import demo_config
    from uncertank.experiment.systems import _fit_families

    config = demo_config("quick")
    config = replace(config, bayes=replace(config.bayes, families=("gaussian",), draws=20, tune=20, chains=2))
    lines: list[str] = []
    outcomes, steps = _fit_families(config, tmp_path, False, lines.append)
    b = outcomes["gaussian"]
    assert not b.converged and b.diagnostics["problems"]
    assert b.best_distinguishable is None and b.worst_distinguishable is None and b.risk == {}
    assert len(b.effects) == b.n_systems  # the effects describe the fit; they decide nothing
    assert any("fails its convergence checks" in line and "no verdict" in line for line in lines)
    assert "bayes gaussian" in steps
