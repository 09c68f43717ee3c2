"""A study's ``save_to`` never deletes what uncertank did not write.

A ``save_to`` folder holding files uncertank did not write fails the
study's check at the door (``rankers[i].save_to``), before any data is
loaded or a ranker trained, unless the ranker's table sets
``overwrite = true``; then the trained model is written into the folder
and the user's files are left byte for byte.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, StudyConfigError, load_config, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.experiment.preflight import validate_config
from uncertank.experiment.runner import SAVED_BY

pytest.importorskip("transformers")
pytest.importorskip("uncertank_bert")

USER_FILES = {"notes.txt": b"what I tried\n", "sub/data.csv": b"a,b\n1,2\n\xff\xfe\n"}


def _write(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _bert(save_to: Path, *, seed: int = 0, **changes) -> RankerConfig:
    from uncertank.nn.testing import tiny_config

    params = {"backbone": tiny_config(), "max_length": 32, "epochs": 1, "batch_size": 8, "device": "cpu", "seed": seed}
    return RankerConfig("bert", params, save_to=str(save_to), **changes)


def _config(*rankers: RankerConfig) -> StudyConfig:
    return StudyConfig(
        name="tiny", train_dataset="ubuntu-sample", conditions=(ConditionConfig("in-domain", "ubuntu-sample"),),
        rankers=rankers, max_train_queries=12, max_valid_queries=6, max_test_queries=8, nota=False,
        risk_grid=(0.0,), bayes=BayesConfig(enabled=False),
    )


@pytest.fixture
def no_data(monkeypatch):
    """Loading data (the first work of a study) fails the test."""
    import uncertank.datasets as ds

    def boom(*args, **kwargs):
        raise AssertionError("data loaded before the study's check")

    monkeypatch.setattr(ds, "load", boom)


def test_a_save_to_folder_of_the_users_files_fails_the_study_at_the_door(tmp_path, no_data):
    mine = tmp_path / "mine"
    _write(mine, USER_FILES)
    with pytest.raises(StudyConfigError) as err:
        run_study(_config(_bert(mine)), tmp_path / "study")
    assert len(err.value.errors) == 1
    where, message = err.value.errors[0]
    assert where == "rankers[0].save_to"
    assert str(mine) in message and "notes.txt, sub/" in message
    assert "another" in message and "overwrite = true" in message
    assert _tree(mine) == USER_FILES
    assert not (tmp_path / "study").exists()
    assert sorted(os.listdir(tmp_path)) == ["mine"]


def test_the_study_file_names_the_path_and_takes_overwrite(tmp_path, no_data):
    mine = tmp_path / "mine"
    _write(mine, USER_FILES)
    study = tmp_path / "s.toml"
    table = '[[rankers]]\nname = "bert"\nparams = { max_length = 32 }\nsave_to = "mine"\n'
    head = '[study]\ntrain_dataset = "ubuntu-sample"\n[[conditions]]\nname = "in-domain"\ndataset = "ubuntu-sample"\n'
    study.write_text(head + table)
    with pytest.raises(StudyConfigError, match=r"^rankers\[0\]\.save_to: '.*mine' holds files uncertank did not"):
        validate_config(load_config(study))
    study.write_text(head + table + "overwrite = true\n")
    config = load_config(study)
    assert config.rankers[0].overwrite is True
    validate_config(config)
    study.write_text(head + table + 'overwrite = "yes"\n')
    with pytest.raises(StudyConfigError, match=r"rankers\[0\]\.overwrite: "):
        load_config(study)
    study.write_text(head + table.replace('save_to = "mine"\n', "") + "overwrite = true\n")
    with pytest.raises(StudyConfigError, match=r"rankers\[0\]\.overwrite: applies to save_to, which is not given"):
        load_config(study)
    assert _tree(mine) == USER_FILES


def test_a_save_to_file_fails_at_the_door(tmp_path, no_data):
    (tmp_path / "mine").write_bytes(b"x")
    for overwrite in (False, True):
        with pytest.raises(StudyConfigError, match=r"rankers\[0\]\.save_to: must be a folder \(or not exist\)"):
            validate_config(_config(_bert(tmp_path / "mine", overwrite=overwrite)))
    assert (tmp_path / "mine").read_bytes() == b"x"


def test_a_folder_uncertank_saved_a_model_into_passes_the_check(tmp_path, no_data):
    from uncertank.nn import NeuralRanker
    from uncertank.nn.testing import tiny_config, toy_queries

    ck = tmp_path / "ck"
    NeuralRanker(tiny_config(), max_length=32, epochs=1, show_progress=False).fit(toy_queries()).save(ck)
    validate_config(_config(_bert(ck), _bert(tmp_path / "new", label="b2"), _bert(tmp_path, label="b3",
                                                                                   overwrite=True)))
    (ck / "notes.txt").write_bytes(b"mine")
    with pytest.raises(StudyConfigError, match=r"rankers\[0\]\.save_to: .* \(notes\.txt\)"):
        validate_config(_config(_bert(ck)))


@pytest.mark.slow
def test_overwrite_writes_the_model_and_keeps_the_users_files(tmp_path):
    from uncertank.datasets import load
    from uncertank.nn import NeuralRanker

    mine = tmp_path / "mine"
    _write(mine, USER_FILES)
    config = _config(_bert(mine, overwrite=True))
    result = run_study(config, tmp_path / "study")
    for name, data in USER_FILES.items():
        assert (mine / name).read_bytes() == data
    record = json.loads((mine / SAVED_BY).read_text())
    assert record["key"] == result.steps["fit bert"].key and record["label"] == "bert"
    assert set(record["files"]) == {"backbone", "model.safetensors", "tokenizer", "uncertank.json", SAVED_BY}
    assert set(os.listdir(mine)) == set(record["files"]) | {"notes.txt", "sub"}
    # the saved model scores as the study's own copy of it
    trained = next((tmp_path / "study" / "models").glob("bert-*"))
    queries = load("ubuntu-sample", split="test", negatives="random", n_candidates=4, seed=0, max_queries=5)
    np.testing.assert_array_equal(NeuralRanker.load(mine).predict(queries).scores,
                                  NeuralRanker.load(trained).predict(queries).scores)
    # a changed model replaces the study's own files and leaves the user's again
    changed = _config(_bert(mine, overwrite=True, seed=1))
    again = run_study(changed, tmp_path / "study")
    assert json.loads((mine / SAVED_BY).read_text())["key"] == again.steps["fit bert"].key != record["key"]
    for name, data in USER_FILES.items():
        assert (mine / name).read_bytes() == data
    assert not [n for n in os.listdir(mine) if n.startswith(".")] and sorted(os.listdir(tmp_path)) == ["mine", "study"]
    # without overwrite the user's files are still in the way
    with pytest.raises(StudyConfigError, match=r"rankers\[0\]\.save_to: .* \(notes\.txt, sub/\)"):
        validate_config(_config(_bert(mine)))
