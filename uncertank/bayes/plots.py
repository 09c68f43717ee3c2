"""Figures of a fitted comparison: system effects (the paper's Figure 2) and posterior predictive checks.

matplotlib is imported inside the functions (``pip install "uncertank[plot]"``).
Each figure of a fit is drawn from what the fit gives by a function that
takes those rows or arrays (:func:`plot_effect_intervals`,
:func:`plot_ppc_densities`), so that a figure drawn from them stored, as a
study's report draws it, is the same drawing. The ``write_*`` functions
draw a figure straight into a file, atomically, for reports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._optional import require
from uncertank.bayes._fitted import check_fitted
from uncertank.validation import as_float_array, check_instance, check_keys, check_path, check_positive_int

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from uncertank.bayes._fitted import Fitted

__all__ = ["plot_effect_intervals", "plot_effects", "plot_ppc", "plot_ppc_densities", "ppc_densities",
           "write_effects_figure", "write_ppc_figure"]

_WHAT = "the figures of a Bayesian comparison"


def plot_effect_intervals(
    effects: pd.DataFrame | Sequence[Mapping[str, str | float]], family: str, *, prob: float = 0.95,
    title: str | None = None, ax: Axes | None = None,
) -> Axes:
    """Forest plot of system effects given as rows: a dot at the mean, a bar over the credible interval.

    The drawing of :func:`plot_effects`, from the frame of
    :meth:`~uncertank.bayes.SystemComparison.system_effects` or from the
    same rows stored in a file (a study's report draws its system effects
    so).

    Parameters
    ----------
    effects : pandas.DataFrame or sequence of mappings
        One row per system with ``system``, ``mean``, ``lower`` and
        ``upper``, drawn top to bottom in their order (best first, as
        ``system_effects`` returns them).
    family : str
        The model family (the scale in the x label: score units for
        ``gaussian``, log-odds otherwise).
    prob : float
        Credible mass of the intervals, for the x label.
    title : str, optional
        ``<family>: <n> systems`` by default.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure by default.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import pandas as pd

    if not isinstance(effects, pd.DataFrame):
        check_instance(effects, "effects", (list, tuple), "a DataFrame or a list of rows (dicts)")
    rows = effects.to_dict("records") if hasattr(effects, "to_dict") else list(effects)
    if not rows:
        raise ValueError("effects must hold at least one system")
    for i, row in enumerate(rows):
        check_instance(row, f"effects[{i}]", Mapping, "a row with mean, lower and upper")
        missing = [k for k in ("mean", "lower", "upper") if k not in row]
        if missing:
            raise ValueError(f"effects[{i}] must have mean, lower and upper; got no {', '.join(missing)}")
    mean, lower, upper = (np.array([float(r[k]) for r in rows]) for k in ("mean", "lower", "upper"))
    if ax is None:
        _, ax = require("matplotlib.pyplot", "plot", what=_WHAT).subplots(figsize=(5.0, 0.6 + 0.18 * len(rows)))
    y = np.arange(len(rows))[::-1]
    ax.errorbar(mean, y, xerr=[mean - lower, upper - mean], fmt="o", ms=3, color="black", ecolor="0.4",
                elinewidth=1, capsize=2)
    ax.axvline(0.0, color="#7570b3", lw=1)
    ax.set_yticks(y)
    ax.set_yticklabels([str(r["system"]) for r in rows], fontsize=7)
    scale = "score" if family == "gaussian" else "log-odds"
    ax.set_xlabel(f"system effect ({scale}), mean and {prob:.0%} interval")
    ax.set_title(f"{family}: {len(rows)} systems" if title is None else title, fontsize=9)
    return ax


def plot_effects(
    cmp: Fitted, *, top: int | None = None, bottom: int | None = None, prob: float = 0.95,
    ax: Axes | None = None,
) -> Axes:
    """Forest plot of the system effects with their credible intervals (the paper's Figure 2).

    :meth:`~uncertank.bayes.SystemComparison.system_effects` drawn by
    :func:`plot_effect_intervals`; the title counts every system of the fit.

    Parameters
    ----------
    cmp : SystemComparison
        The fit.
    top, bottom : int, optional
        Show only the ``top`` best and ``bottom`` worst systems; all by default.
    prob : float
        Credible mass of the bars.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure by default.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_fitted(cmp, needs=("system_effects", "systems", "family"))
    eff = cmp.system_effects(prob=prob)
    if top is not None or bottom is not None:
        n = len(eff)
        t = check_positive_int(top, "top", minimum=0) if top is not None else 0
        bo = check_positive_int(bottom, "bottom", minimum=0) if bottom is not None else 0
        keep = sorted(set(range(min(t, n))) | set(range(max(n - bo, 0), n)))
        eff = eff.iloc[keep]
    return plot_effect_intervals(eff, cmp.family, prob=prob, title=f"{cmp.family}: {len(cmp.systems)} systems",
                                 ax=ax)


def ppc_densities(cmp: Fitted, n_replicates: int = 100, *, seed: int | None = None,
                  points: int = 256) -> dict[str, NDArray[np.float64]]:
    """The posterior predictive check as curves: KDE densities of replicated and observed scores on one grid.

    The grid spans [0, 1] when the data and every replicate lie there, else
    the range of the data and of the replicates' 0.1%-99.9% quantiles, padded
    by 5%.

    Parameters
    ----------
    cmp : SystemComparison
        The fit.
    n_replicates : int
        Replicated data sets drawn.
    seed : int, optional
        Seed of the replicates.
    points : int
        Points of the grid.

    Returns
    -------
    dict of ndarray
        ``grid`` (points,), ``observed`` (points,), the density of the
        observed scores, ``replicates`` (n_replicates, points), one density
        per replicated data set, and ``outside`` (a 0-d array), the share of
        replicated scores outside [0, 1]: what :func:`plot_ppc_densities`
        draws, and what ``numpy.savez`` stores.
    """
    check_fitted(cmp, needs=("data", "posterior_predictive"))
    from scipy.stats import gaussian_kde

    n_replicates = check_positive_int(n_replicates, "n_replicates")
    points = check_positive_int(points, "points", minimum=2)
    rep = cmp.posterior_predictive(n_replicates, seed=seed)
    y = cmp.data["score"].to_numpy(dtype=np.float64)
    outside = float(((rep < 0) | (rep > 1)).mean())
    if outside == 0.0 and 0.0 <= y.min() and y.max() <= 1.0:
        grid = np.linspace(0.0, 1.0, points)  # bounded family: the densities on [0, 1] only
    else:
        lo = min(float(y.min()), float(np.quantile(rep, 0.001)))
        hi = max(float(y.max()), float(np.quantile(rep, 0.999)))
        pad = 0.05 * (hi - lo)
        grid = np.linspace(lo - pad, hi + pad, points)
    return {"grid": grid, "observed": gaussian_kde(y)(grid),
            "replicates": np.stack([gaussian_kde(row)(grid) for row in rep]), "outside": np.float64(outside)}


def plot_ppc_densities(densities: Mapping[str, ArrayLike], family: str, *, title: str | None = None,
                       ax: Axes | None = None) -> Axes:
    """Draw densities of replicated scores (thin lines) under the observed one.

    The drawing of :func:`plot_ppc`, from the curves of :func:`ppc_densities`
    or from the same curves stored in a file (a study's report draws its
    posterior predictive checks so). Where the grid runs below 0 or above 1,
    the range outside [0, 1] is shaded.

    Parameters
    ----------
    densities : mapping
        ``grid``, ``observed``, ``replicates`` and ``outside``, as
        :func:`ppc_densities` returns them.
    family : str
        The model family (the x label: the per-rank gain for ``zoib_rank``,
        the score otherwise).
    title : str, optional
        The title's first line, ``posterior predictive check: <family>`` by
        default; when some replicated scores fall outside [0, 1], a second
        line gives their share.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure by default.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_instance(densities, "densities", Mapping, "a mapping of names to densities")
    check_keys(densities, "densities", ("grid", "observed", "replicates", "outside"))
    grid = as_float_array(densities["grid"], "grid")
    observed = as_float_array(densities["observed"], "observed")
    replicates = as_float_array(densities["replicates"], "replicates", ndim=2)
    outside = float(np.asarray(densities["outside"]))
    if observed.shape != grid.shape or replicates.shape[1:] != grid.shape:
        raise ValueError(f"observed and each row of replicates must have the grid's {grid.size} points; got "
                         f"shapes {observed.shape} and {replicates.shape}")
    if ax is None:
        _, ax = require("matplotlib.pyplot", "plot", what=_WHAT).subplots(figsize=(5.0, 2.6))
    for row in replicates:
        ax.plot(grid, row, color="#9ecae1", lw=0.5, alpha=0.5)
    ax.plot(grid, observed, color="#08306b", lw=1.8, label="observed")
    ax.plot([], [], color="#9ecae1", lw=1, label=f"{replicates.shape[0]} replicates")
    if grid[0] < 0.0:
        ax.axvspan(grid[0], 0.0, color="0.92", zorder=0)
    if grid[-1] > 1.0:
        ax.axvspan(1.0, grid[-1], color="0.92", zorder=0)
    ax.set_xlim(grid[0], grid[-1])
    title = f"posterior predictive check: {family}" if title is None else title
    if outside > 0:
        title += f"\n{outside:.1%} of replicated scores outside [0, 1]"  # a second line: never clipped
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("score" if family != "zoib_rank" else "per-rank gain")
    ax.set_ylabel("density")
    ax.legend(fontsize=7, frameon=False)
    return ax


def plot_ppc(cmp: Fitted, n_replicates: int = 100, *, seed: int | None = None,
             ax: Axes | None = None) -> Axes:
    """Densities of replicated scores over the observed one (the tops of the paper's Figure 1).

    Kernel density estimates, as bayesplot's ``ppc_dens_overlay``:
    :func:`ppc_densities` drawn by :func:`plot_ppc_densities`. When the data
    and every replicate lie in [0, 1] the densities are drawn on [0, 1];
    otherwise the range outside is shaded and a second title line gives the
    share of replicated scores that fall there.

    Parameters
    ----------
    cmp : SystemComparison
        The fit.
    n_replicates : int
        Replicated data sets drawn (thin lines).
    seed : int, optional
        Seed of the replicates.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
    """
    check_fitted(cmp, needs=("family", "data", "posterior_predictive"))
    return plot_ppc_densities(ppc_densities(cmp, n_replicates, seed=seed), cmp.family, ax=ax)


def _write(ax: Axes, path: str | os.PathLike[str], dpi: int) -> Path:
    from uncertank.files import atomic_path

    plt = require("matplotlib.pyplot", "plot", what=_WHAT)
    fig = ax.figure.figure  # the root figure (itself, unless ax is on a subfigure)
    fig.tight_layout()
    p = Path(path)
    fmt = p.suffix.lstrip(".").lower() or "png"
    try:
        with atomic_path(p) as tmp:
            fig.savefig(tmp, dpi=dpi, format=fmt, bbox_inches="tight")
    finally:
        plt.close(fig)
    return p


def write_effects_figure(cmp: Fitted, path: str | os.PathLike[str], *, dpi: int = 120, top: int | None = None,
                         bottom: int | None = None, prob: float = 0.95, ax: Axes | None = None) -> Path:
    """Draw :func:`plot_effects` into ``path`` (format from its suffix, PNG by default), atomically.

    Parameters
    ----------
    cmp : SystemComparison
        The fit.
    path : str or os.PathLike
        Destination; its folder is created when missing.
    dpi : int
        Resolution.
    top, bottom, prob, ax
        Passed to :func:`plot_effects`.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    check_path(path, "path")
    check_fitted(cmp, needs=("system_effects", "systems", "family"))
    return _write(plot_effects(cmp, top=top, bottom=bottom, prob=prob, ax=ax), path, dpi)


def write_ppc_figure(cmp: Fitted, path: str | os.PathLike[str], *, dpi: int = 120, n_replicates: int = 100,
                     seed: int | None = None, ax: Axes | None = None) -> Path:
    """Draw :func:`plot_ppc` into ``path`` (format from its suffix, PNG by default), atomically.

    Parameters
    ----------
    cmp, path, dpi
        As in :func:`write_effects_figure`.
    n_replicates, seed, ax
        Passed to :func:`plot_ppc`.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    check_path(path, "path")
    check_fitted(cmp, needs=("family", "data", "posterior_predictive"))
    return _write(plot_ppc(cmp, n_replicates, seed=seed, ax=ax), path, dpi)
