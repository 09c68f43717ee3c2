"""Name clashes never make a name unknown; the rule for hook entries; the source digest of a plugin."""

from __future__ import annotations

import functools
import importlib
import re
import sys
import textwrap
import types
import warnings
from typing import Any

import pytest

import uncertank
from uncertank import hookimpl
from uncertank import plugin_sources as sources
from uncertank import plugins as host
from uncertank.metrics import Metric, mean_reciprocal_rank, resolve_metrics
from uncertank.testing import FakeEntryPoint, fake_entry_points


def _module(name: str, **hooks: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, fn in hooks.items():
        setattr(mod, key, hookimpl(fn))
    return mod


def _hook(kind: str, **named: Any):
    def hook():
        return dict(named)

    hook.__name__ = f"uncertank_{kind}"
    return hook


def _my_map(scores, labels=None, *, per_query=False):
    return mean_reciprocal_rank(scores, labels, per_query=per_query)


class _Ranker:
    name = "r"

    def predict(self, queries):  # pragma: no cover - never called
        raise NotImplementedError


class _CallableFactory:
    def __call__(self, **params):  # pragma: no cover - never called
        return _Ranker()


# -- clashes ------------------------------------------------------------------------------


def test_a_plugin_metric_named_like_a_builtin_raises_duplicate_not_unknown():
    plugin = _module("my_metrics", uncertank_metrics=_hook("metrics", map=_my_map, only_mine=_my_map))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with fake_entry_points(FakeEntryPoint("my-metrics", plugin, distribution="my-metrics-dist", version="0.1")):
            msg = (r"metric name 'map' is registered by both plugin 'uncertank\.metrics\._builtin_metrics' "
                   r"\(distribution uncertank .*\) and plugin 'my-metrics' \(distribution my-metrics-dist 0\.1\)")
            with pytest.raises(host.DuplicateNameError, match=msg):
                resolve_metrics(["map"])  # was: "unknown metric 'map' (entry 0)"
            with pytest.raises(host.DuplicateNameError, match=msg):
                resolve_metrics([{"name": "map"}])
            for lookup in (lambda: host.get_factory("metrics", "map"), lambda: host.registry("metrics")["map"],
                           lambda: host.registry("metrics").get("map")):
                with pytest.raises(host.DuplicateNameError, match=msg):
                    lookup()
            assert "map" in host.registry("metrics")
            # every other name keeps working, the plugin's own included
            assert [m.name for m in resolve_metrics(["mrr", "only_mine"])] == ["mrr", "only_mine"]
            assert [(c.kind, c.name) for c in host.name_clashes()] == [("metrics", "map")]
    assert resolve_metrics(["map"])[0].name == "map"  # the clash ends with the plugin


def test_two_plugins_registering_one_name_on_the_manager_are_both_named():
    a = _module("clash_a", uncertank_recalibrators=_hook("recalibrators", shared=_Ranker))
    b = _module("clash_b", uncertank_datasets=_hook("datasets", shared_data=_my_map),
                uncertank_recalibrators=_hook("recalibrators", shared=_Ranker))
    c = _module("clash_c", uncertank_datasets=_hook("datasets", shared_data=_my_map))
    pm = host.get_plugin_manager()
    for mod in (a, b, c):
        pm.register(mod, name=mod.__name__)
    try:
        with pytest.warns(RuntimeWarning, match="registered by both"):
            with pytest.raises(host.DuplicateNameError, match=r"'clash_a' .* and plugin 'clash_b'"):
                host.get_factory("recalibrators", "shared")
        with pytest.warns(RuntimeWarning, match="registered by both"):
            with pytest.raises(host.DuplicateNameError, match=r"'clash_b' .* and plugin 'clash_c'"):
                uncertank.datasets.load("shared_data")
        assert "isotonic" in host.registry("recalibrators").usable()
        with pytest.raises(host.UnknownNameError, match=r"unknown recalibrator 'nope'; known: .*shared"):
            host.registry("recalibrators")["nope"]
        assert host.registry("recalibrators").get("nope") is None
    finally:
        for mod in (a, b, c):
            pm.unregister(mod)
    assert "shared" not in host.registry("recalibrators")


def test_the_listing_shows_usable_names_and_the_registry_repr_the_clash():
    a = _module("rep_a", uncertank_rankers=_hook("rankers", twin=_Ranker))
    b = _module("rep_b", uncertank_rankers=_hook("rankers", twin=_Ranker))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with fake_entry_points(("rep-a", a), ("rep-b", b)):
            assert "twin" not in [i.name for i in host.list_plugins("rankers")]
            assert "clashing=['twin']" in repr(host.registry("rankers"))
            assert len(host.registry("rankers")) == len(host.registry("rankers").usable()) + 1


# -- the rule for hook entries ------------------------------------------------------------


BAD_ENTRIES = [
    ("rankers", _CallableFactory(), "must be a class or a function (a factory); got an instance of "
                                    "_CallableFactory (a callable object); register its class or a function"),
    ("rankers", 3, "must be a class or a function (a factory); got int 3"),
    ("recalibrators", "platt", "must be a class or a function (a factory); got str 'platt'"),
    ("metrics", _Ranker, "must be a uncertank.metrics.Metric or a function; got the class _Ranker"),
    ("metrics", _CallableFactory(), "must be a uncertank.metrics.Metric or a function; got an instance of "
                                    "_CallableFactory"),
    ("datasets", _CallableFactory(), "must be a class or a function (a factory), or a callable loader object "
                                     "with a cache_token method; got an instance of _CallableFactory"),
]


@pytest.mark.parametrize(("kind", "entry", "problem"), BAD_ENTRIES, ids=[f"{k}-{i}" for i, (k, _, _) in
                                                                          enumerate(BAD_ENTRIES)])
def test_a_bad_entry_is_refused_naming_the_plugin_and_the_entry(kind, entry, problem):
    with pytest.raises(TypeError, match=rf"plugin 'p': uncertank_{kind}\(\) entry 'e' {re.escape(problem)}"):
        host.check_entry(kind, "e", entry, plugin="p")
    # at registration: the plugin is refused, nothing of it registered
    mod = _module(f"bad_{kind}", **{f"uncertank_{kind}": _hook(kind, e=entry)})
    with pytest.raises(TypeError, match=rf"plugin 'bad-one': uncertank_{kind}\(\) entry 'e' {re.escape(problem)}"):
        host.register(mod, name="bad-one")
    assert not host.get_plugin_manager().is_registered(mod)
    # from an entry point: reported by plugin and entry, skipped, the host survives
    with pytest.warns(RuntimeWarning, match=rf"'bad-ep' \(distribution bad-dist\): uncertank_{kind}\(\) entry 'e' "
                                            rf"{re.escape(problem)}"), \
            fake_entry_points(FakeEntryPoint("bad-ep", mod, distribution="bad-dist")):
        assert "e" not in host.registry(kind)
        assert [(f.plugin, f.hook) for f in host.plugin_failures()] == [("bad-ep", f"uncertank_{kind}")]


def test_good_entries_of_every_form_are_accepted():
    class Loader:
        def __call__(self, split="train", **options):  # pragma: no cover - never called
            return None

        def cache_token(self, arg=None, *, split="train"):  # pragma: no cover - never called
            return "v1"

    for kind, entry in [("rankers", _Ranker), ("rankers", lambda **p: _Ranker()),
                        ("rankers", functools.partial(_Ranker)), ("rankers", dict),
                        ("metrics", _my_map), ("metrics", Metric(_my_map, name="m", kind="ranking")),
                        ("datasets", Loader()), ("negative_samplers", _Ranker)]:
        host.check_entry(kind, "ok", entry)  # type: ignore[arg-type]


def test_register_refuses_a_bad_name_or_a_hook_that_returns_no_mapping():
    with pytest.raises(TypeError, match=r"plugin 'p': uncertank_rankers\(\) must map non-empty str names to "
                                        r"entries; got the name ''"):
        host.check_entry("rankers", "", _Ranker, plugin="p")
    mod = _module("listy", uncertank_rankers=lambda: [_Ranker])
    with pytest.raises(TypeError, match=r"plugin 'listy': uncertank_rankers\(\) must return a mapping of names to "
                                        r"entries; got list"):
        host.register(mod)
    assert not host.get_plugin_manager().is_registered(mod)
    with pytest.raises(ValueError, match="kind must be one of"):
        host.check_entry("widgets", "x", _Ranker)  # type: ignore[arg-type]


# -- the source digest --------------------------------------------------------------------


def _write_package(root, body: str) -> None:
    pkg = root / "digest_plugin_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ranker.py").write_text(textwrap.dedent(body))
    (pkg / "plugin.py").write_text(textwrap.dedent('''
        import uncertank
        from digest_plugin_pkg.ranker import DigestRanker

        @uncertank.hookimpl
        def uncertank_rankers():
            return {"digest-ranker": DigestRanker}
    '''))
    (pkg / "helpers.py").write_text("SCALE = 1.0\n")


def test_editing_a_file_of_a_plugin_package_changes_the_digest(tmp_path, monkeypatch):
    _write_package(tmp_path, '''
        class DigestRanker:
            name = "digest-ranker"
    ''')
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = importlib.import_module("digest_plugin_pkg.plugin")
    try:
        with fake_entry_points(FakeEntryPoint("digest-plugin", plugin, distribution="not-installed-dist")):
            first = sources.plugin_source_digest("rankers", "digest-ranker")
            assert first == sources.plugin_source_digest("rankers", "digest-ranker")  # stable
            assert len(first) == 64 and first != sources.plugin_source_digest("rankers", "bm25")
            helper = tmp_path / "digest_plugin_pkg" / "helpers.py"
            helper.write_text("SCALE = 2.0\n")  # a file the factory's module does not even import
            second = sources.plugin_source_digest("rankers", "digest-ranker")
            assert second != first
            (tmp_path / "digest_plugin_pkg" / "extra.py").write_text("X = 1\n")  # an added file
            assert sources.plugin_source_digest("rankers", "digest-ranker") not in (first, second)
            (tmp_path / "digest_plugin_pkg" / "extra.py").unlink()
            assert sources.plugin_source_digest("rankers", "digest-ranker") == second
            with pytest.raises(host.UnknownNameError, match="unknown ranker 'nope'"):
                sources.plugin_source_digest("rankers", "nope")
    finally:
        for mod in [m for m in sys.modules if m.startswith("digest_plugin_pkg")]:
            del sys.modules[mod]


def test_the_digest_of_an_editable_first_party_plugin_follows_its_source_tree():
    pytest.importorskip("uncertank_bert")
    files = sources._package_files("uncertank_bert.plugin")
    assert "uncertank_bert/plugin.py" in files and "uncertank_bert/__init__.py" in files
    assert sources._distribution_files("uncertank-bert") == {}  # editable: RECORD lists no code
    assert sources._distribution_files("no-such-distribution") == {}


def test_the_digest_reads_a_normal_installs_record():
    files = sources._distribution_files("pluggy")
    assert "pluggy/__init__.py" in files and files["pluggy/__init__.py"].is_file()


def test_a_factory_without_a_source_file_warns_and_uses_its_name():
    code = "class Interactive:\n    name = 'i'\n"
    namespace: dict[str, Any] = {"__name__": "__interactive__"}
    exec(compile(code, "<stdin>", "exec"), namespace)  # as at a prompt: no file behind it
    mod = _module("no_file_plugin", uncertank_rankers=_hook("rankers", interactive=namespace["Interactive"]))
    with fake_entry_points(("no-file", mod)):
        with pytest.warns(RuntimeWarning, match="no source found for ranker 'interactive' of plugin 'no-file'"):
            digest = sources.plugin_source_digest("rankers", "interactive")
        assert len(digest) == 64
