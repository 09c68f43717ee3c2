"""Open a local HTML page in headless Chromium and check it as a reader would see it.

:func:`check_page` is shared by the browser tests (the study report, the
docs site, the demo's report): it loads the page from disk, fails on console
errors, uncaught exceptions, failed or external requests and figures that did
not render, optionally checks that KaTeX typeset every formula, and saves a
full-page screenshot.

Chromium is Debian's ``chromium`` package (``apt-get install -y chromium``;
``.ci/run`` installs it when missing), driven by Playwright's Python package
(``pip install "uncertank[test]"``) with ``executable_path``: Playwright's own
browser downloads are never used. ``UNCERTANK_CHROMIUM`` overrides the path.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

__all__ = ["CHROMIUM_ARGS", "chromium_path", "check_page"]

#: Flags for a quiet, offline, headless run (without the background-networking
#: flags Chromium tries to reach Google's services and logs refused connections).
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_MATH_CHECK = """() => {
  const formulas = Array.from(document.querySelectorAll('.arithmatex'));
  const raw = formulas.filter(el => {
    const clone = el.cloneNode(true);
    clone.querySelectorAll('.katex').forEach(k => k.remove());
    return /\\\\\\(|\\\\\\[|\\$\\$/.test(clone.textContent);
  }).map(el => el.textContent.slice(0, 80));
  return {formulas: formulas.length,
          typeset: formulas.filter(el => el.querySelector('.katex')).length,
          errors: document.querySelectorAll('.katex-error').length, raw};
}"""

_IMAGES = """() => Array.from(document.images).map(img => ({
  src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth}))"""


def chromium_path() -> str:
    """The Chromium executable: ``$UNCERTANK_CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH.

    Raises
    ------
    AssertionError
        When none is found, saying how to install it (a test that needs it fails rather than skips).
    """
    for candidate in (os.environ.get("UNCERTANK_CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise AssertionError(
        "Chromium is needed for the browser checks and was not found: install Debian's package with "
        "`apt-get install -y chromium` (.ci/run does this), or point UNCERTANK_CHROMIUM at a Chromium binary"
    )


def check_page(
    path: str | os.PathLike[str],
    *,
    screenshot: str | os.PathLike[str] | None = None,
    allowed_hosts: Sequence[str] = (),
    math: bool = False,
    width: int = 1280,
    timeout_ms: int = 30_000,
) -> Path:
    """Open ``path`` in headless Chromium, check it, and save a full-page screenshot.

    The page fails the check when the browser console logs an error, the
    page throws, a request fails, a request leaves the machine (any URL
    other than ``file:``, ``data:`` or ``blob:``, unless its host is in
    ``allowed_hosts``), or an ``<img>`` has not rendered (``naturalWidth``
    0). With ``math=True`` it also fails unless the page has formulas, KaTeX
    typeset every one (each ``.arithmatex`` holds a ``.katex``), none is a
    ``.katex-error``, and no raw ``\\(``, ``\\[`` or ``$$`` is left.

    Parameters
    ----------
    path : path
        An HTML file on disk.
    screenshot : path, optional
        Where to save the PNG; ``<page stem>.screenshot.png`` beside the page by default.
    allowed_hosts : sequence of str
        Hosts a page may try to reach (and fail to, offline) without failing
        the check, e.g. the repository host a docs theme asks for its star count.
    math : bool
        Check that the maths rendered.
    width : int
        Viewport width in pixels.
    timeout_ms : int
        Page-load timeout.

    Returns
    -------
    pathlib.Path
        The screenshot.

    Raises
    ------
    AssertionError
        Naming every problem found (console errors with their source), or
        when Chromium or Playwright is missing.
    """
    page_path = Path(path).resolve()
    if not page_path.is_file():
        raise AssertionError(f"path must be an HTML file on disk; {page_path} does not exist")
    shot = Path(screenshot) if screenshot is not None else page_path.with_name(f"{page_path.stem}.screenshot.png")
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise AssertionError(f'the browser checks need Playwright: pip install "uncertank[test]" ({exc})') from exc

    problems: list[str] = []
    allowed = set(allowed_hosts)

    def external(url: str) -> str | None:
        parsed = urlparse(url)
        if parsed.scheme in ("file", "data", "blob", "about"):
            return None
        return parsed.hostname or url

    # Playwright gives the browser a fresh temporary profile (--user-data-dir) of its own.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})

            def on_console(msg: object) -> None:
                if getattr(msg, "type", "") != "error":
                    return
                source = (getattr(msg, "location", None) or {}).get("url", "")
                if external(source) in allowed:
                    return
                problems.append(f"console error: {getattr(msg, 'text', msg)} (at {source or 'unknown'})")

            def on_request(request: object) -> None:
                url = str(getattr(request, "url", ""))
                host = external(url)
                if host is not None and host not in allowed:
                    problems.append(f"external request: {url}")

            def on_failed(request: object) -> None:
                url = str(getattr(request, "url", ""))
                if external(url) not in allowed:
                    problems.append(f"request failed: {url} ({getattr(request, 'failure', '')})")

            page.on("console", on_console)
            page.on("pageerror", lambda exc: problems.append(f"uncaught exception: {exc}"))
            page.on("request", on_request)
            page.on("requestfailed", on_failed)
            page.goto(page_path.as_uri(), wait_until="load", timeout=timeout_ms)
            page.wait_for_load_state("networkidle", timeout=timeout_ms)
            page.evaluate("() => document.fonts.ready.then(() => true)")
            for img in page.evaluate(_IMAGES):
                if not img["complete"] or img["width"] == 0:
                    problems.append(f"image not rendered: {img['src']}")
            if math:
                m = page.evaluate(_MATH_CHECK)
                if m["formulas"] == 0:
                    problems.append("no formula (.arithmatex) on the page")
                if m["typeset"] < m["formulas"]:
                    problems.append(f"KaTeX typeset {m['typeset']} of {m['formulas']} formulas")
                if m["errors"]:
                    problems.append(f"{m['errors']} KaTeX errors (.katex-error)")
                problems.extend(f"raw maths left: {t!r}" for t in m["raw"])
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    if problems:
        raise AssertionError(f"{page_path} in Chromium:\n  " + "\n  ".join(problems))
    return shot
