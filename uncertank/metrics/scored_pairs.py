"""Scored pairs read from Parquet or CSV in chunks of whole queries, in constant memory."""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from uncertank._optional import require
from uncertank._types import RankedLists
from uncertank.validation import check_choice, check_positive_int

__all__ = ["read_scored_pairs"]

def _detect_format(path: str, fmt: str | None) -> str:
    if fmt is not None:
        return check_choice(fmt, "format", ("parquet", "csv"))
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    if lower.endswith((".csv", ".csv.gz", ".tsv")):
        return "csv"
    raise ValueError(f"cannot tell the format of {path!r} from its name; pass format='parquet' or format='csv'")


def _batches(path: str, fmt: str, columns: list[str], chunk_size: int) -> Iterator[Any]:  # pyarrow RecordBatches
    if fmt == "parquet":
        pq = require("pyarrow.parquet", "scale", what="reading Parquet")
        pf = pq.ParquetFile(path)
        missing = [c for c in columns if c not in pf.schema_arrow.names]
        if missing:
            raise ValueError(f"{path}: no column {missing[0]!r}; the columns are {pf.schema_arrow.names}")
        yield from pf.iter_batches(batch_size=chunk_size, columns=columns)
        return
    pa = require("pyarrow", "scale", what="reading CSV")
    pacsv = require("pyarrow.csv", "scale", what="reading CSV")
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    # about 24 bytes per row of text: a block of chunk_size rows
    read = pacsv.ReadOptions(block_size=max(1 << 16, min(chunk_size * 24, 1 << 30)))
    convert = pacsv.ConvertOptions(
        include_columns=columns, column_types={columns[0]: pa.string(), columns[1]: pa.float64()}
    )
    try:
        reader = pacsv.open_csv(path, read_options=read, parse_options=pacsv.ParseOptions(delimiter=delimiter),
                                convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowKeyError) as exc:
        raise ValueError(f"{path}: cannot read columns {columns}: {exc}") from None
    try:
        yield from reader
    except pa.ArrowInvalid as exc:  # a value that does not parse, past the first block
        raise ValueError(f"{path}: cannot read columns {columns}: {exc}") from None


def read_scored_pairs(
    path: str | os.PathLike[str],
    *,
    query: str = "query_id",
    score: str = "score",
    label: str = "label",
    chunk_size: int = 1 << 20,
    format: str | None = None,
) -> Iterator[RankedLists]:
    """Stream scored pairs (query id, score, label) from Parquet or CSV in chunks of whole queries.

    The file is read in batches of about ``chunk_size`` rows with pyarrow
    (``ParquetFile.iter_batches`` or ``pyarrow.csv.open_csv``); the rows of
    the last query of a batch are carried into the next one, so that every
    chunk yielded holds whole queries and memory stays at about one batch.
    The rows of a query must be contiguous (a file sorted or grouped by
    query id, as a TREC run is): a query id that comes back after another
    query is an error wherever it comes back, in the same batch or a later
    one (the reader keeps the set of query ids seen, so its memory grows
    with the number of queries, not of rows). Candidates keep their file
    order (the tie rule ranks the earlier row first on equal scores).

    Parameters
    ----------
    path : path
        A ``.parquet``/``.pq`` or ``.csv``/``.tsv`` file (or give ``format``).
    query, score, label : str
        Column names: the query id (any type; read as text from CSV), the
        score (float), the label (integer ``>= 0``).
    chunk_size : int
        Rows per batch read, ``>= 1``.
    format : {"parquet", "csv"}, optional
        Default: from the file name.

    Yields
    ------
    RankedLists
        The whole queries read so far, in file order.

    Raises
    ------
    ValueError
        A missing column, a query whose rows are not contiguous (the message
        names the query and the file), an unknown format, or scores or
        labels that fail the checks of :class:`~uncertank.RankedLists`.
    ImportError
        Without pyarrow (``pip install "uncertank[scale]"``).
    """
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    path_s = os.fspath(path)
    fmt = _detect_format(path_s, format)
    pa = require("pyarrow", "scale", what="streaming scored pairs")
    pc = require("pyarrow.compute", "scale", what="streaming scored pairs")
    columns = [query, score, label]
    carry: tuple[Any, NDArray[np.float64], NDArray[np.generic]] | None = None  # pyarrow ids, scores, labels
    seen: set[Hashable] = set()  # the ids of the queries yielded so far
    for batch in _batches(path_s, fmt, columns, chunk_size):
        names = batch.schema.names
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"{path_s}: no column {missing[0]!r}; the columns are {names}")
        q = batch.column(names.index(query))
        s = batch.column(names.index(score)).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        y = batch.column(names.index(label)).to_numpy(zero_copy_only=False)
        if carry is not None:
            q = pa.concat_arrays([carry[0], q])
            s = np.concatenate([carry[1], s])
            y = np.concatenate([carry[2], y])
        n = len(q)
        if n == 0:
            continue
        starts = np.zeros(1, dtype=np.int64)
        if n > 1:
            change = pc.not_equal(q.slice(1), q.slice(0, n - 1)).to_numpy(zero_copy_only=False)
            starts = np.concatenate([starts, np.flatnonzero(change) + 1])
        last = int(starts[-1])
        carry = (q.slice(last), s[last:], y[last:])
        if last > 0:
            yield _chunk(path_s, pc, q.slice(0, last), s[:last], y[:last], starts[:-1], seen)
    if carry is not None and len(carry[0]):
        yield _chunk(path_s, pc, carry[0], carry[1], carry[2], np.zeros(1, dtype=np.int64), seen)


def _chunk(
    path: str, pc: ModuleType, q: Any, s: NDArray[np.float64], y: NDArray[np.generic], starts: NDArray[np.int64],
    seen: set[Hashable],
) -> RankedLists:
    """RankedLists of whole queries; refuses a query id that comes back after another, and adds the ids to ``seen``."""
    ids = q.take(starts)
    again = None
    if starts.size > 1 and pc.count_distinct(ids).as_py() != starts.size:
        counts = pc.value_counts(ids)
        again = next(v["values"] for v in counts.to_pylist() if v["counts"] > 1)
    new = ids.to_pylist()  # one id per query, not per row
    if again is None and not seen.isdisjoint(new):
        again = next(v for v in new if v in seen)
    if again is not None:
        raise ValueError(
            f"{path}: the rows of query {again!r} are not contiguous (it comes back after another query); "
            "sort or group the file by query id"
        )
    seen.update(new)
    offsets = np.append(starts, s.size).astype(np.int64)
    if y.dtype.kind not in "biuf":  # text: numpy's int() would read "1_0" as 10
        example = next((v for v in y if not re.fullmatch(r"[+-]?[0-9]+", str(v))), y[0])
        raise ValueError(f"{path}: the label column must hold integers >= 0; got text such as {example!r}")
    if y.dtype.kind == "f":
        yy = y
    else:
        yy = y.astype(np.int64, copy=False)
    return RankedLists.from_flat(s, yy, offsets)
