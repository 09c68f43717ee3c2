from __future__ import annotations

import json
import re

import numpy as np
import pytest

from uncertank import QuerySet
from uncertank.datasets import (
    cache_dir,
    describe,
    list_datasets,
    load,
    normalize_text,
    split_dialogues,
    ubuntu_dialogues,
)
from uncertank.datasets.dialogues import Dialogue, conversation_instances
from uncertank.plugins import UnknownNameError


def _dialogue_of(query_id: str) -> str:
    return query_id.rsplit("#", 1)[0]


@pytest.fixture(scope="module")
def ubuntu_test_random() -> QuerySet:
    return load("ubuntu-sample", split="test", negatives="random", cache=False)


def test_bundled_copy_is_the_shared_sample():
    dialogues = ubuntu_dialogues()
    assert len(dialogues) == 2002
    assert len({d.dialogue_id for d in dialogues}) == 2002
    # one empty line in the whole sample is dropped; every other line is an utterance
    assert sum(len(d.utterances) for d in dialogues) == 20487 - 1


@pytest.mark.parametrize(
    ("split", "negatives"),
    [
        ("train", "random"),
        pytest.param("train", "bm25", marks=pytest.mark.slow),
        ("valid", "random"),
        ("valid", "bm25"),
        ("test", "random"),
        ("test", "bm25"),
    ],
)
def test_structure_one_relevant_among_n(split, negatives):
    qs = load("ubuntu-sample", split=split, negatives=negatives, n_candidates=10, seed=0, cache=False)
    assert qs.n_queries > 500
    assert (qs.lengths == 10).all()
    assert qs.labels is not None
    per_query = np.add.reduceat(qs.labels, qs.offsets[:-1])
    assert (per_query == 1).all()
    assert qs.name == f"ubuntu-sample/{split}/{negatives}"
    # the relevant candidate is the true next utterance of the dialogue
    by_id = {d.dialogue_id: d for d in ubuntu_dialogues()}
    rel = np.flatnonzero(qs.labels)
    for q in range(0, qs.n_queries, 97):
        did, turn = qs.query_ids[q].rsplit("#", 1)
        utts = by_id[did].utterances
        assert qs.candidates[rel[q]] == utts[int(turn)]
        assert list(qs.contexts[q]) == list(utts[: int(turn)])


def test_negatives_never_repeat_positive_context_or_own_dialogue(ubuntu_test_random):
    qs = ubuntu_test_random
    by_id = {d.dialogue_id: d for d in ubuntu_dialogues()}
    for q in range(qs.n_queries):
        _, cands, labs = qs.query(q)
        keys = [normalize_text(c) for c in cands]
        assert len(set(keys)) == len(keys), "negatives must be distinct texts"
        own = {normalize_text(u) for u in by_id[_dialogue_of(qs.query_ids[q])].utterances}
        negs = [k for k, lab in zip(keys, labs, strict=True) if lab == 0]
        assert not own.intersection(negs)


def test_relevant_position_is_shuffled(ubuntu_test_random):
    qs = ubuntu_test_random
    pos = np.flatnonzero(qs.labels) - qs.offsets[:-1]
    counts = np.bincount(pos, minlength=10)
    # roughly uniform over the 10 positions (1193 queries: ~119 each)
    assert counts.min() > 60 and counts.max() < 190


def test_no_dialogue_in_two_splits():
    seen = {}
    for split in ("train", "valid", "test"):
        qs = load("ubuntu-sample", split=split, negatives="random", cache=False)
        dialogues = {_dialogue_of(i) for i in qs.query_ids}
        # candidates come from the same split's dialogues only
        cand_dialogues = {_dialogue_of(i) for i in qs.candidate_ids}
        parts = split_dialogues(ubuntu_dialogues())
        assert cand_dialogues <= {d.dialogue_id for d in parts[split]}
        seen[split] = dialogues
    assert not seen["train"] & seen["valid"]
    assert not seen["train"] & seen["test"]
    assert not seen["valid"] & seen["test"]


def test_split_proportions_and_independence_of_seed():
    parts = split_dialogues(ubuntu_dialogues())
    sizes = {k: len(v) for k, v in parts.items()}
    assert sizes == {"train": 1602, "valid": 200, "test": 200}
    a = load("ubuntu-sample", split="test", negatives="random", seed=0, cache=False)
    b = load("ubuntu-sample", split="test", negatives="random", seed=1, cache=False)
    assert list(a.query_ids) == list(b.query_ids)
    assert list(a.candidates) != list(b.candidates)


def test_split_does_not_depend_on_input_order():
    ds = list(ubuntu_dialogues())
    a = split_dialogues(ds)
    b = split_dialogues(ds[::-1])
    assert [d.dialogue_id for d in a["test"]] == [d.dialogue_id for d in b["test"]]


@pytest.mark.parametrize("negatives", ["random", "bm25"])
def test_same_seed_same_set(negatives):
    a = load("ubuntu-sample", split="valid", negatives=negatives, seed=3, cache=False)
    b = load("ubuntu-sample", split="valid", negatives=negatives, seed=3, cache=False)
    assert list(a.candidates) == list(b.candidates)
    assert np.array_equal(a.labels, b.labels)
    assert list(a.candidate_ids) == list(b.candidate_ids)


def test_instances_turns_and_caps():
    d = Dialogue("d", tuple(f"u{i}" for i in range(30)))
    ctx, resp, ids = conversation_instances([d], max_context_turns=None, max_instances_per_dialogue=None)
    assert resp == [f"u{i}" for i in range(1, 30)]
    assert ctx[4] == ["u0", "u1", "u2", "u3", "u4"]
    ctx, resp, ids = conversation_instances([d], max_context_turns=3, max_instances_per_dialogue=5)
    assert ids == ["d#1", "d#8", "d#15", "d#22", "d#29"]
    assert ctx[-1] == ["u26", "u27", "u28"]
    one = Dialogue("e", ("only",))
    assert conversation_instances([one])[0] == []


def test_max_context_turns_keeps_most_recent():
    qs = load("ubuntu-sample", split="test", negatives="random", max_context_turns=2, cache=False)
    assert max(len(c) for c in qs.contexts) == 2
    assert min(len(c) for c in qs.contexts) == 1


def test_max_instances_option_changes_size():
    capped = load("ubuntu-sample", split="test", cache=False)
    full = load("ubuntu-sample", split="test", max_instances_per_dialogue=None, cache=False)
    s = describe("ubuntu-sample")["test"]
    assert capped.n_queries == s.n_instances
    assert full.n_queries == s.n_utterances - s.n_dialogues
    assert full.n_queries > capped.n_queries


def test_describe_counts_duplicates():
    summary = describe("ubuntu-sample")
    assert set(summary) == {"train", "valid", "test"}
    assert sum(s.n_dialogues for s in summary.values()) == 2002
    assert sum(s.n_utterances for s in summary.values()) == 20486
    for s in summary.values():
        assert s.pool.n_texts == s.n_utterances
        assert s.pool.n_duplicates == s.pool.n_texts - s.pool.n_unique > 0
    # an independent count over the whole sample
    texts = [u for d in ubuntu_dialogues() for u in d.utterances]
    assert summary["train"].pool.n_duplicates <= len(texts) - len(set(texts))


def test_cache_second_load_is_identical_and_not_rebuilt(monkeypatch):
    from uncertank.datasets import assembly

    a = load("ubuntu-sample", split="train", negatives="random")
    files = list(cache_dir().glob("*.json"))
    assert len(files) == 1

    def no_rebuild(*args, **kwargs):
        raise AssertionError("a cached set must not be rebuilt")

    monkeypatch.setattr(assembly, "assemble_query_set", no_rebuild)  # a rebuild fails the test
    b = load("ubuntu-sample", split="train", negatives="random")
    assert list(a.candidates) == list(b.candidates)
    assert [list(c) for c in a.contexts] == [list(c) for c in b.contexts]
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.offsets, b.offsets)
    assert list(a.query_ids) == list(b.query_ids) and list(a.candidate_ids) == list(b.candidate_ids)
    assert a.name == b.name
    # any other parameter is another key, so it is built
    with pytest.raises(AssertionError, match="must not be rebuilt"):
        load("ubuntu-sample", split="train", negatives="random", seed=1)
    with pytest.raises(AssertionError, match="must not be rebuilt"):
        load("ubuntu-sample", split="train", negatives="random", max_context_turns=3)
    # cache=False always builds
    with pytest.raises(AssertionError, match="must not be rebuilt"):
        load("ubuntu-sample", split="train", negatives="random", cache=False)


def test_corrupt_cache_file_is_rebuilt():
    a = load("ubuntu-sample", split="test")
    (path,) = cache_dir().glob("*.json")
    path.write_text("{not json", encoding="utf-8")
    with pytest.warns(RuntimeWarning, match="unusable cache file"):
        b = load("ubuntu-sample", split="test")
    assert list(a.candidates) == list(b.candidates)
    json.loads(path.read_text(encoding="utf-8"))  # rewritten whole


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("null", "expected a JSON object; got NoneType"),
        ("[]", "expected a JSON object; got list"),
        ('"text"', "expected a JSON object; got str"),
        ('{"format": 1}', "missing key 'texts'"),
        ('{"format": 1, "texts": "abc"}', "'texts' is str"),
        (
            '{"format": 1, "texts": ["a"], "context_lengths": [1], "contexts": [0], "candidates": [5],'
            ' "offsets": [0, 1], "labels": null, "query_ids": null, "candidate_ids": null, "name": ""}',
            "a text reference points outside 'texts'",
        ),
        (
            '{"format": 1, "texts": ["a"], "context_lengths": [2], "contexts": [0], "candidates": [0],'
            ' "offsets": [0, 1], "labels": null, "query_ids": null, "candidate_ids": null, "name": ""}',
            "'context_lengths' do not add up",
        ),
        (
            '{"format": 1, "texts": ["a"], "context_lengths": [1], "contexts": [0], "candidates": [0],'
            ' "offsets": [0, 2], "labels": null, "query_ids": null, "candidate_ids": null, "name": ""}',
            "offsets must end at the number of pairs",
        ),
    ],
)
def test_cache_file_with_the_wrong_structure_is_rebuilt(content, reason):
    a = load("ubuntu-sample", split="test")
    (path,) = cache_dir().glob("*.json")
    path.write_text(content, encoding="utf-8")
    with pytest.warns(RuntimeWarning, match=f"unusable cache file .*{re.escape(reason)}"):
        b = load("ubuntu-sample", split="test")
    assert a.digest() == b.digest()
    assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)  # rewritten
    c = load("ubuntu-sample", split="test")  # and read from the cache again, silently
    assert c.digest() == a.digest()


def test_cache_location_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "elsewhere"))
    assert cache_dir() == tmp_path / "elsewhere" / "datasets"
    monkeypatch.delenv("UNCERTANK_CACHE")
    assert str(cache_dir()).endswith(".cache/uncertank/datasets")


def test_list_datasets():
    names = list_datasets()
    for name in ("ubuntu-sample", "chitchat", "tsv:", "jsonl:"):
        assert name in names


def test_unknown_dataset_lists_known():
    with pytest.raises(UnknownNameError, match=r"unknown dataset 'msdialog'; known: .*ubuntu-sample"):
        load("msdialog")
    with pytest.raises(UnknownNameError, match=r"known: .*tsv:"):
        load("csv:/tmp/x.csv")


def test_unknown_sampler_lists_known():
    with pytest.raises(UnknownNameError, match=r"unknown negative sampler 'hard'; known: bm25, embedding, random"):
        load("ubuntu-sample", negatives="hard")


def test_n_candidates_larger_than_pool():
    with pytest.raises(ValueError, match=r"n_candidates=100000 is larger than the response pool of ubuntu-sample/test"):
        load("ubuntu-sample", split="test", n_candidates=100_000, cache=False)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"split": "dev"}, ValueError, "split must be one of 'train', 'valid', 'test'; got 'dev'"),
        ({"n_candidates": 0}, ValueError, "n_candidates must be an integer >= 1; got 0"),
        ({"n_candidates": 1}, ValueError, "n_candidates must be an integer >= 2; got 1"),
        ({"n_candidates": 2.5}, TypeError, "n_candidates must be an integer"),
        ({"max_context_turns": 0}, ValueError, "max_context_turns must be an integer >= 1"),
        ({"seed": "0"}, TypeError, "seed must be an int"),
        ({"negatives": 3}, TypeError, "negatives must be a str"),
        ({"negatives": "file"}, UnknownNameError, "unknown negative sampler 'file'"),
        ({"max_instances_per_dialogue": 0}, ValueError, "max_instances_per_dialogue must be an integer >= 1"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        load("ubuntu-sample", cache=False, **kwargs)


def test_bad_name_type():
    with pytest.raises(TypeError, match="name must be a str"):
        load(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fractions", "match"),
    [((0.5, 0.5), "3 non-negative shares"), ((0.8, 0.3, -0.1), "3 non-negative"), ((0.5, 0.2, 0.2), "summing to 1")],
)
def test_split_fractions_checked(fractions, match):
    with pytest.raises(ValueError, match=match):
        split_dialogues(ubuntu_dialogues(), fractions=fractions)


def test_split_needs_unique_ids():
    d = Dialogue("x", ("a", "b"))
    with pytest.raises(ValueError, match="unique ids"):
        split_dialogues([d, d])


def test_lazy_trec_reexport():
    import uncertank.datasets as ds
    from uncertank.datasets import trec, trec_covid, trec_files

    homes = {"read_trec_run": trec_files, "read_qrels": trec_files, "ranked_lists_from_run": trec,
             "load_trec_covid_round1": trec_covid}
    for name, home in homes.items():
        assert name in dir(ds)
        assert getattr(ds, name) is getattr(home, name)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ds.nope  # noqa: B018


@pytest.mark.slow
def test_chitchat_structure_and_turns():
    import chitchat_dataset

    from uncertank.datasets import chitchat_dialogues

    dialogues = chitchat_dialogues()
    assert len(dialogues) == 3462
    assert min(len(d.utterances) for d in dialogues) >= 3
    raw = chitchat_dataset.Dataset()
    d = dialogues[0]
    first = raw[d.dialogue_id]["messages"][0]
    assert d.utterances[0] == normalize_text(" ".join(m["text"] for m in first))
    parts = split_dialogues(dialogues)
    ids = {k: {x.dialogue_id for x in v} for k, v in parts.items()}
    assert not ids["train"] & ids["test"] and not ids["valid"] & ids["test"] and not ids["train"] & ids["valid"]
    qs = load("chitchat", split="test", negatives="bm25", cache=False)
    assert qs.name == "chitchat/test/bm25"
    assert (qs.lengths == 10).all() and (np.add.reduceat(qs.labels, qs.offsets[:-1]) == 1).all()
    assert {_dialogue_of(i) for i in qs.candidate_ids} <= ids["test"]
    assert qs.n_queries == describe("chitchat")["test"].n_instances


def test_chitchat_missing_package_names_the_extra(monkeypatch):
    import sys

    from uncertank.datasets import conversation

    monkeypatch.setitem(sys.modules, "chitchat_dataset", None)
    conversation.chitchat_dialogues.cache_clear()
    try:
        with pytest.raises(ImportError, match=r'pip install "uncertank\[retrieval\]"'):
            load("chitchat", cache=False)
    finally:
        conversation.chitchat_dialogues.cache_clear()


def test_relevant_first_layout():
    a = load("ubuntu-sample", split="test", negatives="bm25", cache=False)
    b = load("ubuntu-sample", split="test", negatives="bm25", relevant_first=True, cache=False)
    assert (b.labels.reshape(-1, 10)[:, 0] == 1).all()
    # same lists, another order
    for q in range(0, a.n_queries, 50):
        assert sorted(a.query(q)[1]) == sorted(b.query(q)[1])
    assert b.name == a.name


def test_max_queries_subsets_before_sampling():
    full = load("ubuntu-sample", split="test", cache=False)
    part = load("ubuntu-sample", split="test", max_queries=50, cache=False)
    assert part.n_queries == 50
    assert set(part.query_ids) <= set(full.query_ids)
    order = [list(full.query_ids).index(i) for i in part.query_ids]
    assert order == sorted(order)
    # the pool is still the whole split: negatives come from dialogues outside the 50 queries
    assert len({_dialogue_of(i) for i in part.candidate_ids}) > len({_dialogue_of(i) for i in part.query_ids})
    again = load("ubuntu-sample", split="test", max_queries=50, cache=False)
    assert list(again.candidates) == list(part.candidates)
    assert load("ubuntu-sample", split="test", max_queries=10**6, cache=False).n_queries == full.n_queries
    with pytest.raises(ValueError, match="max_queries must be an integer >= 1; got 0"):
        load("ubuntu-sample", split="test", max_queries=0, cache=False)


def test_remaining_error_paths(monkeypatch):
    import sys

    from uncertank.datasets import build_query_set, chitchat_dialogues
    from uncertank.datasets.formats import FileLoader
    from uncertank.datasets.retrieval import BM25Index

    with pytest.raises(ValueError, match="min_turns must be an integer >= 2; got 1"):
        chitchat_dialogues(min_turns=1)
    with pytest.raises(ValueError, match="toy: no dialogue has two utterances"):
        build_query_set([Dialogue("a", ("x",))], name="toy")
    with pytest.raises(ValueError, match="name must be one of 'ubuntu-sample', 'chitchat'; got 'udc'"):
        describe("udc")
    with pytest.raises(ValueError, match="fmt must be one of 'tsv', 'jsonl'; got 'csv'"):
        FileLoader("csv")
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(ImportError, match=r'pip install "uncertank\[retrieval\]"'):
        BM25Index(["a b"])
