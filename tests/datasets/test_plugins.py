from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from uncertank import QuerySet, hookimpl
from uncertank.datasets import list_datasets, load, normalize_text
from uncertank.plugins import get_plugin_manager


class _ToyPlugin:
    """A third-party plugin: one dataset and one sampler that knows nothing of groups."""

    calls: ClassVar[list[dict]] = []

    @staticmethod
    def toy_loader(*, split, negatives, n_candidates, seed):
        _ToyPlugin.calls.append({"split": split, "negatives": negatives, "n_candidates": n_candidates})
        return QuerySet.from_lists([["hi"]], [["hello", "bye"]], [[1, 0]], name=f"toy/{split}")

    class FirstSampler:
        def __init__(self, pool, seed=0):
            self.keys = [normalize_text(t) for t in pool]
            firsts: dict[str, int] = {}
            for i, key in enumerate(self.keys):
                firsts.setdefault(key, i)
            self.distinct = list(firsts.values())

        def sample(self, contexts, positives, k):
            # the first k distinct pool texts that are not the positive
            head = self.distinct[: k + 1]
            return np.array([[i for i in head if self.keys[i] != normalize_text(p)][:k] for p in positives])

    @hookimpl
    def uncertank_datasets(self):
        return {"toy": self.toy_loader}

    @hookimpl
    def uncertank_negative_samplers(self):
        return {"first": self.FirstSampler}


@pytest.fixture
def toy_plugin():
    pm = get_plugin_manager(refresh=True)
    pm.register(_ToyPlugin(), name="toy-plugin")
    _ToyPlugin.calls.clear()
    yield
    get_plugin_manager(refresh=True)


def test_third_party_dataset_through_load(toy_plugin):
    assert "toy" in list_datasets()
    qs = load("toy", split="valid")
    assert qs.name == "toy/valid"
    # max_context_turns is passed only when set; no cache token, so it is called every time
    assert _ToyPlugin.calls == [{"split": "valid", "negatives": None, "n_candidates": None}]
    load("toy", split="valid")
    assert len(_ToyPlugin.calls) == 2


def test_third_party_sampler_without_groups(toy_plugin):
    qs = load("ubuntu-sample", split="test", negatives="first", n_candidates=3, cache=False)
    assert (qs.lengths == 3).all()
    assert qs.name == "ubuntu-sample/test/first"


def test_sampler_returning_a_wrong_shape_is_reported(toy_plugin, monkeypatch):
    monkeypatch.setattr(_ToyPlugin.FirstSampler, "sample", lambda self, c, p, k: np.zeros((1, k), dtype=int))
    with pytest.raises(ValueError, match=r"negative sampler 'first' returned shape \(1, 2\); expected \(\d+, 2\)"):
        load("ubuntu-sample", split="test", negatives="first", n_candidates=3, cache=False)


def test_loader_returning_something_else_is_reported(toy_plugin, monkeypatch):
    monkeypatch.setattr(_ToyPlugin, "toy_loader", staticmethod(lambda **kw: [1, 2]))
    get_plugin_manager(refresh=True).register(_ToyPlugin(), name="toy-plugin")
    with pytest.raises(TypeError, match="dataset loader 'toy' must return a QuerySet; got list"):
        load("toy")


# --------------------------------------------------------------------------- third-party caching (issue 11)


class _CachedPlugin:
    """A third-party plugin whose function loader is made cacheable with the public decorator."""

    calls: ClassVar[list[str]] = []
    version: ClassVar[str] = "v1"

    @hookimpl
    def uncertank_datasets(self):
        from uncertank.datasets import cacheable

        @cacheable(lambda arg, split: f"greetings-{_CachedPlugin.version}")
        def greetings(*, split, negatives, n_candidates, seed, shout=False):
            _CachedPlugin.calls.append(split)
            text = "HELLO" if shout else "hello"
            return QuerySet.from_lists(["hi"], [[text, "bye"]], [[1, 0]], name=f"greetings/{split}")

        return {"greetings": greetings}


@pytest.fixture
def cached_plugin():
    pm = get_plugin_manager(refresh=True)
    pm.register(_CachedPlugin(), name="cached-plugin")
    _CachedPlugin.calls.clear()
    _CachedPlugin.version = "v1"
    yield
    get_plugin_manager(refresh=True)


def test_cacheable_rejects_a_token_of_another_type():
    from uncertank.datasets import cacheable

    with pytest.raises(TypeError, match="token must be a str or a callable"):
        cacheable(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cacheable decorates a dataset loader"):
        cacheable("v1")(5)  # type: ignore[type-var]


def test_third_party_dataset_is_cached_through_the_public_decorator(cached_plugin):
    from uncertank.datasets import cache_dir

    a = load("greetings", split="test")
    b = load("greetings", split="test")
    assert _CachedPlugin.calls == ["test"]  # built once, then read from the cache
    assert a.digest() == b.digest() and b.name == "greetings/test"
    assert len(list(cache_dir().glob("*.json"))) == 1
    load("greetings", split="test", shout=True)  # another parameter is another key
    assert _CachedPlugin.calls == ["test", "test"]
    _CachedPlugin.version = "v2"  # the token changes with the data: rebuilt
    load("greetings", split="test")
    assert _CachedPlugin.calls == ["test", "test", "test"]
    load("greetings", split="test", cache=False)
    assert len(_CachedPlugin.calls) == 4


def test_cache_token_must_return_a_str(cached_plugin, monkeypatch):
    _CachedPlugin.version = None  # type: ignore[assignment]
    from uncertank.plugins import get_factory

    loader = get_factory("datasets", "greetings")
    monkeypatch.setattr(loader, "cache_token", lambda arg=None, *, split: 42)
    with pytest.raises(TypeError, match="dataset 'greetings': cache_token must return a str"):
        load("greetings", split="test")
