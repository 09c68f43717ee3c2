"""Loading a plugin without installing it: from a file, a folder or a dotted name, and fake entry points."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from uncertank import plugins

__all__ = ["FakeEntryPoint", "PluginModuleNotFoundError", "fake_entry_points", "load_plugin_module"]


def _package_root(path: Path) -> tuple[Path, str] | None:
    """For a file or folder inside a package, the folder to import from and the dotted name."""
    parts = [path.stem if path.is_file() else path.name]
    folder = path.parent
    if path.is_file() and path.name == "__init__.py":
        parts = []
    if path.is_dir() and not (path / "__init__.py").is_file():
        return None
    if path.is_file() and not (folder / "__init__.py").is_file():
        return None
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


def load_plugin_module(
    path_or_module: str | os.PathLike[str] | ModuleType,
    *,
    name: str | None = None,
    register: bool = True,
) -> ModuleType:
    """Import a plugin module without installing its distribution, and register it.

    Parameters
    ----------
    path_or_module : str, path or module
        A module object; a dotted module name (``"mypkg.plugin"``); a ``.py``
        file; or a package folder. A file or folder inside a package (a
        folder with ``__init__.py``) is imported under its dotted name, with
        the folder above the top package put first on ``sys.path`` so that
        the plugin's own imports (``from mypkg.ranker import ...``) work; a
        standalone file is imported under a private module name.
    name : str, optional
        The plugin's name in the registries and in ``uncertank plugins``;
        the module's name by default.
    register : bool
        Register the module with :func:`uncertank.plugins.register` (the
        default); a module already registered (its distribution is installed,
        say) is left as it is. Undo with :func:`uncertank.plugins.unregister`.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    FileNotFoundError
        When ``path_or_module`` looks like a path that does not exist.
    PluginModuleNotFoundError
        (a ModuleNotFoundError and a LookupError) When a dotted name cannot
        be imported: the message names it and the module that was missing.
    ValueError
        When a string is neither a path nor a dotted module name.
    TypeError
        When ``path_or_module`` is none of the above.

    Examples
    --------
    >>> import uncertank.baselines
    >>> load_plugin_module(uncertank.baselines).__name__  # built-ins are registered already
    'uncertank.baselines'
    """
    if isinstance(path_or_module, ModuleType):
        module = path_or_module
    elif isinstance(path_or_module, (str, os.PathLike)):
        text = os.fspath(path_or_module)
        if not text.strip():
            raise ValueError("path_or_module must be a module, a dotted module name, a .py file or a package "
                             f"folder; got the empty string {text!r}")
        looks_like_path = isinstance(path_or_module, os.PathLike) or text.endswith(".py") or os.sep in text \
            or (os.altsep is not None and os.altsep in text) or Path(text).exists()
        if not looks_like_path:
            module = _import_dotted(text)
        else:
            module = _import_path(Path(text))
    else:
        raise TypeError(
            "path_or_module must be a module, a dotted module name, a .py file or a package folder; "
            f"got {type(path_or_module).__name__}"
        )
    if register:
        pm = plugins.get_plugin_manager()
        if not pm.is_registered(module):
            plugins.register(module, name=name or module.__name__)
    return module


class PluginModuleNotFoundError(ModuleNotFoundError, LookupError):
    """A plugin module named by its dotted name is not importable (:func:`load_plugin_module`).

    A :class:`ModuleNotFoundError` (whose ``name`` is the module that was
    missing) and a :class:`LookupError`.
    """


def _import_dotted(text: str) -> ModuleType:
    """Import the module of dotted name ``text``; a name that is no module name, or no module, is refused."""
    if not text or not all(part.isidentifier() for part in text.split(".")):
        raise ValueError(f"path_or_module must be a module, a dotted module name, a .py file or a package folder; "
                         f"got the string {text!r}, which is no dotted module name and no existing path")
    try:
        return importlib.import_module(text)
    except ModuleNotFoundError as exc:
        missing = exc.name or text
        if not (text == missing or text.startswith(missing + ".")):
            raise  # the plugin itself imports something missing: its own error, as it is
        raise PluginModuleNotFoundError(
            f"path_or_module: no module named {missing!r} can be imported (to load {text!r}); install its "
            f"distribution, or give the plugin's .py file or package folder instead", name=missing,
        ) from exc


def _import_path(path: Path) -> ModuleType:
    path = path.expanduser().resolve()
    if not path.exists():
        raise FileNotFoundError(f"path_or_module must be an existing .py file or package folder; got {path}")
    if path.is_file() and path.suffix != ".py":
        raise ValueError(f"path_or_module must be a .py file or a package folder; got the file {path}")
    rooted = _package_root(path)
    if rooted is not None:
        root, dotted = rooted
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        importlib.invalidate_caches()
        return importlib.import_module(dotted)
    if path.is_dir():
        raise ValueError(f"path_or_module must be a package folder (with __init__.py); got {path}")
    modname = f"_uncertank_plugin_{path.stem}_{abs(hash(str(path))):x}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a spec
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


# -- fake entry points ----------------------------------------------------------------


class _FakeDistribution:
    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self.metadata = {"Name": name, "Version": version}

    def __repr__(self) -> str:
        return f"<fake distribution {self.name} {self.version}>"


class FakeEntryPoint:
    """An entry point of the group ``uncertank`` as an installed distribution would announce it.

    Parameters
    ----------
    name : str
        The entry-point name (the plugin's name).
    target : module, object, str or exception
        What :meth:`load` gives: a module or object is returned; a str is
        imported as a dotted module name; an exception instance (such as
        ``ImportError("no module named x")`` or ``SystemExit(1)``) is raised,
        to test how a broken plugin is reported.
    distribution : str
        The distribution's name, shown by ``uncertank plugins``.
    version : str
        The distribution's version.
    group : str
        The entry-point group; :data:`uncertank.plugins.ENTRY_POINT_GROUP`.
    """

    def __init__(
        self,
        name: str,
        target: object,
        *,
        distribution: str = "fake-dist",
        version: str = "0.0.0",
        group: str = plugins.ENTRY_POINT_GROUP,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str; got {name!r}")
        self.name = name
        self.group = group
        self.dist = _FakeDistribution(distribution, version)
        self.value = target if isinstance(target, str) else f"<{type(target).__name__}>"
        self._target = target

    def load(self) -> object:
        """Return, import or raise the target."""
        if isinstance(self._target, BaseException):
            raise self._target
        if isinstance(self._target, str):
            return importlib.import_module(self._target)
        return self._target

    def __repr__(self) -> str:
        return f"FakeEntryPoint({self.name!r}, {self.value!r}, distribution={self.dist.name!r})"


@contextmanager
def fake_entry_points(
    *entry_points: FakeEntryPoint | tuple[str, object],
    keep_installed: bool = False,
) -> Iterator[list[FakeEntryPoint]]:
    """Make the plugin host see ``entry_points`` as installed, inside a ``with`` block.

    ``importlib.metadata.entry_points`` is patched for the group ``uncertank``
    (other groups are untouched) and the plugin manager rebuilt on entry and
    again on exit, after the patch is undone.

    Parameters
    ----------
    *entry_points : FakeEntryPoint or (name, target)
        The entry points; a pair is ``FakeEntryPoint(name, target)``.
    keep_installed : bool
        Also load the entry points of the installed distributions (False:
        only the fakes, so that a test does not depend on what is installed).

    Yields
    ------
    list of FakeEntryPoint
        The fakes in effect. After changing the list, call
        ``uncertank.get_plugin_manager(refresh=True)``.

    Raises
    ------
    TypeError
        When an entry is neither a FakeEntryPoint nor a (name, target) pair.

    Examples
    --------
    >>> import warnings
    >>> from uncertank.plugins import plugin_failures
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the host warns about the broken plugin
    ...     with fake_entry_points(FakeEntryPoint("broken", SystemExit(3), distribution="broken-dist")):
    ...         print([(f.plugin, f.distribution, f.error) for f in plugin_failures()])
    [('broken', 'broken-dist', 'SystemExit: 3')]
    """
    fakes: list[FakeEntryPoint] = []
    for ep in entry_points:
        if isinstance(ep, FakeEntryPoint):
            fakes.append(ep)
        elif isinstance(ep, tuple) and len(ep) == 2 and isinstance(ep[0], str):
            fakes.append(FakeEntryPoint(ep[0], ep[1]))
        else:
            raise TypeError(
                f"entry_points must be FakeEntryPoint objects or (name, target) pairs; got {type(ep).__name__}"
            )
    original = importlib.metadata.entry_points

    def patched(**params: Any) -> Any:
        if params.get("group") != plugins.ENTRY_POINT_GROUP:
            return original(**params)
        installed = list(original(**params)) if keep_installed else []
        return installed + [ep for ep in fakes if ep.group == plugins.ENTRY_POINT_GROUP]

    importlib.metadata.entry_points = patched
    try:
        plugins.get_plugin_manager(refresh=True)
        yield fakes
    finally:
        importlib.metadata.entry_points = original
        plugins.get_plugin_manager(refresh=True)
