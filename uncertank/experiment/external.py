"""External runs in a study's Bayesian comparison: other systems' TREC run files beside the study's rankers.

A ``[[bayes.runs]]`` table names a TREC run file (``qid Q0 docid rank score
tag``) that ranks the test queries of one condition: a reranking of the
candidates the study scores, by their ids, produced by another system (BM25
from Anserini, a dense retriever, a model the study cannot load). Its
per-query value of the compared metric (:func:`~uncertank.experiment.systems.bayes_metric`)
enters that condition's fit as one more system (:mod:`uncertank.experiment.systems`).

The checks come in two steps, both before any ranker is trained or scores
anything:

- :func:`check_run_files` (from :func:`~uncertank.experiment.preflight.validate_config`):
  the file exists and is a well-formed run
  (:func:`uncertank.datasets.read_trec_run` names the line of a bad entry);
- :func:`match_runs` (once the test queries are loaded: :func:`~uncertank.experiment.runner.run_study`
  and the dry run of :func:`~uncertank.experiment.runner.plan_study`): the
  condition's queries carry ids, and the run holds every test query of the
  condition and only those, and scores only candidates of each query.

How a run is measured (:func:`score_runs`): the condition's relevance
labels are the qrels, every candidate of a query judged. A candidate the
run does not score ranks after every candidate it scores; ties (between
equal scores, and among the unscored) go by descending document id, as
``trec_eval`` breaks them (:func:`uncertank.datasets.ranked_lists_from_run`;
the ``rank`` field is ignored, as ``trec_eval`` ignores it). The metric is
then the study's own, on the complete lists, as for the study's rankers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uncertank.experiment.config import ComparisonSettings, StudyConfig, StudyConfigError
from uncertank.experiment.result import ExternalRunOutcome
from uncertank.files import file_digest
from uncertank.validation import check_instance

if TYPE_CHECKING:
    import pandas as pd

    from uncertank import QuerySet

__all__ = ["MatchedRun", "check_run_files", "match_runs", "score_runs"]

#: Ids shown in an error message about ids that do not match.
_SHOWN = 3


@dataclass(frozen=True, eq=False)
class MatchedRun:
    """A ``[[bayes.runs]]`` entry read and matched with its condition's test queries.

    Attributes
    ----------
    index : int
        Its position in ``[[bayes.runs]]``.
    name, condition, path : str
        As in the study file (``path`` resolved).
    sha256 : str
        Hex SHA-256 of the file's bytes.
    frame : pandas.DataFrame
        The run as :func:`~uncertank.datasets.read_trec_run` reads it.
    """

    index: int
    name: str
    condition: str
    path: str
    sha256: str
    frame: pd.DataFrame


def _read(path: str) -> pd.DataFrame:
    from uncertank.datasets.trec_files import read_trec_run

    return read_trec_run(path, system="run")


def _load(i: int, path: str) -> pd.DataFrame | tuple[str, str]:
    """The run file of ``[[bayes.runs]]`` entry ``i``, or ``(path in the study file, why it is refused)``."""
    where = f"bayes.runs[{i}].path"
    if not Path(path).is_file():
        what = "is a folder" if Path(path).is_dir() else "does not exist"
        return where, (
            f"must name a TREC run file; got {path!r}, which {what} (a relative path is taken from the "
            "study file's folder)"
        )
    try:
        frame = _read(path)
    except (OSError, ValueError) as exc:
        return where, f"must be a TREC run file (qid Q0 docid rank score tag); {' '.join(str(exc).split())}"
    if frame.empty:
        return where, f"must be a TREC run file (qid Q0 docid rank score tag); {path} holds no line"
    return frame


def check_run_files(settings: ComparisonSettings) -> list[tuple[str, str]]:
    """``(path in the study file, message)`` for each run file of ``settings.bayes`` that is missing or not a TREC run.

    Cheap: each file is read once and parsed; the test queries are not
    loaded (:func:`match_runs` checks the ids against them).
    """
    check_instance(settings, "settings", (ComparisonSettings, StudyConfig), "a ComparisonSettings or a StudyConfig")
    if not settings.bayes.enabled or settings.bayes.systems != "study":
        return []
    loaded = (_load(i, run.path) for i, run in enumerate(settings.bayes.runs))
    return [got for got in loaded if isinstance(got, tuple)]


def _ids_problem(qs: QuerySet) -> str | None:
    """Why the test queries ``qs`` cannot be matched with a run by id, or None."""
    if qs.query_ids is None or qs.candidate_ids is None:
        missing = " and ".join(
            w for w, ids in (("query ids", qs.query_ids), ("candidate ids", qs.candidate_ids)) if ids is None
        )
        return (
            f"its test queries carry no {missing}, so a run cannot name them: a TSV file, or a JSON-lines file "
            'without "id" and "candidate_ids", read with negatives = "file", has none; give the dataset '
            'ids (JSON lines with "id" and "candidate_ids"), or draw the negatives with a sampler'
        )
    if len(set(qs.query_ids)) != qs.n_queries:
        return "its test queries do not have distinct ids, so a run cannot tell them apart"
    blank = [x for x in [*qs.query_ids, *qs.candidate_ids] if not x or len(x.split()) != 1]
    if blank:
        return (
            f"{len(blank)} of its query or candidate ids are empty or hold white space (e.g. {blank[0]!r}), "
            "which a TREC run file cannot name"
        )
    pairs = set(_pair_ids(qs))
    if len(pairs) != qs.n_pairs:
        return (
            f"{qs.n_pairs - len(pairs)} of its candidates repeat the id of another candidate of the same query, "
            "so a run cannot tell them apart"
        )
    return None


def _pair_ids(qs: QuerySet) -> list[tuple[str, str]]:
    """``(query id, candidate id)`` of every pair of ``qs``, in pair order (both as strings)."""
    assert qs.query_ids is not None and qs.candidate_ids is not None
    qids = np.asarray(qs.query_ids, dtype=object)[qs.query_index]
    return [(str(q), str(c)) for q, c in zip(qids.tolist(), qs.candidate_ids, strict=True)]


def _examples(items: Sequence[object]) -> str:
    shown = ", ".join(" ".join(map(repr, x)) if isinstance(x, tuple) else repr(x) for x in items[:_SHOWN])
    return shown + (", ..." if len(items) > _SHOWN else "")


def _mismatch(frame: pd.DataFrame, qs: QuerySet, condition: str) -> list[str]:
    """What of ``frame`` does not match the test queries ``qs`` of ``condition``: one sentence each."""
    assert qs.query_ids is not None and qs.candidate_ids is not None
    out = []
    test = [str(q) for q in qs.query_ids]
    in_run = list(dict.fromkeys(frame["query_id"].astype(str).tolist()))
    known = set(test)
    extra = [q for q in in_run if q not in known]
    if extra:
        out.append(
            f"{len(extra)} of its {len(in_run)} queries are not test queries of {condition!r} "
            f"(e.g. {_examples(extra)}; the condition's are e.g. {_examples(test)})"
        )
    held = set(in_run)
    missing = [q for q in test if q not in held]
    if missing:
        out.append(
            f"it misses {len(missing)} of the {len(test)} test queries of {condition!r} "
            f"(e.g. {_examples(missing)}); a run must rank every one"
        )
    candidates = set(_pair_ids(qs))
    rows = frame[frame["query_id"].astype(str).isin(known)]
    pairs = list(zip(rows["query_id"].astype(str).tolist(), rows["doc_id"].astype(str).tolist(), strict=True))
    stray = [p for p in pairs if p not in candidates]
    if stray:
        out.append(
            f"{len(stray)} of its {len(pairs)} (query, document) pairs of those queries are not candidates of "
            f"their query under {condition!r} (e.g. {_examples(stray)}); a run may score only the "
            "condition's candidates"
        )
    return out


def match_runs(settings: ComparisonSettings, tests: Mapping[str, QuerySet]) -> list[MatchedRun]:
    """Read every ``[[bayes.runs]]`` file of ``settings.bayes``; match it with its condition's test queries ``tests``.

    A run whose condition is not in ``tests`` is left out (the dry run
    passes only the conditions it loads as the study would).

    Raises
    ------
    StudyConfigError
        One line per run that does not match, naming its path in the study
        file (``bayes.runs[0].path``): the condition's queries carry no ids,
        the run holds queries that are not the condition's test queries or
        misses some, or scores documents that are not candidates of their
        query (how many, and a few of them).
    """
    check_instance(settings, "settings", (ComparisonSettings, StudyConfig), "a ComparisonSettings or a StudyConfig")
    check_instance(tests, "tests", Mapping, "a mapping of QuerySet by condition")
    errors: list[tuple[str, str]] = []
    matched: list[MatchedRun] = []
    if not settings.bayes.enabled or settings.bayes.systems != "study":
        return matched
    for i, run in enumerate(settings.bayes.runs):
        qs = tests.get(run.condition)
        if qs is None:
            continue
        frame = _load(i, run.path)
        if isinstance(frame, tuple):  # removed or changed since the study was validated
            errors.append(frame)
            continue
        problem = _ids_problem(qs)
        if problem is not None:
            errors.append(
                (f"bayes.runs[{i}].condition", f"condition {run.condition!r} cannot be compared with a run: {problem}")
            )
            continue
        wrong = _mismatch(frame, qs, run.condition)
        if wrong:
            errors.append(
                (
                    f"bayes.runs[{i}].path",
                    f"{run.path} does not match the test queries of {run.condition!r}: " + "; ".join(wrong),
                )
            )
            continue
        matched.append(MatchedRun(i, run.name, run.condition, run.path, file_digest(Path(run.path)), frame))
    if errors:
        raise StudyConfigError(errors)
    return matched


def _qrels(qs: QuerySet) -> dict[str, dict[str, int]]:
    """The condition's labels as qrels, every candidate judged: ``{query id: {candidate id: label}}``."""
    assert qs.query_ids is not None and qs.labels is not None
    out: dict[str, dict[str, int]] = {str(q): {} for q in qs.query_ids}
    for (q, doc), label in zip(_pair_ids(qs), qs.labels.tolist(), strict=True):
        out[q][doc] = int(label)
    return out


def _completed(frame: pd.DataFrame, qs: QuerySet) -> tuple[pd.DataFrame, int]:
    """The run with every candidate it does not score added below the lowest score it gives; and how many."""
    import pandas as pd

    scored = pd.MultiIndex.from_arrays([frame["query_id"].astype(str), frame["doc_id"].astype(str)])
    everyone = pd.MultiIndex.from_tuples(_pair_ids(qs))
    left = ~everyone.isin(scored)
    if not left.any():
        return frame[["query_id", "doc_id", "score"]], 0
    below = float(np.nextafter(float(frame["score"].min()), -np.inf))  # below every score, still finite
    fill = pd.DataFrame(
        {"query_id": everyone.get_level_values(0)[left], "doc_id": everyone.get_level_values(1)[left], "score": below}
    )
    return pd.concat([frame[["query_id", "doc_id", "score"]], fill], ignore_index=True), int(left.sum())


def score_runs(
    settings: ComparisonSettings, tests: Mapping[str, QuerySet], runs: list[MatchedRun]
) -> list[ExternalRunOutcome]:
    """Each matched run's per-query value of the compared metric, with the condition's labels as qrels.

    The metric is :func:`~uncertank.experiment.systems.bayes_metric` of
    ``settings``; ``tests`` are the test queries of stage 1 and ``runs``
    what :func:`match_runs` gave.

    Returns
    -------
    list of ExternalRunOutcome
        In ``[[bayes.runs]]`` order, ``per_query`` in the condition's
        query order (the order of the study's rankers' per-query values).
    """
    from uncertank.datasets.trec import ranked_lists_from_run
    from uncertank.experiment.systems import bayes_metric
    from uncertank.metrics import resolve_metrics

    check_instance(settings, "settings", (ComparisonSettings, StudyConfig), "a ComparisonSettings or a StudyConfig")
    check_instance(tests, "tests", Mapping, "a mapping of QuerySet by condition")
    for run in check_instance(runs, "runs", (list, tuple), "a list of MatchedRun"):
        check_instance(run, "runs", MatchedRun, "a list of MatchedRun")

    if not runs:  # no metric to choose: a study without runs may measure no ranking metric at all
        return []
    label = bayes_metric(settings)
    metric = next(m for m in resolve_metrics(settings.metric_entries()) if m.display_label == label)
    out = []
    for run in runs:
        qs = tests[run.condition]
        assert qs.query_ids is not None
        frame, n_unscored = _completed(run.frame, qs)
        lists = ranked_lists_from_run(frame, _qrels(qs))
        assert lists.query_ids is not None
        values = np.asarray(metric(lists, per_query=True), dtype=np.float64)
        at = {str(q): i for i, q in enumerate(lists.query_ids)}
        per_query = [float(values[at[str(q)]]) for q in qs.query_ids]
        out.append(
            ExternalRunOutcome(
                name=run.name,
                condition=run.condition,
                path=run.path,
                sha256=run.sha256,
                metric=label,
                per_query=per_query,
                mean=float(np.mean(per_query)),
                n_pairs=qs.n_pairs,
                n_unscored=n_unscored,
            )
        )
    return out
