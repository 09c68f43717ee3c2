"""A TREC run paired with qrels as :class:`~uncertank.RankedLists`: :func:`ranked_lists_from_run`.

The lists are ordered as ``trec_eval`` orders a run. The TREC files
themselves are read by :mod:`uncertank.datasets.trec_files`
(:func:`~uncertank.datasets.trec_files.read_trec_run`,
:func:`~uncertank.datasets.trec_files.read_qrels`), which names the file
and line of every malformed entry; a run or qrels given as a frame or a
mapping is checked as a file is, by :mod:`uncertank.datasets.trec_frames`;
the bundled TREC-COVID round 1 data of Benham, Moffat & Culpepper,
"Bayesian System Inference on Shallow Pools" (ECIR 2021), are
:mod:`uncertank.datasets.trec_covid`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from uncertank._types import RankedLists
from uncertank.datasets.trec_frames import qrels_frame, run_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ranked_lists_from_run",
]


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
        A frame as :func:`~uncertank.datasets.trec_files.read_trec_run` returns (columns ``query_id``,
        ``doc_id``, ``score`` and, when it holds several runs, ``system``),
        a mapping ``{query_id: {doc_id: score}}`` (pytrec_eval's layout),
        or the path of a run file. A frame or mapping is checked as a file
        is: finite numeric scores, no missing id, no document twice for a
        query.
    qrels : pandas.DataFrame, mapping or path
        A frame as :func:`~uncertank.datasets.trec_files.read_qrels` returns, a mapping ``{query_id:
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
