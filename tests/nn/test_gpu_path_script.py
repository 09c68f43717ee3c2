"""benchmarks/gpu_path.py on the CPU: every neural ranker fitted, saved, loaded on the CPU and scored again.

On one device the checkpoint must give the predictions back exactly, and a
stochastic ranker with its seed the same draws, so every gap is zero; on a
GPU the same script measures what bf16 moves (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("uncertank_mcdropout")
pytest.importorskip("uncertank_ensemble")
pytest.importorskip("uncertank_sngp")
pytest.importorskip("uncertank_pgdrr")

from tests.scripts import load_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.slow
def test_every_ranker_round_trips_through_a_cpu_checkpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script imports its sibling _results
    script = load_script(BENCHMARKS / "gpu_path.py")
    out = tmp_path / "gpu_path.json"
    script.main(["--device", "cpu", "--backbone", "tiny", "--train-queries", "20", "--test-queries", "8",
                 "--members", "2", "--passes", "2", "--repeats", "1", "--no-write", "--json", str(out),
                 "--min-r10-at-1", "0"])
    record = json.loads(out.read_text())
    rows = {r["ranker"]: r for r in record["rows"]}
    assert list(rows) == list(script.RANKERS)
    for name, row in rows.items():
        assert row["max_abs_gap"] == 0.0, name
        assert row["top1_same"] == 1.0, name
        assert row["device"] == row["cpu"], name
    assert rows["bert"]["cost_ratio"] == 1.0
    assert rows["mc_dropout"]["fit_s"] == 0.0  # bert's network: nothing trained
    assert record["environment"]["device"] == "cpu"
    assert "| pgdrr |" in capsys.readouterr().out


def test_a_model_that_did_not_learn_gets_no_cost_or_calibration(monkeypatch):
    """A tiny random BERT on 20 queries stays near chance (0.10): the script stops before measuring it."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    script = load_script(BENCHMARKS / "gpu_path.py")
    with pytest.raises(SystemExit, match=r"bert ended at R_10@1 0\.\d+ on cpu .* did not learn"):
        script.main(["--device", "cpu", "--backbone", "tiny", "--train-queries", "20", "--test-queries", "8",
                     "--rankers", "bert", "--no-write", "--min-r10-at-1", "0.99"])


def test_the_ranker_list_is_checked():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        script = load_script(BENCHMARKS / "gpu_path.py")
        with pytest.raises(SystemExit, match="--rankers: a comma-separated list starting with bert"):
            script.main(["--device", "cpu", "--rankers", "sngp,bert", "--no-write"])
    finally:
        sys.path.remove(str(BENCHMARKS))
