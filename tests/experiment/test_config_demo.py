"""The demo's studies are files of the package: the same study everywhere, shown by --show, refused when incomplete."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict
from typing import Any

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.experiment import DEMO_STUDIES, demo_config, demo_study_path
from uncertank.metrics import DEFAULT_STUDY_METRICS

# What demo_config built on a full install (every plugin, the MiniLM, chitchat-dataset, nutpie) before the
# studies became files, less the machine's absolute MiniLM path (the default backbone, now implied).
_SIZES: dict[str, dict[str, Any]] = {
    "quick": {"layers": 1, "pooling": "mean", "max_length": 48, "lr": 2e-4, "members": 2, "passes": 5,
              "train": 300, "valid": 40, "test": 40, "draws": 300, "chains": 2, "freeze": True},
    "default": {"layers": 3, "pooling": "mean", "max_length": 64, "lr": 2e-4, "members": 2, "passes": 5,
                "train": 2500, "valid": 50, "test": 100, "draws": 1000, "chains": 4, "freeze": True},
    # the GP study keeps the sizes its GP rankers were measured at (docs/experiments.md)
    "gp": {"layers": 3, "pooling": "mean", "max_length": 64, "lr": 2e-4, "members": 3, "passes": 10,
           "train": 3000, "valid": 50, "test": 100, "draws": 1000, "chains": 4, "freeze": True},
    "full": {"layers": None, "pooling": "cls", "max_length": 64, "lr": 1e-4, "members": 5, "passes": 10,
             "train": None, "valid": 200, "test": 600, "draws": 2000, "chains": 4, "freeze": False},
}


def _expected(name: str) -> dict[str, Any]:
    s = _SIZES[name]
    neural: dict[str, Any] = {"max_length": s["max_length"], "epochs": 1, "lr": s["lr"], "batch_size": 16,
                              "pooling": s["pooling"], "seed": 0, "show_progress": False,
                              "freeze_embeddings": s["freeze"]}
    if s["layers"] is not None:
        neural["num_hidden_layers"] = s["layers"]

    def ranker(rname: str, params: dict[str, Any], init_from: str | None = None) -> dict[str, Any]:
        return {"name": rname, "params": params, "label": "", "init_from": init_from, "checkpoint": None,
                "pretrained": None, "save_to": None, "overwrite": False}

    rankers = [ranker("bm25", {}), ranker("bert", neural), ranker("mc_dropout", {"n_passes": s["passes"]}, "bert"),
               ranker("ensemble", {"n_members": s["members"]}, "bert")]
    if name == "gp":
        rankers += [ranker(gp, dict(neural), "bert") for gp in ("sngp", "gpf_bert", "pgdrr")]
    conditions = [("in-domain", "ubuntu-sample", "bm25"), ("cross-NS random", "ubuntu-sample", "random"),
                  ("cross-NS embedding", "ubuntu-sample", "embedding"), ("cross-domain chitchat", "chitchat", "bm25")]
    return {
        "name": f"uncertank demo ({name})", "train_dataset": "ubuntu-sample",
        "conditions": tuple({"name": n, "dataset": d, "negatives": ng} for n, d, ng in conditions),
        "rankers": tuple(rankers), "train_negatives": "bm25", "n_candidates": 10,
        "max_train_queries": s["train"], "max_valid_queries": s["valid"], "max_test_queries": s["test"],
        "max_context_turns": None, "n_bins": 10, "risk_grid": (-0.5, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.5),
        "nota": True, "metrics": DEFAULT_STUDY_METRICS,
        "recalibrators": ("histogram", "isotonic", "platt", "temperature"),
        "bayes": {"enabled": True, "systems": "trec_covid", "metric": None, "conditions": None, "retries": 1,
                  "families": ("gaussian", "zoib"), "draws": s["draws"], "tune": s["draws"],
                  "chains": s["chains"], "sampler": "nutpie", "drop_bottom": 0.0, "baseline": None, "runs": ()},
        "seed": 0, "reference": "bert",
        "conformal": {"enabled": True, "alpha": 0.1, "delta": 0.1, "alphas": (0.05, 0.1, 0.15, 0.2, 0.25, 0.3),
                      "score": "mean", "quantile": None, "k_std": None, "weighted": True},
        "report": {"test": "t", "correction": None, "family": None, "resamples": 10_000},
    }


@pytest.mark.parametrize("name", DEMO_STUDIES)
def test_each_demo_study_is_the_full_install_study_of_before(name):
    assert asdict(demo_config(name)) == _expected(name)  # type: ignore[arg-type]


def test_unknown_demo_study():
    with pytest.raises(ValueError, match="name must be one of"):
        demo_study_path("huge")  # type: ignore[arg-type]


@pytest.mark.parametrize(("flags", "name"), [([], "default"), (["--quick"], "quick"), (["--full"], "full"),
                                             (["--gp"], "gp")])
def test_show_prints_the_file_in_the_package(flags, name, tmp_path):
    result = CliRunner().invoke(cli, ["demo", *flags, "--show", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert result.output == demo_study_path(name).read_text(encoding="utf-8")
    assert not (tmp_path / "out").exists()


def test_demo_flags_exclude_each_other():
    result = CliRunner().invoke(cli, ["demo", "--quick", "--gp", "--show"])
    assert result.exit_code == 2 and "--quick and --gp contradict each other" in result.output


def test_the_studies_ship_as_package_data():
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "experiment/studies/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["uncertank"]
    assert sorted(p.stem for p in demo_study_path().parent.glob("*.toml")) == sorted(DEMO_STUDIES)


def test_a_hidden_plugin_stops_the_demo_before_any_work(tmp_path):
    out = tmp_path / "demo"
    # every plugin but mc_dropout; the data cache in tmp_path, where the run also works, to see that nothing is done
    env = {**os.environ, "UNCERTANK_PLUGINS": "bert,ensemble", "UNCERTANK_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "uncertank.cli", "demo", "--out", str(out)], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        "Error: uncertank demo (default.toml): rankers[2].name: the ranker 'mc_dropout' needs the plugin "
        "uncertank-mcdropout, which is not installed, or UNCERTANK_PLUGINS=bert,ensemble leaves it out; "
        "install it with pip install -e ./plugins/uncertank-mcdropout"]
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no study folder, no cached data: no work


@pytest.mark.parametrize("name", DEMO_STUDIES)
def test_each_demo_names_its_recalibrators_and_metrics_so_a_plugin_cannot_join(name):
    """A recalibrator or metric an installed plugin registers never joins the demo (the example's `beta` did)."""
    from uncertank import plugins

    config = demo_config(name)
    assert config.recalibrators == ("histogram", "isotonic", "platt", "temperature")
    assert [m if isinstance(m, str) else dict(m) for m in config.metrics] == list(DEFAULT_STUDY_METRICS)
    assert set(config.recalibrators) <= set(plugins.registry("recalibrators"))
    assert "beta" not in config.recalibrators  # the example plugin's, registered when it is installed
