"""Reading TREC run files and qrels: :func:`read_trec_run` and :func:`read_qrels`.

- :func:`read_trec_run` reads a run file (``qid Q0 docno rank score tag``).
- :func:`read_qrels` reads relevance judgements (``qid iter docno rel``).

Each reader takes a fast path first (pandas' C parser over the whole file)
and falls back to a line-by-line reader that names the first bad line.
Every reader names the file and the line of a malformed entry, of bytes
that are not UTF-8 (a binary or Latin-1 file) and of a broken ``.gz``
archive. Run and qrels files are whitespace-separated, so trailing
whitespace is not a field; a missing field is an error on its line.
Numbers are read as ``trec_eval`` reads them (:data:`INT_SYNTAX`,
:data:`FLOAT_SYNTAX`).
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_qrels", "read_trec_run"]

#: An ASCII integer as the readers accept one: no underscores ("1_0"), no other scripts' digits.
INT_SYNTAX = r"[+-]?[0-9]+"
#: A decimal number as C's atof reads one whole (trec_eval reads scores with atof): no
#: underscores, hex, or other scripts' digits, which Python's float() would accept.
FLOAT_SYNTAX = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def _check_path(path: object, name: str, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike); got {type(path).__name__}")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{name} must be a file; got the {what} {str(p)!r}, which is a folder")
    if not p.is_file():
        raise ValueError(f"{name} must be an existing file; got the {what} {str(p)!r}, which does not exist")
    return p


def _lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for the non-blank lines of a text or ``.gz`` file, stripped."""
    from uncertank.datasets._lines import read_lines

    for number, line in read_lines(path, what):
        text = line.strip()
        if text:
            yield number, text


def _fast_fields(path: Path, n_fields: int) -> list[np.ndarray] | None:
    """The columns of a well-formed whitespace-separated file, read by pandas' C parser.

    Returns None when any line has another number of fields (or the file
    cannot be parsed this way), so that the caller's line-by-line reader can
    name the offending line.
    """
    import csv

    import pandas as pd

    try:
        df = pd.read_csv(
            path, sep=r"\s+", header=None, names=list(range(n_fields + 1)), dtype=str, engine="c",
            quoting=csv.QUOTE_NONE, keep_default_na=False, na_values=[], skip_blank_lines=True,
            compression="gzip" if path.suffix == ".gz" else None, encoding="utf-8",
        )
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, EOFError, OSError, zlib.error):
        return None  # the line reader names the line (or the broken archive)
    # Without NA parsing, a missing field reads as "" (never a real whitespace-separated field).
    if df.empty or (df[n_fields] != "").any() or (df[list(range(n_fields))] == "").any().any():
        return None
    return [df[i].to_numpy(dtype=object) for i in range(n_fields)]


def read_trec_run(path: str | os.PathLike[str], *, system: str | None = None) -> pd.DataFrame:
    r"""Read a TREC run file.

    Each line holds six whitespace-separated fields, ``query_id Q0 doc_id
    rank score tag``, as ``trec_eval`` expects. Blank lines are skipped; a
    ``.gz`` suffix is read through gzip.

    Parameters
    ----------
    path : str or os.PathLike
        The run file.
    system : str, optional
        Overrides the run tag (sixth field) as the ``system`` column.

    Returns
    -------
    pandas.DataFrame
        One row per line, in file order, with columns ``query_id`` (str),
        ``q0`` (str, the unused second field), ``doc_id`` (str), ``rank``
        (int64), ``score`` (float64) and ``system`` (str).

    Raises
    ------
    ValueError
        On a line with other than six fields, a rank that is not an integer,
        a score that is not a finite number, or a document retrieved twice
        for one query by one system; the message names the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
    >>> _ = p.write_text("1 Q0 d1 1 2.5 bm25\n1 Q0 d2 2 1.0 bm25\n")
    >>> read_trec_run(p)[["query_id", "doc_id", "score"]].values.tolist()
    [['1', 'd1', 2.5], ['1', 'd2', 1.0]]
    """
    import pandas as pd

    p = _check_path(path, "path", "run file")
    cols = _fast_fields(p, 6)
    if cols is not None:
        rank = pd.to_numeric(pd.Series(cols[3]), errors="coerce").to_numpy(dtype=np.float64)
        score = pd.to_numeric(pd.Series(cols[4]), errors="coerce").to_numpy(dtype=np.float64)
        tags = cols[5] if system is None else np.full(cols[5].size, system, dtype=object)
        out: pd.DataFrame = pd.DataFrame({
            "query_id": pd.Series(cols[0], dtype=str), "q0": pd.Series(cols[1], dtype=str),
            "doc_id": pd.Series(cols[2], dtype=str), "rank": rank, "score": score,
            "system": pd.Series(tags, dtype=str),
        })
        well_formed = (
            bool(pd.Series(cols[3]).str.fullmatch(INT_SYNTAX).all()) and np.isfinite(score).all()
            and bool(pd.Series(cols[4]).str.fullmatch(FLOAT_SYNTAX).all())
            and not out.duplicated(["system", "query_id", "doc_id"]).any()
        )
        if well_formed:
            out["rank"] = rank.astype(np.int64)
            return out
    return _read_trec_run_lines(p, system)


def _read_trec_run_lines(p: Path, system: str | None) -> pd.DataFrame:
    """Line-by-line reader of :func:`read_trec_run`, which names the first bad line."""
    rows: list[tuple[str, str, str, int, float, str]] = []
    first_line: dict[tuple[str, str, str], int] = {}
    for number, where, fields in _fields(p, "run file", "query_id Q0 doc_id rank score tag"):
        qid, q0, doc, rank_s, score_s, tag = fields
        if not re.fullmatch(INT_SYNTAX, rank_s):
            raise ValueError(f"run file {where}: rank must be an integer; got {rank_s!r}")
        rank = int(rank_s)
        if not re.fullmatch(FLOAT_SYNTAX, score_s):
            what = "finite" if score_s.lower().lstrip("+-") in ("inf", "infinity", "nan") else "a number"
            raise ValueError(
                f"run file {where}: score must be {what}; got {score_s!r} (a decimal number such as 0.5 "
                "or -1.2e-3, as trec_eval reads it: no underscores, hex or other digits)"
            )
        score = float(score_s)
        if not np.isfinite(score):
            raise ValueError(f"run file {where}: score must be finite; got {score_s!r}")
        tag = system if system is not None else tag
        key = (tag, qid, doc)
        if key in first_line:
            raise ValueError(
                f"run file {where}: document {doc!r} is retrieved twice for query {qid!r} "
                f"by {tag!r} (first at line {first_line[key]})"
            )
        first_line[key] = number
        rows.append((qid, q0, doc, rank, score, tag))
    if not rows:
        raise ValueError(f"run file {p} holds no entries")
    return _frame(rows, {"query_id": str, "q0": str, "doc_id": str, "rank": np.int64, "score": np.float64,
                         "system": str})


def _fields(p: Path, what: str, layout: str) -> Iterator[tuple[int, str, list[str]]]:
    """``(line_number, "file, line n", fields)`` of each non-blank line, which must hold the fields of ``layout``."""
    n = len(layout.split())
    for number, text in _lines(p, what):
        fields = text.split()
        where = f"{p}, line {number}"
        if len(fields) != n:
            raise ValueError(f"{what} {where}: expected {n} fields ({layout}); got {len(fields)}: {text[:80]!r}")
        yield number, where, fields


def _frame(rows: Sequence[tuple[object, ...]], columns: dict[str, type]) -> pd.DataFrame:
    """A DataFrame of ``rows`` with ``columns`` (name -> str, or a numpy dtype)."""
    import pandas as pd

    values = list(zip(*rows, strict=True))
    frame: pd.DataFrame = pd.DataFrame({
        name: pd.Series(col, dtype=str) if dtype is str else np.asarray(col, dtype=dtype)
        for (name, dtype), col in zip(columns.items(), values, strict=True)
    })
    return frame


def read_qrels(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a TREC qrels file.

    Each line holds four whitespace-separated fields, ``query_id iteration
    doc_id relevance``; the iteration field is ignored, as ``trec_eval``
    ignores it. Blank lines are skipped; a ``.gz`` suffix is read through gzip.

    Parameters
    ----------
    path : str or os.PathLike
        The qrels file.

    Returns
    -------
    pandas.DataFrame
        One row per judgement, in file order, with columns ``query_id``
        (str), ``doc_id`` (str) and ``relevance`` (int64; negative grades,
        which some collections use for "junk", are kept as they are).

    Raises
    ------
    ValueError
        On a line with other than four fields, a relevance that is not an
        integer, or a document judged twice for one query with different
        grades; the message names the file and line.
    """
    import pandas as pd

    p = _check_path(path, "path", "qrels file")
    cols = _fast_fields(p, 4)
    if cols is not None:
        rel = pd.to_numeric(pd.Series(cols[3]), errors="coerce").to_numpy(dtype=np.float64)
        out: pd.DataFrame = pd.DataFrame({"query_id": pd.Series(cols[0], dtype=str),
                                          "doc_id": pd.Series(cols[2], dtype=str), "relevance": rel})
        if bool(pd.Series(cols[3]).str.fullmatch(INT_SYNTAX).all()):
            out["relevance"] = rel.astype(np.int64)
            dup = out.duplicated(["query_id", "doc_id"], keep=False)
            if not dup.any():
                return out
            conflicting = out[dup].groupby(["query_id", "doc_id"])["relevance"].nunique().gt(1).any()
            if not conflicting:
                kept: pd.DataFrame = out.drop_duplicates(["query_id", "doc_id"]).reset_index(drop=True)
                return kept
    return _read_qrels_lines(p)


def _read_qrels_lines(p: Path) -> pd.DataFrame:
    """Line-by-line reader of :func:`read_qrels`, which names the first bad line."""
    rows: list[tuple[str, str, int]] = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    for number, where, fields in _fields(p, "qrels file", "query_id iteration doc_id relevance"):
        qid, _, doc, rel_s = fields
        if not re.fullmatch(INT_SYNTAX, rel_s):
            raise ValueError(f"qrels file {where}: relevance must be an integer; got {rel_s!r}")
        rel = int(rel_s)
        key = (qid, doc)
        if key in seen:
            prev_rel, prev_line = seen[key]
            if prev_rel != rel:
                raise ValueError(
                    f"qrels file {where}: document {doc!r} of query {qid!r} is judged {rel} here "
                    f"and {prev_rel} at line {prev_line}"
                )
            continue
        seen[key] = (rel, number)
        rows.append((qid, doc, rel))
    if not rows:
        raise ValueError(f"qrels file {p} holds no judgements")
    return _frame(rows, {"query_id": str, "doc_id": str, "relevance": np.int64})
