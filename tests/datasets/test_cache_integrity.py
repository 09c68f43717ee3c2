"""A cached dataset is reused only when its bytes are those recorded when it was written."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from uncertank.datasets import cache_dir, clear_cache, load
from uncertank.datasets._cache import checksum_path, checksum_problem


def _cached():
    (path,) = cache_dir().glob("*.json")
    return path


def test_a_cached_set_is_written_with_the_sha256_of_its_bytes():
    load("ubuntu-sample", split="test", negatives="random")
    path = _cached()
    assert checksum_path(path).name == f"{path.name}.sha256"
    assert checksum_path(path).read_text() == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"


def test_an_edited_but_valid_cache_file_is_rebuilt_not_reused(monkeypatch):
    a = load("ubuntu-sample", split="test", negatives="random")
    path = _cached()
    payload = json.loads(path.read_text(encoding="utf-8"))
    payload["labels"] = [1 - v for v in payload["labels"]]  # still a valid set: other labels
    payload["texts"][0] = "an edited text"
    path.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.warns(RuntimeWarning, match=f"unusable cache file {path} .*its bytes differ from those recorded in "
                                            f"{path.name}.sha256.*; it is rebuilt"):
        b = load("ubuntu-sample", split="test", negatives="random")
    assert a.digest() == b.digest() and np.array_equal(a.labels, b.labels)
    assert checksum_problem(path) is None  # rewritten, and its record with it
    c = load("ubuntu-sample", split="test", negatives="random")  # then reused silently
    assert c.digest() == a.digest()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("no record", "no record of its SHA-256"),
        ("empty record", "holds no SHA-256"),
        ("empty file", "JSONDecodeError"),
    ],
)
def test_a_cache_file_without_a_matching_record_is_rebuilt(damage, reason):
    a = load("ubuntu-sample", split="test", negatives="random")
    path = _cached()
    if damage == "no record":
        checksum_path(path).unlink()
    elif damage == "empty record":
        checksum_path(path).write_text("")
    else:
        path.write_bytes(b"")
    with pytest.warns(RuntimeWarning, match=f"unusable cache file .*{reason}"):
        b = load("ubuntu-sample", split="test", negatives="random")
    assert a.digest() == b.digest() and checksum_problem(path) is None


def test_clear_cache_removes_the_records_too():
    load("ubuntu-sample", split="test", negatives="random")
    load("ubuntu-sample", split="valid", negatives="random")
    assert clear_cache() == 2
    assert list(cache_dir().iterdir()) == []
