"""First-party plugins use only the public API of uncertank.

Every folder under ``plugins/`` (those added later included) is scanned: no
import of a private uncertank module or name (``uncertank._types``,
``from uncertank.nn import _x``), and no call or attribute access of a
``_``-prefixed name that the library defines (``ranker._score``) unless the
plugin defines that name itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
LIBRARY = ROOT / "uncertank"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined_private_names(files: list[Path]) -> set[str]:
    """``_``-prefixed names defined (functions, classes, assignments, attributes set) in ``files``."""
    names: set[str] = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), filename=str(file))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {n for n in names if _private(n)}


#: The library's private names, and those the public extension API replaced (a plugin still
#: calling one of them would fail only at run time).
LIBRARY_PRIVATE = _defined_private_names(sorted(LIBRARY.rglob("*.py"))) | {
    "_build", "_params", "_extra_params", "_save_into", "_score", "_check_queries",
}


def violations(files: list[Path], own: set[str]) -> list[str]:
    """Every private use of uncertank in ``files``, as ``path:line: what``."""
    out: list[str] = []
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        where = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
        for node in ast.walk(tree):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
                if node.module.split(".")[0] == "uncertank":
                    modules += [f"{node.module}.{a.name}" for a in node.names]
            for mod in modules:
                parts = mod.split(".")
                if parts[0] == "uncertank" and any(_private(p) for p in parts[1:]):
                    out.append(f"{where}:{node.lineno}: imports {mod}")
                    break
            if isinstance(node, ast.Attribute) and _private(node.attr):
                if node.attr in LIBRARY_PRIVATE and node.attr not in own:
                    out.append(f"{where}:{node.lineno}: uses the library's private name .{node.attr}")
    return out


def _plugin_dirs() -> list[Path]:
    return sorted(p for p in PLUGINS.iterdir() if p.is_dir() and (p / "pyproject.toml").is_file())


def test_every_plugin_folder_is_scanned():
    dirs = {p.name for p in _plugin_dirs()}
    assert {"uncertank-bert", "uncertank-mcdropout", "uncertank-ensemble"} <= dirs
    assert dirs == {p.name for p in PLUGINS.iterdir() if p.is_dir() and list(p.rglob("*.py"))}


@pytest.mark.parametrize("plugin", _plugin_dirs(), ids=lambda p: p.name)
def test_plugin_uses_only_public_api(plugin):
    files = sorted(f for f in plugin.rglob("*.py") if ".egg-info" not in f.parts and "build" not in f.parts)
    assert files, f"{plugin.name} has no Python files"
    assert violations(files, _defined_private_names(files)) == []


def test_the_scan_catches_private_imports_and_calls(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from uncertank._types import QuerySet\n"
        "import uncertank._validation\n"
        "from uncertank import _optional\n"
        "from uncertank import Predictions\n"
        "def f(ranker):\n"
        "    ranker._build()\n"
        "    return ranker._own_helper()\n"
    )
    found = violations([bad], {"_own_helper"})
    assert sorted(f.split(": ", 1)[1] for f in found) == [
        "imports uncertank._optional",
        "imports uncertank._types",
        "imports uncertank._validation",
        "uses the library's private name ._build",
    ]
