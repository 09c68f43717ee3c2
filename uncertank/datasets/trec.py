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
import zlib
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

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

_INT = r"[+-]?\d+"  # what int() accepts, less whitespace and underscores
_QRELS_COLUMNS = ("query_id", "doc_id", "relevance")


def _check_path(path: object, name: str, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike); got {type(path).__name__}")
    p = Path(path)
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
        try:
            rank = int(rank_s)
        except ValueError:
            raise ValueError(f"run file {where}: rank must be an integer; got {rank_s!r}") from None
        try:
            score = float(score_s)
        except ValueError:
            raise ValueError(f"run file {where}: score must be a number; got {score_s!r}") from None
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
        try:
            rel = int(rel_s)
        except ValueError:
            raise ValueError(
                f"qrels file {where}: relevance must be an integer; got {rel_s!r}"
            ) from None
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


def _as_frame(obj: object, name: str, columns: tuple[str, ...], reader: object) -> pd.DataFrame:
    import pandas as pd

    if isinstance(obj, (str, os.PathLike)):
        return reader(obj)  # type: ignore[operator, no-any-return]
    if not isinstance(obj, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame or a path; got {type(obj).__name__}")
    missing = [c for c in columns if c not in obj.columns]
    if missing:
        raise ValueError(
            f"{name} must have columns {list(columns)}; missing {missing} (has {list(obj.columns)})"
        )
    return obj


def _query_order(ids: np.ndarray) -> np.ndarray:
    """Sort query ids numerically when all are integers, else as strings."""
    uniq = np.unique(ids.astype(str))
    try:
        keys = np.array([int(u) for u in uniq])
    except ValueError:
        return uniq
    return uniq[np.argsort(keys, kind="stable")]


def ranked_lists_from_run(
    run: pd.DataFrame | str | os.PathLike[str],
    qrels: pd.DataFrame | str | os.PathLike[str],
    *,
    system: str | None = None,
) -> RankedLists:
    """Pair a run with qrels as :class:`~uncertank.RankedLists`.

    Parameters
    ----------
    run : pandas.DataFrame or path
        A frame as :func:`read_trec_run` returns (columns ``query_id``,
        ``doc_id``, ``score`` and, when it holds several runs, ``system``),
        or the path of a run file.
    qrels : pandas.DataFrame or path
        A frame as :func:`read_qrels` returns, or the path of a qrels file.
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
        system it does not hold, or no query of the run is judged.
    """
    import pandas as pd

    run_df = _as_frame(run, "run", ("query_id", "doc_id", "score"), read_trec_run)
    qrels_df = _as_frame(qrels, "qrels", _QRELS_COLUMNS, read_qrels)
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
    order_q = _query_order(qid)
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
