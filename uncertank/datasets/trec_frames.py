"""A run or qrels in any form as the frame the file readers return, checked as a file is.

:func:`run_frame` and :func:`qrels_frame` take a path (read by
:mod:`uncertank.datasets.trec_files`), a pandas DataFrame, or a mapping
``{query_id: {doc_id: value}}`` (pytrec_eval's layout), and check a frame or
mapping as the file readers check a file: numbers written as the readers
accept them, no missing ids, no document twice for one query (in qrels,
only with the same grade), not empty. Errors name the argument and the row.

Public inside the package (:func:`~uncertank.datasets.trec.ranked_lists_from_run`
and ``uncertank evaluate`` read their runs and qrels through them), not
exported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from uncertank.datasets.trec_files import FLOAT_SYNTAX, INT_SYNTAX, read_qrels, read_trec_run

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["qrels_frame", "run_frame"]

_QRELS_COLUMNS = ("query_id", "doc_id", "relevance")


def _require_columns(df: pd.DataFrame, name: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} must have columns {list(columns)}; missing {missing} (has {list(df.columns)})")


def _from_nested(obj: Mapping[object, object], name: str, value: str) -> pd.DataFrame:
    """``{query_id: {doc_id: value}}`` (pytrec_eval's layout) as a frame with columns query_id, doc_id, value."""
    import pandas as pd

    qids: list[object] = []
    docs: list[object] = []
    values: list[object] = []
    for qid, per_doc in obj.items():
        if not isinstance(per_doc, Mapping):
            raise TypeError(
                f"{name} must map each query id to a mapping {{doc_id: {value}}}; query {qid!r} maps to "
                f"a {type(per_doc).__name__}"
            )
        qids += [qid] * len(per_doc)
        docs += list(per_doc)
        values += list(per_doc.values())
    out: pd.DataFrame = pd.DataFrame({"query_id": pd.Series(qids, dtype=object),
                                      "doc_id": pd.Series(docs, dtype=object), value: pd.Series(values, dtype=object)})
    return out


def _checked_numbers(df: pd.DataFrame, column: str, name: str, *, integer: bool) -> np.ndarray:
    """The column as float64, refusing what the file readers refuse, with an error naming a bad row.

    Numbers must be finite (integers for ``integer``); text is read only
    where the file reader would read it (``INT_SYNTAX`` or ``FLOAT_SYNTAX``, so not
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
        is_str &= text.str.fullmatch(INT_SYNTAX if integer else FLOAT_SYNTAX).to_numpy(dtype=bool)
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


def _given_frame(obj: object, name: str, value: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """A mapping ``{query_id: {doc_id: value}}`` or a DataFrame with ``columns`` as a frame; anything else raises."""
    import pandas as pd

    if isinstance(obj, Mapping):
        return _from_nested(obj, name, value)
    if isinstance(obj, pd.DataFrame):
        _require_columns(obj, name, columns)
        return obj
    what = "score" if value == "score" else "grade"
    raise TypeError(
        f"{name} must be a path, a pandas DataFrame or a mapping {{query_id: {{doc_id: {what}}}}}; "
        f"got {type(obj).__name__}"
    )


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
    df = _given_frame(obj, name, "score", ("query_id", "doc_id", "score"))
    if df.empty:
        raise ValueError(f"{name} holds no entries")
    _check_ids(df, name)
    score = _checked_numbers(df, "score", name, integer=False)
    out: pd.DataFrame = pd.DataFrame({"query_id": df["query_id"].astype(str).to_numpy(),
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
    df = _given_frame(obj, name, "relevance", _QRELS_COLUMNS)
    if df.empty:
        raise ValueError(f"{name} holds no judgements")
    _check_ids(df, name)
    rel = _checked_numbers(df, "relevance", name, integer=True).astype(np.int64)
    out: pd.DataFrame = pd.DataFrame({"query_id": df["query_id"].astype(str).to_numpy(),
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
