"""A census of the ``uncertank/`` package's layout, read with ``ast`` (nothing is imported).

It counts what the layout review (STYLE.md, "What the third version taught")
is about: modules and lines; modules under 60 lines; modules that only
re-export; the ``__all__`` entries and how many of them are re-exports (a name
the module imports rather than defines); names listed in two or more, and in
three or more, ``__all__`` lists; modules that are not packages yet re-export
other modules' names; the ``getattr`` calls in ``uncertank/experiment/runner.py``;
``Any`` in annotations across the package; and what is written twice: file
names, functions, and runs of lines of the same shape (read with ``tokenize``).

    python docs/scripts/layout_census.py --out docs/results/layout_now.json
    git worktree add /tmp/before ef6543e
    python docs/scripts/layout_census.py --root /tmp/before --out docs/results/layout_before.json
    git worktree remove /tmp/before
    python docs/scripts/layout_census.py --render docs/results/layout_before.json docs/results/layout_now.json \
        --out docs/layout.md

``--root`` is the checkout to measure (default: this repository). The output
depends only on the files under ``ROOT/uncertank`` and, where ``ROOT`` is a git
checkout, its commit: lists are sorted and nothing is timed. A couple of
seconds on the package as it is, most of it reading the tokens of every line.

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

Duplication, counted four ways:

- *shared basenames*: a file name, ``__init__.py`` aside, that two or more
  modules bear (``cli.py`` in two folders), counted once per name and listed
  with the modules that bear it;
- *helpers defined twice*: groups of functions with the same normalised body
  in two or more modules, at least one of them a top-level function (a
  module-level ``def``, also one inside a top-level ``if`` or ``try``);
  *methods defined twice*: the same, for groups made only of methods (a ``def``
  directly in a top-level class). The normalised body is the parameters and
  the body as ``ast.dump`` writes them, without the docstring, the decorators,
  the annotations of parameters and returns, or positions, and with the
  function's own name and each local name (a parameter, a name the function
  binds) replaced by a placeholder numbered in order of first appearance: a
  copy whose locals were renamed counts, a copy with any other change (another
  global, attribute, constant, operator or statement) does not. Stubs, bodies
  of nothing but ``pass``, ``...`` or one ``raise`` after the docstring, are
  left out (protocols and overloads have them by design); copies within one
  module alone make no group. Each group is listed as ``path:name`` (methods
  ``path:Class.name``);
- *private names with differing bodies*: names ``_x`` (dunder names aside) of
  top-level functions defined in two or more modules whose normalised bodies
  are not all the same: a helper written again under the same name, or two
  helpers that share a name only;
- *repeated runs*: pairs of places that share a run of lines of the same shape
  with at least 6 lines that hold an identifier. A line is the tokens that
  start on it, so a multi-line string is on its first line; its shape writes
  each identifier ``N``, each string (f-strings whole) ``S`` and each number
  ``0`` and keeps keywords and punctuation; blank lines, comments and
  docstrings are dropped as if absent. Left out as boilerplate: runs through
  declarations (imports, ``__all__``, a class's annotated fields and the
  lines of a ``def``'s parameters after its first line; each such line breaks
  a run, as dataclass fields and parameter lists match any others of their
  length), and lines with no identifier (brackets, ``else:``, ``return``, a
  string continuing a call) may lie inside a run but do not count towards
  its 6 lines. Runs are maximal; where one stretch matches another at several
  offsets, the runs of each pair of files are taken longest first and any that
  overlaps one already taken is dropped. The count is of pairs of places (two
  in one module included) and of pairs of files; the 10 longest are listed.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import keyword
import subprocess
import sys
import tokenize
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "uncertank"
SHORT = 60
RUNNER = "experiment/runner.py"
RUN = 6  # a repeated run counts from this many lines that hold an identifier
TOP_RUNS = 10


@dataclass
class _Module:
    """What one module's top level binds and lists, before the package-wide resolution."""

    name: str
    path: str
    is_package: bool
    lines: int
    tree: ast.Module
    text: str
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
    mod = _Module(name, rel.as_posix(), is_package, len(text.splitlines()), tree, text)
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


# -- duplication: shared basenames, functions defined twice, repeated runs of code -----------------------------

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _shared_basenames(mods: Iterable[_Module]) -> dict[str, list[str]]:
    """File names (``__init__.py`` aside) that two or more modules bear, each with their paths."""
    by_name: dict[str, list[str]] = {}
    for m in mods:
        if not m.is_package:
            by_name.setdefault(PurePosixPath(m.path).name, []).append(m.path)
    return {name: paths for name, paths in sorted(by_name.items()) if len(paths) >= 2}


def _docstring(body: Sequence[ast.stmt]) -> ast.Expr | None:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _code(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    return fn.body[1:] if _docstring(fn.body) else fn.body


def _is_stub(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body of nothing but a docstring, ``pass``, ``...`` or one ``raise``: a protocol's or an overload's stub."""
    code = _code(fn)
    if not code:
        return True
    if len(code) > 1:
        return False
    (only,) = code
    return isinstance(only, (ast.Pass, ast.Raise)) or (
        isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant) and only.value.value is Ellipsis
    )


def _body_key(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The function's parameters and body as ``ast.dump`` would write them, normalised.

    Left out: the docstring, the decorators, the annotations of the parameters and of the return
    (of nested functions too), and positions. Replaced: the function's own name (a recursive call)
    by ``<own>``, and each local name by ``<i>``, numbered in order of first appearance, so two
    bodies that differ only in what their locals are called get the same key. A local name is a
    parameter or a name the function binds (nested functions and classes included), unless
    declared ``global`` or ``nonlocal``. Globals, attributes and constants are kept.
    """
    parts: list[str] = []
    slots: list[int] = []  # where in ``parts`` a name stands, to be renamed once the locals are known
    local: set[str] = set()
    declared: set[str] = set()

    def dump(node: object) -> None:
        if isinstance(node, list):
            parts.append("[")
            for item in node:
                dump(item)
                parts.append(",")
            parts.append("]")
            return
        if not isinstance(node, ast.AST):
            parts.append(repr(node))
            return
        is_function = isinstance(node, _FUNCTIONS)
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                local.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        parts.append(type(node).__name__ + "(")
        for name in node._fields:
            if name == "type_comment" or (is_function and name in ("returns", "decorator_list")):
                continue
            if name == "annotation" and isinstance(node, ast.arg):
                continue
            value = getattr(node, name, None)
            if isinstance(value, str) and (
                (name == "id" and isinstance(node, ast.Name))
                or (name == "arg" and isinstance(node, ast.arg))
                or (name == "name" and isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.ExceptHandler)))
            ):
                if not isinstance(node, ast.Name):
                    local.add(value)  # a parameter, a nested function or class, an ``except ... as``
                slots.append(len(parts))
                parts.append(value)
            else:
                dump(value)
            parts.append(",")
        parts.append(")")

    dump(fn.args)
    dump(_code(fn))
    local -= declared
    order: dict[str, str] = {}
    for i in slots:
        name = parts[i]
        if name == fn.name:
            parts[i] = "<own>"
        elif name in local:
            parts[i] = order.setdefault(name, f"<{len(order)}>")
    return "".join(parts)


def _functions(tree: ast.Module) -> Iterator[tuple[str, bool, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Each top-level function (``name``, False) and each method of a top-level class (``Class.name``, True)."""
    for node in _top_level(tree.body):
        if isinstance(node, _FUNCTIONS):
            yield node.name, False, node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, _FUNCTIONS):
                    yield f"{node.name}.{sub.name}", True, sub


def _defined_twice(mods: Iterable[_Module]) -> dict[str, Any]:
    """Functions and methods whose normalised bodies (:func:`_body_key`) are the same in two or more modules."""
    groups: dict[str, list[tuple[str, str, bool]]] = {}
    private: dict[str, dict[str, set[str]]] = {}  # _name -> module -> the keys of its top-level definitions
    for m in mods:
        for qualname, is_method, fn in _functions(m.tree):
            key = _body_key(fn)
            if not is_method and qualname.startswith("_") and not qualname.startswith("__"):
                private.setdefault(qualname, {}).setdefault(m.path, set()).add(key)
            if not _is_stub(fn):
                groups.setdefault(key, []).append((m.path, qualname, is_method))
    helpers: list[list[str]] = []
    methods: list[list[str]] = []
    for members in groups.values():
        if len({path for path, _, _ in members}) < 2:
            continue
        listed = sorted(f"{path}:{qualname}" for path, qualname, _ in members)
        (methods if all(is_method for _, _, is_method in members) else helpers).append(listed)
    differing = {
        name: sorted(by_module)
        for name, by_module in sorted(private.items())
        if len(by_module) >= 2 and len(set().union(*by_module.values())) >= 2
    }
    return {
        "helpers": {"count": len(helpers), "functions": sum(map(len, helpers)), "groups": sorted(helpers)},
        "methods": {"count": len(methods), "functions": sum(map(len, methods)), "groups": sorted(methods)},
        "private": {"count": len(differing), "names": differing},
    }


def _statements(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every statement in ``body`` and in the blocks of its compound statements, depth first."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                yield from _statements(block)


def _line_shapes(text: str, tree: ast.Module) -> list[tuple[int, str | None, bool]]:
    """Each line that holds code, as (line number, shape, whether it holds an identifier).

    A line's shape is its tokens with identifiers written ``N``, strings (f-strings whole) ``S`` and
    numbers ``0``; keywords and punctuation stay, comments go. A line is the line its tokens start
    on, so the inside of a multi-line string is no line. Docstrings are dropped as if absent. The
    lines of imports, of ``__all__``, of a class's annotated fields and of a ``def``'s parameters
    after its first line are declarations: each is kept as a break (shape None) that no run crosses.
    """
    dropped: set[int] = set()
    breaks: set[int] = set()

    def span(node: ast.stmt) -> range:
        return range(node.lineno, (node.end_lineno or node.lineno) + 1)

    for node in (tree, *_statements(tree.body)):
        if isinstance(node, _SCOPES) and (doc := _docstring(node.body)) is not None:
            dropped.update(span(doc))
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.AnnAssign):
                    breaks.update(span(sub))
        elif isinstance(node, _FUNCTIONS):
            breaks.update(range(node.lineno + 1, node.body[0].lineno))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            breaks.update(span(node))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_is_all(t) for t in targets):
                breaks.update(span(node))
    shapes: dict[int, list[str]] = {}
    in_fstring = 0  # Python 3.12 splits an f-string into tokens; it stays one ``S``
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        kind = tokenize.tok_name[tok.type]
        line = tok.start[0]
        if kind == "FSTRING_START":
            in_fstring += 1
            if in_fstring == 1 and line not in dropped:
                shapes.setdefault(line, []).append("S")
            continue
        if kind == "FSTRING_END":
            in_fstring -= 1
            continue
        if in_fstring or line in dropped:
            continue
        if tok.type == tokenize.NAME:
            word = tok.string if keyword.iskeyword(tok.string) else "N"
        elif tok.type == tokenize.NUMBER:
            word = "0"
        elif tok.type == tokenize.STRING:
            word = "S"
        elif tok.type == tokenize.OP:
            word = tok.string
        else:
            continue  # comments, newlines, indents, the end
        shapes.setdefault(line, []).append(word)
    return [
        (line, None, False) if line in breaks else (line, " ".join(words), "N" in words)
        for line, words in sorted(shapes.items())
    ]


def _repeated_runs(mods: Sequence[_Module]) -> dict[str, Any]:
    """Pairs of places whose runs of lines have the same shapes, with at least ``RUN`` lines that hold an identifier.

    Each run is maximal (it can grow neither way); a run never overlaps itself in one file. Where one
    stretch matches another at several offsets (a block of lines of one shape), the runs of each pair
    of files are taken longest first and a run overlapping one already taken, at either place, is
    left out, so a stretch is counted once.
    """
    files = [(m, _line_shapes(m.text, m.tree)) for m in mods]
    windows: dict[tuple[str | None, ...], list[tuple[int, int]]] = {}
    for f, (_, shapes) in enumerate(files):
        for i in range(len(shapes) - RUN + 1):
            key = tuple(shape for _, shape, _ in shapes[i : i + RUN])
            if None not in key:
                windows.setdefault(key, []).append((f, i))
    found: list[tuple[int, int, int, int, int, int]] = []  # (-identifier lines, length, file a, start a, b, start b)
    for places in windows.values():
        for x, (fa, ia) in enumerate(places):
            a = files[fa][1]
            for fb, ib in places[x + 1 :]:
                b = files[fb][1]
                if ia and ib and a[ia - 1][1] is not None and a[ia - 1][1] == b[ib - 1][1]:
                    continue  # not where the run starts
                n = 0
                while (
                    ia + n < len(a)
                    and ib + n < len(b)
                    and a[ia + n][1] is not None
                    and a[ia + n][1] == b[ib + n][1]
                    and not (fa == fb and ia + n >= ib)
                ):
                    n += 1
                idents = sum(has for _, _, has in a[ia : ia + n])
                if idents >= RUN:
                    found.append((-idents, n, fa, ia, fb, ib))
    taken: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    runs: list[dict[str, Any]] = []
    file_pairs: set[tuple[str, str]] = set()
    for neg, n, fa, ia, fb, ib in sorted(found):
        spans = taken.setdefault((fa, fb), [])
        if any((ia < ja + jn and ja < ia + n) or (ib < jb + jn and jb < ib + n) for ja, jb, jn in spans):
            continue
        spans.append((ia, ib, n))
        (ma, a), (mb, b) = files[fa], files[fb]
        first = a[ia][0]
        runs.append(
            {
                "lines": -neg,
                "a": f"{ma.path}:{first}-{a[ia + n - 1][0]}",
                "b": f"{mb.path}:{b[ib][0]}-{b[ib + n - 1][0]}",
                "first_line": ma.text.splitlines()[first - 1].strip(),
            }
        )
        file_pairs.add((ma.path, mb.path))
    return {
        "min_identifier_lines": RUN,
        "pairs_of_places": len(runs),
        "pairs_of_files": len(file_pairs),
        "top": runs[:TOP_RUNS],
    }


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
    basenames = _shared_basenames(mods)
    twice = _defined_twice(mods)
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
        "shared_basenames": {
            "count": len(basenames),
            "modules": sum(map(len, basenames.values())),
            "names": basenames,
        },
        "helpers_defined_twice": twice["helpers"],
        "methods_defined_twice": twice["methods"],
        "private_names_differing": twice["private"],
        "repeated_runs": _repeated_runs(mods),
    }


def _at(c: Mapping[str, Any], *keys: str) -> Any:
    """``c[k1][k2]...``, or None where a census written before a count existed lacks it."""
    value: Any = c
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


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
        ("file names two or more modules bear", _at(c, "shared_basenames", "count")),
        ("helpers defined in two or more modules (groups)", _at(c, "helpers_defined_twice", "count")),
        ("methods defined in two or more modules (groups)", _at(c, "methods_defined_twice", "count")),
        ("private function names in two or more modules, bodies differing", _at(c, "private_names_differing", "count")),
        (f"repeated runs of {RUN}+ code lines: pairs of places", _at(c, "repeated_runs", "pairs_of_places")),
        ("... pairs of files", _at(c, "repeated_runs", "pairs_of_files")),
    ]


def _label(c: Mapping[str, Any], fallback: str) -> str:
    if not c.get("commit"):
        return fallback
    return f"{c['commit']}" + (" + uncommitted" if c.get("uncommitted_changes") else "")


def _codes(items: Iterable[str]) -> str:
    return ", ".join(f"`{x}`" for x in items)


def _duplicates(c: Mapping[str, Any], label: str) -> list[str]:
    """The lists behind the duplication counts of one census, as Markdown paragraphs and a table."""
    if _at(c, "repeated_runs") is None:
        return [f"**{label}**: counted before the duplication counts existed.", ""]
    names = c["shared_basenames"]["names"]
    helpers = c["helpers_defined_twice"]["groups"]
    methods = c["methods_defined_twice"]["groups"]
    private = c["private_names_differing"]["names"]
    runs = c["repeated_runs"]
    out = [
        f"**{label}**",
        "",
        f"- File names two or more modules bear ({len(names)}): "
        + ("; ".join(f"`{n}` ({_codes(ps)})" for n, ps in names.items()) if names else "none")
        + ".",
        f"- Helpers defined in two or more modules ({len(helpers)}): "
        + ("; ".join(" = ".join(f"`{x}`" for x in g) for g in helpers) if helpers else "none")
        + ".",
        f"- Methods defined in two or more modules ({len(methods)}): "
        + ("; ".join(" = ".join(f"`{x}`" for x in g) for g in methods) if methods else "none")
        + ".",
        f"- Private function names in two or more modules, bodies differing ({len(private)}): "
        + ("; ".join(f"`{n}` ({_codes(ps)})" for n, ps in private.items()) if private else "none")
        + ".",
        f"- Repeated runs ({runs['pairs_of_places']} pairs of places, in {runs['pairs_of_files']} pairs of files)"
        + (f", the {len(runs['top'])} longest:" if runs["top"] else "."),
        "",
    ]
    if runs["top"]:
        out += ["| code lines | one place | the other | its first line |", "|---:|---|---|---|"]
        for r in runs["top"]:
            first = r["first_line"].replace("|", "\\|").replace("`", "'")
            first = first if len(first) <= 60 else first[:57] + "..."
            out.append(f"| {r['lines']} | `{r['a']}` | `{r['b']}` | `{first}` |")
        out.append("")
    return out


def _readings(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Sentences that read the duplication counts, written from the numbers."""
    if _at(before, "repeated_runs") is None or _at(now, "repeated_runs") is None:
        return []

    def count(c: Mapping[str, Any], key: str) -> int:
        return int(c[key]["count"])

    b_names, n_names = count(before, "shared_basenames"), count(now, "shared_basenames")
    b_help, n_help = count(before, "helpers_defined_twice"), count(now, "helpers_defined_twice")
    b_meth, n_meth = count(before, "methods_defined_twice"), count(now, "methods_defined_twice")
    b_priv, n_priv = count(before, "private_names_differing"), count(now, "private_names_differing")
    b_runs, n_runs = before["repeated_runs"]["pairs_of_places"], now["repeated_runs"]["pairs_of_places"]
    same_helpers = {tuple(g) for g in before["helpers_defined_twice"]["groups"]} & {
        tuple(g) for g in now["helpers_defined_twice"]["groups"]
    }
    return [
        "Read together: "
        + (
            f"no two modules share a file name now (before, {b_names} names were borne twice)"
            if not n_names
            else f"{n_names} file names are borne by two or more modules now (before: {b_names})"
        )
        + f"; {n_help} groups of helpers are defined in two or more modules (before: {b_help})"
        + (f", {len(same_helpers)} of them unchanged from before" if same_helpers else "")
        + f", and {n_meth} groups of methods (before: {b_meth}); {n_priv} private function names are written "
        f"in several modules with differing bodies (before: {b_priv}); and {n_runs} pairs of places share a "
        f"run of {RUN}+ code lines (before: {b_runs}). The lists below name each as a place to look at when "
        "cleaning up; some are alike by design (a protocol's hooks, parallel readers of two formats).",
        "",
    ]


def render(before: Mapping[str, Any], now: Mapping[str, Any], before_path: str, now_path: str) -> str:
    """The Markdown page ``docs/layout.md``: the two censuses side by side and how they were measured."""
    b_label, n_label = _label(before, "before"), _label(now, "now")
    lines = [
        "# The package's layout, counted",
        "",
        "<!-- Written by docs/scripts/layout_census.py --render: edit the script, not this page. -->",
        "",
        "How the `uncertank/` package is cut into modules, and how much of it is written twice, counted by "
        "`docs/scripts/layout_census.py` before the layout clean-up and now. The script reads the source with "
        "Python's `ast` and `tokenize` and imports nothing; its docstring defines each count.",
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
        f"Names in three or more `__all__` lists ({len(three)}): " + (_codes(three) if three else "none") + "."
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
    lines.append(f"Modules that only re-export ({len(only)}): " + (_codes(only) if only else "none") + ".")
    lines += [
        "",
        "## Written twice, before and now",
        "",
        "Four counts of duplication (the script's docstring has the exact rules):",
        "",
        "- *file names two or more modules bear*: `__init__.py` aside;",
        "- *helpers* and *methods defined in two or more modules*: groups of functions whose bodies are the "
        "same once the docstring, decorators and annotations are dropped and the locals renamed in order "
        "(a copy with renamed locals counts, a copy with one other change does not); a group with a "
        "top-level function is a helper group, one of methods only a method group; stubs (`pass`, `...`, "
        "one `raise`) are left out;",
        "- *private function names in two or more modules, bodies differing*: top-level `_name` functions "
        "defined in several modules, not all alike;",
        f"- *repeated runs*: pairs of places sharing {RUN} or more code lines of the same shape (each "
        "identifier, string and number a placeholder; docstrings and comments dropped); lines with no "
        "identifier may lie in a run but do not count, and imports, `__all__`, a class's annotated fields and "
        "multi-line parameter lists end a run, as boilerplate.",
        "",
        *_readings(before, now),
        *_duplicates(now, f"Now ({n_label})"),
        *_duplicates(before, f"Before ({b_label})"),
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
    ]
    if now.get("uncommitted_changes"):
        lines.append(
            f"Now is the working copy at {now.get('commit')} with changes under `{PACKAGE}/` not yet committed, "
            f"counted in place with `python docs/scripts/layout_census.py --out {now_path}`; to count a commit "
            "exactly, use the commands above with its hash and that file."
        )
    else:
        lines.append(
            f"and the same with {now.get('commit') or 'HEAD'} and `{now_path}` (now). In a working copy with no "
            f"uncommitted changes under `{PACKAGE}/`, `python docs/scripts/layout_census.py --out {now_path}` "
            "writes the same file."
        )
    lines += [
        "This page is written from the two files:",
        "",
        "```",
        f"python docs/scripts/layout_census.py --render {before_path} {now_path} --out docs/layout.md",
        "```",
        "",
        "The JSON files hold the lists behind each count (every name in two or more `__all__` lists with the "
        "modules that list it, every short module with its length, every group of functions defined twice, "
        "the ten longest repeated runs). A count is exact for what the script "
        "reads statically: an `__all__` built at run time by other means than literal lists, `+=` and "
        "`.extend` of another module's `__all__` would be missed, and so would a name bound only inside "
        "a function. Lines are physical lines, docstrings and comments included, except in the repeated "
        "runs, which count code lines only.",
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
