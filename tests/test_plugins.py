from __future__ import annotations

import importlib.metadata
import types
from typing import Any

import pytest

import uncertank
from uncertank import CallableRanker, hookimpl
from uncertank import plugins as host


class _Dist:
    def __init__(self, name: str, version: str = "1.2.3") -> None:
        self.name = name
        self.version = version


class _EntryPoint:
    """Stands in for an installed distribution's entry point."""

    def __init__(self, name: str, target: Any, dist: str = "fake-dist") -> None:
        self.name = name
        self.group = host.ENTRY_POINT_GROUP
        self.dist = _Dist(dist)
        self._target = target

    def load(self) -> Any:
        if isinstance(self._target, BaseException):
            raise self._target
        return self._target


def _module(name: str, **hooks: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, value in hooks.items():
        setattr(mod, key, value)
    return mod


class _ConstantRanker:
    def __init__(self, value: float = 0.5) -> None:
        self.name = "constant"
        self.value = value

    def predict(self, queries):
        import numpy as np

        from uncertank import Predictions

        return Predictions(np.full(queries.n_pairs, self.value), queries.offsets, ranker=self.name)


@hookimpl
def _rankers_hook():
    return {"constant": _ConstantRanker}


@hookimpl
def _clashing_hook():
    return {"constant": CallableRanker}


@pytest.fixture
def fake_entry_points(monkeypatch):
    eps: list[_EntryPoint] = []

    def entry_points(*, group: str):
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    host.get_plugin_manager(refresh=True)
    yield eps
    monkeypatch.undo()
    host.get_plugin_manager(refresh=True)


def _hook_module(name: str, hook: Any) -> types.ModuleType:
    mod = _module(name)
    mod.uncertank_rankers = hook  # type: ignore[attr-defined]
    return mod


def test_entry_point_ranker_is_listed_and_built(fake_entry_points):
    fake_entry_points.append(_EntryPoint("constant-plugin", _hook_module("m1", _rankers_hook), "uncertank-constant"))
    host.get_plugin_manager(refresh=True)
    infos = {i.name: i for i in host.list_plugins("rankers")}
    assert infos["constant"].distribution == "uncertank-constant"
    assert infos["constant"].version == "1.2.3"
    assert infos["constant"].plugin == "constant-plugin"
    ranker = uncertank.make_ranker("constant", value=0.25)
    qs = uncertank.QuerySet.from_lists(["q"], [["a", "b"]])
    assert ranker.predict(qs).scores.tolist() == [0.25, 0.25]
    assert isinstance(ranker, uncertank.Ranker)


def test_builtins_register_through_the_same_hooks():
    host.get_plugin_manager(refresh=True)
    recal = {i.name: i for i in host.list_plugins("recalibrators")}
    assert recal["platt"].distribution == "uncertank"
    assert recal["platt"].plugin == "uncertank.recalibration"


def test_broken_plugin_is_reported_and_host_survives(fake_entry_points):
    fake_entry_points.append(_EntryPoint("broken", ImportError("No module named 'nonexistent'"), "broken-dist"))
    fake_entry_points.append(_EntryPoint("constant-plugin", _hook_module("m2", _rankers_hook)))
    with pytest.warns(RuntimeWarning, match="'broken' \\(distribution broken-dist\\) failed to load"):
        host.get_plugin_manager(refresh=True)
    failures = host.plugin_failures()
    assert [(f.plugin, f.distribution) for f in failures] == [("broken", "broken-dist")]
    assert "nonexistent" in failures[0].error
    assert "constant" in host.registry("rankers")


def test_duplicate_names_raise_naming_both(fake_entry_points):
    fake_entry_points.append(_EntryPoint("first", _hook_module("m3", _rankers_hook)))
    fake_entry_points.append(_EntryPoint("second", _hook_module("m4", _clashing_hook)))
    host.get_plugin_manager(refresh=True)
    msg = "'constant' is registered by both plugin 'first' and plugin 'second'"
    with pytest.raises(host.DuplicateNameError, match=msg):
        host.registry("rankers")


def test_allow_list_restricts_entry_points(fake_entry_points, monkeypatch):
    fake_entry_points.append(_EntryPoint("first", _hook_module("m5", _rankers_hook)))
    monkeypatch.setenv("UNCERTANK_PLUGINS", "someone-else, another")
    host.get_plugin_manager(refresh=True)
    assert "constant" not in host.registry("rankers")
    monkeypatch.setenv("UNCERTANK_PLUGINS", "first")
    host.get_plugin_manager(refresh=True)
    assert "constant" in host.registry("rankers")


def test_unknown_name_lists_the_known_ones(fake_entry_points):
    fake_entry_points.append(_EntryPoint("first", _hook_module("m6", _rankers_hook)))
    host.get_plugin_manager(refresh=True)
    with pytest.raises(host.UnknownNameError, match=r"unknown ranker 'nope'; known: .*constant"):
        uncertank.make_ranker("nope")


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="kind must be one of"):
        host.registry("widgets")  # type: ignore[arg-type]


def test_hook_returning_wrong_type_is_an_error(fake_entry_points):
    @hookimpl
    def bad():
        return ["not", "a", "mapping"]

    @hookimpl
    def bad_value():
        return {"x": 3}

    fake_entry_points.append(_EntryPoint("bad", _hook_module("m7", bad)))
    host.get_plugin_manager(refresh=True)
    with pytest.raises(TypeError, match="plugin 'bad': uncertank_rankers\\(\\) must return a mapping"):
        host.registry("rankers")
    fake_entry_points[:] = [_EntryPoint("bad2", _hook_module("m8", bad_value))]
    host.get_plugin_manager(refresh=True)
    with pytest.raises(TypeError, match="must map str names to callables"):
        host.registry("rankers")


def test_misspelled_hook_fails_loudly(fake_entry_points):
    import pluggy

    @hookimpl
    def uncertank_rankerz():
        return {}

    mod = _module("m9")
    mod.uncertank_rankerz = uncertank_rankerz  # type: ignore[attr-defined]
    fake_entry_points.append(_EntryPoint("typo", mod))
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'uncertank_rankerz'"):
        host.get_plugin_manager(refresh=True)
