"""The numbers behind a study's report: reference ranker, comparisons, significance, best values.

Everything here reads a :class:`~uncertank.experiment.result.StudyResult`
and returns plain values. :func:`significance` is the study's last stage:
the runner stores what it returns in the result (``results.json``), and
:mod:`uncertank.experiment.report` marks the cells it says are significant,
computing no test itself.

- :func:`reference_ranker`: the ranker relative changes are measured
  against (the study's ``reference``: the first ranker by default).
- :func:`metric_labels`: the study's metric labels of one kind, in the
  order of ``result.metric_info`` (so a plugin's metric appears too).
- :func:`best_rankers`: who has the best value of a metric under a condition.
- :func:`compare_to_reference`: value, relative change and a paired t-test
  over queries against the reference, Holm-corrected over one table's
  comparisons (Penha & Hauff 2021 mark significance the same way, with a
  paired t-test over queries and a correction for multiple comparisons).
- :func:`significance`: every family of tests the report marks (the
  in-domain table, the shifted conditions' tables, risk-aware reranking).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from uncertank.experiment.result import Comparison, Evaluation, RiskTest, Significance, StudyResult
from uncertank.metrics.metric import METRIC_KINDS, MetricKind
from uncertank.validation import check_instance, check_name, check_names, check_number, check_unit_interval

__all__ = [
    "best_rankers",
    "compare_to_reference",
    "higher_is_better",
    "measured_labels",
    "metric_labels",
    "reference_ranker",
    "relative_change",
    "significance",
]

#: The significance level of every test a study marks.
ALPHA = 0.05
#: The test behind the comparisons, in words (stored with them).
TEST = "two-sided paired t-test over queries"

def reference_ranker(result: StudyResult) -> str | None:
    """The ranker that relative changes and significance tests compare against.

    The study's ``reference`` (``result.config["reference"]``, a field of
    :class:`~uncertank.experiment.StudyConfig`: the first ranker when the
    study file names none); the first ranker of a result whose config
    records no reference; None when there are no rankers.

    Raises
    ------
    ValueError
        When the recorded reference is not a ranker of the result.

    Examples
    --------
    >>> from uncertank.experiment.result import Evaluation, StudyResult
    >>> evs = [Evaluation("bm25", "in", False, False, {}), Evaluation("sngp", "in", True, False, {})]
    >>> reference_ranker(StudyResult({"reference": "sngp"}, {}, {}, evs))
    'sngp'
    >>> reference_ranker(StudyResult({}, {}, {}, evs))
    'bm25'
    """
    check_instance(result, "result", StudyResult)
    rankers = result.rankers
    reference = result.config.get("reference") if isinstance(result.config, dict) else None
    if reference is None:
        return rankers[0] if rankers else None
    if reference not in rankers:
        raise ValueError(f"the study's reference must be one of its rankers {rankers}; got {reference!r}")
    return str(reference)


def metric_labels(result: StudyResult, kind: MetricKind | None = None) -> list[str]:
    """Metric labels of ``kind`` (all kinds when None) in the order of ``result.metric_info``.

    Raises
    ------
    ValueError
        When ``kind`` is neither ``"ranking"`` nor ``"calibration"``.
    """
    check_instance(result, "result", StudyResult)
    if kind is not None and kind not in METRIC_KINDS:
        raise ValueError(f"kind must be one of {list(METRIC_KINDS)} or None; got {kind!r}")
    return [label for label, info in result.metric_info.items() if kind is None or info.get("kind") == kind]


def measured_labels(result: StudyResult, conditions: Sequence[str], kind: MetricKind | None = None) -> list[str]:
    """The metric labels of ``kind`` (all when None) that some ranker has a value of under one of ``conditions``."""
    check_instance(result, "result", StudyResult)
    check_names(conditions, "conditions")
    return [m for m in metric_labels(result, kind)
            if any(m in e.metrics for e in result.evaluations if e.condition in conditions)]


def higher_is_better(result: StudyResult, label: str) -> bool:
    """Whether a larger value of metric ``label`` is better (``result.metric_info``).

    Raises
    ------
    KeyError
        When ``label`` is not among the study's metrics (the message lists them).
    """
    check_instance(result, "result", StudyResult)
    check_name(label, "label")
    if label not in result.metric_info:
        raise KeyError(f"metric {label!r} is not in this study's metric_info; it has {sorted(result.metric_info)}")
    return bool(result.metric_info[label].get("higher_is_better", True))


def relative_change(value: float, reference: float) -> float | None:
    """``100 * (value - reference) / |reference|`` in percent; None when it is undefined.

    Undefined: the reference is 0, either number is not finite, or the
    change is too large for a float (``relative_change(1e308, 0.5)``).

    Examples
    --------
    >>> round(relative_change(0.44, 0.40), 6)
    10.0
    >>> relative_change(0.1, 0.0) is None
    True
    """
    value, reference = check_number(value, "value"), check_number(reference, "reference")
    if reference == 0 or not math.isfinite(reference) or not math.isfinite(value):
        return None
    change = 100.0 * (value - reference) / abs(reference)
    return change if math.isfinite(change) else None


def best_rankers(result: StudyResult, condition: str, label: str, *, rel_tol: float = 1e-12) -> list[str]:
    """The rankers with the best value of ``label`` under ``condition`` (ties: all of them).

    Rankers without the metric (e.g. calibration for scores that are not
    probabilities) or with a non-finite value are left out; an empty list
    when none has it.
    """
    check_instance(result, "result", StudyResult)
    check_name(condition, "condition")
    check_name(label, "label")
    better_high = higher_is_better(result, label)
    values = {
        e.ranker: e.metrics[label]
        for e in result.evaluations
        if e.condition == condition and label in e.metrics and math.isfinite(e.metrics[label])
    }
    if not values:
        return []
    best = max(values.values()) if better_high else min(values.values())
    return [r for r, v in values.items() if math.isclose(v, best, rel_tol=rel_tol, abs_tol=1e-15)]


def _paired_p(a: Evaluation, b: Evaluation, label: str) -> float | None:
    from uncertank.stats import paired_ttest

    x, y = a.per_query.get(label), b.per_query.get(label)
    if x is None or y is None or len(x) != len(y) or len(x) < 2:
        return None
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if not (np.isfinite(xa).all() and np.isfinite(ya).all()):
        return None
    if np.array_equal(xa, ya):
        return 1.0
    p = paired_ttest(xa, ya).pvalue
    return 1.0 if math.isnan(p) else float(p)


def compare_to_reference(
    result: StudyResult,
    conditions: Sequence[str],
    metrics: Sequence[str],
    *,
    reference: str | None = None,
    alpha: float = 0.05,
    correction: Literal["holm", "bonferroni", "none"] = "holm",
) -> list[Comparison]:
    """Every ranker against the reference on ``metrics`` under ``conditions``: one family of tests.

    For each condition, metric and ranker other than the reference that
    both have the metric, the relative change and (where per-query values
    exist, i.e. ranking metrics) a two-sided paired t-test over queries
    (:func:`uncertank.stats.paired_ttest`). The p-values of all these
    comparisons are adjusted together (:func:`uncertank.stats.adjust_pvalues`,
    Holm by default), as the comparisons of one result table.

    Parameters
    ----------
    result : StudyResult
        The study.
    conditions, metrics : sequence of str
        Condition names and metric labels of the table.
    reference : str, optional
        The reference ranker; :func:`reference_ranker` by default.
    alpha : float
        Significance level in (0, 1).
    correction : {"holm", "bonferroni", "none"}
        Multiple-comparison correction over the family.

    Returns
    -------
    list of Comparison
        In the order condition, metric, ranker (config order); empty when
        there is no reference ranker.

    Raises
    ------
    ValueError
        When ``alpha`` is not in (0, 1), or ``reference`` is not a ranker of the study.
    """
    from uncertank.stats import adjust_pvalues

    check_instance(result, "result", StudyResult)
    check_names(conditions, "conditions")
    check_names(metrics, "metrics")
    alpha = check_unit_interval(alpha, "alpha")
    if reference is None:
        reference = reference_ranker(result)
        if reference is None:
            return []
    elif reference not in result.rankers:
        raise ValueError(f"reference must be one of the study's rankers {result.rankers}; got {reference!r}")
    rows: list[tuple[str, str, str, float, float, float | None]] = []
    for cond in conditions:
        ref_ev = result.evaluation(reference, cond)
        if ref_ev is None:
            continue
        for label in metrics:
            if label not in ref_ev.metrics:
                continue
            for ranker in result.rankers:
                ev = result.evaluation(ranker, cond)
                if ranker == reference or ev is None or label not in ev.metrics:
                    continue
                rows.append((cond, label, ranker, ev.metrics[label], ref_ev.metrics[label],
                             _paired_p(ev, ref_ev, label)))
    raw = {i: r[5] for i, r in enumerate(rows) if r[5] is not None}
    adjusted: dict[int, float] = {}
    if raw:
        adj = adjust_pvalues(list(raw.values()), correction)
        adjusted = {i: float(a) for i, a in zip(raw, adj, strict=True)}
    out = []
    for i, (cond, label, ranker, value, ref_value, p) in enumerate(rows):
        high = higher_is_better(result, label)
        better = None if value == ref_value else (value > ref_value) == high
        p_adj = adjusted.get(i)
        out.append(Comparison(ranker, reference, cond, label, value, ref_value, relative_change(value, ref_value),
                              better, p, p_adj, p_adj is not None and p_adj < alpha))
    return out


def significance(
    result: StudyResult, *, alpha: float = ALPHA, correction: Literal["holm", "bonferroni", "none"] = "holm"
) -> Significance:
    """Every family of significance tests of a study, as the report marks them.

    - ``"in-domain"``: every ranker against the reference on every metric
      measured under the first condition (:func:`compare_to_reference`).
    - ``"shifted"``: the same over the other conditions, one family.
    - risk-aware reranking against ranking by the mean: the paired t-tests
      of :attr:`~uncertank.experiment.result.RiskOutcome.p_value`, adjusted
      together over the study.

    Parameters
    ----------
    result : StudyResult
        The study's evaluations (their per-query values and risk outcomes).
    alpha : float
        Significance level in (0, 1).
    correction : {"holm", "bonferroni", "none"}
        Multiple-comparison correction within each family.

    Returns
    -------
    Significance
        What the runner stores in ``StudyResult.significance``.

    Raises
    ------
    ValueError
        When ``alpha`` is not in (0, 1), or the recorded reference is not a ranker of the study.
    """
    from uncertank.stats import adjust_pvalues

    check_instance(result, "result", StudyResult)

    alpha = check_unit_interval(alpha, "alpha")
    ref = reference_ranker(result)
    tables: dict[str, list[Comparison]] = {}
    conds = result.conditions
    if ref is not None and conds:
        for name, family in (("in-domain", conds[:1]), ("shifted", conds[1:])):
            if family:
                tables[name] = compare_to_reference(result, family, measured_labels(result, family), reference=ref,
                                                    alpha=alpha, correction=correction)
    tested = [e for e in result.evaluations if e.risk is not None]
    raw = [e.risk.p_value for e in tested if e.risk is not None and e.risk.p_value is not None]
    adjusted = iter(adjust_pvalues(raw, correction).tolist() if raw else [])
    risk = []
    for e in tested:
        assert e.risk is not None
        p = e.risk.p_value
        p_adj = float(next(adjusted)) if p is not None else None
        risk.append(RiskTest(e.ranker, e.condition, p, p_adj, p_adj is not None and p_adj < alpha))
    return Significance(reference=ref, alpha=alpha, correction=correction, test=TEST, tables=tables, risk=risk)
