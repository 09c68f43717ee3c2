"""TREC run files, qrels, and the bundled TREC-COVID round 1 data.

- :func:`read_trec_run` reads a run file (``qid Q0 docno rank score tag``).
- :func:`read_qrels` reads relevance judgements (``qid iter docno rel``).
- :func:`ranked_lists_from_run` pairs a run with qrels as
  :class:`~uncertank.RankedLists`, ordered as ``trec_eval`` orders a run.
- :func:`load_trec_covid_round1` returns the data of Benham, Moffat &
  Culpepper, "Bayesian System Inference on Shallow Pools" (ECIR 2021),
  bundled with the package under its MIT licence.

Every reader names the file and the line of a malformed entry, of bytes
that are not UTF-8 (a binary or Latin-1 file) and of a broken ``.gz``
archive. Run and qrels files are whitespace-separated, so trailing
whitespace is not a field; a missing field is an error on its line.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from uncertank._types import RankedLists
from uncertank._validation import check_choice

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "TREC_COVID_ROUND1_BM25_BASELINE",
    "load_trec_covid_round1",
    "ranked_lists_from_run",
    "read_qrels",
    "read_trec_run",
]

#: The run the paper's URisk analysis uses as its BM25 baseline.
TREC_COVID_ROUND1_BM25_BASELINE = "bm25_baseline"

_INT = r"[+-]?[0-9]+"  # an ASCII integer: no underscores ("1_0"), no other scripts' digits
#: A decimal number as C's atof reads one whole (trec_eval reads scores with atof): no
#: underscores, hex, or other scripts' digits, which Python's float() would accept.
_FLOAT = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_QRELS_COLUMNS = ("query_id", "doc_id", "relevance")


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
        out = pd.DataFrame({
            "query_id": pd.Series(cols[0], dtype=str), "q0": pd.Series(cols[1], dtype=str),
            "doc_id": pd.Series(cols[2], dtype=str), "rank": rank, "score": score,
            "system": pd.Series(tags, dtype=str),
        })
        well_formed = (
            bool(pd.Series(cols[3]).str.fullmatch(_INT).all()) and np.isfinite(score).all()
            and bool(pd.Series(cols[4]).str.fullmatch(_FLOAT).all())
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
        if not re.fullmatch(_INT, rank_s):
            raise ValueError(f"run file {where}: rank must be an integer; got {rank_s!r}")
        rank = int(rank_s)
        if not re.fullmatch(_FLOAT, score_s):
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
    return pd.DataFrame({
        name: pd.Series(col, dtype=str) if dtype is str else np.asarray(col, dtype=dtype)
        for (name, dtype), col in zip(columns.items(), values, strict=True)
    })


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
        out = pd.DataFrame({"query_id": pd.Series(cols[0], dtype=str), "doc_id": pd.Series(cols[2], dtype=str),
                            "relevance": rel})
        if bool(pd.Series(cols[3]).str.fullmatch(_INT).all()):
            out["relevance"] = rel.astype(np.int64)
            dup = out.duplicated(["query_id", "doc_id"], keep=False)
            if not dup.any():
                return out
            conflicting = out[dup].groupby(["query_id", "doc_id"])["relevance"].nunique().gt(1).any()
            if not conflicting:
                return out.drop_duplicates(["query_id", "doc_id"]).reset_index(drop=True)
    return _read_qrels_lines(p)


def _read_qrels_lines(p: Path) -> pd.DataFrame:
    """Line-by-line reader of :func:`read_qrels`, which names the first bad line."""
    rows: list[tuple[str, str, int]] = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    for number, where, fields in _fields(p, "qrels file", "query_id iteration doc_id relevance"):
        qid, _, doc, rel_s = fields
        if not re.fullmatch(_INT, rel_s):
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


def _require_columns(df: pd.DataFrame, name: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} must have columns {list(columns)}; missing {missing} (has {list(df.columns)})")


def _from_nested(obj: Mapping[Any, Any], name: str, value: str) -> pd.DataFrame:
    """``{query_id: {doc_id: value}}`` (pytrec_eval's layout) as a frame with columns query_id, doc_id, value."""
    import pandas as pd

    qids: list[Any] = []
    docs: list[Any] = []
    values: list[Any] = []
    for qid, per_doc in obj.items():
        if not isinstance(per_doc, Mapping):
            raise TypeError(
                f"{name} must map each query id to a mapping {{doc_id: {value}}}; query {qid!r} maps to "
                f"a {type(per_doc).__name__}"
            )
        qids += [qid] * len(per_doc)
        docs += list(per_doc)
        values += list(per_doc.values())
    return pd.DataFrame({"query_id": pd.Series(qids, dtype=object), "doc_id": pd.Series(docs, dtype=object),
                         value: pd.Series(values, dtype=object)})


def _checked_numbers(df: pd.DataFrame, column: str, name: str, *, integer: bool) -> np.ndarray:
    """The column as float64, refusing what the file readers refuse, with an error naming a bad row.

    Numbers must be finite (integers for ``integer``); text is read only
    where the file reader would read it (``_INT`` or ``_FLOAT``, so not
    ``"1_0"``); missing values (NaN, None), booleans and other objects are
    refused.
    """
    import pandas as pd

    col = df[column]
    kind = col.dtype.kind
    if kind in "iuf":
        values = col.to_numpy(dtype=np.float64)
        good = np.isfinite(values)
    else:
        obj = col.to_numpy(dtype=object)
        is_num = np.fromiter(
            (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in obj),
            dtype=bool, count=obj.size,
        )
        is_str = np.fromiter((isinstance(v, str) for v in obj), dtype=bool, count=obj.size)
        text = pd.Series(np.where(is_str, obj, ""), dtype=str)
        is_str &= text.str.fullmatch(_INT if integer else _FLOAT).to_numpy(dtype=bool)
        values = np.full(obj.size, np.nan)
        take = is_num | is_str
        values[take] = np.asarray([float(v) for v in obj[take]], dtype=np.float64) if take.any() else []
        good = take & np.isfinite(values)
    if integer:
        good &= np.floor(np.where(good, values, 0.0)) == np.where(good, values, 0.0)
    if not good.all():
        i = int(np.flatnonzero(~good)[0])
        raw = col.iloc[i]
        where = f"row {i} (query {df['query_id'].iloc[i]!r}, document {df['doc_id'].iloc[i]!r})"
        if raw is None or (isinstance(raw, float) and np.isnan(raw)) or raw is pd.NA:
            raise ValueError(f"{name}: {column} is missing at {where}; every {column} must be given")
        want = "an integer" if integer else "a finite number"
        raise ValueError(f"{name}: {column} must be {want}; {where} holds {raw!r} ({int((~good).sum())} bad in all)")
    return values


def _check_ids(df: pd.DataFrame, name: str) -> None:
    for col in ("query_id", "doc_id"):
        missing = df[col].isna().to_numpy(dtype=bool)
        if missing.any():
            raise ValueError(f"{name}: {col} is missing at row {int(np.flatnonzero(missing)[0])}")


def run_frame(obj: object, name: str) -> pd.DataFrame:
    """A run as :func:`read_trec_run` returns it, from a path, a DataFrame or ``{query_id: {doc_id: score}}``.

    Public inside the package (``uncertank evaluate`` reads its runs
    through it), not exported.

    A frame or mapping is checked as the file reader checks a file: finite
    numeric scores, no missing ids, no document twice for one query (of one
    system), not empty; errors name ``name``.
    """
    import pandas as pd

    if isinstance(obj, (str, os.PathLike)):
        return read_trec_run(obj)
    if isinstance(obj, Mapping):
        df = _from_nested(obj, name, "score")
    elif isinstance(obj, pd.DataFrame):
        _require_columns(obj, name, ("query_id", "doc_id", "score"))
        df = obj
    else:
        raise TypeError(
            f"{name} must be a path, a pandas DataFrame or a mapping {{query_id: {{doc_id: score}}}}; "
            f"got {type(obj).__name__}"
        )
    if df.empty:
        raise ValueError(f"{name} holds no entries")
    _check_ids(df, name)
    score = _checked_numbers(df, "score", name, integer=False)
    out = pd.DataFrame({"query_id": df["query_id"].astype(str).to_numpy(),
                        "doc_id": df["doc_id"].astype(str).to_numpy(), "score": score})
    if "system" in df.columns:
        out["system"] = df["system"].astype(str).to_numpy()
    keys = ["system", "query_id", "doc_id"] if "system" in out.columns else ["query_id", "doc_id"]
    dup = out.duplicated(keys, keep=False).to_numpy(dtype=bool)
    if dup.any():
        rows = np.flatnonzero(dup)
        first = out.iloc[int(rows[0])]
        qids, docs = out["query_id"].to_numpy()[rows], out["doc_id"].to_numpy()[rows]
        again = rows[(qids == first["query_id"]) & (docs == first["doc_id"])]
        raise ValueError(
            f"{name}: document {first['doc_id']!r} is retrieved twice for query {first['query_id']!r} "
            f"(rows {int(again[0])} and {int(again[1])}); trec_eval refuses a run with a duplicate document"
        )
    return out


def qrels_frame(obj: object, name: str) -> pd.DataFrame:
    """Qrels as :func:`read_qrels` returns them, from a path, a DataFrame or ``{query_id: {doc_id: grade}}``.

    A frame or mapping is checked as the file reader checks a file: integer
    grades (no missing, fractional or non-numeric one), no missing ids, a
    document judged twice for one query only with the same grade (then
    kept once), not empty; errors name ``name``.
    """
    import pandas as pd

    if isinstance(obj, (str, os.PathLike)):
        return read_qrels(obj)
    if isinstance(obj, Mapping):
        df = _from_nested(obj, name, "relevance")
    elif isinstance(obj, pd.DataFrame):
        _require_columns(obj, name, _QRELS_COLUMNS)
        df = obj
    else:
        raise TypeError(
            f"{name} must be a path, a pandas DataFrame or a mapping {{query_id: {{doc_id: grade}}}}; "
            f"got {type(obj).__name__}"
        )
    if df.empty:
        raise ValueError(f"{name} holds no judgements")
    _check_ids(df, name)
    rel = _checked_numbers(df, "relevance", name, integer=True).astype(np.int64)
    out = pd.DataFrame({"query_id": df["query_id"].astype(str).to_numpy(),
                        "doc_id": df["doc_id"].astype(str).to_numpy(), "relevance": rel})
    dup = out.duplicated(["query_id", "doc_id"], keep=False)
    if dup.any():
        grades = out[dup].groupby(["query_id", "doc_id"], sort=False)["relevance"]
        conflict = grades.nunique().gt(1)
        if conflict.any():
            qid, doc = conflict[conflict].index[0]
            seen = sorted(set(grades.get_group((qid, doc)).tolist()))
            raise ValueError(
                f"{name}: document {doc!r} of query {qid!r} is judged twice with different grades {seen}"
            )
        out = out.drop_duplicates(["query_id", "doc_id"]).reset_index(drop=True)
    return out


def query_order(ids: np.ndarray) -> np.ndarray:
    """Sort query ids numerically when all are integers, else as strings."""
    uniq = np.unique(ids.astype(str))
    try:
        keys = np.array([int(u) for u in uniq])
    except ValueError:
        return uniq
    return uniq[np.argsort(keys, kind="stable")]


def ranked_lists_from_run(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]] | str | os.PathLike[str],
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]] | str | os.PathLike[str],
    *,
    system: str | None = None,
) -> RankedLists:
    """Pair a run with qrels as :class:`~uncertank.RankedLists`.

    Parameters
    ----------
    run : pandas.DataFrame, mapping or path
        A frame as :func:`read_trec_run` returns (columns ``query_id``,
        ``doc_id``, ``score`` and, when it holds several runs, ``system``),
        a mapping ``{query_id: {doc_id: score}}`` (pytrec_eval's layout),
        or the path of a run file. A frame or mapping is checked as a file
        is: finite numeric scores, no missing id, no document twice for a
        query.
    qrels : pandas.DataFrame, mapping or path
        A frame as :func:`read_qrels` returns, a mapping ``{query_id:
        {doc_id: grade}}``, or the path of a qrels file. A frame or mapping
        is checked as a file is: integer grades (none missing), a document
        judged twice only with the same grade.
    system : str, optional
        Which run to take when ``run`` holds several; required then.

    Returns
    -------
    RankedLists
        One list per query that is both in the run and in the qrels (the
        queries ``trec_eval`` evaluates by default), queries in numeric order
        when every id is an integer and in string order otherwise. Within a
        query the documents are ordered as ``trec_eval`` orders them: by
        descending score, ties by descending ``doc_id``; the ``rank`` field
        is ignored, as ``trec_eval`` ignores it. Labels are the qrels grades,
        with unjudged documents and negative grades set to 0. ``query_ids``
        and ``candidate_ids`` carry the TREC ids.

    Raises
    ------
    ValueError
        When ``run`` holds several systems and ``system`` is None, names a
        system it does not hold, or no query of the run is judged; when a
        frame or mapping fails the checks above (the message names ``run``
        or ``qrels`` and the row).
    """
    import pandas as pd

    run_df = run_frame(run, "run")
    qrels_df = qrels_frame(qrels, "qrels")
    if "system" in run_df.columns:
        systems = pd.unique(run_df["system"].astype(str))
        if system is None:
            if systems.size > 1:
                raise ValueError(
                    f"run holds {systems.size} systems ({', '.join(map(repr, systems[:5]))}"
                    f"{', ...' if systems.size > 5 else ''}); pass system= to choose one"
                )
        else:
            if system not in set(systems):
                raise ValueError(
                    f"system must be one of the run's systems {sorted(systems)[:10]}; got {system!r}"
                )
            run_df = run_df[run_df["system"].astype(str) == system]
    elif system is not None:
        raise ValueError("system was given but run has no 'system' column")

    frame = pd.DataFrame({
        "query_id": run_df["query_id"].astype(str).to_numpy(),
        "doc_id": run_df["doc_id"].astype(str).to_numpy(),
        "score": run_df["score"].to_numpy(dtype=np.float64),
    })
    judged = pd.DataFrame({
        "query_id": qrels_df["query_id"].astype(str).to_numpy(),
        "doc_id": qrels_df["doc_id"].astype(str).to_numpy(),
        "relevance": qrels_df["relevance"].to_numpy(dtype=np.int64),
    }).drop_duplicates(["query_id", "doc_id"])
    frame = frame[frame["query_id"].isin(set(judged["query_id"]))]
    if frame.empty:
        raise ValueError("no query of run is judged in qrels; check that the query ids match")
    frame = frame.merge(judged, on=["query_id", "doc_id"], how="left")
    qid = frame["query_id"].to_numpy()
    doc = frame["doc_id"].to_numpy()
    score = frame["score"].to_numpy()
    order_q = query_order(qid)
    q_code = pd.Index(order_q).get_indexer(qid).astype(np.int64)
    # trec_eval: descending score, ties by descending docno. lexsort's last key is primary;
    # negating the rank of each doc id in string order gives the descending tie-break.
    doc_rank = np.unique(doc.astype(str), return_inverse=True)[1]
    order = np.lexsort((-doc_rank, -score, q_code))
    labels = np.maximum(frame["relevance"].fillna(0).to_numpy(dtype=np.int64)[order], 0)
    counts = np.bincount(q_code, minlength=order_q.size)
    offsets = np.zeros(order_q.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return RankedLists(
        score[order], labels, offsets,
        query_ids=[str(q) for q in order_q], candidate_ids=[str(d) for d in doc[order]],
    )


_KINDS = ("scores", "rbp_gain", "pooled")
_FILES = {"scores": "round1_data.csv", "rbp_gain": "round1_rbpgain.csv", "pooled": "round1_pooled.csv"}


def _read_bundled(name: str) -> pd.DataFrame:
    import pandas as pd

    ref = resources.files("uncertank.datasets").joinpath("_data", "trec-covid-round1", name)
    with ref.open("rb") as fh:
        return pd.read_csv(fh)


def load_trec_covid_round1(
    kind: Literal["scores", "rbp_gain", "pooled"] = "scores", *, pooled_only: bool = False
) -> pd.DataFrame:
    """The bundled TREC-COVID round 1 data of Benham, Moffat & Culpepper (ECIR 2021).

    Copied unedited from the ``rmit-ir/bayesian-shallow`` repository (MIT
    licence, Copyright (c) 2021 Rodger Benham; the notice ships beside the
    files).

    Parameters
    ----------
    kind : {"scores", "rbp_gain", "pooled"}
        - ``"scores"``: 107 runs x 30 topics, columns ``system``, ``topic``
          (int), ``score``: one per-topic score in [0, 1]. The source does
          not label it; on the 3,150 (system, topic) cells shared with
          ``"rbp_gain"``, 3,137 lie within the depth-7 truncation residual of
          binary RBP with persistence 0.5 computed from those gains (grade >
          0 counts as relevant), so it is most likely RBP(0.5) over the whole
          run; the 13 others differ, by up to 0.124.
        - ``"rbp_gain"``: columns ``system``, ``topic``, ``rank``, ``score``:
          the RBP (persistence 0.8) gain of each ranked document, ranks 1-7
          (a few 8-9), ``(1 - 0.8) * 0.8 ** (rank - 1) * g`` with graded gain
          g in {0, 0.5, 1}. Its run set differs from ``"scores"`` by two
          runs each way (none of the four pooled).
        - ``"pooled"``: 143 runs, columns ``system`` and ``pooled`` (bool):
          whether the run contributed to the judgement pool (56 did).
    pooled_only : bool
        Keep only the pooled runs: 42 runs in ``"scores"`` and
        ``"rbp_gain"``. This is the paper's setting: its code keeps
        ``pooled == 1``, and the 14 pooled runs absent from the files are
        the bottom 25% of the 56 pooled runs that the paper discards.

    Returns
    -------
    pandas.DataFrame
        In file order. :data:`TREC_COVID_ROUND1_BM25_BASELINE`
        (``"bm25_baseline"``) is the BM25 baseline run of the paper's risk
        analysis.

    Examples
    --------
    >>> df = load_trec_covid_round1("scores", pooled_only=True)
    >>> df["system"].nunique(), df["topic"].nunique()
    (42, 30)
    """
    check_choice(kind, "kind", _KINDS)
    if not isinstance(pooled_only, bool):
        raise TypeError(f"pooled_only must be a bool; got {type(pooled_only).__name__}")
    df = _read_bundled(_FILES[kind])
    df["system"] = df["system"].astype(str)
    if kind == "pooled":
        df["pooled"] = df["pooled"].astype(bool)
        return df[df["pooled"]].reset_index(drop=True) if pooled_only else df
    df["topic"] = df["topic"].astype(np.int64)
    if kind == "rbp_gain":
        df["rank"] = df["rank"].astype(np.int64)
    df["score"] = df["score"].astype(np.float64)
    if pooled_only:
        pooled = _read_bundled(_FILES["pooled"])
        keep = set(pooled.loc[pooled["pooled"].astype(bool), "system"].astype(str))
        df = df[df["system"].isin(keep)].reset_index(drop=True)
    return df
