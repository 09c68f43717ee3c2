"""The frontier's tables in docs/uncertainty.md and benchmarks/RESULTS.md are the ones its results file renders."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "mc_dropout_frontier.py"
PAYLOAD = json.loads((ROOT / "docs" / "results" / "mc_dropout_frontier.json").read_text())


def test_docs_table_and_command_come_from_the_results_file():
    text = (ROOT / "docs" / "uncertainty.md").read_text()
    tables = load_script(SCRIPT).docs_table(PAYLOAD).split("\n\n")
    assert len(tables) == 2 and all(table in text for table in tables)
    assert f"```bash\n{PAYLOAD['command']}\n```" in text


def test_results_section_is_rendered_from_the_results_file():
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    section = re.search(r"<!-- begin: mc_dropout_frontier -->\n(.*?)\n<!-- end: mc_dropout_frontier -->", text, re.S)
    assert section is not None and section[1] == load_script(SCRIPT).results_section(PAYLOAD)


def test_the_results_file_covers_the_whole_frontier_with_intervals():
    rows = {(r["k"], r["T"]) for r in PAYLOAD["frontier"]}
    assert rows == {(k, t) for k in ("0", "1", "2", "3", "all") for t in (5, 10, 20)}
    for r in PAYLOAD["frontier"]:
        lo, hi = r["ece_balanced_reduction_ci95"]
        assert lo < hi and hi - lo < 0.2  # a real spread, on the scale of a balanced ECE
