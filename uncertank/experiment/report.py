"""Write a study's report: ``results.json``, ``report.md``, ``report.html`` and ``figures/*.png``.

The report holds the tables and figures of Penha & Hauff (EACL 2021) and
Benham et al. (ECIR 2021), computed from a
:class:`~uncertank.experiment.result.StudyResult`:

1. in-domain effectiveness and calibration (their Table 1), best per column in bold;
2. the shifted conditions (cross negative sampling, cross-domain) with the
   relative change against the reference ranker and significance markers
   (paired t-test over queries, Holm-corrected over the table);
3. calibration before and after each recalibrator;
4. risk-aware reranking (b chosen on validation; test R@1 against b);
5. NOTA prediction with and without variances;
6. selective prediction (risk-coverage curves, AURC);
7. reliability diagrams, rankers overlaid, one panel per condition;
8. ECE against the imbalance ratio (their Figure 2);
9. the Bayesian comparison per model family (system effects, posterior
   predictive check, convergence, URisk);
10. the timings and cache keys of every step.

Each table opens with one sentence generated from the numbers of the run.
Metric columns come from ``result.metric_info``, so a plugin's metric shows
up without a change here. ``report.html`` is one self-contained page (its
own small stylesheet, no scripts, no external requests) beside the PNGs.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from uncertank._io import atomic_path, atomic_write_text
from uncertank.experiment.analysis import (
    Comparison,
    best_rankers,
    compare_to_reference,
    higher_is_better,
    metric_labels,
    reference_ranker,
    relative_change,
)
from uncertank.experiment.result import Evaluation, StudyResult
from uncertank.metrics.metric import MetricKind

__all__ = ["format_number", "format_pvalue", "markdown_table", "write_report"]

ALPHA = 0.05
_MARK = "†"


# --------------------------------------------------------------------------- formatting


def format_number(value: Any) -> str:
    """A table cell: integers as integers, floats with 3-4 significant decimals.

    Examples
    --------
    >>> [format_number(v) for v in (12, 0.41234, 0.0031234, 3.14159, 1234.56, 0.0, None, True)]
    ['12', '0.4123', '0.00312', '3.142', '1234.6', '0', '–', 'yes']
    """
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if not isinstance(value, (float, np.floating)):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.3f}"
    if a >= 0.01:
        return f"{v:.4f}"
    return f"{v:.3g}"


def format_pvalue(p: float | None) -> str:
    """A p-value: three decimals, scientific notation below 0.001.

    Examples
    --------
    >>> format_pvalue(0.04321), format_pvalue(3.2e-7), format_pvalue(None)
    ('0.043', '3.2e-07', '–')
    """
    if p is None:
        return "–"
    if math.isnan(p):
        return "n/a"
    if p < 0.001:
        return f"{p:.1e}"
    return f"{p:.3f}"


def _pct(change: float | None) -> str:
    return "n/a" if change is None else f"{change:+.1f}%"


def _names(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (names in code font)."""
    quoted = [f"`{x}`" for x in items]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as a Markdown table (columns: every key, first seen first); cells by :func:`format_number`.

    Examples
    --------
    >>> print(markdown_table([{"ranker": "bert", "R@1": 0.41234, "queries": 200}]), end="")
    | ranker | R@1 | queries |
    |---|---|---|
    | bert | 0.4123 | 200 |
    """
    if not rows:
        return "(none)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(_md_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_md_cell(format_number(r[c]) if c in r else "") for c in cols) + " |"
              for r in rows]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the document model


@dataclass
class _Heading:
    level: int
    text: str
    anchor: str


@dataclass
class _Text:
    text: str  # inline Markdown: `code`, **bold**


@dataclass
class _Warning:
    text: str


@dataclass
class _Table:
    columns: list[str]
    rows: list[list[str]]  # inline Markdown cells
    notes: list[str] = field(default_factory=list)


@dataclass
class _Figure:
    src: str  # relative to the report folder
    caption: str


_Block = _Heading | _Text | _Warning | _Table | _Figure


class _Doc:
    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self._anchors: set[str] = set()
        self.n_figures = 0
        self.n_tables = 0

    def heading(self, level: int, text: str) -> None:
        base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
        anchor, i = base, 2
        while anchor in self._anchors:
            anchor, i = f"{base}-{i}", i + 1
        self._anchors.add(anchor)
        self.blocks.append(_Heading(level, text, anchor))

    def text(self, text: str) -> None:
        self.blocks.append(_Text(text))

    def warning(self, text: str) -> None:
        self.blocks.append(_Warning(text))

    def table(self, columns: list[str], rows: list[list[str]], notes: Sequence[str] = ()) -> None:
        self.n_tables += 1
        self.blocks.append(_Table(columns, rows, list(notes)))

    def figure(self, src: str, caption: str) -> None:
        self.n_figures += 1
        self.blocks.append(_Figure(src, f"Figure {self.n_figures}. {caption}"))


def _render_md(doc: _Doc) -> str:
    out: list[str] = []
    toc = [b for b in doc.blocks if isinstance(b, _Heading) and b.level == 2]
    for b in doc.blocks:
        if isinstance(b, _Heading):
            out.append("#" * b.level + " " + b.text + "\n")
            if b.level == 1 and toc:
                out.append("Contents: " + " · ".join(f"[{h.text}](#{h.anchor})" for h in toc) + "\n")
        elif isinstance(b, _Text):
            out.append(b.text + "\n")
        elif isinstance(b, _Warning):
            out.append(f"> **Warning.** {b.text}\n")
        elif isinstance(b, _Table):
            lines = ["| " + " | ".join(_md_cell(c) for c in b.columns) + " |", "|" + "---|" * len(b.columns)]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("\n".join(lines) + "\n")
            out.extend(f"{n}\n" for n in b.notes)
        else:
            out.append(f"![{b.caption}]({b.src})\n\n*{b.caption}*\n")
    return "\n".join(out)


def _inline_html(text: str) -> str:
    s = html.escape(text, quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


_CSS = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:0;background:#fafafa}
main{max-width:1080px;margin:0 auto;padding:1.5em 2em 4em;background:#fff}
h1{font-size:1.7em;margin:.4em 0}h2{font-size:1.3em;margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.1em;margin-top:1.5em}
a.anchor{color:#bbb;text-decoration:none;margin-left:.35em;font-weight:normal;visibility:hidden}
h1:hover a.anchor,h2:hover a.anchor,h3:hover a.anchor{visibility:visible}
nav.toc{background:#f3f5f8;border:1px solid #e1e5eb;border-radius:6px;padding:.6em 1.2em;margin:1em 0}
nav.toc ol{margin:.3em 0;padding-left:1.4em}
.warning{background:#fff4e5;border:1px solid #f0a030;border-left:6px solid #e67e00;border-radius:4px;
padding:.7em 1em;margin:1em 0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e3e3e3;padding:.25em .7em;text-align:right;white-space:nowrap}
th{border-bottom:2px solid #999;background:#f7f7f7}
td:first-child,th:first-child,td.text,th.text{text-align:left}
tbody tr:hover{background:#f5f9ff}
p.note{font-size:.85em;color:#555;margin:.2em 0}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em;background:#f2f2f2;padding:0 .2em;
border-radius:3px}
figure{margin:1.2em 0;text-align:center}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:#444;max-width:60em;margin:.3em auto;text-align:left}
"""


def _is_number(cell: str) -> bool:
    return bool(re.match(r"^\**[-+]?[\d.]", cell)) or cell in ("–", "n/a")


def _html_cell(tag: str, text: str, left: bool) -> str:
    cls = ' class="text"' if left else ""
    return f"<{tag}{cls}>{_inline_html(text)}</{tag}>"


def _render_html(doc: _Doc, title: str) -> str:
    body: list[str] = []
    toc = [b for b in doc.blocks if isinstance(b, _Heading) and b.level == 2]
    for b in doc.blocks:
        if isinstance(b, _Heading):
            body.append(f'<h{b.level} id="{b.anchor}">{_inline_html(b.text)}'
                        f'<a class="anchor" href="#{b.anchor}" aria-label="link to this section">#</a></h{b.level}>')
            if b.level == 1 and toc:
                items = "".join(f'<li><a href="#{h.anchor}">{_inline_html(h.text)}</a></li>' for h in toc)
                body.append(f'<nav class="toc"><strong>Contents</strong><ol>{items}</ol></nav>')
        elif isinstance(b, _Text):
            body.append(f"<p>{_inline_html(b.text)}</p>")
        elif isinstance(b, _Warning):
            body.append(f'<div class="warning" role="alert"><strong>Warning.</strong> {_inline_html(b.text)}</div>')
        elif isinstance(b, _Table):
            text_cols = {j for j in range(len(b.columns))
                         if j == 0 or any(j < len(r) and not _is_number(r[j]) for r in b.rows)}

            head = "".join(_html_cell("th", c, j in text_cols) for j, c in enumerate(b.columns))
            rows = "".join("<tr>" + "".join(_html_cell("td", c, j in text_cols) for j, c in enumerate(row)) + "</tr>"
                           for row in b.rows)
            body.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>')
            body.extend(f'<p class="note">{_inline_html(n)}</p>' for n in b.notes)
        else:
            body.append(f'<figure><img src="{html.escape(b.src)}" alt="{html.escape(b.caption)}">'
                        f"<figcaption>{_inline_html(b.caption)}</figcaption></figure>")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n"
        "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


# --------------------------------------------------------------------------- figures


class _Figures:
    """Draws into ``figures/`` with matplotlib's object API (no pyplot state, no backend switch)."""

    def __init__(self, out: Path) -> None:
        try:
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ImportError(
                f'the report\'s figures need matplotlib; install it with pip install "uncertank[plot]" ({exc})'
            ) from exc
        self.Figure = Figure
        self.out = out
        self.dir = out / "figures"

    def new(self, n_panels: int, *, width: float = 4.2, height: float = 3.6, rows: int = 1) -> tuple[Any, list[Any]]:
        cols = max(1, math.ceil(n_panels / rows))
        fig = self.Figure(figsize=(min(width * cols, 15.0), height * rows), layout="constrained")
        axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]
        return fig, axes

    def save(self, fig: Any, name: str) -> str:
        path = self.dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
        return f"figures/{name}"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "x"


def _colours(rankers: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {r: cmap(i % 10) for i, r in enumerate(rankers)}


# --------------------------------------------------------------------------- sections


def _sizes_text(result: StudyResult) -> str:
    s = result.sizes
    parts = []
    if "train" in s:
        parts.append(f"training queries: {format_number(s['train'])}")
    if "valid" in s:
        parts.append(f"validation queries: {format_number(s['valid'])}")
    if isinstance(s.get("test"), dict) and s["test"]:
        parts.append("test queries per condition: " + ", ".join(
            f"`{k}` {format_number(v)}" for k, v in s["test"].items()))
    return ("Data: " + "; ".join(parts) + ".") if parts else ""


def _header(doc: _Doc, result: StudyResult, ref: str | None) -> None:
    title = str(result.config.get("name") or "Study report")
    doc.heading(1, title)
    if result.smoke:
        doc.warning("This is a smoke run (`uncertank demo --quick`): the models are tiny and barely trained and the "
                    "test sets are small, so the numbers below check that the pipeline runs end to end; they are "
                    "not evidence about any ranker.")
    conds = result.conditions
    parts = [f"Rankers: {_names(result.rankers)}."]
    if conds:
        parts.append(f"Test conditions: {_names(conds)}; the first (`{conds[0]}`) is the in-domain one.")
    if ref is not None:
        parts.append(f"Relative changes and significance tests are against `{ref}`.")
    doc.text(" ".join(parts))
    sizes = _sizes_text(result)
    if sizes:
        doc.text(sizes)


def _cell(value: float | None, bold: bool = False, suffix: str = "") -> str:
    text = format_number(value) + suffix
    return f"**{text}**" if bold and value is not None else text


def _marker(c: Comparison | None) -> str:
    return _MARK if c is not None and c.significant else ""


def _marker_notes(comparisons: list[Comparison], ref: str) -> list[str]:
    n_tested = sum(c.p_value is not None for c in comparisons)
    notes = [
        f"{_MARK}: differs from `{ref}` at α = {ALPHA} by a two-sided paired t-test over queries, Holm-corrected "
        f"over the {n_tested} tested comparisons of this table."
    ]
    untested = sorted({c.metric for c in comparisons if c.p_value is None})
    if untested:
        notes.append("Not tested (no paired per-query values; calibration metrics pool all pairs): "
                     + ", ".join(f"`{m}`" for m in untested) + ".")
    return notes


def _measured_labels(result: StudyResult, conds: Sequence[str], kind: MetricKind | None = None) -> list[str]:
    """The metric labels of ``kind`` (all kinds when None) that some ranker has a value of under one of ``conds``."""
    return [m for m in metric_labels(result, kind)
            if any(m in e.metrics for e in result.evaluations if e.condition in conds)]


def _headline(result: StudyResult, cond: str, kind: MetricKind) -> tuple[str | None, list[str]]:
    """The first metric of ``kind`` measured under ``cond`` and the rankers best by it (None and [] without one)."""
    labels = _measured_labels(result, [cond], kind)
    if not labels:
        return None, []
    return labels[0], best_rankers(result, cond, labels[0])


def _calibration_sentence(result: StudyResult, cond: str, ref: str | None, comps: list[Comparison]) -> str:
    head, best = _headline(result, cond, "calibration")
    if head is None:
        return "No ranker's scores are probabilities here, so calibration is not measured."
    text = f"By `{head}`, {_names(best)} {'is' if len(best) == 1 else 'are'} best calibrated"
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
    text += (f"; {_names([c.ranker for c in better])} {'is' if len(better) == 1 else 'are'} better calibrated than "
             f"`{ref}` ({format_number(ref_ev.metrics[head])})")
    if not tested:
        return text + f" (`{head}` pools all pairs, so there is no per-query significance test)."
    if sig:
        return text + f", significantly for {_names(sig)}."
    return text + ", none significantly."


def _ranking_sentence(result: StudyResult, cond: str, ref: str | None, comps: list[Comparison]) -> str:
    head, best = _headline(result, cond, "ranking")
    if head is None:
        return ""
    ev = result.evaluation(best[0], cond) if best else None
    value = format_number(ev.metrics[head]) if ev is not None else "n/a"
    text = f"{_names(best)} {'ranks' if len(best) == 1 else 'rank'} best by `{head}` ({value})"
    if ref is not None:
        sig_better = [c.ranker for c in comps if c.condition == cond and c.metric == head and c.better
                      and c.significant]
        sig_worse = [c.ranker for c in comps if c.condition == cond and c.metric == head and c.better is False
                     and c.significant]
        parts = []
        if sig_better:
            parts.append(f"significantly above `{ref}`: {_names(sig_better)}")
        if sig_worse:
            parts.append(f"significantly below `{ref}`: {_names(sig_worse)}")
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
            suffix = _marker(c)
            if with_change and c is not None:
                suffix = f" ({_pct(c.change)}){suffix}"
            row.append(_cell(ev.metrics[m], ranker in best[m] and len(result.rankers) > 1, suffix))
        rows.append(row)
    return rows


def _outcome_section(doc: _Doc, result: StudyResult, title: str, has_outcome: Callable[[Evaluation], object],
                     missing: str) -> list[Evaluation]:
    """Open the section on one outcome of the evaluations: its heading, then the evaluations that have the outcome.

    When none has it, the section says so with the text ``missing`` and the list is empty.
    """
    doc.heading(2, title)
    evs = [e for e in result.evaluations if has_outcome(e)]
    if not evs:
        doc.text(missing)
    return evs


def _conditions_of(result: StudyResult, evs: Sequence[Evaluation]) -> list[str]:
    """The study's conditions, in its order, under which at least one of ``evs`` was evaluated."""
    return [c for c in result.conditions if any(e.condition == c for e in evs)]


def _in_domain(doc: _Doc, result: StudyResult, ref: str | None) -> None:
    doc.heading(2, "In-domain effectiveness and calibration")
    if not result.conditions:
        doc.text("The study has no test condition.")
        return
    cond = result.conditions[0]
    labels = _measured_labels(result, [cond])
    comps = compare_to_reference(result, [cond], labels, reference=ref, alpha=ALPHA) if ref else []
    lead = "In-domain: " if "in-domain" in cond.lower() else f"In-domain (`{cond}`): "
    sentence = lead + _ranking_sentence(result, cond, ref, comps)
    doc.text(sentence + " " + _calibration_sentence(result, cond, ref, comps))
    lower = [f"`{m}`" for m in labels if not higher_is_better(result, m)]
    notes = ["Best value per column in bold" + (f" (lower is better for {', '.join(lower)})" if lower else "")
             + ". Calibration is measured only for rankers whose scores are probabilities (– otherwise). "
             "As in Penha & Hauff (2021), Table 1."]
    if ref and comps:
        notes += _marker_notes(comps, ref)
    doc.table(["ranker", *[f"`{m}`" for m in labels]], _metric_rows(result, cond, labels, comps, with_change=False),
              notes)


def _shifted(doc: _Doc, result: StudyResult, ref: str | None) -> None:
    doc.heading(2, "Cross negative sampling and cross-domain")
    shifted = result.conditions[1:]
    if not shifted:
        doc.text("This study has only the in-domain condition, so there is nothing to show under shift.")
        return
    labels = _measured_labels(result, shifted)
    comps = compare_to_reference(result, shifted, labels, reference=ref, alpha=ALPHA) if ref else []
    sentences = []
    first = result.conditions[0]
    rank = metric_labels(result, "ranking")
    for cond in shifted:
        s = f"Under `{cond}`"
        if ref and rank:
            a, b = result.evaluation(ref, first), result.evaluation(ref, cond)
            if a is not None and b is not None and rank[0] in a.metrics and rank[0] in b.metrics:
                change = _pct(relative_change(b.metrics[rank[0]], a.metrics[rank[0]]))
                s += f", `{ref}`'s `{rank[0]}` changes by {change} from in-domain;"
        s += " " + _ranking_sentence(result, cond, ref, comps)
        sentences.append(s + " " + _calibration_sentence(result, cond, ref, comps))
    doc.text(" ".join(sentences))
    for cond in shifted:
        doc.heading(3, f"Condition `{cond}`")
        notes = [f"Values with the relative change against `{ref}` in parentheses; best per column in bold."
                 if ref else "Best per column in bold (no probabilistic reference ranker, so no relative changes)."]
        if ref and comps:
            notes += _marker_notes(comps, ref)
        doc.table(["ranker", *[f"`{m}`" for m in labels]],
                  _metric_rows(result, cond, labels, comps, with_change=ref is not None), notes)


def _recalibration(doc: _Doc, result: StudyResult) -> None:
    evs = _outcome_section(doc, result, "Recalibration", lambda e: e.recalibrated,
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
                             *[_cell(v.get(m), k in best.get(m, set())) for m in labels]])
    if head is not None:
        top = max(wins.values())
        winners = [k for k, n in wins.items() if n == top]
        doc.text(f"Fitted on the validation split, a recalibrator improves `{head}` for {lowered} of {len(evs)} "
                 f"ranker-condition pairs; the best `{head}` comes most often from {_names(winners)} "
                 f"({top} of {len(evs)}).")
    doc.table(["condition", "ranker", "scores", *[f"`{m}`" for m in labels]], rows,
              ["`raw`: the ranker's own scores; the others: the same scores mapped by a recalibrator fitted on the "
               "validation split. Best per ranker and condition in bold."])


def _risk(doc: _Doc, result: StudyResult, figs: _Figures) -> None:
    evs = _outcome_section(doc, result, "Risk-aware reranking", lambda e: e.risk is not None,
                           "No ranker gave predictive samples, so risk-aware reranking (Penha & Hauff 2021, "
                           "eq. 7) was not run.")
    if not evs:
        return
    from uncertank.stats import adjust_pvalues

    ps = [e.risk.p_value for e in evs if e.risk is not None and e.risk.p_value is not None]
    adj = iter(adjust_pvalues(ps, "holm").tolist()) if ps else iter([])
    rows, improved, sig, zero_b = [], [], [], 0
    for e in evs:
        r = e.risk
        assert r is not None
        p_adj = next(adj) if r.p_value is not None else None
        delta = r.r1_risk_aware - r.r1_mean
        mark = _MARK if p_adj is not None and p_adj < ALPHA else ""
        if delta > 0:
            improved.append(f"{e.ranker} / {e.condition}")
        if mark:
            sig.append(f"{e.ranker} / {e.condition}")
        zero_b += r.b == 0
        rows.append([f"`{e.condition}`", f"`{e.ranker}`", format_number(r.b), format_number(r.r1_mean),
                     format_number(r.r1_risk_aware), f"{delta:+.4f}{mark}", format_pvalue(r.p_value)])
    text = (f"With the risk aversion b chosen on validation R@1, risk-aware ranking raises test R@1 for "
            f"{len(improved)} of {len(evs)} ranker-condition pairs")
    text += f", significantly for {_names(sig)}" if sig else ", none significantly"
    text += f"; b = 0 (ranking by the mean) was chosen for {zero_b} of them." if zero_b else "."
    doc.text(text)
    doc.table(["condition", "ranker", "b", "R@1 by mean", "R@1 risk-aware", "change", "p"], rows,
              ["b: the risk aversion of Penha & Hauff (2021) eq. 7, chosen on the validation split. "
               "p: paired t-test over queries between the two rankings (– when they never differ); "
               f"{_MARK}: significant at α = {ALPHA} after Holm's correction over this table."])
    conds = _conditions_of(result, evs)
    colours = _colours(result.rankers)
    fig, axes = figs.new(len(conds), width=4.3, height=3.4)
    for ax, cond in zip(axes, conds, strict=True):
        for e in evs:
            if e.condition != cond or e.risk is None:
                continue
            bs = sorted(e.risk.test_curve)
            ax.plot(bs, [e.risk.test_curve[b] for b in bs], marker="o", ms=3, color=colours[e.ranker], label=e.ranker)
            if e.risk.b in e.risk.test_curve:
                ax.plot([e.risk.b], [e.risk.test_curve[e.risk.b]], marker="*", ms=13, color=colours[e.ranker],
                        markeredgecolor="black", linestyle="none")
        ax.set(xlabel="risk aversion b", ylabel="test R@1", title=cond)
        if any(b > 0 for e in evs for b in (e.risk.test_curve if e.risk else {})) and all(
                b >= 0 for e in evs for b in (e.risk.test_curve if e.risk else {})):
            ax.set_xscale("symlog", linthresh=min((b for e in evs for b in (e.risk.test_curve if e.risk else {})
                                                   if b > 0), default=1.0))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    src = figs.save(fig, "risk-r1-vs-b.png")
    doc.figure(src, "Test R@1 against the risk aversion b, per ranker and condition; the star marks the b chosen "
                    "on validation.")


def _nota(doc: _Doc, result: StudyResult) -> None:
    evs = _outcome_section(doc, result, "NOTA prediction", lambda e: e.nota is not None,
                           "NOTA prediction was not run (it needs a ranker whose scores are probabilities).")
    if not evs:
        return
    rows, helped, sig = [], [], []
    for e in evs:
        n = e.nota
        assert n is not None
        if n.f1_means_var is not None and n.f1_means_var > n.f1_means:
            helped.append(e.ranker)
            if n.p_value is not None and n.p_value < ALPHA:
                sig.append(e.ranker)
        rows.append([f"`{e.ranker}`", f"`{e.condition}`",
                     f"{format_number(n.f1_means)} ± {format_number(n.f1_means_sd)}",
                     "–" if n.f1_means_var is None else
                     f"{format_number(n.f1_means_var)} ± {format_number(n.f1_means_var_sd)}",
                     format_pvalue(n.p_value)])
    with_var = [e for e in evs if e.nota is not None and e.nota.f1_means_var is not None]
    best = max(evs, key=lambda e: max(e.nota.f1_means, e.nota.f1_means_var or -1.0) if e.nota else -1.0)
    assert best.nota is not None
    text = (f"The best NOTA macro-F1 is `{best.ranker}`'s "
            f"({format_number(max(best.nota.f1_means, best.nota.f1_means_var or -1.0))})")
    if with_var:
        text += (f"; adding the variances to the features raises F1 for {len(helped)} of {len(with_var)} stochastic "
                 f"rankers" + (f", significantly (p < {ALPHA}) for {_names(sig)}." if sig else ", none significantly."))
    else:
        text += "; no ranker gave variances, so only the means are used."
    doc.text(text)
    doc.table(["ranker", "condition", "F1 means", "F1 means + variances", "p"], rows,
              ["Macro-F1 (mean ± sd over stratified 5-fold cross-validation) of a random forest predicting whether "
               "no candidate is relevant, from the sorted scores, and from the scores and their variances (Penha & "
               "Hauff 2021, sec. 5.3). p: paired t-test over folds between the two feature sets."])


def _selective(doc: _Doc, result: StudyResult, figs: _Figures) -> None:
    evs = _outcome_section(doc, result, "Selective prediction", lambda e: e.selective is not None,
                           "Selective prediction was not computed in this study.")
    if not evs:
        return
    rows = []
    for cond in result.conditions:
        cevs = [e for e in evs if e.condition == cond]
        if not cevs:
            continue
        low = min(e.selective.aurc for e in cevs if e.selective)
        for e in cevs:
            s = e.selective
            assert s is not None
            rows.append([f"`{cond}`", f"`{e.ranker}`", s.confidence, _cell(s.aurc, math.isclose(s.aurc, low)),
                         format_number(s.oracle_aurc), format_number(s.aurc - s.oracle_aurc)])
    cond0 = _conditions_of(result, evs)[0]
    c0 = [e for e in evs if e.condition == cond0 and e.selective]
    best = min(c0, key=lambda e: e.selective.aurc if e.selective else math.inf)
    assert best.selective is not None
    doc.text(f"Abstaining on the queries whose top candidate is least certain, `{best.ranker}` has the lowest area "
             f"under the risk-coverage curve under `{cond0}` (AURC {format_number(best.selective.aurc)}, against "
             f"{format_number(best.selective.oracle_aurc)} for an oracle that abstains on its errors first).")
    doc.table(["condition", "ranker", "certainty", "AURC", "oracle AURC", "excess"], rows,
              ["AURC: area under the risk-coverage curve, risk being the share of answered queries whose top "
               "candidate is not relevant (lower is better; best per condition in bold). Certainty: the top "
               "candidate's probability, or its margin over the runner-up for scores that are not probabilities."])
    conds = _conditions_of(result, evs)
    colours = _colours(result.rankers)
    fig, axes = figs.new(len(conds), width=4.3, height=3.4)
    for ax, cond in zip(axes, conds, strict=True):
        for e in evs:
            if e.condition == cond and e.selective is not None:
                ax.plot(e.selective.coverage, e.selective.risk, color=colours[e.ranker],
                        label=f"{e.ranker} ({format_number(e.selective.aurc)})")
        ax.set(xlabel="coverage (share of queries answered)", ylabel="risk (top-1 error rate)", title=cond,
               xlim=(0, 1))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, title="ranker (AURC)", title_fontsize=7)
    src = figs.save(fig, "risk-coverage.png")
    doc.figure(src, "Risk-coverage curves: the top-1 error rate among the queries answered, as the least certain "
                    "queries are left out; one panel per condition.")


def _reliability(doc: _Doc, result: StudyResult, figs: _Figures) -> None:
    evs = _outcome_section(doc, result, "Reliability diagrams",
                           lambda e: e.reliability is not None and e.reliability.count,
                           "No ranker's scores are probabilities, so there are no reliability diagrams.")
    if not evs:
        return
    conds = _conditions_of(result, evs)
    colours = _colours(result.rankers)
    fig = figs.Figure(figsize=(min(4.2 * len(conds), 16.0), 5.0), layout="constrained")
    grid = fig.add_gridspec(2, len(conds), height_ratios=[3, 1])
    total_max = max(sum(e.reliability.count) for e in evs if e.reliability)
    for j, cond in enumerate(conds):
        ax = fig.add_subplot(grid[0, j])
        strip = fig.add_subplot(grid[1, j], sharex=ax)
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfectly calibrated")
        for e in evs:
            if e.condition != cond or e.reliability is None:
                continue
            c = e.reliability
            n = max(sum(c.count), 1)
            sizes = [8 + 220 * k / n for k in c.count]
            ax.plot(c.mean_confidence, c.fraction_relevant, color=colours[e.ranker], lw=1.2, label=e.ranker)
            ax.scatter(c.mean_confidence, c.fraction_relevant, s=sizes, color=colours[e.ranker], alpha=0.6,
                       edgecolors="black", linewidths=0.4)
            strip.plot(c.mean_confidence, c.count, marker="o", ms=3, lw=1, color=colours[e.ranker])
        ax.set(xlim=(0, 1), ylim=(0, 1), ylabel="fraction relevant", title=cond)
        ax.tick_params(labelbottom=False)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        strip.set_yscale("log")
        strip.set_ylim(0.8, total_max * 2)
        strip.set(xlabel="mean predicted P(relevant)", ylabel="pairs in bin")
        strip.grid(alpha=0.3)
    src = figs.save(fig, "reliability.png")
    doc.text("Fraction of relevant pairs against the mean predicted probability per bin, the rankers overlaid; a "
             "calibrated ranker follows the diagonal.")
    doc.figure(src, "Reliability diagrams, one panel per condition. Marker area is proportional to the share of a "
                    "ranker's pairs in the bin; the strip below gives the bin counts (log scale).")


def _imbalance(doc: _Doc, result: StudyResult, figs: _Figures) -> None:
    evs = _outcome_section(doc, result, "ECE against the imbalance ratio", lambda e: e.imbalance,
                           "The imbalance sweep needs rankers whose scores are probabilities; there are none here.")
    if not evs:
        return
    conds = _conditions_of(result, evs)
    rising = 0
    for e in evs:
        assert e.imbalance is not None
        ks = sorted(e.imbalance)
        rising += len(ks) > 1 and e.imbalance[ks[-1]] > e.imbalance[ks[0]]
    doc.text(f"ECE with 1, 2, … non-relevant candidates per relevant one (Penha & Hauff 2021, Fig. 2): it grows "
             f"from the balanced setting to the most imbalanced for {rising} of {len(evs)} ranker-condition pairs.")
    colours = _colours(result.rankers)
    fig, axes = figs.new(len(conds), width=4.2, height=3.4)
    for ax, cond in zip(axes, conds, strict=True):
        for e in evs:
            if e.condition == cond and e.imbalance:
                ks = sorted(e.imbalance)
                ax.plot(ks, [e.imbalance[k] for k in ks], marker="o", ms=3, color=colours[e.ranker], label=e.ranker)
        ax.set(xlabel="non-relevant per relevant", ylabel="ECE", title=cond)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    src = figs.save(fig, "ece-imbalance.png")
    doc.figure(src, "ECE against the number of non-relevant candidates per relevant one, one line per ranker and one "
                    "panel per condition.")


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (int, float, str, bool, np.integer, np.floating, np.bool_))


def _bayes(doc: _Doc, result: StudyResult, figs: _Figures, out: Path) -> None:
    if not result.bayes:
        return
    doc.heading(2, "Bayesian comparison of systems")
    fams = list(result.bayes.values())
    diag_keys = list(dict.fromkeys(k for b in fams for k, v in b.diagnostics.items() if _scalar(v)))
    list_keys = list(dict.fromkeys(k for b in fams for k, v in b.diagnostics.items() if not _scalar(v)))
    parts = []
    for b in fams:
        parts.append(f"with `{b.family}`, {b.best_distinguishable} of {b.n_systems} systems are credibly different "
                     f"from the best and {b.worst_distinguishable} from the worst"
                     + ("" if b.converged else " (the sampler did **not** converge, so these counts are unreliable)"))
    doc.text("On the TREC-COVID round 1 runs (Benham et al. 2021): " + "; ".join(parts) + ".")
    rows = []
    for b in fams:
        row = [f"`{b.family}`", format_number(b.n_systems), format_number(b.best_distinguishable),
               format_number(b.worst_distinguishable), "yes" if b.converged else "**no**"]
        row += [format_number(b.diagnostics.get(k)) for k in diag_keys]
        rows.append(row)
    notes = ["Distinguishable: the 95% credible interval of the difference in system effects excludes 0. "
             "Converged: R-hat ≤ 1.01, enough effective sample size and no divergent transitions."]
    for b in fams:
        for k in list_keys:
            v = b.diagnostics.get(k)
            items = v if isinstance(v, (list, tuple)) else ([] if v is None else [v])
            if items:
                notes.append(f"`{b.family}`, {k}: " + "; ".join(str(x) for x in items) + ".")
    doc.table(["family", "systems", "distinguishable from best", "distinguishable from worst", "converged",
               *diag_keys], rows, notes)
    risk_keys = list(dict.fromkeys(k for b in fams for k in b.risk))
    if risk_keys:
        doc.heading(3, "URisk against the baseline")
        doc.text("Systems whose URisk on the posterior predictive is credibly above or below the baseline's "
                 "(Benham et al. 2021), per family.")
        doc.table(["family", *risk_keys],
                  [[f"`{b.family}`", *[format_number(b.risk.get(k)) for k in risk_keys]] for b in fams])
    with_effects = [b for b in fams if b.effects]
    if with_effects:
        fig, axes = figs.new(len(with_effects), width=5.0,
                             height=1.0 + 0.17 * max(len(b.effects) for b in with_effects))
        for ax, b in zip(axes, with_effects, strict=True):
            eff = sorted(b.effects, key=lambda r: float(r["mean"]))
            y = np.arange(len(eff))
            mean = np.array([float(r["mean"]) for r in eff])
            lo = np.array([float(r["lower"]) for r in eff])
            hi = np.array([float(r["upper"]) for r in eff])
            ax.errorbar(mean, y, xerr=[mean - lo, hi - mean], fmt="o", ms=3, color="black", ecolor="0.45",
                        elinewidth=1, capsize=2)
            ax.axvline(0.0, color="#7570b3", lw=1)
            ax.set_yticks(y)
            ax.set_yticklabels([str(r["system"]) for r in eff], fontsize=6)
            ax.set(xlabel="system effect (mean, 95% interval)", title=f"{b.family} ({b.n_systems} systems)")
            ax.grid(axis="x", alpha=0.3)
        src = figs.save(fig, "bayes-system-effects.png")
        doc.figure(src, "System effects with 95% credible intervals, one panel per model family (posterior means "
                        "sorted; the line marks an average system).")
    for b in fams:
        for f in b.figures:
            if not (out / f).is_file():
                continue
            stem = Path(f).stem.lower()
            what = ("posterior predictive check: densities of replicated scores over the observed ones"
                    if "ppc" in stem else "system effects with credible intervals" if "effects" in stem
                    else stem.replace("-", " "))
            doc.figure(f, f"`{b.family}` model: {what}.")


def _timings(doc: _Doc, result: StudyResult) -> None:
    doc.heading(2, "Timings and cache keys")
    if not result.steps:
        doc.text("No step timings were recorded.")
        return
    total = sum(s.seconds for s in result.steps.values())
    resumed = [n for n, s in result.steps.items() if s.resumed]
    slowest = max(result.steps.items(), key=lambda kv: kv[1].seconds)
    text = (f"Computing every step took {total:.1f} s, the longest being `{slowest[0]}` ({slowest[1].seconds:.1f} s); "
            f"this run reused {len(resumed)} of {len(result.steps)} steps from an earlier run.")
    doc.text(text)
    rows = [[f"`{name}`", f"{s.seconds:.1f}", "yes" if s.resumed else "no", f"`{s.key}`"]
            for name, s in result.steps.items()]
    doc.table(["step", "seconds", "resumed", "cache key"], rows,
              ["Seconds: wall time of the run that computed the step (kept when a later run resumes it). The cache "
               "key digests everything the step depends on; a changed input changes it and recomputes the step."])


# --------------------------------------------------------------------------- entry point


def write_report(result: StudyResult, out: str | Path) -> None:
    """Write ``results.json``, ``report.md``, ``report.html`` and ``figures/*.png`` into ``out``.

    Parameters
    ----------
    result : StudyResult
        What the study produced. Figures that the result lists itself
        (``BayesOutcome.figures``, relative to ``out``) are embedded as they are.
    out : path
        The report folder (created if missing). Every file is written
        atomically (:mod:`uncertank._io`).

    Raises
    ------
    TypeError
        When ``result`` is not a :class:`~uncertank.experiment.result.StudyResult`.
    ImportError
        When matplotlib (the ``plot`` extra) is missing.
    """
    if not isinstance(result, StudyResult):
        raise TypeError(f"result must be a StudyResult (uncertank.experiment.result); got {type(result).__name__}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figs = _Figures(out)
    ref = reference_ranker(result)
    doc = _Doc()
    _header(doc, result, ref)
    _in_domain(doc, result, ref)
    _shifted(doc, result, ref)
    _recalibration(doc, result)
    _risk(doc, result, figs)
    _nota(doc, result)
    _selective(doc, result, figs)
    _reliability(doc, result, figs)
    _imbalance(doc, result, figs)
    _bayes(doc, result, figs, out)
    _timings(doc, result)
    atomic_write_text(out / "results.json", json.dumps(result.to_dict(), indent=2) + "\n")
    title = str(result.config.get("name") or "Study report")
    atomic_write_text(out / "report.md", _render_md(doc))
    atomic_write_text(out / "report.html", _render_html(doc, title))
