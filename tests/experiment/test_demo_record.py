"""docs/experiments.md's table of the default demo is the timed run's (docs/results/demo.json), digit for digit."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _table() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    block = text.split("<!-- demo-table:start -->")[1].split("<!-- demo-table:end -->")[0]
    rows = [line.strip("|").split("|") for line in block.strip().splitlines()[2:]]
    return {re.sub(r"`([^`]+)`.*", r"\1", cells[0].strip()): [c.strip() for c in cells[1:]] for cells in rows}


def test_the_docs_table_is_the_recorded_runs():
    record = json.loads((ROOT / "docs" / "results" / "demo.json").read_text(encoding="utf-8"))
    runs = record["runs"]
    assert runs
    for run in runs[1:]:  # other kernels train another model in the last digits; the table's digits agree
        for ranker, row in run["in_domain"].items():
            for key, value in row.items():
                first = runs[0]["in_domain"][ranker][key]
                assert (value is None) == (first is None) and (value is None or abs(value - first) < 5e-5), \
                    (run["label"], ranker, key)
    table = _table()
    assert set(table) == set(runs[0]["in_domain"])
    for ranker, row in runs[0]["in_domain"].items():
        values = [row["R@1"], row["MAP"], row["ECE"], row["ECE balanced"], row["mean_std"]]
        shown = ["" if v is None or (ranker == "bm25" and i >= 2) else f"{v:.3f}" for i, v in enumerate(values)]
        assert table[ranker] == shown, ranker


def test_every_recorded_run_has_its_machine_load_and_steps():
    record = json.loads((ROOT / "docs" / "results" / "demo.json").read_text(encoding="utf-8"))
    for run in record["runs"]:
        assert run["machine"]["cores"] and run["machine"]["torch cpu capability"]
        assert len(run["load_average_before_after"]) == 2 and run["wall_seconds"] > 0
        assert run["estimate"]["seconds"] > 0 and run["estimate"]["high_seconds"] >= run["estimate"]["seconds"]
        trained = [name for name in run["steps"] if name.startswith("fit ") and run["steps"][name]["seconds"] > 1]
        assert trained and all(run["steps"][name]["estimated_seconds"] for name in trained)
