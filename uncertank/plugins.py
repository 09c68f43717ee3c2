"""The plugin host: built-ins and entry points, one registry per kind.

:func:`get_plugin_manager` adds the hookspecs, registers the built-in plugins
(which use the same hooks as everyone else), loads the entry points of the
group ``uncertank`` and calls ``check_pending()``. A plugin that fails to
import is reported by name with its error (a warning, and in
:func:`plugin_failures`) and does not take the host down. The environment
variable ``UNCERTANK_PLUGINS`` (a comma-separated list of entry-point names)
restricts which third-party plugins load; the built-ins always do.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

import pluggy

from uncertank import hookspecs

__all__ = [
    "ENTRY_POINT_GROUP",
    "KINDS",
    "DuplicateNameError",
    "PluginFailure",
    "PluginInfo",
    "UnknownNameError",
    "get_factory",
    "get_plugin_manager",
    "list_plugins",
    "make_ranker",
    "plugin_failures",
    "registry",
]

ENTRY_POINT_GROUP = "uncertank"
ENV_ALLOW = "UNCERTANK_PLUGINS"

Kind = Literal["rankers", "datasets", "negative_samplers", "recalibrators", "metrics"]
KINDS: tuple[Kind, ...] = ("rankers", "datasets", "negative_samplers", "recalibrators", "metrics")

#: Modules holding the built-in hookimpls, registered like any third-party plugin.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "uncertank.metrics._plugin",
    "uncertank.datasets._plugin",
    "uncertank.recalibration",
    "uncertank.baselines",
)


class UnknownNameError(ValueError):
    """A name that no registered plugin provides; the message lists those that exist."""


class DuplicateNameError(ValueError):
    """Two plugins register the same name for the same kind."""


@dataclass(frozen=True)
class PluginInfo:
    """One registered factory.

    Attributes
    ----------
    name : str
        The name users pass (``make_ranker(name)``).
    kind : str
        One of :data:`KINDS`.
    plugin : str
        The plugin that provides it (entry-point name, or the built-in module).
    distribution : str
        The installed distribution it comes from.
    version : str
        That distribution's version.
    factory : callable
        The class or function registered.
    """

    name: str
    kind: str
    plugin: str
    distribution: str
    version: str
    factory: Callable[..., Any]


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded, with its error."""

    plugin: str
    distribution: str
    error: str


_lock = threading.RLock()
_state: dict[str, Any] = {}


def _dist_of(module: ModuleType | object) -> tuple[str, str]:
    return _state.get("dists", {}).get(id(module), ("uncertank", _own_version()))


def _own_version() -> str:
    try:
        return importlib.metadata.version("uncertank")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def _allow_list() -> set[str] | None:
    raw = os.environ.get(ENV_ALLOW, "").strip()
    if not raw:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def get_plugin_manager(*, refresh: bool = False) -> pluggy.PluginManager:
    """Return the process-wide plugin manager, building it on first use.

    Parameters
    ----------
    refresh : bool
        Rebuild from scratch (after installing a plugin, or changing
        ``UNCERTANK_PLUGINS``).
    """
    with _lock:
        if refresh:
            _state.clear()
        if "pm" in _state:
            return _state["pm"]  # type: ignore[no-any-return]
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        dists: dict[int, tuple[str, str]] = {}
        failures: list[PluginFailure] = []
        own = ("uncertank", _own_version())
        for modname in BUILTIN_PLUGINS:
            module = importlib.import_module(modname)
            pm.register(module, name=modname)
            dists[id(module)] = own
        allow = _allow_list()
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if allow is not None and ep.name not in allow:
                continue
            dist = getattr(ep, "dist", None)
            dist_info = (dist.name, dist.version) if dist is not None else ("?", "?")
            if pm.has_plugin(ep.name):
                failures.append(PluginFailure(ep.name, dist_info[0], "an entry point of this name was already loaded"))
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin must not take the host down
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(PluginFailure(ep.name, dist_info[0], msg))
                warnings.warn(
                    f"uncertank plugin {ep.name!r} (distribution {dist_info[0]}) failed to load: {msg}",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            dists[id(plugin)] = dist_info
        pm.check_pending()
        _state.update(pm=pm, dists=dists, failures=failures, registries={})
        return pm


def plugin_failures() -> list[PluginFailure]:
    """Plugins whose entry point failed to import, with their errors."""
    get_plugin_manager()
    return list(_state["failures"])


def _check_kind(kind: str) -> Kind:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    return kind  # type: ignore[return-value]


def registry(kind: Kind) -> dict[str, PluginInfo]:
    """All factories of one kind, by name.

    Raises
    ------
    DuplicateNameError
        When two plugins register the same name; the message names both.
    TypeError
        When a hook returns something other than a mapping of names to callables.
    """
    _check_kind(kind)
    pm = get_plugin_manager()
    with _lock:
        cache: dict[str, dict[str, PluginInfo]] = _state["registries"]
        if kind in cache:
            return dict(cache[kind])
        caller = getattr(pm.hook, f"uncertank_{kind}")
        out: dict[str, PluginInfo] = {}
        # get_hookimpls() lists implementations in registration order.
        for impl in caller.get_hookimpls():
            plugin_name = impl.plugin_name
            result = impl.function()
            if result is None:
                continue
            if not isinstance(result, Mapping):
                raise TypeError(
                    f"plugin {plugin_name!r}: uncertank_{kind}() must return a mapping of "
                    f"names to factories; got {type(result).__name__}"
                )
            dist, version = _dist_of(impl.plugin)
            for name, factory in result.items():
                if not isinstance(name, str) or not callable(factory):
                    raise TypeError(
                        f"plugin {plugin_name!r}: uncertank_{kind}() must map str names to "
                        f"callables; got {name!r} -> {type(factory).__name__}"
                    )
                if name in out:
                    raise DuplicateNameError(
                        f"{kind[:-1].replace('_', ' ')} name {name!r} is registered by both "
                        f"plugin {out[name].plugin!r} and plugin {plugin_name!r}"
                    )
                out[name] = PluginInfo(name, kind, plugin_name, dist, version, factory)
        cache[kind] = out
        return dict(out)


def get_factory(kind: Kind, name: str) -> Callable[..., Any]:
    """The factory registered under ``name`` for ``kind``.

    Raises
    ------
    UnknownNameError
        When no plugin provides ``name``; the message lists the known names.
    """
    reg = registry(kind)
    if name not in reg:
        known = ", ".join(sorted(reg)) or "(none)"
        raise UnknownNameError(
            f"unknown {kind[:-1].replace('_', ' ')} {name!r}; known: {known}. "
            f"Install a plugin that provides it, or check `uncertank plugins`."
        )
    return reg[name].factory


def make_ranker(name: str, **params: Any) -> Any:
    """Build the ranker registered as ``name`` with ``params``.

    Examples
    --------
    >>> make_ranker("no-such-ranker")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    UnknownNameError: unknown ranker 'no-such-ranker'; known: ...
    """
    return get_factory("rankers", name)(**params)


def list_plugins(kind: Kind | None = None) -> list[PluginInfo]:
    """Everything registered, sorted by kind then name.

    Parameters
    ----------
    kind : str, optional
        Restrict to one of :data:`KINDS`.
    """
    kinds = KINDS if kind is None else (_check_kind(kind),)
    return [info for k in kinds for _, info in sorted(registry(k).items())]
