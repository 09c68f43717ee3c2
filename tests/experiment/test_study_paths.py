"""Every path in a study file is taken from the file's folder, wherever the study runs from.

A file dataset's ``tsv:PATH``, a ranker's ``checkpoint``, ``pretrained`` and ``save_to``: the same study file run
from two working directories reads the same files and gives the same numbers, and a missing file is refused at
the door (exit 2, one line naming its key) before any work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.experiment import load_config
from uncertank.experiment import runner as R

pytest.importorskip("bm25s")

STUDY = """
[study]
train_dataset = "tsv:data/{split}.tsv"
train_negatives = "file"
n_candidates = 4
nota = false
metrics = ["map", "mrr"]
recalibrators = []

[[conditions]]
name = "in-domain"
dataset = "tsv:data/{split}.tsv"
negatives = "file"

[[rankers]]
name = "bm25"

[bayes]
enabled = false
"""

_WORDS = ["disk", "mount", "kernel", "wifi", "driver", "sound", "grub", "boot", "apt", "python", "screen", "mouse"]


def _write_data(folder: Path) -> None:
    """Ten queries of four candidates per split: the relevant one shares the query's topic word."""
    (folder / "data").mkdir(parents=True)
    for split in ("train", "valid", "test"):
        lines = []
        for q in range(10):
            word = _WORDS[q]
            lines.append(f"1\thow do I fix my {word} on {split}\tcheck the {word} settings")
            for j in range(1, 4):
                other = _WORDS[(q + 3 * j) % len(_WORDS)]
                lines.append(f"0\thow do I fix my {word} on {split}\ttry the {other} tool {j}")
        (folder / "data" / f"{split}.tsv").write_text("\n".join(lines) + "\n")


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A study file in ``tmp_path/project`` reading ``data/{split}.tsv`` beside it."""
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    project = tmp_path / "project"
    _write_data(project)
    path = project / "study.toml"
    path.write_text(STUDY)
    return path


def test_the_same_study_file_gives_the_same_results_from_two_working_directories(study, tmp_path, monkeypatch):
    runs = {}
    for name, cwd, arg in [("inside", study.parent, "study.toml"), ("outside", tmp_path, "project/study.toml")]:
        monkeypatch.chdir(cwd)
        out = tmp_path / f"out-{name}"
        result = CliRunner().invoke(cli, ["run", arg, "--out", str(out)])
        assert result.exit_code == 0, result.output
        runs[name] = json.loads((out / "results.json").read_text())
    inside, outside = runs["inside"], runs["outside"]
    assert inside["config"]["train_dataset"] == f"tsv:{study.parent}/data/{{split}}.tsv"
    assert inside["config"] == outside["config"]
    assert inside["sizes"] == outside["sizes"] == {"train": 10, "valid": 10, "test": {"in-domain": 10}}
    metrics = [(e["ranker"], e["condition"], e["metrics"]) for e in inside["evaluations"]]
    assert metrics == [(e["ranker"], e["condition"], e["metrics"]) for e in outside["evaluations"]]
    assert metrics[0][2]["MAP"] > 0.5  # BM25 finds the candidate sharing the query's word: real numbers compared
    assert inside["steps"]["data"]["key"] == outside["steps"]["data"]["key"]


def test_a_missing_data_file_fails_at_the_door_with_one_line_naming_its_key(study, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("data loaded")

    monkeypatch.setattr(R, "load_data", refuse)
    (study.parent / "data" / "test.tsv").unlink()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.tsv").write_text("1\tq\ta\n")  # beside the working directory: not the study's file
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "project/study.toml", "--out", str(out)])
    assert result.exit_code == 2
    missing = study.parent / "data" / "test.tsv"
    assert result.output.splitlines() == [
        f"Error: project/study.toml: conditions[0].dataset: must name a file that exists; got "
        f"'tsv:{study.parent}/data/{{split}}.tsv', and tsv: no such file {missing} (from "
        f"'{study.parent}/data/{{split}}.tsv', split='test')"]
    assert not out.exists()


def test_every_path_key_is_taken_from_the_study_files_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "studies" / "mine"
    folder.mkdir(parents=True)
    path = folder / "s.toml"
    path.write_text(
        '[study]\ntrain_dataset = "jsonl:../data/{split}.jsonl"\n'
        '[[conditions]]\nname = "a"\ndataset = "tsv:/abs/test.tsv"\n'
        '[[conditions]]\nname = "b"\ndataset = "ubuntu-sample"\n'
        '[[conditions]]\nname = "c"\ndataset = "nosuchloader:x.tsv"\n'
        '[[rankers]]\nname = "bert"\npretrained = "models/hf"\nsave_to = "~/saved"\n'
        '[[rankers]]\nname = "mc_dropout"\ncheckpoint = "../ckpt"\n'
        '[[rankers]]\nname = "ensemble"\nlabel = "ens"\npretrained = ["m0", "/abs/m1"]\n'
        '[bayes]\nenabled = false\n')
    config = load_config(Path("studies/mine/s.toml"))  # a relative path to the file: its folder all the same
    assert config.train_dataset == f"jsonl:{tmp_path}/studies/data/{{split}}.jsonl"
    assert [c.dataset for c in config.conditions] == ["tsv:/abs/test.tsv", "ubuntu-sample", "nosuchloader:x.tsv"]
    bert, mc, ens = config.rankers
    assert bert.pretrained == str(folder / "models" / "hf")
    assert bert.save_to == str(Path("~/saved").expanduser().resolve())
    assert mc.checkpoint == str(tmp_path / "studies" / "ckpt")
    assert ens.pretrained == [str(folder / "m0"), "/abs/m1"]
