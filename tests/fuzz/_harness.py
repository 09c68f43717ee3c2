"""What the fuzz harness calls, and how it tells a library error from a raw one.

The targets are found, never listed: every callable in the ``__all__`` of
``uncertank``, of each first-party plugin package (``plugins/uncertank-*``:
``uncertank_bert``, ``uncertank_llm``...) and of each of their public
modules (no part of the dotted name after the package starts with ``_``),
each counted once however many modules export it. A new public name, or a
new first-party plugin, is fuzzed without any change here.

An outcome is acceptable when the call returns (with finite numbers where
it returns numbers; an infinity only where the docstring promises one), or
raises one of the library's errors: a :class:`ValueError`,
:class:`TypeError` or :class:`LookupError`, an error class uncertank (or
the plugin) defines, or an :class:`OSError` with the library's own message,
raised by a ``raise`` statement in uncertank's own code or the first-party
plugin's. Anything else is a *raw* error: an
exception of another type (``AttributeError``, ``ZeroDivisionError``,
``OverflowError``...), one raised inside numpy, scipy, pandas or Python's
standard library, or one raised by an operation of uncertank's code rather
than by a ``raise`` (``len(3)``, ``x[0]`` on an empty array).

One error from a dependency is the library's own: pydantic's
``ValidationError`` (a :class:`ValueError`) raised when one of uncertank's
pydantic models (the study file's ``StudyConfig``, ``RankerConfig``...) is
built from bad fields. It names the model and every field refused, which is
what a user of a pydantic model expects; a refusal written by one of the
model's validators passes only when that validator refused with a ``raise``
of uncertank's (never an ``assert``, never an error of an operation).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import numbers
import pkgutil
import re
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import uncertank

PACKAGE_DIR = Path(uncertank.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]

#: The first-party plugin packages: each ``plugins/uncertank-*/uncertank_*`` folder that is a package.
PLUGIN_PACKAGES: tuple[str, ...] = tuple(sorted(
    pkg.name for dist in (REPO / "plugins").iterdir() if dist.name.startswith("uncertank-")
    for pkg in dist.iterdir() if pkg.name.startswith("uncertank_") and (pkg / "__init__.py").is_file()
))
#: The top-level packages whose code is the library's own: their ``raise`` statements give library errors.
OWN_PACKAGES: tuple[str, ...] = ("uncertank", *PLUGIN_PACKAGES)


@functools.cache
def own_dirs() -> tuple[Path, ...]:
    """The folders of :data:`OWN_PACKAGES`, as imported."""
    dirs = []
    for name in OWN_PACKAGES:
        module = importlib.import_module(name)
        dirs.append(Path(module.__file__ or "").resolve().parent)
    return tuple(dirs)

#: Library errors: what a public callable may raise on a bad input.
LIBRARY_ERRORS = (ValueError, TypeError, LookupError)


def public_modules() -> list[str]:
    """``uncertank``, each first-party plugin package, and every submodule with no private part in its name."""
    names = []
    for root in OWN_PACKAGES:
        package = importlib.import_module(root)
        names.append(root)
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            if any(part.startswith("_") for part in info.name.split(".")[1:]):
                continue
            if info.name.endswith("__main__"):
                continue
            names.append(info.name)
    return sorted(names)


@dataclass(frozen=True)
class Target:
    """One public callable: where it is exported first (the shortest module path) and the object."""

    module: str
    name: str
    obj: Any

    @property
    def id(self) -> str:
        return f"{self.module}.{self.name}"


def enumerate_targets() -> list[Target]:
    """Every public callable, once, sorted by its id."""
    seen: dict[int, Target] = {}
    for mod_name in sorted(public_modules(), key=lambda m: (m.count("."), m)):
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if not callable(obj) or id(obj) in seen or type(obj).__module__ == "typing":  # a type alias is no callable
                continue
            seen[id(obj)] = Target(mod_name, name, obj)
    return sorted(seen.values(), key=lambda t: t.id)


def is_protocol(obj: Any) -> bool:
    """Whether ``obj`` is a :class:`typing.Protocol` class: it is fuzzed with ``isinstance``, not called."""
    return isinstance(obj, type) and bool(getattr(obj, "_is_protocol", False))


def parameters(obj: Any) -> list[inspect.Parameter]:
    """The parameters a call of ``obj`` takes (``self`` and ``*args``/``**kwargs`` left out)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters.values()
            if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


def _raise_site(exc: BaseException) -> tuple[str, int]:
    """The file and line of the innermost Python frame of ``exc``'s traceback."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return "", 0
    return last.tb_frame.f_code.co_filename, last.tb_lineno


@functools.cache
def _raise_lines(filename: str) -> frozenset[int]:
    """Every line of ``filename`` that belongs to a ``raise`` statement."""
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(lines)


def _is_raise_statement(filename: str, lineno: int) -> bool:
    """Whether line ``lineno`` of ``filename`` is part of a ``raise`` statement."""
    return lineno in _raise_lines(filename)


def _project_models() -> dict[str, type]:
    """uncertank's own pydantic models and pydantic dataclasses, by class name, from its loaded modules."""
    found: dict[str, type] = {}
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or mod_name.split(".")[0] not in OWN_PACKAGES:
            continue
        for cls in list(vars(mod).values()):
            if (isinstance(cls, type) and cls.__module__ == mod_name
                    and hasattr(cls, "__pydantic_validator__")):  # a BaseModel or a pydantic dataclass
                found[cls.__name__] = cls
    return found


def _model_refusal_reason(exc: Any) -> str | None:
    """Why pydantic's ``ValidationError`` ``exc`` is raw (None when one of uncertank's models refused its fields).

    The model must be uncertank's; each error a validator raised (pydantic's
    ``value_error``) must itself be a library error by :func:`raw_reason`,
    and an ``assert`` in a validator (``assertion_error``) never is.
    """
    if exc.title not in _project_models():
        return f"ValidationError of {exc.title!r}, not a pydantic model of uncertank's"
    for err in exc.errors():
        if err["type"] == "assertion_error":
            return f"ValidationError from an assert in a validator of {exc.title} at {err['loc']}"
        inner = (err.get("ctx") or {}).get("error")
        if err["type"] == "value_error" and isinstance(inner, BaseException) and inner.__traceback__ is not None:
            reason = raw_reason(inner)
            if reason is not None:
                return f"ValidationError of {exc.title} wrapping {reason}"
    return None


def raw_reason(exc: BaseException) -> str | None:
    """Why ``exc`` is a raw error (None when it is the library's own error)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        return _model_refusal_reason(exc)
    filename, lineno = _raise_site(exc)
    where = f"{filename}:{lineno}"
    if isinstance(exc, OSError) and not str(exc).startswith("[Errno"):
        allowed = True
    else:  # a library error, or an error class of uncertank's own (ConformanceError, SamplingError...)
        allowed = isinstance(exc, LIBRARY_ERRORS) or type(exc).__module__.split(".")[0] in OWN_PACKAGES
    if not allowed:
        return f"{type(exc).__name__} raised at {where}"
    try:
        inside = any(Path(filename).resolve().is_relative_to(d) for d in own_dirs())
    except (OSError, ValueError):
        inside = False
    if not inside:
        return f"{type(exc).__name__} from a dependency at {where}"
    if not _is_raise_statement(filename, lineno):
        return f"{type(exc).__name__} from an operation, not a raise, at {where}"
    if not str(exc).strip():
        return f"{type(exc).__name__} without a message at {where}"
    return None


def documents_infinity(obj: Any) -> str:
    """What non-finite result ``obj``'s docstring promises in some case: ``""``, ``"inf"`` or ``"inf and nan"``.

    ``-inf`` for a query without a relevant candidate is a promise, and so is
    "NaN where they share none"; a NaN no docstring mentions is a failure.
    """
    doc = inspect.getdoc(obj) or ""
    nan = re.search(r"\bNaN (where|when|if)\b", doc) is not None
    inf = "``-inf``" in doc or "``inf``" in doc or "``+inf``" in doc
    return "inf and nan" if nan else "inf" if inf else ""


def non_finite(value: Any, depth: int = 0, *, allow: str = "") -> str | None:
    """Where a returned number is NaN or infinite (None when every number it holds is finite).

    Plain floats, numpy scalars and float arrays are looked at, inside tuples,
    lists and dicts, two levels deep. ``allow`` (from
    :func:`documents_infinity`) lets the documented infinities, or
    infinities and NaN, pass.
    """
    if depth > 2:
        return None
    if isinstance(value, (bool, np.bool_)):
        return None

    def bad(x: np.ndarray) -> np.ndarray:
        if "nan" in allow:
            return np.zeros(x.shape, dtype=bool)
        return np.isnan(x) if allow else ~np.isfinite(x)

    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return repr(value) if bad(np.asarray(float(value))).any() else None
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        found = bad(value)
        return f"array with {int(found.sum())} NaN or inf" if found.any() else None
    items: list[Any] = []
    if isinstance(value, (tuple, list)):
        items = list(value[:50])
    elif isinstance(value, dict):
        items = list(value.values())[:50]
    for v in items:
        found_in = non_finite(v, depth + 1, allow=allow)
        if found_in:
            return found_in
    return None


def call(target: Target, args: dict[str, Any]) -> Any:
    """Call ``target`` with keyword (or positional-only) arguments ``args``."""
    params = {p.name: p for p in parameters(target.obj)}
    positional = [args[n] for n, p in params.items() if p.kind is p.POSITIONAL_ONLY and n in args]
    keywords = {n: v for n, v in args.items() if params[n].kind is not params[n].POSITIONAL_ONLY}
    return target.obj(*positional, **keywords)


def type_hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj)
    except Exception:  # a hint that does not resolve is only a hint
        return {}


Checker = Callable[[Any], str | None]
