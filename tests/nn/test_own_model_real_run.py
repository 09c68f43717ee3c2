"""The own-model real run of docs/rankers.md: its summary is built from a study's results.json, and the
docs quote its results file."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "own_model_real_run.py"
RESULTS = ROOT / "docs" / "results" / "own_model_real_run.json"


def _script():
    return runpy.run_path(str(SCRIPT), run_name="own_model_real_run")


def test_the_summary_reads_a_study_and_keeps_the_full_studys_rankers_apart(tmp_path):
    from uncertank.experiment.result import Evaluation, RiskOutcome, StepInfo, StudyResult

    metrics = {"R@1": 0.5, "MAP": 0.6, "ECE": 0.3, "ECE balanced": 0.1, "ECE balanced (mean of 100)": 0.12}
    risk = RiskOutcome(b=0.1, valid_curve={0.0: 0.4, 0.1: 0.41}, test_curve={0.0: 0.5, 0.1: 0.52}, r1_mean=0.5,
                       r1_risk_aware=0.52, p_value=0.3)
    evs = [Evaluation(name, "in-domain", True, name != "bert", dict(metrics), risk=risk if name != "bert" else None)
           for name in ("bm25", "bert", "mc_dropout", "sngp")]
    steps = {"fit sngp": StepInfo("k", 12.34), "predict bert in-domain": StepInfo("k", 2.0),
             "predict mc_dropout in-domain": StepInfo("k", 21.0)}
    study = StudyResult({}, {}, {}, evs, steps=steps)
    (tmp_path / "results.json").write_text(json.dumps(study.to_dict()))
    real_run = tmp_path / "real_run.json"
    real_run.write_text(json.dumps({"step_seconds": {"fit bert": 100.0, "fit sngp": 200.0}}))
    payload = _script()["summarise"](tmp_path, {"max_abs_difference": 0.0}, real_run)
    rows = payload["results"]
    assert "bm25 (your folder)" not in rows and rows["sngp (post-hoc)"]["in-domain"]["ECE"] == 0.3
    assert rows["bert (end to end, full study)"]["in-domain"]["R@1"] == pytest.approx(
        json.loads((ROOT / "docs" / "results" / "full_study.json").read_text())["results"]["in-domain"]["bert"]["R@1"])
    assert payload["fit_seconds_post_hoc"] == {"sngp": 12.3}
    assert payload["predict_seconds_all_conditions"]["mc_dropout"] == 21.0
    assert payload["risk"]["mc_dropout (your folder)"]["in-domain"]["oracle_b"] == 0.1
    assert payload["train_seconds_end_to_end"] == {"bert": 100.0, "sngp": 200.0, "gpf_bert": None, "pgdrr": None}


def test_the_training_times_are_the_real_run_studys_fit_steps(tmp_path):
    script = _script()
    assert script["REAL_RUN"] == ROOT / "docs" / "results" / "real_run.json"
    assert script["SOURCE"] == ROOT / ".cache" / "real_run" / "bert"
    assert script["EXPORTED"] == ROOT / ".cache" / "real_run" / "bert_hf"
    real_run = tmp_path / "real_run.json"  # docs/scripts/full_study_summary.py's layout, made-up seconds
    real_run.write_text(json.dumps({
        "command": "uncertank run docs/studies/real_run.toml --out .cache/real_run/study",
        "step_seconds": {"fit bert": 11.5, "fit bert lists": 9.0, "fit mc_dropout": 0.0, "fit sngp": 22.25,
                         "fit gpf_bert": 33.0, "fit pgdrr": 44.0, "predict sngp in-domain": 5.0},
    }))
    assert script["train_seconds_end_to_end"](real_run) == {"bert": 11.5, "sngp": 22.25, "gpf_bert": 33.0,
                                                            "pgdrr": 44.0}
    with pytest.raises(SystemExit, match=r"full_study_summary\.py \.cache/real_run/study"):
        script["train_seconds_end_to_end"](tmp_path / "missing.json")


def test_a_missing_model_points_to_the_real_run_study(tmp_path):
    with pytest.raises(SystemExit, match=r"uncertank run docs/studies/real_run\.toml --out \.cache/real_run/study"):
        _script()["export"](tmp_path / "bert", tmp_path / "bert_hf")
    assert not (tmp_path / "bert_hf").exists()


def test_the_docs_quote_the_results_file():
    if not RESULTS.exists():
        pytest.fail(f"{RESULTS} is missing: run python docs/scripts/own_model_real_run.py")
    table = _script()["render"](json.loads(RESULTS.read_text()))
    assert table in (ROOT / "docs" / "rankers.md").read_text()


def test_the_docs_quote_the_balanced_ece_over_100_subsamples_for_every_row():
    payload = json.loads(RESULTS.read_text())
    table = _script()["render_balanced"](payload)
    assert table in (ROOT / "docs" / "rankers.md").read_text()
    diag = json.loads((ROOT / "docs" / "results" / "full_study_diagnostics.json").read_text())["balanced_ece"]
    for label, by_cond in payload["results"].items():
        for cond, m in by_cond.items():
            assert m["ECE balanced (mean of 100)"] is not None, (label, cond)
            if label.endswith("(end to end, full study)"):
                assert m["ECE balanced (mean of 100)"] == diag[cond][label.split(" ")[0]]["mean"]


def test_the_laplace_rows_join_the_summary_apart_and_the_docs_quote_them(tmp_path):
    from uncertank.experiment.result import Evaluation, StepInfo, StudyResult

    payload = json.loads(RESULTS.read_text())
    full = payload["results"]["bert (end to end, full study)"]
    evs = [Evaluation(name, cond, True, name == "laplace", {**m, "R@1": m["R@1"] + (0.01 if name == "laplace" else 0)})
           for cond, m in full.items() for name in ("bert", "laplace")]
    steps = {"fit laplace": StepInfo("k", 10.0), "predict bert in-domain": StepInfo("k", 2.0),
             "predict laplace in-domain": StepInfo("k", 3.0)}
    (tmp_path / "results.json").write_text(json.dumps(StudyResult({}, {}, {}, evs, steps=steps).to_dict()))
    added = _script()["add_laplace"]({k: v for k, v in payload.items() if k != "laplace"}, tmp_path)
    assert added["results"] == payload["results"]  # the study's own rows are left as they are
    lap = added["laplace"]
    assert lap["bert_rows_max_abs_difference_vs_full_study"] == 0.0 and lap["predict_cost_vs_bert"] == 1.5
    assert lap["results"]["laplace (the exported folder)"]["in-domain"]["R@1"] == pytest.approx(
        full["in-domain"]["R@1"] + 0.01)
    table = _script()["render_laplace"](payload)
    assert table in (ROOT / "docs" / "rankers.md").read_text()  # the docs quote the committed run
    assert payload["laplace"]["bert_rows_max_abs_difference_vs_full_study"] < 1e-6


def test_the_posthoc_few_queries_table_is_the_committed_runs():
    script = runpy.run_path(str(ROOT / "docs" / "scripts" / "posthoc_few_queries.py"), run_name="posthoc_few_queries")
    payload = json.loads((ROOT / "docs" / "results" / "posthoc_few_queries.json").read_text())
    assert script["render"](payload) in (ROOT / "docs" / "own-ranker.md").read_text()
    heads = payload["rows"][1:]
    assert {r["ranker"] for r in heads} == {"sngp", "gpf_bert", "pgdrr"} and len(heads) == 6
    # a head that ranks the validation queries below the model's own head warned, and only such a head
    assert all((r["warning"] is not None) == (r["valid_map"] < r["own_valid_map"]) for r in heads)
