"""The study report and the docs site in headless Chromium: they load cleanly, figures and maths render.

Without Playwright (a test extra) the page checks skip; with it, they fail
(not skip) when Chromium is missing: CI installs Debian's ``chromium``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import check_page
from tests.experiment.test_report import make_result
from uncertank.experiment.report import write_report

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _needs_playwright() -> None:
    pytest.importorskip("playwright.sync_api", reason='the page checks need Playwright: pip install "uncertank[test]"')


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_loads_with_every_figure_rendered(tmp_path):
    _needs_playwright()
    out = tmp_path / "report"
    write_report(make_result(smoke=True, bayes_figure_dir=out), out)
    shot = check_page(out / "report.html", screenshot=tmp_path / "report.png")
    assert _is_png(shot) and shot.stat().st_size > 20_000


def test_check_page_reports_a_broken_figure_and_an_external_request(tmp_path):
    _needs_playwright()
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><html><body><img src="figures/missing.png">'
                    '<img src="https://example.org/x.png"></body></html>')
    with pytest.raises(AssertionError) as info:
        check_page(page, screenshot=tmp_path / "bad.png")
    text = str(info.value)
    assert "image not rendered: figures/missing.png" in text
    assert "external request: https://example.org/x.png" in text
    assert "console error" in text


def test_check_page_requires_a_file(tmp_path):
    with pytest.raises(AssertionError, match="does not exist"):
        check_page(tmp_path / "nothing.html")


def test_docs_site_renders_the_maths(tmp_path):
    _needs_playwright()
    pytest.importorskip("mkdocs", reason='the docs site needs the docs extras: pip install "uncertank[docs]"')
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "--site-dir", str(site)],
                   cwd=ROOT, check=True, env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    # The theme asks the repository host for its star count; offline that request fails, harmlessly.
    shot = check_page(site / "metrics" / "index.html", screenshot=tmp_path / "metrics.png",
                      allowed_hosts=("api.github.com",), math=True)
    assert _is_png(shot)
    for page in ("uncertainty", "bayes"):
        check_page(site / page / "index.html", screenshot=tmp_path / f"{page}.png",
                   allowed_hosts=("api.github.com",), math=True)
    # The API pages show numpydoc's roles as links or code, never as raw text, and no private bases.
    pages = {p.parent.name: p.read_text() for p in site.glob("*/index.html")}
    for name, text in pages.items():
        assert not re.search(r":(func|meth|class|attr|mod|data|obj|exc):<code>", text), name
        assert not re.search(r"Bases: <code>(<[^>]+>)*_", text), name
    scale = pages["scale"]
    assert 'Streaming <a class="autorefs autorefs-internal"' in scale
    assert re.search(r'href="\.\./metrics/#uncertank\.metrics\.calibration\.expected_calibration_error"', scale)


def test_a_page_with_raw_maths_fails_the_math_check(tmp_path):
    _needs_playwright()
    page = tmp_path / "raw.html"
    page.write_text('<!doctype html><html><body><p><span class="arithmatex">\\(x^2\\)</span></p></body></html>')
    with pytest.raises(AssertionError, match=r"KaTeX typeset 0 of 1 formulas[\s\S]*raw maths left"):
        check_page(page, screenshot=tmp_path / "raw.png", math=True)


def test_missing_chromium_fails_with_the_install_line(monkeypatch, tmp_path):
    monkeypatch.setenv("UNCERTANK_CHROMIUM", str(tmp_path / "no-such-browser"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    page = tmp_path / "p.html"
    page.write_text("<!doctype html><p>x</p>")
    with pytest.raises(AssertionError, match=r"apt-get install -y chromium"):
        check_page(page)


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
