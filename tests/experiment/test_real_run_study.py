"""docs/studies/real_run.toml: the real run as a study, its recipe, and the whole of it on a tiny model."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from uncertank.experiment import RankerConfig, load_config, run_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "real_run.toml"


RECIPE = {"max_length": 64, "epochs": 1, "batch_size": 16, "lr": 1e-4, "seed": 0}  # docs/rankers.md, "Real run"


def _saved(path: str) -> dict[str, str]:
    """Every study file of docs/studies that loads a model: its ranker label -> the folder it loads."""
    config = load_config(ROOT / "docs" / "studies" / path)
    return {r.key: r.checkpoint for r in config.rankers if r.checkpoint is not None}


def test_the_study_trains_the_real_runs_recipe_on_the_full_studys_data():
    config, full = load_config(STUDY), load_config(ROOT / "docs" / "studies" / "full.toml")
    for field in ("train_dataset", "train_negatives", "n_candidates", "max_train_queries", "max_valid_queries",
                  "max_test_queries", "seed", "conditions", "reference", "risk_grid"):
        assert getattr(config, field) == getattr(full, field), field
    assert [r.key for r in config.rankers] == ["bm25", "bert", "bert lists", "mc_dropout", "sngp", "gpf_bert", "pgdrr"]
    rankers = {r.key: r for r in config.rankers}
    for key in ("bert", "bert lists"):  # trained here, from the packaged backbone
        r = rankers[key]
        assert r.name == "bert" and r.checkpoint is r.pretrained is r.init_from is None
        assert {k: r.params[k] for k in RECIPE} == RECIPE and r.params["pooling"] == "cls"
    assert rankers["bert"].params.get("train_ratio", 1) == 1 and "max_train_queries" not in rankers["bert"].params
    # lists of ten from 1,908 queries: 19,080 pairs, the cost of bert's 19,078 balanced ones
    lists = rankers["bert lists"].params
    assert lists["train_ratio"] == 9 and lists["max_train_queries"] == 1908
    assert rankers["mc_dropout"].init_from == "bert" and rankers["mc_dropout"].params["n_passes"] == 10
    for name in ("sngp", "gpf_bert", "pgdrr"):  # a new head on bert's encoder, then the same training
        assert rankers[name].init_from == "bert"
        assert {k: rankers[name].params[k] for k in RECIPE} == RECIPE
    saved = {r.key: Path(r.save_to) for r in config.rankers if r.save_to is not None}
    assert set(saved) == {"bert", "bert lists", "sngp", "gpf_bert", "pgdrr"}
    assert len(set(saved.values())) == len(saved)
    assert all(p.parent == (ROOT / ".cache" / "real_run").resolve() for p in saved.values())


def test_the_ensemble_study_trains_the_real_runs_ensemble_from_the_saved_bert():
    saved = {r.key: r.save_to for r in load_config(STUDY).rankers if r.save_to is not None}
    ens = load_config(ROOT / "docs" / "studies" / "real_run_ensemble.toml")
    rankers = {r.key: r for r in ens.rankers}
    assert rankers["bert"].checkpoint == saved["bert"]
    assert rankers["ensemble"].init_from == "bert" and rankers["ensemble"].params["n_members"] == 5
    assert Path(rankers["ensemble"].save_to) == (ROOT / ".cache" / "real_run_ensemble" / "ensemble_M5").resolve()
    for field in ("train_dataset", "train_negatives", "n_candidates", "max_train_queries", "max_valid_queries",
                  "max_test_queries", "seed", "conditions"):
        assert getattr(ens, field) == getattr(load_config(STUDY), field), field


def test_every_study_that_loads_a_real_run_model_loads_a_folder_the_real_run_saves():
    saved = {r.key: r.save_to for r in load_config(STUDY).rankers if r.save_to is not None}
    ensemble = next(r.save_to for r in load_config(ROOT / "docs" / "studies" / "real_run_ensemble.toml").rankers
                    if r.save_to is not None)
    made = {*saved.values(), ensemble}
    for path in ("full.toml", "full_scoring.toml", "lists_bert.toml", "lists_full.toml", "lists_intercept.toml",
                 "real_run_ensemble.toml"):
        loads = _saved(path)
        assert loads, path
        assert set(loads.values()) <= made, (path, set(loads.values()) - made)
        if "bert lists" in loads:
            assert loads["bert lists"] == saved["bert lists"], path
        assert loads["bert"] == saved["bert"], path
    full = _saved("full.toml")
    assert full == {"bert": saved["bert"], "ensemble": ensemble, "sngp": saved["sngp"],
                    "gpf_bert": saved["gpf_bert"], "pgdrr": saved["pgdrr"]}
    # the lists collapse check (docs/scripts/sngp_lists_collapse.py) starts from the same bert lists
    collapse = json.loads((ROOT / "docs" / "results" / "sngp_lists_collapse.json").read_text())
    assert (ROOT / collapse["start"]).resolve() == Path(saved["bert lists"])
    # no study file names the folders of the retired script
    for toml in (ROOT / "docs" / "studies").glob("*.toml"):
        assert "real_run_neural" not in toml.read_text(), toml.name


def test_the_study_file_passes_the_runners_own_check_of_every_ranker_and_parameter():
    # what `uncertank run` checks at the door: a parameter a ranker does not take fails there, so the
    # file as shipped must pass it (the tiny run below replaces the rankers' parameters)
    pytest.importorskip("transformers")
    for plugin in ("uncertank_bert", "uncertank_mcdropout", "uncertank_ensemble", "uncertank_sngp", "uncertank_pgdrr"):
        pytest.importorskip(plugin)
    from uncertank.experiment.preflight import validate_config

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
        assert stamp == {"key": first.steps[f"fit {r.key}"].key, "label": r.key, "ranker": r.name,
                         "files": sorted(os.listdir(r.save_to))}
        # another study loads the saved folder as a checkpoint and scores as the study did
        loaded = replace(tiny, rankers=(RankerConfig(r.name, {"device": "cpu", **sizes.get(r.key, {})},
                                                     checkpoint=r.save_to),), reference=None)
        again = run_study(loaded, tmp_path / f"load-{r.key}")
        a = first.evaluation(r.key, cond).metrics
        b = again.evaluation(r.name, cond).metrics
        assert b == pytest.approx(a, abs=1e-6)  # seeded draws: the same numbers
