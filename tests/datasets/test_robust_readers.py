"""Every reader names the file and line of what it rejects (issue 12), and file loaders honour load()'s options."""

from __future__ import annotations

import gzip
import re

import numpy as np
import pytest

from uncertank.datasets import (
    load,
    read_qrels,
    read_response_jsonl,
    read_response_tsv,
    read_trec_run,
    write_response_jsonl,
    write_response_tsv,
)

RUN = "1 Q0 d1 1 2.5 sys\n1 Q0 d2 2 1.0 sys\n"
QRELS = "1 0 d1 1\n1 0 d2 0\n"
TSV = "1\thello there\thi\n0\thello there\tbye\n"
JSONL = '{"context": ["hello there"], "candidates": ["hi", "bye"], "labels": [1, 0]}\n'


def _reader(kind):
    return {"run": read_trec_run, "qrels": read_qrels, "tsv": read_response_tsv, "jsonl": read_response_jsonl}[kind]


GOOD = {"run": RUN, "qrels": QRELS, "tsv": TSV, "jsonl": JSONL}
WHAT = {"run": "run file", "qrels": "qrels file", "tsv": "TSV file", "jsonl": "JSON-lines file"}


# --------------------------------------------------------------------------- TSV trailing fields


def test_tsv_line_ending_in_a_tab_is_rejected(tmp_path):
    path = tmp_path / "x.tsv"
    # before: the second line's context gained "bye" and its candidate was "", a new query
    path.write_text("1\thello there\thi\n0\thello there\tbye\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: field 4 of 4 is empty (the line ends in a tab)")):
        read_response_tsv(path)


@pytest.mark.parametrize(
    ("line", "field"),
    [("1\t\thi", "field 2 of 3 is empty"), ("1\thello\t \tbye", "field 3 of 4 is empty"), (" \thello\thi", "field 1")],
)
def test_tsv_empty_field_anywhere_is_rejected(tmp_path, line, field):
    path = tmp_path / "x.tsv"
    path.write_text(TSV + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"line 3: {field}")):
        read_response_tsv(path)


def test_writers_refuse_blank_texts(tmp_path):
    from uncertank import QuerySet

    qs = QuerySet.from_lists([["hello"]], [["hi", " "]], [[1, 0]])
    with pytest.raises(ValueError, match="query 0, candidate 1 is empty or blank"):
        write_response_tsv(qs, tmp_path / "x.tsv")
    with pytest.raises(ValueError, match="candidate 1 is empty or blank"):
        write_response_jsonl(qs, tmp_path / "x.jsonl")
    qs2 = QuerySet.from_lists([["hello", ""]], [["hi", "yo"]], [[1, 0]])
    with pytest.raises(ValueError, match="query 0 has an empty or blank context utterance"):
        write_response_jsonl(qs2, tmp_path / "x.jsonl")
    assert not list(tmp_path.iterdir())


def test_jsonl_blank_text_and_labels(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(JSONL + '{"context": "q", "candidates": ["a", ""], "labels": [1, 0]}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: 'candidates' entry 1 is empty")):
        read_response_jsonl(path)
    path.write_text('{"context": "q", "candidates": ["a", "b"], "labels": [1.0, 0]}\n', encoding="utf-8")
    assert read_response_jsonl(path).labels.tolist() == [1, 0]  # integer-valued
    path.write_text('{"context": "q", "candidates": ["a", "b"], "labels": [0.5, 0]}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 1: 'labels' must be integers >= 0"):
        read_response_jsonl(path)


def test_run_line_missing_its_last_field_is_rejected(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(RUN + "1 Q0 d3 3 0.5\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"run file {path}, line 3: expected 6 fields")):
        read_trec_run(path)
    path.write_text(RUN + "1 Q0 d3 3 0.5 sys \t\n", encoding="utf-8")  # trailing whitespace is no field
    assert len(read_trec_run(path)) == 3


# --------------------------------------------------------------------------- encodings and archives


@pytest.mark.parametrize("kind", ["run", "qrels", "tsv", "jsonl"])
def test_latin1_is_reported_with_file_and_line(tmp_path, kind):
    path = tmp_path / f"x.{kind}"
    text = GOOD[kind]
    lines = text.splitlines(keepends=True)
    bad = lines[-1].replace("d2" if kind in ("run", "qrels") else "bye", "caf\xe9")
    path.write_bytes("".join(lines[:-1]).encode() + bad.encode("latin-1"))
    msg = f"{WHAT[kind]} {path}, line {len(lines)}: not UTF-8 text (byte 0xe9"
    with pytest.raises(ValueError, match=re.escape(msg)):
        _reader(kind)(path)


@pytest.mark.parametrize("kind", ["run", "qrels", "tsv", "jsonl"])
def test_binary_file_is_reported(tmp_path, kind):
    path = tmp_path / f"x.{kind}"
    path.write_bytes(b"\x00\x01\x02 binary \x00\n\x00")
    with pytest.raises(ValueError, match=re.escape(f"{WHAT[kind]} {path}, line 1:")):
        _reader(kind)(path)
    path.write_bytes(np.random.default_rng(0).bytes(2000))
    with pytest.raises(ValueError, match=re.escape(f"{WHAT[kind]} {path}, line ")):
        _reader(kind)(path)


@pytest.mark.parametrize("kind", ["run", "qrels", "tsv", "jsonl"])
def test_gzip_is_read_and_broken_archives_are_reported(tmp_path, kind):
    path = tmp_path / f"x.{kind}.gz"
    text = GOOD[kind] * 50
    if kind == "run":
        text = "".join(f"{q} Q0 d1 1 2.5 sys\n{q} Q0 d2 2 1.0 sys\n" for q in range(50))
    blob = gzip.compress(text.encode())
    path.write_bytes(blob)
    assert _reader(kind)(path) is not None
    path.write_bytes(blob[: len(blob) // 2])  # truncated
    with pytest.raises(ValueError, match=re.escape(f"{WHAT[kind]} {path}: broken gzip archive")):
        _reader(kind)(path)
    path.write_bytes(b"not a gzip file at all\n")
    with pytest.raises(ValueError, match=re.escape(f"{WHAT[kind]} {path}: broken gzip archive")):
        _reader(kind)(path)


def test_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + TSV.encode())
    assert read_response_tsv(path).labels.tolist() == [1, 0]


# --------------------------------------------------------------------------- file loaders and load() options


def _many(tmp_path, n=30):
    lines = []
    for q in range(n):
        lines.append(f"1\tcontext number {q}\tthe answer {q}\n")
        lines.append(f"0\tcontext number {q}\tsomething else {q}\n")
    path = tmp_path / "data.tsv"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_tsv_dataset_with_max_queries_as_documented(tmp_path):
    # docs/experiments.md: a tsv: dataset with max_test_queries; the runner passes max_queries
    path = _many(tmp_path)
    qs = load(f"tsv:{path}", split="test", negatives="file", max_queries=7, seed=3)
    assert qs.n_queries == 7
    full = load(f"tsv:{path}", split="test", negatives="file")
    assert set(qs.query_ids) <= set(full.query_ids)
    assert qs.query_ids == sorted(qs.query_ids, key=lambda s: int(s[1:]))  # file order kept
    again = load(f"tsv:{path}", split="test", negatives="file", max_queries=7, seed=3)
    assert again.digest() == qs.digest()
    other = load(f"tsv:{path}", split="test", negatives="file", max_queries=7, seed=4)
    assert other.query_ids != qs.query_ids
    assert load(f"tsv:{path}", negatives="file", max_queries=100).n_queries == 30


def test_tsv_dataset_max_queries_with_sampled_negatives_keeps_the_whole_pool(tmp_path):
    path = _many(tmp_path)
    qs = load(f"tsv:{path}", split="test", negatives="random", n_candidates=5, max_queries=3, seed=0, cache=False)
    assert qs.n_queries == 3 and (qs.lengths == 5).all()
    own = {f"the answer {q}" for q in range(30)} | {f"something else {q}" for q in range(30)}
    assert set(qs.candidates) <= own
    # negatives come from the whole file, not only from the 3 kept queries
    kept = {t for t in qs.candidates if t in qs.candidates[qs.labels.astype(bool).nonzero()[0][0]]}
    assert kept  # sanity
    pools = [set(load(f"tsv:{path}", split="test", negatives="random", n_candidates=5, max_queries=3, seed=s,
                      cache=False).candidates) for s in range(4)]
    assert len(set().union(*pools)) > 6 * 2


@pytest.mark.parametrize("option", ["split_seed", "max_instances_per_dialogue", "colour"])
def test_option_a_file_loader_does_not_take_is_rejected_by_name(tmp_path, option):
    path = _many(tmp_path)
    with pytest.raises(TypeError, match=rf"dataset 'tsv:.*' does not take the option '{option}'; its options: "
                                        r".*max_queries"):
        load(f"tsv:{path}", **{option: 1})


def test_option_a_bundled_loader_does_not_take_is_rejected_by_name():
    with pytest.raises(TypeError, match=r"dataset 'ubuntu-sample' does not take the options 'a', 'b'"):
        load("ubuntu-sample", split="test", a=1, b=2)
