"""How a plugin author tests a plugin with ``uncertank.testing`` (run: ``pytest docs/examples/uncertank-tfidf``).

uncertank's own suite tests this package in depth (``tests/test_example_plugin.py``);
these few tests are what a third party would write first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import uncertank
from uncertank.datasets import load
from uncertank.plugins import get_factory, registry, unregister
from uncertank.testing import (
    check_metric,
    check_ranker,
    check_recalibrator,
    check_stochastic_ranker,
    fake_entry_points,
    load_plugin_module,
)

PLUGIN = Path(__file__).resolve().parents[1] / "uncertank_tfidf" / "plugin.py"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("UNCERTANK_CACHE", str(tmp_path_factory.mktemp("cache")))
    train = load("ubuntu-questions", split="train").subset(range(200))
    test = load("ubuntu-questions", split="test").subset(range(30))
    mp.undo()
    return train, test


def test_registered_when_installed():
    names = {(i.kind, i.name) for i in uncertank.list_plugins() if i.distribution == "uncertank-tfidf"}
    assert ("rankers", "tfidf") in names and ("metrics", "precision_at_k") in names


def test_registered_without_installing():
    with fake_entry_points():  # no installed plugin at all
        assert "tfidf" not in registry("rankers")
        module = load_plugin_module(PLUGIN)
        try:
            assert {"tfidf", "tfidf-bootstrap"} <= set(registry("rankers"))
        finally:
            unregister(module)


def test_conformance(data):
    train, test = data
    check_ranker(uncertank.make_ranker("tfidf"), test, train=train)
    check_stochastic_ranker(uncertank.make_ranker("tfidf-bootstrap", n_samples=3), test, train=train)


def test_metric_and_recalibrator_conform():
    check_metric(get_factory("metrics", "precision_at_k"))
    check_recalibrator(get_factory("recalibrators", "beta"))
