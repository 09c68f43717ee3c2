"""The ``uncertank plugins`` listing: what is registered, what failed, what clashes, as data and as text.

:func:`plugin_report` reads the host (:mod:`uncertank.plugins`) and gives
what ``uncertank plugins --json`` prints; :func:`render_plugin_report` lays
it out for a terminal.
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Mapping
from typing import Any

from uncertank.plugins import KINDS, Kind, list_plugins, name_clashes, plugin_failures, singular
from uncertank.validation import check_count, check_instance

__all__ = ["plugin_report", "render_plugin_report"]


def plugin_report(kind: Kind | None = None) -> dict[str, Any]:
    """What ``uncertank plugins --json`` prints: registered names, failures and clashes.

    Parameters
    ----------
    kind : str, optional
        Restrict the registered names and clashes to one of :data:`KINDS`
        (failures are always all listed).

    Returns
    -------
    dict
        ``{"registered": [{"name", "kind", "plugin", "distribution",
        "version"}, ...], "failed": [{"plugin", "distribution", "hook",
        "error"}, ...], "clashes": [{"kind", "name", "plugins",
        "distributions"}, ...]}``, JSON-serialisable.
    """
    with warnings.catch_warnings():  # the report carries every failure and clash the host would warn about
        warnings.simplefilter("ignore", RuntimeWarning)
        infos = list_plugins(kind)
        failures = plugin_failures()
        clashes = name_clashes(kind)
    return {
        "registered": [
            {"name": i.name, "kind": i.kind, "plugin": i.plugin, "distribution": i.distribution, "version": i.version}
            for i in infos
        ],
        "failed": [
            {"plugin": f.plugin, "distribution": f.distribution, "hook": f.hook, "error": f.error}
            for f in failures
        ],
        "clashes": [
            {"kind": c.kind, "name": c.name, "plugins": [p.plugin for p in c.providers],
             "distributions": [p.distribution for p in c.providers]}
            for c in clashes
        ],
    }


def render_plugin_report(report: Mapping[str, Any], *, width: int = 80) -> str:
    """Lay out :func:`plugin_report` as text no wider than ``width`` where words allow.

    Names are never broken: rows grouped by kind show ``name``, the
    distribution and version, and the plugin, in columns when they fit in
    ``width`` and otherwise on a second, indented line wrapped between words.

    Parameters
    ----------
    report : mapping
        The output of :func:`plugin_report`.
    width : int
        Columns available (a terminal's width); at least 20 is used.

    Returns
    -------
    str
        The text, ending without a newline.
    """
    check_instance(report, "report", Mapping, "the mapping plugin_report() returns")
    for part in ("registered", "clashes", "failed"):
        for entry in check_instance(report.get(part, []), f"report[{part!r}]", list, "a list of mappings"):
            check_instance(entry, f"report[{part!r}]", Mapping, "a list of mappings")
    width = max(check_count(width, "width", minimum=0), 20)
    lines = textwrap.wrap("name, distribution and version, plugin; by kind", width)
    rows = list(report.get("registered", []))
    for kind in KINDS:
        group = [r for r in rows if r["kind"] == kind]
        if not group:
            continue
        lines.extend(["", f"{kind} ({len(group)})"])
        cells = [(r["name"], f"{r['distribution']} {r['version']}", r["plugin"]) for r in group]
        w0 = max(len(c[0]) for c in cells)
        w1 = max(len(c[1]) for c in cells)
        for name, dist, plugin in cells:
            row = f"  {name:<{w0}}  {dist:<{w1}}  {plugin}"
            if len(row) <= width:
                lines.append(row)
                continue
            lines.append(f"  {name}")
            detail = f"from {dist}, plugin {plugin}"
            lines.extend(textwrap.wrap(detail, width, initial_indent="      ", subsequent_indent="      ",
                                       break_long_words=False, break_on_hyphens=False))
    for clash in report.get("clashes", []):
        who = " and ".join(f"{p} ({d})" for p, d in zip(clash["plugins"], clash["distributions"], strict=True))
        text = f"disabled {singular(clash['kind'])} name {clash['name']!r}: registered by both {who}"
        lines.extend(textwrap.wrap(text, width, subsequent_indent="    ", break_long_words=False,
                                   break_on_hyphens=False))
    for failure in report.get("failed", []):
        where = f" hook {failure['hook']}()" if failure.get("hook") else ""
        text = (f"failed: plugin {failure['plugin']!r} (distribution {failure['distribution']}){where}: "
                f"{failure['error']}")
        lines.extend(textwrap.wrap(text, width, subsequent_indent="    ", break_long_words=False,
                                   break_on_hyphens=False))
    if not rows:
        lines.append("no plugins registered")
    return "\n".join(lines)
