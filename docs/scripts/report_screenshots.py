"""Screenshots of the study report at 1,280 and 390 pixels (docs/experiments.md), from the real run's numbers.

    python docs/scripts/report_screenshots.py                          # from docs/results/real_run.json
    python docs/scripts/report_screenshots.py .cache/real_run/study    # from a study folder's results.json
    python docs/scripts/report_screenshots.py uncertank-demo --top docs/img/demo-report.png

copies the results into a temporary folder, draws the report there with
``uncertank report FOLDER`` (report.html from results.json, as a study
does), and opens it in headless Chromium (tests/browser.py's flags):

- ``docs/img/report-1280.png``: the top of the page in a 1,280 x 900 window;
- ``docs/img/report-1280-table.png``: the widest table, a shifted
  condition's calibration with the relative changes, in the same window;
- ``docs/img/report-390.png``: a 390 x 780 phone window at the in-domain
  calibration table.

It also prints the page's width and each table's at both widths, and fails
when the page scrolls sideways. With ``--top PNG`` it saves only the top of
the page at 1,280 px (``docs/img/demo-report.png``: the default demo's
report, ``uncertank demo``).

Without a folder, results.json is assembled from docs/results/real_run.json,
the summary ``docs/scripts/full_study_summary.py`` wrote of the real run
(docs/studies/real_run.toml): every metric of every ranker and condition,
the recalibrated ECE, NOTA, risk-aware reranking with its test curve, and
the configuration of the study file. The summary keeps no per-query values
and no curves, so the report made from it has no reliability or
risk-coverage figures, and its significance marks are the summary's: the
Holm-adjusted p of ``R@1`` and ``MAP`` against ``bert`` (stored as both the
raw and the adjusted p, of which the report prints neither), the other
columns untested; relative changes are recomputed from the values, as the
study does (:func:`uncertank.experiment.analysis.significance`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests/browser.py: the browser flags of the page checks

SUMMARY = ROOT / "docs" / "results" / "real_run.json"
STUDY = ROOT / "docs" / "studies" / "real_run.toml"
IMG = ROOT / "docs" / "img"


def results_from_summary(summary: dict[str, Any], study: Path) -> dict[str, Any]:
    """A results.json document from the real run's summary and its study file (see the module docstring)."""
    from uncertank.experiment.analysis import significance
    from uncertank.experiment.config import load_config
    from uncertank.experiment.result import (
        Comparison,
        Evaluation,
        NotaOutcome,
        RiskOutcome,
        StudyResult,
    )
    from uncertank.files import to_jsonable
    from uncertank.metrics import resolve_metrics

    cfg = load_config(study)
    bound = resolve_metrics(cfg.metric_entries() if cfg.metrics else [])
    info = {m.display_label: {"kind": m.kind, "higher_is_better": m.higher_is_better,
                              "needs_probabilities": m.needs_probabilities, "name": m.name,
                              "options": to_jsonable(dict(m.options))} for m in bound}
    evs = []
    for ranker in summary["rankers"]:
        for cond in summary["conditions"]:
            row = summary["results"][cond].get(ranker)
            if row is None:
                continue
            metrics = {k: float(row[k]) for k in info if row.get(k) is not None}
            ev = Evaluation(ranker, cond, probabilistic="ECE" in metrics, stochastic="risk" in row,
                            metrics=metrics, mean_std=row.get("mean_std"))
            ev.recalibrated = {name: {"ECE": v} for name, v in (row.get("ECE recalibrated") or {}).items()}
            if row.get("risk"):
                r = row["risk"]
                curve = {float(b): float(v) for b, v in r["R@1 against b (test)"].items()}
                ev.risk = RiskOutcome(b=r["b"], valid_curve={}, test_curve=curve, r1_mean=r["R@1 mean"],
                                      r1_risk_aware=r["R@1 risk-aware"], p_value=r["p"])
            if row.get("nota"):
                n = row["nota"]
                ev.nota = NotaOutcome(n["F1 means"], n["F1 means sd"], n["F1 means+var"], n["F1 means+var sd"], n["p"])
            evs.append(ev)
    config = {"name": summary["study"], "reference": cfg.reference, "n_candidates": cfg.n_candidates,
              "n_bins": cfg.n_bins, "metrics": to_jsonable(list(cfg.metrics or ()))}
    result = StudyResult(config=config, sizes=summary["sizes"], metric_info=info, evaluations=evs)
    sig = significance(result)  # the relative changes; no per-query values, so nothing is tested here

    def marked(c: Comparison) -> Comparison:
        p = summary["results"][c.condition][c.ranker].get(f"{c.metric} p (Holm) vs bert")
        return c if p is None else replace(c, p_value=p, p_adjusted=p, significant=p < sig.alpha)

    sig = replace(sig, tables={k: [marked(c) for c in v] for k, v in sig.tables.items()})
    return replace(result, significance=sig).to_dict()


_WIDTHS = """() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth,
  tables: Array.from(document.querySelectorAll('table')).map(t => Math.round(t.getBoundingClientRect().width))})"""


def shoot(html: Path) -> None:
    """The three screenshots of ``html``; fails when the page scrolls sideways at either width."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM_ARGS, chromium_path

    IMG.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(html.as_uri(), wait_until="load")
            seen = page.evaluate(_WIDTHS)
            print(f"1280: page {seen['page']} px, widest table {max(seen['tables'])} px")
            if seen["page"] > 1280:
                raise SystemExit(f"the page scrolls sideways at 1280 px ({seen['page']} px wide)")
            page.screenshot(path=str(IMG / "report-1280.png"))
            title = page.locator("p.table-title", has_text="Calibration, cross-NS embedding")
            wrap = title.locator("xpath=following-sibling::div[1]")
            a, b = title.bounding_box(), wrap.bounding_box()
            assert a is not None and b is not None
            height = b["y"] + b["height"] - a["y"] + 32
            page.screenshot(path=str(IMG / "report-1280-table.png"), full_page=True,
                            clip={"x": 0, "y": a["y"] - 16, "width": 1280, "height": height})
            page.close()
            phone = browser.new_page(viewport={"width": 390, "height": 780})
            phone.goto(html.as_uri(), wait_until="load")
            seen = phone.evaluate(_WIDTHS)
            print(f"390: page {seen['page']} px, widest table {max(seen['tables'])} px")
            if seen["page"] > 390:
                raise SystemExit(f"the page scrolls sideways at 390 px ({seen['page']} px wide)")
            phone.locator("p.table-title", has_text="Calibration, in-domain").evaluate(
                "el => { el.scrollIntoView({block: 'start'}); window.scrollBy(0, -8); }")
            phone.screenshot(path=str(IMG / "report-390.png"))
        finally:
            browser.close()
    for name in ("report-1280.png", "report-1280-table.png", "report-390.png"):
        print(f"{IMG / name}: {(IMG / name).stat().st_size // 1024} KiB")


def shoot_top(html: Path, png: Path) -> None:
    """The top of ``html`` in a 1,280 x 900 window, saved as ``png``."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM_ARGS, chromium_path

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(html.as_uri(), wait_until="load")
            page.screenshot(path=str(png))
        finally:
            browser.close()
    print(f"{png}: {png.stat().st_size // 1024} KiB")


def main() -> None:
    """Assemble or copy results.json, draw the report with ``uncertank report``, take the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="a study folder holding results.json")
    parser.add_argument("--top", type=Path, help="only the top of the page at 1,280 px, saved here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report"
        out.mkdir()
        if args.folder is not None:
            shutil.copy(args.folder / "results.json", out / "results.json")
            for extra in ("bayes",):  # curves a report reads beside results.json
                if (args.folder / extra).is_dir():
                    shutil.copytree(args.folder / extra, out / extra)
        else:
            doc = results_from_summary(json.loads(SUMMARY.read_text()), STUDY)
            (out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
        exe = shutil.which("uncertank") or str(Path(sys.executable).with_name("uncertank"))
        subprocess.run([exe, "report", str(out)], check=True)
        if args.top is not None:
            shoot_top(out / "report.html", args.top)
        else:
            shoot(out / "report.html")


if __name__ == "__main__":
    main()
