"""A post-hoc head on a user's model is checked against the model's own head on the validation queries."""

from __future__ import annotations

import json
import warnings

import pytest

from uncertank.nn import NeuralRanker, PostHocHeadWarning, from_pretrained
from uncertank.nn.testing import tiny_config, toy_queries

pytest.importorskip("uncertank_sngp")


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    """A user's cross-encoder whose own head ranks the toy queries well."""
    queries = toy_queries(20)
    bert = NeuralRanker(tiny_config(), max_length=32, epochs=3, batch_size=8, lr=3e-3, show_progress=False,
                        device="cpu").fit(queries)
    return bert.save_pretrained(tmp_path_factory.mktemp("user") / "model")


def test_a_head_that_did_not_learn_is_named_and_recorded(trained_folder, tmp_path):
    train, valid = toy_queries(20), toy_queries(10, seed=1)
    ranker = from_pretrained(trained_folder, "sngp", epochs=1, batch_size=8, lr=1e-12, show_progress=False,
                             device="cpu")
    with pytest.warns(PostHocHeadWarning, match=r"ranks the validation queries worse than the model's own head"):
        ranker.fit(train, valid)
    h = ranker.history_
    assert h.own_head_valid_map is not None and h.head_valid_map is not None
    assert h.head_valid_map < h.own_head_valid_map and h.head_learned is False
    ranker.save(tmp_path / "ck")  # the check travels with the checkpoint
    saved = json.loads((tmp_path / "ck" / "uncertank.json").read_text())["history"]
    assert saved["own_head_valid_map"] == h.own_head_valid_map and saved["head_valid_map"] == h.head_valid_map


def test_without_validation_queries_nothing_is_checked(trained_folder):
    ranker = from_pretrained(trained_folder, "sngp", epochs=1, batch_size=8, lr=1e-12, show_progress=False,
                             device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PostHocHeadWarning)
        ranker.fit(toy_queries(20))
    assert ranker.history_.head_learned is None
