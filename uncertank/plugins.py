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

The host lives in modules of its own, each public name importable from
here: the manager, registration and lookups in :mod:`uncertank._host`, the
records, the rule for entries and :class:`Registry` in
:mod:`uncertank._plugin_entries`, :func:`plugin_source_digest` in
:mod:`uncertank._plugin_digest`, the ``uncertank plugins`` listing in
:mod:`uncertank._listing`, and :func:`lazy_exports` (for light plugin
packages) in :mod:`uncertank._lazy`.

The environment variable ``UNCERTANK_PLUGINS`` (a comma-separated list of
entry-point names) restricts which third-party plugins load; the built-ins
always do, and a listed name that no installed distribution provides is
warned about.
"""


from __future__ import annotations

from uncertank._host import (
    BUILTIN_PLUGINS,
    get_factory,
    get_plugin_manager,
    make_ranker,
    name_clashes,
    plugin_failures,
    register,
    registry,
    unregister,
)
from uncertank._lazy import lazy_exports
from uncertank._listing import list_plugins, plugin_report, render_plugin_report
from uncertank._plugin_digest import plugin_source_digest
from uncertank._plugin_entries import (
    ENTRY_POINT_GROUP,
    ENV_ALLOW,
    KINDS,
    DuplicateNameError,
    Kind,
    NameClash,
    PluginFailure,
    PluginInfo,
    Registry,
    UnknownNameError,
    check_entry,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_ALLOW",
    "KINDS",
    "DuplicateNameError",
    "NameClash",
    "PluginFailure",
    "PluginInfo",
    "Registry",
    "UnknownNameError",
    "check_entry",
    "get_factory",
    "get_plugin_manager",
    "lazy_exports",
    "list_plugins",
    "make_ranker",
    "name_clashes",
    "plugin_failures",
    "plugin_report",
    "plugin_source_digest",
    "register",
    "registry",
    "render_plugin_report",
    "unregister",
]

#: Kept importable from here (not exported): the built-in plugin modules and the kind type.
_INTERNAL = (BUILTIN_PLUGINS, Kind)
