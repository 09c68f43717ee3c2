"""Files written whole or not at all, and digests of values, files and folders.

The helpers every stage of uncertank writes and keys its caches with, public
so that a user's scripts write and key their files the same way:


- :func:`atomic_path` / :func:`atomic_write_text`: a temporary file beside
  the target, then ``os.replace``. A reader never sees a half-written file,
  and a failure leaves the previous version (or nothing) in place. The file
  gets the permissions a plain ``open(path, "w")`` would give it (the user's
  umask), or keeps those of the file it replaces.
- :func:`temporary_folder`: ``tempfile.mkdtemp`` with the mode a plain
  ``os.mkdir`` gives (the user's umask, not 0700), for a folder that is
  renamed into place.
- :func:`to_jsonable`: numpy scalars and arrays, tuples, mappings and
  dataclass-like objects (``to_dict``) to plain JSON values; non-finite
  floats become None.
- :func:`json_digest`, :func:`file_digest`, :func:`folder_digest`,
  :func:`bytes_digest`: hex SHA-256 digests of a JSON-serialisable value, a
  file's bytes, a folder's files (names and bytes), or a stream of chunks.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from uncertank.validation import check_instance, check_path

__all__ = [
    "JSONValue",
    "atomic_path",
    "atomic_write_text",
    "bytes_digest",
    "current_umask",
    "file_digest",
    "folder_digest",
    "json_digest",
    "temporary_folder",
    "to_jsonable",
]

#: A JSON value, as ``json.loads`` reads it and the library's files hold it (``results.json``,
#: :meth:`uncertank.experiment.StudyResult.to_dict`, :meth:`uncertank.evaluate.Evaluation.to_dict`).
JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"


def current_umask() -> int:
    """The process's file-creation mask (read from ``/proc`` where possible, else set and restored)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it into place if the block succeeds.

    The file that lands at ``path`` has the mode of the file it replaces, or
    ``0o666`` less the user's umask when ``path`` is new: what ``open(path,
    "w")`` would have created (``tempfile.mkstemp`` alone would leave 0600).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "notes.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'

    Writers that pick a file name's extension themselves (``numpy.save``
    adds ``.npy``) should be given an open file handle instead of the path.
    """
    target = check_path(path, "path")
    if target.is_dir():
        raise IsADirectoryError(f"path must be a file's path, not a folder; got {str(target)!r}")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, mode)  # a writer may have replaced the file at tmp
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def temporary_folder(*, prefix: str, suffix: str = ".tmp", dir: str | os.PathLike[str]) -> Path:
    """A new, empty folder in ``dir`` with a unique name, and the mode ``os.mkdir`` would give it.

    ``tempfile.mkdtemp`` makes its folder 0700 (private), which a folder
    renamed into place as the final one must not keep: under a umask of
    0022 it gets 0755 here, as ``mkdir`` gives.

    Examples
    --------
    >>> import tempfile, stat
    >>> folder = temporary_folder(prefix="model.", dir=tempfile.mkdtemp())
    >>> stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~current_umask()
    True
    """
    check_instance(prefix, "prefix", str)
    check_instance(suffix, "suffix", str)
    where = check_path(dir, "dir")
    if not where.is_dir():
        raise FileNotFoundError(f"dir must be an existing folder; got {str(where)!r}")
    if os.sep in prefix or os.sep in suffix:
        raise ValueError(f"prefix and suffix must be parts of a file name (no {os.sep!r}); got {prefix!r}, {suffix!r}")
    folder = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=where))
    try:
        os.chmod(folder, 0o777 & ~current_umask())
    except BaseException:
        folder.rmdir()
        raise
    return folder


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 with Unix line ends to ``path`` atomically."""
    path = check_path(path, "path")
    check_instance(text, "text", str)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")


def to_jsonable(obj: object) -> Any:  # plain JSON values; an object it does not know passes through as is
    """Convert ``obj`` to plain JSON values.

    Mappings become dicts with str keys, tuples/lists/sets/arrays become
    lists, numpy scalars become Python numbers, objects with ``to_dict``
    are converted through it, and NaN or infinite floats become None (JSON
    has no NaN).

    Examples
    --------
    >>> import numpy as np
    >>> to_jsonable({"a": np.float64(0.5), 1: (np.int64(2), float("nan")), "v": np.arange(2)})
    {'a': 0.5, '1': [2, None], 'v': [0, 1]}
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_jsonable(obj.to_dict())
    return obj


def json_digest(obj: object) -> str:
    """Hex SHA-256 of ``obj`` as canonical JSON (sorted keys, via :func:`to_jsonable`).

    Examples
    --------
    >>> json_digest({"b": 1, "a": [1, 2]}) == json_digest({"a": [1, 2], "b": 1})
    True
    """
    blob = json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def bytes_digest(chunks: Iterable[bytes]) -> str:
    """Hex SHA-256 of the concatenation of ``chunks``."""
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Iterable):
        raise TypeError(f"chunks must be an iterable of bytes; got {type(chunks).__name__}")
    h = hashlib.sha256()
    for chunk in chunks:
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError(f"chunks must be an iterable of bytes; got an item of type {type(chunk).__name__}")
        h.update(chunk)
    return h.hexdigest()


def file_digest(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    path = check_path(path, "path")
    try:
        with open(path, "rb") as fh:
            return bytes_digest(iter(lambda: fh.read(1 << 20), b""))
    except OSError as exc:
        raise type(exc)(f"path must be a readable file; got {str(path)!r} ({exc.strerror or exc})") from None


def folder_digest(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 over a folder's files: each relative path (sorted) and its bytes' digest.

    Two folders with the same files and contents have the same digest
    wherever they are; a changed, added, removed or renamed file changes it.
    """
    root = check_path(path, "path")
    if not root.is_dir():
        raise NotADirectoryError(f"path must be a folder; got {str(root)!r}")
    files = sorted(f for f in root.rglob("*") if f.is_file())
    entries = [f"{f.relative_to(root).as_posix()}\0{file_digest(f)}\n".encode() for f in files]
    return bytes_digest(entries)
