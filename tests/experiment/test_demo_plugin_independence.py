"""The demo's study is fixed: installing a plugin (the example's `beta` recalibrator) does not change its results."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from uncertank.experiment import demo_config, run_study
from uncertank.experiment.config import BayesConfig, RankerConfig
from uncertank.plugins import get_plugin_manager, registry

pytest.importorskip("torch")
pytest.importorskip("uncertank_tfidf")  # the example plugin: its beta recalibrator is what joined the demo before


def _tiny_quick_demo():
    """The quick demo's study with its sizes, rankers and Bayesian stage shrunk; its metrics and recalibrators kept."""
    from uncertank.nn.testing import tiny_config

    quick = demo_config("quick")
    params = {"backbone": tiny_config(), "max_length": 32, "epochs": 1, "batch_size": 8, "device": "cpu", "seed": 0}
    return replace(quick, rankers=(RankerConfig("bert", params),), reference="bert", conditions=quick.conditions[:1],
                   max_train_queries=6, max_valid_queries=6, max_test_queries=6, nota=False, risk_grid=(0.0,),
                   bayes=BayesConfig(enabled=False))


def _numbers(folder):
    saved = json.loads((folder / "results.json").read_text())
    return saved["config"], saved["metric_info"], saved["evaluations"]


@pytest.mark.slow
def test_the_demo_gives_the_same_results_with_and_without_the_example_plugin(tmp_path, monkeypatch):
    config = _tiny_quick_demo()
    assert "beta" in registry("recalibrators")  # installed: it would have joined a study naming none
    run_study(config, tmp_path / "with")
    monkeypatch.setenv("UNCERTANK_PLUGINS", "bert")  # only the bert plugin among the third-party ones
    get_plugin_manager(refresh=True)
    try:
        assert "beta" not in registry("recalibrators")
        run_study(config, tmp_path / "without")
    finally:
        monkeypatch.delenv("UNCERTANK_PLUGINS")
        get_plugin_manager(refresh=True)
    with_plugin, without = _numbers(tmp_path / "with"), _numbers(tmp_path / "without")
    assert with_plugin == without
    (ev,) = with_plugin[2]
    assert sorted(ev["recalibrated"]) == ["histogram", "isotonic", "platt", "temperature"]
