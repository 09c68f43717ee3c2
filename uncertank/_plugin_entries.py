"""What the plugin host registers: the kinds, the records, the rule for hook entries, a registry.

The data the host (:mod:`uncertank._host`) builds and hands out, apart from
how it builds them: :data:`KINDS`, :class:`PluginInfo`, :class:`PluginFailure`,
:class:`NameClash`, the errors of a lookup, :func:`check_entry` (the rule
every entry of a hook's mapping must follow) and :class:`Registry` (one
kind's names). Public through :mod:`uncertank.plugins`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, Literal

__all__ = [
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
    "check_entry",
    "check_kind",
    "entry_problem",
    "singular",
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
    """``kind`` if it is one of :data:`KINDS`; ValueError listing them otherwise."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")
    return kind  # type: ignore[return-value]


_FUNCTION_TYPES = (FunctionType, BuiltinFunctionType, MethodType, functools.partial)


def entry_problem(kind: str, entry: Any) -> str | None:
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
        if kind == "datasets" and callable(entry) and callable(getattr(entry, "cache_token", None)):
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


def check_entry(kind: Kind, name: Any, entry: Any, *, plugin: str = "?") -> None:
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
        self.kind = kind
        self._usable = dict(usable)
        self._clashes = dict(clashes)
        self._order = list(order)

    def __getitem__(self, name: str) -> PluginInfo:
        if name in self._usable:
            return self._usable[name]
        if name in self._clashes:
            raise DuplicateNameError(self._clashes[name].describe())
        known = ", ".join(sorted(self._order)) or "(none)"
        raise UnknownNameError(
            f"unknown {singular(self.kind)} {name!r}; known: {known}. "
            f"Install a plugin that provides it, or check `uncertank plugins`."
        )

    def __contains__(self, name: object) -> bool:
        return name in self._usable or name in self._clashes

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
