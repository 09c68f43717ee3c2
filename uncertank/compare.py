"""A paper's table: several systems on the same queries, with tests, corrections, effect sizes and calibration.

:func:`compare_runs` takes the per-query values of ranking metrics for two
or more systems (an :class:`~uncertank.evaluate.EvaluationReport`, or a
plain mapping ``{system: {metric: per-query values}}``), aligns them on the
queries every system has, and computes, per metric:

- each system's mean;
- a paired test of every pair of systems (or of each system against a
  baseline): Student's t, Wilcoxon's signed-rank, Fisher's randomisation
  test or the paired bootstrap test (:mod:`uncertank.stats`), or Tukey's HSD
  over all pairs;
- the p-values corrected (Holm, Benjamini-Hochberg, Bonferroni or none)
  over a named family: the comparisons of one metric, or the whole table;
- two effect sizes: the mean difference with a 95% percentile interval
  from resampling whole queries, and the standardized paired effect,
  mean difference over the standard deviation of the differences
  (Cohen's $d_z$);
- optionally, calibration metrics (ECE, Brier, ...) of probability runs
  with 95% intervals from resampling whole queries, and the Bayesian
  comparison's P(better) and verdict (:mod:`uncertank.bayes`) beside them.

It returns a :class:`ComparisonReport`, which holds every number and
renders it, computing nothing more, as Markdown, LaTeX (booktabs, the best
value of each column in bold, a superscript letter for each system a value
significantly beats), CSV, JSON or a pandas DataFrame. ``uncertank evaluate
--report FILE`` writes one; ``docs/paper-table.md`` shows how to read it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import RankedLists
from uncertank.files import atomic_write_text, to_jsonable
from uncertank.formatting import format_fixed, format_pvalue
from uncertank.stats import CORRECTIONS, Correction
from uncertank.validation import as_float_array, check_choice, check_path, check_positive_int, check_real, check_seed

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.evaluate import EvaluationReport
    from uncertank.metrics.metric import Metric, MetricEntry

__all__ = [
    "CORRECTION_FAMILIES", "REPORT_SUFFIXES", "TESTS", "ComparisonReport", "PairComparison", "check_test_options",
    "compare_runs", "report_format",
]

Test = Literal["t", "wilcoxon", "randomization", "bootstrap", "tukey"]
#: The tests :func:`compare_runs` runs, by name.
TESTS: tuple[Test, ...] = ("t", "wilcoxon", "randomization", "bootstrap", "tukey")
Family = Literal["metric", "table"]
#: The families a correction runs over: the comparisons of one metric, or of the whole table.
CORRECTION_FAMILIES: tuple[Family, ...] = ("metric", "table")
#: The file suffixes :meth:`ComparisonReport.write` knows, and the format each writes.
REPORT_SUFFIXES: dict[str, str] = {".md": "markdown", ".tex": "latex", ".csv": "csv", ".json": "json"}

#: Letters of the systems, in order: a-z, then A-Z.
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: Coverage of the intervals of the mean differences and of the calibration metrics.
_LEVEL = 0.95

_TEST_WORDS: dict[str, str] = {
    "t": "two-sided paired t-test",
    "wilcoxon": "two-sided Wilcoxon signed-rank test",
    "randomization": "two-sided paired randomization test (Fisher, {n} sign patterns)",
    "bootstrap": "two-sided paired bootstrap test ({n} resamples)",
    "tukey": "Tukey's HSD over all pairs (queries as blocks)",
}
_CORRECTION_WORDS: dict[str, str] = {
    "holm": "Holm's correction",
    "bh": "the Benjamini-Hochberg correction (false discovery rate)",
    "bonferroni": "Bonferroni's correction",
    "none": "no correction",
}


@dataclass(frozen=True)
class PairComparison:
    """One paired comparison of two systems on one metric.

    Attributes
    ----------
    metric : str
        The metric's label.
    system, other : str
        The two systems; differences are ``system - other``. Against a
        baseline, ``other`` is the baseline; over all pairs, ``other`` is
        the system listed earlier.
    n : int
        Queries compared.
    mean_difference : float
        ``mean(system - other)`` over the queries.
    low, high : float
        The 95% percentile interval of the mean difference, from resampling
        whole queries (:func:`uncertank.stats.pairwise_bootstrap_test`).
    effect_size : float
        The standardized paired effect, ``mean(d) / sd(d)`` with ``d`` the
        per-query differences and ``sd`` the sample standard deviation
        (ddof 1): Cohen's $d_z$. Infinite when every difference is equal
        and not 0, NaN when every difference is 0.
    statistic : float
        The test statistic: t, Wilcoxon's ``min(W+, W-)``, the mean
        difference (randomisation, bootstrap), or Tukey's studentized
        difference; NaN where the test has none (every difference 0).
    pvalue : float
        The test's p-value, two-sided (for Tukey's HSD already adjusted
        for all pairs of the metric); 1 when every difference is 0.
    pvalue_adjusted : float
        After the correction over the family.
    significant : bool
        ``pvalue_adjusted < alpha``.
    better : str or None
        The significantly better of the two (by the metric's direction), or
        None when the difference is not significant.
    """

    metric: str
    system: str
    other: str
    n: int
    mean_difference: float
    low: float
    high: float
    effect_size: float
    statistic: float
    pvalue: float
    pvalue_adjusted: float
    significant: bool
    better: str | None


@dataclass(frozen=True, eq=False)
class ComparisonReport:
    """What :func:`compare_runs` returns: every number of the comparison, and its renderings.

    The renderings compute nothing: a report rebuilt by :meth:`from_dict`
    from :meth:`to_dict` renders the same text.

    Attributes
    ----------
    systems : list of str
        The systems, in order; system ``i`` has letter ``letters[i]``.
    metrics : list of str
        Labels of the per-query metrics compared.
    means : dict of str to dict of str to float
        ``means[metric][system]``: the mean over the shared queries.
    pairs : list of PairComparison
        Every comparison made, metric by metric.
    n_queries : int
        Queries every system has, over which everything is computed.
    query_ids : list of str or None
        Their ids (None when the values were aligned by position).
    dropped : dict of str to int
        Per system, its queries left out because another system lacks them.
    baseline : str or None
        The system every other is compared with; None: all pairs.
    test, correction, family : str
        As passed to :func:`compare_runs` (``correction`` resolved).
    alpha : float
        Significance level.
    n_resamples : int
        Resamples of the intervals (and of a resampling test).
    seed : int
        Seed of the resampling.
    lower_is_better : list of str
        Metrics (per-query or calibration) for which lower is better.
    calibration_metrics : list of str
        Labels of the calibration columns.
    calibration : dict of str to dict of str to dict
        ``calibration[system][metric]``: ``value``, ``low``, ``high`` (95%
        interval from resampling whole queries), for the systems given
        probability runs.
    calibration_resamples : int
        Resamples of the calibration intervals.
    bayes : dict of str to dict
        Per system: ``p_better`` and ``verdict`` of the Bayesian comparison
        (and whatever else its rows held, such as ``diff_mean`` or URisk).
    bayes_reference : str or None
        The system the Bayesian comparison is against.
    bayes_metric : str or None
        What the Bayesian comparison modelled (a metric's label).
    level : float
        Coverage of every interval (0.95).
    """

    systems: list[str]
    metrics: list[str]
    means: dict[str, dict[str, float]]
    pairs: list[PairComparison]
    n_queries: int
    query_ids: list[str] | None
    dropped: dict[str, int]
    baseline: str | None
    test: str
    correction: str
    family: str
    alpha: float
    n_resamples: int
    seed: int
    lower_is_better: list[str] = field(default_factory=list)
    calibration_metrics: list[str] = field(default_factory=list)
    calibration: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    calibration_resamples: int = 1000
    bayes: dict[str, dict[str, object]] = field(default_factory=dict)
    bayes_reference: str | None = None
    bayes_metric: str | None = None
    level: float = _LEVEL

    # -- reading ----------------------------------------------------------------------------------

    @property
    def letters(self) -> dict[str, str]:
        """The letter of each system: a, b, c, ... in the order of :attr:`systems`."""
        return {s: _LETTERS[i] for i, s in enumerate(self.systems)}

    def beats(self, system: str, metric: str) -> list[str]:
        """The systems ``system`` significantly beats on ``metric`` (after the correction), in table order."""
        losers = {p.other if p.better == p.system else p.system
                  for p in self.pairs if p.metric == metric and p.better == system}
        return [s for s in self.systems if s in losers]

    def family_size(self, metric: str | None = None) -> int:
        """Comparisons in the correction's family (of ``metric``'s family when the family is per metric)."""
        if self.family == "table" or metric is None:
            return len(self.pairs)
        return sum(p.metric == metric for p in self.pairs)

    def _best(self, values: Mapping[str, float], lower: bool, digits: int) -> set[str]:
        """The systems whose value, as printed with ``digits`` decimals, is the best of the column."""
        shown = {s: float(format_fixed(v, digits)) for s, v in values.items() if math.isfinite(v)}
        if not shown:
            return set()
        top = min(shown.values()) if lower else max(shown.values())
        return {s for s, v in shown.items() if v == top}

    # -- the words -------------------------------------------------------------------------------------

    def describe_test(self) -> str:
        """The test, the correction, its family and alpha, in one sentence's words."""
        test = _TEST_WORDS[self.test].format(n=f"{self.n_resamples:,}")
        if self.test == "tukey":
            corr = "its p-values adjusted for all pairs of each metric"
        elif self.correction == "none":
            corr = "no correction for multiple comparisons"
        else:
            per = self.family_size(self.metrics[0]) if self.metrics else 0
            fam = (f"the {per} comparisons of each metric" if self.family == "metric"
                   else f"all {len(self.pairs)} comparisons of the table")
            corr = f"{_CORRECTION_WORDS[self.correction]} over {fam}"
        return f"{test}, {corr}, α = {self.alpha:g}"

    def _aligned_words(self) -> str:
        dropped = {s: d for s, d in self.dropped.items() if d}
        words = f"the {self.n_queries} queries all systems share"
        if dropped:
            words += " (left out: " + ", ".join(f"{d} of {s}" for s, d in dropped.items()) + ")"
        return words

    def _notes(self) -> list[str]:
        """The caption's sentences, as plain text."""
        notes = [f"Means over {self._aligned_words()}; the best value of each column in bold."]
        if self.baseline is not None:
            notes.append(f"Each system is compared with the baseline {self.baseline} ({self.letters[self.baseline]}) "
                         "only.")
        notes.append(f"A superscript lists, by letter, the systems a value is significantly better than: "
                     f"{self.describe_test()}.")
        if self.calibration_metrics:
            lower = [m for m in self.calibration_metrics if m in self.lower_is_better]
            notes.append(
                f"{', '.join(self.calibration_metrics)} of the probability runs with "
                f"{self.level:.0%} intervals from {self.calibration_resamples:,} resamples of the queries"
                + (f" (lower is better: {', '.join(lower)})" if lower else "") + "."
            )
        if self.bayes:
            what = f" of {self.bayes_metric}" if self.bayes_metric else ""
            ref = f" against {self.bayes_reference}" if self.bayes_reference else ""
            notes.append(f"P(better) and verdict: the Bayesian comparison{what}{ref}.")
        return notes

    # -- rows -------------------------------------------------------------------------------------------

    def _system_rows(self) -> list[dict[str, object]]:
        letters = self.letters
        rows = []
        for s in self.systems:
            row: dict[str, object] = {"letter": letters[s], "system": s, "n_queries": self.n_queries}
            for m in self.metrics:
                row[m] = self.means[m][s]
                row[f"{m} beats"] = "".join(letters[o] for o in self.beats(s, m))
            for c in self.calibration_metrics:
                cell = self.calibration.get(s, {}).get(c)
                row[c], row[f"{c} low"], row[f"{c} high"] = (
                    (cell["value"], cell["low"], cell["high"]) if cell else (math.nan, math.nan, math.nan))
            if self.bayes:
                b = self.bayes.get(s, {})
                row["P(better)"] = b.get("p_better", math.nan)
                row["verdict"] = b.get("verdict", "reference" if s == self.bayes_reference else "")
            rows.append(row)
        return rows

    def _pair_rows(self) -> list[dict[str, object]]:
        return [asdict(p) for p in self.pairs]

    # -- renderings -----------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, object]:
        """Every field as plain JSON values (NaN and infinities as None)."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__}
        out["pairs"] = self._pair_rows()
        plain: dict[str, object] = to_jsonable(out)
        return plain

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonReport:  # to_dict's JSON as read back
        """Rebuild a report from :meth:`to_dict` (or its JSON), to render it again."""
        if not isinstance(data, Mapping):
            raise TypeError(f"data must be a mapping from ComparisonReport.to_dict(); got {type(data).__name__}")
        missing = [f for f in ("systems", "metrics", "means", "pairs", "n_queries", "test", "correction")
                   if f not in data]
        if missing:
            raise ValueError(f"data is not a ComparisonReport's dict: it lacks {', '.join(missing)}")

        def num(v: float | None) -> float:
            return math.nan if v is None else float(v)

        kwargs = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        kwargs["means"] = {m: {s: num(v) for s, v in row.items()} for m, row in data["means"].items()}
        kwargs["pairs"] = [
            PairComparison(**{k: num(v) if k in _PAIR_FLOATS else v for k, v in p.items()})  # type: ignore[arg-type]
            for p in data["pairs"]
        ]
        kwargs["calibration"] = {
            s: {c: {k: num(v) for k, v in cell.items()} for c, cell in row.items()}
            for s, row in data.get("calibration", {}).items()
        }
        kwargs["bayes"] = {s: {k: (math.nan if v is None else v) for k, v in row.items()}
                           for s, row in data.get("bayes", {}).items()}
        return cls(**kwargs)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the report to ``path`` atomically, in the format its suffix names (:data:`REPORT_SUFFIXES`).

        ``.md`` :meth:`to_markdown`, ``.tex`` :meth:`to_latex`, ``.csv``
        :meth:`to_csv` (the systems), ``.json`` :meth:`to_json`; each with
        its defaults.
        """
        fmt = report_format(path)
        render: dict[str, Callable[[], str]] = {
            "markdown": self.to_markdown, "latex": self.to_latex, "csv": self.to_csv, "json": self.to_json}
        atomic_write_text(path, render[fmt]())

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def to_frame(self, which: Literal["systems", "pairs"] = "systems") -> pd.DataFrame:
        """A pandas DataFrame: one row per system (``"systems"``) or per comparison (``"pairs"``).

        The systems' frame has ``letter``, ``system``, ``n_queries``, per
        metric its mean and ``<metric> beats`` (the letters of the systems
        it significantly beats), per calibration metric its value and
        ``<metric> low`` / ``high``, and, with a Bayesian comparison,
        ``P(better)`` and ``verdict``. The pairs' frame has the fields of
        :class:`PairComparison`.
        """
        import pandas as pd

        which = check_choice(which, "which", ("systems", "pairs"))
        rows = self._system_rows() if which == "systems" else self._pair_rows()
        columns = list(rows[0]) if rows else list(PairComparison.__dataclass_fields__)
        frame: pd.DataFrame = pd.DataFrame(rows, columns=columns)
        return frame

    def to_csv(self, which: Literal["systems", "pairs"] = "systems") -> str:
        """The rows of :meth:`to_frame` as CSV text, numbers at full precision, NaN as an empty cell."""
        which = check_choice(which, "which", ("systems", "pairs"))
        rows = self._system_rows() if which == "systems" else self._pair_rows()
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(list(rows[0]) if rows else list(PairComparison.__dataclass_fields__))
        writer.writerows([_csv_cell(v) for v in row.values()] for row in rows)
        return buf.getvalue()

    def to_markdown(self, *, digits: int = 4, pairwise: bool = True) -> str:
        """The table in Markdown (best in bold, superscript letters as ``<sup>``), its notes, and the pairs.

        Parameters
        ----------
        digits : int
            Decimals of the values.
        pairwise : bool
            Add the table of every comparison: the mean difference with
            its interval, the standardized effect, the p-values.
        """
        digits = check_positive_int(digits, "digits", minimum=0, maximum=12)
        header = ["", "System", *self.metrics]
        header += [f"{c} [{self.level:.0%} CI]" for c in self.calibration_metrics]
        if self.bayes:
            header += ["P(better)", "Verdict"]
        body = [[_md(cell) for cell in row] for row in self._cells(digits, _MARKDOWN)]
        aligns = ["---", "---", *["---:"] * (len(header) - 2 - bool(self.bayes)), *["---"] * bool(self.bayes)]
        lines = ["| " + " | ".join(_md(h) for h in header) + " |", "|" + "|".join(aligns) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        lines += ["", " ".join(self._notes())]
        if pairwise and self.pairs:
            lines += ["", "| Metric | System | vs | Δ mean [95% CI] | d_z | p | p adjusted | |",
                      "|---|---|---|---:|---:|---:|---:|---|"]
            for p in self.pairs:
                diff = (f"{_signed(p.mean_difference, digits)} [{_signed(p.low, digits)}, "
                        f"{_signed(p.high, digits)}]")
                mark = f"**{p.better}**" if p.better else ""
                lines.append(f"| {_md(p.metric)} | {_md(p.system)} | {_md(p.other)} | {diff} | "
                             f"{_effect(p.effect_size)} | {format_pvalue(p.pvalue)} | "
                             f"{format_pvalue(p.pvalue_adjusted)} | {_md(mark)} |")
            lines += ["", f"Δ mean: {self.level:.0%} percentile interval from {self.n_resamples:,} resamples of the "
                          "queries. d_z: mean difference over the standard deviation of the per-query "
                          "differences. Last column: the significantly better system."]
        return "\n".join(lines) + "\n"

    def to_latex(
        self,
        *,
        digits: int = 3,
        label: str = "tab:comparison",
        caption: str | None = None,
        pairwise: bool = False,
        standalone: bool = False,
    ) -> str:
        r"""The table as LaTeX: booktabs rules, the best in bold, superscript letters of the systems beaten.

        Needs ``\usepackage{booktabs}`` in the preamble (``standalone=True``
        writes a whole document that loads it).

        Parameters
        ----------
        digits : int
            Decimals of the values.
        label : str
            The table's ``\label``.
        caption : str, optional
            Replaces the caption, which otherwise states the queries, the
            test, the correction, its family and alpha.
        pairwise : bool
            Add a second table with every comparison (mean difference and
            interval, standardized effect, p-values).
        standalone : bool
            A complete document (``article`` class), ready for ``pdflatex``.
        """
        digits = check_positive_int(digits, "digits", minimum=0, maximum=12)
        if not isinstance(label, str):
            raise TypeError(f"label must be a str; got {type(label).__name__}")
        if caption is not None and not isinstance(caption, str):
            raise TypeError(f"caption must be a str or None; got {type(caption).__name__}")
        cols = ["", "System", *self.metrics, *self.calibration_metrics]
        if self.bayes:
            cols += ["P(better)", "Verdict"]
        spec = "cl" + "r" * (len(cols) - 2 - (2 if self.bayes else 0)) + ("rl" if self.bayes else "")
        text = caption if caption is not None else " ".join(self._notes())
        lines = [
            "\\begin{table}[t]",
            "\\centering",
            f"\\caption{{{_tex(text) if caption is None else caption}}}",
            f"\\label{{{label}}}",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(_tex(c) for c in cols) + " \\\\",
            "\\midrule",
        ]
        lines += [" & ".join(row) + " \\\\" for row in self._cells(digits, _LATEX)]
        lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        if pairwise and self.pairs:
            pairs_caption = _tex(self._pairs_caption()).replace("d\\_z", "$d_z$")
            lines += ["", "\\begin{table}[t]", "\\centering",
                      f"\\caption{{{pairs_caption}}}", f"\\label{{{label}-pairs}}",
                      "\\begin{tabular}{lllrrrr}", "\\toprule",
                      "Metric & System & vs & $\\Delta$ mean & 95\\% CI & $d_z$ & $p$ (adjusted) \\\\", "\\midrule"]
            for p in self.pairs:
                ci = f"[{_signed(p.low, digits)}, {_signed(p.high, digits)}]"
                pv = _tex(format_pvalue(p.pvalue_adjusted))
                if p.significant:
                    pv = f"\\textbf{{{pv}}}"
                cells = [_tex(p.metric), _tex(p.system), _tex(p.other), _signed(p.mean_difference, digits), ci,
                         _tex(_effect(p.effect_size)), pv]
                lines.append(" & ".join(cells) + " \\\\")
            lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        body = "\n".join(lines) + "\n"
        if standalone:
            return ("\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage{booktabs}\n"
                    "\\usepackage[landscape,margin=1.5cm]{geometry}\n\\pagestyle{empty}\n"
                    "\\begin{document}\n" + body + "\\end{document}\n")
        return body

    def _pairs_caption(self) -> str:
        if self.test == "tukey":
            pvalue = "Tukey's p-value, adjusted for all pairs of the metric"
        elif self.correction == "none":
            pvalue = "the p-value, not corrected"
        else:
            pvalue = f"the p-value after {_CORRECTION_WORDS[self.correction]}"
        return (f"Every comparison of the table: mean difference (system minus vs) with its {self.level:.0%} "
                f"percentile interval from {self.n_resamples:,} resamples of the queries; d_z, the mean "
                f"difference over the standard deviation of the differences; {pvalue} (bold: below {self.alpha:g}).")

    def _cells(self, digits: int, style: _Style) -> list[list[str]]:
        """The main table's cells, formatted by ``style`` (Markdown or LaTeX)."""
        letters = self.letters
        best = {m: self._best(self.means[m], m in self.lower_is_better, digits) for m in self.metrics}
        cal_best = {
            c: self._best({s: self.calibration[s][c]["value"] for s in self.calibration if c in self.calibration[s]},
                          c in self.lower_is_better, digits)
            for c in self.calibration_metrics
        }
        rows = []
        for s in self.systems:
            row = [letters[s], style.text(s)]
            for m in self.metrics:
                value = format_fixed(self.means[m][s], digits)
                if s in best[m]:
                    value = style.bold(value)
                sup = "".join(letters[o] for o in self.beats(s, m))
                row.append(value + (style.sup(sup) if sup else ""))
            for c in self.calibration_metrics:
                cell = self.calibration.get(s, {}).get(c)
                if cell is None:
                    row.append(style.dash)
                    continue
                value = format_fixed(cell["value"], digits)
                if s in cal_best[c]:
                    value = style.bold(value)
                row.append(value + " " + style.small(
                    f"[{format_fixed(cell['low'], digits)}, {format_fixed(cell['high'], digits)}]"))
            if self.bayes:
                b = self.bayes.get(s)
                if b is None:
                    row += [style.dash, style.text("reference") if s == self.bayes_reference else style.dash]
                else:
                    pb = b.get("p_better", math.nan)
                    row += [style.text(_probability(pb, digits)) if isinstance(pb, (int, float)) else style.dash,
                            style.text(str(b.get("verdict", ""))) or style.dash]
            rows.append(row)
        return rows


_PAIR_FLOATS = ("mean_difference", "low", "high", "effect_size", "statistic", "pvalue", "pvalue_adjusted")


# --------------------------------------------------------------------------- formatting helpers


@dataclass(frozen=True)
class _Style:
    """How one output writes bold, a superscript, small text, a dash and escaped text."""

    bold_fmt: str
    sup_fmt: str
    small_fmt: str
    dash: str
    latex: bool

    def bold(self, s: str) -> str:
        return self.bold_fmt.format(s)

    def sup(self, s: str) -> str:
        return self.sup_fmt.format(s)

    def small(self, s: str) -> str:
        return self.small_fmt.format(s)

    def text(self, s: str) -> str:
        return _tex(s) if self.latex else s


_MARKDOWN = _Style("**{}**", "<sup>{}</sup>", "{}", "–", latex=False)
_LATEX = _Style("\\textbf{{{}}}", "\\textsuperscript{{{}}}", "{{\\scriptsize {}}}", "--", latex=True)

_TEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "α": r"$\alpha$", "Δ": r"$\Delta$", "∞": r"$\infty$", "–": "--", "—": "---",
}


def _csv_cell(value: object) -> object:
    """A CSV cell: floats at full precision (``repr``), NaN and None empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else value


def _tex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX_SPECIALS.get(ch, ch) for ch in text)


def _md(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def _signed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals and its sign; a value that rounds to 0 is written ``0.000``, unsigned."""
    shown = round(value, digits) + 0.0 if math.isfinite(value) else value  # + 0.0: no "-0.000"
    text = format_fixed(shown, digits)
    return "+" + text if math.isfinite(shown) and shown > 0 else text


def _probability(p: float, digits: int) -> str:
    """A probability with ``digits`` decimals that never rounds to a certainty it is not: ``>0.999``, ``<0.001``."""
    text = format_fixed(p, digits)
    if math.isfinite(p) and 0 < p < 1 and float(text) in (0.0, 1.0):
        step = 10.0**-digits
        return f"<{step:.{digits}f}" if float(text) == 0.0 else f">{1 - step:.{digits}f}"
    return text


def _effect(value: float) -> str:
    """A standardized effect: two decimals, ``∞`` where the differences do not vary, ``n/a`` where all are 0."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:+.2f}" if abs(value) < 1000 else f"{value:+.2g}"


# --------------------------------------------------------------------------- inputs


def _per_query_input(
    runs: object, metrics: Sequence[str] | None, query_ids: object
) -> tuple[list[str], list[str], dict[str, list[str] | None], dict[str, dict[str, NDArray[np.float64]]]]:
    """Systems, metrics, each system's query ids (None: positional) and its per-query values."""
    from uncertank.evaluate import EvaluationReport

    if isinstance(runs, EvaluationReport):
        if query_ids is not None:
            raise ValueError("query_ids must be None with an EvaluationReport, which carries each run's query ids")
        systems = [r.name for r in runs.runs]
        available = list(runs.ranking)
        ids: dict[str, list[str] | None] = {r.name: list(r.query_ids) for r in runs.runs}
        values = {r.name: {m: np.asarray(r.per_query[m], dtype=np.float64) for m in available} for r in runs.runs}
    elif isinstance(runs, Mapping):
        if not runs:
            raise ValueError("runs must hold at least two systems; got an empty mapping")
        systems = []
        values = {}
        for name, per_metric in runs.items():
            if not isinstance(name, str):
                raise TypeError(f"runs: system names must be str; got {type(name).__name__} {name!r}")
            if not isinstance(per_metric, Mapping) or not per_metric:
                raise TypeError(f"runs[{name!r}] must be a non-empty mapping {{metric: per-query values}}; "
                                f"got {type(per_metric).__name__}")
            systems.append(name)
            values[name] = {str(m): as_float_array(v, f"runs[{name!r}][{m!r}]") for m, v in per_metric.items()}
        first = systems[0]
        available = [m for m in values[first] if all(m in values[s] for s in systems)]
        ids = _mapping_ids(systems, values, query_ids)
    else:
        raise TypeError(
            "runs must be an EvaluationReport (uncertank.evaluate.evaluate_runs) or a mapping "
            f"{{system: {{metric: per-query values}}}}; got {type(runs).__name__}"
        )
    if len(systems) < 2:
        raise ValueError(f"runs must hold at least two systems to compare; got {len(systems)} ({systems[0]!r})")
    if len(systems) > len(_LETTERS):
        raise ValueError(f"runs may hold at most {len(_LETTERS)} systems (one letter each); got {len(systems)}")
    if metrics is None:
        chosen = available
    else:
        if isinstance(metrics, str) or not isinstance(metrics, Sequence):
            raise TypeError(f"metrics must be a sequence of metric labels; got {metrics!r}")
        unknown = [m for m in metrics if m not in available]
        if unknown:
            raise ValueError(f"metrics: {unknown} not among the per-query metrics every system has: {available}")
        if len(set(metrics)) != len(metrics):
            raise ValueError(f"metrics must be distinct; got {list(metrics)}")
        chosen = list(metrics)
    if not chosen:
        raise ValueError("runs hold no per-query metric that every system has; each system needs the same metrics")
    return systems, chosen, ids, values


def _mapping_ids(
    systems: list[str], values: dict[str, dict[str, NDArray[np.float64]]], query_ids: object
) -> dict[str, list[str] | None]:
    """Each system's query ids from ``query_ids`` (one list for all, or one per system), checked against lengths."""
    if query_ids is None:
        per: dict[str, list[str] | None] = dict.fromkeys(systems)
    elif isinstance(query_ids, Mapping):
        missing = [s for s in systems if s not in query_ids]
        if missing:
            raise ValueError(f"query_ids lacks the systems {missing}; give one list of ids per system, or one for all")
        per = {s: _id_list(query_ids[s], f"query_ids[{s!r}]") for s in systems}
    else:
        shared = _id_list(query_ids, "query_ids")
        per = dict.fromkeys(systems, shared)
    reference: tuple[str, str, int] | None = None
    for s in systems:
        for m, v in values[s].items():
            want = per[s]
            if want is not None and v.size != len(want):
                raise ValueError(f"runs[{s!r}][{m!r}] has {v.size} values but its query ids number {len(want)}")
            if want is None:
                if reference is None:
                    reference = (s, m, v.size)
                elif v.size != reference[2]:
                    raise ValueError(
                        f"runs[{s!r}][{m!r}] has {v.size} values but runs[{reference[0]!r}][{reference[1]!r}] has "
                        f"{reference[2]}: values aligned by position need one length; pass query_ids to align "
                        "them by query id"
                    )
    return per


def _id_list(ids: object, name: str) -> list[str]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of query ids; got {type(ids).__name__}")
    out = [str(q) for q in ids]
    if len(set(out)) != len(out):
        dup = next(q for q in out if out.count(q) > 1)
        raise ValueError(f"{name} holds query {dup!r} more than once")
    return out


def _align(
    systems: list[str], metrics: list[str], ids: dict[str, list[str] | None],
    values: dict[str, dict[str, NDArray[np.float64]]],
) -> tuple[NDArray[np.float64], list[str] | None, dict[str, int]]:
    """Per-query values on the queries every system has: shape (n_metrics, n_queries, n_systems)."""
    if all(v is None for v in ids.values()):
        n = values[systems[0]][metrics[0]].size
        x = np.stack([np.stack([values[s][m] for s in systems], axis=-1) for m in metrics])
        shared: list[str] | None = None
        dropped = dict.fromkeys(systems, 0)
    else:
        first = ids[systems[0]]
        assert first is not None
        common = set(first)
        for s in systems[1:]:
            common &= set(ids[s] or ())
        shared = [q for q in first if q in common]
        n = len(shared)
        if n == 0:
            raise ValueError(f"runs share no query: {', '.join(f'{s} has {len(ids[s] or ())}' for s in systems)} "
                             "query ids, none of them in all systems")
        dropped = {s: len(ids[s] or ()) - n for s in systems}
        x = np.empty((len(metrics), n, len(systems)))
        for j, s in enumerate(systems):
            pos = {q: i for i, q in enumerate(ids[s] or ())}
            take = np.fromiter((pos[q] for q in shared), dtype=np.int64, count=n)
            for i, m in enumerate(metrics):
                x[i, :, j] = values[s][m][take]
    if n < 2:
        raise ValueError(f"runs share {n} query; a paired comparison needs at least 2 queries every system has")
    return x, shared, dropped


def _calibration_input(
    calibration: object, systems: list[str], shared: list[str] | None, entries: object, n_resamples: int, seed: int,
) -> tuple[list[str], dict[str, dict[str, dict[str, float]]], list[str]]:
    """Calibration metrics' labels, their value and interval per system, and those where lower is better."""
    from uncertank.metrics import resolve_metrics
    from uncertank.stats import query_bootstrap_interval
    from uncertank.validation import check_probabilities

    if calibration is None:
        return [], {}, []
    if not isinstance(calibration, Mapping):
        raise TypeError(f"calibration must be a mapping {{system: RankedLists of probabilities}}; "
                        f"got {type(calibration).__name__}")
    unknown = [s for s in calibration if s not in systems]
    if unknown:
        raise ValueError(f"calibration names systems {unknown} that runs does not have; the systems are {systems}")
    if isinstance(entries, str) or not isinstance(entries, Sequence) or not entries:
        raise TypeError(f"calibration_metrics must be a non-empty sequence of calibration metrics; got {entries!r}")
    resolved = resolve_metrics(entries)
    for m in resolved:
        if not m.needs_probabilities:
            raise ValueError(f"calibration_metrics: {m.display_label!r} is not a calibration metric (it does not "
                             "read probabilities); name calibration metrics such as 'ece' or 'brier'")
    labels = [m.display_label for m in resolved]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s in systems:
        if s not in calibration:
            continue
        lists = calibration[s]
        if not isinstance(lists, RankedLists):
            raise TypeError(f"calibration[{s!r}] must be a RankedLists of probabilities; got {type(lists).__name__}")
        check_probabilities(lists.scores, f"calibration[{s!r}].scores")
        if shared is not None and lists.query_ids is not None:
            keep = set(shared)
            idx = [i for i, q in enumerate(lists.query_ids) if q in keep]
            if not idx:
                raise ValueError(f"calibration[{s!r}] holds none of the {len(shared)} queries the systems share")
            lists = lists.subset(idx)
        out[s] = {}
        for m, lab in zip(resolved, labels, strict=True):
            value = float(m(lists))
            lo, hi = query_bootstrap_interval(lists.offsets, _pairs_statistic(m, lists.scores, lists.labels),
                                              n_resamples=n_resamples, level=_LEVEL, seed=seed)
            out[s][lab] = {"value": value, "low": lo, "high": hi}
    lower = [lab for m, lab in zip(resolved, labels, strict=True) if not m.higher_is_better]
    return labels, out, lower


def _pairs_statistic(metric: Metric, p: NDArray[np.float64], y: NDArray[np.int64]) -> Callable[..., float]:
    """``metric`` on the pairs at some positions, for :func:`~uncertank.stats.query_bootstrap_interval`."""

    def statistic(positions: NDArray[np.int64], _replicate: int) -> float:
        return float(metric(p[positions], y[positions]))

    return statistic


def _bayes_input(
    bayes: object, systems: list[str], reference: object
) -> tuple[dict[str, dict[str, object]], str | None]:
    """The Bayesian comparison's rows by system: ``p_better``, ``verdict`` and what else they hold."""
    if reference is not None and (not isinstance(reference, str) or reference not in systems):
        raise ValueError(f"bayes_reference must be one of the systems {systems} or None; got {reference!r}")
    ref = reference if isinstance(reference, str) else None
    if bayes is None:
        if reference is not None:
            raise ValueError("bayes_reference is given without bayes; pass the Bayesian comparison's rows too")
        return {}, None
    import pandas as pd

    if isinstance(bayes, pd.DataFrame):
        rows: list[object] = list(bayes.to_dict("records"))
    elif isinstance(bayes, Mapping):
        rows = []
        for name, row in bayes.items():
            if not isinstance(row, Mapping):
                raise TypeError(f"bayes[{name!r}] must be a mapping with p_better and verdict; "
                                f"got {type(row).__name__}")
            rows.append({"system": name, **row})
    elif isinstance(bayes, Sequence) and not isinstance(bayes, (str, bytes)):
        rows = list(bayes)
    else:
        raise TypeError(
            "bayes must be SystemComparison.contrasts(...)'s DataFrame, a list of its rows (a study's "
            "against_baseline), or a mapping {system: {'p_better': ..., 'verdict': ...}}; "
            f"got {type(bayes).__name__}"
        )
    out: dict[str, dict[str, object]] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or "system" not in row:
            raise TypeError(f"bayes row {i} must be a mapping with a 'system'; got {row!r}")
        missing = [k for k in ("p_better", "verdict") if k not in row]
        if missing:
            raise ValueError(f"bayes row {i} ({row['system']!r}) lacks {missing}: pass the rows of "
                             "SystemComparison.contrasts(reference), which hold p_better and verdict")
        name = str(row["system"])
        if name not in systems:
            raise ValueError(f"bayes names system {name!r}, which runs does not have; the systems are {systems}")
        p = check_real(row["p_better"], f"bayes[{name!r}]['p_better']", minimum=0, maximum=1)
        out[name] = {**{k: v for k, v in row.items() if k != "system"}, "p_better": p, "verdict": str(row["verdict"])}
    if ref is not None and ref in out:
        raise ValueError(f"bayes_reference {ref!r} has a row of its own in bayes; the reference is the system "
                         "the others are compared with")
    return out, ref


# --------------------------------------------------------------------------- the comparison


def check_test_options(test: object, correction: object, family: object) -> tuple[Test, Correction, Family]:
    """Check the test, the correction and its family together; return them with the correction resolved.

    The correction None means ``"holm"``, or ``"none"`` for Tukey's HSD,
    which adjusts for all pairs of a metric itself and so takes no other
    correction and no family but ``"metric"``.

    Examples
    --------
    >>> check_test_options("tukey", None, "metric")
    ('tukey', 'none', 'metric')
    """
    test = check_choice(test, "test", TESTS)
    if correction is None:
        correction = "none" if test == "tukey" else "holm"
    correction = check_choice(correction, "correction", CORRECTIONS)
    family = check_choice(family, "family", CORRECTION_FAMILIES)
    if test == "tukey" and correction != "none":
        raise ValueError(f"correction={correction!r} with test='tukey': Tukey's HSD adjusts its p-values for all "
                         "pairs of each metric itself; pass correction='none' (or leave it None)")
    if test == "tukey" and family != "metric":
        raise ValueError("family='table' with test='tukey': Tukey's HSD adjusts over the pairs of each metric; "
                         "pass family='metric'")
    return test, correction, family


def _pair_indices(systems: list[str], baseline: str | None) -> list[tuple[int, int]]:
    if baseline is None:  # each system against every earlier one: with the baseline first, gains read positive
        return [(j, i) for i in range(len(systems)) for j in range(i + 1, len(systems))]
    b = systems.index(baseline)
    return [(i, b) for i in range(len(systems)) if i != b]


def _single_pair_tests(
    x: NDArray[np.float64], pairs: list[tuple[int, int]], test: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Statistic and p-value of the t or Wilcoxon test of every pair and metric, shape (n_metrics, n_pairs)."""
    from uncertank.stats import paired_ttest, wilcoxon_signed_rank

    stat = np.full((x.shape[0], len(pairs)), math.nan)
    pval = np.ones((x.shape[0], len(pairs)))
    for m in range(x.shape[0]):
        for k, (i, j) in enumerate(pairs):
            a, b = x[m, :, i], x[m, :, j]
            if np.array_equal(a, b):  # no difference at all: nothing to test, p = 1
                continue
            res = paired_ttest(a, b) if test == "t" else wilcoxon_signed_rank(a, b)
            stat[m, k] = res.statistic
            pval[m, k] = 1.0 if math.isnan(res.pvalue) else res.pvalue
    return stat, pval


def compare_runs(
    runs: EvaluationReport | Mapping[str, Mapping[str, ArrayLike]],
    *,
    query_ids: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    metrics: Sequence[str] | None = None,
    baseline: str | None = None,
    test: Test = "t",
    correction: Correction | None = None,
    family: Family = "metric",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    lower_is_better: Sequence[str] = (),
    calibration: Mapping[str, RankedLists] | None = None,
    calibration_metrics: Sequence[MetricEntry] = ("ece", "brier"),
    calibration_resamples: int = 1000,
    bayes: pd.DataFrame | Sequence[Mapping[str, object]] | Mapping[str, Mapping[str, object]] | None = None,
    bayes_reference: str | None = None,
    bayes_metric: str | None = None,
) -> ComparisonReport:
    r"""Compare systems on the same queries: means, paired tests, corrections and effect sizes, per metric.

    Parameters
    ----------
    runs : EvaluationReport or mapping
        The per-query values of every system: what
        :func:`uncertank.evaluate.evaluate_runs` returns (its ranking
        metrics, each run's query ids), or a mapping ``{system: {metric:
        array-like of shape (n_queries,)}}``. Every system needs the
        metrics compared; at least two systems.
    query_ids : sequence of str, or mapping of str to sequence of str, optional
        With a mapping ``runs``: the query of each value, one list for all
        systems or one per system. The systems are aligned on the queries
        they all have (in the first system's order) and the report says
        how many each lost. None: the values are aligned by position, so
        every array needs the same length.
    metrics : sequence of str, optional
        The metrics to compare, in order; default every per-query metric
        all systems have.
    baseline : str, optional
        Compare each system with this one only; default every pair.
    test : {"t", "wilcoxon", "randomization", "bootstrap", "tukey"}
        Student's paired t-test (:func:`~uncertank.stats.paired_ttest`),
        Wilcoxon's signed-rank test (:func:`~uncertank.stats.wilcoxon_signed_rank`),
        Fisher's paired randomisation test
        (:func:`~uncertank.stats.pairwise_randomization_test`, ``n_resamples``
        sign patterns shared by all pairs), the paired bootstrap test
        (:func:`~uncertank.stats.pairwise_bootstrap_test`), or Tukey's HSD
        over all pairs with queries as blocks (:func:`~uncertank.stats.tukey_hsd`).
        All two-sided.
    correction : {"holm", "bh", "bonferroni", "none"}, optional
        The multiple-comparison correction over ``family``
        (:func:`~uncertank.stats.adjust_pvalues`; ``"bh"`` is
        Benjamini-Hochberg's, which controls the false discovery rate). Default
        ``"holm"``, and ``"none"`` for ``test="tukey"``, whose p-values are
        already adjusted for all pairs of a metric (any other is refused).
    family : {"metric", "table"}
        Correct over the comparisons of each metric, or over every
        comparison of the table.
    alpha : float
        Significance level in (0, 1): a comparison is significant when its
        corrected p-value is below it.
    n_resamples : int
        Resamples of the queries for the intervals of the mean differences,
        and sign patterns or resamples of a resampling test.
    seed : int
        Seeds the resampling (the intervals and a bootstrap test share one
        draw; the randomisation test's signs come from the same seed).
    lower_is_better : sequence of str
        Per-query metrics for which lower is better (for the bold and for
        who beats whom); calibration metrics say it themselves.
    calibration : mapping of str to RankedLists, optional
        Probability runs, by system (not every system needs one): the
        pairs that :class:`~uncertank.evaluate.EvaluationReport` does not
        keep, for example ``ranked_lists_from_run(read_trec_run(path),
        qrels)``. Their queries are cut to those the systems share when
        both carry query ids.
    calibration_metrics : sequence
        Calibration metrics for the columns (names or mappings with options,
        as :func:`uncertank.metrics.resolve_metrics` takes), each computed
        over all pairs with a percentile interval from resampling whole
        queries (:func:`~uncertank.stats.query_bootstrap_interval`).
    calibration_resamples : int
        Resamples of those intervals.
    bayes : DataFrame, sequence of mappings or mapping, optional
        The Bayesian comparison to show beside: the frame of
        :meth:`uncertank.bayes.SystemComparison.contrasts` (columns
        ``system``, ``p_better``, ``verdict``, ...), the same rows as
        mappings (a study's ``against_baseline``), or ``{system:
        {"p_better": ..., "verdict": ...}}``.
    bayes_reference : str, optional
        The system that comparison is against, shown as "reference".
    bayes_metric : str, optional
        What that comparison modelled (for example ``"nDCG@10"``), named in
        the caption.

    Returns
    -------
    ComparisonReport

    Raises
    ------
    ValueError
        An unknown test, correction, family or baseline; a correction with
        Tukey's HSD; fewer than two systems; no (or one) query shared by
        all systems; values of unequal length aligned by position; a
        metric not every system has; rows of ``calibration`` or ``bayes``
        for unknown systems.
    TypeError
        ``runs`` of another kind, or options of the wrong type.

    Notes
    -----
    The effect sizes: the mean difference $\bar d$ with the 95% percentile
    interval of $\bar d$ over ``n_resamples`` resamples of the queries
    (the same draw for every pair), and the standardized paired effect
    $d_z = \bar d / s_d$, with $s_d$ the sample standard deviation
    (ddof 1) of the per-query differences (Cohen 1988, eq. 2.3.5; Lakens
    2013): the effect measured against the query-to-query noise of the
    difference, not against the spread of the scores themselves.

    Examples
    --------
    >>> rep = compare_runs({"bm25": {"MAP": [0.2, 0.3, 0.1, 0.4]},
    ...                     "bert": {"MAP": [0.5, 0.6, 0.3, 0.7]}}, n_resamples=200)
    >>> p = rep.pairs[0]
    >>> p.system, p.other, round(p.mean_difference, 3), round(p.effect_size, 2)
    ('bert', 'bm25', 0.275, 5.5)
    """
    test, correction, family = check_test_options(test, correction, family)
    alpha = check_real(alpha, "alpha", minimum=0, maximum=1, exclusive_minimum=True, exclusive_maximum=True)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    calibration_resamples = check_positive_int(calibration_resamples, "calibration_resamples")
    seed = check_seed(seed, "seed", allow_none=False, generator=False)
    if isinstance(lower_is_better, str) or not isinstance(lower_is_better, Sequence):
        raise TypeError(f"lower_is_better must be a sequence of metric labels; got {lower_is_better!r}")

    systems, chosen, ids, values = _per_query_input(runs, metrics, query_ids)
    if baseline is not None and baseline not in systems:
        raise ValueError(f"baseline must be one of the systems {systems} or None; got {baseline!r}")
    unknown_lower = [m for m in lower_is_better if m not in chosen]
    if unknown_lower:
        raise ValueError(f"lower_is_better names {unknown_lower}, not among the metrics compared: {chosen}")
    x, shared, dropped = _align(systems, chosen, ids, values)
    cal_labels, cal_values, cal_lower = _calibration_input(
        calibration, systems, shared, calibration_metrics, calibration_resamples, seed)
    clash = [c for c in cal_labels if c in chosen]
    if clash:
        raise ValueError(f"calibration_metrics {clash} have the labels of per-query metrics compared; drop one")
    bayes_rows, bayes_ref = _bayes_input(bayes, systems, bayes_reference)
    if bayes_metric is not None and (not isinstance(bayes_metric, str) or bayes is None):
        raise ValueError(f"bayes_metric must be a str naming what bayes modelled, given with bayes; "
                         f"got {bayes_metric!r}" + ("" if bayes is not None else " without bayes"))

    from uncertank.stats import adjust_pvalues, pairwise_bootstrap_test, pairwise_randomization_test, tukey_hsd

    pairs = _pair_indices(systems, baseline)
    ii = np.array([i for i, _ in pairs])
    jj = np.array([j for _, j in pairs])
    boot = pairwise_bootstrap_test(x, n_resamples=n_resamples, seed=seed, level=_LEVEL)
    assert boot.low is not None and boot.high is not None
    if test in ("t", "wilcoxon"):
        stat, pval = _single_pair_tests(x, pairs, test)
    else:
        if test == "bootstrap":
            res = boot
        elif test == "randomization":
            res = pairwise_randomization_test(x, n_resamples=n_resamples, seed=seed)
        else:
            res = tukey_hsd(x)
        stat, pval = res.statistic[:, ii, jj], res.pvalue[:, ii, jj]
        if test != "tukey":  # a pair without any difference has no statistic
            same = np.all(x[:, :, ii] == x[:, :, jj], axis=1)
            stat = np.where(same, math.nan, stat)
    if correction == "none":
        adjusted = pval.copy()
    elif family == "metric":
        adjusted = np.stack([adjust_pvalues(row, correction) for row in pval])
    else:
        adjusted = adjust_pvalues(pval.ravel(), correction).reshape(pval.shape)

    d = x[:, :, ii] - x[:, :, jj]  # (n_metrics, n_queries, n_pairs)
    mean_d = d.mean(axis=1)
    sd = d.std(axis=1, ddof=1)
    # differences equal up to rounding (0.31 - 0.21 and 0.41 - 0.31) do not vary: their sd is 0, d_z infinite
    sd = np.where(sd <= 1e-12 * np.abs(d).max(axis=1), 0.0, sd)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = mean_d / sd
    lower = set(lower_is_better)
    comparisons = []
    for m, label in enumerate(chosen):
        for k, (i, j) in enumerate(pairs):
            significant = bool(adjusted[m, k] < alpha)
            better = None
            if significant and mean_d[m, k] != 0:
                better = systems[i] if (mean_d[m, k] > 0) != (label in lower) else systems[j]
            comparisons.append(PairComparison(
                metric=label, system=systems[i], other=systems[j], n=x.shape[1],
                mean_difference=float(mean_d[m, k]), low=float(boot.low[m, i, j]), high=float(boot.high[m, i, j]),
                effect_size=float(effect[m, k]), statistic=float(stat[m, k]), pvalue=float(pval[m, k]),
                pvalue_adjusted=float(adjusted[m, k]), significant=significant, better=better,
            ))
    means = {label: {s: float(x[m, :, j].mean()) for j, s in enumerate(systems)} for m, label in enumerate(chosen)}
    return ComparisonReport(
        systems=systems, metrics=chosen, means=means, pairs=comparisons, n_queries=int(x.shape[1]),
        query_ids=shared, dropped=dropped, baseline=baseline, test=test, correction=correction, family=family,
        alpha=alpha, n_resamples=n_resamples, seed=seed, lower_is_better=[*lower_is_better, *cal_lower],
        calibration_metrics=cal_labels, calibration=cal_values, calibration_resamples=calibration_resamples,
        bayes=bayes_rows, bayes_reference=bayes_ref, bayes_metric=bayes_metric,
    )


def report_format(path: str | os.PathLike[str]) -> str:
    """The format a report file's suffix names: ``markdown``, ``latex``, ``csv`` or ``json``.

    Examples
    --------
    >>> report_format("table.tex")
    'latex'
    """
    check_path(path, "path")
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in REPORT_SUFFIXES:
        raise ValueError(
            f"a report file's suffix must be one of {', '.join(REPORT_SUFFIXES)} (the format); got "
            f"{os.fspath(path)!r}"
        )
    return REPORT_SUFFIXES[suffix]
