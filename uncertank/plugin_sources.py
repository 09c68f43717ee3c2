"""The source digest of a plugin: what a study's cache keys hold so that editing a plugin's code makes them stale.

:func:`plugin_source_digest` finds the files of the plugin that provides a
registered name (through the host, :mod:`uncertank.plugins`) and digests
their bytes.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import json
import sys
import warnings
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType

from uncertank.plugins import Kind, check_kind, get_plugin_manager, registry, singular

__all__ = ["plugin_source_digest"]


def _defining_module(obj: object) -> str | None:
    """The module that defines a registry entry: its own for a class or function, else its class's."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    fn = getattr(obj, "fn", None)  # a Metric: the function it wraps
    if fn is not None and not isinstance(obj, (type, FunctionType)) and callable(fn):
        obj = fn
    if isinstance(obj, MethodType):
        obj = obj.__func__
    if isinstance(obj, (type, FunctionType, BuiltinFunctionType)):
        return getattr(obj, "__module__", None)
    return type(obj).__module__


def _package_files(module_name: str) -> dict[str, Path]:
    """The .py files of ``module_name``'s top-level package (or the module's own file), by relative name."""
    top = sys.modules.get(module_name.split(".")[0])
    own = sys.modules.get(module_name)
    out: dict[str, Path] = {}
    top_file = getattr(top, "__file__", None)
    if top is not None and top_file and getattr(top, "__path__", None) is not None:
        root = Path(top_file).resolve().parent
        for f in root.rglob("*.py"):
            if "__pycache__" not in f.parts:
                out[f"{root.name}/{f.relative_to(root).as_posix()}"] = f
    own_file = getattr(own, "__file__", None)
    if own_file and Path(own_file).suffix == ".py" and Path(own_file).is_file():
        path = Path(own_file).resolve()
        if path not in out.values():
            out[f"{module_name.replace('.', '/')}{'/__init__' if path.name == '__init__.py' else ''}.py"] = path
    return out


def _distribution_files(dist_name: str) -> dict[str, Path]:
    """The .py files a distribution's RECORD lists (none for an editable install, whose code is elsewhere)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return {}
    out: dict[str, Path] = {}
    for f in dist.files or []:
        if f.suffix == ".py" and not f.name.startswith("__editable__") and ".." not in f.parts:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                out[f.as_posix()] = path
    return out


def plugin_source_digest(kind: Kind, name: str) -> str:
    """Hex SHA-256 of the source of the plugin that provides ``name``: changes whenever its code does.

    The files digested, each by its path relative to its package's parent
    folder and the SHA-256 of its bytes:

    - every ``.py`` file of the top-level package that defines the factory
      (for a :class:`~uncertank.metrics.Metric`, of its function; for a
      callable object, of its class), and of the package of the plugin
      module that registers it (for a module outside any package: that
      file);
    - every ``.py`` file the distribution providing the plugin lists in its
      metadata (a normal install). An editable install lists none of its
      code; its files are the package folders above, found from the
      modules' ``__file__``, in the source tree.

    A study's cache key includes it, so that editing a plugin's code, not
    only bumping its version, makes its cached steps stale. A factory with
    no source file anywhere (defined at an interactive prompt) is digested
    by its ``inspect.getsource`` text where there is one, and otherwise by
    its qualified name only, with a RuntimeWarning: such a step cannot be
    told stale.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    name : str
        A registered name.

    Returns
    -------
    str
        64 hex digits.

    Raises
    ------
    UnknownNameError, DuplicateNameError
        As :func:`get_factory`.

    Examples
    --------
    >>> len(plugin_source_digest("rankers", "bm25"))
    64
    """
    check_kind(kind)
    info = registry(kind)[name]
    plugin = get_plugin_manager().get_plugin(info.plugin)
    modules = [_defining_module(info.factory)]
    if plugin is not None:
        modules.append(plugin.__name__ if isinstance(plugin, ModuleType) else _defining_module(plugin))
    files: dict[str, Path] = {}
    for module in modules:
        if module:
            files.update(_package_files(module))
    files.update(_distribution_files(info.distribution))
    h = hashlib.sha256()
    if files:
        by_path: dict[Path, str] = {}
        for rel, path in sorted(files.items()):
            by_path.setdefault(path.resolve(), rel)
        for path, rel in sorted(by_path.items(), key=lambda item: item[1]):
            h.update(f"{rel}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
        return h.hexdigest()
    try:
        source = inspect.getsource(info.factory)
    except (OSError, TypeError):
        warnings.warn(f"no source found for {singular(kind)} {name!r} of plugin {info.plugin!r}: its digest is that "
              "of its qualified name only, so an edit to it cannot be detected", RuntimeWarning, stacklevel=2)
        source = f"{modules[0]}.{getattr(info.factory, '__qualname__', type(info.factory).__qualname__)}"
    h.update(json.dumps(["source", source]).encode())
    return h.hexdigest()
