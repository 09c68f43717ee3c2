"""report.html as a reader sees it in Chromium: it fits a laptop's window and a phone's, figures unscaled."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.browser import CHROMIUM_ARGS, check_page, chromium_path
from tests.experiment.test_report import make_full_result, make_result
from uncertank.experiment.analysis import significance
from uncertank.experiment.report import write_report

_MEASURE = """() => {
  const boxes = Array.from(document.querySelectorAll('.table-wrap'));
  const tables = Array.from(document.querySelectorAll('table'));
  return {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
          wide: boxes.filter(b => b.scrollWidth > b.clientWidth + 1).length,
          boxes: boxes.length, tables: tables.length,
          widest_table: Math.max(...tables.map(t => t.getBoundingClientRect().right)),
          overflow: boxes.map(b => getComputedStyle(b).overflowX),
          images: Array.from(document.images).map(i => ({src: i.getAttribute('src'), shown: i.clientWidth,
                                                          natural: i.naturalWidth,
                                                          linked: i.parentElement.getAttribute('href')}))};
}"""


def _measure(path, widths):
    """``_MEASURE`` of the page at each viewport width."""
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    seen = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), headless=True, args=list(CHROMIUM_ARGS))
        try:
            for width in widths:
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(path.resolve().as_uri(), wait_until="load")
                seen[width] = page.evaluate(_MEASURE)
                page.close()
        finally:
            browser.close()
    return seen


def _wide_result():
    """The synthetic study with twelve more ranking metrics: fifteen effectiveness columns."""
    result = make_result()
    extra = [f"plugin metric {i}" for i in range(12)]
    info = {**result.metric_info, **{m: {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False}
                                     for m in extra}}
    evs = [replace(e, metrics={**e.metrics, **{m: 0.123456 + i / 100 for i, m in enumerate(extra)}})
           for e in result.evaluations]
    wide = replace(result, metric_info=info, evaluations=evs)
    return replace(wide, significance=significance(wide))


@pytest.mark.slow  # draws a whole report and opens it three times
def test_every_default_metric_fits_a_laptop_window_and_a_phone(tmp_path):
    pytest.importorskip("playwright.sync_api")
    out = tmp_path / "report"
    # eight rankers, three conditions, the thirteen default metrics, relative changes and marks in the cells
    write_report(make_full_result(n_rankers=8), out)
    check_page(out / "report.html", screenshot=tmp_path / "full.png", width=1280)  # renders, no errors
    seen = _measure(out / "report.html", (1280, 390))
    laptop, phone = seen[1280], seen[390]
    assert laptop["boxes"] == laptop["tables"] >= 12  # two tables per condition, every table in a box
    assert laptop["wide"] == 0, laptop  # no table scrolls in a 1,280 px window
    assert laptop["widest_table"] <= 1280 and laptop["page"] <= 1280  # nor does the page
    for img in laptop["images"]:
        assert img["linked"] == img["src"]  # a click opens the full-size figure
        assert img["shown"] >= 0.95 * img["natural"], img  # shown at the size it was drawn, text legible
    assert phone["page"] <= 390, phone  # on a phone the page does not scroll sideways ...
    assert phone["wide"] >= 1 and set(phone["overflow"]) == {"auto"}  # ... a wide table scrolls in its box


def test_a_wide_table_scrolls_inside_the_page_not_the_page(tmp_path):
    pytest.importorskip("playwright.sync_api")
    out = tmp_path / "report"
    write_report(_wide_result(), out)
    check_page(out / "report.html", screenshot=tmp_path / "wide.png", width=1000)  # renders, no errors
    seen = _measure(out / "report.html", (1000, 390))
    assert seen[1000]["wide"] == 0  # fifteen columns are two tables: both fit
    assert seen[390]["boxes"] == seen[390]["tables"] >= 8  # every table sits in a box of its own
    assert set(seen[390]["overflow"]) == {"auto"}
    assert seen[390]["wide"] >= 1  # on a phone a table is wider than its box, and scrolls there
    assert seen[390]["page"] <= seen[390]["viewport"]  # while the page itself never scrolls sideways
