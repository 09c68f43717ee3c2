from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from uncertank.bayes.comparison import SystemComparison
from uncertank.cli.compare_cmd import OUTPUTS, UNCONVERGED_EXIT, compare_command


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
def test_an_unconverged_fit_gives_no_verdict_and_exits_3(tmp_path):
    """60 draws of 2 chains fail the checks: the files are written, the verdict is refused, exit status 3."""
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "--family", "zoib", "-o", str(out),
                                               "--baseline", "s0", "--risk-r", "1", "--risk-r", "2", *FAST])
    assert res.exit_code == UNCONVERGED_EXIT, res.output
    assert "distinguishable from" not in res.output
    assert re.search(r"Error: no verdict: the zoib fit \(pymc, 2 chains x 120 draws\) fails its convergence "
                     r"checks \(.*min bulk ESS .*\)\. To try: sample more", res.stderr)
    assert "fitting again with 120 draws and 120 tuning steps per chain, target acceptance 0.95" in res.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["effects.csv", "effects.png", "posterior.nc", "ppc.png", "results.json"]
    results = json.loads((out / "results.json").read_text())
    assert results["family"] == "zoib" and results["n_systems"] == 4 and results["n_topics"] == 12
    assert results["verdict"].startswith("no verdict") and results["diagnostics"]["ok"] is False
    assert results["distinguishable"] is None and "urisk" not in results
    assert results["settings"]["fits"] == 2 and results["settings"]["target_accept"] == 0.95
    effects = pd.read_csv(out / "effects.csv")
    back = SystemComparison.from_netcdf(out / "posterior.nc")
    pd.testing.assert_frame_equal(back.system_effects().reset_index(drop=True), effects, check_dtype=False)
    assert effects["system"].iloc[0] == results["effects"][0]["system"]


@pytest.mark.slow
def test_compare_runs_and_qrels(tmp_path):
    runs, qrels = _runs(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(runs), str(qrels), "--family", "gaussian", "--phi", "0.5",
                                               "-o", str(out), "--no-plots", "--retries", "0", *FAST])
    assert res.exit_code == UNCONVERGED_EXIT, res.output  # 60 draws: no verdict, the files all the same
    results = json.loads((out / "results.json").read_text())
    assert results["n_systems"] == 3 and results["settings"]["phi"] == 0.5 and "urisk" not in results
    assert sorted(p.name for p in out.iterdir()) == ["effects.csv", "posterior.nc", "results.json"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["missing.csv"], "Error: SOURCE 'missing.csv' is neither an existing file or folder nor 'trec-covid-round1'"),
        (["{runs}", "nothere.txt"], "Error: QRELS 'nothere.txt' is not a file"),
        (["{csv}", "--baseline", "nobody"], "Error: --baseline: 'nobody' is not a system of {csv}"),
        (["{csv}", "--family", "zoib_rank"], "Error: {csv}: must have columns ['system', 'topic', 'score', 'rank'] "
                                             "for family 'zoib_rank'; missing ['rank'] (has ['system', 'topic', "
                                             "'score'])"),
    ],
)
def test_compare_bad_file_or_name_is_one_line_and_exit_2(tmp_path, monkeypatch, args, line):
    monkeypatch.chdir(tmp_path)
    runs, qrels = _runs(tmp_path)
    csv = _csv(tmp_path)
    args = [a.format(runs=runs, qrels=qrels, csv=csv) for a in args]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == 2, res.output
    assert res.output.splitlines() == [line.format(csv=csv)]
    assert not (tmp_path / "compare-results").exists()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["trec-covid-round1", "qrels.txt"], "takes no QRELS argument"),
        (["{runs}"], "a folder of runs needs a QRELS argument"),
        (["{runs}", "{qrels}", "--family", "zoib_rank"], "needs --depth"),
        (["{csv}", "--all-systems"], "--all-systems applies to trec-covid-round1 only"),
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
    assert res.exit_code == 2
    assert match in res.output, res.output
    assert not (tmp_path / "compare-results").exists()


def test_compare_bad_csv(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    res = CliRunner().invoke(compare_command, [str(bad)])
    assert res.exit_code == 2 and len(res.output.splitlines()) == 1
    assert res.output.startswith(f"Error: {bad}: cannot read it as CSV: ")


def test_compare_empty_csv(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    res = CliRunner().invoke(compare_command, [str(empty), "-o", str(tmp_path / "o")])
    assert (res.exit_code, res.output) == (2, f"Error: {empty}: cannot read it as CSV: No columns to parse from file\n")


def test_compare_csv_without_a_system_column(tmp_path):
    """Once a KeyError traceback from the progress line."""
    path = tmp_path / "nosys.csv"
    pd.read_csv(_csv(tmp_path)).rename(columns={"system": "sys"}).to_csv(path, index=False)
    res = CliRunner().invoke(compare_command, [str(path), "-o", str(tmp_path / "o")])
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert (res.exit_code, res.output) == (
        2, f"Error: {path}: must have columns ['system', 'topic', 'score'] for family 'zoib'; missing ['system'] "
           "(has ['sys', 'topic', 'score'])\n")
    assert not (tmp_path / "o").exists()


def test_compare_csv_with_text_scores(tmp_path):
    path = tmp_path / "text.csv"
    path.write_text("system,topic,score\na,1,high\nb,1,0.5\n")
    res = CliRunner().invoke(compare_command, [str(path), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and res.output.startswith(f"Error: {path}: column 'score' must be numeric; got dtype")


def test_compare_malformed_run_file(tmp_path):
    """Once a ValueError traceback from the run reader."""
    runs, qrels = _runs(tmp_path)
    with (runs / "bert.run").open("a") as f:
        f.write("this is bad\n")
    res = CliRunner().invoke(compare_command, [str(runs), str(qrels), "--family", "gaussian",
                                               "-o", str(tmp_path / "o")])
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert (res.exit_code, res.output) == (
        2, f"Error: run file {runs / 'bert.run'}, line 49: expected 6 fields (query_id Q0 doc_id rank score tag); "
           "got 3: 'this is bad'\n")
    assert not (tmp_path / "o").exists()


def test_compare_error_of_the_fit_on_its_input_exits_2(tmp_path, monkeypatch):
    from uncertank.bayes import fit

    def refuses(*args, **kwargs):
        raise ValueError("draws must be an integer >= 1; got 0")

    monkeypatch.setattr(fit, "compare", refuses)
    csv = _csv(tmp_path)
    res = CliRunner().invoke(compare_command, [str(csv), "-o", str(tmp_path / "o"), *FAST])
    assert res.exit_code == 2
    assert res.output.splitlines()[-1] == f"Error: {csv}: draws must be an integer >= 1; got 0"


def test_compare_failed_fit_exits_1(tmp_path, monkeypatch):
    """A fit that fails --strict is not a bad input: exit code 1, one line, nothing written."""
    from uncertank.bayes import ConvergenceError, fit

    def fails(*args, **kwargs):
        raise ConvergenceError("zoib fit (pymc) fails convergence checks: max R-hat 1.2 > 1.01 (phi)")

    monkeypatch.setattr(fit, "compare", fails)
    out = tmp_path / "o"
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "-o", str(out), "--strict", *FAST])
    assert res.exit_code == 1 and not out.exists()
    assert res.output.splitlines()[-1] == "Error: zoib fit (pymc) fails convergence checks: max R-hat 1.2 > 1.01 (phi)"


def _fitted(df: pd.DataFrame, seed: int = 0) -> SystemComparison:
    """A Gaussian comparison of ``df`` whose posterior is drawn directly (no sampler)."""
    import arviz as az

    from uncertank.bayes import check_frame

    data = check_frame(df, "gaussian")
    systems, topics = sorted(data["system"].unique()), sorted(data["topic"].unique())
    rng = np.random.default_rng(seed)
    shape = (4, 1000)  # independent draws: every convergence check passes
    post = {"Intercept": 0.5 + 0.01 * rng.standard_normal(shape),
            "sd_system": np.abs(0.2 + 0.01 * rng.standard_normal(shape)),
            "sd_topic": np.abs(0.2 + 0.01 * rng.standard_normal(shape)),
            "r_system": 0.1 * rng.standard_normal((*shape, len(systems))),
            "r_topic": 0.1 * rng.standard_normal((*shape, len(topics))),
            "sigma": np.abs(0.2 + 0.01 * rng.standard_normal(shape))}
    idata = az.from_dict(posterior=post, sample_stats={"diverging": np.zeros(shape, dtype=bool)},
                         coords={"system": systems, "topic": topics},
                         dims={"r_system": ["system"], "r_topic": ["topic"]})
    return SystemComparison(idata, data, family="gaussian", sampler="test", seed=seed)


def test_compare_removes_the_files_of_a_previous_run(tmp_path, monkeypatch):
    """A previous run's figures never sit beside new results; files compare does not write stay."""
    from uncertank.bayes import fit

    csv = _csv(tmp_path)
    monkeypatch.setattr(fit, "compare", lambda df, **kwargs: _fitted(df))
    out = tmp_path / "out"
    first = CliRunner().invoke(compare_command, [str(csv), "--family", "gaussian", "-o", str(out)])
    assert first.exit_code == 0, first.output
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)
    assert "of a previous run" not in first.stderr
    (out / "notes.txt").write_text("mine")
    second = CliRunner().invoke(compare_command, [str(csv), "--family", "gaussian", "-o", str(out),
                                                                  "--no-plots"])
    assert second.exit_code == 0, second.output
    assert sorted(p.name for p in out.iterdir()) == ["effects.csv", "notes.txt", "posterior.nc", "results.json"]
    assert (f"removed results.json, effects.csv, posterior.nc, effects.png, ppc.png of a previous run from {out}"
            in second.stderr.splitlines())
    assert (out / "notes.txt").read_text() == "mine"


def test_compare_output_that_cannot_be_made(tmp_path, monkeypatch):
    from uncertank.bayes import fit

    monkeypatch.setattr(fit, "compare", lambda df, **kwargs: _fitted(df))
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "--family", "gaussian",
                                               "-o", str(blocker / "out")])
    assert res.exit_code == 2 and res.output.splitlines()[-1].startswith(f"Error: --output {blocker / 'out'}: ")


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
            "--tune", "60", "--chains", "1", "--sampler", "pymc", "--seed", "3", "--retries", "0"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == UNCONVERGED_EXIT, res.output  # one chain: R-hat unavailable, no verdict
    assert "R-hat unavailable (1 chain)" in res.output
    results = json.loads((out / "results.json").read_text())
    assert results["chains"] == 1 and results["diagnostics"]["max_rhat"] is None
    assert results["diagnostics"]["rhat_available"] is False


@pytest.mark.slow
def test_compare_with_target_ess(tmp_path):
    out = tmp_path / "out"
    args = [str(_csv(tmp_path)), "--family", "gaussian", "-o", str(out), "--no-plots", "--draws", "50",
            "--tune", "300", "--chains", "2", "--sampler", "pymc", "--target-ess", "100", "--time-budget", "900"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == 0, res.output
    assert "ESS gate: target reached" in res.output
    gate = json.loads((out / "results.json").read_text())["gate"]
    assert gate["met"] is True and gate["min_ess_bulk"] >= 100 and gate["rounds"] >= 2


@pytest.mark.slow
def test_compare_nutpie_huge_target_stops_at_the_budget(tmp_path):
    """--target-ess 1e9 once made nutpie preallocate 50 * 1e9 / chains draws per chain and abort (200 GB)."""
    pytest.importorskip("nutpie")
    out = tmp_path / "out"
    args = [str(_csv(tmp_path)), "--family", "gaussian", "-o", str(out), "--no-plots", "--draws", "20",
            "--tune", "100", "--chains", "2", "--sampler", "nutpie", "--target-ess", "1e9", "--time-budget", "5"]
    res = CliRunner().invoke(compare_command, args)
    assert res.exit_code == 0, res.output
    assert "ESS gate: time budget of 5 s ran out after" in res.output
    gate = json.loads((out / "results.json").read_text())["gate"]
    # stopped by the budget (how far past it: benchmarks/bench_time_budget.py), not by the 200 GB allocation
    assert gate["budget_exhausted"] is True and gate["met"] is False and gate["draws"] >= 20


@pytest.mark.slow
def test_two_systems_converge_and_get_a_verdict(tmp_path):
    """A user's model against BM25, 150 topics, per-query scores with many zeros and ones: converged, a verdict."""
    import importlib.util
    import sys

    script = Path(__file__).resolve().parents[2] / "docs" / "scripts" / "few_systems.py"
    spec = importlib.util.spec_from_file_location("few_systems", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("few_systems", module)
    spec.loader.exec_module(module)
    csv = tmp_path / "two.csv"
    module.simulate(2).to_csv(csv, index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(csv), "--family", "zoib", "-o", str(out), "--baseline", "s0",
                                               "--no-plots", "--retries", "0"])
    assert res.exit_code == 0, res.output
    assert "distinguishable from" in res.output and ", 0 divergences" in res.output
    results = json.loads((out / "results.json").read_text())
    assert results["verdict"] is None and results["diagnostics"]["ok"] is True
    assert len(results["urisk"]["tables"]["r=2"]) == 1  # the other system against the baseline
    best = results["distinguishable"]["best"]
    assert best["interval"] == len(best["interval_systems"])
