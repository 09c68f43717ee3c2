"""The report's sections on the metrics: header, in-domain and shifted tables, calibration in detail, recalibration.

Each section adds its heading, one generated sentence and its table to a
:class:`~uncertank.experiment.report.document.Doc`, from the numbers of the
:class:`~uncertank.experiment.result.StudyResult` alone; the significance
marks come from ``result.significance`` (tests run by the study, never
here). Metric columns come from ``result.metric_info``, so a plugin's
metric shows up without a change here.

The metrics of a condition are two tables, effectiveness and calibration,
each of at most :data:`MAX_COLUMNS` metric columns (more are split into
several tables), so that a table fits the page. Under each table: what is
in bold, the significance marks, the definition of every column (also the
header's tooltip, :mod:`~uncertank.experiment.report.glossary`), and the
notes a reader needs: that ``MAP`` equals ``MRR`` when it does in every
row, and that an ``MCE`` comes from a bin of few pairs. A ranker that ranks
no better than chance (:mod:`~uncertank.experiment.report.chance`) is never
marked best calibrated, and the text says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

from uncertank.experiment.analysis import (
    higher_is_better,
    measured_labels,
    metric_labels,
    relative_change,
)
from uncertank.experiment.report.chance import base_rate_sentence, set_aside
from uncertank.experiment.report.document import Doc
from uncertank.experiment.report.glossary import define
from uncertank.experiment.report.markdown import MARK, cell, names
from uncertank.experiment.result import Comparison, Evaluation, StudyResult, json_object
from uncertank.formatting import format_number, format_percent, format_signed
from uncertank.metrics.metric import MetricKind
from uncertank.validation import check_callable, check_instance, check_name

__all__ = [
    "MAX_COLUMNS",
    "calibration_detail",
    "comparisons",
    "conditions_of",
    "header",
    "in_domain",
    "open_section",
    "recalibration",
    "shifted",
]


#: The most metric columns in one table; more are split into tables of about equal width.
MAX_COLUMNS = 8


# --------------------------------------------------------------------------- shared by the sections


def comparisons(result: StudyResult, table: str) -> list[Comparison]:
    """The stored comparisons of ``table`` (``"in-domain"`` or ``"shifted"``); empty when none were run."""
    check_instance(result, "result", StudyResult)
    check_name(table, "table")
    sig = result.significance
    return [] if sig is None else list(sig.tables.get(table, []))


def open_section(doc: Doc, result: StudyResult, title: str, has_outcome: Callable[[Evaluation], object],
                 missing: str) -> list[Evaluation]:
    """Open the section on one outcome of the evaluations: its heading, then the evaluations that have the outcome.

    When none has it, the section says so with the text ``missing`` and the list is empty.
    """
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_name(title, "title")
    check_name(missing, "missing")
    check_callable(has_outcome, "has_outcome", "a function of an Evaluation")
    doc.heading(2, title)
    evs = [e for e in result.evaluations if has_outcome(e)]
    if not evs:
        doc.text(missing)
    return evs


def conditions_of(result: StudyResult, evs: Sequence[Evaluation]) -> list[str]:
    """The study's conditions, in its order, under which at least one of ``evs`` was evaluated."""
    check_instance(result, "result", StudyResult)
    check_instance(evs, "evs", (list, tuple), "a list of Evaluation")
    return [c for c in result.conditions if any(e.condition == c for e in evs)]


def _option(result: StudyResult, label: str, key: str) -> object:
    return json_object(result.metric_info.get(label, {}).get("options")).get(key)


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
    opts = json_object(info.get("options"))
    return bool(info["name"] == "ece" and not opts.get("balanced") and opts.get("norm", "l1") == "l1"
                and opts.get("convention", "naeini") == "naeini")


def _alpha(result: StudyResult) -> float:
    return result.significance.alpha if result.significance is not None else 0.05


# --------------------------------------------------------------------------- header


def header(doc: Doc, result: StudyResult, ref: str | None) -> None:
    """Title, the smoke-run warning, the rankers, conditions and data sizes."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
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
    test = s.get("test")
    if isinstance(test, dict) and test:
        sizes.append("test queries per condition: " + ", ".join(
            f"`{k}` {format_number(v)}" for k, v in test.items()))
    if sizes:
        doc.text("Data: " + "; ".join(sizes) + ".")


# --------------------------------------------------------------------------- effectiveness and calibration tables


def _marker_notes(result: StudyResult, comps: list[Comparison], ref: str, labels: Sequence[str],
                  family: str) -> list[str]:
    """The significance mark's note when a metric of ``labels`` was tested, and the metrics that were not."""
    sig = result.significance
    n_tested = sum(c.p_value is not None for c in comps)
    correction = {"holm": "Holm-corrected", "bonferroni": "Bonferroni-corrected"}.get(
        sig.correction if sig else "holm", "uncorrected")
    notes = []
    if any(c.p_value is not None and c.metric in labels for c in comps):
        notes.append(f"{MARK}: differs from `{ref}` at α = {_alpha(result)} by a two-sided paired t-test over "
                     f"queries, {correction} over the {n_tested} tested comparisons of {family} (p-values in "
                     "results.json, `significance`).")
    untested = sorted({c.metric for c in comps if c.p_value is None and c.metric in labels})
    if untested:
        notes.append("Not tested (no paired per-query values; calibration metrics pool all pairs): "
                     + ", ".join(f"`{m}`" for m in untested) + ".")
    return notes


def _best(result: StudyResult, cond: str, label: str, aside: Collection[str] = ()) -> list[str]:
    """The rankers with the best value of ``label`` under ``cond``, leaving out ``aside`` (ties: all of them)."""
    vals = {e.ranker: e.metrics[label] for e in result.evaluations
            if e.condition == cond and e.ranker not in aside and label in e.metrics and math.isfinite(e.metrics[label])}
    if not vals:
        return []
    target = max(vals.values()) if higher_is_better(result, label) else min(vals.values())
    return [r for r, v in vals.items() if math.isclose(v, target, rel_tol=1e-12, abs_tol=1e-15)]


def _headline(result: StudyResult, cond: str, kind: MetricKind) -> tuple[str | None, list[str]]:
    """The first metric of ``kind`` measured under ``cond`` and the rankers best by it (None and [] without one).

    For calibration the rankers set aside under ``cond`` (:func:`~uncertank.experiment.report.chance.set_aside`)
    are never the best.
    """
    labels = measured_labels(result, [cond], kind)
    if not labels:
        return None, []
    aside = set_aside(result, cond) if kind == "calibration" else {}
    return labels[0], _best(result, cond, labels[0], aside)


def _calibration_sentence(result: StudyResult, cond: str, ref: str | None, comps: list[Comparison]) -> str:
    head, best = _headline(result, cond, "calibration")
    if head is None:
        return "No ranker's scores are probabilities here, so calibration is not measured."
    aside = set_aside(result, cond)
    why = base_rate_sentence(result, cond, head)
    why = f" {why[0].upper()}{why[1:]}" if why else ""
    if not best:
        return (f"No ranker that ranks better than chance has a value of `{head}`, so none is called best "
                f"calibrated.{why}")
    text = f"By `{head}`, {names(best)} {'is' if len(best) == 1 else 'are'} best calibrated"
    if aside:
        text += " of the rankers that rank better than chance"
    ref_ev = result.evaluation(ref, cond) if ref is not None else None
    if ref is None or ref_ev is None or head not in ref_ev.metrics:
        return text + "." + why
    better = [c for c in comps if c.condition == cond and c.metric == head and c.better and c.ranker not in aside]
    if not better:
        return text + f"; no ranker is better calibrated than `{ref}` ({format_number(ref_ev.metrics[head])})." + why
    sig = [c.ranker for c in better if c.significant]
    tested = any(c.p_value is not None for c in better)
    text += (f"; {names([c.ranker for c in better])} {'is' if len(better) == 1 else 'are'} better calibrated than "
             f"`{ref}` ({format_number(ref_ev.metrics[head])})")
    if not tested:
        return text + f" (`{head}` pools all pairs, so there is no per-query significance test)." + why
    if sig:
        return text + f", significantly for {names(sig)}." + why
    return text + ", none significantly." + why


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
                 with_change: bool, aside: Collection[str] = ()) -> list[list[str]]:
    """One row per ranker with a value of one of ``labels`` under ``cond``; ``aside`` is never in bold."""
    by = {(c.ranker, c.metric): c for c in comps if c.condition == cond}
    best = {m: set(_best(result, cond, m, aside)) for m in labels}
    rows = []
    for ranker in result.rankers:
        ev = result.evaluation(ranker, cond)
        if ev is None or not any(m in ev.metrics for m in labels):
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


def _groups(labels: list[str]) -> list[list[str]]:
    """``labels`` in consecutive groups of at most :data:`MAX_COLUMNS`, as equal in size as can be."""
    n = max(1, math.ceil(len(labels) / MAX_COLUMNS))
    size = math.ceil(len(labels) / n) if labels else 0
    return [labels[i:i + size] for i in range(0, len(labels), size)] if labels else []


def _named(result: StudyResult, name: str, fallback: str) -> str | None:
    """The label of the first metric registered as ``name`` (older results: the label ``fallback``)."""
    for label, info in result.metric_info.items():
        if info.get("name") == name and not json_object(info.get("options")).get("k"):
            return label
    if fallback in result.metric_info and "name" not in result.metric_info[fallback]:
        return fallback
    return None


def _map_is_mrr(result: StudyResult, cond: str, labels: list[str]) -> str | None:
    """A note when ``MAP`` and ``MRR`` are both in ``labels`` and equal for every ranker under ``cond``."""
    ap, rr = _named(result, "map", "MAP"), _named(result, "mrr", "MRR")
    if ap is None or rr is None or ap not in labels or rr not in labels:
        return None
    evs = [e for e in result.evaluations if e.condition == cond and ap in e.metrics and rr in e.metrics]
    if not evs or not all(math.isclose(e.metrics[ap], e.metrics[rr], rel_tol=1e-9, abs_tol=1e-12) for e in evs):
        return None
    return (f"`{ap}` equals `{rr}` in every row: with one relevant candidate per list, the average precision of a "
            "query is the reciprocal rank of that candidate, so the two columns say the same thing.")


def _mce_note(result: StudyResult, cond: str, labels: list[str]) -> str | None:
    """A note on the ``MCE`` column (when ``labels`` hold one): how many of its values come from a small bin."""
    mce = next((m for m in labels if result.metric_info.get(m, {}).get("name") == "mce"
                or json_object(result.metric_info.get(m, {}).get("options")).get("norm") == "max"), None)
    if mce is None and "MCE" in labels and "name" not in result.metric_info.get("MCE", {}):
        mce = "MCE"
    if mce is None:
        return None
    details = [e.calibration for e in result.evaluations
               if e.condition == cond and mce in e.metrics and e.calibration is not None]
    if not details:
        return (f"`{mce}` takes the largest gap of any bin, however few pairs it holds, so a bin of one pair can "
                "set it near 1; read it with care.")
    small = [d for d in details if d.mce is None or d.mce_all > d.mce + 1e-12]
    k = details[0].mce_min_count
    text = (f"`{mce}` takes the largest gap of any bin, however few pairs it holds: for {len(small)} of the "
            f"{len(details)} rankers here it comes from a bin of fewer than {k} pairs, where the gap is mostly noise")
    return text + ("; the MCE over bins of at least " f"{k} pairs is in *Calibration in detail*." if small else ".")


def _metric_tables(doc: Doc, result: StudyResult, cond: str, comps: list[Comparison], ref: str | None, *,
                   labels: list[str], in_domain: bool) -> None:
    """The effectiveness table(s), then the calibration table(s), of ``cond``; ``labels`` in their columns."""
    aside = set_aside(result, cond)
    with_change = not in_domain and ref is not None
    kinds: tuple[tuple[MetricKind, str], ...] = (("ranking", "Effectiveness"), ("calibration", "Calibration"))
    for kind, what in kinds:
        mine = [m for m in metric_labels(result, kind) if m in labels]
        groups = _groups(mine)
        for i, group in enumerate(groups):
            rows = _metric_rows(result, cond, group, comps, with_change=with_change,
                                aside=aside if kind == "calibration" else ())
            if not rows:
                continue
            lower = [f"`{m}`" for m in group if not higher_is_better(result, m)]
            notes = []
            if with_change:
                notes.append(f"Values with the relative change against `{ref}` in parentheses.")
            notes.append("Best value per column in bold" + (f" (lower is better for {', '.join(lower)})" if lower
                                                            else "") + ".")
            if kind == "calibration":
                left = [r for r in result.rankers if (e := result.evaluation(r, cond)) is not None
                        and not any(m in e.metrics for m in group)]
                if left:
                    notes.append(f"Calibration is measured only for rankers whose scores are probabilities; not "
                                 f"listed: {names(left)}.")
                why = base_rate_sentence(result, cond, group[0], verb="is never in bold")
                if why:
                    notes.append(why[0].upper() + why[1:])
                mce = _mce_note(result, cond, group)
                if mce:
                    notes.append(mce)
            else:
                same = _map_is_mrr(result, cond, group)
                if same:
                    notes.append(same)
            if ref and comps:
                notes += _marker_notes(result, comps, ref, group, "the in-domain tables" if in_domain
                                       else "the tables of every shifted condition")
            notes += _untested_note(result)
            if in_domain:
                notes.append("Columns. " + " ".join(f"`{m}`: {define(result, m)}." for m in group))
            else:
                notes.append("Columns as defined under the in-domain tables (each header's tooltip repeats its "
                             "definition).")
            part = f" ({i + 1} of {len(groups)})" if len(groups) > 1 else ""
            doc.table(["ranker", *[f"`{m}`" for m in group]], rows, notes, title=f"{what}, `{cond}`{part}",
                      tips={f"`{m}`": define(result, m) for m in group})


def in_domain(doc: Doc, result: StudyResult, ref: str | None) -> None:
    """The in-domain tables (Penha & Hauff 2021, Table 1): effectiveness, then calibration, best in bold."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    doc.heading(2, "In-domain effectiveness and calibration")
    if not result.conditions:
        doc.text("The study has no test condition.")
        return
    cond = result.conditions[0]
    comps = comparisons(result, "in-domain")
    lead = "In-domain: " if "in-domain" in cond.lower() else f"In-domain (`{cond}`): "
    doc.text(lead + _ranking_sentence(result, cond, ref, comps) + " " + _calibration_sentence(result, cond, ref, comps)
             + " As in Penha & Hauff (2021), Table 1.")
    _metric_tables(doc, result, cond, comps, ref, labels=measured_labels(result, [cond]), in_domain=True)


def shifted(doc: Doc, result: StudyResult, ref: str | None) -> None:
    """Effectiveness and calibration per shifted condition, change against the reference, significance marked."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
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
    if ref is None:
        doc.text("There is no probabilistic reference ranker, so the tables show no relative changes.")
    for cond in conds:
        doc.heading(3, f"Condition `{cond}`")
        _metric_tables(doc, result, cond, comps, ref, labels=labels, in_domain=False)


# --------------------------------------------------------------------------- calibration in detail


def calibration_detail(doc: Doc, result: StudyResult) -> None:
    """Signed bias beside the ECE, over-estimating bins, and the MCE over bins with enough pairs."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
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
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
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
    aside_all: dict[str, dict[str, str]] = {}
    for cond in result.conditions:
        aside = aside_all[cond] = set_aside(result, cond)
        for e in evs:
            if e.condition != cond:
                continue
            variants = {"raw": e.metrics, **e.recalibrated}
            best: dict[str, set[str]] = {}
            for m in labels if e.ranker not in aside else ():  # never in bold: ranks no better than chance
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
    notes = ["`raw`: the ranker's own scores; the others: the same scores mapped by a recalibrator fitted on the "
             "validation split. Best per ranker and condition in bold."]
    never = [f"`{r}` under `{c}`" for c, aside in aside_all.items() for r in aside
             if any(e.ranker == r and e.condition == c for e in evs)]
    if never:
        notes.append(f"Never in bold: {', '.join(never)}, which "
                     f"{'ranks' if len(never) == 1 else 'rank'} no better than chance or score every pair in one "
                     "reliability bin (see the tables above): a recalibrator maps its scores to about the base rate, "
                     "and a low calibration error there says nothing about telling relevant from non-relevant "
                     "candidates.")
    notes.append("Columns. " + " ".join(f"`{m}`: {define(result, m)}." for m in labels))
    doc.table(["condition", "ranker", "scores", *[f"`{m}`" for m in labels]], rows, notes,
              tips={f"`{m}`": define(result, m) for m in labels})
