"""On-disk cache of built :class:`~uncertank.QuerySet` objects.

A built set is stored as one JSON file named by a SHA-256 hash of every
parameter that shaped it plus a data version, under ``$UNCERTANK_CACHE`` (or
``~/.cache/uncertank``) in ``datasets/``. Files are written atomically (a
temporary file in the same folder, then ``os.replace``), so a reader never
sees half a file. Texts are stored once in a table; contexts and candidates
refer to it by index.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from uncertank._types import QuerySet

__all__ = ["cache_dir", "cache_key", "clear_cache", "file_digest", "read_cached", "write_cached"]

#: Bump when the construction of a built-in set changes, so that old files are not reused.
FORMAT_VERSION = 1


def cache_dir() -> Path:
    """The folder holding cached datasets: ``$UNCERTANK_CACHE/datasets`` or ``~/.cache/uncertank/datasets``."""
    root = os.environ.get("UNCERTANK_CACHE", "").strip()
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "uncertank"
    return base / "datasets"


def cache_key(params: Mapping[str, Any]) -> str:
    """A hex SHA-256 of ``params`` (JSON-serialisable) and :data:`FORMAT_VERSION`."""
    try:
        blob = json.dumps({"format": FORMAT_VERSION, **params}, sort_keys=True, default=str)
    except (TypeError, ValueError) as exc:  # pragma: no cover - default=str covers most objects
        raise TypeError(f"cache parameters must be JSON-serialisable; got {params!r} ({exc})") from None
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, so that a cached set is rebuilt when its file changes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _path(key: str) -> Path:
    return cache_dir() / f"{key}.json"


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
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = _path(key)
    fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_cached(key: str) -> QuerySet | None:
    """The set stored under ``key``, or None when absent or unreadable (then it is rebuilt)."""
    path = _path(key)
    if not path.exists():
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            payload = json.load(fh)
        if payload.get("format") != FORMAT_VERSION:
            return None
        texts = payload["texts"]
        bounds = np.zeros(len(payload["context_lengths"]) + 1, dtype=np.int64)
        np.cumsum(payload["context_lengths"], out=bounds[1:])
        flat = payload["contexts"]
        contexts = [[texts[i] for i in flat[lo:hi]] for lo, hi in itertools.pairwise(bounds.tolist())]
        labels = payload["labels"]
        return QuerySet(
            contexts,
            [texts[i] for i in payload["candidates"]],
            np.asarray(payload["offsets"], dtype=np.int64),
            None if labels is None else np.asarray(labels, dtype=np.int64),
            query_ids=payload["query_ids"],
            candidate_ids=payload["candidate_ids"],
            name=payload["name"],
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        warnings.warn(
            f"ignoring unreadable cache file {path} ({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=2
        )
        return None


def clear_cache() -> int:
    """Delete every cached dataset file; return how many were removed."""
    folder = cache_dir()
    if not folder.is_dir():
        return 0
    n = 0
    for path in folder.glob("*.json"):
        path.unlink(missing_ok=True)
        n += 1
    return n
