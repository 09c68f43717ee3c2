from __future__ import annotations

import json

from uncertank.experiment.report import markdown_table, write_report


def test_markdown_table_formats_floats_and_keeps_order():
    text = markdown_table([{"a": 0.123456, "b": "x"}, {"a": 2.0, "b": "y"}])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 0.1235 | x |", "| 2.0000 | y |"]
    assert markdown_table([]) == "(none)\n"
    ragged = markdown_table([{"a": 1}, {"a": 2, "b": 3}])
    assert ragged.splitlines()[0] == "| a | b |" and ragged.splitlines()[2] == "| 1 |  |"


def test_write_report_writes_all_files(tmp_path):
    result = {
        "config": {"name": "t"},
        "data": {"train": 1, "valid": 1, "test": {"in": 2}},
        "effectiveness": [{"ranker": "r", "condition": "in", "R@1": 0.5}],
        "calibration": [{"ranker": "r", "condition": "in", "ECE": 0.1}],
        "risk": [], "nota": [],
        "reliability": {"in": {"r": {"mean_confidence": [0.2, 0.7], "fraction_relevant": [0.1, 0.8],
                                     "count": [3, 4]}}},
        "timings": {"total": 1.0},
    }
    write_report(result, tmp_path)
    assert json.loads((tmp_path / "results.json").read_text())["effectiveness"][0]["R@1"] == 0.5
    md = (tmp_path / "report.md").read_text()
    assert "| r | in | 0.5000 |" in md and "figures/reliability-in.png" in md
    html = (tmp_path / "report.html").read_text()
    assert "<td>0.5000</td>" in html and '<img src="figures/reliability-in.png"' in html
    assert (tmp_path / "figures" / "reliability-in.png").stat().st_size > 1000
    assert not list(tmp_path.glob("**/*.tmp"))
