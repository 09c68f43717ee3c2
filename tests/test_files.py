from __future__ import annotations

import math
import os
import stat

import numpy as np
import pytest

from uncertank.files import (
    atomic_path,
    atomic_write_text,
    bytes_digest,
    current_umask,
    file_digest,
    json_digest,
    to_jsonable,
)


@pytest.fixture
def umask():
    """Set the umask for one test and restore it."""
    saved = os.umask(0o022)
    os.umask(saved)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(saved)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077, 0o027])
def test_new_files_get_the_users_umask(tmp_path, umask, mask):
    umask(mask)
    assert current_umask() == mask
    target = tmp_path / "out.txt"
    atomic_write_text(target, "x")
    plain = tmp_path / "plain.txt"
    plain.write_text("x")  # what open(path, "w") gives
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~mask


def test_replaced_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_mode_survives_a_writer_that_replaces_the_temporary_file(tmp_path, umask):
    umask(0o002)
    target = tmp_path / "arrays.npz"
    with atomic_path(target) as tmp:
        tmp.unlink()
        with open(tmp, "wb") as fh:  # created anew by the writer
            np.savez(fh, a=np.arange(3))
    assert stat.S_IMODE(target.stat().st_mode) == 0o664


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_dataset_cache_files_get_the_umask(tmp_path, monkeypatch, umask):
    from uncertank.datasets import cache_dir, load

    umask(0o022)
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    load("ubuntu-sample", split="test", n_candidates=2)
    (path,) = cache_dir().glob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_to_jsonable_converts_numpy_and_non_finite():
    class Box:
        def to_dict(self):
            return {"x": np.float32(1.5)}

    out = to_jsonable({1: np.arange(3), "t": (np.bool_(True), math.inf, -math.nan), "b": Box(), "s": {2}})
    assert out == {"1": [0, 1, 2], "t": [True, None, None], "b": {"x": 1.5}, "s": [2]}
    assert type(out["1"][0]) is int and type(out["t"][0]) is bool


def test_digests():
    assert json_digest({"a": 1, "b": [1.0, np.int64(2)]}) == json_digest({"b": [1.0, 2], "a": 1})
    assert json_digest({"a": 1}) != json_digest({"a": 2})
    import hashlib

    assert bytes_digest([b"ab", b"c"]) == hashlib.sha256(b"abc").hexdigest()


def test_file_digest(tmp_path):
    import hashlib

    p = tmp_path / "f.bin"
    data = os.urandom(3 << 20)
    p.write_bytes(data)
    assert file_digest(p) == hashlib.sha256(data).hexdigest()


def test_folder_digest_follows_content_not_location(tmp_path):
    from uncertank.files import file_digest, folder_digest

    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        (root / "sub").mkdir(parents=True)
        (root / "w.bin").write_bytes(b"\x00\x01weights")
        (root / "sub" / "config.json").write_text('{"layers": 6}')
    assert folder_digest(a) == folder_digest(b)
    # an independent reference: SHA-256 over "relative path NUL file digest LF" in sorted path order
    import hashlib

    expected = hashlib.sha256(
        b"".join(f"{rel}\0{file_digest(a / rel)}\n".encode() for rel in ("sub/config.json", "w.bin"))
    ).hexdigest()
    assert folder_digest(a) == expected
    (b / "w.bin").write_bytes(b"\x00\x02weights")
    assert folder_digest(a) != folder_digest(b)
    (b / "w.bin").write_bytes(b"\x00\x01weights")
    (b / "sub" / "config.json").rename(b / "sub" / "config2.json")
    assert folder_digest(a) != folder_digest(b)
    with pytest.raises(NotADirectoryError, match="path must be a folder"):
        folder_digest(a / "w.bin")
