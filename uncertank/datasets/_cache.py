"""On-disk cache of built :class:`~uncertank.QuerySet` objects.

A built set is stored as one JSON file named by a SHA-256 hash of every
parameter that shaped it plus a data version, under ``$UNCERTANK_CACHE`` (or
``~/.cache/uncertank``) in ``datasets/``. Files are written atomically (a
temporary file in the same folder, then ``os.replace``), so a reader never
sees half a file. Texts are stored once in a table; contexts and candidates
refer to it by index.

Beside each file, ``<key>.json.sha256`` records the SHA-256 of its bytes (in
the format of ``sha256sum``, so ``sha256sum -c`` checks it too). A file
whose bytes differ from the record (edited, truncated, or written by
something else), or that has no record, is not reused: it is rebuilt, with
a warning naming it. The same record guards the cached steps of a study
(:func:`write_checksum`, :func:`checksum_problem`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, TypeVar, overload

import numpy as np

from uncertank._types import QuerySet
from uncertank.files import atomic_path, atomic_write_text, file_digest, json_digest

__all__ = [
    "CHECKSUM_SUFFIX",
    "cache_dir",
    "cache_key",
    "checksum_path",
    "checksum_problem",
    "clear_cache",
    "read_cached",
    "write_cached",
    "write_checksum",
]

#: Bump when the construction of a built-in set changes, so that old files are not reused.
FORMAT_VERSION = 1


def cache_dir() -> Path:
    """The folder holding cached datasets: ``$UNCERTANK_CACHE/datasets`` or ``~/.cache/uncertank/datasets``."""
    root = os.environ.get("UNCERTANK_CACHE", "").strip()
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "uncertank"
    return base / "datasets"


def cache_key(params: Mapping[str, object]) -> str:
    """A hex SHA-256 of ``params`` (JSON-serialisable; others by ``str``) and :data:`FORMAT_VERSION`."""
    return json_digest({"format": FORMAT_VERSION, **params})


def _path(key: str) -> Path:
    return cache_dir() / f"{key}.json"


# -- the record of a file's bytes ------------------------------------------------------------------------------------

#: The suffix of the file recording another file's SHA-256: ``preds.npz`` -> ``preds.npz.sha256``.
CHECKSUM_SUFFIX = ".sha256"


def checksum_path(path: str | os.PathLike[str]) -> Path:
    """Where the SHA-256 of ``path`` is recorded: ``<path>.sha256`` beside it."""
    p = Path(path)
    return p.with_name(p.name + CHECKSUM_SUFFIX)


def write_checksum(path: str | os.PathLike[str], data: bytes | None = None) -> None:
    """Record the SHA-256 of ``path``'s bytes (``data``, when given, are those bytes) beside it, atomically.

    The record is one line as ``sha256sum`` writes it: the hex digest, two
    spaces, the file's name. Write it after the file itself: a file without
    its record (the writer stopped between the two) is then not trusted.
    """
    p = Path(path)
    digest = hashlib.sha256(data).hexdigest() if data is not None else file_digest(p)
    atomic_write_text(checksum_path(p), f"{digest}  {p.name}\n")


def checksum_problem(path: str | os.PathLike[str], data: bytes | None = None) -> str | None:
    """Why ``path``'s bytes (``data``, when given) cannot be trusted; None when they match their record.

    Returns
    -------
    str or None
        ``"no record of its SHA-256 (<name>.sha256)"``, ``"its record
        <name>.sha256 cannot be read (...)"``, or ``"its bytes differ from
        those recorded in <name>.sha256 (SHA-256 ... instead of ...)"``;
        None when the file's SHA-256 is the one recorded.
    """
    p = Path(path)
    record = checksum_path(p)
    try:
        text = record.read_text(encoding="utf-8")
    except FileNotFoundError:
        return f"no record of its SHA-256 ({record.name})"
    except (OSError, UnicodeDecodeError) as exc:
        return f"its record {record.name} cannot be read ({type(exc).__name__}: {exc})"
    expected = text.split(maxsplit=1)[0].lower() if text.strip() else ""
    if len(expected) != 64 or any(ch not in "0123456789abcdef" for ch in expected):
        return f"its record {record.name} holds no SHA-256"
    actual = hashlib.sha256(data).hexdigest() if data is not None else file_digest(p)
    if actual != expected:
        return (f"its bytes differ from those recorded in {record.name} "
                f"(SHA-256 {actual[:12]}... instead of {expected[:12]}...)")
    return None


def write_cached(key: str, qs: QuerySet) -> Path:
    """Store ``qs`` under ``key`` atomically; return the file's path."""
    table: dict[str, int] = {}

    def ref(text: str) -> int:
        return table.setdefault(text, len(table))

    ctx_lengths = [len(c) for c in qs.contexts]
    ctx_flat = [ref(u) for c in qs.contexts for u in c]
    cands = [ref(t) for t in qs.candidates]
    payload = {
        "format": FORMAT_VERSION,
        "name": qs.name,
        "texts": list(table),
        "context_lengths": ctx_lengths,
        "contexts": ctx_flat,
        "candidates": cands,
        "offsets": qs.offsets.tolist(),
        "labels": None if qs.labels is None else qs.labels.tolist(),
        "query_ids": None if qs.query_ids is None else list(qs.query_ids),
        "candidate_ids": None if qs.candidate_ids is None else list(qs.candidate_ids),
    }
    target = _path(key)
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    write_checksum(target, data)  # after the file: a file without its record is rebuilt
    return target


class _BadCache(ValueError):
    """A cache file whose JSON does not have the structure :func:`write_cached` writes."""


_T = TypeVar("_T")


@overload
def _field(payload: Mapping[str, object], key: str, kind: type[_T], *, optional: Literal[False] = False) -> _T: ...


@overload
def _field(payload: Mapping[str, object], key: str, kind: type[_T], *, optional: bool) -> _T | None: ...


def _field(payload: Mapping[str, object], key: str, kind: type[_T], *, optional: bool = False) -> _T | None:
    if key not in payload:
        raise _BadCache(f"missing key {key!r}")
    value = payload[key]
    if value is None and optional:
        return None
    if not isinstance(value, kind):
        raise _BadCache(f"{key!r} is {type(value).__name__}")
    return value


def _int_list(payload: Mapping[str, object], key: str, *, optional: bool = False) -> list[int] | None:
    value = _field(payload, key, list, optional=optional)
    if value is None:
        return None
    ints = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    if len(ints) != len(value):
        raise _BadCache(f"{key!r} must hold integers")
    return ints


def _str_list(payload: Mapping[str, object], key: str, *, optional: bool = False) -> list[str] | None:
    value = _field(payload, key, list, optional=optional)
    if value is None:
        return None
    strs = [v for v in value if isinstance(v, str)]
    if len(strs) != len(value):
        raise _BadCache(f"{key!r} must hold strings")
    return strs


def _decode(payload: object) -> QuerySet | None:
    """Rebuild the set from a parsed cache file; None for another format version."""
    if not isinstance(payload, dict):
        raise _BadCache(f"expected a JSON object; got {type(payload).__name__}")
    if payload.get("format") != FORMAT_VERSION:
        return None
    texts = _str_list(payload, "texts")
    ctx_lengths = _int_list(payload, "context_lengths")
    flat = _int_list(payload, "contexts")
    cands = _int_list(payload, "candidates")
    offsets = _int_list(payload, "offsets")
    labels = _int_list(payload, "labels", optional=True)
    assert texts is not None and ctx_lengths is not None and flat is not None and cands is not None
    if any(n < 0 for n in ctx_lengths) or sum(ctx_lengths) != len(flat):
        raise _BadCache("'context_lengths' do not add up to the context entries")
    refs = flat + cands
    if refs and (min(refs) < 0 or max(refs) >= len(texts)):
        raise _BadCache("a text reference points outside 'texts'")
    bounds = np.zeros(len(ctx_lengths) + 1, dtype=np.int64)
    np.cumsum(ctx_lengths, out=bounds[1:])
    contexts = [[texts[i] for i in flat[lo:hi]] for lo, hi in itertools.pairwise(bounds.tolist())]
    return QuerySet(
        contexts,
        [texts[i] for i in cands],
        np.asarray(offsets, dtype=np.int64),
        None if labels is None else np.asarray(labels, dtype=np.int64),
        query_ids=_str_list(payload, "query_ids", optional=True),
        candidate_ids=_str_list(payload, "candidate_ids", optional=True),
        name=_field(payload, "name", str),
    )


def read_cached(key: str) -> QuerySet | None:
    """The set stored under ``key``, or None when absent or unusable (then it is rebuilt).

    A file is unusable when it cannot be read or parsed, when its JSON does
    not have the structure :func:`write_cached` writes (``null``, a list, a
    missing or mistyped field, a reference out of range), when the set it
    describes fails the :class:`~uncertank.QuerySet` checks, or when its
    bytes are not those recorded in ``<key>.json.sha256`` when it was
    written (an edited file, even one that still parses; a file without the
    record); a warning names the file and the reason.
    """
    path = _path(key)
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
        qs = _decode(json.loads(data.decode("utf-8")))
        problem = checksum_problem(path, data)
        if problem is not None and qs is not None:
            raise _BadCache(problem)
        return qs
    except (OSError, ValueError, TypeError) as exc:  # _BadCache, JSONDecodeError and UnicodeError are ValueErrors
        warnings.warn(
            f"ignoring unusable cache file {path} ({type(exc).__name__}: {exc}); it is rebuilt",
            RuntimeWarning, stacklevel=2,
        )
        return None


def clear_cache() -> int:
    """Delete every cached dataset file (and its ``.sha256`` record); return how many sets were removed."""
    folder = cache_dir()
    if not folder.is_dir():
        return 0
    n = 0
    for path in folder.glob("*.json"):
        path.unlink(missing_ok=True)
        checksum_path(path).unlink(missing_ok=True)
        n += 1
    for orphan in folder.glob(f"*.json{CHECKSUM_SUFFIX}"):  # a record whose file is gone
        orphan.unlink(missing_ok=True)
    return n
