"""report.html as a reader sees it in Chromium: a table wider than the page scrolls inside its box."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.browser import CHROMIUM_ARGS, check_page, chromium_path
from tests.experiment.test_report import make_result
from uncertank.experiment.analysis import significance
from uncertank.experiment.report import write_report

_MEASURE = """() => {
  const boxes = Array.from(document.querySelectorAll('.table-wrap'));
  return {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
          wide: boxes.filter(b => b.scrollWidth > b.clientWidth + 1).length,
          boxes: boxes.length, tables: document.querySelectorAll('table').length,
          overflow: boxes.map(b => getComputedStyle(b).overflowX)};
}"""


def _wide_result():
    """The synthetic study with twelve more ranking metrics: an in-domain table far wider than 1000 pixels."""
    result = make_result()
    extra = [f"plugin metric {i}" for i in range(12)]
    info = {**result.metric_info, **{m: {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False}
                                     for m in extra}}
    evs = [replace(e, metrics={**e.metrics, **{m: 0.123456 + i / 100 for i, m in enumerate(extra)}})
           for e in result.evaluations]
    wide = replace(result, metric_info=info, evaluations=evs)
    return replace(wide, significance=significance(wide))


def test_a_wide_table_scrolls_inside_the_page_not_the_page(tmp_path):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright

    out = tmp_path / "report"
    write_report(_wide_result(), out)
    check_page(out / "report.html", screenshot=tmp_path / "wide.png", width=1000)  # renders, no errors
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.goto((out / "report.html").resolve().as_uri())
            seen = page.evaluate(_MEASURE)
        finally:
            browser.close()
    assert seen["boxes"] == seen["tables"] >= 8  # every table sits in a box of its own
    assert set(seen["overflow"]) == {"auto"}
    assert seen["wide"] >= 1  # the in-domain table is wider than its box, and scrolls there
    assert seen["page"] <= seen["viewport"]  # while the page itself never scrolls sideways
