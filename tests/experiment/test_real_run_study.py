"""docs/studies/real_run.toml: the real run as a study, its recipe, and the whole of it on a tiny model."""

from __future__ import annotations

import json
import runpy
from dataclasses import replace
from pathlib import Path

import pytest

from uncertank.experiment import RankerConfig, load_config, run_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "real_run.toml"


def _script_defaults() -> dict:
    """The training settings the real-run script uses by default, read from its own parser."""
    frontier = runpy.run_path(str(ROOT / "docs" / "scripts" / "mc_dropout_frontier.py"), run_name="frontier")
    a = frontier["_real_run_args"]([])  # the script's parser, stopped before any work
    return {"max_length": a.max_length, "epochs": a.epochs, "batch_size": a.batch_size, "lr": a.lr}


def test_the_study_trains_the_real_runs_recipe_on_the_full_studys_data():
    config, full = load_config(STUDY), load_config(ROOT / "docs" / "studies" / "full.toml")
    for field in ("train_dataset", "train_negatives", "n_candidates", "max_train_queries", "max_valid_queries",
                  "max_test_queries", "seed", "conditions", "reference", "risk_grid"):
        assert getattr(config, field) == getattr(full, field), field
    assert [r.key for r in config.rankers] == [r.key for r in full.rankers]
    rankers = {r.key: r for r in config.rankers}
    recipe = _script_defaults()
    bert = rankers["bert"]
    assert bert.checkpoint is bert.pretrained is bert.init_from is None  # trained here
    assert {k: bert.params[k] for k in recipe} == recipe and bert.params["seed"] == 0
    for name in ("mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"):
        assert rankers[name].init_from == "bert"
    for name in ("sngp", "gpf_bert", "pgdrr"):  # a new head on bert's encoder, then the same training
        assert {k: rankers[name].params[k] for k in recipe} == recipe and rankers[name].params["seed"] == 0
    assert rankers["ensemble"].params["n_members"] == 5 and rankers["mc_dropout"].params["n_passes"] == 10
    saved = [Path(r.save_to) for r in config.rankers if r.save_to is not None]
    assert len(saved) == len(set(saved)) == 5
    assert all(p.parent == (ROOT / ".cache" / "real_run").resolve() for p in saved)


def test_the_study_file_passes_the_runners_own_check_of_every_ranker_and_parameter():
    # what `uncertank run` checks at the door: a parameter a ranker does not take fails there, so the
    # file as shipped must pass it (the tiny run below replaces the rankers' parameters)
    pytest.importorskip("transformers")
    for plugin in ("uncertank_bert", "uncertank_mcdropout", "uncertank_ensemble", "uncertank_sngp", "uncertank_pgdrr"):
        pytest.importorskip(plugin)
    from uncertank.experiment.validation import validate_config

    validate_config(load_config(STUDY))


@pytest.mark.slow
def test_the_whole_study_on_a_tiny_model_saves_checkpoints_that_load_back(tmp_path):
    pytest.importorskip("transformers")
    for plugin in ("uncertank_bert", "uncertank_mcdropout", "uncertank_ensemble", "uncertank_sngp", "uncertank_pgdrr"):
        pytest.importorskip(plugin)
    from uncertank.nn.testing import tiny_config

    config = load_config(STUDY)
    small = {"backbone": tiny_config(), "max_length": 32, "batch_size": 8, "device": "cpu"}
    sizes = {"ensemble": {"n_members": 2}, "mc_dropout": {"n_passes": 2}, "sngp": {"n_samples": 4},
             "gpf_bert": {"n_samples": 4}, "pgdrr": {"bank_size": 8, "n_chains": 4, "n_bank_steps": 5}}
    rankers = []
    for r in config.rankers:
        if r.key == "bm25":
            continue
        params = {**r.params, **sizes.get(r.key, {})}
        if r.init_from is None or r.key in ("sngp", "gpf_bert", "pgdrr"):
            params.update(small)
        save_to = None if r.save_to is None else str(tmp_path / "saved" / Path(r.save_to).name)
        rankers.append(replace(r, params=params, save_to=save_to))
    tiny = replace(config, rankers=tuple(rankers), conditions=config.conditions[:1], max_train_queries=12,
                   max_valid_queries=6, max_test_queries=8, nota=False)
    first = run_study(tiny, tmp_path / "study")
    cond = tiny.conditions[0].name
    for r in tiny.rankers:
        if r.save_to is None:
            continue
        stamp = json.loads((Path(r.save_to) / "uncertank-study.json").read_text())
        assert stamp == {"key": first.steps[f"fit {r.key}"].key, "label": r.key, "ranker": r.name}
        # another study loads the saved folder as a checkpoint and scores as the study did
        loaded = replace(tiny, rankers=(RankerConfig(r.name, {"device": "cpu", **sizes.get(r.key, {})},
                                                     checkpoint=r.save_to),), reference=None)
        again = run_study(loaded, tmp_path / f"load-{r.key}")
        a = first.evaluation(r.key, cond).metrics
        b = again.evaluation(r.name, cond).metrics
        assert b == pytest.approx(a, abs=1e-6)  # seeded draws: the same numbers
