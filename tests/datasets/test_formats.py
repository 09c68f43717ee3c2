from __future__ import annotations

import json

import numpy as np
import pytest

from uncertank import QuerySet
from uncertank.datasets import (
    load,
    normalize_text,
    read_response_jsonl,
    read_response_tsv,
    write_response_jsonl,
    write_response_tsv,
)


def _same(a: QuerySet, b: QuerySet, *, ids: bool = True) -> None:
    assert [list(c) for c in a.contexts] == [list(c) for c in b.contexts]
    assert list(a.candidates) == list(b.candidates)
    assert np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.labels, b.labels)
    if ids:
        assert list(a.query_ids) == list(b.query_ids)
        assert list(a.candidate_ids) == list(b.candidate_ids)


@pytest.fixture(scope="module")
def ubuntu_test() -> QuerySet:
    return load("ubuntu-sample", split="test", negatives="bm25", cache=False)


def test_tsv_round_trip(tmp_path, ubuntu_test):
    path = tmp_path / "test.tsv"
    write_response_tsv(ubuntu_test, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == ubuntu_test.n_pairs
    back = read_response_tsv(path)
    _same(ubuntu_test, back, ids=False)
    assert back.name == "test.tsv"
    assert back.query_ids[1] == f"L{1 + 10}"


def test_jsonl_round_trip(tmp_path, ubuntu_test):
    path = tmp_path / "test.jsonl"
    write_response_jsonl(ubuntu_test, path)
    back = read_response_jsonl(path, name="x")
    _same(ubuntu_test, back)
    assert back.name == "x"


def test_tsv_reads_the_published_layout(tmp_path):
    # MSDialog / UDC style: label, context utterances, candidate; lists of varying length
    text = (
        "1\thow do I mount a usb drive?\tis it formatted?\tuse mount /dev/sdb1 /mnt\n"
        "0\thow do I mount a usb drive?\tis it formatted?\ttry rebooting\n"
        "0\thow do I mount a usb drive?\tis it formatted?\tlol\n"
        "\n"
        "0\twifi is down\tcheck the cable\r\n"
        "1\twifi is down\trestart network-manager\r\n"
    )
    path = tmp_path / "msdialog.tsv"
    path.write_text(text, encoding="utf-8")
    qs = read_response_tsv(path)
    assert qs.n_queries == 2
    assert qs.contexts[0] == ["how do I mount a usb drive?", "is it formatted?"]
    assert qs.contexts[1] == ["wifi is down"]
    assert qs.lengths.tolist() == [3, 2]
    assert qs.labels.tolist() == [1, 0, 0, 0, 1]
    assert qs.candidates[4] == "restart network-manager"
    assert list(qs.query_ids) == ["L1", "L5"]


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("1\tonly two fields", r"bad\.tsv, line 2: expected 'label<TAB>utterance<TAB>...<TAB>candidate' .*got 2"),
        ("yes\tctx\tresp", r"bad\.tsv, line 2: the label must be an integer >= 0; got 'yes'"),
        ("-1\tctx\tresp", r"bad\.tsv, line 2: the label must be an integer >= 0; got -1"),
    ],
)
def test_tsv_malformed_line_names_file_and_line(tmp_path, line, match):
    path = tmp_path / "bad.tsv"
    path.write_text("1\tctx\tresp\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_response_tsv(path)


def test_empty_files_rejected(tmp_path):
    for name, reader in (("e.tsv", read_response_tsv), ("e.jsonl", read_response_jsonl)):
        path = tmp_path / name
        path.write_text("\n\n", encoding="utf-8")
        with pytest.raises(ValueError, match="holds no query"):
            reader(path)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("{not json", "line 2: invalid JSON"),
        ("[1, 2]", "line 2: expected a JSON object; got list"),
        ('{"context": ["a"], "candidates": ["b"]}', "line 2: missing key 'labels'"),
        ('{"context": [1], "candidates": ["b"], "labels": [1]}', "line 2: 'context' must be a list of strings"),
        ('{"context": "a", "candidates": [], "labels": []}', "line 2: 'candidates' must not be empty"),
        ('{"context": "a", "candidates": ["b", "c"], "labels": [1]}', "line 2: 'labels' must be a list with one"),
        ('{"context": "a", "candidates": ["b"], "labels": [-1]}', r"line 2: 'labels' must be integers >= 0"),
        ('{"context": "a", "candidates": ["b"], "labels": [true]}', r"line 2: 'labels' must be integers >= 0"),
        ('{"context": "a", "candidates": ["b"], "labels": [1], "candidate_ids": ["x"]}', "on every line or on none"),
        ('{"context": "a", "candidates": ["b"], "labels": [1], "candidate_ids": ["x", "y"]}', "one id per"),
    ],
)
def test_jsonl_malformed_line_names_file_and_line(tmp_path, line, match):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"context": "q", "candidates": ["r"], "labels": [1]}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        read_response_jsonl(path)
    assert "bad.jsonl" in str(info.value)


def test_jsonl_candidate_ids_missing_after_given(tmp_path):
    path = tmp_path / "ids.jsonl"
    path.write_text(
        '{"context": "q", "candidates": ["r"], "labels": [1], "candidate_ids": ["x"]}\n'
        '{"context": "q2", "candidates": ["s"], "labels": [0]}\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="line 2: 'candidate_ids' must be given on every line or on none"):
        read_response_jsonl(path)


def test_jsonl_string_context_and_ids(tmp_path):
    path = tmp_path / "q.jsonl"
    rows = [
        {"context": "what is a kernel?", "candidates": ["the core", "a seed"], "labels": [1, 0], "id": "k1"},
        {"context": ["hi", "hello"], "candidates": ["how are you"], "labels": [2]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    qs = read_response_jsonl(path)
    assert qs.contexts[0] == ["what is a kernel?"]
    assert list(qs.query_ids) == ["k1", "L2"]
    assert qs.labels.tolist() == [1, 0, 2]
    assert qs.candidate_ids is None


def test_tsv_writer_refuses_what_it_cannot_hold(tmp_path):
    path = tmp_path / "x.tsv"
    tab = QuerySet.from_lists([["a\tb"]], [["r", "s"]], [[1, 0]])
    with pytest.raises(ValueError, match="query 0, context utterance 0 contains a tab"):
        write_response_tsv(tab, path)
    newline = QuerySet.from_lists([["a"]], [["r\nx", "s"]], [[1, 0]])
    with pytest.raises(ValueError, match="query 0, candidate 0 contains a tab or a line break"):
        write_response_tsv(newline, path)
    twice = QuerySet.from_lists([["a"], ["a"]], [["r"], ["s"]], [[1], [0]])
    with pytest.raises(ValueError, match="queries 0 and 1 are adjacent with the same context"):
        write_response_tsv(twice, path)
    empty = QuerySet([[]], ["r"], np.array([0, 1]), np.array([1]))
    with pytest.raises(ValueError, match="query 0 has an empty context"):
        write_response_tsv(empty, path)
    unlabelled = QuerySet.from_lists([["a"]], [["r"]])
    with pytest.raises(ValueError, match="qs must have labels"):
        write_response_tsv(unlabelled, path)
    with pytest.raises(ValueError, match="qs must have labels"):
        write_response_jsonl(unlabelled, tmp_path / "x.jsonl")
    with pytest.raises(TypeError, match="qs must be a QuerySet; got list"):
        write_response_tsv([], path)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="qs must be a QuerySet; got list"):
        write_response_jsonl([], path)  # type: ignore[arg-type]
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_writes_are_atomic(tmp_path, monkeypatch, ubuntu_test):
    path = tmp_path / "keep.tsv"
    path.write_text("1\told\tfile\n", encoding="utf-8")
    import os

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_response_tsv(ubuntu_test, path)
    assert path.read_text(encoding="utf-8") == "1\told\tfile\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.tsv"]


def test_load_tsv_with_split_placeholder(tmp_path, ubuntu_test):
    for split in ("train", "test"):
        write_response_tsv(ubuntu_test.subset(np.arange(20 if split == "test" else 30)), tmp_path / f"{split}.tsv")
    qs = load(f"tsv:{tmp_path}/{{split}}.tsv", split="test")
    assert qs.n_queries == 20 and qs.name == "test.tsv/test/file"
    _same(ubuntu_test.subset(np.arange(20)), qs, ids=False)
    assert load(f"tsv:{tmp_path}/{{split}}.tsv", split="train").n_queries == 30
    # the file's lists are checked against n_candidates
    assert load(f"tsv:{tmp_path}/test.tsv", n_candidates=10).n_queries == 20
    with pytest.raises(ValueError, match=r"test\.tsv: n_candidates=5 but 20 queries have another number"):
        load(f"tsv:{tmp_path}/test.tsv", n_candidates=5)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load(f"tsv:{tmp_path}/{{split}}.tsv", split="valid")
    with pytest.raises(ValueError, match="needs a path after the prefix"):
        load("tsv:")
    with pytest.raises(ValueError, match="relevant_first=True reorders sampled lists"):
        load(f"tsv:{tmp_path}/test.tsv", relevant_first=True)


def test_load_jsonl_and_max_context_turns(tmp_path, ubuntu_test):
    write_response_jsonl(ubuntu_test, tmp_path / "t.jsonl")
    qs = load(f"jsonl:{tmp_path}/t.jsonl", max_context_turns=1)
    assert all(len(c) == 1 for c in qs.contexts)
    assert [c[0] for c in qs.contexts] == [c[-1] for c in ubuntu_test.contexts]


def test_load_file_with_resampled_negatives(tmp_path, ubuntu_test):
    write_response_tsv(ubuntu_test, tmp_path / "t.tsv")
    qs = load(f"tsv:{tmp_path}/t.tsv", negatives="random", n_candidates=5, seed=0)
    assert qs.n_queries == ubuntu_test.n_queries
    assert (qs.lengths == 5).all()
    assert (np.add.reduceat(qs.labels, qs.offsets[:-1]) == 1).all()
    pool = {normalize_text(t) for t in ubuntu_test.candidates}
    assert {normalize_text(t) for t in qs.candidates} <= pool
    rel_src = np.flatnonzero(ubuntu_test.labels)
    rel_new = np.flatnonzero(qs.labels)
    assert [qs.candidates[i] for i in rel_new] == [ubuntu_test.candidates[i] for i in rel_src]
    again = load(f"tsv:{tmp_path}/t.tsv", negatives="random", n_candidates=5, seed=0)
    _same(qs, again)


def test_load_file_resampling_drops_queries_without_relevant(tmp_path):
    rows = [
        {"context": "a b c", "candidates": ["x1", "x2", "x3"], "labels": [1, 0, 0]},
        {"context": "d e f", "candidates": ["y1", "y2", "y3"], "labels": [0, 0, 0]},
        {"context": "g h i", "candidates": ["z1", "z2", "z3"], "labels": [0, 1, 0]},
    ]
    path = tmp_path / "nota.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.warns(RuntimeWarning, match="1 of 3 queries have no relevant candidate"):
        qs = load(f"jsonl:{path}", negatives="random", n_candidates=3, cache=False)
    assert qs.n_queries == 2
    assert sorted(qs.candidates[i] for i in np.flatnonzero(qs.labels)) == ["x1", "z2"]
    none = tmp_path / "none.jsonl"
    none.write_text(json.dumps(rows[1]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no query has a relevant candidate"):
        load(f"jsonl:{none}", negatives="random", n_candidates=2)
    too_many = r"n_candidates=10 is larger than the response pool of nota\.jsonl/train/random"
    with pytest.raises(ValueError, match=too_many):
        with pytest.warns(RuntimeWarning, match="no relevant candidate"):
            load(f"jsonl:{path}", negatives="random", cache=False)


def test_file_cache_follows_content(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"context": "q", "candidates": ["r", "s"], "labels": [1, 0]}\n', encoding="utf-8")
    assert load(f"jsonl:{path}").candidates == ["r", "s"]
    path.write_text('{"context": "q", "candidates": ["t", "s"], "labels": [1, 0]}\n', encoding="utf-8")
    assert load(f"jsonl:{path}").candidates == ["t", "s"]
