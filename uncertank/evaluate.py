"""trec_eval-style effectiveness of TREC run files, with significance and calibration.

:func:`evaluate_runs` reads one or more run files and a qrels file, computes
the registered ranking metrics per query (and their means), compares every
run with the first by a paired t-test over the queries they share with
Holm-corrected p-values (:mod:`uncertank.stats`), and, when the scores are
probabilities of relevance, the registered calibration metrics over all
retrieved pairs. ``uncertank evaluate`` is its command line.

What is evaluated matches ``trec_eval`` (and ``pytrec_eval``) defaults:

- the queries of a run that the qrels judge (a query of the run with no
  judgement at all is skipped; a judged query the run misses is not added,
  unless ``complete=True``, trec_eval's ``-c``, ir_measures' default, where
  it counts 0);
- documents ordered by descending score, ties by descending document id;
  the rank field of the run is ignored;
- a document is relevant when its grade is ``>= 1``; an unjudged document
  counts as non-relevant; negative grades count as 0 (also as nDCG gains);
- ``map`` and ``trec_recall_at_k`` divide by every relevant document of the
  query in the qrels, and ``ndcg`` normalises by the ideal ranking of every
  judged document, all including relevant documents the run did not
  retrieve (as trec_eval's ``map``, ``map_cut_k``, ``recall_k``, ``ndcg``
  and ``ndcg_cut_k``);
- ``mrr`` is ``recip_rank``, ``precision`` is ``P_k``, ``recall_at_k`` (a
  hit in the top k, R_n@k) is ``success_k``; ``rbp`` needs no
  normalisation, and ``rbp_residual`` adds the weight of the unjudged
  retrieved documents to the tail (Moffat & Zobel). A plugin's ranking
  metric sees the retrieved list only;
- a metric's ``rel`` option (ir_measures' ``rel``, trec_eval's ``-l``) is
  the lowest grade that counts as relevant, in the qrels as in the run.

Metrics can be named as ir_measures names them (``nDCG@10``, ``AP``,
``RR``, ``P@5``, ``R@1000``, ``Success@1``, ``nDCG(rel=2)@10``; see
:mod:`uncertank.metrics.names`); the report then labels them so, but for
ir_measures' ``R@k`` (trec_eval's recall), labelled ``Recall@k``: ``R@k`` is
the label of R_n@k (``recall_at_k``, ir_measures' ``Success@k``). No two
measures share a label (:mod:`uncertank.metrics.measures`), so ``R@100`` and
``Success@100`` (or ``recall_at_k:k=100``) go in one report as two columns,
and :attr:`EvaluationReport.measures` (``"measures"`` in the JSON) gives the
canonical identifier of every column.

Calibration metrics (with ``probabilities=True``) take every retrieved
(query, document) pair with its binary label (grade >= 1); unjudged
documents count as non-relevant.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, SupportsIndex, SupportsInt

import numpy as np
from numpy.typing import NDArray

from uncertank._types import RankedLists
from uncertank.files import to_jsonable
from uncertank.formatting import format_fixed
from uncertank.validation import check_choice, check_unit_interval

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.files import JSONValue
    from uncertank.metrics import Metric
    from uncertank.metrics.metric import MetricEntry

__all__ = [
    "DEFAULT_EVALUATE_METRICS",
    "EvaluationReport",
    "RunScores",
    "evaluate_runs",
    "parse_metric",
]

Format = Literal["table", "csv", "json"]
FORMATS: tuple[Format, ...] = ("table", "csv", "json")

#: Default metrics of :func:`evaluate_runs`: MAP, MRR, nDCG@10, R@1 and R@10 (trec_eval's
#: map, recip_rank, ndcg_cut_10, success_1 and success_10).
DEFAULT_EVALUATE_METRICS: tuple[str | Mapping[str, object], ...] = (
    "map",
    "mrr",
    {"name": "ndcg", "k": 10},
    {"name": "recall_at_k", "k": 1},
    {"name": "recall_at_k", "k": 10},
)

#: Calibration metrics added with ``probabilities=True`` when none is named.
DEFAULT_CALIBRATION_METRICS: tuple[str | Mapping[str, object], ...] = ("ece", "brier", "nll")


def parse_metric(text: str) -> str | dict[str, object]:
    """Parse a command-line metric: ``"map"`` or ``"ndcg:k=5"`` / ``"ece:n_bins=15,strategy=quantile"``.

    Values are read as JSON where they parse (``5``, ``0.8``, ``true``,
    ``null``) and kept as strings otherwise.

    Examples
    --------
    >>> parse_metric("recall_at_k:k=5")
    {'name': 'recall_at_k', 'k': 5}
    >>> parse_metric("ece:strategy=quantile,n_bins=20")
    {'name': 'ece', 'strategy': 'quantile', 'n_bins': 20}
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a metric must be a name such as 'map' or 'ndcg:k=5'; got {text!r}")
    name, sep, rest = text.strip().partition(":")
    if not sep:
        return name
    entry: dict[str, object] = {"name": name}
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"metric {text!r}: options are key=value pairs separated by commas; got {part!r}")
        try:
            entry[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            entry[key.strip()] = value.strip()
    return entry


@dataclass(frozen=True, eq=False)
class RunScores:
    """One run's per-query values and summary.

    Attributes
    ----------
    name : str
        The run's name (its file name).
    query_ids : list of n_queries str
        The evaluated queries, in numeric order when every id is an integer.
    per_query : dict of str to ndarray of shape (n_queries,)
        Per-query values of each ranking metric, keyed by its label.
    summary : dict of str to float
        The mean of each ranking metric over the queries, and each
        calibration metric over all retrieved pairs.
    n_pairs : int
        Retrieved (query, document) pairs evaluated.
    """

    name: str
    query_ids: list[str]
    per_query: dict[str, NDArray[np.float64]]
    summary: dict[str, float]
    n_pairs: int


@dataclass(frozen=True, eq=False)
class EvaluationReport:
    """What :func:`evaluate_runs` returns.

    Attributes
    ----------
    runs : list of RunScores
        In the order given; the first is the baseline of the comparisons.
    metrics : list of str
        Labels of the metrics, in order (ranking first, then calibration).
    ranking : list of str
        Labels of the ranking metrics (those with per-query values).
    comparisons : dict of str to dict of str to dict
        For every run after the first, per ranking metric: ``n`` (shared
        queries), ``mean_difference`` (run minus first), ``pvalue`` (paired
        t-test, two-sided) and ``pvalue_holm`` (Holm-corrected over the
        runs compared with the first, per metric).
    alpha : float
        Significance level of the markers.
    measures : dict of str to str
        The canonical identifier of each metric's measure, by label
        (``{"R@1": "Success@1", "Recall@100": "R@100", "MAP": "AP"}``; see
        :mod:`uncertank.metrics.measures`).
    """

    runs: list[RunScores]
    metrics: list[str]
    ranking: list[str]
    comparisons: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    alpha: float = 0.05
    measures: dict[str, str] = field(default_factory=dict)

    def significant(self, run: str, metric: str) -> bool:
        """Whether ``run`` differs from the first run on ``metric`` (Holm-corrected p < alpha)."""
        comp = self.comparisons.get(run, {}).get(metric)
        return comp is not None and math.isfinite(comp["pvalue_holm"]) and comp["pvalue_holm"] < self.alpha

    # -- renderings ---------------------------------------------------------------------------

    def to_frame(self, *, per_query: bool = False) -> pd.DataFrame:
        """A pandas DataFrame: one row per run (or per run and query with ``per_query``), one column per metric."""
        import pandas as pd

        if per_query:
            rows = [
                {"run": r.name, "query_id": q, **{m: float(r.per_query[m][i]) for m in self.ranking}}
                for r in self.runs for i, q in enumerate(r.query_ids)
            ]
            frame: pd.DataFrame = pd.DataFrame(rows, columns=["run", "query_id", *self.ranking])
            return frame
        rows = [{"run": r.name, "n_queries": len(r.query_ids), **r.summary} for r in self.runs]
        frame = pd.DataFrame(rows, columns=["run", "n_queries", *self.metrics])
        return frame

    def to_dict(self, *, per_query: bool = False) -> dict[str, JSONValue]:
        """Plain JSON values: metrics, their identifiers, per-run summaries, comparisons (and per-query values)."""
        runs: dict[str, dict[str, object]] = {
            r.name: {"n_queries": len(r.query_ids), "n_pairs": r.n_pairs, "summary": dict(r.summary)}
            for r in self.runs
        }
        if per_query:
            for r in self.runs:
                runs[r.name]["per_query"] = {
                    q: {m: float(r.per_query[m][i]) for m in self.ranking} for i, q in enumerate(r.query_ids)
                }
        out = {
            "metrics": list(self.metrics),
            "measures": {m: self.measures[m] for m in self.metrics if m in self.measures},
            "baseline": self.runs[0].name,
            "alpha": self.alpha,
            "runs": runs,
            "comparisons": self.comparisons,
        }
        plain: dict[str, JSONValue] = to_jsonable(out)  # a dict of plain JSON values (typed Any there)
        return plain

    def render(self, fmt: Format = "table", *, per_query: bool = False, digits: int = 4) -> str:
        """The report as text: an aligned ``table``, ``csv`` or ``json``.

        The table marks with ``†`` a value that differs from the first run's
        with a Holm-corrected p-value below ``alpha``; CSV and JSON carry the
        p-values themselves (CSV in columns ``<metric> p`` and ``<metric> p_holm``).
        """
        fmt = check_choice(fmt, "fmt", FORMATS)
        if fmt == "json":
            return json.dumps(self.to_dict(per_query=per_query), indent=2) + "\n"
        if per_query:
            header = ["run", "query_id", *self.ranking]
            rows = [
                [r.name, q, *(format_fixed(r.per_query[m][i], digits) for m in self.ranking)]
                for r in self.runs for i, q in enumerate(r.query_ids)
            ]
            if fmt == "table":  # trec_eval's "all" lines; CSV keeps to the per-query values
                for r in self.runs:
                    rows.append([r.name, "all", *(format_fixed(r.summary[m], digits) for m in self.ranking)])
        else:
            header = ["run", "queries", *self.metrics]
            rows = []
            for i, r in enumerate(self.runs):
                cells = [r.name, str(len(r.query_ids))]
                for m in self.metrics:
                    mark = "†" if fmt == "table" and i > 0 and self.significant(r.name, m) else ""
                    cells.append(format_fixed(r.summary[m], digits) + mark)
                rows.append(cells)
            if fmt == "csv" and len(self.runs) > 1:
                header += [f"{m} {p}" for m in self.ranking for p in ("p", "p_holm")]
                for i, (r, cells) in enumerate(zip(self.runs, rows, strict=True)):
                    for m in self.ranking:
                        comp = self.comparisons.get(r.name, {}).get(m) if i > 0 else None
                        cells += ["", ""] if comp is None else [repr(comp["pvalue"]), repr(comp["pvalue_holm"])]
        if fmt == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
            return buf.getvalue()
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
        lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        if len(self.runs) > 1 and not per_query:
            lines.append(
                f"† differs from {self.runs[0].name} (paired t-test over shared queries, "
                f"Holm-corrected p < {self.alpha})"
            )
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- trec_eval normalisation


def _ideal_dcg(gains: NDArray[np.float64], owner: NDArray[np.int64], n: int, k: int | None) -> NDArray[np.float64]:
    """Per query, the DCG of its judged gains sorted descending, cut at ``k``.

    ``gains`` of shape (n_judged,) belong to query ``owner``; the discount is
    ``1 / log2(rank + 1)`` as in :func:`uncertank.metrics.ndcg_at_k`.
    """
    order = np.lexsort((-gains, owner))
    g, o = gains[order], owner[order]
    starts = np.searchsorted(o, np.arange(n))
    rank = np.arange(o.size) - starts[o]  # 0-based rank within the query
    keep = g > 0 if k is None else (g > 0) & (rank < k)
    return np.bincount(o[keep], weights=g[keep] / np.log2(rank[keep] + 2.0), minlength=n).astype(np.float64)


@dataclass(frozen=True)
class _Judged:
    """Per evaluated query, what the qrels hold beyond the retrieved list."""

    grades: NDArray[np.int64]  # the grade of every judgement of an evaluated query, flat
    owner: NDArray[np.int64]  # its query index
    judged: NDArray[np.bool_]  # whether each retrieved pair is judged, shape (n_pairs,), list order
    n_queries: int

    def n_relevant(self, rel: int) -> NDArray[np.float64]:
        """Relevant documents (grade >= rel) of every query in the qrels, shape (n_queries,)."""
        keep = self.grades >= rel
        return np.bincount(self.owner[keep], minlength=self.n_queries).astype(np.float64)

    def gains(self, rel: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """The grades >= rel (nDCG gains) of every query's judgements, and their query index."""
        keep = self.grades >= rel
        return self.grades[keep].astype(np.float64), self.owner[keep]


def _judged(lists: RankedLists, qrels: pd.DataFrame) -> _Judged:
    import pandas as pd

    assert lists.query_ids is not None and lists.candidate_ids is not None
    index = pd.Index(list(lists.query_ids))
    qid = qrels["query_id"].astype(str).to_numpy()
    doc = qrels["doc_id"].astype(str).to_numpy()
    q = index.get_indexer(pd.Index(qid))
    keep = q >= 0
    pairs = pd.MultiIndex.from_arrays([np.asarray(lists.query_ids, dtype=object)[lists.query_index],
                                       np.asarray(lists.candidate_ids, dtype=object)])
    judged = pairs.isin(pd.MultiIndex.from_arrays([qid[keep], doc[keep]]))
    grades = qrels["relevance"].to_numpy(dtype=np.int64)[keep]
    return _Judged(grades, q[keep].astype(np.int64), np.asarray(judged, dtype=bool), lists.n_queries)


def _relevant_retrieved(lists: RankedLists, rel: int) -> NDArray[np.float64]:
    """Retrieved documents with grade >= rel per query, shape (n_queries,)."""
    return np.bincount(lists.query_index, weights=(lists.labels >= rel).astype(np.float64),
                       minlength=lists.n_queries).astype(np.float64)


#: Measures whose value over the retrieved list divides by its relevant documents, which
#: trec_eval divides by every relevant document of the qrels instead (``map``, ``trec_recall_at_k``).
_OVER_ALL_RELEVANT = ("AP", "R")


def _measure(metric: Metric) -> str | None:
    """The identifier stem of the metric's measure (``"AP"``), None for a metric without one."""
    return None if metric.measure is None else metric.measure.id


def _int_option(metric: Metric, name: str, default: int) -> int:
    """The integer option ``name`` of ``metric`` (``rel``), ``default`` when it is not set."""
    value = metric.options.get(name, default)
    if not isinstance(value, (str, bytes, SupportsInt, SupportsIndex)):
        raise TypeError(f"metric {metric.display_label!r}: option {name} must be an integer; "
                        f"got {type(value).__name__} {value!r}")
    return int(value)


def _trec_normalised(metric: Metric, lists: RankedLists, judged: _Judged) -> NDArray[np.float64]:
    """Per-query values of ``metric``, renormalised as trec_eval for ``map``, ``trec_recall_at_k`` and ``ndcg``.

    A metric that takes ``judged`` (``rbp``, ``rbp_residual``) is told which
    retrieved documents the qrels judge.
    """
    extra = {"judged": judged.judged} if not metric.accepts_any_option and metric.accepts("judged") else {}
    values = np.asarray(metric(lists, per_query=True, **extra), dtype=np.float64)
    rel = _int_option(metric, "rel", 1)
    if _measure(metric) in _OVER_ALL_RELEVANT:
        rel_ret = _relevant_retrieved(lists, rel)
        n_rel = judged.n_relevant(rel)
        # the value over the retrieved list divides by the relevant retrieved; trec_eval by all relevant
        return np.divide(values * rel_ret, n_rel, out=np.zeros_like(values), where=n_rel > 0)
    if _measure(metric) == "nDCG":
        from uncertank.metrics.ranking import check_optional_cutoff

        k = check_optional_cutoff(metric.options.get("k"))  # checked when the metric was resolved
        ret = np.where(lists.labels >= rel, lists.labels, 0).astype(np.float64)
        ideal_ret = _ideal_dcg(ret, lists.query_index, lists.n_queries, k)
        gains, owner = judged.gains(rel)
        ideal_all = _ideal_dcg(gains, owner, lists.n_queries, k)
        return np.divide(values * ideal_ret, ideal_all, out=np.zeros_like(values), where=ideal_all > 0)
    return values


# --------------------------------------------------------------------------- the evaluation


def _run_name(run: object, i: int, taken: set[str]) -> str:
    """A name no other run has: the file name, else the path, else ``runs[i]``."""
    import pandas as pd

    if isinstance(run, (str, os.PathLike)):
        candidates = [Path(run).name, str(run)]
    elif isinstance(run, pd.DataFrame) and "system" in run.columns and run["system"].nunique() == 1:
        candidates = [str(run["system"].iloc[0])]
    else:
        candidates = []
    candidates.append(f"runs[{i}]")
    return next(c for c in candidates if c not in taken)


def _refuse_repeated_files(runs: Sequence[object]) -> None:
    """A run file given twice would be compared with itself under two names: refuse it."""
    seen: dict[str, int] = {}
    for i, run in enumerate(runs):
        if not isinstance(run, (str, os.PathLike)):
            continue
        key = os.path.realpath(os.fspath(run))
        if key in seen:
            raise ValueError(
                f"run file {os.fspath(run)} is given twice (runs[{seen[key]}] and runs[{i}]); give each run once"
            )
        seen[key] = i


def evaluate_runs(
    runs: Sequence[str | os.PathLike[str] | pd.DataFrame | Mapping[str, Mapping[str, float]]],
    qrels: str | os.PathLike[str] | pd.DataFrame | Mapping[str, Mapping[str, int]],
    *,
    metrics: Sequence[MetricEntry] | None = None,
    probabilities: bool = False,
    alpha: float = 0.05,
    complete: bool = False,
) -> EvaluationReport:
    r"""Evaluate TREC run files against qrels, trec_eval style.

    Parameters
    ----------
    runs : sequence of paths, DataFrames or mappings
        One or more runs, the first the baseline of the significance tests:
        run files (``qid Q0 docno rank score tag``, ``.gz`` allowed), each
        one run whatever its tags, named by its file name (its path where
        two share a name); frames with columns ``query_id``, ``doc_id`` and
        ``score`` (named by their one ``system``, else ``runs[i]``); or
        mappings ``{query_id: {doc_id: score}}`` as pytrec_eval takes them.
        Frames and mappings are checked as files are (finite numeric
        scores, no document twice for a query). The same file twice is an
        error.
    qrels : path, str, pandas.DataFrame or mapping
        The judgements (``qid iter docno rel``), the name of an
        ir_datasets collection as ``"irds:NAME"`` (its qrels, downloaded by
        ir_datasets on first use; ``pip install "uncertank[irds]"``), a
        frame as :func:`uncertank.datasets.read_qrels` returns, or a mapping
        ``{query_id: {doc_id: grade}}``; frames and mappings are checked as
        files are (integer grades, none missing, a document judged twice
        only with the same grade).
    metrics : sequence, optional
        Entries for :func:`uncertank.metrics.resolve_metrics`: registered
        names (``"map"``) or mappings with options (``{"name": "ndcg", "k":
        5}``). Default :data:`DEFAULT_EVALUATE_METRICS`, plus ``ece``,
        ``brier`` and ``nll`` when ``probabilities`` is set. A calibration
        metric needs ``probabilities=True``.
    probabilities : bool
        The scores are probabilities of relevance in [0, 1]: calibration
        metrics are computed. A score outside [0, 1] is an error whatever
        the metrics, found when the runs are read, before any metric is
        computed.
    alpha : float
        Significance level of the markers in the table, in (0, 1).
    complete : bool
        Average the ranking metrics over every query of the qrels, a query
        the run misses counting 0 (1 for ``rbp_residual``): trec_eval's
        ``-c``, and what ir_measures does. Default False: the queries both
        the run and the qrels hold, trec_eval's default.

    Returns
    -------
    EvaluationReport

    Raises
    ------
    ValueError
        A malformed run or qrels file (the message names the file and
        line), or frame or mapping (the message names ``runs[i]`` or
        ``qrels`` and the row), a run file given twice, no judged query in a
        run, an unknown metric or option, two metrics with one label, a
        calibration metric without ``probabilities``, or scores outside
        [0, 1] with it. Two measures cannot share a label, and one
        measure cannot appear under two (``recall_at_k:k=1`` and
        ``Success@1``; see :func:`uncertank.metrics.resolve_metrics`).
    UnknownNameError, DatasetUnavailableError
        For ``qrels="irds:NAME"`` that ir_datasets does not know (close
        names listed), or cannot download (the message names its cache
        folder); see :mod:`uncertank.datasets.irds`.

    Notes
    -----
    See the module notes for the conventions, which are trec_eval's; the
    test suite checks every built-in ranking metric against ``pytrec_eval``
    on bundled files. Significance: for every run after the first and every
    ranking metric, Student's paired t-test (:func:`uncertank.stats.paired_ttest`)
    over the queries both runs evaluate; the p-values of one metric are
    Holm-corrected over the runs compared (:func:`uncertank.stats.holm`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "qrels").write_text("1 0 a 1\n1 0 b 0\n1 0 c 1\n")
    >>> _ = (d / "run").write_text("1 Q0 a 1 0.9 x\n1 Q0 b 2 0.8 x\n")
    >>> rep = evaluate_runs([d / "run"], d / "qrels")
    >>> rep.runs[0].summary["MAP"]  # (1/1) / 2 relevant: c is relevant but not retrieved
    0.5
    """
    import pandas as pd

    from uncertank.datasets.trec import query_order, ranked_lists_from_run
    from uncertank.datasets.trec_files import read_trec_run
    from uncertank.datasets.trec_frames import qrels_frame, run_frame
    from uncertank.metrics import resolve_metrics
    from uncertank.stats import holm, paired_ttest

    if isinstance(runs, (str, os.PathLike, Mapping, pd.DataFrame)) or not isinstance(runs, Sequence) or not runs:
        raise TypeError(f"runs must be a non-empty sequence of run file paths (or frames or mappings); got {runs!r}")
    if not isinstance(probabilities, bool):
        raise TypeError(f"probabilities must be a bool; got {type(probabilities).__name__}")
    check_unit_interval(alpha, "alpha")
    entries = list(DEFAULT_EVALUATE_METRICS) if metrics is None else list(metrics)
    if metrics is None and probabilities:
        entries += list(DEFAULT_CALIBRATION_METRICS)
    resolved = resolve_metrics(entries)
    if not resolved:
        raise ValueError("metrics must name at least one metric; got none")
    for m in resolved:
        if m.needs_probabilities and not probabilities:
            raise ValueError(
                f"metric {m.display_label!r} needs probabilities; pass probabilities=True "
                "(--probabilities) when the run scores are probabilities of relevance"
            )
    ranking = [m for m in resolved if m.per_query and not m.needs_probabilities]
    ranking_ids = {id(m) for m in ranking}
    labels = [m.display_label for m in resolved]
    if len(set(labels)) != len(labels):  # one measure twice (two labels of one measure are refused when resolved)
        twice = sorted({f"{m.display_label} ({m.measure_id})" for m in resolved if labels.count(m.display_label) > 1})
        raise ValueError(f"metrics must be distinct; got the labels {labels}: {', '.join(twice)} more than once")

    _refuse_repeated_files(runs)
    if not isinstance(complete, bool):
        raise TypeError(f"complete must be a bool; got {type(complete).__name__}")
    if isinstance(qrels, str) and qrels.startswith("irds:"):  # an ir_datasets collection's judgements
        from uncertank.datasets.irds import irds_qrels

        qrels = irds_qrels(qrels)
    qrels_df = qrels_frame(qrels, "qrels")
    all_queries = set(qrels_df["query_id"].astype(str))
    # Every run is read and checked before any metric is computed.
    loaded: list[tuple[str, RankedLists]] = []
    taken: set[str] = set()
    for i, path in enumerate(runs):
        name = _run_name(path, i, taken)
        taken.add(name)
        where = f"run file {path}" if isinstance(path, (str, os.PathLike)) else f"runs[{i}]"
        if isinstance(path, (str, os.PathLike)):
            frame = read_trec_run(path, system=name)  # one run per file: duplicates are named by line
        else:
            frame = run_frame(path, where)
            if "system" in frame.columns and frame["system"].nunique() > 1:
                raise ValueError(f"{where} holds {frame['system'].nunique()} systems; give one run per frame")
            frame["system"] = name
        try:
            lists = ranked_lists_from_run(frame, qrels_df)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if probabilities:  # whatever the metrics: the flag says the scores are probabilities
            bad = (lists.scores < 0) | (lists.scores > 1)
            if bad.any():
                raise ValueError(
                    f"{where}: --probabilities needs scores in [0, 1]; "
                    f"{int(bad.sum())} scores lie outside, e.g. {float(lists.scores[bad][0])!r}"
                )
        loaded.append((name, lists))

    results: list[RunScores] = []
    for name, lists in loaded:
        judged = _judged(lists, qrels_df)
        assert lists.query_ids is not None
        query_ids = list(lists.query_ids)
        position = None
        if complete:  # trec_eval -c: every query of the qrels, a missing one at its empty-ranking value
            query_ids = [str(q) for q in query_order(np.asarray(list(all_queries | set(query_ids)), dtype=object))]
            position = pd.Index(query_ids).get_indexer(pd.Index(list(lists.query_ids)))
        per_query: dict[str, NDArray[np.float64]] = {}
        summary: dict[str, float] = {}
        for m in resolved:
            label = m.display_label
            if id(m) in ranking_ids:
                values = _trec_normalised(m, lists, judged)
                if position is not None:
                    full = np.full(len(query_ids), 1.0 if _measure(m) == "RBP_residual" else 0.0)
                    full[position] = values
                    values = full
                per_query[label] = values
                summary[label] = float(values.mean())
            else:
                summary[label] = float(m(lists))
        results.append(RunScores(name, query_ids, per_query, summary, lists.n_pairs))

    comparisons: dict[str, dict[str, dict[str, float]]] = {r.name: {} for r in results[1:]}
    base = results[0]
    for m in ranking:
        label = m.display_label
        raw: list[float] = []
        for r in results[1:]:
            shared, ia, ib = np.intersect1d(r.query_ids, base.query_ids, return_indices=True)
            a, b = r.per_query[label][ia], base.per_query[label][ib]
            if shared.size >= 2 and not np.array_equal(a, b):
                res = paired_ttest(a, b)
                p, diff = res.pvalue, res.mean_difference
            else:
                p, diff = (1.0 if shared.size >= 2 else math.nan), float((a - b).mean()) if shared.size else math.nan
            comparisons[r.name][label] = {"n": int(shared.size), "mean_difference": diff, "pvalue": p}
            raw.append(p)
        if raw:
            finite = np.array([math.isfinite(p) for p in raw])
            adjusted = np.full(len(raw), math.nan)
            if finite.any():
                adjusted[finite] = holm(np.asarray(raw)[finite])
            for r, p_adj in zip(results[1:], adjusted.tolist(), strict=True):
                comparisons[r.name][label]["pvalue_holm"] = p_adj
    ranking_labels = [m.display_label for m in ranking]
    ordered = ranking_labels + [lab for lab in labels if lab not in ranking_labels]
    measures = {m.display_label: m.measure_id for m in resolved}
    return EvaluationReport(results, ordered, ranking_labels, comparisons, float(alpha), measures)
