"""One line reader for every text format of :mod:`uncertank.datasets`.

Each line is decoded on its own, so that undecodable bytes (a binary file, a
Latin-1 file) and a broken ``.gz`` archive are reported with the file name
and the line number instead of a bare ``UnicodeDecodeError`` or ``EOFError``.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

__all__ = ["read_lines"]

#: What a truncated or corrupt gzip stream raises, depending on where it breaks.
_ARCHIVE_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


def read_lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    r"""Yield ``(line_number, text)`` for every line of a UTF-8 file (a ``.gz`` suffix is unzipped).

    ``text`` has its line end (``\\n``, ``\\r\\n``) removed, nothing else.
    Line numbers count from 1. A UTF-8 byte-order mark at the start is dropped.

    Parameters
    ----------
    path : Path
        The file.
    what : str
        How errors name the file, such as ``"run file"``.

    Raises
    ------
    ValueError
        On bytes that are not UTF-8 or a NUL byte (a binary file), naming the
        file, line and byte; on a broken gzip archive, naming the file and the
        last line read.
    """
    gz = path.suffix == ".gz"
    number = 0
    try:
        with gzip.open(path, "rb") if gz else open(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    bad = raw[exc.start : exc.start + 1]
                    raise ValueError(
                        f"{what} {path}, line {number}: not UTF-8 text (byte 0x{bad.hex()} at column "
                        f"{exc.start + 1}); convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8"
                    ) from None
                if "\x00" in text:
                    raise ValueError(
                        f"{what} {path}, line {number}: holds a NUL byte; this looks like a binary file, "
                        "not a text file"
                    )
                if number == 1 and text.startswith("\ufeff"):
                    text = text[1:]
                yield number, text.rstrip("\n").rstrip("\r")
    except _ARCHIVE_ERRORS as exc:
        after = f"after line {number}" if number else "before the first line"
        raise ValueError(
            f"{what} {path}: broken gzip archive ({type(exc).__name__}: {exc}) {after}"
        ) from None
    except OSError as exc:
        if gz and number:  # gzip reports a bad header as a plain OSError on some versions
            raise ValueError(f"{what} {path}: broken gzip archive ({exc}) after line {number}") from None
        if not number:  # the file could not be opened: said in the library's words, as the same OSError
            raise type(exc)(f"{what} {path} must be a readable file; got {exc.strerror or exc}") from None
        raise
