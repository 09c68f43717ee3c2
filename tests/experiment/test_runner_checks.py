"""The runner checks every prediction before caching it, recomputes after a code edit, and runs pretrained models."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.plugins import get_plugin_manager
from uncertank.validation import InvalidPredictionError

PLUGIN = '''
import numpy as np
from uncertank import Predictions, hookimpl

OFFSET = {offset}


class Broken:
    name = "broken"

    def __init__(self, mode="ok"):
        self.mode = mode

    def predict(self, queries):
        scores = np.full(queries.n_pairs, 0.5) + OFFSET
        if self.mode == "short":
            return Predictions(scores[:-1], np.minimum(queries.offsets, queries.n_pairs - 1), ranker="broken")
        if self.mode == "array":
            return scores
        if self.mode == "nan":
            scores[0] = np.nan
            return Predictions(scores, queries.offsets, ranker="broken", probabilistic=False)
        return Predictions(scores, queries.offsets, ranker="broken")


@hookimpl
def uncertank_rankers():
    return {{"broken": Broken}}
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module written to disk (like an editable install), registered by hand."""
    folder = tmp_path / "src"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))

    def install(offset: float = 0.0) -> None:
        (folder / "broken_plugin.py").write_text(textwrap.dedent(PLUGIN.format(offset=offset)))
        sys.modules.pop("broken_plugin", None)
        importlib.invalidate_caches()
        module = importlib.import_module("broken_plugin")
        pm = get_plugin_manager(refresh=True)
        pm.register(module, name="broken-plugin")

    yield install
    sys.modules.pop("broken_plugin", None)
    get_plugin_manager(refresh=True)


def _config(*rankers: RankerConfig) -> StudyConfig:
    return StudyConfig(
        name="checks", train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),),
        rankers=rankers, max_train_queries=10, max_valid_queries=10, max_test_queries=10,
        risk_grid=(0.0,), bayes=BayesConfig(enabled=False),
    )


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("short", r"ranker 'broken' on valid: scores must have shape \(100,\), one per pair; got \(99,\)"),
        ("array", r"ranker 'broken' on valid: .*ndarray"),
        ("nan", r"ranker 'broken' on valid: predict raised ValueError: scores must be finite"),
    ],
)
def test_a_wrong_prediction_is_named_before_anything_is_cached(tmp_path, plugin, mode, message):
    plugin()
    with pytest.raises(InvalidPredictionError, match=message) as info:
        run_study(_config(RankerConfig("broken", {"mode": mode})), tmp_path / "out")
    assert "\n" not in str(info.value)
    assert not list((tmp_path / "out").glob("predictions/broken-*"))


def test_editing_a_plugins_code_recomputes_its_predictions(tmp_path, plugin):
    plugin(0.0)
    config = _config(RankerConfig("broken"))
    first = run_study(config, tmp_path / "out")
    again = run_study(config, tmp_path / "out")
    assert again.steps["predict broken in-domain"].resumed  # nothing changed: reused
    plugin(0.25)  # the same version, other code
    edited = run_study(config, tmp_path / "out")
    assert not edited.steps["predict broken in-domain"].resumed
    assert edited.evaluation("broken", "in-domain").metrics["ECE"] != first.evaluation("broken", "in-domain").metrics[
        "ECE"]


@pytest.mark.slow
def test_a_study_runs_a_users_pretrained_folder(tmp_path):
    pytest.importorskip("transformers")
    from uncertank.datasets import packaged_model_path
    from uncertank.nn import from_pretrained
    from uncertank.nn.testing import tiny_classifier_folder

    if packaged_model_path() is None:
        pytest.skip("the packaged MiniLM tokenizer is not installed")
    folder = tiny_classifier_folder(tmp_path / "my-model")
    params = {"device": "cpu", "show_progress": False}
    result = run_study(
        _config(RankerConfig("bert", params, pretrained=str(folder)),
                RankerConfig("mc_dropout", {**params, "n_passes": 3}, pretrained=str(folder))),
        tmp_path / "out",
    )
    assert "fit bert" in result.steps  # loaded, not trained: the model is used as it is
    ev = result.evaluation("bert", "in-domain")
    assert ev is not None and ev.probabilistic and "ECE" in ev.metrics
    assert result.evaluation("mc_dropout", "in-domain").stochastic
    # the cached predictions are the model's own scores
    scores = from_pretrained(folder, **params).predict(_test_set()).scores
    saved = np.load(next((tmp_path / "out" / "predictions").glob("bert-in-domain-*.npz")))["mean"]
    np.testing.assert_allclose(saved, scores, atol=1e-6)


def _test_set():
    from uncertank.datasets import load

    return load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0, max_queries=10)
