"""A test kit for plugin authors: load a plugin without installing it, fake entry points, conformance checks.

Nothing here imports pytest; the checks raise :class:`ConformanceError` (an
:class:`AssertionError`), so they read well under any test runner.

- :func:`load_plugin_module`: import a plugin module from a file, a package
  folder or a dotted name and register it with the host (the registries are
  refreshed, so lookups made before see it).
- :func:`fake_entry_points`: a context manager under which the host sees
  the given entry points instead of (or beside) the installed ones, as if a
  distribution announcing them were installed: how loading, failure
  reporting and name clashes can be tested without installing anything.
- :func:`check_ranker` and :func:`check_stochastic_ranker`: the contract
  that ``uncertank run`` relies on, checked on a ranker and a
  :class:`~uncertank.QuerySet` of your choice. Every first-party ranker
  passes them in uncertank's own test suite.
- :func:`check_metric` and :func:`check_recalibrator`: the same for a
  registered metric (one call signature, per-query values, direction) and
  a recalibrator (fit, probabilities, the ranking kept). Every built-in
  passes them.

The kit is split by what it checks: ``_loading`` (plugins and entry
points), ``_rankers``, ``_metrics`` and ``_recalibrators`` (the checks), and
``_errors`` (:class:`ConformanceError` and the guard that turns a plugin's
own exception into it); every public name is imported from here.

Examples
--------
>>> from uncertank import QuerySet, make_ranker
>>> from uncertank.testing import check_ranker
>>> qs = QuerySet.from_lists([["my usb drive is not mounted"], ["no sound"]],
...                          [["mount the usb drive", "hello there"], ["check alsamixer", "hi", "reboot"]],
...                          [[1, 0], [1, 0, 0]])
>>> check_ranker(make_ranker("bm25"), qs)
['protocol', 'clone', 'predict', 'same output twice', 'labels unused', 'input unchanged']
"""


from __future__ import annotations

from uncertank.testing._errors import ConformanceError
from uncertank.testing._loading import (
    FakeEntryPoint,
    PluginModuleNotFoundError,
    fake_entry_points,
    load_plugin_module,
)
from uncertank.testing._metrics import check_metric
from uncertank.testing._rankers import check_ranker, check_stochastic_ranker
from uncertank.testing._recalibrators import check_recalibrator

__all__ = [
    "ConformanceError",
    "FakeEntryPoint",
    "PluginModuleNotFoundError",
    "check_metric",
    "check_ranker",
    "check_recalibrator",
    "check_stochastic_ranker",
    "fake_entry_points",
    "load_plugin_module",
]

