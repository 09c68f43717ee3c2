"""The report's section "A paper's table", and ``table.tex``, drawn from ``results.json`` (``paper_table``).

The numbers were computed in the run (:mod:`uncertank.experiment.table`,
by :func:`uncertank.compare_runs`) and stored as the comparison report's
dict; this module rebuilds the :class:`~uncertank.compare.ComparisonReport`
(``from_dict``) and renders it, computing nothing: the table in the report's
own style (letters, the best in bold, superscript letters of the rankers a
value beats, calibration with intervals, P(better) and verdict), the
comparisons under it (mean difference with its interval, d_z, p-values), and
the LaTeX of :meth:`~uncertank.compare.ComparisonReport.to_latex` in
``table.tex``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from uncertank.compare import ComparisonReport
from uncertank.experiment.report.document import Doc
from uncertank.experiment.report.markdown import names
from uncertank.experiment.result import StudyResult
from uncertank.formatting import format_number, format_pvalue, format_signed
from uncertank.validation import check_instance

__all__ = ["TEX_FILE", "paper_table", "table_report"]

#: The file the table is written to as LaTeX, in the report folder.
TEX_FILE = "table.tex"


def table_report(result: StudyResult) -> ComparisonReport | None:
    """The stored comparison report of the study (``results.json``, ``paper_table.report``); None when it has none."""
    check_instance(result, "result", StudyResult)
    if result.paper_table is None:
        return None
    return ComparisonReport.from_dict(result.paper_table.report)


def _best(values: Mapping[str, float], lower: bool) -> set[str]:
    """The rankers whose value, as printed, is the best of the column."""
    shown = {s: float(format_number(v)) for s, v in values.items() if math.isfinite(v)}
    if not shown:
        return set()
    top = min(shown.values()) if lower else max(shown.values())
    return {s for s, v in shown.items() if v == top}


def _rows(rep: ComparisonReport) -> tuple[list[str], list[list[str]]]:
    """The columns and the cells of the table, one row per ranker."""
    letters = rep.letters
    columns = ["", "ranker", *rep.metrics, *(f"{c} [95% CI]" for c in rep.calibration_metrics)]
    if rep.bayes:
        columns += ["P(better)", "verdict"]
    best = {m: _best(rep.means[m], m in rep.lower_is_better) for m in rep.metrics}
    cal_best = {c: _best({s: row[c]["value"] for s, row in rep.calibration.items() if c in row},
                         c in rep.lower_is_better) for c in rep.calibration_metrics}
    rows = []
    for s in rep.systems:
        row = [letters[s], f"`{s}`"]
        for m in rep.metrics:
            value = format_number(rep.means[m][s])
            beaten = "".join(letters[o] for o in rep.beats(s, m))
            row.append((f"**{value}**" if s in best[m] else value) + (f"<sup>{beaten}</sup>" if beaten else ""))
        for c in rep.calibration_metrics:
            cell = rep.calibration.get(s, {}).get(c)
            if cell is None:
                row.append("–")
                continue
            value = format_number(cell["value"])
            row.append((f"**{value}**" if s in cal_best[c] else value)
                       + f" [{format_number(cell['low'])}, {format_number(cell['high'])}]")
        if rep.bayes:
            b = rep.bayes.get(s)
            if b is None:
                row += ["–", "reference" if s == rep.bayes_reference else "–"]
            else:
                row += [format_number(b.get("p_better")), str(b.get("verdict", "")) or "–"]
        rows.append(row)
    return columns, rows


def paper_table(doc: Doc, result: StudyResult) -> None:
    """The section: the rankers of the in-domain condition against the reference, as a paper's table."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    doc.heading(2, "A paper's table")
    table = result.paper_table
    rep = table_report(result)
    if table is None or rep is None:
        doc.text("No comparison table: it needs two rankers or more with per-query ranking metrics on the "
                 "first condition.")
        return
    doc.text(f"The rankers on the `{table.condition}` test queries, each against `{rep.baseline}`, as a paper "
             f"reports them (`uncertank.compare_runs`, options in `[report]`): the same table as LaTeX is "
             f"`{TEX_FILE}` (booktabs; see docs/paper-table.md for how to read each column).")
    columns, rows = _rows(rep)
    letters = rep.letters
    notes = [f"Means over the {rep.n_queries} test queries; the best value of each column in bold. A superscript "
             f"lists, by letter, the rankers a value is significantly better than (only `{rep.baseline}` "
             f"({letters[rep.baseline or '']}) is compared with the others): {rep.describe_test()}."]
    if rep.calibration_metrics:
        notes.append(f"{', '.join(f'`{c}`' for c in rep.calibration_metrics)} of the rankers whose scores are "
                     f"probabilities (– for the others), with 95% intervals from {rep.calibration_resamples:,} "
                     "resamples of the queries; lower is better.")
    if rep.bayes:
        notes.append(f"P(better) and verdict: the Bayesian comparison of {rep.bayes_metric} against "
                     f"`{rep.bayes_reference}` (section \"Bayesian comparison of the rankers\"); external runs "
                     "are there, not here.")
    if table.left_out:
        notes.append(f"Not compared (per-query values missing or not finite for some ranker): "
                     f"{names(table.left_out)}.")
    doc.table(columns, rows, notes, tips={"P(better)": "Posterior probability that the ranker's effect exceeds the "
                                          "reference's", "verdict": "Whether the 95% credible interval of the "
                                          "difference excludes 0"})
    pair_rows = []
    for p in rep.pairs:
        pair_rows.append([f"`{p.metric}`", f"`{p.system}`",
                          f"{format_signed(p.mean_difference)} [{format_signed(p.low)}, {format_signed(p.high)}]",
                          format_signed(p.effect_size), format_pvalue(p.pvalue), format_pvalue(p.pvalue_adjusted),
                          f"**{p.better}**" if p.better else ""])
    doc.table(["metric", "ranker", f"Δ mean − {rep.baseline} [95% CI]", "d_z", "p", "p adjusted",
               "significantly better"], pair_rows,
              [f"Δ mean: the mean of the per-query differences, with its {rep.level:.0%} percentile interval from "
               f"{rep.n_resamples:,} resamples of the queries. d_z: the mean difference over the standard "
               "deviation of the differences (Cohen's d_z). p: the test's two-sided p-value; p adjusted: after "
               "the correction. Every number is in results.json (`paper_table`)."],
              title="Every comparison of the table")
