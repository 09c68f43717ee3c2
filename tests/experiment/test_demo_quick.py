"""``uncertank demo --quick`` end to end: results.json, every figure a valid PNG, the report in a browser."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.experiment.result import StudyResult

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    assert data[12:16] == b"IHDR", f"{path.name} has no IHDR chunk"
    assert data.rstrip(b"\0").endswith(b"IEND\xaeB`\x82"), f"{path.name} is truncated"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_demo_quick_writes_a_complete_report(tmp_path):
    from tests.browser import check_page

    out = tmp_path / "demo"
    run = CliRunner().invoke(cli, ["demo", "--quick", "--out", str(out)])
    assert run.exit_code == 0, run.output
    assert "smoke run" in run.output
    result = StudyResult.from_dict(json.loads((out / "results.json").read_text()))
    assert result.smoke
    # the same study on every machine: installed GP plugins do not join (they have `uncertank demo --gp`)
    assert result.rankers == ["bm25", "bert", "mc_dropout", "ensemble"]
    assert result.conditions[0] == "in-domain" and len(result.conditions) >= 2
    mc = result.evaluation("mc_dropout", "in-domain")
    assert mc is not None and mc.stochastic and mc.risk is not None and mc.nota is not None
    assert mc.nota.f1_means_var is not None and mc.selective is not None
    assert set(result.bayes) == {"gaussian", "zoib"}
    # mc_dropout starts from bert's weights and the ensemble keeps bert as member 0: trained once
    log = (out / "run.log").read_text()
    assert "fit bert" in result.steps and "fit mc_dropout" in result.steps
    assert "mc_dropout: starting from the trained bert" in log and "mc_dropout: training on" not in log
    figures = sorted((out / "figures").glob("*.png"))
    assert figures, "no figures written"
    for fig in figures:
        w, h = _png_size(fig)
        assert w > 100 and h > 100, f"{fig.name} is {w}x{h}"
    md = (out / "report.md").read_text()
    for fig in figures:
        assert f"figures/{fig.name}" in md, f"{fig.name} is not in report.md"
    # a rerun resumes: nothing is trained or scored again
    again = CliRunner().invoke(cli, ["demo", "--quick", "--out", str(out)])
    assert again.exit_code == 0, again.output
    steps = StudyResult.from_dict(json.loads((out / "results.json").read_text())).steps
    assert all(s.resumed for name, s in steps.items() if name.split()[0] in ("fit", "predict", "bayes"))
    # last, the report in Chromium (Playwright comes with the test extras)
    pytest.importorskip("playwright.sync_api")
    shot = check_page(out / "report.html", screenshot=tmp_path / "demo-report.png")
    assert _png_size(shot)[0] > 0


def test_demo_rejects_quick_with_full(tmp_path):
    run = CliRunner().invoke(cli, ["demo", "--quick", "--full", "--out", str(tmp_path / "x")])
    assert run.exit_code == 2
    assert "--quick and --full contradict" in run.output
    assert not (tmp_path / "x").exists()
