"""Inputs ``uncertank run`` refuses before any work: one line naming the input, exit status 2, nothing trained.

- a ``pretrained`` folder that holds a sentence-embedding model (an
  encoder without a sequence-classification head), given to a ranker that
  keeps the pretrained head;
- an output folder whose ``models`` (or ``predictions``, ``bayes``,
  ``figures``) is a file;
- and a study that measures nothing (``metrics = []``, ``[bayes] enabled =
  false``) runs to its report instead of failing after scoring.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.experiment import runner as R

STUDY = """
[study]
name = "{name}"
train_dataset = "ubuntu-sample"
train_negatives = "random"
{study}

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"

[bayes]
enabled = false

[[rankers]]
{ranker}
"""


@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the study's data fails the test: every refusal must come before it."""
    import uncertank.datasets as ds

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("data loaded")

    monkeypatch.setattr(ds, "load", refuse)
    monkeypatch.setattr(R, "load_data", refuse)


def _write(tmp_path: Path, *, name: str = "rules", study: str = "", ranker: str = 'name = "bm25"') -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(STUDY.format(name=name, study=study, ranker=ranker), encoding="utf-8")
    return path


def _run(*args: str) -> tuple[int, list[str], str]:
    result = CliRunner().invoke(cli, ["run", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [ln for ln in (result.stderr or "").splitlines() if ln.strip()]
    return result.exit_code, lines, result.stdout


def _embedding_folder(root: Path) -> Path:
    """A sentence-transformers embedding model's files: a bare BertModel with a pooling layer, no classifier."""
    folder = root / "minilm-embeddings"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "",
                                                      "type": "sentence_transformers.models.Transformer"}]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
    return folder


def test_a_sentence_embedding_folder_as_pretrained_is_refused_before_training(tmp_path, no_data):
    pytest.importorskip("torch")
    folder = _embedding_folder(tmp_path)
    path = _write(tmp_path, ranker=f'name = "bert"\npretrained = "{folder}"')
    code, lines, _ = _run(str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert len(lines) == 1, lines
    assert "rankers[0].pretrained" in lines[0]
    assert "sentence-embedding model" in lines[0] and "modules.json" in lines[0]
    assert not (tmp_path / "out").exists()


def test_an_encoder_without_a_classifier_head_is_named_by_its_architecture(tmp_path, no_data):
    pytest.importorskip("torch")
    folder = tmp_path / "bare-encoder"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    (folder / "vocab.txt").write_text("[PAD]\n")
    path = _write(tmp_path, ranker=f'name = "bert"\npretrained = "{folder}"')
    code, lines, _ = _run(str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and len(lines) == 1, lines
    assert "architectures BertModel" in lines[0]


@pytest.mark.parametrize("part", ["models", "predictions", "bayes", "figures"])
def test_an_output_part_that_is_a_file_is_refused_before_the_work(tmp_path, no_data, part):
    out = tmp_path / "out"
    out.mkdir()
    (out / part).write_text("not a folder")
    code, lines, _ = _run(str(_write(tmp_path)), "--out", str(out))
    assert code == 2
    assert len(lines) == 1, lines
    assert f"{part}/ must be a folder" in lines[0] and "a file" in lines[0]
    assert (out / part).read_text() == "not a folder"  # left as it was
    assert sorted(p.name for p in out.iterdir()) == [part]


def test_a_study_measuring_nothing_runs_to_its_report(tmp_path):
    pytest.importorskip("bm25s")
    out = tmp_path / "out"
    code, lines, stdout = _run(str(_write(tmp_path, study="metrics = []")), "--out", str(out))
    assert code == 0, lines
    assert (out / "results.json").is_file() and (out / "report.md").is_file()
    assert "Report:" in stdout
