"""A study's paper table: its rankers compared as a paper reports them, the study's last computing stage.

:func:`paper_table` hands the per-query values the study measured (the
in-domain condition's ranking metrics, ``Evaluation.per_query``) to
:func:`uncertank.compare_runs`, each ranker against the study's
``reference``, with the test, correction and family of ``[report]``
(:class:`~uncertank.experiment.config.ReportConfig`). Beside them go the
calibration columns of the rankers whose scores are probabilities (from the
predictions the study already made, never a model run again), and the
P(better) and verdict of the Bayesian comparison where the study fitted one
of the in-domain condition that converged. The runner stores the returned
:class:`~uncertank.experiment.result.PaperTable` in ``results.json``; the
report draws it, and ``table.tex``, from there.

Only the in-domain condition is tabled: each shifted condition would be a
table of its own (its own queries, its own correction family), and the
report's "Shifted conditions" section already compares them with the
reference, with the same paired tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from uncertank._types import RankedLists
from uncertank.experiment.analysis import ALPHA, higher_is_better, measured_labels, reference_ranker
from uncertank.experiment.config import ReportConfig, StudyConfig, TableSettings
from uncertank.experiment.result import BayesOutcome, PaperTable, StudyResult
from uncertank.experiment.stages import RankerPrediction, StudyData
from uncertank.metrics.metric import Metric
from uncertank.validation import check_instance, check_seed

__all__ = ["CALIBRATION_COLUMNS", "calibration_columns", "paper_table", "study_paper_table"]

#: The study's calibration metrics shown as columns, by label, where it measures them.
CALIBRATION_COLUMNS: tuple[str, ...] = ("ECE", "Brier")


def calibration_columns(metrics: Sequence[Metric]) -> list[Metric]:
    """The calibration columns among a study's bound metrics.

    Those labelled as in :data:`CALIBRATION_COLUMNS` (the plain ECE and the
    Brier score of a study's default metrics); a study that measures
    neither gets its first calibration metric; one without calibration
    metrics, none.
    """
    for m in check_instance(metrics, "metrics", (list, tuple), "a list of Metric"):
        check_instance(m, "metrics", Metric, "a list of Metric")
    cal = [m for m in metrics if m.kind == "calibration"]
    chosen = [m for m in cal if m.display_label in CALIBRATION_COLUMNS]
    return chosen or cal[:1]


def _bayes_fit(result: StudyResult, condition: str) -> BayesOutcome | None:
    """The first converged fit (in the order of ``[bayes] families``) of the study's rankers under ``condition``."""
    for b in result.bayes.values():
        if b.systems == "study" and b.condition == condition and b.converged and b.against_baseline:
            return b
    return None


def paper_table(
    settings: ReportConfig,
    result: StudyResult,
    *,
    probabilities: Mapping[str, RankedLists],
    calibration_metrics: Sequence[Metric],
    seed: int,
) -> PaperTable | None:
    """The study's rankers on the in-domain condition, against the reference, as a paper's table.

    Parameters
    ----------
    settings : ReportConfig
        The ``[report]`` table: the test, the correction, its family and the
        resamples.
    result : StudyResult
        The study so far: its evaluations (per-query values), metric
        information, significance level and Bayesian fits.
    probabilities : mapping of str to RankedLists
        The in-domain test predictions of the rankers whose scores are
        probabilities, by ranker label: the calibration columns' pairs.
    calibration_metrics : sequence of Metric
        The calibration columns (:func:`calibration_columns`).
    seed : int
        Seeds the resampling (the study's seed).

    Returns
    -------
    PaperTable or None
        None when there is nothing to compare: fewer than two rankers, or
        fewer than two queries, or no ranking metric every ranker has.
    """
    from uncertank.compare import compare_runs

    check_instance(settings, "settings", ReportConfig)
    check_instance(result, "result", StudyResult)
    check_instance(probabilities, "probabilities", Mapping, "a mapping of RankedLists by label")
    check_seed(seed, allow_none=False, generator=False)

    conditions = result.conditions
    ref = reference_ranker(result)
    if not conditions or ref is None or len(result.rankers) < 2:
        return None
    condition = conditions[0]
    evs = [ev for r in result.rankers if (ev := result.evaluation(r, condition)) is not None]
    if len(evs) < 2 or all(ev.ranker != ref for ev in evs):
        return None
    labels = measured_labels(result, [condition], "ranking")
    n = len(evs[0].per_query.get(labels[0], [])) if labels else 0
    metrics, left_out = [], []
    for m in labels:
        values = [ev.per_query.get(m) for ev in evs]
        if all(v is not None and len(v) == n and all(math.isfinite(x) for x in v) for v in values):
            metrics.append(m)
        else:
            left_out.append(m)
    if not metrics or n < 2:
        return None
    probs = {r: lists for r, lists in probabilities.items() if any(ev.ranker == r for ev in evs)}
    fit = _bayes_fit(result, condition)
    rankers = {ev.ranker for ev in evs}
    bayes = [row for row in fit.against_baseline if row["system"] in rankers] if fit is not None else []
    use_bayes = fit is not None and bool(bayes) and fit.baseline in rankers
    report = compare_runs(
        {ev.ranker: {m: ev.per_query[m] for m in metrics} for ev in evs},
        metrics=metrics, baseline=ref, **settings.options,
        alpha=result.significance.alpha if result.significance is not None else ALPHA, seed=seed,
        lower_is_better=[m for m in metrics if not higher_is_better(result, m)],
        calibration=probs if probs and calibration_metrics else None,
        calibration_metrics=list(calibration_metrics) or ("ece",),
        bayes=bayes if use_bayes else None,
        bayes_reference=fit.baseline if use_bayes and fit is not None else None,
        bayes_metric=f"{fit.metric} ({fit.family} model)" if use_bayes and fit is not None else None,
    )
    return PaperTable(condition=condition, report=report.to_dict(), left_out=left_out)


def study_paper_table(settings: TableSettings, data: StudyData, preds: Mapping[tuple[str, str], RankerPrediction],
                      result: StudyResult) -> PaperTable | None:
    """The stage of a study that makes its paper's table: :func:`paper_table` of the first condition.

    Reads ``settings`` (``[report]``, the study's rankers, conditions,
    metrics and seed), the test queries of stage 1, the predictions of
    stage 3 (the calibration columns, for the rankers whose scores are
    probabilities on labelled queries) and the result so far (its per-query
    values, significance and Bayesian fits).
    """
    from uncertank.metrics import resolve_metrics

    check_instance(settings, "settings", (TableSettings, StudyConfig), "a TableSettings or a StudyConfig")
    check_instance(data, "data", StudyData)
    check_instance(preds, "preds", Mapping, "a mapping of RankerPrediction by (ranker, condition)")
    check_instance(result, "result", StudyResult)

    cond = settings.conditions[0].name
    qs = data.tests[cond]
    probabilities = {rc.key: qs.ranked(preds[(rc.key, cond)].mean) for rc in settings.rankers
                     if preds[(rc.key, cond)].probabilistic and qs.labels is not None}
    return paper_table(settings.report, result, probabilities=probabilities,
                       calibration_metrics=calibration_columns(resolve_metrics(settings.metric_entries())),
                       seed=settings.seed)
