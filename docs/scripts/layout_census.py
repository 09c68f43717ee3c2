"""A census of the ``uncertank/`` package's layout, read with ``ast`` (nothing is imported).

It counts what the layout review (STYLE.md, "What the third version taught")
is about: modules and lines; modules under 60 lines; modules that only
re-export; the ``__all__`` entries and how many of them are re-exports (a name
the module imports rather than defines); names listed in two or more, and in
three or more, ``__all__`` lists; modules that are not packages yet re-export
other modules' names; the ``getattr`` calls in ``uncertank/experiment/runner.py``;
and ``Any`` in annotations across the package.

    python docs/scripts/layout_census.py --out docs/results/layout_now.json
    git worktree add /tmp/before ef6543e
    python docs/scripts/layout_census.py --root /tmp/before --out docs/results/layout_before.json
    git worktree remove /tmp/before
    python docs/scripts/layout_census.py --render docs/results/layout_before.json docs/results/layout_now.json \
        --out docs/layout.md

``--root`` is the checkout to measure (default: this repository). The output
depends only on the files under ``ROOT/uncertank`` and, where ``ROOT`` is a git
checkout, its commit: lists are sorted and nothing is timed. Under a second on
the package as it is.

What counts as what:

- a module's ``__all__`` is read from literal lists and tuples assigned or
  added to it, ``__all__ += other.__all__`` and ``__all__.extend(...)``, with
  ``other`` a module of the package (resolved from the files, recursively);
- a name is *imported* when a top-level import binds it (``from m import *``
  binds the names of ``m``'s ``__all__``), *defined* when a top-level ``def``,
  ``class`` or assignment binds it; an entry of ``__all__`` is a re-export when
  the module imports it and does not define it;
- a module *only re-exports* when its top level holds nothing but a
  docstring, imports (at least one besides ``__future__``), ``__all__``
  and ``if TYPE_CHECKING:`` blocks of imports;
- ``Any`` in annotations: each ``Any`` (or ``typing.Any``) inside a parameter,
  return or variable annotation, string annotations parsed too; ``Any``
  elsewhere (aliases, ``cast``) is counted apart.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "uncertank"
SHORT = 60
RUNNER = "experiment/runner.py"


@dataclass
class _Module:
    """What one module's top level binds and lists, before the package-wide resolution."""

    name: str
    path: str
    is_package: bool
    lines: int
    tree: ast.Module
    all_literal: list[str] = field(default_factory=list)
    all_from: list[str] = field(default_factory=list)  # modules whose ``__all__`` is added to this one's
    has_all: bool = False
    imported: dict[str, str] = field(default_factory=dict)  # name -> the module it comes from
    star_from: list[str] = field(default_factory=list)
    module_aliases: dict[str, str] = field(default_factory=dict)  # local name -> module of the package
    defined: set[str] = field(default_factory=set)
    only_reexports: bool = False


def _module_name(rel: Path) -> tuple[str, bool]:
    parts = list(rel.with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _absolute(mod: _Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.name.split(".")
    base = base if mod.is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _top_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at import time: the body, and the bodies of its ``if``, ``try`` and ``with`` blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)
        elif isinstance(node, ast.With):
            yield from _top_level(node.body)


def _names_bound(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _names_bound(elt)
    elif isinstance(target, ast.Starred):
        yield from _names_bound(target.value)


def _is_all(target: ast.expr) -> bool:
    return isinstance(target, ast.Name) and target.id == "__all__"


def _read_all_value(mod: _Module, value: ast.expr | None) -> None:
    """Add the entries of an expression assigned or added to ``__all__``."""
    if isinstance(value, (ast.List, ast.Tuple)):
        for elt in value.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                mod.all_literal.append(elt.value)
            elif isinstance(elt, ast.Starred):
                _read_all_value(mod, elt.value)
    elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        _read_all_value(mod, value.left)
        _read_all_value(mod, value.right)
    elif (
        isinstance(value, ast.Attribute)
        and value.attr == "__all__"
        and isinstance(value.value, ast.Name)
        and value.value.id in mod.module_aliases
    ):
        mod.all_from.append(mod.module_aliases[value.value.id])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _only_reexports(tree: ast.Module) -> bool:
    imports = 0
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports += 1
        elif isinstance(node, ast.Assign) and all(_is_all(t) for t in node.targets):
            continue
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and _is_all(node.target):
            continue
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and _is_all(node.value.func.value)
        ):
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and not node.orelse:
            if not all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
                return False
            imports += len(node.body)
        else:
            return False
    return imports > 0


def _read(root: Path, path: Path, modules: set[str]) -> _Module:
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(root)
    name, is_package = _module_name(rel)
    tree = ast.parse(text, filename=str(rel))
    mod = _Module(name, rel.as_posix(), is_package, len(text.splitlines()), tree)
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    mod.imported[alias.asname] = alias.name
                    if alias.name in modules:
                        mod.module_aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    mod.imported[top] = top
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(mod, node)
            for alias in node.names:
                if alias.name == "*":
                    mod.star_from.append(source)
                    continue
                local = alias.asname or alias.name
                mod.imported[local] = source
                if f"{source}.{alias.name}" in modules:
                    mod.module_aliases[local] = f"{source}.{alias.name}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            mod.defined.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if _is_all(target):
                    mod.has_all = True
                    _read_all_value(mod, node.value)
                else:
                    mod.defined.update(_names_bound(target))
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if _is_all(node.target):
                mod.has_all = True
                _read_all_value(mod, node.value)
            elif not isinstance(node, ast.AnnAssign) or node.value is not None:
                mod.defined.update(_names_bound(node.target))
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and _is_all(node.value.func.value)
            and node.value.func.attr in ("extend", "append")
            and node.value.args
        ):
            arg = node.value.args[0]
            if node.value.func.attr == "append":
                arg = ast.List(elts=[arg], ctx=ast.Load())
            _read_all_value(mod, arg)
    mod.defined.discard("__all__")
    mod.only_reexports = _only_reexports(tree)
    return mod


class _Package:
    """Every module of the package, with each ``__all__`` resolved across modules."""

    def __init__(self, root: Path) -> None:
        files = sorted((root / PACKAGE).rglob("*.py"))
        names = {_module_name(p.relative_to(root))[0] for p in files}
        self.modules = {m.name: m for m in (_read(root, p, names) for p in files)}
        self._all: dict[str, list[str]] = {}
        self._star: dict[str, set[str]] = {}

    def all_of(self, name: str, _seen: frozenset[str] = frozenset()) -> list[str]:
        """The entries of module ``name``'s ``__all__``, in order, ``__all__`` of other modules included."""
        if name in self._all:
            return self._all[name]
        mod = self.modules[name]
        entries = list(mod.all_literal)
        for other in mod.all_from:
            if other in self.modules and other not in _seen:
                entries += self.all_of(other, _seen | {name})
        self._all[name] = entries
        return entries

    def star_names(self, name: str, _seen: frozenset[str] = frozenset()) -> set[str]:
        """The names ``from name import *`` binds: its ``__all__``, else its public top-level names."""
        if name in self._star:
            return self._star[name]
        mod = self.modules.get(name)
        if mod is None or name in _seen:
            return set()
        if mod.has_all:
            names = set(self.all_of(name))
        else:
            names = {n for n in (*mod.defined, *mod.imported, *self.star_imports(name, _seen | {name})) if n[:1] != "_"}
        self._star[name] = names
        return names

    def star_imports(self, name: str, _seen: frozenset[str] = frozenset()) -> set[str]:
        """The names module ``name`` binds through ``from m import *``."""
        out: set[str] = set()
        for source in self.modules[name].star_from:
            out |= self.star_names(source, _seen | {name})
        return out


def _count_any(expr: ast.AST, *, strings: bool) -> int:
    """``Any`` as a name or an attribute (``typing.Any``) in ``expr``; with ``strings``, inside string constants too."""
    n = 0
    for sub in ast.walk(expr):
        if (isinstance(sub, ast.Name) and sub.id == "Any") or (
            isinstance(sub, ast.Attribute) and sub.attr == "Any" and isinstance(sub.value, ast.Name)
        ):
            n += 1
        elif strings and isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                n += _count_any(ast.parse(sub.value, mode="eval"), strings=True)
            except SyntaxError:
                pass  # a Literal's string, not an annotation
    return n


def _any_counts(tree: ast.Module) -> tuple[int, int]:
    """``Any`` inside annotations, and ``Any`` anywhere else (an alias, a ``cast``)."""
    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                if arg is not None and arg.annotation is not None:
                    annotations.append(arg.annotation)
            if node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    in_annotations = sum(_count_any(a, strings=True) for a in annotations)
    outside = _count_any(tree, strings=False) - sum(_count_any(a, strings=False) for a in annotations)
    return in_annotations, outside


def _getattr_calls(tree: ast.Module) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
    )


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def census(root: Path) -> dict[str, Any]:
    """The layout census of ``root / "uncertank"``, as a JSON-ready dict (see the module docstring)."""
    pkg = _Package(root)
    if not pkg.modules:
        raise ValueError(f"root must hold a package folder {PACKAGE}/ of .py files; got none under {root}")
    mods = sorted(pkg.modules.values(), key=lambda m: m.path)
    listed: dict[str, list[str]] = {}  # name -> the modules whose __all__ lists it
    entries = reexports = unresolved = 0
    reexporters: dict[str, int] = {}
    for m in mods:
        star = pkg.star_imports(m.name)
        n_re = 0
        for entry in dict.fromkeys(pkg.all_of(m.name)):
            entries += 1
            listed.setdefault(entry, []).append(m.path)
            if entry in m.defined:
                continue
            if entry in m.imported or entry in star:
                n_re += 1
            else:
                unresolved += 1
        reexports += n_re
        if n_re and not m.is_package:
            reexporters[m.path] = n_re
    any_ann = any_other = any_modules = 0
    for m in mods:
        a, o = _any_counts(m.tree)
        any_ann += a
        any_other += o
        any_modules += a > 0
    runner = pkg.modules.get(f"{PACKAGE}.{RUNNER[:-3].replace('/', '.')}")
    commit = _git(root, "rev-parse", "--short=7", "HEAD")
    dirty = _git(root, "status", "--porcelain", "--", PACKAGE) if commit else None
    in2 = {n: ms for n, ms in sorted(listed.items()) if len(ms) >= 2}
    return {
        "package": PACKAGE,
        "commit": commit,
        "uncommitted_changes": bool(dirty) if commit else None,
        "modules": len(mods),
        "lines": sum(m.lines for m in mods),
        "short_modules": {
            "under_lines": SHORT,
            "count": sum(m.lines < SHORT for m in mods),
            "modules": {m.path: m.lines for m in mods if m.lines < SHORT},
        },
        "reexport_only_modules": {
            "count": sum(m.only_reexports for m in mods),
            "modules": [m.path for m in mods if m.only_reexports],
        },
        "all_entries": entries,
        "all_reexports": reexports,
        "all_neither_imported_nor_defined": unresolved,
        "names_in_2_or_more_all": {"count": len(in2), "names": in2},
        "names_in_3_or_more_all": {
            "count": sum(len(ms) >= 3 for ms in in2.values()),
            "names": [n for n, ms in in2.items() if len(ms) >= 3],
        },
        "non_package_reexporters": {"count": len(reexporters), "modules": reexporters},
        "runner_getattr_calls": None if runner is None else _getattr_calls(runner.tree),
        "any_in_annotations": {"count": any_ann, "modules": any_modules},
        "any_outside_annotations": any_other,
    }


def _summary(c: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [
        ("modules", c["modules"]),
        ("lines", c["lines"]),
        (f"modules under {c['short_modules']['under_lines']} lines", c["short_modules"]["count"]),
        ("modules that only re-export", c["reexport_only_modules"]["count"]),
        ("`__all__` entries", c["all_entries"]),
        ("... of which re-exports", c["all_reexports"]),
        ("names in 2 or more `__all__` lists", c["names_in_2_or_more_all"]["count"]),
        ("names in 3 or more `__all__` lists", c["names_in_3_or_more_all"]["count"]),
        ("non-package modules that re-export", c["non_package_reexporters"]["count"]),
        (f"`getattr(` calls in `{PACKAGE}/{RUNNER}`", c["runner_getattr_calls"]),
        ("`Any` in annotations", c["any_in_annotations"]["count"]),
        ("... modules with one", c["any_in_annotations"]["modules"]),
        ("`Any` outside annotations", c["any_outside_annotations"]),
    ]


def _label(c: Mapping[str, Any], fallback: str) -> str:
    if not c.get("commit"):
        return fallback
    return f"{c['commit']}" + (" + uncommitted" if c.get("uncommitted_changes") else "")


def render(before: Mapping[str, Any], now: Mapping[str, Any], before_path: str, now_path: str) -> str:
    """The Markdown page ``docs/layout.md``: the two censuses side by side and how they were measured."""
    b_label, n_label = _label(before, "before"), _label(now, "now")
    lines = [
        "# The package's layout, counted",
        "",
        "<!-- Written by docs/scripts/layout_census.py --render: edit the script, not this page. -->",
        "",
        "How the `uncertank/` package is cut into modules, counted by `docs/scripts/layout_census.py` "
        "before the layout clean-up and now. The script reads the source with Python's `ast` and imports "
        "nothing; its docstring defines each count.",
        "",
        f"| | before ({b_label}) | now ({n_label}) | change |",
        "|---|---:|---:|---:|",
    ]
    for (label, b), (_, n) in zip(_summary(before), _summary(now), strict=True):
        change = f"{n - b:+d}" if isinstance(b, int) and isinstance(n, int) else ""
        lines.append(f"| {label} | {'n/a' if b is None else b} | {'n/a' if n is None else n} | {change} |")
    lines += ["", "## Now, by name", ""]
    three = now["names_in_3_or_more_all"]["names"]
    lines.append(
        f"Names in three or more `__all__` lists ({len(three)}): "
        + (", ".join(f"`{n}`" for n in three) if three else "none")
        + "."
    )
    lines.append("")
    reex = now["non_package_reexporters"]["modules"]
    lines.append(
        f"Modules that are not packages yet re-export other modules' names ({len(reex)}): "
        + (", ".join(f"`{p}` ({k})" for p, k in reex.items()) if reex else "none")
        + "."
    )
    lines.append("")
    only = now["reexport_only_modules"]["modules"]
    lines.append(
        f"Modules that only re-export ({len(only)}): " + (", ".join(f"`{p}`" for p in only) if only else "none") + "."
    )
    lines += [
        "",
        "## How these were measured",
        "",
        f"Each commit was checked out beside the working copy and counted there; for {b_label} (before):",
        "",
        "```",
        f"git worktree add /tmp/census {before.get('commit') or 'COMMIT'}",
        f"python docs/scripts/layout_census.py --root /tmp/census --out {before_path}",
        "git worktree remove /tmp/census",
        "```",
        "",
        f"and the same with {now.get('commit') or 'HEAD'} and `{now_path}` (now). In a working copy with no "
        f"uncommitted changes under `{PACKAGE}/`, `python docs/scripts/layout_census.py --out {now_path}` "
        "writes the same file. This page is written from the two files:",
        "",
        "```",
        f"python docs/scripts/layout_census.py --render {before_path} {now_path} --out docs/layout.md",
        "```",
        "",
        "The JSON files hold the lists behind each count (every name in two or more `__all__` lists with the "
        "modules that list it, every short module with its length). A count is exact for what the script "
        "reads statically: an `__all__` built at run time by other means than literal lists, `+=` and "
        "`.extend` of another module's `__all__` would be missed, and so would a name bound only inside "
        "a function. Lines are physical lines, docstrings and comments included.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the census of ``--root`` (and write it as JSON with ``--out``), or render two censuses as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout to count (default: this repository)")
    parser.add_argument("--out", type=Path, help="write the census as JSON here (with --render: the Markdown page)")
    parser.add_argument(
        "--render", nargs=2, metavar=("BEFORE_JSON", "NOW_JSON"), help="render two censuses as the page docs/layout.md"
    )
    args = parser.parse_args(argv)
    if args.render:
        before, now = (json.loads(Path(p).read_text(encoding="utf-8")) for p in args.render)
        text = render(before, now, *args.render)
    else:
        result = census(args.root.resolve())
        text = json.dumps(result, indent=1) + "\n"
        for label, value in _summary(result):
            print(f"{label}: {value}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    elif args.render:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
