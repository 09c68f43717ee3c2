"""The study's Bayesian stage: a fit that fails its convergence checks gives no verdict, and the study goes on."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pymc")


def _disagreeing_chains(df, **_):
    """A Gaussian comparison of ``df`` whose first chain sits apart from the others: R-hat far above 1.01."""
    import arviz as az

    from uncertank.bayes import SystemComparison, check_frame

    data = check_frame(df, "gaussian")
    systems, topics = sorted(data["system"].unique()), sorted(data["topic"].unique())
    rng = np.random.default_rng(0)
    shape = (4, 200)
    r_system = 0.1 * rng.standard_normal((*shape, len(systems)))
    r_system[0] += 1.0  # chain 0 disagrees
    post = {"Intercept": 0.5 + 0.01 * rng.standard_normal(shape),
            "sd_system": np.abs(0.2 + 0.01 * rng.standard_normal(shape)),
            "sd_topic": np.abs(0.2 + 0.01 * rng.standard_normal(shape)),
            "r_system": r_system, "r_topic": 0.1 * rng.standard_normal((*shape, len(topics))),
            "sigma": np.abs(0.2 + 0.01 * rng.standard_normal(shape))}
    idata = az.from_dict(posterior=post, sample_stats={"diverging": np.zeros(shape, dtype=bool)},
                         coords={"system": systems, "topic": topics},
                         dims={"r_system": ["system"], "r_topic": ["topic"]})
    return SystemComparison(idata, data, family="gaussian", sampler="test")


def test_an_unconverged_study_fit_records_no_verdict(tmp_path, monkeypatch):
    import uncertank.bayes
    from uncertank.experiment import demo_config
    from uncertank.experiment.systems import _fit_families

    monkeypatch.setattr(uncertank.bayes, "compare", _disagreeing_chains)
    config = demo_config("quick")
    config = type(config)(**{**config.__dict__, "bayes": type(config.bayes)(
        **{**config.bayes.__dict__, "families": ("gaussian",)})})
    lines: list[str] = []
    outcomes, steps = _fit_families(config, tmp_path, False, lines.append)
    b = outcomes["gaussian"]
    assert not b.converged and any("R-hat" in p for p in b.diagnostics["problems"])
    assert b.best_distinguishable is None and b.worst_distinguishable is None and b.risk == {}
    assert len(b.effects) == b.n_systems  # the effects describe the fit; they decide nothing
    assert any("fails its convergence checks" in line and "no verdict" in line for line in lines)
    assert "bayes gaussian" in steps
