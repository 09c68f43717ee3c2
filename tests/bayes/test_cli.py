from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from uncertank.bayes.cli import compare_command
from uncertank.bayes.comparison import SystemComparison


def _csv(tmp_path: Path, *, rank: bool = False) -> Path:
    rng = np.random.default_rng(0)
    n_sys, n_top = 4, 12
    df = pd.DataFrame({"system": np.repeat([f"s{i}" for i in range(n_sys)], n_top),
                       "topic": np.tile(np.arange(n_top), n_sys)})
    df["score"] = np.clip(rng.beta(2, 2, len(df)) + 0.15 * np.repeat(np.arange(n_sys), n_top), 0, 1)
    if rank:
        df["rank"] = 1
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    return path


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(1)
    runs = tmp_path / "runs"
    runs.mkdir()
    qlines = []
    for q in range(1, 9):
        for d in range(6):
            if rng.random() < 0.5:
                qlines.append(f"{q} 0 doc{d} {int(rng.integers(0, 3))}")
    for name in ("bm25", "bert", "splade"):
        lines = [f"{q} Q0 doc{d} {d + 1} {rng.normal():.4f} {name}" for q in range(1, 9) for d in range(6)]
        (runs / f"{name}.run").write_text("\n".join(lines) + "\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("\n".join(qlines) + "\n")
    return runs, qrels


pytestmark = pytest.mark.filterwarnings("ignore::uncertank.bayes.ConvergenceWarning")

FAST = ["--draws", "60", "--tune", "60", "--chains", "2", "--sampler", "pymc", "--seed", "3"]


@pytest.mark.slow
def test_compare_csv_writes_results(tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "--family", "zoib", "-o", str(out),
                                               "--baseline", "s0", "--risk-r", "1", "--risk-r", "2", *FAST])
    assert res.exit_code == 0, res.output
    assert "distinguishable from" in res.output
    files = sorted(p.name for p in out.iterdir())
    assert files == ["effects.csv", "effects.png", "posterior.nc", "ppc.png", "results.json"]
    results = json.loads((out / "results.json").read_text())
    assert results["family"] == "zoib" and results["n_systems"] == 4 and results["n_topics"] == 12
    assert set(results["urisk"]["tables"]) == {"r=1", "r=2"}
    assert len(results["urisk"]["tables"]["r=2"]) == 3  # every system but the baseline
    best = results["distinguishable"]["best"]
    assert best["interval"] == len(best["interval_systems"])
    effects = pd.read_csv(out / "effects.csv")
    back = SystemComparison.from_netcdf(out / "posterior.nc")
    pd.testing.assert_frame_equal(back.system_effects().reset_index(drop=True), effects, check_dtype=False)
    assert effects["system"].iloc[0] == results["effects"][0]["system"]


@pytest.mark.slow
def test_compare_runs_and_qrels(tmp_path):
    runs, qrels = _runs(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(runs), str(qrels), "--family", "gaussian", "--phi", "0.5",
                                               "-o", str(out), "--no-plots", *FAST])
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    assert results["n_systems"] == 3 and results["settings"]["phi"] == 0.5 and "urisk" not in results
    assert sorted(p.name for p in out.iterdir()) == ["effects.csv", "posterior.nc", "results.json"]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["missing.csv"], "is neither an existing file or folder nor 'trec-covid-round1'"),
        (["trec-covid-round1", "qrels.txt"], "takes no QRELS argument"),
        (["{runs}"], "a folder of runs needs a QRELS argument"),
        (["{runs}", "nothere.txt"], "is not a file"),
        (["{runs}", "{qrels}", "--family", "zoib_rank"], "needs --depth"),
        (["{csv}", "--all-systems"], "--all-systems applies to trec-covid-round1 only"),
        (["{csv}", "--baseline", "nobody"], "'nobody' is not a system of"),
        (["{csv}", "--family", "zoib_rank"], r"missing \['rank'\]"),
        (["{csv}", "--family", "beta"], "Invalid value for '--family'"),
        (["{csv}", "--drop-bottom", "1.0"], "Invalid value for '--drop-bottom'"),
    ],
)
def test_compare_usage_errors(tmp_path, monkeypatch, args, match):
    monkeypatch.chdir(tmp_path)
    runs, qrels = _runs(tmp_path)
    csv = _csv(tmp_path)
    args = [a.format(runs=runs, qrels=qrels, csv=csv) for a in args]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code != 0
    assert pytest.importorskip("re").search(match, res.output), res.output
    assert not (tmp_path / "compare-results").exists()


def test_compare_bad_csv(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    res = CliRunner().invoke(compare_command, [str(bad)])
    assert res.exit_code != 0 and "cannot read" in res.output


def test_compare_help_lists_sources():
    res = CliRunner().invoke(compare_command, ["--help"])
    assert res.exit_code == 0
    assert "trec-covid-round1" in res.output and "--drop-bottom" in res.output


def test_compare_defaults_to_auto_sampler():
    res = CliRunner().invoke(compare_command, ["--help"])
    flat = " ".join(res.output.split())
    assert "else pymc. [default: auto]" in flat and "--target-ess" in flat and "--time-budget" in res.output


def test_time_budget_needs_target_ess(tmp_path):
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "--time-budget", "5", "-o", str(tmp_path / "o")])
    assert res.exit_code != 0 and "--time-budget applies with --target-ess only" in res.output
    assert not (tmp_path / "o").exists()


def test_interrupted_compare_writes_nothing(tmp_path, monkeypatch):
    """Ctrl-C during sampling: the command aborts and the output folder is never created."""
    from uncertank.bayes import fit

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fit, "compare", interrupted)
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "-o", str(out), *FAST])
    assert res.exit_code != 0 and "Aborted" in res.output
    assert not out.exists()


@pytest.mark.slow
def test_compare_one_chain_reports_rhat_unavailable(tmp_path):
    """The old failure: --chains 1 wrote its files, then crashed formatting a null R-hat."""
    out = tmp_path / "out"
    args = [str(_csv(tmp_path)), "--family", "gaussian", "-o", str(out), "--no-plots", "--draws", "60",
            "--tune", "60", "--chains", "1", "--sampler", "pymc", "--seed", "3"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == 0, res.output
    assert "R-hat unavailable (1 chain)" in res.output
    results = json.loads((out / "results.json").read_text())
    assert results["chains"] == 1 and results["diagnostics"]["max_rhat"] is None
    assert results["diagnostics"]["rhat_available"] is False


@pytest.mark.slow
def test_compare_with_target_ess(tmp_path):
    out = tmp_path / "out"
    args = [str(_csv(tmp_path)), "--family", "gaussian", "-o", str(out), "--no-plots", "--draws", "50",
            "--tune", "300", "--chains", "2", "--sampler", "pymc", "--target-ess", "200", "--time-budget", "900"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == 0, res.output
    assert "ESS gate: target reached" in res.output
    gate = json.loads((out / "results.json").read_text())["gate"]
    assert gate["met"] is True and gate["min_ess_bulk"] >= 200
