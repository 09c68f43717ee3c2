"""The plugin host: built-ins and entry points, one registry per kind.

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

The module reads top to bottom: the kinds, the records (:class:`PluginInfo`,
:class:`PluginFailure`, :class:`NameClash`), the rule for hook entries and
:class:`Registry`; then the manager, registration and lookups
(:func:`make_ranker`, :func:`list_plugins`). The tooling around the host has
modules of its own: the source digest of a plugin
(:mod:`uncertank.plugin_sources`), :func:`~uncertank.plugin_packages.lazy_exports`
for light plugin packages (:mod:`uncertank.plugin_packages`) and the
``uncertank plugins`` listing (:mod:`uncertank.plugin_listing`). Their public
names are still found here (``uncertank.plugins.plugin_source_digest``, as
docs/plugins.md names them), imported on first use.

The environment variable ``UNCERTANK_PLUGINS`` (a comma-separated list of
entry-point names) restricts which third-party plugins load; the built-ins
always do, and a listed name that no installed distribution provides is
warned about.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import inspect
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType
from typing import Any, Literal, cast

import pluggy

from uncertank import hookspecs
from uncertank.hookspecs import dataset_loader_capabilities
from uncertank.plugin_packages import lazy_exports
from uncertank.protocols import CapabilityError, Ranker
from uncertank.validation import check_bool, check_choice, check_instance, check_name, check_names

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "ENV_ALLOW",
    "KINDS",
    "DuplicateNameError",
    "Kind",
    "NameClash",
    "PluginFailure",
    "PluginInfo",
    "Registry",
    "UnknownNameError",
    "UnknownParameterError",
    "check_entry",
    "get_factory",
    "get_plugin_manager",
    "list_plugins",
    "make_ranker",
    "name_clashes",
    "plugin_failures",
    "register",
    "registry",
    "unregister",
]

#: The entry-point group a distribution announces its plugin module in.
ENTRY_POINT_GROUP = "uncertank"
#: The environment variable restricting which entry points load.
ENV_ALLOW = "UNCERTANK_PLUGINS"

Kind = Literal["rankers", "datasets", "negative_samplers", "recalibrators", "metrics"]
#: The kinds of things plugins register, one hook ``uncertank_<kind>`` each.
KINDS: tuple[Kind, ...] = ("rankers", "datasets", "negative_samplers", "recalibrators", "metrics")

class UnknownNameError(ValueError, KeyError):
    """A name that no registered plugin provides; the message lists those that exist.

    Raised by :func:`get_factory` (and so by :func:`make_ranker`,
    :func:`uncertank.datasets.load`, ...) and by ``registry(kind)[name]``.
    A subclass of :class:`ValueError` and of :class:`KeyError` (so that
    ``registry(kind).get(name)`` gives None).
    """

    __str__ = ValueError.__str__  # KeyError's would quote the message


class UnknownParameterError(TypeError):
    """A registered ranker's factory was given a keyword it does not take (:func:`make_ranker`).

    The message names the ranker, the keyword, a close match and the
    keywords it takes; Python's own TypeError is chained. A TypeError, as
    Python raises for an unknown keyword.

    Attributes
    ----------
    ranker : str
        The registered name.
    parameter : str
        The keyword it does not take.
    known : list of str
        The keywords it takes, as far as its signatures say.
    complete : bool
        Whether ``known`` is every one (False where a ``**params`` is passed on
        beyond what can be read).
    """

    def __init__(self, ranker: str, parameter: str, known: list[str], complete: bool) -> None:
        check_name(ranker, "ranker")
        check_name(parameter, "parameter")
        known = check_names(known, "known")
        complete = check_bool(complete, "complete")
        self.ranker, self.parameter, self.known, self.complete = ranker, parameter, list(known), complete
        close = difflib.get_close_matches(parameter, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        takes = f" It takes {', '.join(known)}{'' if complete else ', ...'}." if known else ""
        super().__init__(f"ranker {ranker!r} takes no parameter {parameter!r}{hint}{takes}")


_UNEXPECTED = re.compile(r"unexpected keyword argument '(\w+)'")


def _factory_keywords(factory: Callable[..., object]) -> tuple[list[str], bool]:
    """The keyword parameters ``factory`` takes, and whether the list is complete.

    A class's ``__init__`` that passes ``**params`` on is followed up its
    base classes (``MCDropoutRanker`` -> ``NeuralRanker``); a function's own
    names are all that is known when it takes ``**params``.
    """
    names: list[str] = []
    chain = [vars(c)["__init__"] for c in factory.__mro__ if "__init__" in vars(c)] if isinstance(factory, type) \
        else [factory]
    for fn in chain:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return names, False
        names += [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                  and p.name != "self" and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names, True
    return names, False


def _refused_keyword(name: str, factory: Callable[..., object], params: Mapping[str, object],
                     exc: TypeError) -> UnknownParameterError | None:
    """The library's error for Python's ``unexpected keyword argument`` of one of ``params``; None for another."""
    match = _UNEXPECTED.search(str(exc))
    if match is None or match.group(1) not in params:
        return None
    key = match.group(1)
    named, complete = _factory_keywords(factory)
    if not complete:  # a factory function, or **params passed on: read the class it builds without the key
        try:
            cls: type | None = type(factory(**{k: v for k, v in params.items() if k != key}))
        except Exception:
            cls = None
        if cls is not None:
            named, complete = _factory_keywords(cls)
            # the class that refused it, as Python names it ("NeuralRanker.__init__() got ..."), seen from
            # the module of the class built: where its **params went
            refused = re.match(r"(\w+)\.__init__\(\)", str(exc))
            target = getattr(sys.modules.get(cls.__module__), refused.group(1), None) if refused else None
            if not complete and isinstance(target, type) and target is not cls:
                more, complete = _factory_keywords(target)
                named += [n for n in more if n not in named]
    return UnknownParameterError(name, key, named, complete)


class DuplicateNameError(ValueError):
    """A name registered by two or more plugins for the same kind.

    The name is disabled (every other name keeps working); looking it up with
    :func:`get_factory` raises this error, whose message names every plugin
    and distribution that registers it. A subclass of :class:`ValueError`.
    """


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
    """A plugin that could not be loaded, or one of its hooks that failed.

    Attributes
    ----------
    plugin : str
        The plugin's name (its entry-point name for an installed plugin).
    distribution : str
        The distribution it comes from (``"?"`` when unknown).
    error : str
        ``"ExceptionType: message"`` (or what was wrong with the hook's result).
    hook : str or None
        The hook that failed, such as ``"uncertank_rankers"``; None when the
        plugin itself failed to import.
    """

    plugin: str
    distribution: str
    error: str
    hook: str | None = None


@dataclass(frozen=True)
class NameClash:
    """A name registered by several plugins for one kind: that name is disabled.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    name : str
        The clashing name.
    providers : tuple of PluginInfo
        Every registration of the name, in registration order.
    """

    kind: str
    name: str
    providers: tuple[PluginInfo, ...]

    def describe(self) -> str:
        """One sentence naming every plugin and distribution involved."""
        who = " and ".join(
            f"plugin {p.plugin!r} (distribution {p.distribution} {p.version})" for p in self.providers
        )
        return (
            f"{singular(self.kind)} name {self.name!r} is registered by both {who}; "
            f"the name is disabled until one of them is uninstalled or unregistered "
            f"(every other name keeps working)"
        )


def singular(kind: str) -> str:
    """The singular of a kind, for messages (``"negative_samplers"`` -> ``"negative sampler"``)."""
    return kind[:-1].replace("_", " ")


def check_kind(kind: str) -> Kind:
    """``kind`` if it is one of :data:`KINDS`; ValueError listing them otherwise (an array or a dict too)."""
    return check_choice(kind, "kind", KINDS)


_FUNCTION_TYPES = (FunctionType, BuiltinFunctionType, MethodType, functools.partial)


def entry_problem(kind: str, entry: object) -> str | None:
    """What is wrong with ``entry`` as a registry entry of ``kind``, or None; see :func:`check_entry`."""
    if kind == "metrics":
        # The host sits below the metrics package and does not import it: a Metric
        # can exist only once its module is loaded, so the module is looked up there.
        metric_module = sys.modules.get("uncertank.metrics.metric")
        if isinstance(entry, _FUNCTION_TYPES) or (
            metric_module is not None and isinstance(entry, metric_module.Metric)
        ):
            return None
        want = "a uncertank.metrics.Metric or a function"
    else:
        if isinstance(entry, type) or isinstance(entry, _FUNCTION_TYPES):
            return None
        if kind == "datasets" and callable(entry) and dataset_loader_capabilities(entry).cacheable is not None:
            return None  # a cacheable loader object, like the built-in "tsv:"
        want = "a class or a function (a factory)"
        if kind == "datasets":
            want += ", or a callable loader object with a cache_token method"
    if isinstance(entry, type):
        got = f"the class {entry.__qualname__}"
    elif callable(entry):
        got = f"an instance of {type(entry).__qualname__} (a callable object); register its class or a function"
    else:
        got = f"{type(entry).__name__} {entry!r}"[:200]
    return f"must be {want}; got {got}"


def check_entry(kind: Kind, name: object, entry: object, *, plugin: str = "?") -> None:
    """Check one entry of a hook's mapping against the rule for hook entries.

    The rule (docs/plugins.md, "What a hook returns"): a name is a non-empty
    str; an entry of ``uncertank_rankers``, ``uncertank_datasets``,
    ``uncertank_negative_samplers`` or ``uncertank_recalibrators`` is a
    class or a function (a plain function, a bound method, a builtin or a
    ``functools.partial``) that the host calls when it needs an object; a
    dataset may also be a callable loader object with a ``cache_token``
    method (so that :func:`uncertank.datasets.load` can cache it); an entry
    of ``uncertank_metrics`` is a :class:`uncertank.metrics.Metric` or a
    function (wrapped by :func:`uncertank.metrics.as_metric`). Anything else,
    a callable instance of some other class say, is refused.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    name : str
        The entry's name.
    entry : object
        What the hook maps the name to.
    plugin : str
        The plugin's name, for the message.

    Raises
    ------
    TypeError
        Naming the plugin, the hook, the entry and what was wrong.

    Examples
    --------
    >>> check_entry("rankers", "bm25", object(), plugin="mine")
    Traceback (most recent call last):
    TypeError: plugin 'mine': uncertank_rankers() entry 'bm25' must be a class or a function (a factory); got object <object object at ...>
    """  # noqa: E501
    check_kind(kind)
    if not isinstance(name, str) or not name:
        raise TypeError(f"plugin {plugin!r}: uncertank_{kind}() must map non-empty str names to entries; "
                        f"got the name {name!r}")
    problem = entry_problem(kind, entry)
    if problem is not None:
        raise TypeError(f"plugin {plugin!r}: uncertank_{kind}() entry {name!r} {problem}")


class Registry(Mapping[str, PluginInfo]):
    """The registered names of one kind: what :func:`registry` returns.

    A read-only mapping from name to :class:`PluginInfo`. A name that
    several plugins register is in it (``name in reg`` is True) but
    disabled: ``reg[name]`` and ``reg.get(name)`` raise
    :class:`DuplicateNameError` naming every provider. An unknown name gives
    :class:`UnknownNameError` (a KeyError, so ``reg.get(name)`` is None).
    Iterating ``items()`` or ``values()`` therefore raises on a clash;
    :meth:`usable` gives the names that resolve.
    """

    def __init__(self, kind: str, usable: Mapping[str, PluginInfo], clashes: Mapping[str, NameClash],
                 order: list[str]) -> None:
        check_kind(kind)
        check_instance(usable, "usable", Mapping, "a mapping of PluginInfo by name")
        check_instance(clashes, "clashes", Mapping, "a mapping of NameClash by name")
        check_names(order, "order")
        self.kind = kind
        self._usable = dict(usable)
        self._clashes = dict(clashes)
        self._order = list(order)

    def __getitem__(self, name: str) -> PluginInfo:
        if isinstance(name, str) and name in self._usable:  # a name is a str: an array or a dict is unknown
            return self._usable[name]
        if isinstance(name, str) and name in self._clashes:
            raise DuplicateNameError(self._clashes[name].describe())
        known = ", ".join(sorted(self._order)) or "(none)"
        raise UnknownNameError(
            f"unknown {singular(self.kind)} {name!r}; known: {known}. "
            f"Install a plugin that provides it, or check `uncertank plugins`."
        )

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._usable or name in self._clashes)

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def usable(self) -> dict[str, PluginInfo]:
        """The names that resolve (every name but the clashing ones), as a fresh dict."""
        return dict(self._usable)

    def copy(self) -> Registry:
        """A fresh registry of the same names."""
        return Registry(self.kind, self._usable, self._clashes, self._order)

    def __repr__(self) -> str:
        clashing = f", clashing={sorted(self._clashes)}" if self._clashes else ""
        return f"Registry({self.kind!r}, names={sorted(self._usable)}{clashing})"

# --------------------------------------------------------------------------- the manager, registration and lookups

#: Modules holding the built-in hookimpls, registered like any third-party plugin.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "uncertank.metrics._builtin_metrics",
    "uncertank.datasets._builtin_datasets",
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
    refresh = check_bool(refresh, "refresh")
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
    if not isinstance(plugin, (ModuleType, type)) and not _has_hookimpls(plugin):
        check_instance(plugin, "plugin", (ModuleType, type), "a module, a class or an object with @hookimpl methods")
    for value, what in ((name, "name"), (distribution, "distribution"), (version, "version")):
        if value is not None:
            check_name(value, what)
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


def _has_hookimpls(plugin: object) -> bool:
    """Whether an attribute of ``plugin`` is marked with ``@hookimpl`` (read without running a property)."""
    marker = hookspecs.PROJECT + "_impl"
    return any(hasattr(inspect.getattr_static(plugin, attr, None), marker) for attr in dir(plugin))


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
                check_entry(kind, key, entry, plugin=name)


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
    if plugin is not None and not isinstance(plugin, (ModuleType, type)) and not _has_hookimpls(plugin):
        check_instance(plugin, "plugin", (ModuleType, type), "a module, a class or an object with @hookimpl methods")
    if name is not None:
        check_name(name, "name")
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


def make_ranker(name: str, /, **params: object) -> Ranker:
    """Build the ranker registered as ``name`` with ``params``.

    Parameters
    ----------
    name : str
        A registered ranker name (``uncertank plugins --kind rankers``);
        positional only, so that a ranker's own ``name`` parameter (the
        name shown in reports) can be among ``params``.
    **params
        Passed to the factory.

    Returns
    -------
    Ranker
        The built ranker, checked to satisfy :class:`uncertank.Ranker` (a
        ``name`` str attribute and a callable ``predict``), and typed so.
        A caller that uses more narrows it with ``isinstance``: against a
        capability (:class:`uncertank.StochasticRanker`,
        :class:`uncertank.Trainable`, ...) or the ranker's own class.

    Raises
    ------
    UnknownNameError
        When no plugin provides ``name``.
    DuplicateNameError
        When several plugins do.
    UnknownParameterError
        (a TypeError) When ``params`` holds a keyword the factory does not
        take: the message names it, a close match and those it takes.
    CapabilityError
        (a TypeError) When the factory returns something that is not a
        ranker; the message names the plugin and what is missing.

    Examples
    --------
    >>> make_ranker("no-such-ranker")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    UnknownNameError: unknown ranker 'no-such-ranker'; known: ...
    """
    factory = get_factory("rankers", name)
    try:
        ranker: object = factory(**params)
    except TypeError as exc:
        unknown = _refused_keyword(name, factory, params, exc)
        if unknown is None:
            raise
        raise unknown from exc
    problems = []
    if not isinstance(getattr(ranker, "name", None), str):
        problems.append(f"a str attribute 'name' (got {type(getattr(ranker, 'name', None)).__name__})")
    if not callable(getattr(ranker, "predict", None)):
        problems.append("a callable 'predict(queries)'")
    if problems:
        info = registry("rankers")[name]
        raise CapabilityError(
            f"ranker factory {name!r} of plugin {info.plugin!r} (distribution {info.distribution}) returned "
            f"{type(ranker).__name__}, which does not satisfy uncertank.Ranker: it lacks {' and '.join(problems)}"
        )
    return cast(Ranker, ranker)  # its name and predict were checked above


def list_plugins(kind: Kind | None = None) -> list[PluginInfo]:
    """Everything registered and usable, sorted by kind then name.

    Parameters
    ----------
    kind : str, optional
        Restrict to one of :data:`KINDS`.
    """
    kinds = KINDS if kind is None else (check_kind(kind),)
    return [info for k in kinds for _, info in sorted(registry(k).usable().items())]


#: Public names of the host's tooling, still found here as docs/plugins.md names them (PEP 562); ``lazy_exports``
#: is imported above, since the host uses it for this.
__getattr__ = lazy_exports(__name__, {
    "plugin_report": "uncertank.plugin_listing",
    "plugin_source_digest": "uncertank.plugin_sources",
    "render_plugin_report": "uncertank.plugin_listing",
})
