"""Posterior summaries of system effects: credible intervals and distinguishable pairs.

Functions on the posterior draws of ``r_system`` (shape (n_samples,
n_systems), chains stacked), as Benham, Moffat & Culpepper (ECIR 2021) read
them: each system's effect with its 95% credible interval (their Figure 2),
and which systems the best (or worst) one is credibly better (or worse)
than. :class:`~uncertank.bayes.SystemComparison` calls them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from uncertank.validation import as_float_array, check_choice, check_unique, check_unit_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_prob", "contrasts", "distinguishable", "quantiles", "system_effects"]


def check_prob(prob: float) -> float:
    """Return ``prob`` as a float after checking it lies in (0, 1)."""
    return check_unit_interval(prob, "prob")


def _systems(systems: object, r: NDArray[np.float64]) -> list[object]:
    """``systems`` as a list of one unique name per column of ``r``."""
    if isinstance(systems, (str, bytes)) or not isinstance(systems, Sequence):
        raise TypeError(f"systems must be a sequence of names; got {type(systems).__name__} {systems!r}")
    names = check_unique(systems, "systems")
    if len(names) != r.shape[1]:
        raise ValueError(f"systems must name the {r.shape[1]} columns of r; got {len(names)} names")
    return names


def quantiles(x: NDArray[np.float64], prob: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Lower and upper ends of the equal-tailed ``prob`` interval over axis 0."""
    prob = check_prob(prob)
    x = as_float_array(x, "x", ndim=(1, 2, 3))
    lo, hi = np.quantile(x, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    return lo, hi


def system_effects(r: NDArray[np.float64], systems: Sequence[object], *, prob: float = 0.95) -> pd.DataFrame:
    """Posterior mean, median and equal-tailed credible interval of each system effect.

    Parameters
    ----------
    r : ndarray of shape (n_samples, n_systems)
        Posterior draws of the system effects.
    systems : sequence of length n_systems
        Their names.
    prob : float
        Mass of the interval (0.95: the 2.5% and 97.5% quantiles, as brms's
        ``posterior_summary`` and the paper's Figure 2).

    Returns
    -------
    pandas.DataFrame
        Columns ``system``, ``mean``, ``median``, ``lower``, ``upper``,
        sorted by ``mean``, best first.
    """
    r = as_float_array(r, "r", ndim=2)
    systems = _systems(systems, r)
    import pandas as pd

    prob = check_prob(prob)
    lo, hi = quantiles(r, prob)
    out = pd.DataFrame({
        "system": [str(s) for s in systems], "mean": r.mean(axis=0),
        "median": np.median(r, axis=0), "lower": lo, "upper": hi,
    })
    ranked: pd.DataFrame = (out.sort_values(["mean", "system"], ascending=[False, True], kind="stable")
                            .reset_index(drop=True))
    return ranked


def reference_index(r: NDArray[np.float64], systems: Sequence[object], reference: str) -> int:
    """Column of ``reference``: ``"best"``/``"worst"`` (highest/lowest mean) or a system name."""
    names = [str(s) for s in systems]
    if reference in ("best", "worst"):
        means = r.mean(axis=0)
        return int(np.argmax(means) if reference == "best" else np.argmin(means))
    if reference not in names:
        raise ValueError(
            f"reference must be 'best', 'worst' or a system name; got {reference!r} "
            f"(systems: {', '.join(sorted(names)[:8])}{', ...' if len(names) > 8 else ''})"
        )
    return names.index(reference)


def distinguishable(
    r: NDArray[np.float64],
    systems: Sequence[object],
    reference: str = "best",
    *,
    method: Literal["interval", "contrast"] = "interval",
    prob: float = 0.95,
) -> pd.DataFrame:
    """The systems the reference is credibly better or worse than.

    Parameters
    ----------
    r, systems
        As in :func:`system_effects`.
    reference : str
        ``"best"`` or ``"worst"`` (highest or lowest posterior mean effect)
        or a system name.
    method : {"interval", "contrast"}
        ``"interval"``: the two systems' ``prob`` credible intervals do not
        overlap (reading the paper's Figure 2). ``"contrast"``: the ``prob``
        credible interval of the difference of their effects excludes 0;
        this uses the joint posterior and separates more pairs.
    prob : float
        Credible mass.

    Returns
    -------
    pandas.DataFrame
        One row per distinguishable system: ``system``, ``relation``
        (``"better"`` when the reference is better than it, ``"worse"``
        otherwise), ``diff_mean``, ``diff_lower``, ``diff_upper`` (the
        reference's effect minus the system's) and ``p_better`` (posterior
        probability that the reference's effect is larger). Its length is
        the count the paper reports.
    """
    r = as_float_array(r, "r", ndim=2)
    systems = _systems(systems, r)
    import pandas as pd

    check_choice(method, "method", ("interval", "contrast"))
    prob = check_prob(prob)
    ref = reference_index(r, systems, reference)
    diff = r[:, [ref]] - r
    d_lo, d_hi = quantiles(diff, prob)
    if method == "interval":
        lo, hi = quantiles(r, prob)
        better = lo[ref] > hi
        worse = hi[ref] < lo
    else:
        better = d_lo > 0
        worse = d_hi < 0
    better[ref] = worse[ref] = False
    keep = better | worse
    out = pd.DataFrame({
        "system": np.asarray([str(s) for s in systems], dtype=object)[keep],
        "relation": np.where(better, "better", "worse")[keep],
        "diff_mean": diff.mean(axis=0)[keep], "diff_lower": d_lo[keep], "diff_upper": d_hi[keep],
        "p_better": (diff > 0).mean(axis=0)[keep],
    })
    ranked: pd.DataFrame = (out.sort_values(["diff_mean", "system"], ascending=[False, True], kind="stable")
                            .reset_index(drop=True))
    return ranked


def contrasts(
    r: NDArray[np.float64], systems: Sequence[object], reference: str, *, prob: float = 0.95
) -> pd.DataFrame:
    """Every system against ``reference``: the posterior of its effect minus the reference's.

    The pairwise reading of a comparison of a few systems (a study's rankers
    against its reference): unlike :func:`distinguishable`, every system is
    a row, the undecided ones included.

    Parameters
    ----------
    r, systems
        As in :func:`system_effects`.
    reference : str
        ``"best"``, ``"worst"`` or a system name.
    prob : float
        Credible mass.

    Returns
    -------
    pandas.DataFrame
        One row per system other than the reference, in the order of
        ``systems``: ``system``, ``diff_mean``, ``diff_lower``,
        ``diff_upper`` (the system's effect minus the reference's, with
        its equal-tailed ``prob`` interval), ``p_better`` (posterior
        probability that the system's effect is the larger) and
        ``verdict``: ``"better"`` or ``"worse"`` when the interval
        excludes 0, else ``"not distinguishable"``.
    """
    r = as_float_array(r, "r", ndim=2)
    systems = _systems(systems, r)
    import pandas as pd

    prob = check_prob(prob)
    ref = reference_index(r, systems, reference)
    diff = r - r[:, [ref]]
    lo, hi = quantiles(diff, prob)
    keep = np.arange(r.shape[1]) != ref
    verdict = np.where(lo > 0, "better", np.where(hi < 0, "worse", "not distinguishable"))
    out: pd.DataFrame = pd.DataFrame({
        "system": np.asarray([str(s) for s in systems], dtype=object)[keep],
        "diff_mean": diff.mean(axis=0)[keep], "diff_lower": lo[keep], "diff_upper": hi[keep],
        "p_better": (diff > 0).mean(axis=0)[keep], "verdict": verdict[keep],
    }).reset_index(drop=True)
    return out
