"""The plugin host: entry points, run-time registration, failures, name clashes, the listing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
import warnings
from typing import Any

import numpy as np
import pluggy
import pytest
from click.testing import CliRunner

import uncertank
from uncertank import CallableRanker, hookimpl
from uncertank import plugin_listing as listing
from uncertank import plugins as host
from uncertank.cli import cli
from uncertank.testing import FakeEntryPoint, fake_entry_points


class _ConstantRanker:
    def __init__(self, value: float = 0.5) -> None:
        self.name = "constant"
        self.value = value

    def predict(self, queries):
        return uncertank.Predictions(np.full(queries.n_pairs, self.value), queries.offsets, ranker=self.name)


class _Recal:
    def fit(self, scores, labels):
        return self

    def transform(self, scores):
        return scores


def _module(name: str, **hooks: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, fn in hooks.items():
        setattr(mod, key, hookimpl(fn))
    return mod


def _rankers(**named: Any):
    def uncertank_rankers():
        return dict(named)

    return uncertank_rankers


def _recalibrators(**named: Any):
    def uncertank_recalibrators():
        return dict(named)

    return uncertank_recalibrators


def _quiet_refresh() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        host.get_plugin_manager(refresh=True)


QS = uncertank.QuerySet.from_lists(["q"], [["a", "b"]])


def test_entry_point_ranker_is_listed_and_built():
    mod = _module("m1", uncertank_rankers=_rankers(constant=_ConstantRanker))
    with fake_entry_points(FakeEntryPoint("constant-plugin", mod, distribution="uncertank-constant", version="1.2.3")):
        infos = {i.name: i for i in host.list_plugins("rankers")}
        assert infos["constant"].distribution == "uncertank-constant"
        assert infos["constant"].version == "1.2.3"
        assert infos["constant"].plugin == "constant-plugin"
        ranker = uncertank.make_ranker("constant", value=0.25)
        assert ranker.predict(QS).scores.tolist() == [0.25, 0.25]
    assert "constant" not in host.registry("rankers")


def test_make_ranker_declares_the_ranker_contract():
    """A user's type checker sees what make_ranker checks: a uncertank.Ranker, not Any."""
    import typing

    assert typing.get_type_hints(host.make_ranker)["return"] is uncertank.Ranker


def test_make_ranker_passes_a_name_parameter_to_the_factory():
    """The registered name is positional only: a ranker's own ``name`` (shown in reports) is a parameter too."""
    def named(value: float = 0.5, name: str = "constant") -> _ConstantRanker:
        ranker = _ConstantRanker(value)
        ranker.name = name
        return ranker

    mod = _module("named_plugin", uncertank_rankers=_rankers(named=named))
    host.register(mod)
    try:
        assert uncertank.make_ranker("named", name="constant-tuned", value=0.25).name == "constant-tuned"
    finally:
        host.unregister(mod)


def test_builtins_register_through_the_same_hooks():
    recal = {i.name: i for i in host.list_plugins("recalibrators")}
    assert recal["platt"].distribution == "uncertank"
    assert recal["platt"].plugin == "uncertank.recalibration"


# -- run-time registration -------------------------------------------------------------


def test_register_after_a_lookup_is_visible_and_unregister_removes_it():
    with pytest.raises(host.UnknownNameError):
        uncertank.make_ranker("constant")  # builds and caches the registry
    mod = _module("late_plugin", uncertank_rankers=_rankers(constant=_ConstantRanker))
    assert host.register(mod) == "late_plugin"
    try:
        assert uncertank.make_ranker("constant", value=0.75).predict(QS).scores.tolist() == [0.75, 0.75]
        info = host.registry("rankers")["constant"]
        assert (info.plugin, info.distribution) == ("late_plugin", "(not installed)")
        # kept across a rebuild of the manager
        host.get_plugin_manager(refresh=True)
        assert "constant" in host.registry("rankers")
    finally:
        host.unregister(mod)
    assert "constant" not in host.registry("rankers")
    host.get_plugin_manager(refresh=True)
    assert "constant" not in host.registry("rankers")


def test_a_registered_plugin_shadowed_by_a_new_entry_point_is_reported_on_refresh():
    mod = _module("shadowed", uncertank_rankers=_rankers(constant=_ConstantRanker))
    host.register(mod, name="same-name")
    other = _module("installed_later", uncertank_rankers=_rankers(other=_ConstantRanker))
    with pytest.warns(RuntimeWarning, match=r"'same-name' \(added with register\(\)\) not registered again"), \
            fake_entry_points(FakeEntryPoint("same-name", other, distribution="later-dist")):
        assert "other" in host.registry("rankers") and "constant" not in host.registry("rankers")
        assert [f.plugin for f in host.plugin_failures()] == ["same-name"]
    assert "constant" not in host.registry("rankers")  # dropped from the run-time plugins


def test_register_names_the_distribution_it_comes_from():
    pytest.importorskip("uncertank_bert")  # the distribution guessed from the module name must be installed
    mod = _module("uncertank_bert.extra_hooks", uncertank_recalibrators=_recalibrators(identity=_Recal))
    host.register(mod, name="bert-extras")
    try:
        info = host.registry("recalibrators")["identity"]
        assert info.distribution == "uncertank-bert"
        assert info.version != "-"
    finally:
        host.unregister(name="bert-extras")
    mod2 = _module("elsewhere", uncertank_recalibrators=_recalibrators(identity=_Recal))
    host.register(mod2, distribution="my-dist", version="9.9")
    try:
        info = host.registry("recalibrators")["identity"]
        assert (info.distribution, info.version) == ("my-dist", "9.9")
    finally:
        host.unregister(mod2)


def test_direct_registration_on_the_manager_also_invalidates():
    host.registry("rankers")
    pm = host.get_plugin_manager()
    mod = _module("direct", uncertank_rankers=_rankers(constant=_ConstantRanker))
    pm.register(mod, name="direct")
    try:
        assert "constant" in host.registry("rankers")
    finally:
        pm.unregister(mod)
    assert "constant" not in host.registry("rankers")


def test_register_rejects_typos_and_doubles():
    typo = _module("typo_plugin", uncertank_rankerz=_rankers())
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'uncertank_rankerz'"):
        host.register(typo)
    assert not host.get_plugin_manager().is_registered(typo)
    mod = _module("twice", uncertank_rankers=_rankers(constant=_ConstantRanker))
    host.register(mod)
    try:
        with pytest.raises(ValueError, match="already registered"):
            host.register(mod)
    finally:
        host.unregister(mod)


def test_unregister_errors():
    with pytest.raises(ValueError, match="exactly one of plugin or name; got neither"):
        host.unregister()
    mod = _module("never")
    with pytest.raises(ValueError, match="exactly one of plugin or name; got both"):
        host.unregister(mod, name="never")
    with pytest.raises(ValueError, match="is not registered"):
        host.unregister(mod)
    with pytest.raises(ValueError, match=r"no plugin named 'never' is registered; registered: .*uncertank.baselines"):
        host.unregister(name="never")


# -- failures are contained ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "text"),
    [(ImportError("No module named 'nonexistent'"), "ImportError: No module named 'nonexistent'"),
     (SystemExit(3), "SystemExit: 3"),
     (RuntimeError("boom at import"), "RuntimeError: boom at import")],
)
def test_plugin_whose_import_fails_is_reported_and_the_host_survives(error, text):
    good = _module("m2", uncertank_rankers=_rankers(constant=_ConstantRanker))
    with pytest.warns(RuntimeWarning, match=r"'broken' \(distribution broken-dist\) failed to load"), \
            fake_entry_points(FakeEntryPoint("broken", error, distribution="broken-dist"), ("good", good)):
        failures = host.plugin_failures()
        assert [(f.plugin, f.distribution, f.error, f.hook) for f in failures] == [
            ("broken", "broken-dist", text, None)
        ]
        assert "constant" in host.registry("rankers")
        assert "bm25" in host.registry("rankers")
        result = CliRunner().invoke(cli, ["plugins"])
        assert result.exit_code == 0, result.output
        assert "constant" in result.output and "bm25" in result.output
        assert "failed: plugin 'broken' (distribution broken-dist):" in result.output
        payload = json.loads(CliRunner().invoke(cli, ["plugins", "--json"]).output)
        assert payload["failed"] == [{"plugin": "broken", "distribution": "broken-dist", "hook": None,
                                      "error": text}]


def test_hook_that_raises_is_reported_by_name_and_nothing_else_is_lost():
    def uncertank_rankers():
        raise SystemExit("a hook must not exit the host")

    broken = _module("bad_hooks", uncertank_rankers=uncertank_rankers,
                     uncertank_recalibrators=_recalibrators(identity=_Recal))
    good = _module("m3", uncertank_rankers=_rankers(constant=_ConstantRanker))
    with fake_entry_points(FakeEntryPoint("bad-hooks", broken, distribution="bad-dist"), ("good", good)):
        with pytest.warns(RuntimeWarning, match=r"'bad-hooks' \(distribution bad-dist\): uncertank_rankers\(\) raised"):
            reg = host.registry("rankers")
        assert {"constant", "bm25"} <= set(reg)
        assert "identity" in host.registry("recalibrators")  # the plugin's other hook works
        failures = host.plugin_failures()
        assert [(f.plugin, f.hook) for f in failures] == [("bad-hooks", "uncertank_rankers")]
        assert failures[0].error == "raised SystemExit: a hook must not exit the host"
        result = CliRunner().invoke(cli, ["plugins", "--kind", "rankers"])
        assert result.exit_code == 0, result.output
        assert "hook uncertank_rankers()" in result.output and "constant" in result.output


def test_hook_returning_the_wrong_type_is_reported_and_good_entries_kept():
    def not_a_mapping():
        return ["not", "a", "mapping"]

    bad = _module("m4", uncertank_rankers=not_a_mapping)
    half = _module("m5", uncertank_rankers=_rankers(constant=_ConstantRanker, broken=3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with fake_entry_points(("bad", bad), ("half", half)):
            reg = host.registry("rankers")
            assert "constant" in reg and "broken" not in reg
            errors = {f.plugin: f.error for f in host.plugin_failures()}
    assert errors["bad"] == "must return a mapping of names to factories; got list"
    assert errors["half"] == "entry 'broken' must be a class or a function (a factory); got int 3 (entry skipped)"


def test_a_clash_disables_that_name_only_and_names_both_distributions():
    first = _module("m6", uncertank_rankers=_rankers(constant=_ConstantRanker, only_first=_ConstantRanker))
    second = _module("m7", uncertank_rankers=_rankers(constant=CallableRanker, only_second=_ConstantRanker))
    with fake_entry_points(FakeEntryPoint("first", first, distribution="dist-a", version="1.0"),
                           FakeEntryPoint("second", second, distribution="dist-b", version="2.0")):
        with pytest.warns(RuntimeWarning, match="ranker name 'constant' is registered by both"):
            reg = host.registry("rankers")
        assert {"only_first", "only_second", "bm25", "constant"} <= set(reg)
        assert "constant" not in reg.usable()
        msg = (r"ranker name 'constant' is registered by both plugin 'first' \(distribution dist-a 1.0\) "
               r"and plugin 'second' \(distribution dist-b 2.0\)")
        with pytest.raises(host.DuplicateNameError, match=msg):
            host.get_factory("rankers", "constant")
        with pytest.raises(host.DuplicateNameError, match=msg):
            reg["constant"]
        with pytest.raises(host.DuplicateNameError, match=msg):
            reg.get("constant")
        with pytest.raises(host.DuplicateNameError, match=msg):
            uncertank.make_ranker("constant")
        assert isinstance(uncertank.make_ranker("only_second"), _ConstantRanker)
        (clash,) = host.name_clashes("rankers")
        assert [p.distribution for p in clash.providers] == ["dist-a", "dist-b"]
        assert host.name_clashes("recalibrators") == []
        payload = json.loads(CliRunner().invoke(cli, ["plugins", "--json"]).output)
        assert payload["clashes"] == [{"kind": "rankers", "name": "constant", "plugins": ["first", "second"],
                                       "distributions": ["dist-a", "dist-b"]}]
        text = " ".join(CliRunner().invoke(cli, ["plugins"]).output.split())
        assert "disabled ranker name 'constant': registered by both first (dist-a) and second (dist-b)" in text


def test_a_third_party_clashing_with_a_builtin_disables_that_name_only():
    mod = _module("m8", uncertank_recalibrators=_recalibrators(platt=_Recal))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with fake_entry_points(FakeEntryPoint("shadow", mod, distribution="shadow-dist")):
            reg = host.registry("recalibrators")
            assert "platt" in reg and "platt" not in reg.usable() and "temperature" in reg.usable()
            with pytest.raises(host.DuplicateNameError, match=r"'uncertank\.recalibration' .*'shadow'"):
                host.get_factory("recalibrators", "platt")


def test_two_entry_points_of_one_name_load_once():
    a = _module("m9", uncertank_rankers=_rankers(constant=_ConstantRanker))
    b = _module("m10", uncertank_rankers=_rankers(other=_ConstantRanker))
    with pytest.warns(RuntimeWarning, match="skipped: an entry point of this name was already loaded"), \
            fake_entry_points(FakeEntryPoint("same", a, distribution="d1"),
                              FakeEntryPoint("same", b, distribution="d2")):
        assert "constant" in host.registry("rankers") and "other" not in host.registry("rankers")
        assert [(f.plugin, f.distribution) for f in host.plugin_failures()] == [("same", "d2")]


def test_allow_list_restricts_entry_points_and_warns_about_missing_ones(monkeypatch):
    mod = _module("m11", uncertank_rankers=_rankers(constant=_ConstantRanker))
    monkeypatch.setenv("UNCERTANK_PLUGINS", "first, not-installed")
    with pytest.warns(RuntimeWarning, match=r"UNCERTANK_PLUGINS names 'not-installed', but no installed "
                                            r"distribution .*; installed: first, second"), \
            fake_entry_points(("first", mod), ("second", _module("m12"))):
        assert "constant" in host.registry("rankers")
        monkeypatch.setenv("UNCERTANK_PLUGINS", "second")
        host.get_plugin_manager(refresh=True)
        assert "constant" not in host.registry("rankers")
        assert "bm25" in host.registry("rankers")  # built-ins always load
        monkeypatch.delenv("UNCERTANK_PLUGINS")


def test_misspelled_hook_in_an_entry_point_fails_loudly():
    typo = _module("m13", uncertank_rankerz=_rankers())
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'uncertank_rankerz'"), \
            fake_entry_points(("typo", typo)):
        pass  # pragma: no cover - entering raises
    host.get_plugin_manager(refresh=True)


# -- lookups -----------------------------------------------------------------------------


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(host.UnknownNameError, match=r"unknown ranker 'nope'; known: .*bm25"):
        uncertank.make_ranker("nope")
    with pytest.raises(host.UnknownNameError, match=r"unknown negative sampler 'nope'; known: bm25, embedding"):
        host.get_factory("negative_samplers", "nope")


def test_unknown_kind_is_rejected():
    for fn in (host.registry, host.list_plugins, host.name_clashes):
        with pytest.raises(ValueError, match=r"kind must be one of 'rankers'.*; got 'widgets'"):
            fn("widgets")  # type: ignore[operator]
    with pytest.raises(ValueError, match="kind must be one of"):
        host.get_factory("widgets", "x")  # type: ignore[arg-type]


class _NoPredict:
    name = "no-predict"


class _BadName:
    name = 3

    def predict(self, queries):  # pragma: no cover - never called
        raise AssertionError


def test_make_ranker_checks_the_protocol_and_names_the_plugin():
    mod = _module("m14", uncertank_rankers=_rankers(nopredict=_NoPredict, badname=_BadName))
    with fake_entry_points(FakeEntryPoint("sloppy", mod, distribution="sloppy-dist")):
        with pytest.raises(TypeError, match=r"ranker factory 'nopredict' of plugin 'sloppy' \(distribution "
                                            r"sloppy-dist\) returned _NoPredict, which does not satisfy "
                                            r"uncertank.Ranker: it lacks a callable 'predict\(queries\)'"):
            uncertank.make_ranker("nopredict")
        with pytest.raises(TypeError, match=r"it lacks a str attribute 'name' \(got int\)"):
            uncertank.make_ranker("badname")


# -- the listing -------------------------------------------------------------------------

LONG = "a-rather-long-plugin-name-that-would-be-folded-mid-word"


def test_listing_never_breaks_a_name_at_80_columns():
    mod = _module("m15", uncertank_rankers=_rankers(**{"ranker-with-a-long-descriptive-name": _ConstantRanker}))
    with fake_entry_points(FakeEntryPoint(LONG, mod, distribution="uncertank-some-long-distribution",
                                          version="10.20.30")):
        report = listing.plugin_report()
    text = listing.render_plugin_report(report, width=80)
    words = set(text.split())
    for row in report["registered"]:
        assert row["name"] in words and row["plugin"] in words and row["distribution"] in words
    assert LONG in words
    assert max(len(line) for line in text.splitlines()) <= 80
    narrow = listing.render_plugin_report(report, width=30)
    narrow_words = set(narrow.split())
    for row in report["registered"]:
        assert row["name"] in narrow_words and row["plugin"].rstrip(",") in {w.rstrip(",") for w in narrow_words}
    # lines longer than 30 hold a single unbreakable word
    assert all(len(line) <= 30 or len(line.split()) == 1 for line in narrow.splitlines())
    assert listing.render_plugin_report({"registered": [], "failed": [], "clashes": []}).endswith(
        "no plugins registered")


def test_uncertank_plugins_in_a_terminal_of_80_columns():
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run([sys.executable, "-m", "uncertank.cli", "plugins"], capture_output=True, text=True,
                         env=env, check=True, timeout=120).stdout
    # a line wider than 80 columns can only be one unbreakable word (a long path in an error, say)
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in out.splitlines())
    for info in host.list_plugins():
        assert re.search(rf"(^|\s){re.escape(info.name)}\s", out, flags=re.M), info.name


def _fake_distribution(root, dist: str, entry: str, module: str, source: str) -> None:
    """A real (unpatched) installed distribution: a .dist-info folder with an entry point, on sys.path."""
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[uncertank]\n{entry} = {module}\n")
    (root / f"{module}.py").write_text(source)


def test_uncertank_plugins_survives_real_broken_and_clashing_distributions(tmp_path):
    hook = ("from uncertank import hookimpl, CallableRanker\n\n@hookimpl\ndef uncertank_rankers():\n"
            "    return {{'shared': CallableRanker, '{own}': CallableRanker}}\n")
    _fake_distribution(tmp_path, "exits-on-import", "exits", "exits_mod", "raise SystemExit(4)\n")
    _fake_distribution(tmp_path, "clash-a", "clash-a", "clash_a", hook.format(own="only-a"))
    _fake_distribution(tmp_path, "clash-b", "clash-b", "clash_b", hook.format(own="only-b"))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "COLUMNS": "80"}
    run = subprocess.run([sys.executable, "-m", "uncertank.cli", "plugins", "--json"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    names = {r["name"] for r in payload["registered"] if r["kind"] == "rankers"}
    assert {"only-a", "only-b", "bm25"} <= names and "shared" not in names
    assert {"plugin": "exits", "distribution": "exits-on-import", "hook": None,
            "error": "SystemExit: 4"} in payload["failed"]
    (clash,) = [c for c in payload["clashes"] if c["name"] == "shared"]  # in entry-point order
    assert sorted(clash["plugins"]) == sorted(clash["distributions"]) == ["clash-a", "clash-b"]
    text = subprocess.run([sys.executable, "-m", "uncertank.cli", "plugins"], capture_output=True, text=True,
                          env=env, timeout=120, check=True).stdout
    flat = " ".join(text.split())
    a, b = clash["plugins"]
    assert f"disabled ranker name 'shared': registered by both {a} ({a}) and {b} ({b})" in flat
    assert "failed: plugin 'exits' (distribution exits-on-import): SystemExit: 4" in flat


def test_lazy_exports_imports_a_name_from_its_module_on_first_use(tmp_path, monkeypatch):
    pkg = tmp_path / "lazy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from uncertank.plugin_packages import lazy_exports\n\n"
        "__getattr__ = lazy_exports(__name__, {'VALUE': 'lazy_pkg.heavy'})\n"
    )
    (pkg / "heavy.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("lazy_pkg", "lazy_pkg.heavy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import lazy_pkg

    assert "lazy_pkg.heavy" not in sys.modules
    assert lazy_pkg.VALUE == 42 and "lazy_pkg.heavy" in sys.modules
    with pytest.raises(AttributeError, match="module 'lazy_pkg' has no attribute 'other'"):
        lazy_pkg.other  # noqa: B018
    monkeypatch.delitem(sys.modules, "lazy_pkg")
    monkeypatch.delitem(sys.modules, "lazy_pkg.heavy")


@pytest.mark.parametrize("package", ["uncertank_bert", "uncertank_ensemble", "uncertank_mcdropout", "uncertank_pgdrr",
                                     "uncertank_sngp"])
def test_first_party_torch_plugins_import_without_torch(package):
    pytest.importorskip(package)  # a first-party plugin that is not installed is not tested here
    code = (
        f"import sys, uncertank, {package}, {package}.plugin; uncertank.list_plugins('rankers');"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("name", "params", "message"), [
    ("bm25", {"pretrained": "x"}, r"ranker 'bm25' takes no parameter 'pretrained'\. It takes k1, b, method, "),
    ("bm25", {"k_1": 1.2}, r"ranker 'bm25' takes no parameter 'k_1'; did you mean 'k1'\? It takes k1, b, "),
])
def test_make_ranker_names_an_unknown_keyword_the_ranker_and_what_it_takes(name, params, message):
    """The library's error (a TypeError), Python's own chained: never a bare ``__init__() got an unexpected ...``."""
    from uncertank.plugins import UnknownParameterError, make_ranker

    with pytest.raises(UnknownParameterError, match=message) as info:
        make_ranker(name, **params)
    assert isinstance(info.value, TypeError) and "unexpected keyword" in str(info.value.__cause__)
    assert info.value.ranker == name and info.value.parameter == next(iter(params))


def test_make_ranker_follows_the_params_a_subclass_passes_on():
    pytest.importorskip("uncertank_mcdropout")
    from uncertank.plugins import UnknownParameterError, make_ranker

    with pytest.raises(UnknownParameterError, match=r"'n_pass'; did you mean 'n_passes'\?") as info:
        make_ranker("mc_dropout", n_pass=3)
    assert {"n_passes", "epochs", "backbone"} <= set(info.value.known) and info.value.complete


def test_the_tooling_names_are_still_found_in_the_host_module():
    """docs/plugins.md names them ``uncertank.plugins.X``; their homes are the tooling modules."""
    from uncertank import plugin_packages, plugin_sources
    from uncertank.plugins import lazy_exports, plugin_report, plugin_source_digest, render_plugin_report

    assert plugin_source_digest is plugin_sources.plugin_source_digest
    assert (plugin_report, render_plugin_report) == (listing.plugin_report, listing.render_plugin_report)
    assert lazy_exports is plugin_packages.lazy_exports
    moved = {"lazy_exports", "plugin_report", "plugin_source_digest", "render_plugin_report"}
    assert not moved & set(host.__all__)  # one home each: listed in their own modules' __all__
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        host.no_such_name  # noqa: B018


def test_an_object_with_hookimpl_methods_registers_and_anything_else_is_named():
    class Methods:
        @hookimpl
        def uncertank_rankers(self):
            return {"method-made": lambda: CallableRanker(lambda c, x: [0.5] * len(x))}

    plugin = Methods()
    try:
        assert host.register(plugin, name="methods") == "methods"
        assert "method-made" in host.registry("rankers")
    finally:
        host.unregister(plugin)
    for bad in (0.5, "plugin", np.array([]), object()):
        with pytest.raises(TypeError, match=r"^plugin must be a module, a class or an object with @hookimpl methods"):
            host.register(bad)


def test_the_markers_keep_pluggys_options_and_name_what_they_cannot_mark():
    @hookimpl(tryfirst=True, specname="uncertank_rankers")
    def first():
        return {}

    assert first.uncertank_impl["tryfirst"] is True
    assert first.uncertank_impl["specname"] == "uncertank_rankers"
    with pytest.raises(TypeError, match=r"^function must be a function \(def\); got ndarray"):
        hookimpl(np.array([1.0]))
    with pytest.raises(TypeError, match=r"^tryfirst must be a bool \(True or False\); got str 'yes'$"):
        hookimpl(tryfirst="yes")
    with pytest.raises(TypeError, match=r"^firstresult must be a bool"):
        uncertank.hookspecs.hookspec(firstresult=np.array([True, False]))


def test_a_hookspec_called_directly_offers_nothing():
    assert uncertank.hookspecs.uncertank_rankers() == {}


def test_unregister_names_what_cannot_be_a_plugin():
    with pytest.raises(TypeError, match=r"^plugin must be a module, a class or an object with @hookimpl methods"):
        host.unregister(np.array([1, 2, 3]))
    with pytest.raises(TypeError, match=r"^name must be a str; got float 0.5$"):
        host.unregister(name=0.5)
