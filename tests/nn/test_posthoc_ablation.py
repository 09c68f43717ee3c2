"""The post-hoc studies on the real run's frozen encoder (docs/pgdrr.md, docs/rankers.md): their design, and
the docs quoting their checked-in numbers."""

from __future__ import annotations

import json
import math
import runpy
from pathlib import Path

import pytest

from uncertank.experiment import load_config

ROOT = Path(__file__).resolve().parents[2]
ABLATION = ROOT / "docs" / "studies" / "posthoc_ablation.toml"
RESULTS = ROOT / "docs" / "results" / "pgdrr_ablation.json"


def _script():
    return runpy.run_path(str(ROOT / "docs" / "scripts" / "posthoc_ablation.py"), run_name="posthoc_ablation")


def test_each_pgdrr_row_changes_one_setting_and_lists_cost_what_pairs_cost():
    config = load_config(ABLATION)
    rows = {r.key: r for r in config.rankers}
    default = rows["pgdrr default"].params
    pgdrr = [r for r in config.rankers if r.name == "pgdrr"]
    assert len(pgdrr) >= 7  # the default and at least six changes
    for r in pgdrr:
        changed = {k for k in {*r.params, *default} if r.params.get(k) != default.get(k)}
        if r.key == "pgdrr lists":
            assert changed == {"train_ratio", "max_train_queries"}
        elif r.key == "pgdrr [CLS] ls median":
            assert changed == {"projection_dim", "length_scale"}
        elif r.key != "pgdrr default":
            assert len(changed) == 1, (r.key, changed)
    # lists of ten from a fifth of the queries: as many training pairs as balanced pairs from all of them
    n = config.max_train_queries
    for r in config.rankers:
        if r.key.endswith("lists"):
            assert r.params["train_ratio"] == 9 and r.params["max_train_queries"] * 10 == n * 2
    assert rows["bert head pairs"].init_from == rows["bert head lists"].init_from == "bert"
    # the bank study changes only how the memory bank is drawn, on the same data
    bank = load_config(ROOT / "docs" / "studies" / "posthoc_pgdrr_bank.toml")
    for field in ("train_dataset", "max_train_queries", "max_valid_queries", "max_test_queries", "seed",
                  "conditions", "n_candidates"):
        assert getattr(bank, field) == getattr(config, field), field
    (row,) = [r for r in bank.rankers if r.name == "pgdrr"]
    assert row.pretrained == rows["pgdrr lists"].pretrained
    assert {**row.params, "balanced_bank": True} == {**rows["pgdrr lists"].params, "balanced_bank": True}
    assert row.params["balanced_bank"] is False


def test_the_docs_quote_the_checked_in_results():
    if not RESULTS.exists():
        pytest.fail(f"{RESULTS} is missing: run the commands of docs/scripts/posthoc_ablation.py")
    payload = json.loads(RESULTS.read_text())
    pages = (ROOT / "docs" / "pgdrr.md").read_text() + (ROOT / "docs" / "rankers.md").read_text()
    for name, table in _script()["tables"](payload).items():
        assert table in pages, f"the {name} table of {RESULTS.name} is not in docs/pgdrr.md or docs/rankers.md"
    rows = payload["rankers"]
    assert sum(r["ranker"] == "pgdrr" for r in rows.values()) >= 7
    for label, row in rows.items():
        for cond in payload["conditions"]:
            t = row["test"][cond]
            assert {"R@1", "MAP", "ECE", "ECE balanced (mean of 100)"} <= t.keys()
            if label != "bert":
                for lo, hi in t["minus_bert_95"].values():
                    assert lo <= hi
    chosen = payload["pgdrr_chosen_on_validation"]
    assert rows[chosen]["valid"]["ECE balanced (mean of 100)"] == min(
        r["valid"]["ECE balanced (mean of 100)"] for r in rows.values() if r["ranker"] == "pgdrr")


def test_the_end_to_end_lists_study_scores_the_full_studys_data():
    full, lists = load_config(ROOT / "docs" / "studies" / "full.toml"), load_config(
        ROOT / "docs" / "studies" / "lists_bert.toml")
    for field in ("train_dataset", "train_negatives", "n_candidates", "max_valid_queries", "max_test_queries", "seed",
                  "conditions"):
        assert getattr(lists, field) == getattr(full, field), field
    by_key = {r.key: r for r in lists.rankers}
    assert by_key["bert"].checkpoint == next(r for r in full.rankers if r.key == "bert").checkpoint
    assert by_key["bert lists"].checkpoint != by_key["bert"].checkpoint
    payload = json.loads(RESULTS.read_text())["end_to_end"]
    own = {k for k, r in payload["rankers"].items() if r["study"] == "docs/studies/lists_bert.toml"}
    assert own == set(by_key)  # every ranker of the study, the GP rankers on lists included
    assert payload["test_queries"] == {c.name: 600 for c in full.conditions}
    for key, row in payload["rankers"].items():
        trained_on_lists = key not in ("bert", "bert lists")
        assert trained_on_lists == (row["params"].get("train_ratio") == 9)
        if key in own:
            assert trained_on_lists == (by_key[key].init_from == "bert lists")
        if trained_on_lists:  # compared with bert fine-tuned on lists, the papers' own comparison
            assert all("minus_bert_head_lists_95" in t for t in row["test"].values())
    assert set(payload["pairs"]) == {"sngp pairs", "gpf_bert pairs", "pgdrr pairs"}


def test_the_intercept_and_all_queries_studies_change_one_thing_each():
    lists = load_config(ROOT / "docs" / "studies" / "lists_bert.toml")
    by_key = {r.key: r for r in lists.rankers}
    intercept = load_config(ROOT / "docs" / "studies" / "lists_intercept.toml")
    full = load_config(ROOT / "docs" / "studies" / "lists_full.toml")
    for study in (intercept, full):
        for field in ("train_dataset", "train_negatives", "n_candidates", "max_valid_queries", "max_test_queries",
                      "seed", "conditions", "metrics", "reference"):
            assert getattr(study, field) == getattr(lists, field), field
        rows = {r.key: r for r in study.rankers}
        for key in ("bert", "bert lists"):  # the same checkpoints: their rows are not repeated in the summary
            assert rows[key].checkpoint == by_key[key].checkpoint and rows[key].params == by_key[key].params
    # the intercept study: lists_bert.toml's sngp and gpf_bert rows with the intercept at its default
    rows = {r.key: r for r in intercept.rankers}
    for name in ("sngp", "gpf_bert"):
        new, old = rows[f"{name} lists, intercept"], by_key[f"{name} lists"]
        assert new.init_from == old.init_from == "bert lists"
        assert old.params["output_bias"] is False and "output_bias" not in new.params
        assert new.params == {k: v for k, v in old.params.items() if k != "output_bias"}
    # the second point: the real run's bert recipe on lists of ten from every training query
    real_bert = next(r for r in load_config(ROOT / "docs" / "studies" / "real_run.toml").rankers if r.key == "bert")
    row = next(r for r in full.rankers if r.key == "bert lists, all queries")
    assert row.checkpoint is None and row.init_from is None
    assert row.params == {**real_bert.params, "train_ratio": 9}
    assert full.max_train_queries is None


@pytest.mark.parametrize("name", ["lists_full", "lists_intercept"])
def test_the_summary_holds_every_new_row_of_the_studies_beside_lists_bert(name):
    end_to_end = json.loads(RESULTS.read_text())["end_to_end"]["rankers"]
    study = load_config(ROOT / "docs" / "studies" / f"{name}.toml")
    keys = {r.key for r in study.rankers} - {"bert", "bert lists"}  # lists_bert.toml's rows, not repeated
    assert keys and {k for k, r in end_to_end.items() if r["study"] == f"docs/studies/{name}.toml"} == keys
    for key in keys:  # trained on lists: compared with bert fine-tuned on lists as well as with bert
        row = end_to_end[key]
        assert row["params"]["train_ratio"] == 9
        assert set(row["test"]) == {c.name for c in study.conditions}
        assert all("minus_bert_head_lists_95" in t and "minus_bert_95" in t for t in row["test"].values())


def test_the_ensemble_study_holds_ra_bert_and_the_oracle_for_every_condition():
    ensemble = json.loads(RESULTS.read_text())["ensemble"]
    study = load_config(ROOT / "docs" / "studies" / "real_run_ensemble.toml")
    assert set(ensemble["rankers"]) == {r.key for r in study.rankers}
    assert ensemble["test_queries"] == {c.name: 600 for c in study.conditions}
    grid = study.risk_grid
    tests = ensemble["rankers"]["ensemble"]["test"]
    assert set(tests) == {c.name for c in study.conditions}
    for cond, t in tests.items():
        risk = t["risk"]
        assert risk["b"] in grid and risk["oracle_b"] in grid and risk["mixed_b"] in grid, cond
        # the oracle is the best b on the test condition itself: never below the validation b
        assert risk["R@1_oracle"] >= risk["R@1_risk_aware"] - 1e-12, cond
        # RA-BERT ranks by bert's means: with no risk term it is bert's own R_10@1
        assert risk["R@1_mixed_mean"] == pytest.approx(ensemble["rankers"]["bert"]["test"][cond]["R@1"]), cond


def test_the_full_size_collapse_rows_are_the_intercept_studys_models_and_in_the_docs():
    check = json.loads((ROOT / "docs" / "results" / "sngp_lists_collapse.json").read_text())
    full = check["full_size"]
    study = load_config(ROOT / "docs" / "studies" / full["study"].removeprefix("docs/studies/"))
    trained = [r.key for r in study.rankers if r.checkpoint is None]
    rows = {r["variant"]: r for r in full["rows"]}
    assert list(rows) == ["bert lists, the starting encoder", *trained]
    start = rows["bert lists, the starting encoder"]
    assert start["folder"] == ".cache/real_run/bert_lists" and start["intercept"] is None
    for key in trained:  # the GP heads have an intercept, and every model saw the same training steps
        assert rows[key]["intercept"] is not None and rows[key]["steps"] == start["steps"]
    script = runpy.run_path(str(ROOT / "docs" / "scripts" / "sngp_lists_collapse.py"))
    assert script["full_size_table"](check) in (ROOT / "docs" / "rankers.md").read_text()


def _collapse_table(payload):
    return runpy.run_path(str(ROOT / "docs" / "scripts" / "sngp_lists_collapse.py"))["table"](payload)


def test_the_collapsed_rows_are_the_intercept_free_head_the_check_measures():
    lists = {r.key: r for r in load_config(ROOT / "docs" / "studies" / "lists_bert.toml").rankers}
    assert lists["sngp lists"].params["output_bias"] is False and lists["gpf_bert lists"].params["output_bias"] is False
    check = json.loads((ROOT / "docs" / "results" / "sngp_lists_collapse.json").read_text())
    rows = {r["variant"]: r for r in check["rows"]}
    held, from_0, from_prior = (rows[f"intercept {v}"] for v in ("held at 0", "learned from 0",
                                                                 "learned from the prior log-odds"))
    assert held["intercept"] == 0.0 and from_0["intercept_start"] == 0.0 and from_0["intercept"] != 0.0
    assert from_prior["intercept_start"] == pytest.approx(-math.log(9))
    assert rows["plain head (bert), the control"]["intercept"] is None
    assert all(r["steps"] == held["steps"] for r in rows.values())  # the same budget for every variant
    assert check["train_ratio"] == 9 and check["start"] == ".cache/real_run/bert_lists"
    table = _collapse_table(check)
    assert table in (ROOT / "docs" / "rankers.md").read_text()


def _bench():
    pytest.importorskip("polyagamma")
    return runpy.run_path(str(ROOT / "benchmarks" / "bench_polya_gamma.py"), run_name="bench_polya_gamma")


def test_the_bank_cost_table_is_the_checked_in_measurement():
    payload = json.loads((ROOT / "docs" / "results" / "pgdrr_bank_cost.json").read_text())
    rows = payload["bank_sizes"]
    assert set(rows) == {"256", "1024", "2048", "4096"}
    for row in rows.values():
        for k, ratio in row["ratio_to_first"].items():
            assert ratio == pytest.approx(row[k] / rows["256"][k], abs=0.06)
        assert row["fit_bank_50_sweeps_s"] == pytest.approx(50 * row["sweep"] + row["factors"], abs=0.01)
    assert _bench()["bank_sweep_table"](payload) in (ROOT / "docs" / "pgdrr.md").read_text()


def test_bank_sweep_cost_times_every_size_and_its_memory():
    rows = _bench()["bank_sweep_cost"]([16, 32], 1, n_chains=3, dim=4, n_test=10)
    assert rows["16"]["ratio_to_first"] == {"sweep": 1.0, "factors": 1.0, "predict_1000": 1.0}
    assert rows["32"]["factor_memory_gb"] == round(2 * 3 * 32 * 32 * 8 / 1e9, 3)
    assert all(rows[m][k] > 0 for m in rows for k in ("sweep", "factors", "predict_1000"))
