"""The full study of docs/study.md: its study file, its summary script, and the docs quoting its numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import load_script
from uncertank.experiment import load_config

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "full.toml"
SUMMARY = ROOT / "docs" / "scripts" / "full_study_summary.py"
DIAGNOSTICS = ROOT / "docs" / "scripts" / "full_study_diagnostics.py"


def test_study_file_loads_the_checkpoints_the_real_run_studies_save():
    config = load_config(STUDY)
    assert [c.name for c in config.conditions] == [
        "in-domain", "cross-NS random", "cross-NS embedding", "cross-domain chitchat"]
    assert [r.key for r in config.rankers] == ["bm25", "bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"]
    # every checkpoint is a folder that docs/studies/real_run.toml or real_run_ensemble.toml writes (save_to)
    saved = {r.key: r.save_to for name in ("real_run.toml", "real_run_ensemble.toml")
             for r in load_config(STUDY.parent / name).rankers if r.save_to is not None}
    for rc in config.rankers:
        assert rc.checkpoint == saved.get(rc.key), rc.key
    header = STUDY.read_text().split("[study]", 1)[0]
    for name in ("real_run.toml", "real_run_ensemble.toml", "full.toml"):
        assert f"uncertank run docs/studies/{name}" in header, name
    by_key = {r.key: r for r in config.rankers}
    assert by_key["mc_dropout"].init_from == "bert" and by_key["mc_dropout"].params["n_passes"] == 10
    assert config.max_test_queries == 600 and config.max_train_queries is None


def test_summary_reads_the_training_history_of_every_saved_model(tmp_path):
    summary = load_script(SUMMARY)
    saved, untrained = tmp_path / "a", tmp_path / "b"
    saved.mkdir()
    untrained.mkdir()
    loss = [1.0] * 10 + [0.5] * 5 + [0.25] * 10
    (saved / "uncertank.json").write_text(json.dumps({"history": {"loss": loss, "valid_map": [0.6]}}))
    (untrained / "uncertank.json").write_text(json.dumps({"history": None}))
    config = {"rankers": [
        {"name": "bert", "label": "bert lists", "save_to": str(saved)},
        {"name": "bm25", "label": "", "save_to": None},
        {"name": "sngp", "label": "", "save_to": str(untrained)},
        {"name": "pgdrr", "label": "", "save_to": str(tmp_path / "gone")},
    ]}
    assert summary.training(config) == {
        "bert lists": {"steps": 25, "loss first 10": 1.0, "loss last 10": 0.25, "valid MAP": [0.6]}}


TINY = """
[study]
name = "tiny"
train_dataset = "ubuntu-sample"
max_train_queries = 10
max_valid_queries = 10
max_test_queries = 20
risk_grid = [0.0]
nota = false

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "bm25"

[[conditions]]
name = "cross-NS random"
dataset = "ubuntu-sample"
negatives = "random"

[[rankers]]
name = "bm25"

[[rankers]]
name = "tfidf-bootstrap"

[bayes]
enabled = false
"""


@pytest.mark.slow
def test_summary_and_diagnostics_scripts_on_a_tiny_study(tmp_path):
    pytest.importorskip("uncertank_tfidf", reason="the study's tfidf-bootstrap ranker is the example plugin")
    from uncertank.experiment import run_study

    study = tmp_path / "tiny.toml"
    study.write_text(TINY)
    result = run_study(load_config(study), tmp_path / "study")
    summary = load_script(SUMMARY)
    summary.main([str(tmp_path / "study"), "--out", str(tmp_path / "s.json"), "--figures", str(tmp_path / "figs")])
    payload = json.loads((tmp_path / "s.json").read_text())
    assert payload["conditions"] == ["in-domain", "cross-NS random"]
    assert payload["rankers"] == ["bm25", "tfidf-bootstrap"]
    for cond in payload["conditions"]:
        for ranker in payload["rankers"]:
            ev = result.evaluation(ranker, cond)
            assert ev is not None
            assert payload["results"][cond][ranker]["R@1"] == pytest.approx(ev.metrics["R@1"])
            assert payload["results"][cond][ranker]["AURC"] == pytest.approx(ev.selective.aurc)  # type: ignore[union-attr]
    assert payload["total_seconds"] == pytest.approx(sum(s.seconds for s in result.steps.values()), abs=0.5)
    assert payload["command"] == "uncertank run docs/studies/full.toml --out full-study"
    assert "training" not in payload  # nothing was saved
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(
        p.name for p in (tmp_path / "study" / "figures").glob("*.png"))
    summary.main([str(tmp_path / "study"), "--out", str(tmp_path / "t.json"), "--figures", "-"])
    assert json.loads((tmp_path / "t.json").read_text()) == payload and not Path("-").exists()
    with pytest.raises(SystemExit, match=r"results\.json"):
        summary.main([str(tmp_path / "nowhere")])
    # the diagnostics: overlap per condition, and the wide-grid risk curve at b = 0 equals ranking by the mean
    diag = load_script(DIAGNOSTICS)
    diag.main([str(study), str(tmp_path / "study"), "--out", str(tmp_path / "d.json"), "--bootstrap", "20"])
    d = json.loads((tmp_path / "d.json").read_text())
    assert set(d["lexical_overlap"]) == {"in-domain", "cross-NS random"}
    assert set(d["lexical_overlap"]["in-domain"]["spearman_score_overlap"]) == {"tfidf-bootstrap"}
    # the balanced ECE averaged over subsamples: its first subsample is the study's own balanced ECE (seed 0)
    for cond in ("in-domain", "cross-NS random"):
        row = d["balanced_ece"][cond]["tfidf-bootstrap"]
        ev = result.evaluation("tfidf-bootstrap", cond)
        assert row["seed0"] == pytest.approx(ev.metrics["ECE balanced"])
        assert row["seed_sd"] > 0 and 0 <= row["mean"] <= 1
    curve = d["risk_r1_wide_grid"]["tfidf-bootstrap"]
    for cond in ("in-domain", "cross-NS random"):
        ev = result.evaluation("tfidf-bootstrap", cond)
        assert ev is not None and ev.risk is not None
        assert curve[cond]["0.0"] == pytest.approx(ev.risk.test_curve[0.0])


def test_overlap_is_the_share_of_a_candidates_word_types_found_in_the_context():
    diag = load_script(DIAGNOSTICS)
    got = diag.overlap(["How do I mount", "a USB disk?"], ["mount the disk", "", "Reboot"])
    assert got.tolist() == [2 / 3, 0.0, 0.0]


def test_docs_page_quotes_the_checked_in_results():
    """Every table of docs/study.md is the one the summary script generates from docs/results/full_study.json."""
    payload = json.loads((ROOT / "docs" / "results" / "full_study.json").read_text())
    page = (ROOT / "docs" / "study.md").read_text()
    summary = load_script(SUMMARY)
    for name, table in summary.tables(payload).items():
        assert table in page, f"docs/study.md does not hold the {name} table of docs/results/full_study.json"
    assert payload["rankers"] == ["bm25", "bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"]
    assert payload["sizes"]["test"] == {c: 600 for c in payload["conditions"]}
    assert all(b["converged"] for b in payload["bayes"].values())
    for figure in ("reliability.png", "ece-imbalance.png", "risk-r1-vs-b.png"):
        assert (ROOT / "docs" / "results" / "full_study" / figure).is_file()
        assert f"results/full_study/{figure}" in page


def test_docs_page_quotes_the_balanced_ece_over_many_subsamples():
    """docs/study.md's noise table is the one the diagnostics script renders from its checked-in JSON."""
    payload = json.loads((ROOT / "docs" / "results" / "full_study_diagnostics.json").read_text())
    table = load_script(DIAGNOSTICS).balanced_table(payload)
    assert table in (ROOT / "docs" / "study.md").read_text()
    settings = payload["balanced_ece_settings"]
    assert settings["balanced_seeds"] == 100 and settings["bootstrap"] == 1000 and settings["reference"] == "bert"
    for cond in settings["conditions"]:
        for ranker, cell in payload["balanced_ece"][cond].items():
            assert 0 < cell["seed_sd"] < 0.05
            if ranker != "bert":
                lo, hi = cell["change_ci95"]
                assert lo < hi


def test_docs_page_quotes_the_oracle_risk_table():
    """The oracle bound of risk-aware reranking in docs/study.md is the script's, from the checked-in curves."""
    payload = json.loads((ROOT / "docs" / "results" / "full_study.json").read_text())
    diagnostics = json.loads((ROOT / "docs" / "results" / "full_study_diagnostics.json").read_text())
    summary = load_script(SUMMARY)
    assert summary.oracle_table(payload, diagnostics) in (ROOT / "docs" / "study.md").read_text()


def test_smallest_p_is_the_one_sided_best_case_and_shrinks_with_the_gain():
    summary = load_script(SUMMARY)
    assert summary.smallest_p(0, 600) is None
    ps = [summary.smallest_p(k, 600) for k in (1, 2, 4, 13)]
    assert ps == sorted(ps, reverse=True)
    # by hand: k ones in n, t = sqrt(k (n - 1) / (n - k)); two-sided, n - 1 degrees of freedom
    from scipy import stats

    t = (4 * 599 / 596) ** 0.5
    assert ps[2] == pytest.approx(2 * stats.t.sf(t, 599), rel=1e-9)


def test_the_scoring_retime_scores_what_the_full_study_scored_and_the_docs_quote_it():
    full, retime = load_config(STUDY), load_config(ROOT / "docs" / "studies" / "full_scoring.toml")
    for field in ("train_dataset", "train_negatives", "n_candidates", "max_train_queries", "max_valid_queries",
                  "max_test_queries", "seed", "conditions"):
        assert getattr(retime, field) == getattr(full, field), field
    by_key = {r.key: r for r in retime.rankers}
    assert by_key["bert"].checkpoint == next(r for r in full.rankers if r.key == "bert").checkpoint
    assert by_key["mc_dropout"].init_from == "bert" and by_key["mc_dropout"].params["n_passes"] == 10
    payload = json.loads((ROOT / "docs" / "results" / "full_scoring.json").read_text())
    steps = payload["predict_seconds"]
    assert payload["bert_seconds"] == pytest.approx(sum(v for k, v in steps.items() if k.startswith("predict bert ")),
                                                    abs=0.11)
    assert payload["ratio"] == pytest.approx(payload["mc_dropout_seconds"] / payload["bert_seconds"], abs=0.005)
    assert f"{payload['ratio']:.1f}x" in (ROOT / "docs" / "study.md").read_text()
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert f"| all | {payload['bert_seconds']:,.1f} | {payload['mc_dropout_seconds']:,.1f} | {payload['ratio']:.2f} |" \
        in results
