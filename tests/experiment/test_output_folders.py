"""Each study keeps its folder: the demos write four different ones, and a run never replaces another study unasked."""

from __future__ import annotations

import json
import types
from dataclasses import replace

import pytest
from click.testing import CliRunner

from uncertank import CallableRanker, hookimpl
from uncertank.cli import cli
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, StudyConfigError, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.experiment.preflight import check_output_folder
from uncertank.plugins import get_plugin_manager

STUDY = """
[study]
name = "{name}"
train_dataset = "ubuntu-sample"
max_train_queries = 10
max_valid_queries = 10
max_test_queries = 10
risk_grid = [0.0]

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"

[[rankers]]
name = "overlap"

[bayes]
enabled = false
"""


def _overlap(context, candidates):
    last = set(context[-1].lower().split())
    return [len(last & set(c.lower().split())) / (2 + len(set(c.lower().split()))) for c in candidates]


@hookimpl
def uncertank_rankers():
    return {"overlap": lambda: CallableRanker(_overlap, name="overlap")}


@pytest.fixture
def overlap_ranker():
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("output_folder_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="output-folder-rankers")
    yield
    get_plugin_manager(refresh=True)


def _config(name: str) -> StudyConfig:
    return StudyConfig(
        name=name, train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "random"),),
        rankers=(RankerConfig("overlap"),), max_train_queries=10, max_valid_queries=10, max_test_queries=10,
        risk_grid=(0.0,), bayes=BayesConfig(enabled=False),
    )


def _study_name(out) -> str:
    return json.loads((out / "results.json").read_text())["config"]["name"]


def _other_study(out, name: str = "my study") -> dict[str, bytes]:
    """A folder as another study left it: its results.json and report; returns every file's bytes."""
    out.mkdir(parents=True)
    (out / "results.json").write_text(json.dumps({"config": {"name": name}}))
    (out / "report.md").write_text("# my study\n")
    return _files(out)


def _files(out) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


# -- which folder each demo writes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "folder"),
    [([], "uncertank-demo"), (["--quick"], "uncertank-demo-quick"), (["--full"], "uncertank-demo-full"),
     (["--gp"], "uncertank-demo-gp"), (["--quick", "--out", "mine"], "mine")],
)
def test_each_demo_writes_its_own_folder(monkeypatch, flags, folder):
    import uncertank.experiment

    seen: list[tuple[str, bool]] = []

    def stop(config, out_dir, **kwargs):
        seen.append((str(out_dir), kwargs["force"]))
        raise StudyConfigError([("", "stopped by the test")])

    monkeypatch.setattr(uncertank.experiment, "run_study", stop)
    run = CliRunner().invoke(cli, ["demo", *flags])
    assert run.exit_code == 2, run.output
    assert "stopped by the test" in run.output
    assert seen == [(folder, False)]


def test_demo_passes_force_on(monkeypatch):
    import uncertank.experiment

    seen: list[bool] = []

    def stop(config, out_dir, **kwargs):
        seen.append(kwargs["force"])
        raise StudyConfigError([("", "stopped by the test")])

    monkeypatch.setattr(uncertank.experiment, "run_study", stop)
    assert CliRunner().invoke(cli, ["demo", "--quick", "--force"]).exit_code == 2
    assert seen == [True]


# -- another study's folder ------------------------------------------------------------------------------------------


def test_demo_quick_refuses_a_folder_that_holds_another_study(tmp_path):
    out = tmp_path / "uncertank-demo"
    before = _other_study(out, "uncertank demo (default)")
    run = CliRunner().invoke(cli, ["demo", "--quick", "--out", str(out)])
    assert run.exit_code == 2, run.output
    assert (f"Error: uncertank demo --quick (quick.toml): the output folder {out} holds the results of another "
            "study, 'uncertank demo (default)'; running 'uncertank demo (quick)' there would replace its "
            "results.json, report.md; give another folder (uncertank run --out DIR), or --force "
            "(run_study(..., force=True)) to replace them") in run.output
    assert _files(out) == before  # nothing written, nothing removed


def test_run_refuses_another_study_and_replaces_it_with_force(tmp_path, overlap_ranker):
    path = tmp_path / "b.toml"
    path.write_text(STUDY.format(name="study b"))
    out = tmp_path / "out"
    before = _other_study(out, "study a")
    refused = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    assert refused.exit_code == 2, refused.output
    assert "holds the results of another study, 'study a'; running 'study b' there" in refused.output
    assert _files(out) == before
    forced = CliRunner().invoke(cli, ["run", str(path), "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    assert _study_name(out) == "study b"
    assert (out / "report.html").is_file()


def test_run_study_refuses_another_study_before_any_work(tmp_path, overlap_ranker):
    out = tmp_path / "out"
    run_study(_config("study a"), out)
    before = _files(out)
    with pytest.raises(StudyConfigError, match=r"holds the results of another study, 'study a'; running 'study b' "
                                               r"there would replace its results.json, report.md, report.html, "
                                               r"figures/; give another folder") as info:
        run_study(_config("study b"), out)
    assert info.value.errors[0][0] == ""
    assert _files(out) == before
    forced = run_study(_config("study b"), out, force=True)
    assert _study_name(out) == "study b" and forced.config["name"] == "study b"


def test_the_same_study_resumes_in_its_folder(tmp_path, overlap_ranker):
    out = tmp_path / "out"
    first = run_study(_config("study a"), out)
    assert not first.steps["predict overlap in-domain"].resumed
    again = run_study(replace(_config("study a"), risk_grid=(0.0, 0.5)), out)  # an edited study of the same name
    assert again.steps["predict overlap in-domain"].resumed
    assert _study_name(out) == "study a"


@pytest.mark.parametrize("text", ["{not json", '{"config": {}}', "[1, 2]", '{"config": {"name": 3}}'])
def test_a_results_file_that_names_no_study_is_refused(tmp_path, text):
    (tmp_path / "results.json").write_text(text)
    assert check_output_folder(tmp_path, study="mine") == [
        ("", f"the output folder {tmp_path} holds a results.json that names no study (no readable config.name); "
             "running 'mine' there would replace its results.json; give another folder (uncertank run --out DIR), "
             "or --force (run_study(..., force=True)) to replace them")]
    assert check_output_folder(tmp_path, study="mine", force=True) == []
    assert check_output_folder(tmp_path) == []  # no study named: only whether the folder takes files


def test_a_folder_without_results_takes_any_study(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    assert check_output_folder(tmp_path, study="mine") == []
    assert check_output_folder(tmp_path / "new", study="mine") == []
