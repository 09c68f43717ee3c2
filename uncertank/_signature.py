"""The keyword arguments a factory accepts, read without building what it builds.

A plugin's factory is often ``def bert(**params): return BertRanker(**params)``
with the import inside, so that listing plugins does not load torch. Its
signature alone cannot say whether ``colour=3`` is a parameter; importing
``BertRanker`` to ask would load torch. :func:`accepted_keywords` follows
``**params`` through the source instead: to the class or function the factory
passes them to, through ``super().__init__(**params)`` and base classes, and
through ``from ... import`` re-exports, parsing each module it needs without
executing it.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["accepted_keywords"]

_MAX_DEPTH = 12  # re-exports and classes followed before giving up

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def accepted_keywords(factory: Callable[..., Any]) -> tuple[str, ...] | None:
    """The names ``factory`` takes as keyword arguments, or None where they cannot be read.

    Parameters
    ----------
    factory : callable
        A class or function, such as a ranker factory from the plugin registry.

    Returns
    -------
    tuple of str or None
        The keyword names in the order they are declared, with the keys a
        factory reads from its ``**kwargs`` by name (``params.pop("seed")``)
        and the names of every callable it passes them on to (a superset
        where a factory removes some before passing them on). None where the
        signature ends in ``**kwargs`` and the source does not show, call by
        call, where they go (a ``**kwargs`` never passed on or read with
        computed keys, a callee chosen at run time, a class with a decorator,
        metaclass or ``__new__``, source not found).

    Examples
    --------
    >>> def factory(n, *, seed=0, **options):
    ...     return n
    >>> accepted_keywords(factory) is None  # ``options`` is never passed on
    True
    >>> from uncertank.plugins import get_factory
    >>> accepted_keywords(get_factory("rankers", "bm25"))
    ('k1', 'b', 'method', 'stopwords')
    """
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    named = tuple(n for n, p in sig.parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    if not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return named
    qualname = getattr(factory, "__qualname__", "")
    module = getattr(factory, "__module__", None)
    if not module or not qualname or "." in qualname:
        return None
    return _resolve(module, qualname, 0)


def _names(module: str, node: _Def, owner: ast.ClassDef | None, depth: int) -> tuple[str, ...] | None:
    """Keyword names of a function or class defined in ``module`` (``owner``: the class of a method)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.ClassDef):
        return _class_names(module, node, depth)
    args = node.args
    positional = [a.arg for a in args.args][1 if owner is not None else 0:]
    named = tuple(positional + [a.arg for a in args.kwonlyargs])
    if args.kwarg is None:
        return named
    calls = [
        c for c in ast.walk(node)
        if isinstance(c, ast.Call)
        and any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == args.kwarg.arg for k in c.keywords)
    ]
    read = _keys_read(node, args.kwarg.arg)
    if not calls or read is None:
        return None
    out = list(named) + [k for k in read if k not in named]
    for call in calls:
        target = _callee(module, node, owner, call.func, depth)
        if target is None:
            return None
        out += [n for n in target if n not in out]
    return tuple(out)


def _keys_read(fn: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str) -> list[str] | None:
    """The keys ``fn`` reads from its ``**kwargs`` by name (``pop``, ``get``, ``[...]``, ``in``), or None.

    None where ``kwargs`` is used otherwise than passed on as ``**kwargs``,
    stored whole (``self.params = params``) or read with a literal key: the
    names it takes cannot be read then.
    """
    parents = {child: parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}
    keys: list[str] = []
    for name in sorted(ast.walk(fn), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if not (isinstance(name, ast.Name) and name.id == kwargs) or isinstance(name.ctx, ast.Store):
            continue
        parent = parents.get(name)
        if (isinstance(parent, ast.keyword) and parent.arg is None) or isinstance(parent, ast.Assign):
            continue  # passed on, or stored whole
        grand = parents.get(parent) if parent is not None else None
        if isinstance(parent, ast.Attribute) and parent.attr in ("pop", "get") and isinstance(grand, ast.Call):
            key = grand.args[0] if grand.args else None
        elif isinstance(parent, ast.Subscript):
            key = parent.slice
        elif isinstance(parent, ast.Compare) and isinstance(parent.ops[0], (ast.In, ast.NotIn)):
            key = parent.left
        else:
            return None
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        keys += [key.value] if key.value not in keys else []
    return keys


def _class_names(module: str, node: ast.ClassDef, depth: int) -> tuple[str, ...] | None:
    """Keyword names of a class's ``__init__``, its own or inherited (None: a decorator, metaclass or __new__)."""
    methods = {s.name: s for s in node.body if isinstance(s, ast.FunctionDef)}
    if node.keywords or node.decorator_list or "__new__" in methods:
        return None
    init = methods.get("__init__")
    if init is not None:
        return _names(module, init, node, depth + 1)
    return _inherited(module, node, depth)


def _inherited(module: str, node: ast.ClassDef, depth: int) -> tuple[str, ...] | None:
    """Keyword names of the ``__init__`` that ``node`` inherits: its one base class's (none for ``object``)."""
    bases = [b for b in node.bases if not (isinstance(b, ast.Name) and b.id == "object")]
    if not bases:
        return ()
    if len(bases) > 1 or not isinstance(bases[0], ast.Name):
        return None
    return _resolve(module, bases[0].id, depth + 1)


def _callee(
    module: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef | None, func: ast.expr, depth: int
) -> tuple[str, ...] | None:
    """Keyword names of what ``func`` (the callee of a call in ``fn``) names."""
    if isinstance(func, ast.Attribute) and func.attr == "__init__" and _is_super(func.value):
        return None if owner is None else _inherited(module, owner, depth)
    if not isinstance(func, ast.Name):
        return None
    for stmt in ast.walk(fn):  # an import inside the function
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == func.id:
                    return _resolve(_absolute(stmt, module), alias.name, depth + 1)
    return _resolve(module, func.id, depth + 1)


def _resolve(module: str, name: str, depth: int) -> tuple[str, ...] | None:
    """Keyword names of the top-level ``name`` of ``module``."""
    found = _lookup(module, name, depth)
    return None if found is None else _names(*found, None, depth + 1)


def _is_super(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "super"


def _lookup(module: str, name: str, depth: int) -> tuple[str, _Def] | None:
    """Where the top-level ``name`` of ``module`` is defined, following ``from ... import`` re-exports."""
    tree = _parse(module) if depth <= _MAX_DEPTH else None
    if tree is None:
        return None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
            return module, stmt
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    return _lookup(_absolute(stmt, module), alias.name, depth + 1)
    return None


def _absolute(stmt: ast.ImportFrom, module: str) -> str:
    if not stmt.level:
        return stmt.module or ""
    is_package = Path(_source(module) or "").name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    return importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package)


def _parse(module: str) -> ast.Module | None:
    path = _source(module)
    if path is None:
        return None
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _source(module: str) -> str | None:
    """The ``.py`` file of ``module``, found without importing it or its packages."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        path = getattr(loaded, "__file__", None)
    else:
        top, *rest = module.split(".")
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        for part in rest:
            if spec is None or spec.submodule_search_locations is None:
                return None
            spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
        path = None if spec is None else spec.origin
    return path if path is not None and path.endswith(".py") else None
