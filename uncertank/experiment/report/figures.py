"""The report's figures, drawn into ``figures/`` from the data of ``results.json`` and the curves stored beside it.

Each function draws one figure with matplotlib's object API (no pyplot
state, no backend switch) and returns its path relative to the report
folder. Nothing here computes a number the report states. A figure that
a user can draw too is drawn by the same public function:
:meth:`uncertank.display.ReliabilityDisplay.from_bins` the reliability
diagrams, :func:`uncertank.bayes.plots.plot_effect_intervals` the system
effects, :func:`uncertank.bayes.plots.plot_ppc_densities` the posterior
predictive checks.

A figure is drawn at the size it is shown at: panels at most
:data:`COLUMNS` to a row (four conditions are two rows of two), so that a
figure is at most about 1,100 pixels wide at :data:`DPI` and ``report.html``
shows it unscaled on a laptop screen, with ticks and labels of
:data:`FONT_SIZE` points and legends of :data:`LEGEND_SIZE` (about 14 and
12 pixels); on a smaller screen the page links to the full-size file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uncertank._optional import require
from uncertank.display import ReliabilityDisplay
from uncertank.experiment.result import BayesOutcome, Evaluation, json_number
from uncertank.experiment.stages import file_stem
from uncertank.files import atomic_path
from uncertank.formatting import format_number
from uncertank.validation import check_names, check_path

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.gridspec import SubplotSpec
    from numpy.typing import ArrayLike

__all__ = ["COLUMNS", "DPI", "FONT_SIZE", "Figures", "LEGEND_SIZE"]

#: The most panels in a row of a figure.
COLUMNS = 2
#: Pixels per inch of the saved figures.
DPI = 110
#: Points of the tick labels, axis labels and titles (``FONT_SIZE * DPI / 72`` pixels).
FONT_SIZE = 9.5
#: Points of the legends' text.
LEGEND_SIZE = 8.0


def _grid(n_panels: int) -> tuple[int, int]:
    """Rows and columns of ``n_panels`` panels, at most :data:`COLUMNS` to a row."""
    cols = min(max(1, n_panels), COLUMNS)
    return -(-max(1, n_panels) // cols), cols


def _colours(rankers: Sequence[str]) -> dict[str, tuple[float, float, float, float]]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {r: cmap(i % 10) for i, r in enumerate(rankers)}


class Figures:
    """Draws the report's figures into ``out/figures``; one colour per ranker across every figure.

    Raises
    ------
    ImportError
        When matplotlib (the ``plot`` extra) is missing.
    """

    def __init__(self, out: Path, rankers: Sequence[str]) -> None:
        out = check_path(out, "out")
        rankers = check_names(rankers, "rankers")
        self.Figure: type[Figure] = require("matplotlib.figure", "plot", what="the report's figures").Figure
        self.out = out
        self.dir = out / "figures"
        self.colours = _colours(rankers)

    def _figure(self, width: float, height: float) -> Figure:
        return self.Figure(figsize=(width, height), layout="constrained")

    def _new(self, n_panels: int, *, width: float = 4.6, height: float = 3.6) -> tuple[Figure, list[Axes]]:
        rows, cols = _grid(n_panels)
        fig = self._figure(width * cols, height * rows)
        return fig, [self._panel(fig, rows, cols, i + 1) for i in range(n_panels)]

    def _panel(self, fig: Figure, *args: int | SubplotSpec, **kwargs: object) -> Axes:
        ax = fig.add_subplot(*args, **kwargs)
        ax.tick_params(labelsize=FONT_SIZE)
        ax.xaxis.label.set_fontsize(FONT_SIZE)
        ax.yaxis.label.set_fontsize(FONT_SIZE)
        ax.title.set_fontsize(FONT_SIZE + 1)
        return ax

    def _save(self, fig: Figure, name: str) -> str:
        for ax in fig.axes:  # labels, titles and legends set after the panel was made
            ax.xaxis.label.set_fontsize(FONT_SIZE)
            ax.yaxis.label.set_fontsize(FONT_SIZE)
            ax.title.set_fontsize(FONT_SIZE + 1)
            legend = ax.get_legend()
            if legend is not None:
                for text in [*legend.get_texts(), legend.get_title()]:
                    text.set_fontsize(LEGEND_SIZE)
        path = self.dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
        return f"figures/{name}"

    def risk(self, evs: Sequence[Evaluation], conds: Sequence[str]) -> str:
        """Test R@1 against the risk aversion b, one panel per condition; a star at the chosen b."""
        curves = [e.risk.test_curve for e in evs if e.risk is not None]
        bs_all = [b for c in curves for b in c]
        fig, axes = self._new(len(conds), width=4.8, height=3.6)
        for ax, cond in zip(axes, conds, strict=True):
            for e in evs:
                if e.condition != cond or e.risk is None:
                    continue
                bs = sorted(e.risk.test_curve)
                ax.plot(bs, [e.risk.test_curve[b] for b in bs], marker="o", ms=3, color=self.colours[e.ranker],
                        label=e.ranker)
                if e.risk.b in e.risk.test_curve:
                    ax.plot([e.risk.b], [e.risk.test_curve[e.risk.b]], marker="*", ms=13,
                            color=self.colours[e.ranker], markeredgecolor="black", linestyle="none")
            ax.set(xlabel="risk aversion b", ylabel="test R@1", title=cond)
            if any(b > 0 for b in bs_all) and all(b >= 0 for b in bs_all):
                ax.set_xscale("symlog", linthresh=min((b for b in bs_all if b > 0), default=1.0))
            ax.grid(alpha=0.3)
            ax.legend(fontsize=LEGEND_SIZE)
        return self._save(fig, "risk-r1-vs-b.png")

    def risk_coverage(self, evs: Sequence[Evaluation], conds: Sequence[str]) -> str:
        """Risk-coverage curves, one panel per condition, AURC in the legend."""
        fig, axes = self._new(len(conds), width=4.8, height=3.6)
        for ax, cond in zip(axes, conds, strict=True):
            for e in evs:
                if e.condition == cond and e.selective is not None:
                    ax.plot(e.selective.coverage, e.selective.risk, color=self.colours[e.ranker],
                            label=f"{e.ranker} ({format_number(e.selective.aurc)})")
            ax.set(xlabel="coverage (share of queries answered)", ylabel="risk (top-1 error rate)", title=cond,
                   xlim=(0, 1))
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=LEGEND_SIZE, title="ranker (AURC)", title_fontsize=LEGEND_SIZE)
        return self._save(fig, "risk-coverage.png")

    def coverage(self, evs: Sequence[Evaluation], conds: Sequence[str]) -> str:
        """Test coverage of the conformal sets against the target ``1 - alpha``, one panel per condition.

        The diagonal marks coverage equal to the target (the guarantee holds
        on or above it); a hollow marker is a weighted set's coverage at the
        study's ``alpha``.
        """
        fig, axes = self._new(len(conds), width=4.8, height=3.6)
        for ax, cond in zip(axes, conds, strict=True):
            low, weighted = 1.0, False
            for e in evs:
                c = e.conformal
                if e.condition != cond or c is None or not c.curve_alpha:
                    continue
                target = [1.0 - a for a in c.curve_alpha]
                order = np.argsort(target)
                colour = self.colours[e.ranker]
                ax.plot(np.asarray(target)[order], np.asarray(c.curve_coverage)[order], marker="o", ms=3,
                        color=colour, label=e.ranker)
                low = min(low, *target, *c.curve_coverage)
                if c.weighted_coverage is not None:
                    ax.plot([1.0 - c.alpha], [c.weighted_coverage], marker="o", ms=7, linestyle="none",
                            markerfacecolor="none", markeredgecolor=colour)
                    low, weighted = min(low, c.weighted_coverage), True
            if weighted:
                ax.plot([], [], marker="o", ms=7, linestyle="none", markerfacecolor="none", markeredgecolor="grey",
                        label="weighted sets")
            low = max(0.0, low - 0.05)
            ax.plot([low, 1.0], [low, 1.0], ls="--", color="grey", lw=1, label="coverage = target")
            ax.set(xlabel="target coverage 1 - α", ylabel="test coverage", title=cond, xlim=(low, 1.0),
                   ylim=(low, 1.0))
            ax.grid(alpha=0.3)
            ax.legend(fontsize=LEGEND_SIZE, loc="upper left")
        return self._save(fig, "conformal-coverage.png")

    def reliability(self, evs: Sequence[Evaluation], conds: Sequence[str]) -> str:
        """Reliability diagrams, rankers overlaid, one panel per condition, bin counts in a strip below.

        Each ranker's curve is a :class:`~uncertank.display.ReliabilityDisplay`
        of its stored bins (with the diagonal); over it, a marker per bin whose
        area is the bin's share of the ranker's pairs.
        """
        rows, cols = _grid(len(conds))
        fig = self._figure(4.8 * cols, 5.0 * rows)
        grid = fig.add_gridspec(2 * rows, cols, height_ratios=[3, 1] * rows)
        total_max = max(sum(e.reliability.count) for e in evs if e.reliability)
        for j, cond in enumerate(conds):
            row, col = divmod(j, cols)
            ax = self._panel(fig, grid[2 * row, col])
            strip = self._panel(fig, grid[2 * row + 1, col], sharex=ax)
            for e in evs:
                if e.condition != cond or e.reliability is None:
                    continue
                c = e.reliability
                n = max(sum(c.count), 1)
                colour = self.colours[e.ranker]
                ReliabilityDisplay.from_bins(c.mean_confidence, c.fraction_relevant, c.count, name=e.ranker, ax=ax,
                                             color=colour, lw=1.2, marker="none")
                ax.scatter(c.mean_confidence, c.fraction_relevant, s=[8 + 220 * k / n for k in c.count],
                           color=colour, alpha=0.6, edgecolors="black", linewidths=0.4)
                strip.plot(c.mean_confidence, c.count, marker="o", ms=3, lw=1, color=colour)
            ax.set(xlabel="", ylabel="fraction relevant", title=cond)  # the x label is the strip's
            ax.tick_params(labelbottom=False)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=LEGEND_SIZE, loc="upper left")  # the displays' legend, at the report's size
            strip.set_yscale("log")
            strip.set_ylim(0.8, total_max * 2)
            strip.set(xlabel="mean predicted P(relevant)", ylabel="pairs in bin")
            strip.grid(alpha=0.3)
        return self._save(fig, "reliability.png")

    def imbalance(self, evs: Sequence[Evaluation], conds: Sequence[str]) -> str:
        """ECE against non-relevant candidates per relevant one, one panel per condition."""
        fig, axes = self._new(len(conds), width=4.8, height=3.6)
        for ax, cond in zip(axes, conds, strict=True):
            for e in evs:
                if e.condition == cond and e.imbalance:
                    ks = sorted(e.imbalance)
                    ax.plot(ks, [e.imbalance[k] for k in ks], marker="o", ms=3, color=self.colours[e.ranker],
                            label=e.ranker)
            ax.set(xlabel="non-relevant per relevant", ylabel="ECE", title=cond)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=LEGEND_SIZE)
        return self._save(fig, "ece-imbalance.png")

    def system_effects(self, fams: Sequence[BayesOutcome]) -> str:
        """System effects with 95% intervals, one panel per model family.

        Drawn by :func:`uncertank.bayes.plots.plot_effect_intervals`, as
        :func:`~uncertank.bayes.plots.plot_effects` draws a fit's.
        """
        from uncertank.bayes.plots import plot_effect_intervals  # the Bayesian package, only when it has a fit

        fig, axes = self._new(len(fams), width=5.2, height=1.2 + 0.2 * max(len(b.effects) for b in fams))
        for ax, b in zip(axes, fams, strict=True):
            best_first = [{k: v for k, v in r.items() if isinstance(v, (str, int, float))}  # the numbers and names
                          for r in sorted(b.effects, key=lambda r: json_number(r["mean"]))[::-1]]
            plot_effect_intervals(best_first, b.family, title=f"{b.family} ({b.n_systems} systems)", ax=ax)
            ax.tick_params(axis="y", labelsize=LEGEND_SIZE)
            ax.grid(axis="x", alpha=0.3)
        return self._save(fig, "bayes-system-effects.png")

    def ppc(self, family: str, curves: Mapping[str, ArrayLike], *, condition: str | None = None) -> str:
        """The posterior predictive check of one fit from its stored curves (``grid``, ``observed``, ...).

        Drawn by :func:`uncertank.bayes.plots.plot_ppc_densities`, as
        :func:`~uncertank.bayes.plots.plot_ppc` draws a fit's. ``condition``
        names the condition of a fit of the study's rankers (in the title and
        the file name).
        """
        from uncertank.bayes.plots import plot_ppc_densities  # the Bayesian package, only when it has a fit

        fig, (ax,) = self._new(1, width=5.6, height=3.2)
        title = f"posterior predictive check: {family}" + ("" if condition is None else f", {condition}")
        plot_ppc_densities(curves, family, title=title, ax=ax)
        stem = family if condition is None else f"{family}-{file_stem(condition)}"
        return self._save(fig, f"bayes-{stem}-ppc.png")
