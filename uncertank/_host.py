"""The plugin host: the plugin manager, registration, and one registry per kind.

:func:`get_plugin_manager` adds the hookspecs, registers the built-in plugins
(which use the same hooks as everyone else), loads the entry points of the
group ``uncertank``, adds the plugins given to :func:`register`, and calls
``check_pending()``. Nothing here is loaded at import time.

What a misbehaving plugin costs is that plugin only:

- A plugin whose import fails (any exception, ``SystemExit`` included) is
  reported by name with its error: a :class:`RuntimeWarning`, an entry in
  :func:`plugin_failures` and a line in ``uncertank plugins``.
- A hook that raises when called, or returns something other than a mapping
  of names to callables, is reported the same way; the plugin's other hooks
  and every other plugin keep working.
- Two plugins registering the same name for the same kind (a third party's
  and a built-in included) disable that name only (a :class:`NameClash` in
  :func:`name_clashes`): the name stays in :func:`registry`, and looking it
  up there or with :func:`get_factory` raises :class:`DuplicateNameError`
  naming both plugins and their distributions, never "unknown".
- An entry that is neither a class nor a function (a metric: a
  :class:`~uncertank.metrics.Metric` or a function) is refused with an error
  naming the plugin and the entry; see :func:`check_entry`.

Everything here is public through :mod:`uncertank.plugins`; the records
and the rule for entries live in :mod:`uncertank._plugin_entries`.

The environment variable ``UNCERTANK_PLUGINS`` (a comma-separated list of
entry-point names) restricts which third-party plugins load; the built-ins
always do, and a listed name that no installed distribution provides is
warned about.
"""


from __future__ import annotations

import importlib
import importlib.metadata
import os
import threading
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import pluggy

from uncertank import hookspecs
from uncertank._plugin_entries import (
    ENTRY_POINT_GROUP,
    ENV_ALLOW,
    KINDS,
    Kind,
    NameClash,
    PluginFailure,
    PluginInfo,
    Registry,
    check_entry,
    check_kind,
    entry_problem,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "get_factory",
    "get_plugin_manager",
    "make_ranker",
    "name_clashes",
    "plugin_failures",
    "register",
    "registry",
    "unregister",
]

#: Modules holding the built-in hookimpls, registered like any third-party plugin.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "uncertank.metrics._plugin",
    "uncertank.datasets._plugin",
    "uncertank.recalibration",
    "uncertank.baselines",
)


class _HostPluginManager(pluggy.PluginManager):
    """A pluggy manager whose ``register``/``unregister`` invalidate the cached registries."""

    def register(self, plugin: object, name: str | None = None) -> str | None:
        out = super().register(plugin, name)
        _invalidate()
        return out

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        out = super().unregister(plugin, name)
        _invalidate()
        return out


_lock = threading.RLock()
_state: dict[str, Any] = {}
#: Plugins added with :func:`register`: (plugin, name, distribution, version). They survive a refresh.
_runtime: list[tuple[object, str, str, str]] = []


def singular(kind: str) -> str:
    return kind[:-1].replace("_", " ")


def _invalidate() -> None:
    with _lock:
        if "registries" in _state:
            _state["registries"] = {}
            _state["hook_failures"] = {}
            _state["clashes"] = {}


def _dist_of(module: object) -> tuple[str, str]:
    return _state.get("dists", {}).get(id(module), ("uncertank", _own_version()))  # type: ignore[no-any-return]


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


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def get_plugin_manager(*, refresh: bool = False) -> pluggy.PluginManager:
    """Return the process-wide plugin manager, building it on first use.

    Building adds the hookspecs, registers the built-ins, loads the entry
    points of the group :data:`ENTRY_POINT_GROUP` (restricted by
    ``UNCERTANK_PLUGINS``), re-adds the plugins given to :func:`register` and
    calls ``check_pending()``, so that a hookimpl named after no hook (a typo
    such as ``uncertank_rankerz``) fails loudly.

    Parameters
    ----------
    refresh : bool
        Rebuild from scratch (after installing a plugin, or changing
        ``UNCERTANK_PLUGINS``). Plugins added with :func:`register` are kept.

    Returns
    -------
    pluggy.PluginManager
        Its ``register`` and ``unregister`` invalidate the cached registries,
        like :func:`register` and :func:`unregister` do.

    Raises
    ------
    pluggy.PluginValidationError
        When a plugin implements a hook that does not exist.
    """
    with _lock:
        if refresh:
            _state.clear()
        if "pm" in _state:
            return _state["pm"]  # type: ignore[no-any-return]
        pm = _HostPluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        dists: dict[int, tuple[str, str]] = {}
        failures: list[PluginFailure] = []
        own = ("uncertank", _own_version())
        for modname in BUILTIN_PLUGINS:
            module = importlib.import_module(modname)
            pm.register(module, name=modname)
            dists[id(module)] = own
        allow = _allow_list()
        seen: set[str] = set()
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            seen.add(ep.name)
            if allow is not None and ep.name not in allow:
                continue
            dist = getattr(ep, "dist", None)
            dist_info = (dist.name, dist.version) if dist is not None else ("?", "?")
            if pm.has_plugin(ep.name):
                failures.append(PluginFailure(
                    ep.name, dist_info[0],
                    f"an entry point of this name was already loaded (from {_dist_of(pm.get_plugin(ep.name))[0]})",
                ))
                _warn(f"uncertank plugin {ep.name!r} (distribution {dist_info[0]}) skipped: {failures[-1].error}")
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except (Exception, SystemExit) as exc:  # a broken plugin must not take the host down
                msg = f"{type(exc).__name__}: {exc}"
                failures.append(PluginFailure(ep.name, dist_info[0], msg))
                _warn(f"uncertank plugin {ep.name!r} (distribution {dist_info[0]}) failed to load: {msg}")
                continue
            dists[id(plugin)] = dist_info
        if allow is not None:
            missing = sorted(allow - seen)
            if missing:
                _warn(
                    f"{ENV_ALLOW} names {', '.join(map(repr, missing))}, but no installed distribution "
                    f"has an entry point of that name in group {ENTRY_POINT_GROUP!r}; "
                    f"installed: {', '.join(sorted(seen)) or '(none)'}"
                )
        for plugin, name, dist_name, version in list(_runtime):
            try:
                pm.register(plugin, name=name)
            except ValueError as exc:  # an entry point of that name (or that module) loaded meanwhile
                failures.append(PluginFailure(name, dist_name, f"not registered again: {exc}"))
                _warn(f"uncertank plugin {name!r} (added with register()) not registered again: {exc}")
                _runtime.remove((plugin, name, dist_name, version))
                continue
            dists[id(plugin)] = (dist_name, version)
        pm.check_pending()
        _state.update(pm=pm, dists=dists, failures=failures, registries={}, hook_failures={}, clashes={})
        return pm


def _guess_distribution(plugin: object) -> tuple[str, str]:
    module = plugin.__name__ if isinstance(plugin, ModuleType) else getattr(plugin, "__module__", None)
    top = str(module or "").split(".")[0]
    if top:
        try:
            names = importlib.metadata.packages_distributions().get(top, [])
        except Exception:  # pragma: no cover - broken metadata elsewhere must not break register()
            names = []
        if names:
            try:
                return names[0], importlib.metadata.version(names[0])
            except importlib.metadata.PackageNotFoundError:  # pragma: no cover
                return names[0], "?"
    return "(not installed)", "-"


def register(
    plugin: object,
    name: str | None = None,
    *,
    distribution: str | None = None,
    version: str | None = None,
) -> str:
    """Add a plugin (a module, class or object with hookimpls) in this process.

    Registries built before are invalidated, so a name looked up before
    registering is found afterwards. The plugin stays registered across
    ``get_plugin_manager(refresh=True)`` until :func:`unregister`.

    Parameters
    ----------
    plugin : module or object
        Anything with functions marked ``@uncertank.hookimpl``.
    name : str, optional
        The plugin's name in reports; pluggy's default (the module's name,
        or an id) when omitted.
    distribution, version : str, optional
        Shown by ``uncertank plugins``; looked up from the installed
        distribution that provides the plugin's top-level package when
        omitted (``"(not installed)"`` when none does).

    Returns
    -------
    str
        The name the plugin is registered under.

    Raises
    ------
    ValueError
        When the plugin, or another plugin of that name, is already registered.
    pluggy.PluginValidationError
        When the plugin implements a hook that does not exist (it is then
        not registered).
    TypeError
        When one of its hooks returns something other than a mapping, or an
        entry that breaks the rule of :func:`check_entry`; the message names
        the plugin and the entry, and the plugin is not registered. (The
        plugin's hooks are called once here, so that a mistake is named at
        once; an exception a hook raises is passed on the same way.)

    Examples
    --------
    >>> import types, uncertank
    >>> from uncertank.plugins import register, unregister, registry
    >>> mod = types.ModuleType("constant_plugin")
    >>> @uncertank.hookimpl
    ... def uncertank_rankers():
    ...     return {"constant": lambda: uncertank.CallableRanker(lambda c, x: [0.5] * len(x))}
    >>> mod.uncertank_rankers = uncertank_rankers
    >>> "constant" in registry("rankers")
    False
    >>> register(mod)
    'constant_plugin'
    >>> "constant" in registry("rankers")
    True
    >>> unregister(mod)
    >>> "constant" in registry("rankers")
    False
    """
    with _lock:
        pm = get_plugin_manager()
        if distribution is None or version is None:
            guess = _guess_distribution(plugin)
            distribution = guess[0] if distribution is None else distribution
            version = guess[1] if version is None else version
        registered = pm.register(plugin, name=name)
        if registered is None:  # pragma: no cover - pluggy returns None only for blocked names
            raise ValueError(f"plugin name {name!r} is blocked in this plugin manager")
        try:
            pm.check_pending()
            _check_hooks_now(pm, plugin, registered)
        except BaseException:
            pm.unregister(plugin)
            raise
        _state["dists"][id(plugin)] = (distribution, version)
        _runtime.append((plugin, registered, distribution, version))
        return registered


def _check_hooks_now(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Call ``plugin``'s hooks and check every entry (:func:`check_entry`); raise TypeError naming it."""
    for caller in pm.get_hookcallers(plugin) or []:
        kind = caller.name.removeprefix("uncertank_")
        if kind not in KINDS:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            result = impl.function()
            if result is None:
                continue
            if not isinstance(result, Mapping):
                raise TypeError(f"plugin {name!r}: {caller.name}() must return a mapping of names to entries; "
                                f"got {type(result).__name__}")
            for key, entry in result.items():
                check_entry(kind, key, entry, plugin=name)  # type: ignore[arg-type]


def unregister(plugin: object | None = None, *, name: str | None = None) -> None:
    """Remove a plugin added with :func:`register` (or any plugin, by name).

    Parameters
    ----------
    plugin : module or object, optional
        The plugin object.
    name : str, optional
        Or its registered name.

    Raises
    ------
    ValueError
        When neither or both are given, or no such plugin is registered.
    """
    if (plugin is None) == (name is None):
        raise ValueError("unregister needs exactly one of plugin or name; got "
                         + ("neither" if plugin is None else "both"))
    with _lock:
        pm = get_plugin_manager()
        if plugin is not None and not pm.is_registered(plugin):
            raise ValueError(f"plugin {plugin!r} is not registered")
        if name is not None:
            plugin = pm.get_plugin(name)
            if plugin is None:
                known = ", ".join(sorted(n for n, _ in pm.list_name_plugin())) or "(none)"
                raise ValueError(f"no plugin named {name!r} is registered; registered: {known}")
        pm.unregister(plugin)
        _runtime[:] = [entry for entry in _runtime if entry[0] is not plugin]
        _state["dists"].pop(id(plugin), None)


def _build_registry(kind: Kind, pm: pluggy.PluginManager) -> tuple[
    Registry, list[PluginFailure], list[NameClash]
]:
    hook = f"uncertank_{kind}"
    caller = getattr(pm.hook, hook)
    found: dict[str, list[PluginInfo]] = {}
    failures: list[PluginFailure] = []

    def fail(plugin_name: str, dist: str, error: str) -> None:
        failures.append(PluginFailure(plugin_name, dist, error, hook))
        _warn(f"uncertank plugin {plugin_name!r} (distribution {dist}): {hook}() {error}")

    # get_hookimpls() lists implementations in registration order.
    for impl in caller.get_hookimpls():
        plugin_name = impl.plugin_name
        dist, version = _dist_of(impl.plugin)
        try:
            result = impl.function()
        except (Exception, SystemExit) as exc:  # a broken hook must not take the host down
            fail(plugin_name, dist, f"raised {type(exc).__name__}: {exc}")
            continue
        if result is None:
            continue
        if not isinstance(result, Mapping):
            fail(plugin_name, dist, f"must return a mapping of names to factories; got {type(result).__name__}")
            continue
        for name, factory in result.items():
            if not isinstance(name, str) or not name:
                fail(plugin_name, dist, f"must map non-empty str names to entries; got the name {name!r} "
                                        "(entry skipped)")
                continue
            problem = entry_problem(kind, factory)
            if problem is not None:
                fail(plugin_name, dist, f"entry {name!r} {problem} (entry skipped)")
                continue
            found.setdefault(name, []).append(PluginInfo(name, kind, plugin_name, dist, version, factory))
    out: dict[str, PluginInfo] = {}
    clashes: list[NameClash] = []
    for name, infos in found.items():
        if len(infos) == 1:
            out[name] = infos[0]
        else:
            clash = NameClash(kind, name, tuple(infos))
            clashes.append(clash)
            _warn(clash.describe())
    return Registry(kind, out, {c.name: c for c in clashes}, list(found)), failures, clashes


def _entry(kind: Kind) -> tuple[Registry, list[PluginFailure], list[NameClash]]:
    pm = get_plugin_manager()
    with _lock:
        cache: dict[str, Registry] = _state["registries"]
        if kind not in cache:
            reg, failures, clashes = _build_registry(kind, pm)
            cache[kind] = reg
            _state["hook_failures"][kind] = failures
            _state["clashes"][kind] = clashes
        return cache[kind], _state["hook_failures"][kind], _state["clashes"][kind]


def registry(kind: Kind) -> Registry:
    """Every registered name of one kind.

    A name registered by more than one plugin is listed but disabled:
    looking it up raises :class:`DuplicateNameError` naming them all (see
    :class:`Registry` and :func:`name_clashes`); it is never reported as
    unknown. Hooks that raise or return something malformed, and entries
    that break the rule of :func:`check_entry`, are skipped and reported
    (see :func:`plugin_failures`). The result is cached until a plugin is
    registered or unregistered.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.

    Returns
    -------
    Registry
        A read-only mapping of name to :class:`PluginInfo`, a fresh copy.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    check_kind(kind)
    return _entry(kind)[0].copy()


def plugin_failures() -> list[PluginFailure]:
    """Plugins that failed to import, and hooks that failed when called.

    Calls every hook once (they only return factories) so that the list is complete.
    """
    get_plugin_manager()
    hook_failures = [f for kind in KINDS for f in _entry(kind)[1]]
    return list(_state["failures"]) + hook_failures


def name_clashes(kind: Kind | None = None) -> list[NameClash]:
    """Names disabled because several plugins register them.

    Parameters
    ----------
    kind : str, optional
        Restrict to one of :data:`KINDS`.
    """
    kinds = KINDS if kind is None else (check_kind(kind),)
    return [clash for k in kinds for clash in _entry(k)[2]]


def get_factory(kind: Kind, name: str) -> Callable[..., Any]:
    """The factory registered under ``name`` for ``kind``.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    name : str
        A registered name.

    Returns
    -------
    callable
        The class or function the plugin registered (not called).

    Raises
    ------
    UnknownNameError
        When no plugin provides ``name``; the message lists the known names.
    DuplicateNameError
        When several plugins register ``name``; the message names them all.

    Examples
    --------
    >>> get_factory("recalibrators", "platt").__name__
    'PlattScaling'
    """
    check_kind(kind)
    return _entry(kind)[0][name].factory


def make_ranker(name: str, **params: Any) -> Any:
    """Build the ranker registered as ``name`` with ``params``.

    Parameters
    ----------
    name : str
        A registered ranker name (``uncertank plugins --kind rankers``).
    **params
        Passed to the factory.

    Returns
    -------
    Ranker
        The built ranker, checked to satisfy :class:`uncertank.Ranker` (a
        ``name`` str attribute and a callable ``predict``).

    Raises
    ------
    UnknownNameError
        When no plugin provides ``name``.
    DuplicateNameError
        When several plugins do.
    TypeError
        When the factory returns something that is not a ranker; the
        message names the plugin and what is missing.

    Examples
    --------
    >>> make_ranker("no-such-ranker")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    UnknownNameError: unknown ranker 'no-such-ranker'; known: ...
    """
    factory = get_factory("rankers", name)
    ranker = factory(**params)
    problems = []
    if not isinstance(getattr(ranker, "name", None), str):
        problems.append(f"a str attribute 'name' (got {type(getattr(ranker, 'name', None)).__name__})")
    if not callable(getattr(ranker, "predict", None)):
        problems.append("a callable 'predict(queries)'")
    if problems:
        info = registry("rankers")[name]
        raise TypeError(
            f"ranker factory {name!r} of plugin {info.plugin!r} (distribution {info.distribution}) returned "
            f"{type(ranker).__name__}, which does not satisfy uncertank.Ranker: it lacks {' and '.join(problems)}"
        )
    return ranker
