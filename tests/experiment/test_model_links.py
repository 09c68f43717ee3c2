"""A study records the user's model folders it only loads instead of copying them, and writes with the user's umask.

A ranker built from a ``pretrained`` folder that needs no training (a fine-tuned cross-encoder used as it is) has
a record in ``out/models/<label>-<key>/step.json`` (the source folder and the SHA-256 of its files), no copy of its
weights; a resumed study builds it from the source again. Every folder the study makes (the model folders renamed
into place, ``save_to``) gets the mode ``mkdir`` gives under the user's umask, not tempfile's private 0700.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from uncertank import Predictions, hookimpl
from uncertank._folders import model_folder
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.files import folder_digest, temporary_folder
from uncertank.plugins import get_plugin_manager

_WORDS = ["disk", "mount", "kernel", "wifi", "driver", "sound", "grub", "boot", "apt", "python", "screen", "mouse"]


@pytest.fixture
def umask():
    """Set the umask for one test and restore it."""
    saved = os.umask(0o022)
    yield os.umask
    os.umask(saved)


@pytest.fixture
def data(tmp_path, monkeypatch):
    """``tsv:<tmp>/data/{split}.tsv``: ten queries of four candidates per split (nothing sampled, nothing slow)."""
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    for split in ("train", "valid", "test"):
        lines = []
        for q in range(10):
            word = _WORDS[q]
            lines.append(f"1\thow do I fix my {word}\tcheck the {word} settings")
            lines += [f"0\thow do I fix my {word}\ttry the {_WORDS[(q + 3 * j) % 12]} tool {j}" for j in (1, 2, 3)]
        (tmp_path / "data" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return f"tsv:{tmp_path}/data/{{split}}.tsv"


def _config(dataset: str, *rankers: RankerConfig) -> StudyConfig:
    return StudyConfig(
        name="links", train_dataset=dataset, train_negatives="file", n_candidates=4,
        conditions=(ConditionConfig("in-domain", dataset, "file"),), rankers=rankers, nota=False,
        metrics=("map", "ece"), recalibrators=(), risk_grid=(0.0,), bayes=BayesConfig(enabled=False),
    )


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


# -- a user's model folder: recorded, not copied ----------------------------------------------------------------------


@pytest.fixture
def users_model(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("uncertank_bert")
    from uncertank.datasets import packaged_model_path
    from uncertank.nn.testing import tiny_classifier_folder

    if packaged_model_path() is None:
        pytest.skip("the packaged MiniLM tokenizer is not installed")
    return tiny_classifier_folder(tmp_path / "my-model")


PARAMS = {"device": "cpu", "show_progress": False, "max_length": 32}


def test_a_users_fitted_model_is_recorded_not_copied_and_resumed_from_its_source(tmp_path, data, users_model,
                                                                                 monkeypatch):
    config = _config(data, RankerConfig("bert", PARAMS, pretrained=str(users_model)))
    first = run_study(config, tmp_path / "out")
    (folder,) = (tmp_path / "out" / "models").iterdir()
    assert folder.name == f"bert-{first.steps['fit bert'].key}"
    assert _files(folder) == [".complete", "step.json"]  # no weights, no tokenizer: nothing copied
    record = json.loads((folder / "step.json").read_text())
    assert record["key"] == first.steps["fit bert"].key
    assert record["source"] == [str(users_model.resolve())]
    assert record["source_sha256"] == [folder_digest(users_model)]
    assert "sha256" not in record  # an older runner reading it does not take the folder for a saved model

    def refuse(*args, **kwargs):
        raise AssertionError("loaded from out/models")

    monkeypatch.setattr(type(_built("bert", users_model)), "load", classmethod(refuse))
    for path in (tmp_path / "out" / "predictions").iterdir():
        path.unlink()  # the resumed study scores again: with the model built from its source
    again = run_study(config, tmp_path / "out")
    assert again.steps["fit bert"].resumed and again.steps["fit bert"].key == first.steps["fit bert"].key
    assert not again.steps["predict bert in-domain"].resumed
    np.testing.assert_allclose(again.evaluation("bert", "in-domain").metrics["MAP"],
                               first.evaluation("bert", "in-domain").metrics["MAP"])
    assert _files(folder) == [".complete", "step.json"]


def _built(name: str, folder: Path):
    from uncertank.plugins import make_ranker

    return make_ranker(name, pretrained=str(folder), **PARAMS)


@pytest.mark.parametrize(("edit", "said"), [
    (lambda r: {**r, "key": "0" * 16}, "its step.json records another key"),
    (lambda r: {k: v for k, v in r.items() if k != "source_sha256"}, "records no source folder and digest"),
])
def test_a_record_that_does_not_stand_for_the_model_is_written_again(tmp_path, data, users_model, edit, said):
    config = _config(data, RankerConfig("bert", PARAMS, pretrained=str(users_model)))
    run_study(config, tmp_path / "out")
    (folder,) = (tmp_path / "out" / "models").iterdir()
    record = json.loads((folder / "step.json").read_text())
    (folder / "step.json").write_text(json.dumps(edit(record)))
    lines: list[str] = []
    again = run_study(config, tmp_path / "out", log=lines.append)
    assert not again.steps["fit bert"].resumed
    assert any(f"bert: the record in {folder} is not reused: " in line and said in line for line in lines), lines
    assert json.loads((folder / "step.json").read_text()) == {**record, "seconds": again.steps["fit bert"].seconds}
    assert _files(folder) == [".complete", "step.json"]


def test_save_to_of_a_users_model_is_written_and_nothing_is_left_in_models(tmp_path, data, users_model, umask):
    umask(0o022)
    target = tmp_path / "saved"
    config = _config(data, RankerConfig("bert", PARAMS, pretrained=str(users_model), save_to=str(target)))
    result = run_study(config, tmp_path / "out")
    assert "model.safetensors" in _files(target) and "uncertank.json" in _files(target)
    assert json.loads((target / "uncertank-study.json").read_text())["key"] == result.steps["fit bert"].key
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    (folder,) = (tmp_path / "out" / "models").iterdir()  # the temporary save is gone
    assert _files(folder) == [".complete", "step.json"]
    before = (target / "model.safetensors").stat().st_mtime_ns
    run_study(config, tmp_path / "out")  # resumed: save_to already holds the key, not written again
    assert (target / "model.safetensors").stat().st_mtime_ns == before


# -- folders take the user's umask --------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_a_temporary_folder_gets_the_mode_mkdir_gives(tmp_path, umask, mask):
    umask(mask)
    folder = temporary_folder(prefix="x.", dir=tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o777 & ~mask


def test_a_temporary_folder_that_cannot_be_made_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        temporary_folder(prefix="x.", dir=tmp_path / "missing")


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_a_new_model_folder_gets_the_users_umask(tmp_path, umask, mask):
    umask(mask)
    with model_folder(tmp_path / "model") as tmp:
        (tmp / "weights.bin").write_bytes(b"w")
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE((tmp_path / "model" / "weights.bin").stat().st_mode) == 0o666 & ~mask
    with model_folder(tmp_path / "model", overwrite=True) as tmp:  # into an existing one: the user's umask too
        (tmp / "more").mkdir()
    assert stat.S_IMODE((tmp_path / "model" / "more").stat().st_mode) == 0o777 & ~mask


class Private:
    """A trainable ranker whose save writes through a bare tempfile.mkdtemp (a private 0700 folder)."""

    name = "private"
    is_fitted = False

    def __init__(self, show_progress: bool = True) -> None:
        self.show_progress = show_progress

    def fit(self, train, valid=None):
        self.is_fitted = True

    def predict(self, queries):
        return Predictions(np.linspace(0.1, 0.9, queries.n_pairs), queries.offsets, ranker="private")

    def save(self, path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=Path(path).parent))
        (tmp / "uncertank.json").write_text(json.dumps({"ranker": "private"}))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path):
        ranker = cls()
        ranker.is_fitted = True
        return ranker


@hookimpl
def uncertank_rankers():
    return {"private": Private}


@pytest.fixture
def private_plugin():
    pm = get_plugin_manager(refresh=True)
    module = types.ModuleType("private_rankers")
    module.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(module, name="private-rankers")
    yield
    get_plugin_manager(refresh=True)


def test_a_trained_models_folder_ends_with_the_users_umask(tmp_path, data, umask, private_plugin):
    umask(0o022)
    result = run_study(_config(data, RankerConfig("private")), tmp_path / "out")
    folder = tmp_path / "out" / "models" / f"private-{result.steps['fit private'].key}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert stat.S_IMODE((folder / "step.json").stat().st_mode) == 0o644
    for sub in ("models", "predictions", "figures"):
        assert stat.S_IMODE((tmp_path / "out" / sub).stat().st_mode) == 0o755
    assert not list((tmp_path / "out" / "models").glob("*.tmp"))


def test_a_ranker_started_from_a_trained_one_without_training_is_recorded_not_copied(tmp_path, data, users_model):
    """MC dropout on bert's weights trains nothing: its folder names bert, and a resumed study starts it again."""
    pytest.importorskip("uncertank_mcdropout")
    config = _config(data, RankerConfig("bert", PARAMS, pretrained=str(users_model)),
                     RankerConfig("mc_dropout", {"n_passes": 3}, init_from="bert"))
    first = run_study(config, tmp_path / "out")
    folder = tmp_path / "out" / "models" / f"mc_dropout-{first.steps['fit mc_dropout'].key}"
    assert _files(folder) == [".complete", "step.json"]  # no weights copied
    assert json.loads((folder / "step.json").read_text())["init_from"] == "bert"
    for path in (tmp_path / "out" / "predictions").glob("mc_dropout-*"):
        path.unlink()  # the resumed study scores again: with the ranker started from bert again
    again = run_study(config, tmp_path / "out")
    assert again.steps["fit mc_dropout"].resumed
    assert again.steps["fit mc_dropout"].key == first.steps["fit mc_dropout"].key
    assert not again.steps["predict mc_dropout in-domain"].resumed
    np.testing.assert_allclose(again.evaluation("mc_dropout", "in-domain").metrics["MAP"],
                               first.evaluation("mc_dropout", "in-domain").metrics["MAP"])
    assert "mc_dropout: built from the trained bert again" in (tmp_path / "out" / "run.log").read_text()
