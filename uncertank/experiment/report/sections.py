"""The report's sections on the metrics: header, in-domain and shifted tables, calibration in detail, recalibration.

Each section adds its heading, one generated sentence and its table to a
:class:`~uncertank.experiment.report.document.Doc`, from the numbers of the
:class:`~uncertank.experiment.result.StudyResult` alone; the significance
marks come from ``result.significance`` (tests run by the study, never
here). Metric columns come from ``result.metric_info``, so a plugin's
metric shows up without a change here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from uncertank.experiment.analysis import (
    best_rankers,
    higher_is_better,
    measured_labels,
    metric_labels,
    relative_change,
)
from uncertank.experiment.report.document import Doc
from uncertank.experiment.report.formatting import MARK, cell, names
from uncertank.experiment.result import Comparison, Evaluation, StudyResult
from uncertank.formatting import format_number, format_percent, format_signed
from uncertank.metrics.metric import MetricKind

__all__ = [
    "calibration_detail",
    "comparisons",
    "conditions_of",
    "header",
    "in_domain",
    "open_section",
    "recalibration",
    "shifted",
]


# --------------------------------------------------------------------------- shared by the sections


def comparisons(result: StudyResult, table: str) -> list[Comparison]:
    """The stored comparisons of ``table`` (``"in-domain"`` or ``"shifted"``); empty when none were run."""
    sig = result.significance
    return [] if sig is None else list(sig.tables.get(table, []))


def open_section(doc: Doc, result: StudyResult, title: str, has_outcome: Callable[[Evaluation], object],
                 missing: str) -> list[Evaluation]:
    """Open the section on one outcome of the evaluations: its heading, then the evaluations that have the outcome.

    When none has it, the section says so with the text ``missing`` and the list is empty.
    """
    doc.heading(2, title)
    evs = [e for e in result.evaluations if has_outcome(e)]
    if not evs:
        doc.text(missing)
    return evs


def conditions_of(result: StudyResult, evs: Sequence[Evaluation]) -> list[str]:
    """The study's conditions, in its order, under which at least one of ``evs`` was evaluated."""
    return [c for c in result.conditions if any(e.condition == c for e in evs)]


def _option(result: StudyResult, label: str, key: str) -> Any:
    opts = result.metric_info.get(label, {}).get("options") or {}
    return opts.get(key)


def _balanced(result: StudyResult, label: str) -> bool:
    """Whether ``label`` is a balanced ECE (its stored options say so; older results: its label)."""
    flag = _option(result, label, "balanced")
    return bool(flag) if flag is not None else "balanced" in label.lower()


def _plain_ece(result: StudyResult, label: str) -> bool:
    """Whether ``label`` is an l1 ECE over all pairs in the standard convention (any binning strategy)."""
    info = result.metric_info.get(label, {})
    if "name" not in info:  # results written before metric_info kept names and options
        low = label.lower()
        return low.startswith("ece") and "balanced" not in low and "penha" not in low
    opts = info.get("options") or {}
    return bool(info["name"] == "ece" and not opts.get("balanced") and opts.get("norm", "l1") == "l1"
                and opts.get("convention", "naeini") == "naeini")


def _alpha(result: StudyResult) -> float:
    return result.significance.alpha if result.significance is not None else 0.05


# --------------------------------------------------------------------------- header


def header(doc: Doc, result: StudyResult, ref: str | None) -> None:
    """Title, the smoke-run warning, the rankers, conditions and data sizes."""
    doc.heading(1, str(result.config.get("name") or "Study report"))
    if result.smoke:
        doc.warning("This is a smoke run (`uncertank demo --quick`): the models are tiny and barely trained and the "
                    "test sets are small, so the numbers below check that the pipeline runs end to end; they are "
                    "not evidence about any ranker.")
    conds = result.conditions
    parts = [f"Rankers: {names(result.rankers)}."]
    if conds:
        parts.append(f"Test conditions: {names(conds)}; the first (`{conds[0]}`) is the in-domain one.")
    if ref is not None:
        parts.append(f"Relative changes and significance tests are against `{ref}`.")
    doc.text(" ".join(parts))
    s = result.sizes
    sizes = []
    if "train" in s:
        sizes.append(f"training queries: {format_number(s['train'])}")
    if "valid" in s:
        sizes.append(f"validation queries: {format_number(s['valid'])}")
    if isinstance(s.get("test"), dict) and s["test"]:
        sizes.append("test queries per condition: " + ", ".join(
            f"`{k}` {format_number(v)}" for k, v in s["test"].items()))
    if sizes:
        doc.text("Data: " + "; ".join(sizes) + ".")


# --------------------------------------------------------------------------- effectiveness and calibration tables


def _marker_notes(result: StudyResult, comps: list[Comparison], ref: str) -> list[str]:
    sig = result.significance
    n_tested = sum(c.p_value is not None for c in comps)
    correction = {"holm": "Holm-corrected", "bonferroni": "Bonferroni-corrected"}.get(
        sig.correction if sig else "holm", "uncorrected")
    notes = [
        f"{MARK}: differs from `{ref}` at α = {_alpha(result)} by a two-sided paired t-test over queries, "
        f"{correction} over the {n_tested} tested comparisons of this table (p-values in results.json, "
        "`significance`)."
    ]
    untested = sorted({c.metric for c in comps if c.p_value is None})
    if untested:
        notes.append("Not tested (no paired per-query values; calibration metrics pool all pairs): "
                     + ", ".join(f"`{m}`" for m in untested) + ".")
    return notes


def _headline(result: StudyResult, cond: str, kind: MetricKind) -> tuple[str | None, list[str]]:
    """The first metric of ``kind`` measured under ``cond`` and the rankers best by it (None and [] without one)."""
    labels = measured_labels(result, [cond], kind)
    if not labels:
        return None, []
    return labels[0], best_rankers(result, cond, labels[0])


def _calibration_sentence(result: StudyResult, cond: str, ref: str | None, comps: list[Comparison]) -> str:
    head, best = _headline(result, cond, "calibration")
    if head is None:
        return "No ranker's scores are probabilities here, so calibration is not measured."
    text = f"By `{head}`, {names(best)} {'is' if len(best) == 1 else 'are'} best calibrated"
    if ref is None:
        return text + "."
    ref_ev = result.evaluation(ref, cond)
    if ref_ev is None or head not in ref_ev.metrics:
        return text + "."
    better = [c for c in comps if c.condition == cond and c.metric == head and c.better]
    if not better:
        return text + f"; no ranker is better calibrated than `{ref}` ({format_number(ref_ev.metrics[head])})."
    sig = [c.ranker for c in better if c.significant]
    tested = any(c.p_value is not None for c in better)
    text += (f"; {names([c.ranker for c in better])} {'is' if len(better) == 1 else 'are'} better calibrated than "
             f"`{ref}` ({format_number(ref_ev.metrics[head])})")
    if not tested:
        return text + f" (`{head}` pools all pairs, so there is no per-query significance test)."
    if sig:
        return text + f", significantly for {names(sig)}."
    return text + ", none significantly."


def _ranking_sentence(result: StudyResult, cond: str, ref: str | None, comps: list[Comparison]) -> str:
    head, best = _headline(result, cond, "ranking")
    if head is None:
        return ""
    ev = result.evaluation(best[0], cond) if best else None
    value = format_number(ev.metrics[head]) if ev is not None else "n/a"
    text = f"{names(best)} {'ranks' if len(best) == 1 else 'rank'} best by `{head}` ({value})"
    if ref is not None and result.significance is not None:
        mine = [c for c in comps if c.condition == cond and c.metric == head and c.significant]
        sig_better = [c.ranker for c in mine if c.better]
        sig_worse = [c.ranker for c in mine if c.better is False]
        parts = []
        if sig_better:
            parts.append(f"significantly above `{ref}`: {names(sig_better)}")
        if sig_worse:
            parts.append(f"significantly below `{ref}`: {names(sig_worse)}")
        text += ("; " + "; ".join(parts)) if parts else f"; no ranker differs significantly from `{ref}` on it"
    return text + "."


def _metric_rows(result: StudyResult, cond: str, labels: list[str], comps: list[Comparison], *,
                 with_change: bool) -> list[list[str]]:
    by = {(c.ranker, c.metric): c for c in comps if c.condition == cond}
    best = {m: set(best_rankers(result, cond, m)) for m in labels}
    rows = []
    for ranker in result.rankers:
        ev = result.evaluation(ranker, cond)
        if ev is None:
            continue
        row = [f"`{ranker}`"]
        for m in labels:
            if m not in ev.metrics:
                row.append("–")
                continue
            c = by.get((ranker, m))
            suffix = MARK if c is not None and c.significant else ""
            if with_change and c is not None:
                suffix = f" ({format_percent(c.change)}){suffix}"
            row.append(cell(ev.metrics[m], ranker in best[m] and len(result.rankers) > 1, suffix))
        rows.append(row)
    return rows


def _untested_note(result: StudyResult) -> list[str]:
    return [] if result.significance is not None else [
        "No significance tests are stored in this result (`significance` is empty), so no cell is marked."]


def in_domain(doc: Doc, result: StudyResult, ref: str | None) -> None:
    """The in-domain table (Penha & Hauff 2021, Table 1), best per column in bold, significance marked."""
    doc.heading(2, "In-domain effectiveness and calibration")
    if not result.conditions:
        doc.text("The study has no test condition.")
        return
    cond = result.conditions[0]
    labels = measured_labels(result, [cond])
    comps = comparisons(result, "in-domain")
    lead = "In-domain: " if "in-domain" in cond.lower() else f"In-domain (`{cond}`): "
    doc.text(lead + _ranking_sentence(result, cond, ref, comps) + " " + _calibration_sentence(result, cond, ref, comps))
    lower = [f"`{m}`" for m in labels if not higher_is_better(result, m)]
    notes = ["Best value per column in bold" + (f" (lower is better for {', '.join(lower)})" if lower else "")
             + ". Calibration is measured only for rankers whose scores are probabilities (– otherwise). "
             "As in Penha & Hauff (2021), Table 1."]
    if ref and comps:
        notes += _marker_notes(result, comps, ref)
    notes += _untested_note(result)
    doc.table(["ranker", *[f"`{m}`" for m in labels]], _metric_rows(result, cond, labels, comps, with_change=False),
              notes)


def shifted(doc: Doc, result: StudyResult, ref: str | None) -> None:
    """One table per shifted condition, relative change against the reference, significance marked."""
    doc.heading(2, "Cross negative sampling and cross-domain")
    conds = result.conditions[1:]
    if not conds:
        doc.text("This study has only the in-domain condition, so there is nothing to show under shift.")
        return
    labels = measured_labels(result, conds)
    comps = comparisons(result, "shifted")
    sentences = []
    first = result.conditions[0]
    rank = metric_labels(result, "ranking")
    for cond in conds:
        s = f"Under `{cond}`"
        if ref and rank:
            a, b = result.evaluation(ref, first), result.evaluation(ref, cond)
            if a is not None and b is not None and rank[0] in a.metrics and rank[0] in b.metrics:
                change = format_percent(relative_change(b.metrics[rank[0]], a.metrics[rank[0]]))
                s += f", `{ref}`'s `{rank[0]}` changes by {change} from in-domain;"
        s += " " + _ranking_sentence(result, cond, ref, comps)
        sentences.append(s + " " + _calibration_sentence(result, cond, ref, comps))
    doc.text(" ".join(sentences))
    for cond in conds:
        doc.heading(3, f"Condition `{cond}`")
        notes = [f"Values with the relative change against `{ref}` in parentheses; best per column in bold."
                 if ref else "Best per column in bold (no probabilistic reference ranker, so no relative changes)."]
        if ref and comps:
            notes += _marker_notes(result, comps, ref)
        notes += _untested_note(result)
        doc.table(["ranker", *[f"`{m}`" for m in labels]],
                  _metric_rows(result, cond, labels, comps, with_change=ref is not None), notes)


# --------------------------------------------------------------------------- calibration in detail


def calibration_detail(doc: Doc, result: StudyResult) -> None:
    """Signed bias beside the ECE, over-estimating bins, and the MCE over bins with enough pairs."""
    evs = open_section(doc, result, "Calibration in detail", lambda e: e.calibration is not None,
                       "No ranker's scores are probabilities, so there is no calibration to look into.")
    if not evs:
        return
    eces = [m for m in metric_labels(result, "calibration")
            if _plain_ece(result, m) and any(m in e.metrics for e in evs)]
    head = eces[0] if eces else None
    min_count = next(e.calibration.mce_min_count for e in evs if e.calibration is not None)
    all_over = [e for e in evs if e.calibration is not None and e.calibration.every_bin_over]
    parts = ["The signed bias is the mean score minus the fraction of relevant pairs (above 0: the scores "
             "over-estimate relevance)."]
    if all_over and head is not None:
        equal = [e for e in all_over if len(eces) > 1 and all(
            m in e.metrics and math.isclose(e.metrics[m], e.metrics[head], rel_tol=1e-9, abs_tol=1e-12)
            for m in eces)]
        ex = all_over[0]
        assert ex.calibration is not None
        parts.append(
            f"For {len(all_over)} of {len(evs)} ranker-condition pairs every reliability bin over-estimates, so "
            f"their `{head}` is the overall bias whatever the binning (e.g. `{ex.ranker}` under `{ex.condition}`: "
            f"`{head}` {format_number(ex.metrics.get(head))}, bias {format_signed(ex.calibration.bias)})"
            + (f"; this is why {names(eces)} are equal for {len(equal)} of them." if equal else ".")
            + " There the ECE says how much the scores over-estimate on average, not how the error varies "
            "with the score.")
    else:
        parts.append("No ranker-condition pair has every bin on the same side, so the ECE adds up errors of both "
                     "signs and is more than the bias.")
    noisy = [e for e in evs if e.calibration is not None and e.calibration.mce is not None
             and e.calibration.mce_all > e.calibration.mce + 1e-12]
    parts.append(f"The MCE here counts only bins holding at least {min_count} pairs: the gap of a bin of a few pairs "
                 f"is noise (a bin of one pair can show a gap near 1); {len(noisy)} of {len(evs)} pairs "
                 f"{'has' if len(noisy) == 1 else 'have'} a larger gap in some smaller bin.")
    doc.text(" ".join(parts))
    rows = []
    for cond in conditions_of(result, evs):
        for e in evs:
            c = e.calibration
            if e.condition != cond or c is None:
                continue
            rows.append([f"`{cond}`", f"`{e.ranker}`", *[format_number(e.metrics.get(m)) for m in eces],
                         format_signed(c.bias), f"{c.over_bins} of {c.filled_bins}", format_number(c.mce_all),
                         format_number(c.mce)])
    doc.table(["condition", "ranker", *[f"`{m}`" for m in eces], "bias (score − label)", "bins over-estimating",
               "MCE, every bin", f"MCE, bins ≥ {min_count} pairs"], rows,
              [f"Bins: the study's {result.config.get('n_bins', 10)} equal-width bins of the reliability diagrams. "
               "MCE: the largest gap between a bin's mean score and its fraction relevant; with every bin it is "
               f"what the registry's `MCE` reports; with bins of at least {min_count} pairs it is the one to read "
               "(– when no bin holds that many)."])


# --------------------------------------------------------------------------- recalibration


def _recalibration_sentence(result: StudyResult, evs: list[Evaluation], head: str, labels: list[str],
                            methods: list[str], lowered: int, wins: dict[str, int]) -> str:
    top = max(wins.values())
    winners = [k for k, n in wins.items() if n == top]
    n_cand = result.config.get("n_candidates")
    lists = (f"lists of 1 relevant and {n_cand - 1} non-relevant candidates" if isinstance(n_cand, int)
             else "lists with far more non-relevant than relevant candidates")
    text = (f"Fitted on the validation split, a recalibrator improves `{head}` for {lowered} of {len(evs)} "
            f"ranker-condition pairs; the best `{head}` comes most often from {names(winners)} ({top} of {len(evs)}).")
    balanced = [m for m in labels if _balanced(result, m)]
    if not balanced:
        return text
    bal = balanced[0]
    worse: list[tuple[float, Evaluation, str]] = []
    for e in evs:
        raw = e.metrics.get(bal)
        if raw is None:
            continue
        ups = [(v[bal] - raw, name) for name, v in e.recalibrated.items() if bal in v and v[bal] > raw]
        if ups:
            gain, name = max(ups)
            worse.append((gain, e, name))
    if not worse:
        return text + f" `{bal}` does not rise after recalibration for any of them."
    _, e, name = max(worse, key=lambda t: t[0])
    return text + (
        f" The validation split holds {lists}, and a recalibrator fitted there learns that base rate: it lowers "
        f"`{head}`, measured over all pairs with the same imbalance, while `{bal}`, measured on as many "
        f"non-relevant as relevant pairs, rises for {len(worse)} of {len(evs)} pairs (most for `{e.ranker}` under "
        f"`{e.condition}`: `{name}` {format_number(e.recalibrated[name][bal])} against "
        f"{format_number(e.metrics[bal])} raw). Trust `{head}` for reading a score as a probability on lists like "
        f"these (thresholds, NOTA, abstaining); trust `{bal}` for comparing the raw scores of rankers whatever the "
        "class ratio (Penha & Hauff's Table 1), not for judging a recalibrator fitted to the imbalanced base rate.")


def recalibration(doc: Doc, result: StudyResult) -> None:
    """Calibration before and after every recalibrator, and why ECE and balanced ECE move apart."""
    evs = open_section(doc, result, "Recalibration", lambda e: e.recalibrated,
                       "No recalibrator was applied in this study (it needs rankers whose scores are "
                       "probabilities).")
    if not evs:
        return
    labels = [m for m in metric_labels(result, "calibration")
              if any(m in r for e in evs for r in e.recalibrated.values())]
    head = labels[0] if labels else None
    methods = list(dict.fromkeys(name for e in evs for name in e.recalibrated))
    rows: list[list[str]] = []
    lowered = 0
    wins: dict[str, int] = dict.fromkeys(["raw", *methods], 0)
    for cond in result.conditions:
        for e in evs:
            if e.condition != cond:
                continue
            variants = {"raw": e.metrics, **e.recalibrated}
            best: dict[str, set[str]] = {}
            for m in labels:
                vals = {k: v[m] for k, v in variants.items() if m in v and math.isfinite(v[m])}
                if vals:
                    target = max(vals.values()) if higher_is_better(result, m) else min(vals.values())
                    best[m] = {k for k, v in vals.items() if math.isclose(v, target, rel_tol=1e-12, abs_tol=1e-15)}
            if head is not None and head in best:
                for k in best[head]:
                    wins[k] += 1
                raw = e.metrics.get(head)
                if raw is not None and any(
                        (v[head] > raw) == higher_is_better(result, head) and v[head] != raw
                        for v in e.recalibrated.values() if head in v):
                    lowered += 1
            for k, v in variants.items():
                rows.append([f"`{cond}`", f"`{e.ranker}`", k,
                             *[cell(v.get(m), k in best.get(m, set())) for m in labels]])
    if head is not None:
        doc.text(_recalibration_sentence(result, evs, head, labels, methods, lowered, wins))
    doc.table(["condition", "ranker", "scores", *[f"`{m}`" for m in labels]], rows,
              ["`raw`: the ranker's own scores; the others: the same scores mapped by a recalibrator fitted on the "
               "validation split. Best per ranker and condition in bold."])
