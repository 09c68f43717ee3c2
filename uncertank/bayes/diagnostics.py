"""Checks of an MCMC result: the trace is whole, and the chains agree and mix.

Two layers, both run before a fit is used or written:

- :func:`validate_trace`: the trace has the expected number of chains and
  draws per chain and no NaN or infinite value (an interrupted or failed
  sampler leaves a short or NaN-padded trace). A failure raises
  :class:`SamplingError`: such a trace is never summarised.
- :func:`diagnose`: rank-normalised split R-hat, bulk and tail ESS
  (Vehtari et al., "Rank-normalization, folding, and localization",
  Bayesian Analysis 2021) over all chains and every reported parameter, and
  divergences. A NaN R-hat or ESS counts as a failure, never as a skipped
  value; with one chain R-hat is unavailable and reported as such.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from uncertank._optional import require_arviz
from uncertank.bayes.models import PARAMETERS
from uncertank.validation import check_instance

if TYPE_CHECKING:
    import arviz as az
    import xarray as xr

__all__ = [
    "ESS_PER_CHAIN_MIN",
    "RHAT_MAX",
    "ConvergenceError",
    "ConvergenceWarning",
    "Diagnostics",
    "SamplingError",
    "diagnose",
    "validate_trace",
]

#: Thresholds of :func:`diagnose` (Vehtari et al., Bayesian Analysis 2021).
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


class ConvergenceWarning(UserWarning):
    """The sampler's output fails a convergence check (R-hat, ESS or divergences)."""


class ConvergenceError(RuntimeError):
    """Raised instead of :class:`ConvergenceWarning` under ``strict=True``."""


class SamplingError(RuntimeError):
    """The sampler's output is not a whole trace: draws missing, or NaN or infinite values."""


@dataclass(frozen=True)
class Diagnostics:
    """Convergence checks of a fit.

    Attributes
    ----------
    max_rhat : float
        Largest rank-normalised split R-hat over the checked parameters; NaN
        when unavailable (one chain) or when some R-hat is NaN (then
        ``worst_rhat`` names it).
    min_ess_bulk, min_ess_tail : float
        Smallest bulk and tail effective sample sizes (NaN when some is NaN).
    n_divergences : int
        Divergent transitions after tuning.
    n_chains, n_draws : int
        Chains and draws per chain.
    worst_rhat, worst_ess : str
        The parameter (and coordinate) with the largest R-hat / smallest bulk ESS.
    problems : list of str
        One line per failed check; empty when all pass.
    rhat_available : bool
        False with one chain: R-hat compares chains, so it is not computed,
        and the fit is flagged (``problems``) rather than declared converged.
    """

    max_rhat: float
    min_ess_bulk: float
    min_ess_tail: float
    n_divergences: int
    n_chains: int
    n_draws: int
    worst_rhat: str
    worst_ess: str
    problems: list[str] = field(default_factory=list)
    rhat_available: bool = True

    @property
    def ok(self) -> bool:
        """True when every check passes."""
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (``ok`` included; NaN stays NaN, for the caller's encoder)."""
        d = asdict(self)
        d["ok"] = self.ok
        return d

    def summary(self) -> str:
        """One line for a terminal: R-hat (or why it is unavailable), ESS, divergences."""
        if not self.rhat_available:
            rhat = f"R-hat unavailable ({self.n_chains} chain)"
        elif np.isnan(self.max_rhat):
            rhat = f"R-hat NaN ({self.worst_rhat})"
        else:
            rhat = f"R-hat max {self.max_rhat:.3f}"
        ess = "NaN" if np.isnan(self.min_ess_bulk) else f"{self.min_ess_bulk:.0f}"
        return f"{rhat}, bulk ESS min {ess}, {self.n_divergences} divergences"


def _sizes(idata: az.InferenceData) -> tuple[int, int]:
    post = idata["posterior"]
    return int(post.sizes.get("chain", 0)), int(post.sizes.get("draw", 0))


def validate_trace(idata: az.InferenceData, *, chains: int | None = None, draws: int | None = None) -> None:
    """Raise :class:`SamplingError` unless ``idata`` holds a whole, finite trace.

    Parameters
    ----------
    idata : arviz.InferenceData
        The sampler's output; needs a ``posterior`` group with ``chain`` and
        ``draw`` dimensions.
    chains, draws : int, optional
        The number of chains and of draws per chain the sampler was asked
        for; checked when given.

    Raises
    ------
    SamplingError
        No posterior, no draw, a chain or draw count other than expected, or
        a NaN or infinite value in any posterior variable (a sampler
        interrupted mid-run pads its trace with NaN).
    """
    import arviz as az

    check_instance(idata, "idata", az.InferenceData, "an arviz InferenceData")
    if not hasattr(idata, "groups") or "posterior" not in idata.groups():
        raise SamplingError("the sampler returned no posterior group")
    post = idata["posterior"]
    if "chain" not in post.dims or "draw" not in post.dims:
        raise SamplingError(f"the posterior must have dims 'chain' and 'draw'; got {tuple(post.dims)}")
    n_chains, n_draws = _sizes(idata)
    if n_chains == 0 or n_draws == 0:
        raise SamplingError(f"the sampler returned no draws ({n_chains} chains x {n_draws} draws)")
    if chains is not None and n_chains != chains:
        raise SamplingError(f"expected {chains} chains; the trace has {n_chains}")
    if draws is not None and n_draws != draws:
        raise SamplingError(f"expected {draws} draws per chain; the trace has {n_draws}")
    for name, da in post.data_vars.items():
        vals = np.asarray(da.values)
        if not np.issubdtype(vals.dtype, np.number):
            continue
        bad = ~np.isfinite(vals)
        if bad.any():
            per_chain = bad.reshape(n_chains, n_draws, -1).any(axis=2).sum(axis=1)
            raise SamplingError(
                f"posterior variable {name!r} holds {int(bad.sum())} NaN or infinite values "
                f"(draws affected per chain: {per_chain.tolist()}); an interrupted or failed sampler "
                "leaves such a trace"
            )


def _extreme(ds: xr.Dataset, *, largest: bool) -> tuple[float, str]:
    """The largest (or smallest) value over a Dataset of diagnostics, NaN first."""
    best_val, best_name = (-np.inf if largest else np.inf), ""
    for name, da in ds.data_vars.items():
        vals = np.asarray(da.values, dtype=np.float64)
        if vals.size == 0:
            continue
        flat = vals.ravel()
        nan = np.isnan(flat)
        if nan.any():
            i, v = int(np.flatnonzero(nan)[0]), float("nan")
        else:
            i = int(np.argmax(flat) if largest else np.argmin(flat))
            v = float(flat[i])
        if np.isnan(v) or (not np.isnan(best_val) and ((v > best_val) if largest else (v < best_val))):
            label = str(name)
            if vals.ndim:
                where = np.unravel_index(i, vals.shape)
                dim = da.dims[0]
                label = f"{name}[{da[dim].values[where[0]]}]"
            best_val, best_name = v, label
            if np.isnan(v):
                break
    return best_val, best_name


def reported_parameters(idata: az.InferenceData, names: Iterable[str] = PARAMETERS) -> list[str]:
    """The reported parameters that ``idata``'s posterior holds (internal)."""
    post = idata["posterior"]
    return [v for v in names if v in post.data_vars]


def diagnose(idata: az.InferenceData) -> Diagnostics:
    """R-hat, bulk and tail ESS, and divergences of a trace, checked against the thresholds.

    A fit passes when R-hat <= :data:`RHAT_MAX` (1.01), bulk and tail ESS >=
    :data:`ESS_PER_CHAIN_MIN` (100) per chain, and no transition diverged.
    Every reported parameter (those of
    :data:`~uncertank.bayes.models.PARAMETERS` the model has) is checked,
    over all chains; a NaN value fails its check.

    Parameters
    ----------
    idata : arviz.InferenceData
        A trace that passed :func:`validate_trace`.

    Returns
    -------
    Diagnostics
    """
    import arviz as az

    check_instance(idata, "idata", az.InferenceData, "an arviz InferenceData")
    az = require_arviz()
    names = reported_parameters(idata)
    post = idata["posterior"][names]
    n_chains, n_draws = _sizes(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if n_chains >= 2:
            max_rhat, worst_rhat = _extreme(az.rhat(post), largest=True)  # type: ignore[no-untyped-call]
        else:
            max_rhat, worst_rhat = float("nan"), ""
        min_bulk, worst_ess = _extreme(az.ess(post, method="bulk"), largest=False)  # type: ignore[no-untyped-call]
        min_tail, worst_tail = _extreme(az.ess(post, method="tail"), largest=False)  # type: ignore[no-untyped-call]
    div = 0
    if hasattr(idata, "sample_stats") and "diverging" in idata.sample_stats:
        div = int(np.asarray(idata.sample_stats["diverging"].values).sum())
    problems = []
    if n_chains < 2:
        problems.append(f"R-hat unavailable with {n_chains} chain (it compares at least 2)")
    elif np.isnan(max_rhat):
        problems.append(f"R-hat is NaN ({worst_rhat})")
    elif max_rhat > RHAT_MAX:
        problems.append(f"max R-hat {max_rhat:.3f} > {RHAT_MAX} ({worst_rhat})")
    need = ESS_PER_CHAIN_MIN * n_chains
    for label, value, where in (("bulk", min_bulk, worst_ess), ("tail", min_tail, worst_tail)):
        if np.isnan(value):
            problems.append(f"{label} ESS is NaN ({where})")
        elif value < need:
            problems.append(f"min {label} ESS {value:.0f} < {need} ({where})")
    if div:
        problems.append(f"{div} divergent transitions")
    return Diagnostics(
        max_rhat=float(max_rhat), min_ess_bulk=float(min_bulk), min_ess_tail=float(min_tail),
        n_divergences=div, n_chains=n_chains, n_draws=n_draws, worst_rhat=worst_rhat,
        worst_ess=worst_ess, problems=problems, rhat_available=n_chains >= 2,
    )


def min_bulk_ess_and_max_rhat(idata: az.InferenceData) -> tuple[float, float]:
    """The two numbers the ESS gate reads: min bulk ESS and max R-hat (NaN as worst; internal)."""
    az = require_arviz()
    post = idata["posterior"][reported_parameters(idata)]
    n_chains, _ = _sizes(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess, _ = _extreme(az.ess(post, method="bulk"), largest=False)
        rhat = _extreme(az.rhat(post), largest=True)[0] if n_chains >= 2 else float("nan")
    return ess, rhat
