"""The report's section on thresholds with a guarantee: conformal sets and abstention per ranker and condition.

Drawn from the :class:`~uncertank.experiment.result.ConformalOutcome` of
each evaluation alone (:mod:`uncertank.experiment.guarantees` computed every
number, the paired tests included): a sentence that reads the result, a
table, and the coverage against the target ``1 - alpha`` per condition.
"""

from __future__ import annotations

from uncertank.experiment.report.document import Doc
from uncertank.experiment.report.figures import Figures
from uncertank.experiment.report.markdown import MARK, names
from uncertank.experiment.report.sections import conditions_of, open_section
from uncertank.experiment.result import ConformalOutcome, Evaluation, StudyResult
from uncertank.formatting import format_interval, format_number, format_pvalue
from uncertank.validation import check_instance

__all__ = ["thresholds"]


def _below(value: float | None, high: float | None, target: float) -> bool:
    """Coverage credibly below the target: its 95% interval lies under it."""
    return value is not None and high is not None and high < target


def _pair(e: Evaluation) -> str:
    return f"{e.ranker} / {e.condition}"


def thresholds(doc: Doc, result: StudyResult, figs: Figures) -> None:
    """Thresholds with a guarantee: coverage, set size, abstention and exchangeability; coverage against 1 - α."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_instance(figs, "figs", Figures)
    evs = open_section(doc, result, "Thresholds with a guarantee", lambda e: e.conformal is not None,
                       "The conformal stage was not run (`[conformal] enabled = false`, or a result written "
                       "before the stage existed), so no threshold with a guarantee is reported.")
    if not evs:
        return
    sig = result.significance.alpha if result.significance is not None else 0.05
    conds = conditions_of(result, evs)
    first = evs[0].conformal
    assert first is not None
    target = 1.0 - first.alpha
    text = (f"Calibrated on the {first.n_calibration} validation queries (the training domain) at α = "
            f"{first.alpha:g}: each query's set is its candidates scoring at least the threshold, "
            f"guaranteed to hold a relevant candidate with probability ≥ {target:g} for queries "
            "exchangeable with the calibration queries. ")
    smaller = [e for e in evs if _smaller(e.conformal, sig)]
    larger = [e for e in evs if _larger(e.conformal, sig)]
    ref = next((e.conformal.reference for e in evs if e.conformal is not None and e.conformal.reference), None)
    if ref is None:
        text += "No reference ranker was compared. "
    elif smaller:
        text += (f"At the same guarantee, {names([_pair(e) for e in smaller])} give{'s' if len(smaller) == 1 else ''} "
                 f"smaller sets than `{ref}` (paired t-test over queries, p < {sig}). ")
    else:
        text += (f"No ranker gives significantly smaller sets than `{ref}` at the same guarantee (paired t-test "
                 f"over queries, p < {sig})" + (f"; {names([_pair(e) for e in larger])} larger" if larger else "")
                 + ". ")
    shifted = [e for e in evs if e.condition != conds[0]]
    broken = [e for e in evs if e.conformal is not None
              and _below(e.conformal.coverage, e.conformal.coverage_upper, target)]
    if not shifted:
        text += "The study has no shifted condition. "
    broken_shifted = [e for e in broken if e.condition != conds[0]]
    if shifted and not broken_shifted:
        text += f"Coverage holds under every shifted condition (no 95% interval lies below {target:g}). "
    elif broken_shifted:
        text += (f"Coverage falls below {target:g} (its 95% interval lies under it) for "
                 f"{names([_pair(e) for e in broken_shifted])}. ")
    in_domain = [e for e in broken if e.condition == conds[0]]
    if in_domain:
        text += f"Even in-domain, coverage falls short for {names([_pair(e) for e in in_domain])}. "
    weighted = [e for e in broken if e.conformal is not None and e.conformal.weighted_coverage is not None]
    if weighted:
        restored = [e for e in weighted if e.conformal is not None
                    and not _below(e.conformal.weighted_coverage, e.conformal.weighted_coverage_upper, target)]
        rest = [e for e in weighted if e not in restored]
        if restored:
            text += f"Weighting by a domain classifier restores it for {names([_pair(e) for e in restored])}"
            text += f", not for {names([_pair(e) for e in rest])}. " if rest else ". "
        else:
            text += "Weighting by a domain classifier does not restore it for any of them. "
    rejected = [e for e in evs if e.conformal is not None and not e.conformal.exchangeable]
    text += (f"The exchangeability check rejects for {len(rejected)} of {len(evs)} ranker-condition pairs."
             if rejected else "The exchangeability check rejects for no ranker-condition pair.")
    doc.text(text)
    rows = []
    for cond in conds:
        for e in evs:
            c = e.conformal
            if e.condition != cond or c is None:
                continue
            size = format_number(c.mean_size)
            if c.reference_mean_size is not None:
                mark = MARK if c.size_p_value is not None and c.size_p_value < sig else ""
                size += f" ({format_number(c.reference_mean_size)}, p {format_pvalue(c.size_p_value)}){mark}"
            rows.append([
                f"`{cond}`", f"`{e.ranker}`", c.score,
                "all" if c.threshold is None else format_number(c.threshold),
                format_interval(c.coverage, c.coverage_lower, c.coverage_upper), size,
                "never" if c.abstain_threshold is None else format_number(c.abstain_threshold),
                format_number(c.answer_rate), format_number(c.error_rate),
                f"{'yes' if c.exchangeable else 'no'} (p {format_pvalue(c.exchangeability_p)})",
                format_interval(c.weighted_coverage, c.weighted_coverage_lower, c.weighted_coverage_upper),
                format_number(c.weighted_mean_size),
            ])
    doc.table(
        ["condition", "ranker", "score", "threshold", "coverage [95% CI]", f"mean size (`{ref}`, p)",
         "answer above", "answer rate", "error rate", "exchangeable (p)", "weighted coverage [95% CI]",
         "weighted size"], rows,
        [f"Target coverage {target:g} (α = {first.alpha:g}), abstention's error rate ≤ "
         f"{first.alpha:g} with probability ≥ {1.0 - first.delta:g} (δ = "
         f"{first.delta:g}), calibrated on the validation queries. threshold: on the conformity "
         "score (all: no finite threshold, the whole list). coverage: share of test queries whose set holds a "
         "relevant candidate, with its Clopper-Pearson interval. mean size: candidates per set; in brackets the "
         f"reference's and the two-sided paired t-test over queries of the sizes ({MARK}: p < {sig}). answer "
         "above: abstention's threshold on the top score (never: none certified); error rate: among answered "
         "queries. exchangeable: Kolmogorov-Smirnov test of the queries' top scores, validation against test, "
         "at 0.05. weighted: weighted split conformal under the shifted conditions, likelihood ratios from a "
         "domain classifier on the queries' score summaries."])
    doc.figure(figs.coverage(evs, conds),
               "Test coverage of the conformal sets against the target 1 - α, per ranker and condition; on or "
               "above the dashed diagonal the guarantee holds. A hollow marker is the weighted sets' coverage.")


def _smaller(c: ConformalOutcome | None, alpha: float) -> bool:
    return (c is not None and c.reference_mean_size is not None and c.size_p_value is not None
            and c.size_p_value < alpha and c.mean_size < c.reference_mean_size)


def _larger(c: ConformalOutcome | None, alpha: float) -> bool:
    return (c is not None and c.reference_mean_size is not None and c.size_p_value is not None
            and c.size_p_value < alpha and c.mean_size > c.reference_mean_size)
