"""docs/rankers.md's "Real run" quotes the real-run studies' checked-in numbers, and those agree with each other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
RANKERS_MD = ROOT / "docs" / "rankers.md"
BALANCED = "ECE balanced (mean of 100)"


def _payloads() -> tuple[dict, dict]:
    return (json.loads((RESULTS / "real_run.json").read_text()),
            json.loads((RESULTS / "real_run_ensemble.json").read_text()))


def _section() -> str:
    return RANKERS_MD.read_text().split("## Real run", 1)[1].split("\n## ", 1)[0]


def _row(text: str, label: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith(f"| {label} |"):
            return [c.strip() for c in line.strip().strip("|").split("|")]
    raise AssertionError(f"no row {label!r} in the real run's table")


def test_the_summaries_record_the_commands_that_made_them():
    real, ens = _payloads()
    assert real["command"] == "uncertank run docs/studies/real_run.toml --out .cache/real_run/study"
    assert ens["command"] == "uncertank run docs/studies/real_run_ensemble.toml --out .cache/real_run_ensemble"
    assert real["conditions"] == ens["conditions"] and real["sizes"] == ens["sizes"]


def test_both_studies_score_the_same_bert_on_the_same_queries():
    # real_run.toml trains bert; real_run_ensemble.toml loads the same weights: every number must agree
    real, ens = _payloads()
    for cond in real["conditions"]:
        a, b = real["results"][cond]["bert"], ens["results"][cond]["bert"]
        for metric in ("R@1", "MAP"):
            assert a[metric] == pytest.approx(b[metric], abs=1e-12), (cond, metric)
        for metric in ("ECE", BALANCED):  # float32 scores: the probabilities agree to about 1e-7
            assert a[metric] == pytest.approx(b[metric], abs=1e-6), (cond, metric)


def test_the_docs_table_quotes_the_in_domain_numbers():
    real, ens = _payloads()
    section, cond = _section(), "in-domain"
    rows = {"bert": ("`bert`", real), "mc_dropout": ("`mc_dropout` (T=10)", real),
            "ensemble": ("`ensemble` (M=5)", ens), "sngp": ("`sngp`", real), "gpf_bert": ("`gpf_bert`", real),
            "pgdrr": ("`pgdrr`", real), "bert lists": ("`bert` on lists of ten", real)}
    for name, (label, payload) in rows.items():
        r = payload["results"][cond][name]
        cells = _row(section, label)
        expected = [f"{r['R@1']:.3f}", f"{r['MAP']:.3f}", f"{r['ECE']:.3f}", f"{r[BALANCED]:.3f}"]
        assert cells[1:5] == expected, (name, cells, expected)
        assert cells[5] == ("n/a" if r.get("mean_std") is None else f"{r['mean_std']:.3f}"), name
        seconds = payload["step_seconds"][f"predict {name} {cond}"]
        assert cells[6] == f"{seconds:.1f} s", name
    bm25 = _row(section, "BM25, zero-shot (reference)")
    assert bm25[1:3] == [f"{real['results'][cond]['bm25'][m]:.3f}" for m in ("R@1", "MAP")]
    assert f"{real['sizes']['train']:,} train queries" in section
    assert f"{real['sizes']['test'][cond]:,} test queries" in section


def test_the_training_times_and_histories_in_the_text_are_the_studys():
    real, ens = _payloads()
    section = _section()
    for name in ("bert", "bert lists", "sngp", "gpf_bert", "pgdrr"):
        assert f"{real['step_seconds'][f'fit {name}']:,.0f} s" in section, name
        h = real["training"][name]
        assert f"{h['loss first 10']:.3f} to {h['loss last 10']:.3f}" in section, name
        assert f"{h['valid MAP'][-1]:.3f}" in section, name
    assert f"{ens['step_seconds']['fit ensemble']:,.0f} s" in section


def test_the_figure_is_the_studys():
    assert (RESULTS / "real_run" / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "(results/real_run/reliability.png)" in _section()


def test_the_own_model_section_quotes_the_real_runs_training_times():
    real, _ = _payloads()
    own = json.loads((RESULTS / "own_model_real_run.json").read_text())["train_seconds_end_to_end"]
    for name, seconds in own.items():
        assert seconds == real["step_seconds"][f"fit {name}"], name
    text = RANKERS_MD.read_text()
    assert f"{own['sngp']:,.0f} / {own['gpf_bert']:,.0f} / {own['pgdrr']:,.0f} s end to end" in text
    assert f"plus the {own['bert']:,.0f} s of" in text


def test_the_full_study_page_says_how_far_the_retrained_models_moved():
    real, _ = _payloads()
    full = json.loads((RESULTS / "full_study.json").read_text())
    now, then = real["results"]["in-domain"]["bert"]["R@1"], full["results"]["in-domain"]["bert"]["R@1"]
    text = " ".join((ROOT / "docs" / "study.md").read_text().split())
    assert f"in-domain R_10@1 of `bert` is {now:.3f} against {then:.3f} here" in text
