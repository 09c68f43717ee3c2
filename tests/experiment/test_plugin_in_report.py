"""A plugin's metric and recalibrator reach results.json, report.md and report.html with no change to uncertank.

The plugin is the worked external package ``docs/examples/uncertank-tfidf``
(installed by CI and the README's test command); the study file is the one
its guide (docs/plugins.md) shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank.cli import cli

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


@pytest.mark.slow
def test_the_example_plugins_metric_and_recalibrator_appear_in_the_report(tmp_path, monkeypatch):
    pytest.importorskip("uncertank_tfidf", reason="the worked example plugin of docs/plugins.md is not installed")

    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    (block,) = re.findall(r"<!-- study: \S+ -->\n```toml\n(.*?)```", GUIDE.read_text(), flags=re.S)
    study = tmp_path / "tfidf-study.toml"
    study.write_text(block)
    out = tmp_path / "report"
    run = CliRunner().invoke(cli, ["run", str(study), "--out", str(out)])
    assert run.exit_code == 0, run.output
    results = json.loads((out / "results.json").read_text())
    assert results["metric_info"]["P@1"]["kind"] == "ranking"
    tfidf = next(e for e in results["evaluations"] if e["ranker"] == "tfidf")
    assert 0.0 <= tfidf["metrics"]["P@1"] <= 1.0
    assert tfidf["metrics"]["P@1"] == pytest.approx(tfidf["metrics"]["R@1"])  # one relevant per list
    assert "beta" in tfidf["recalibrated"] and "ECE" in tfidf["recalibrated"]["beta"]
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for text in (md, html):
        assert "P@1" in text
        assert "beta" in text
