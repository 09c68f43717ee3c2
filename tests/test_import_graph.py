"""The import graph of uncertank: no circles, no upward imports, every module importable on its own.

The graph is read from the source with ``ast``: every ``import`` and
``from ... import`` statement of every module, including those inside
functions and under ``if TYPE_CHECKING:`` (a late import hides a circle from
the interpreter, not from a reader), with relative imports resolved. An edge
goes to the module named, or to ``package.name`` where that is a module
(``from uncertank import plugins`` is an edge to ``uncertank.plugins``
only); a package's ``__init__`` that runs because one of its submodules is
imported is not an edge.

The layers are those of docs/architecture.md: the data model at the bottom,
the plugin host (with the ranker contract it checks) above it, then the roles from left to right (data, rankers,
predictions, evaluators, decisions, report); a module imports only from its
own layer or those below, with the exceptions the document names.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

import uncertank

PACKAGE = Path(uncertank.__file__).resolve().parent
ROOT = PACKAGE.name


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (packages by their own name)."""
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _is_package(name: str) -> bool:
    return modules()[name].name == "__init__.py"


def imported_names(name: str, source: str) -> list[tuple[str, int]]:
    """Every (absolute dotted name, line) that ``source``, the module ``name``, imports, at any depth."""
    package = name if _is_package(name) else name.rpartition(".")[0]
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names if alias.name != "*"]
            submodules = [n for n in names if n in modules()]
            if len(submodules) < len(node.names):  # a name defined in ``target`` itself (or ``*``)
                out.append((target, node.lineno))
            out.extend((n, node.lineno) for n in submodules)
    return out


@cache
def graph() -> dict[str, dict[str, int]]:
    """Module -> {internal module it imports: first line}."""
    mods = modules()
    edges: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        found: dict[str, int] = {}
        for target, line in imported_names(name, path.read_text(encoding="utf-8")):
            if target in mods and target != name:
                found.setdefault(target, line)
        edges[name] = found
    return edges


def find_cycles(edges: dict[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a self-loop), each as a cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                components.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_cycle_path(comp, edges) for comp in components]


def _cycle_path(comp: list[str], edges: dict[str, Iterable[str]]) -> list[str]:
    """One cycle through the first module of a strongly connected component, for the message."""
    members = set(comp)
    start = comp[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(w for w in edges.get(path[-1], ()) if w in members)
        back = [w for w in nxt if w == start]
        if back:
            return [*path, start]
        fresh = [w for w in nxt if w not in seen]
        if not fresh:  # pragma: no cover - a component always closes
            return [*path, "..."]
        path.append(fresh[0])
        seen.add(fresh[0])


# --------------------------------------------------------------------------- the checker itself


def test_the_parser_sees_late_relative_and_type_checking_imports():
    source = textwrap.dedent("""
        from typing import TYPE_CHECKING
        from . import streaming
        from .ranking import recall_at_k
        from .. import plugins
        if TYPE_CHECKING:
            from uncertank.metrics.metric import Metric
        def late():
            import uncertank.stats
    """)
    names = {n for n, _ in imported_names("uncertank.metrics.calibration", source)}
    assert {"uncertank.metrics.streaming", "uncertank.metrics.ranking", "uncertank.plugins",
            "uncertank.metrics.metric", "uncertank.stats"} <= names


def test_the_cycle_finder_finds_a_circle_and_only_that():
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": ["e"], "f": []}
    cycles = find_cycles(edges)
    assert sorted(c[0] for c in cycles) == ["a", "e"]
    assert ["a", "b", "c", "a"] in cycles
    assert find_cycles({"a": ["b"], "b": []}) == []


# --------------------------------------------------------------------------- the package


def test_no_import_circles():
    cycles = find_cycles({m: list(t) for m, t in graph().items()})
    assert cycles == [], "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


#: The layers of docs/architecture.md, bottom up. A module's layer is that of
#: the longest prefix listed; ``uncertank`` itself (the public API) is not checked.
LAYERS: dict[str, int] = {
    # the data model
    "uncertank._types": 0,
    "uncertank.validation": 0, "uncertank.files": 0, "uncertank._optional": 0, "uncertank._folders": 0,
    "uncertank._environment": 0,
    "uncertank.formatting": 0, "uncertank.progress": 0, "uncertank._schema_errors": 0, "uncertank.params": 0,
    # the plugin host, and the ranker contract it checks what a factory builds against
    "uncertank.hookspecs": 1, "uncertank.plugins": 1, "uncertank.protocols": 1,
    # ... and its tooling: a plugin's source digest, light plugin packages, the `uncertank plugins` listing
    "uncertank.plugin_sources": 1, "uncertank.plugin_packages": 1, "uncertank.plugin_listing": 1,
    # data
    "uncertank.datasets": 2,
    # rankers
    "uncertank.adapters": 3, "uncertank.baselines": 3, "uncertank.nn": 3,
    # predictions
    "uncertank.recalibration": 4,
    # evaluators
    "uncertank.metrics": 5, "uncertank.stats": 5, "uncertank.evaluate": 5, "uncertank.compare": 5,
    "uncertank.bayes": 5,
    # decisions (conformal thresholds among them)
    "uncertank.uncertainty": 6, "uncertank.conformal": 6,
    # report, the `uncertank` command (the cli/ package: every sub-command), and the kit that exercises a
    # plugin end to end
    "uncertank.experiment": 7, "uncertank.display": 7, "uncertank.cli": 7, "uncertank.testing": 7,
}
LAYER_NAMES = ("data model", "plugin host", "data", "rankers", "predictions", "evaluators", "decisions", "report")

#: Imports the architecture allows across the rule, each with the reason docs/architecture.md gives.
ALLOWED: dict[tuple[str, str], str] = {
    # "neural training in nn/ picks the best epoch by validation MAP through uncertank.metrics"
    ("uncertank.nn", "uncertank.metrics"): "documented exception",
}

#: Stricter rules of docs/architecture.md than "imports point left".
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # "metrics/ never imports a ranker or a dataset"
    "uncertank.metrics": ("uncertank.datasets", "uncertank.protocols", "uncertank.adapters", "uncertank.baselines",
                          "uncertank.nn"),
    # "datasets/ never imports a ranker"
    "uncertank.datasets": ("uncertank.protocols", "uncertank.adapters", "uncertank.baselines", "uncertank.nn"),
    # "uncertainty/ reads arrays and the data model only"
    "uncertank.uncertainty": ("uncertank.datasets", "uncertank.protocols", "uncertank.adapters",
                              "uncertank.baselines", "uncertank.nn", "uncertank.recalibration", "uncertank.metrics",
                              "uncertank.stats", "uncertank.evaluate", "uncertank.bayes", "uncertank.experiment",
                              "uncertank.display", "uncertank.cli", "uncertank.testing", "uncertank.plugins"),
}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_of(name: str) -> int | None:
    best = max((p for p in LAYERS if _under(name, p)), key=len, default=None)
    return None if best is None else LAYERS[best]


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in modules() if m != ROOT and layer_of(m) is None)
    assert unplaced == [], f"modules in no layer of docs/architecture.md (add them to LAYERS): {unplaced}"


def _allowed(src: str, dst: str) -> bool:
    return any(_under(src, a) and _under(dst, b) for a, b in ALLOWED)


def upward_imports() -> list[str]:
    out = []
    for src, targets in graph().items():
        ls = layer_of(src)
        if ls is None:
            continue
        for dst, line in targets.items():
            ld = layer_of(dst)
            if ld is None or ld <= ls or _allowed(src, dst):
                continue
            out.append(f"{src} ({LAYER_NAMES[ls]}) imports {dst} ({LAYER_NAMES[ld]}), line {line}")
    return sorted(out)


def test_no_upward_imports():
    found = upward_imports()
    assert found == [], "imports pointing up the layers of docs/architecture.md:\n" + "\n".join(found)


def test_the_stricter_rules_of_the_architecture():
    found = []
    for src, targets in graph().items():
        for role, banned in FORBIDDEN.items():
            if not _under(src, role):
                continue
            for dst, line in targets.items():
                if any(_under(dst, b) for b in banned):
                    found.append(f"{src} imports {dst}, line {line}")
    assert found == [], "\n".join(found)


def test_the_architecture_table_lists_these_layers():
    """docs/architecture.md's table gives every module of LAYERS the same layer (a bold ``N`` opens a layer)."""
    page = PACKAGE.parent / "docs" / "architecture.md"
    if not page.is_file():
        pytest.skip("docs/architecture.md is not beside the package (an installed copy)")
    table = page.read_text(encoding="utf-8").split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| concept")]
    layer, found = None, {}
    for row in rows:
        concept, module, _ = (cell.strip() for cell in row.strip().strip("|").split("|"))
        opens = re.match(r"\*\*(\d) ", concept)
        layer = int(opens[1]) if opens else layer
        for name in re.findall(r"`([^`]+)`", module):
            dotted = f"{ROOT}." + name.removesuffix("/").removesuffix(".py").replace("/", ".")
            if dotted in LAYERS:
                found[dotted] = layer
    assert found == LAYERS


def test_the_layer_check_catches_an_upward_import(monkeypatch):
    fake = {"uncertank._types": {"uncertank.metrics.ranking": 3}, "uncertank.metrics.ranking": {}}
    monkeypatch.setattr(sys.modules[__name__], "graph", lambda: fake)
    assert upward_imports() == [
        "uncertank._types (data model) imports uncertank.metrics.ranking (evaluators), line 3"
    ]


# --------------------------------------------------------------------------- private names


def test_no_module_imports_a_private_name_of_another():
    """``from uncertank.x import _name`` across modules; a private submodule (``_inputs``) is fine."""
    mods = modules()
    found = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ROOT)):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{node.module}.{alias.name}" not in mods:
                    found.append(f"{name} imports {node.module}.{alias.name}, line {node.lineno}")
    assert found == [], "\n".join(found)


# --------------------------------------------------------------------------- each module on its own

_ISOLATED = textwrap.dedent("""
    import importlib, sys, traceback
    failed = []
    for name in sys.argv[1:]:
        for key in [k for k in sys.modules if k == "uncertank" or k.startswith("uncertank.")]:
            del sys.modules[key]
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if exc.name and not exc.name.startswith("uncertank"):  # an optional dependency not installed
                continue
            failed.append(name + ": " + traceback.format_exc(limit=-3))
        except Exception:
            failed.append(name + ": " + traceback.format_exc(limit=-3))
    print("\\n".join(failed))
""")


def test_every_module_imports_on_its_own():
    """A fresh interpreter imports each module first, with nothing of uncertank loaded before it.

    A module that needs an optional dependency which is not installed is
    skipped there (its ImportError names that package); any other error,
    an ImportError from a circle included, fails.
    """
    names = sorted(m for m in modules() if not m.endswith("__main__"))
    out = subprocess.run([sys.executable, "-c", _ISOLATED, *names], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", out.stdout[-5000:]


# -- one home per public name -------------------------------------------------------------------------------------


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's top-level statements, those under a top-level ``if`` or ``try`` included."""
    out: list[ast.stmt] = []
    for node in tree.body:
        out.append(node)
        if isinstance(node, ast.If):
            out.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            out.extend(node.body + node.orelse + node.finalbody)
    return out


def defined_names(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level: ``def``, ``class``, assignments (``TypeVar`` and aliases too)."""
    names: set[str] = set()
    for node in _top_level(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif sys.version_info >= (3, 12) and isinstance(node, ast.TypeAlias):
            names.add(node.name.id)
    return names


def _resolve(name: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = name if _is_package(name) else name.rpartition(".")[0]
    base = package.split(".")
    return ".".join(base[: len(base) - (node.level - 1)] + ([node.module] if node.module else []))


@cache
def _exports(name: str) -> tuple[tuple[str, ...], dict[str, tuple[str, str]], frozenset[str]]:
    """A module's ``__all__``; what its top-level ``from`` imports bind (name -> (module, name)); what it defines."""
    tree = ast.parse(modules()[name].read_text(encoding="utf-8"))
    imported: dict[str, tuple[str, str]] = {}
    listed: list[str] = []
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(name, node)
            for alias in node.names:
                if alias.name == "*" and target in modules():
                    imported.update({n: (target, n) for n in _exports(target)[0]})
                elif f"{target}.{alias.name}" not in modules():
                    imported[alias.asname or alias.name] = (target, alias.name)
        targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                   if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = node.value
        if isinstance(value, (ast.List, ast.Tuple)):
            listed.extend(e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
        elif isinstance(value, ast.Attribute) and value.attr == "__all__" and isinstance(value.value, ast.Name):
            other = f"{name}.{value.value.id}" if _is_package(name) else value.value.id
            if other in modules():
                listed.extend(_exports(other)[0])
    return tuple(listed), imported, frozenset(defined_names(tree))


def home_of(module: str, name: str) -> str | None:
    """The module that defines ``name`` as ``module`` sees it, following its imports; None outside the package."""
    seen: set[tuple[str, str]] = set()
    while (module, name) not in seen:
        seen.add((module, name))
        _, imported, defined = _exports(module)
        if name in defined:
            return module
        if name not in imported or imported[name][0] not in modules():
            return None
        module, name = imported[name]
    return None  # pragma: no cover - an import circle the interpreter would refuse


def one_home_violations() -> list[str]:
    """``module: name`` for every ``__all__`` entry listed anywhere but its home and the packages above it.

    A module that is not a package ``__init__`` lists only names it defines;
    a package lists only names whose home is inside it.
    """
    found: list[str] = []
    for module in sorted(modules()):
        listed, _, defined = _exports(module)
        for name in listed:
            if not _is_package(module):
                if name not in defined:
                    found.append(f"{module}: {name}")
                continue
            home = home_of(module, name)
            if home is None or not (home == module or home.startswith(f"{module}.")):
                found.append(f"{module}: {name} (defined in {home or 'no module of the package'})")
    return found


def test_every_public_name_has_one_home():
    assert one_home_violations() == []


def test_the_one_home_check_catches_a_re_export(monkeypatch):
    fake = {"uncertank.a": "from uncertank.b import thing\n__all__ = ['thing', 'mine']\nmine = 1\n",
            "uncertank.b": "__all__ = ['thing']\nthing = 2\n",
            "uncertank.c": "from uncertank.b import thing\n__all__ = ['thing']\n"}
    paths = {name: PACKAGE / "c" / "__init__.py" if name == "uncertank.c" else PACKAGE / f"{name[10:]}.py"
             for name in fake}
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: next(
        src for name, src in fake.items() if paths[name] == self))
    monkeypatch.setattr(sys.modules[__name__], "modules", lambda: paths)
    _exports.cache_clear()
    try:
        assert one_home_violations() == ["uncertank.a: thing", "uncertank.c: thing (defined in uncertank.b)"]
    finally:
        _exports.cache_clear()


def basename_clashes(names: Iterable[str]) -> dict[str, list[str]]:
    """Module basenames (packages' ``__init__`` aside) that two or more modules share, with the modules."""
    by_stem: dict[str, list[str]] = {}
    for name in names:
        if not _is_package(name):
            by_stem.setdefault(name.rpartition(".")[2], []).append(name)
    return {stem: sorted(mods) for stem, mods in by_stem.items() if len(mods) > 1}


def test_every_module_has_its_own_basename():
    """Two modules called ``result.py`` (or ``cli.py``) in one package are two places a reader confuses."""
    assert basename_clashes(modules()) == {}


def test_the_basename_check_catches_a_clash(monkeypatch):
    fake = {**modules(), "uncertank.bayes.preflight": PACKAGE / "bayes" / "preflight.py"}
    monkeypatch.setattr(sys.modules[__name__], "modules", lambda: fake)
    assert basename_clashes(fake) == {
        "preflight": ["uncertank.bayes.preflight", "uncertank.experiment.preflight"]}
