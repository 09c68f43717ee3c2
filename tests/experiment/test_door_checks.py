"""Inputs that used to pass validation and fail after training: each is refused at the door, naming its path.

Every case runs the study (``run_study`` or ``uncertank run``) with the data loading and the training made to fail
the test if they are reached: the refusal must come first, as a StudyConfigError of one line per error with its
path in the study file, what was expected and what came.
"""

from __future__ import annotations

import json
import os
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank import Predictions, hookimpl
from uncertank.cli import cli
from uncertank.experiment import StudyConfigError, load_config, run_study
from uncertank.experiment import preflight as V
from uncertank.experiment import runner as R
from uncertank.plugins import get_plugin_manager

HEAD = """
[study]
train_dataset = "ubuntu-sample"
train_negatives = "random"
{study}
[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"
{conditions}
[bayes]
enabled = {bayes}
{bayes_keys}
"""


class Door:
    """A trainable ranker that takes a pretrained folder, saves and loads a checkpoint; training it fails the test."""

    name = "door"

    def __init__(self, *, pretrained: str | None = None) -> None:
        self.pretrained = pretrained

    is_fitted = False

    def fit(self, train, valid=None):
        raise AssertionError("trained")

    def predict(self, queries):
        return Predictions([0.5] * queries.n_pairs, queries.offsets, ranker="door")

    def save(self, path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "uncertank.json").write_text(json.dumps({"ranker": "door"}))

    @classmethod
    def load(cls, path):
        return cls()


@hookimpl
def uncertank_rankers():
    return {"door": Door}


@pytest.fixture
def no_work(monkeypatch):
    """Register the ``door`` ranker; loading data or training fails the test."""
    import uncertank.datasets as ds

    def refuse(*args, **kwargs):
        raise AssertionError("data loaded")

    monkeypatch.setattr(ds, "load", refuse)
    monkeypatch.setattr(R, "load_data", refuse)
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("door_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="door-rankers")
    yield
    get_plugin_manager(refresh=True)


def _study(tmp_path: Path, rankers: str = '[[rankers]]\nname = "door"\n', *, study: str = "", conditions: str = "",
           bayes: str = "false", bayes_keys: str = "") -> Path:
    path = tmp_path / "study.toml"
    path.write_text(HEAD.format(study=study, conditions=conditions, bayes=bayes, bayes_keys=bayes_keys) + rankers)
    return path


def _refused(path: Path, out: Path | None = None) -> list[str]:
    """The lines of the StudyConfigError a run of the study file raises; the output folder is never made."""
    out = out or path.parent / "out"
    existed = out.exists()
    with pytest.raises(StudyConfigError) as info:
        run_study(load_config(path), out)
    assert out.exists() == existed
    return str(info.value).splitlines()


# -- 1. metric options, judged by the metric itself -------------------------------------------------------------------


def test_a_metric_tables_options_are_checked_by_the_metric_before_any_data(tmp_path, no_work):
    metrics = ('metrics = ["map", { name = "recall_at_k", k = 0 }, { name = "ece", n_bins = 0 }, '
               '{ name = "nll", eps = 2.0 }, { name = "ece", strategy = "quantile", convention = "penha-hauff" }, '
               '{ name = "mce", n_bins = 1.5 }]')
    assert _refused(_study(tmp_path, study=metrics)) == [
        "study.metrics[1].k: must be an integer >= 1; got 0",
        "study.metrics[2].n_bins: must be an integer >= 1; got 0",
        "study.metrics[3].eps: must be a finite number > 0 and < 0.5; got 2.0",
        "study.metrics[4].convention: convention='penha-hauff' bins by equal width only; got strategy='quantile' "
        "(use strategy='uniform')",
        "study.metrics[5].n_bins: must be an integer >= 1; got float 1.5",
    ]


def test_the_studys_own_bins_are_refused_by_the_schema(tmp_path, no_work):
    with pytest.raises(StudyConfigError) as info:
        load_config(_study(tmp_path, study="n_bins = 0"))
    assert str(info.value) == "study.n_bins: must be >= 1; got 0"


def test_valid_metric_options_pass(tmp_path, no_work):
    metrics = 'metrics = [{ name = "recall_at_k", k = 3 }, { name = "ece", n_bins = 15, strategy = "quantile" }]'
    V.validate_config(load_config(_study(tmp_path, study=metrics)))


# -- 2. the Bayesian baseline -------------------------------------------------------------------------------------


@pytest.fixture
def bayes_installed(monkeypatch):
    """The Bayesian packages count as installed: the baseline's check is what is tested."""
    real = V._missing
    monkeypatch.setattr(V, "_missing", lambda modules: [] if set(modules) <= {"pymc", "arviz"} else real(modules))


def test_a_bayes_baseline_that_names_no_compared_system_is_refused(tmp_path, no_work, bayes_installed):
    lines = _refused(_study(tmp_path, bayes="true", bayes_keys='systems = "trec_covid"\nbaseline = "bm25_basline"'))
    assert lines == ["bayes.baseline: must name one of the 42 systems compared (the pooled TREC-COVID round 1 runs; "
                     "close: 'bm25_baseline', 'baseline'); got 'bm25_basline'"]
    lines = _refused(_study(tmp_path, bayes="true", bayes_keys='systems = "trec_covid"\nbaseline = "nobody"'))
    assert len(lines) == 1 and lines[0].startswith("bayes.baseline: must name one of the 42 systems compared")
    assert lines[0].endswith("; got 'nobody'")


def test_a_bayes_baseline_that_drop_bottom_leaves_out_is_refused(tmp_path, no_work, bayes_installed):
    from uncertank.bayes.data import drop_bottom_systems, frame_from_trec_covid

    frame = frame_from_trec_covid("gaussian")
    kept = set(drop_bottom_systems(frame, 0.5)["system"])
    dropped = sorted(set(frame["system"]) - kept)[0]
    keys = f'systems = "trec_covid"\nfamilies = ["gaussian"]\ndrop_bottom = 0.5\nbaseline = "{dropped}"'
    assert _refused(_study(tmp_path, bayes="true", bayes_keys=keys)) == [
        f"bayes.baseline: must name a system the comparison keeps; got {dropped!r}, one of the 21 lowest-scoring "
        "systems that drop_bottom = 0.5 leaves out (family 'gaussian'): lower drop_bottom or name another baseline"]
    keys = f'systems = "trec_covid"\nfamilies = ["gaussian"]\ndrop_bottom = 0.5\nbaseline = "{sorted(kept)[0]}"'
    V.validate_config(load_config(_study(tmp_path, bayes="true", bayes_keys=keys)))



TWO_RANKERS = '[[rankers]]\nname = "bm25"\n[[rankers]]\nname = "bm25"\nlabel = "other"\n'


@pytest.mark.parametrize(("rankers", "keys", "expected"), [
    ('[[rankers]]\nname = "bm25"\n', "", "bayes.enabled: comparing the study's rankers needs at least two; the study "
     "has 1 ('bm25'): add a ranker, set enabled = false, or systems = \"trec_covid\" for the bundled example"),
    (TWO_RANKERS, 'baseline = "bm25_baseline"', "bayes.baseline: must be the label of a ranker of the study ('bm25', "
     "'other'); got 'bm25_baseline'"),
    (TWO_RANKERS, 'families = ["gaussian", "zoib_rank"]', "bayes.families[1]: 'zoib_rank' models per-rank gains"),
    (TWO_RANKERS, 'conditions = ["in-domain", "shifted"]', "bayes.conditions[1]: must name a condition of the "
     "study ('in-domain'); got 'shifted'"),
    (TWO_RANKERS, 'metric = "ECE"', "bayes.metric: must be the label of a ranking metric the study measures ("),
    (TWO_RANKERS, 'systems = "trec_covid"\nmetric = "MAP"', "bayes.metric: applies to systems = \"study\""),
])
def test_a_comparison_of_the_studys_rankers_is_checked_at_the_door(tmp_path, no_work, bayes_installed, rankers,
                                                                     keys, expected):
    lines = _refused(_study(tmp_path, rankers, bayes="true", bayes_keys=keys))
    assert len(lines) == 1 and lines[0].startswith(expected), lines


def test_a_comparison_of_the_studys_rankers_passes_the_door(tmp_path, no_work, bayes_installed):
    config = load_config(_study(tmp_path, TWO_RANKERS, bayes="true", bayes_keys='baseline = "other"\nmetric = "R@1"'))
    V.validate_config(config)
    assert (config.bayes.systems, config.bayes.baseline, config.bayes.metric) == ("study", "other", "R@1")


# -- 3. and 4. pretrained and checkpoint folders ------------------------------------------------------------------


def _folder(path: Path, config: dict | None = None, manifest: dict | None = None) -> Path:
    path.mkdir(parents=True)
    if config is not None:
        (path / "config.json").write_text(json.dumps(config))
    if manifest is not None:
        (path / "uncertank.json").write_text(json.dumps(manifest))
    return path


def test_a_pretrained_classifier_of_three_labels_is_refused_reading_config_json_only(tmp_path, no_work):
    _folder(tmp_path / "nli", {"architectures": ["BertForSequenceClassification"],
                               "id2label": {"0": "contradiction", "1": "entailment", "2": "neutral"}})
    _folder(tmp_path / "five", {"num_labels": 5})
    _folder(tmp_path / "one", {"num_labels": 1})
    _folder(tmp_path / "plain", {"model_type": "bert"})  # transformers' default: two labels
    (tmp_path / "nli" / "model.safetensors").write_bytes(b"not weights: never read")
    rankers = '[[rankers]]\nname = "door"\npretrained = "nli"\n' \
              '[[rankers]]\nname = "door"\nlabel = "d2"\npretrained = ["one", "five", "plain"]\n'
    assert _refused(_study(tmp_path, rankers)) == [
        f"rankers[0].pretrained: must be a classifier with one logit (P = sigmoid) or two labels (P = softmax[:, 1]); "
        f"got '{tmp_path / 'nli'}', whose config.json declares 3 labels (id2label: 0 'contradiction', "
        "1 'entailment', 2 'neutral'); a relevance classifier scores one pair with one or two logits",
        f"rankers[1].pretrained[1]: must be a classifier with one logit (P = sigmoid) or two labels "
        f"(P = softmax[:, 1]); got '{tmp_path / 'five'}', whose config.json declares 5 labels (num_labels = 5); "
        "a relevance classifier scores one pair with one or two logits",
    ]


def test_a_pretrained_folder_whose_config_json_is_not_json_is_refused(tmp_path, no_work):
    _folder(tmp_path / "broken")
    (tmp_path / "broken" / "config.json").write_text("{num_labels: 3")
    (line,) = _refused(_study(tmp_path, '[[rankers]]\nname = "door"\npretrained = "broken"\n'))
    assert line.startswith(f"rankers[0].pretrained: must be a classifier with one logit (P = sigmoid) or two labels "
                           f"(P = softmax[:, 1]); got '{tmp_path / 'broken'}', whose config.json cannot be read "
                           "(JSONDecodeError: ")


def test_a_checkpoint_that_is_a_hugging_face_folder_is_named_as_one(tmp_path, no_work):
    hf = _folder(tmp_path / "hf", {"model_type": "bert", "num_labels": 2})
    rankers = '[[rankers]]\nname = "door"\ncheckpoint = "hf"\n'
    assert _refused(_study(tmp_path, rankers)) == [
        f"rankers[0].checkpoint: must be a checkpoint written by the ranker's save (a folder with the manifest "
        f"uncertank.json); got '{hf}', a Hugging Face model folder (config.json, no uncertank.json): give it as "
        f"pretrained = '{hf}' in this [[rankers]] table"]
    # the same folder as pretrained, and a real checkpoint, are valid
    V.validate_config(load_config(_study(tmp_path, '[[rankers]]\nname = "door"\npretrained = "hf"\n')))
    _folder(tmp_path / "ckpt", {"model_type": "bert"}, {"ranker": "door"})
    V.validate_config(load_config(_study(tmp_path, '[[rankers]]\nname = "door"\ncheckpoint = "ckpt"\n')))


# -- 5. n_candidates against the response pool ------------------------------------------------------------------------


def test_n_candidates_above_a_bundled_splits_pool_is_refused(tmp_path, no_work):
    assert _refused(_study(tmp_path, study="n_candidates = 2000")) == [
        "study.n_candidates: must be <= 1782 for conditions[0].dataset = 'ubuntu-sample': its test split holds "
        "1782 distinct responses, from which each query's relevant one and n_candidates - 1 negatives are drawn; "
        "got 2000"]
    V.validate_config(load_config(_study(tmp_path, study="n_candidates = 1782")))


def test_the_pool_sizes_are_those_of_the_bundled_data():
    from uncertank.datasets.conversation import chitchat_dialogues, ubuntu_dialogues
    from uncertank.datasets.dialogues import split_dialogues
    from uncertank.datasets.duplicates import normalize_text
    from uncertank.plugins import get_factory

    corpora = {"ubuntu-sample": ubuntu_dialogues}
    try:
        import chitchat_dataset  # noqa: F401
    except ImportError:
        pass
    else:
        corpora["chitchat"] = chitchat_dialogues
    for name, dialogues in corpora.items():
        version, sizes = V.POOL_SIZES[name]
        assert get_factory("datasets", name).cache_token(split="test") == version  # else the check is skipped
        counted = {split: len({normalize_text(u) for d in ds for u in d.utterances} - {""})
                   for split, ds in split_dialogues(dialogues(), split_seed=0).items()}
        assert counted == sizes


# -- 6. file datasets ---------------------------------------------------------------------------------------------


def test_a_missing_dataset_file_is_refused(tmp_path, no_work, monkeypatch):
    elsewhere = tmp_path / "elsewhere"  # the study runs from another folder: its paths are the file's folder's
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (tmp_path / "test.tsv").write_text("")
    (elsewhere / "data").mkdir()
    (elsewhere / "data" / "test.tsv").write_text("")  # beside the working directory, not the study file: not read
    conditions = ('[[conditions]]\nname = "mine"\ndataset = "tsv:data/{split}.tsv"\n'
                  f'[[conditions]]\nname = "there"\ndataset = "jsonl:{tmp_path}/gone.jsonl"\n'
                  '[[conditions]]\nname = "found"\ndataset = "tsv:test.tsv"\n')
    assert _refused(_study(tmp_path, conditions=conditions)) == [
        f"conditions[1].dataset: must name a file that exists; got 'tsv:{tmp_path}/data/{{split}}.tsv', and tsv: no "
        f"such file {tmp_path}/data/test.tsv (from '{tmp_path}/data/{{split}}.tsv', split='test')",
        f"conditions[2].dataset: must name a file that exists; got 'jsonl:{tmp_path}/gone.jsonl', and jsonl: no such "
        f"file {tmp_path}/gone.jsonl (from '{tmp_path}/gone.jsonl', split='test')",
    ]


def test_a_missing_training_file_is_named_once_per_file(tmp_path, no_work, monkeypatch):
    monkeypatch.chdir(tmp_path)
    study = _study(tmp_path).read_text().replace('train_dataset = "ubuntu-sample"', 'train_dataset = "tsv:t.tsv"')
    path = tmp_path / "files.toml"
    path.write_text(study)
    assert _refused(path) == [
        f"study.train_dataset: must name a file that exists; got 'tsv:{tmp_path}/t.tsv', and tsv: no such file "
        f"{tmp_path}/t.tsv (from '{tmp_path}/t.tsv', split='train')"]


def test_a_relative_file_in_a_study_built_in_python_is_read_from_the_working_directory(tmp_path, no_work,
                                                                                         monkeypatch):
    from dataclasses import replace

    monkeypatch.chdir(tmp_path)
    config = load_config(_study(tmp_path))
    config = replace(config, train_dataset="tsv:t.tsv")  # no file to be relative to: the working directory
    with pytest.raises(StudyConfigError) as info:
        run_study(config, tmp_path / "out")
    assert str(info.value).splitlines() == [
        "study.train_dataset: must name a file that exists; got 'tsv:t.tsv', and tsv: no such file t.tsv (from "
        f"'t.tsv', split='train'); a relative path is read from the folder the study runs in, {tmp_path}"]


# -- 8. folders the study cannot write ----------------------------------------------------------------------------


@pytest.fixture
def read_only(tmp_path):
    """An existing folder nothing can be written into (permission bits, or a read-only file system for root)."""
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    folder = Path("/sys/kernel")  # root ignores permission bits; sysfs refuses new files
    if not folder.is_dir() or V._writable(folder) is None:
        pytest.skip("no folder this user cannot write into")
    yield folder


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_run_into_a_read_only_folder_fails_at_the_door_naming_it(tmp_path, no_work, read_only):
    study = _study(tmp_path)
    before = _listing(read_only)
    result = CliRunner().invoke(cli, ["run", str(study), "--out", str(read_only)])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"Error: {study}: the output folder {read_only} cannot be written (PermissionError: Permission denied); give "
        "a folder you can write to (uncertank run --out DIR)"]
    assert _listing(read_only) == before  # no temporary file left
    # a new folder inside it cannot be created either
    out = read_only / "study-out"
    result = CliRunner().invoke(cli, ["run", str(study), "--out", str(out)])
    assert result.exit_code == 2 and not out.exists()
    assert result.output.splitlines() == [
        f"Error: {study}: the output folder {out} cannot be created in {read_only} (PermissionError: Permission "
        "denied); give a folder you can write to (uncertank run --out DIR)"]
    assert _listing(read_only) == before


def test_an_output_path_that_is_a_file_is_refused(tmp_path, no_work):
    (tmp_path / "taken").write_text("")
    assert _refused(_study(tmp_path), tmp_path / "taken") == [
        f"the output folder {tmp_path / 'taken'} is a file; give a folder you can write to (uncertank run --out DIR)"]
    assert _refused(_study(tmp_path), tmp_path / "taken" / "out") == [
        f"the output folder {tmp_path / 'taken' / 'out'} lies under {tmp_path / 'taken'}, which is a file; give a "
        "folder you can write to (uncertank run --out DIR)"]


def test_a_save_to_folder_that_cannot_be_written_is_refused(tmp_path, no_work, read_only):
    rankers = f'[[rankers]]\nname = "door"\nsave_to = "{read_only}/model"\n'
    assert _refused(_study(tmp_path, rankers)) == [
        f"rankers[0].save_to: must be a folder uncertank can write into; got '{read_only}/model', and {read_only} "
        "cannot be written (PermissionError: Permission denied)"]


def test_every_door_error_is_reported_at_once_and_a_valid_study_passes(tmp_path, no_work, bayes_installed):
    _folder(tmp_path / "hf", {"num_labels": 3})
    study = _study(tmp_path, '[[rankers]]\nname = "door"\ncheckpoint = "hf"\n[[rankers]]\nname = "door"\nlabel = '
                             '"d2"\npretrained = "hf"\n', study="n_candidates = 5000", bayes="true",
                   bayes_keys='systems = "trec_covid"\nbaseline = "nobody"')
    lines = _refused(study)
    assert [line.split(":")[0] for line in lines] == [
        "bayes.baseline", "study.n_candidates", "rankers[0].checkpoint", "rankers[1].pretrained"]
    V.validate_config(load_config(_study(tmp_path)), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_study_without_an_enabled_key_compares_its_rankers_when_it_has_two(tmp_path):
    one = tmp_path / "one.toml"
    one.write_text(HEAD.format(study="", conditions="", bayes="false", bayes_keys="").replace(
        "enabled = false\n", "") + '[[rankers]]\nname = "bm25"\n')
    assert load_config(one).bayes.enabled is False  # nothing to compare: the stage is off, no error
    two = tmp_path / "two.toml"
    two.write_text(one.read_text() + '[[rankers]]\nname = "bm25"\nlabel = "other"\n')
    assert load_config(two).bayes.enabled is True
    trec = tmp_path / "trec.toml"
    trec.write_text(one.read_text().replace("[bayes]\n", '[bayes]\nsystems = "trec_covid"\n'))
    assert load_config(trec).bayes.enabled is True
