"""docs/scripts/kernel_sensitivity.py and its checked-in record (docs/study.md, "Reproduce")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
RECORD = json.loads((ROOT / "docs" / "results" / "kernel_sensitivity.json").read_text())
script = load_script(ROOT / "docs" / "scripts" / "kernel_sensitivity.py")


def test_the_record_holds_one_run_per_setting_with_its_kernels_and_losses():
    runs = RECORD["runs"]
    assert set(runs) == set(script.SETTINGS) and RECORD["command"] == "python docs/scripts/kernel_sensitivity.py"
    for name, run in runs.items():
        assert run["environment"] == script.SETTINGS[name]
        assert len(run["losses"]) == RECORD["steps"] >= 10
        assert run["mean loss first 10"] == float(np.mean(run["losses"][:10]))
    assert runs["AVX2 kernels"]["torch cpu capability"] == "AVX2"
    assert runs["one thread"]["threads"] == 1 and runs["as the machine gives it"]["threads"] > 1


def test_the_first_loss_is_the_same_everywhere_and_the_updates_move_it():
    # the first loss comes before any update; from the second step on the kernels' rounding shows
    runs = list(RECORD["runs"].values())
    assert len({r["losses"][0] for r in runs}) == 1
    assert len({r["mean loss first 10"] for r in runs}) == len(runs)
    gaps = [abs(r["mean loss first 10"] - runs[0]["mean loss first 10"]) for r in runs[1:]]
    assert 0 < max(gaps) < 1e-6  # the eighth digit, not a different training


def test_too_few_steps_are_refused_before_any_work():
    with pytest.raises(SystemExit, match="--steps: expected at least 10"):
        script.main(["--steps", "3"])
