from __future__ import annotations

import json
import types

import numpy as np
import pytest

from uncertank import CallableRanker, EnsembleRanker, hookimpl
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.plugins import get_plugin_manager

CALLS = {"predict": 0}


def _overlap(context, candidates, weight=1.0):
    CALLS["predict"] += 1
    last = set(context[-1].lower().split())
    return [weight * len(last & set(c.lower().split())) / (2 + len(set(c.lower().split()))) for c in candidates]


def _make_noisy_ensemble(n_members: int = 3) -> EnsembleRanker:
    weights = np.linspace(0.6, 1.0, n_members)
    members = [CallableRanker(lambda c, x, w=w: _overlap(c, x, w), name=f"m{w}") for w in weights]
    return EnsembleRanker(members, name="overlap-ensemble")


@hookimpl
def uncertank_rankers():
    return {"overlap": lambda: CallableRanker(_overlap, name="overlap"), "overlap-ensemble": _make_noisy_ensemble}


@pytest.fixture
def test_rankers():
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("test_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="test-rankers")
    yield
    get_plugin_manager(refresh=True)


@pytest.mark.slow
def test_study_runs_end_to_end_and_resumes(tmp_path, test_rankers):
    config = StudyConfig(
        name="tiny",
        train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),
                    ConditionConfig("cross-NS random", "ubuntu-sample", "random")),
        rankers=(RankerConfig("bm25"), RankerConfig("overlap"), RankerConfig("overlap-ensemble", {"n_members": 3})),
        max_train_queries=20, max_valid_queries=30, max_test_queries=40,
        risk_grid=(0.0, 0.5),
        bayes=BayesConfig(enabled=False),
    )
    result = run_study(config, tmp_path)
    eff = {(r["ranker"], r["condition"]): r for r in result["effectiveness"]}
    assert len(eff) == 6
    assert all(0.0 <= r["R@1"] <= r["R@2"] <= r["R@5"] <= 1.0 for r in eff.values())
    # bm25 is not probabilistic: no calibration row; the callable rankers are
    assert {r["ranker"] for r in result["calibration"]} == {"overlap", "overlap-ensemble"}
    assert [r["ranker"] for r in result["risk"]] == ["overlap-ensemble"] * 2
    assert {r["ranker"] for r in result["nota"]} == {"overlap", "overlap-ensemble"}
    assert "F1 means+var" in next(r for r in result["nota"] if r["ranker"] == "overlap-ensemble")
    assert result["data"]["test"] == {"in-domain": 40, "cross-NS random": 40}
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["effectiveness"] == result["effectiveness"]
    assert (tmp_path / "report.html").exists() and list((tmp_path / "figures").glob("*.png"))
    # resume: predictions are read back, nothing is scored again, same numbers
    CALLS["predict"] = 0
    again = run_study(config, tmp_path)
    assert CALLS["predict"] == 0
    assert again["effectiveness"] == result["effectiveness"]
    assert again["calibration"] == result["calibration"]
