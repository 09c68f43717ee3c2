"""Training on lists as they are or on balanced pairs: training_pairs and the train_ratio parameter."""

from __future__ import annotations

import numpy as np
import pytest

import uncertank
from uncertank import QuerySet
from uncertank.nn import TrainingConfig, balanced_pairs, training_pairs
from uncertank.nn.testing import tiny_config, toy_queries


def _lists() -> QuerySet:
    """Three queries: 1 relevant of 10, 2 relevant of 6, none of 3 (skipped)."""
    return QuerySet.from_lists(
        [["a"], ["b"], ["c"]],
        [[f"a{i}" for i in range(10)], [f"b{i}" for i in range(6)], [f"c{i}" for i in range(3)]],
        [[0, 0, 1] + [0] * 7, [1, 0, 0, 1, 0, 0], [0, 0, 0]],
    )


def _per_query(qidx, labels):
    """(relevant, non-relevant) counts per training query, by a loop."""
    out = {}
    for q, y in zip(qidx.tolist(), labels.tolist(), strict=True):
        pos, neg = out.get(q, (0, 0))
        out[q] = (pos + y, neg + 1 - y)
    return out


@pytest.mark.parametrize(("ratio", "expected"), [
    (1, {0: (1, 1), 1: (2, 2)}),
    (3, {0: (1, 3), 1: (2, 4)}),  # query 1 has only 4 negatives
    (9, {0: (1, 9), 1: (2, 4)}),  # the list of ten as it is
    (None, {0: (1, 9), 1: (2, 4)}),
])
def test_ratio_negatives_per_relevant_from_the_querys_own_candidates(ratio, expected):
    qs = _lists()
    contexts, cands, qidx, labels = training_pairs(qs, ratio=ratio, seed=4)
    assert contexts == [["a"], ["b"]]
    assert _per_query(qidx, labels) == expected
    prefix = {0: "a", 1: "b"}
    assert all(c.startswith(prefix[q]) for c, q in zip(cands, qidx.tolist(), strict=True))
    assert len(set(zip(cands, qidx.tolist(), strict=True))) == len(cands)  # drawn without replacement
    relevant = {("a", "a2"), ("b", "b0"), ("b", "b3")}
    assert {(prefix[q], c) for c, q, y in zip(cands, qidx.tolist(), labels.tolist(), strict=True) if y} == relevant


def test_ratio_one_is_balanced_pairs_and_the_draw_is_seeded():
    qs = toy_queries(5, 6)
    a = training_pairs(qs, ratio=1, seed=2)
    b = balanced_pairs(qs, seed=2)
    assert a[1] == b[1] and np.array_equal(a[2], b[2]) and np.array_equal(a[3], b[3])
    assert training_pairs(qs, ratio=2, seed=2)[1] == training_pairs(qs, ratio=2, seed=2)[1]
    assert training_pairs(qs, ratio=2, seed=2)[1] != training_pairs(qs, ratio=2, seed=3)[1]


def test_errors():
    with pytest.raises(ValueError, match="ratio must be an integer >= 1; got 0"):
        training_pairs(_lists(), ratio=0)
    with pytest.raises(ValueError, match="train_ratio must be an integer >= 1; got 0"):
        TrainingConfig(train_ratio=0)
    with pytest.raises(TypeError, match="train_ratio must be an int"):
        TrainingConfig(train_ratio=1.5)


def test_a_ranker_trains_on_lists_and_keeps_the_setting(tmp_path):
    pytest.importorskip("transformers")
    qs = toy_queries(4, 5)
    ranker = uncertank.make_ranker("bert", backbone=tiny_config(vocab_size=30522), train_ratio=None, epochs=1,
                                   batch_size=4, show_progress=False, device="cpu", max_length=32)
    ranker.fit(qs)
    assert len(ranker.history_.loss) == 5  # 20 pairs (every candidate) in batches of 4
    balanced = uncertank.make_ranker("bert", backbone=tiny_config(vocab_size=30522), epochs=1, batch_size=4,
                                     show_progress=False, device="cpu", max_length=32)
    balanced.fit(qs)
    assert len(balanced.history_.loss) == 2  # 8 balanced pairs
    ranker.save(tmp_path / "ck")
    from uncertank.nn import load_ranker

    assert load_ranker(tmp_path / "ck").training_config.train_ratio is None


def test_max_train_queries_trains_on_a_seeded_subset_of_whole_queries(tmp_path):
    pytest.importorskip("transformers")
    from uncertank.nn import load_ranker

    qs = toy_queries(8, 5)
    seen = []

    def make(**kw):
        r = uncertank.make_ranker("bert", backbone=tiny_config(vocab_size=30522), epochs=1, batch_size=2,
                                  show_progress=False, device="cpu", max_length=32, **kw)
        encode = r.encode_texts

        def spy(contexts, candidates, query_index, **kws):
            seen.append((len(contexts), len(candidates)))
            return encode(contexts, candidates, query_index, **kws)

        r.encode_texts = spy
        return r

    lists = make(train_ratio=4, max_train_queries=2).fit(qs)
    assert seen[0] == (2, 10)  # 2 queries, 1 relevant + 4 negatives each
    assert len(lists.history_.loss) == 5
    seen.clear()
    make(max_train_queries=5).fit(qs)
    assert seen[0] == (5, 10)  # balanced pairs of 5 queries: the same cost as lists of 2
    lists.save(tmp_path / "ck")
    assert load_ranker(tmp_path / "ck").training_config.max_train_queries == 2
    with pytest.raises(ValueError, match="max_train_queries must be an integer >= 1; got 0"):
        TrainingConfig(max_train_queries=0)
