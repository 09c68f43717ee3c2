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
