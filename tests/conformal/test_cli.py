"""`uncertank threshold` on the TREC-COVID round 1 runs of tests/data (derived from the bundled data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.conformal import calibrate_threshold, split_queries
from uncertank.datasets.trec import ranked_lists_from_run

DATA = Path(__file__).parents[1] / "data"
RUNS = {s: DATA / f"trec-covid-r1.{s}.run" for s in ("BBGhelani1", "base.unipd.it", "BioinfoUA-emb")}
QRELS = DATA / "trec-covid-r1.qrels"


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["threshold", *args])


@pytest.mark.parametrize("risk", ["coverage", "miss", "fdr", "abstain"])
@pytest.mark.parametrize("system", ["BBGhelani1", "BioinfoUA-emb"])
def test_json_equals_the_python_api(risk, system):
    res = _invoke("--run", str(RUNS[system]), "--qrels", str(QRELS), "--alpha", "0.25", "--delta", "0.2",
                  "--risk", risk, "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    lists = ranked_lists_from_run(RUNS[system], QRELS)
    want = calibrate_threshold(lists, risk=risk, alpha=0.25, delta=0.2).to_dict()  # type: ignore[arg-type]
    assert {k: out[k] for k in want} == want
    assert out["n_calibration"] == 30 and out["calibration"]["n_queries"] == 30


def test_text_names_the_threshold_the_guarantee_and_the_calibration_size():
    res = _invoke("--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--alpha", "0.2", "--risk", "coverage")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "threshold 0.75: keep the candidates scoring >= 0.75"
    assert lines[1].startswith("guarantee: P(a relevant candidate is in the set) >= 0.8")
    assert lines[2].startswith("calibration: 30 queries; miscoverage on them")


def test_top_k_holdout_and_an_exchangeability_check_against_another_run():
    res = _invoke("--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--risk", "miss", "--top-k",
                  "--holdout", "0.3", "--seed", "1", "--against", str(RUNS["base.unipd.it"]), "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    lists = ranked_lists_from_run(RUNS["BBGhelani1"], QRELS)
    cal = split_queries(lists, calibration=0.7, seed=1).take(lists, "calibration")
    assert out["k"] == calibrate_threshold(cal, risk="miss", method="topk").k and out["n_calibration"] == 21
    assert out["holdout"]["n_queries"] == 9
    assert set(out["exchangeability"]) == {"holdout", str(RUNS["base.unipd.it"])}
    text = _invoke("--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--holdout", "0.3",
                   "--against", str(RUNS["base.unipd.it"]))
    assert text.exit_code == 0 and "held out: 9 queries" in text.output
    assert sum(ln.startswith("exchangeability:") for ln in text.output.splitlines()) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "missing.run", "--qrels", str(QRELS)], "does not exist"),
        (["--qrels", str(QRELS)], "Missing option '--run'"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--alpha", "1.5"], "--alpha must lie in (0, 1)"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--delta", "x"], "--delta must be a number"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--risk", "recall"], "--risk must be one of"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--format", "xml"], "--format must be text"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--risk", "fdr", "--top-k"], "--top-k applies"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--holdout", "1"], "--holdout must lie in [0, 1)"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--seed", "abc"], "is not a valid integer"),
        (["--run", str(QRELS), "--qrels", str(QRELS)], "run"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--against", "nope.run"], "does not exist"),
        (["--run", str(RUNS["BBGhelani1"]), "--qrels", str(QRELS), "--against", str(RUNS["base.unipd.it"]),
          "--system", "BBGhelani1"], "no line of system 'BBGhelani1'"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(args, message):
    res = _invoke(*args)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("uncertank threshold: ") and message in lines[0], res.output


def test_listed_in_help():
    res = CliRunner().invoke(cli, ["--help"])
    assert "threshold" in res.output
    assert "--risk" in _invoke("--help").output
