"""The data a comparison reads: a long frame of (system, topic[, rank], score).

- :func:`check_frame` validates a frame for a family and returns a clean copy.
- :func:`frame_from_runs` computes RBP (or per-rank RBP gains) from TREC runs
  and qrels.
- :func:`frame_from_trec_covid` returns the bundled TREC-COVID round 1 data in
  the setting of Benham, Moffat & Culpepper (ECIR 2021).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from uncertank._types import query_index
from uncertank.validation import (
    check_bool,
    check_choice,
    check_instance,
    check_positive_int,
    check_probabilities,
    check_unit_interval,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_frame", "drop_bottom_systems", "frame_from_runs", "frame_from_trec_covid"]

_FAMILIES = ("gaussian", "zoib", "zoib_rank")


def check_frame(df: object, family: str) -> pd.DataFrame:
    """Validate a long frame for ``family`` and return a clean copy.

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``system``, ``topic`` and ``score`` (one row per system and
        topic), plus ``rank`` for ``"zoib_rank"`` (one row per system, topic
        and rank). Other columns are ignored.
    family : {"gaussian", "zoib", "zoib_rank"}
        The model the frame is for; the beta families need scores in [0, 1].

    Returns
    -------
    pandas.DataFrame
        Columns ``system`` (str), ``topic`` (int64 when every topic is an
        integer, str otherwise), ``score`` (float64) and, for
        ``"zoib_rank"``, ``rank`` (int64), with a fresh index.

    Raises
    ------
    TypeError
        When ``df`` is not a DataFrame or ``score`` (``rank``) is not numeric.
    ValueError
        On a missing column, a NaN, a score outside [0, 1] for a beta family,
        a rank that is not an integer >= 1, a duplicated (system, topic[,
        rank]) row, or fewer than 2 systems or topics.
    """
    import pandas as pd

    check_choice(family, "family", _FAMILIES)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__}")
    needed = ["system", "topic", "score"] + (["rank"] if family == "zoib_rank" else [])
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(
            f"df must have columns {needed} for family {family!r}; missing {missing} "
            f"(has {list(map(str, df.columns))})"
        )
    for col in needed:
        n_nan = int(df[col].isna().sum())
        if n_nan:
            raise ValueError(f"df column {col!r} must not hold NaN; got {n_nan} missing values")
    if len(df) == 0:
        raise ValueError("df must not be empty")
    if not pd.api.types.is_numeric_dtype(df["score"]) or pd.api.types.is_bool_dtype(df["score"]):
        raise TypeError(f"df column 'score' must be numeric; got dtype {df['score'].dtype}")
    score = df["score"].to_numpy(dtype=np.float64)
    if not np.isfinite(score).all():
        bad = score[~np.isfinite(score)]
        raise ValueError(f"df column 'score' must be finite; got {bad.size} inf values")
    if family != "gaussian":
        check_probabilities(score, f"df column 'score' (family {family!r})")
    out: pd.DataFrame = pd.DataFrame({"system": df["system"].astype(str).to_numpy()})
    topic = df["topic"]
    if pd.api.types.is_integer_dtype(topic):
        out["topic"] = topic.to_numpy(dtype=np.int64)
    else:
        as_str = topic.astype(str)
        numeric = pd.to_numeric(as_str, errors="coerce")
        if numeric.notna().all() and (numeric == numeric.round()).all():
            out["topic"] = numeric.to_numpy(dtype=np.int64)
        else:
            out["topic"] = as_str.to_numpy()
    keys = ["system", "topic"]
    if family == "zoib_rank":
        rank = df["rank"]
        if not pd.api.types.is_numeric_dtype(rank) or pd.api.types.is_bool_dtype(rank):
            raise TypeError(f"df column 'rank' must hold integers >= 1; got dtype {rank.dtype}")
        r = rank.to_numpy(dtype=np.float64)
        bad_r = (r != np.round(r)) | (r < 1)
        if bad_r.any():
            raise ValueError(
                f"df column 'rank' must hold integers >= 1; got {int(bad_r.sum())} others, "
                f"e.g. {float(r[bad_r][0])!r}"
            )
        out["rank"] = r.astype(np.int64)
        keys.append("rank")
    out["score"] = score
    dup = out.duplicated(keys)
    if dup.any():
        first = out.loc[dup, keys].iloc[0].tolist()
        raise ValueError(
            f"df must hold one row per {tuple(keys)}; got {int(dup.sum())} duplicated rows, "
            f"e.g. {tuple(first)}"
        )
    for col in ("system", "topic"):
        n = out[col].nunique()
        if n < 2:
            raise ValueError(f"df must hold at least 2 distinct {col}s to compare; got {n}")
    return out


def drop_bottom_systems(df: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """Drop the ``fraction`` of systems with the lowest mean per-topic score.

    Parameters
    ----------
    df : pandas.DataFrame
        A frame from :func:`check_frame`. With a ``rank`` column, a system's
        per-topic score is the sum of its gains on that topic.
    fraction : float
        In [0, 1); ``floor(fraction * n_systems)`` systems are dropped (ties
        broken by system name).

    Returns
    -------
    pandas.DataFrame
        The rows of the systems kept, index reset.
    """
    import pandas as pd

    check_instance(df, "df", pd.DataFrame, "a pandas DataFrame")
    fraction = check_unit_interval(fraction, "drop_bottom", closed="left")
    per_topic = df.groupby(["system", "topic"], sort=True)["score"].sum()
    means = per_topic.groupby(level="system").mean()
    n_drop = int(np.floor(float(fraction) * means.size))
    kept: pd.DataFrame
    if n_drop == 0:
        kept = df.reset_index(drop=True)
        return kept
    order = sorted(means.index, key=lambda s: (means[s], s))
    dropped = set(order[:n_drop])
    kept = df[~df["system"].isin(dropped)].reset_index(drop=True)
    if kept["system"].nunique() < 2:
        raise ValueError(
            f"drop_bottom={fraction!r} leaves {kept['system'].nunique()} system(s); at least 2 are needed"
        )
    return kept


def _collect_runs(runs: object) -> pd.DataFrame:
    import pandas as pd

    from uncertank.datasets.trec_files import read_trec_run

    if isinstance(runs, pd.DataFrame):
        frames = [runs]
    elif isinstance(runs, (str, os.PathLike)):
        p = Path(runs)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
            if not files:
                raise ValueError(f"runs directory {str(p)!r} holds no files")
            frames = [read_trec_run(f) for f in files]
        else:
            frames = [read_trec_run(p)]
    elif isinstance(runs, Sequence):
        frames = [r if isinstance(r, pd.DataFrame) else read_trec_run(r) for r in runs]
        if not frames:
            raise ValueError("runs must hold at least one run")
    else:
        raise TypeError(
            "runs must be a DataFrame, a run file, a directory of run files or a list of them; "
            f"got {type(runs).__name__}"
        )
    for f in frames:
        missing = [c for c in ("query_id", "doc_id", "score", "system") if c not in f.columns]
        if missing:
            raise ValueError(f"runs must have columns query_id, doc_id, score, system; missing {missing}")
    out: pd.DataFrame = pd.concat([f[["query_id", "doc_id", "score", "system"]] for f in frames], ignore_index=True)
    out["query_id"] = out["query_id"].astype(str)
    out["doc_id"] = out["doc_id"].astype(str)
    out["system"] = out["system"].astype(str)
    if out.duplicated(["system", "query_id", "doc_id"]).any():
        raise ValueError("runs retrieve a document twice for one query and system "
                         "(two files with the same run tag?)")
    return out


def frame_from_runs(
    runs: object,
    qrels: object,
    *,
    phi: float = 0.8,
    per_rank: bool = False,
    depth: int | None = None,
    gain: Literal["graded", "binary"] = "graded",
) -> pd.DataFrame:
    """Per-topic RBP (or per-rank RBP gains) of TREC runs, for :func:`~uncertank.bayes.compare`.

    Documents are ordered as ``trec_eval`` orders them (descending score,
    ties by descending document id). With ``g_k`` the gain of the document
    at rank ``k``, RBP (Moffat & Zobel, TOIS 2008) is
    ``(1 - phi) * sum_k phi ** (k - 1) * g_k`` over ranks ``k <= depth``;
    unjudged documents gain 0 (the residual is not added). RBP is computed
    by :func:`uncertank.metrics.rank_biased_precision` (its persistence
    ``p`` is ``phi`` here); a per-rank gain is what its rank adds to RBP.

    Parameters
    ----------
    runs : DataFrame, path, or sequence of them
        A frame as :func:`uncertank.datasets.read_trec_run` returns (it may
        hold several systems), a run file, a directory of run files, or a
        list of frames or files.
    qrels : DataFrame or path
        Judgements as :func:`uncertank.datasets.read_qrels` returns.
    phi : float
        RBP persistence in (0, 1).
    per_rank : bool
        Return one row per rank (the ``zoib_rank`` input) instead of one
        per topic.
    depth : int, optional
        Evaluation depth. Required with ``per_rank`` (the pool depth; 7 for
        TREC-COVID round 1); all ranks otherwise.
    gain : {"graded", "binary"}
        ``"graded"``: ``g = grade / max grade``; ``"binary"``: ``g = 1`` for
        grade > 0. Negative grades count as 0.

    Returns
    -------
    pandas.DataFrame
        Columns ``system``, ``topic`` (the judged query ids) and ``score``
        (plus ``rank`` with ``per_rank``). Every system gets a row for every
        judged topic; a topic it retrieved nothing for scores 0 (and has no
        per-rank rows).
    """
    import pandas as pd

    from uncertank import RankedLists
    from uncertank.datasets.trec_files import read_qrels
    from uncertank.metrics import rank_biased_precision

    check_choice(gain, "gain", ("graded", "binary"))
    check_unit_interval(phi, "phi")
    if depth is not None:
        check_positive_int(depth, "depth")
    per_rank = check_bool(per_rank, "per_rank")
    if per_rank and depth is None:
        raise ValueError("per_rank=True needs depth= (the pool depth, e.g. 7 for TREC-COVID round 1)")
    run = _collect_runs(runs)
    if isinstance(qrels, (str, os.PathLike)):
        qrels = read_qrels(qrels)
    if not isinstance(qrels, pd.DataFrame):
        raise TypeError(f"qrels must be a DataFrame or a path; got {type(qrels).__name__}")
    q = qrels[["query_id", "doc_id", "relevance"]].copy()
    q["query_id"] = q["query_id"].astype(str)
    q["doc_id"] = q["doc_id"].astype(str)
    q["grade"] = np.rint(q["relevance"].to_numpy(dtype=np.float64).clip(min=0)).astype(np.int64)
    top = int(q["grade"].max()) if len(q) else 0
    topics = np.unique(q["query_id"].to_numpy())
    run = run[run["query_id"].isin(set(topics))]
    if run.empty:
        raise ValueError("no query of runs is judged in qrels; check that the query ids match")
    merged = run.merge(q[["query_id", "doc_id", "grade"]], on=["query_id", "doc_id"], how="left")
    merged["grade"] = merged["grade"].fillna(0).astype(np.int64)
    merged = merged.sort_values(["system", "query_id", "score", "doc_id"],
                                ascending=[True, True, False, False], kind="stable").reset_index(drop=True)
    merged["rank"] = merged.groupby(["system", "query_id"], sort=False).cumcount().to_numpy() + 1
    if depth is not None:
        merged = merged[merged["rank"] <= depth].reset_index(drop=True)
    # One list per (system, topic), in trec_eval order: the metric ranks by the score -rank, so its
    # own tie rule never applies. RBP itself is the metrics module's (one definition).
    first = np.flatnonzero(merged["rank"].to_numpy() == 1)
    offsets = np.append(first, len(merged)).astype(np.int64)
    lists = RankedLists.from_flat(-merged["rank"].to_numpy(dtype=np.float64), merged["grade"].to_numpy(), offsets)
    max_grade = top if gain == "graded" and top > 0 else None

    def rbp(at: int | None) -> NDArray[np.float64]:
        value = rank_biased_precision(lists, p=phi, depth=at, max_grade=max_grade, per_query=True)[0]
        return np.asarray(value, dtype=np.float64)

    merged = merged.rename(columns={"query_id": "topic"})
    out: pd.DataFrame
    if per_rank:
        assert depth is not None
        # the gain of rank k is what rank k adds to RBP: RBP to depth k minus RBP to depth k - 1
        cumulative = np.stack([np.zeros(offsets.size - 1)] + [rbp(k) for k in range(1, depth + 1)])
        per_rank_gain = np.diff(cumulative, axis=0)  # (depth, n_lists)
        list_of_row = query_index(offsets)
        merged["score"] = per_rank_gain[merged["rank"].to_numpy() - 1, list_of_row]
        out = merged[["system", "topic", "rank", "score"]].reset_index(drop=True)
    else:
        heads = merged.iloc[first]
        sums = pd.Series(rbp(depth), index=pd.MultiIndex.from_arrays(
            [heads["system"].to_numpy(), heads["topic"].to_numpy()], names=["system", "topic"]))
        systems = np.unique(run["system"].to_numpy())
        full = pd.MultiIndex.from_product([systems, topics], names=["system", "topic"])
        out = sums.reindex(full, fill_value=0.0).reset_index(name="score")
    return out


def frame_from_trec_covid(family: str = "zoib", *, pooled_only: bool = True) -> pd.DataFrame:
    """The bundled TREC-COVID round 1 frame for ``family``, in the paper's setting.

    Parameters
    ----------
    family : {"gaussian", "zoib", "zoib_rank"}
        ``"zoib_rank"`` gets the per-rank RBP gains, the others the per-topic
        scores (see :func:`uncertank.datasets.trec_covid.load_trec_covid_round1`).
    pooled_only : bool
        Keep the 42 pooled runs (True, the paper's setting) or all 107.

    Returns
    -------
    pandas.DataFrame
        Ready for :func:`~uncertank.bayes.compare`.
    """
    from uncertank.datasets.trec_covid import load_trec_covid_round1

    check_choice(family, "family", _FAMILIES)
    kind = "rbp_gain" if family == "zoib_rank" else "scores"
    return load_trec_covid_round1(kind, pooled_only=pooled_only)  # type: ignore[arg-type]
