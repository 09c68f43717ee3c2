"""The fitted comparison, :class:`SystemComparison`, and how a gated fit ended, :class:`Gate`.

The result object of :mod:`uncertank.bayes`: the posterior, the data and the
settings of one fit, with the summaries read from them. It stands above the
modules that compute on it and below the code that makes it:

- below: :mod:`~uncertank.bayes.cells`, :mod:`~uncertank.bayes.models`,
  :mod:`~uncertank.bayes.diagnostics`, :mod:`~uncertank.bayes.summaries`,
  :mod:`~uncertank.bayes.predictive`, :mod:`~uncertank.bayes.risk_measures`
  and :mod:`~uncertank.bayes.plots` (the last three take any :class:`~uncertank.bayes._fitted.Fitted`, this class's
  interface, so they never import it);
- above: :mod:`~uncertank.bayes.fit` (:func:`~uncertank.bayes.compare` builds
  one).

The posterior summaries follow Benham, Moffat & Culpepper, "Bayesian System
Inference on Shallow Pools" (ECIR 2021).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from uncertank._optional import require_arviz
from uncertank.bayes import plots, predictive, risk_measures, summaries
from uncertank.bayes.cells import FAMILIES, Design, design_from_frame
from uncertank.bayes.diagnostics import (
    ConvergenceError,
    ConvergenceWarning,
    Diagnostics,
    diagnose,
    validate_trace,
)
from uncertank.files import atomic_path
from uncertank.validation import check_choice

if TYPE_CHECKING:
    import arviz as az
    import pandas as pd
    import xarray as xr
    from matplotlib.axes import Axes

__all__ = ["Gate", "SystemComparison"]


@dataclass(frozen=True)
class Gate:
    """How an ESS-gated fit ended (:attr:`SystemComparison.gate`).

    Attributes
    ----------
    target_ess : float
        The bulk ESS asked for (every reported parameter), with R-hat <= 1.01.
    time_budget : float or None
        Seconds allowed for sampling (None: no limit).
    met : bool
        Whether the target was reached.
    budget_exhausted : bool
        Whether sampling stopped because the time budget ran out.
    reason : str
        Why sampling stopped, in words.
    draws : int
        Draws per chain kept.
    rounds : int
        Checks (nutpie) or sampling rounds (other samplers).
    min_ess_bulk, max_rhat : float
        The gate's two numbers on the draws kept.
    elapsed_s : float
        Seconds from the start of sampling to its end.
    """

    target_ess: float
    time_budget: float | None
    met: bool
    budget_exhausted: bool
    reason: str
    draws: int
    rounds: int
    min_ess_bulk: float
    max_rhat: float
    elapsed_s: float

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return asdict(self)



class SystemComparison:
    """A fitted comparison: posterior summaries, checks, risk and plots.

    Built by :func:`~uncertank.bayes.compare` (or :meth:`from_netcdf`); not usually by hand.
    The trace is validated on construction
    (:func:`~uncertank.bayes.diagnostics.validate_trace`): a trace with NaN
    or infinite values raises :class:`~uncertank.bayes.SamplingError`.

    Parameters
    ----------
    idata : arviz.InferenceData
        The posterior (variables named as in :mod:`uncertank.bayes.models`).
    data : pandas.DataFrame
        The validated frame the model was fitted to (row order = observation
        order of :meth:`posterior_predictive`).
    family : str
        One of :data:`~uncertank.bayes.FAMILIES`.
    sampler : str
        Which NUTS implementation produced ``idata``.
    timings : dict
        ``compile_s``, ``sample_s`` and ``total_s`` in seconds.
    model_options : dict
        The model function's extra options.
    seed : int
        The sampler's seed (also the default seed of posterior predictive draws).
    gate : Gate, optional
        How an ESS-gated fit ended (``compare(..., target_ess=...)``).

    Attributes
    ----------
    systems, topics : list
        The coords, in model order.
    design : Design
        The model's cells (:func:`uncertank.bayes.cells.design`).
    gate : Gate or None
        As given.
    """

    def __init__(
        self,
        idata: az.InferenceData,
        data: pd.DataFrame,
        *,
        family: str,
        sampler: str,
        timings: dict[str, float | None] | None = None,
        model_options: Mapping[str, object] | None = None,
        seed: int = 0,
        gate: Gate | None = None,
    ) -> None:
        import pandas as pd

        check_choice(family, "family", FAMILIES)
        validate_trace(idata)
        self.idata = idata
        self.data = data
        self.family = family
        self.sampler = sampler
        self.timings = dict(timings or {})
        self.model_options = dict(model_options or {})
        self.seed = seed
        self.gate = gate
        post = idata["posterior"]
        self.systems: list[Hashable] = [v.item() if hasattr(v, "item") else v for v in post["system"].values]
        self.topics: list[Hashable] = [v.item() if hasattr(v, "item") else v for v in post["topic"].values]
        sys_index = pd.Index([str(s) for s in self.systems])
        top_index = pd.Index([str(t) for t in self.topics])
        self._s_code = sys_index.get_indexer(pd.Index(data["system"].astype(str)))
        self._t_code = top_index.get_indexer(pd.Index(data["topic"].astype(str)))
        if (self._s_code < 0).any() or (self._t_code < 0).any():
            raise ValueError("data holds systems or topics that the posterior has no coords for")
        self.design: Design = design_from_frame(family, data, **self.model_options)
        # where each of the design's systems and topics sits in the posterior's coords
        self._sys_order = sys_index.get_indexer(pd.Index([str(s) for s in self.design.systems]))
        self._top_order = top_index.get_indexer(pd.Index([str(t) for t in self.design.topics]))
        self._ppc_cache: dict[tuple[int, int], NDArray[np.float64]] = {}
        self._diag: Diagnostics | None = None
        self._warned = False

    def __repr__(self) -> str:
        return (f"SystemComparison(family={self.family!r}, sampler={self.sampler!r}, "
                f"systems={len(self.systems)}, topics={len(self.topics)}, "
                f"draws={self.n_chains}x{self.n_draws})")

    # ------------------------------------------------------------------ posterior access
    @property
    def _posterior(self) -> xr.Dataset:
        return self.idata["posterior"]

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return int(self._posterior.sizes["chain"])

    @property
    def n_draws(self) -> int:
        """Draws per chain."""
        return int(self._posterior.sizes["draw"])

    def _flat(self, name: str) -> NDArray[np.float64]:
        """Posterior draws of ``name`` with chains stacked: shape (n_samples, ...)."""
        arr = np.asarray(self._posterior[name].values, dtype=np.float64)
        return arr.reshape((-1, *arr.shape[2:]))

    def _has(self, name: str) -> bool:
        return name in self._posterior.data_vars

    def params(self, idx: NDArray[np.int64] | None = None) -> dict[str, NDArray[np.float64]]:
        """Posterior draws of the model's parameters, in the order of :attr:`design`.

        Parameters
        ----------
        idx : ndarray of int, optional
            Which samples (chains stacked); all by default.

        Returns
        -------
        dict of str to ndarray
            ``Intercept`` (n,), ``r_system`` (n, n_systems), ``r_topic``
            (n, n_topics) and whichever of ``b_rank``, ``sigma``, ``phi``,
            ``zoi``, ``coi`` the model has: the input of
            :func:`uncertank.bayes.cells.linear_predictor` and
            :func:`~uncertank.bayes.predictive.posterior_predictive`.
        """
        sel = slice(None) if idx is None else idx
        out = {name: self._flat(name)[sel] for name in ("Intercept", "b_rank", "sigma", "phi", "zoi", "coi")
               if self._has(name)}
        out["r_system"] = self._flat("r_system")[sel][:, self._sys_order]
        out["r_topic"] = self._flat("r_topic")[sel][:, self._top_order]
        return out

    # ------------------------------------------------------------------ summaries
    def system_effects(self, *, prob: float = 0.95) -> pd.DataFrame:
        """Posterior mean and equal-tailed credible interval of each system effect.

        See :func:`uncertank.bayes.summaries.system_effects`. Effects are on
        the link scale: score units (gaussian) or log-odds of the Beta mean
        (zoib, zoib_rank).

        Parameters
        ----------
        prob : float
            Mass of the interval (0.95: the 2.5% and 97.5% quantiles).

        Returns
        -------
        pandas.DataFrame
            Columns ``system``, ``mean``, ``median``, ``lower``, ``upper``,
            best first.
        """
        return summaries.system_effects(self._flat("r_system"), self.systems, prob=prob)

    def distinguishable(
        self,
        reference: str = "best",
        *,
        method: Literal["interval", "contrast"] = "interval",
        prob: float = 0.95,
        allow_unconverged: bool = False,
    ) -> pd.DataFrame:
        """The systems the reference is credibly better or worse than.

        See :func:`uncertank.bayes.summaries.distinguishable`. A verdict:
        refused when the fit fails its convergence checks
        (:meth:`check_converged`).

        Parameters
        ----------
        reference : str
            ``"best"``, ``"worst"`` or a system name.
        method : {"interval", "contrast"}
            Non-overlapping intervals (the paper's reading of its Figure 2)
            or an interval of the difference that excludes 0.
        prob : float
            Credible mass.
        allow_unconverged : bool
            Give the table even from a fit that fails the checks (for
            diagnosis only: such a table is not a verdict).

        Returns
        -------
        pandas.DataFrame
            One row per distinguishable system; ``len()`` is the paper's count.

        Raises
        ------
        ConvergenceError
            When the fit fails its convergence checks and ``allow_unconverged`` is false.
        """
        if not allow_unconverged:
            self.check_converged("distinguishable systems")
        return summaries.distinguishable(self._flat("r_system"), self.systems, reference, method=method, prob=prob)

    def contrasts(self, reference: str, *, prob: float = 0.95, allow_unconverged: bool = False) -> pd.DataFrame:
        """Every system against ``reference``: its effect minus the reference's, with a verdict.

        See :func:`uncertank.bayes.summaries.contrasts`: the reading of a
        comparison of a few systems (a study's rankers against its
        reference). A verdict: refused when the fit fails its convergence
        checks (:meth:`check_converged`).

        Parameters
        ----------
        reference : str
            ``"best"``, ``"worst"`` or a system name.
        prob : float
            Credible mass.
        allow_unconverged : bool
            As in :meth:`distinguishable`.

        Returns
        -------
        pandas.DataFrame
            One row per other system: ``system``, ``diff_mean``,
            ``diff_lower``, ``diff_upper``, ``p_better``, ``verdict``.

        Raises
        ------
        ConvergenceError
            When the fit fails its convergence checks and ``allow_unconverged`` is false.
        """
        if not allow_unconverged:
            self.check_converged("contrast")
        return summaries.contrasts(self._flat("r_system"), self.systems, reference, prob=prob)

    # ------------------------------------------------------------------ diagnostics
    @property
    def converged(self) -> bool:
        """True when the fit passes every convergence check (:meth:`diagnostics`)."""
        return self.diagnostics().ok

    def check_converged(self, what: str = "a verdict") -> None:
        """Raise :class:`ConvergenceError` unless the fit passes its convergence checks.

        The message names ``what`` is refused, every failed check, and what
        to try. Every verdict of a comparison (:meth:`distinguishable`,
        :meth:`urisk`) calls it first: a posterior whose chains disagree or
        diverge gives intervals that are not the posterior's.
        """
        d = self.diagnostics()
        if d.ok:
            return
        hint = ("sample more (draws, or target_ess to sample until the bulk ESS is reached), raise target_accept "
                "(0.95 to 0.99) against divergences")
        if len(self.systems) < 10 and self.model_options.get("system_effects") == "pooled":
            hint += ", or drop system_effects='pooled': below 10 systems the fixed effects are the default"
        raise ConvergenceError(
            f"no {what}: the {self.family} fit ({self.sampler}, {self.n_chains} chains x {self.n_draws} draws) "
            f"fails its convergence checks ({'; '.join(d.problems)}). To try: {hint}"
        )

    def diagnostics(self, *, strict: bool = False) -> Diagnostics:
        """R-hat, bulk and tail ESS, and divergences, checked against the usual thresholds.

        See :func:`uncertank.bayes.diagnostics.diagnose`. A failure warns with
        :class:`ConvergenceWarning` (once per comparison: :func:`~uncertank.bayes.compare`
        already checks), or raises :class:`ConvergenceError` under
        ``strict=True``.

        Parameters
        ----------
        strict : bool
            Raise instead of warning.

        Returns
        -------
        Diagnostics
        """
        if self._diag is None:
            self._diag = diagnose(self.idata)
        d = self._diag
        if not d.ok:
            msg = f"{self.family} fit ({self.sampler}) fails convergence checks: " + "; ".join(d.problems)
            if strict:
                raise ConvergenceError(msg)
            if not self._warned:
                self._warned = True
                warnings.warn(msg, ConvergenceWarning, stacklevel=2)
        return d

    # ------------------------------------------------------------------ posterior predictive
    def _draw_index(self, n_draws: int | None) -> NDArray[np.int64]:
        return predictive.draw_index(self.n_chains * self.n_draws, n_draws)

    def posterior_predictive(self, n_draws: int | None = 1000, *, seed: int | None = None) -> NDArray[np.float64]:
        """Replicated scores drawn from the posterior predictive distribution.

        One replicate per posterior draw, from the model's own predictor
        (:func:`uncertank.bayes.predictive.posterior_predictive`). Beta-family
        replicates lie in [0, 1]; Gaussian ones need not.

        Parameters
        ----------
        n_draws : int or None
            Posterior draws used, evenly spaced over the chains; None for all.
        seed : int, optional
            Random seed; the fit's seed by default.

        Returns
        -------
        ndarray of shape (n_draws, n_obs)
            Column ``i`` replicates row ``i`` of :attr:`data`. Cached per
            ``(n_draws, seed)``.
        """
        idx = self._draw_index(n_draws)
        seed = self.seed if seed is None else seed
        key = (int(idx.size), int(seed))
        if key not in self._ppc_cache:
            self._ppc_cache[key] = predictive.replicates(self, idx, seed=int(seed))
        return self._ppc_cache[key]

    def _cells(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        return predictive.cell_sums(values, self._s_code, self._t_code, len(self.systems), len(self.topics))

    def replicate_matrix(self, n_draws: int | None = 1000, *, seed: int | None = None) -> NDArray[np.float64]:
        """Per-topic replicated scores as a system-by-topic matrix per draw.

        Parameters
        ----------
        n_draws : int or None
            As in :meth:`posterior_predictive`.
        seed : int, optional
            As in :meth:`posterior_predictive`.

        Returns
        -------
        ndarray of shape (n_draws, n_systems, n_topics)
            For ``zoib_rank`` each cell sums the replicated per-rank gains
            (RBP to the depth of the data). NaN where the data has no score.
        """
        return self._cells(self.posterior_predictive(n_draws, seed=seed))

    def observed_matrix(self) -> NDArray[np.float64]:
        """The observed per-topic scores, shape (n_systems, n_topics), NaN where missing."""
        observed: NDArray[np.float64] = self._cells(self.data["score"].to_numpy(dtype=np.float64)[None, :])[0]
        return observed

    # ------------------------------------------------------------------ risk
    def urisk(
        self,
        baseline: str,
        *,
        r: float = 1.0,
        convention: Literal["benham", "trec"] = "benham",
        prob: float = 0.95,
        n_draws: int | None = 1000,
        seed: int | None = None,
        allow_unconverged: bool = False,
    ) -> pd.DataFrame:
        """URisk of every system against ``baseline`` on posterior predictive replicates.

        See :func:`uncertank.bayes.risk_measures.urisk_table` for the columns and the
        method (Benham et al.'s Figure 3; ZRisk and GeoRisk beside it). A
        verdict: refused when the fit fails its convergence checks
        (:meth:`check_converged`).

        Parameters
        ----------
        baseline, r, convention, prob, n_draws, seed
            As in :func:`uncertank.bayes.risk_measures.urisk_table`.
        allow_unconverged : bool
            As in :meth:`distinguishable`.

        Returns
        -------
        pandas.DataFrame
            One row per system other than the baseline, least risky first.

        Raises
        ------
        ConvergenceError
            When the fit fails its convergence checks and ``allow_unconverged`` is false.
        """
        if not allow_unconverged:
            self.check_converged("URisk")
        return risk_measures.urisk_table(self, baseline, r=r, convention=convention, prob=prob, n_draws=n_draws,
                                         seed=seed)

    # ------------------------------------------------------------------ plots
    def plot_effects(
        self, *, top: int | None = None, bottom: int | None = None, prob: float = 0.95, ax: Axes | None = None
    ) -> Axes:
        """Forest plot of the system effects (the paper's Figure 2); see :func:`uncertank.bayes.plots.plot_effects`.

        Parameters
        ----------
        top, bottom, prob, ax
            As in :func:`uncertank.bayes.plots.plot_effects`.

        Returns
        -------
        matplotlib.axes.Axes
        """
        return plots.plot_effects(self, top=top, bottom=bottom, prob=prob, ax=ax)

    def plot_ppc(self, n_replicates: int = 100, *, seed: int | None = None, ax: Axes | None = None) -> Axes:
        """Posterior predictive densities over the observed one; see :func:`uncertank.bayes.plots.plot_ppc`.

        Parameters
        ----------
        n_replicates, seed, ax
            As in :func:`uncertank.bayes.plots.plot_ppc`.

        Returns
        -------
        matplotlib.axes.Axes
        """
        return plots.plot_ppc(self, n_replicates, seed=seed, ax=ax)

    def write_effects_figure(self, path: str | os.PathLike[str], *, dpi: int = 120, top: int | None = None,
                             bottom: int | None = None, prob: float = 0.95, ax: Axes | None = None) -> Path:
        """Draw the effects plot into ``path``; see :func:`uncertank.bayes.plots.write_effects_figure`.

        Parameters
        ----------
        path : str or os.PathLike
            Destination (PNG unless its suffix names another format).
        dpi, top, bottom, prob, ax
            As in :func:`uncertank.bayes.plots.write_effects_figure`.

        Returns
        -------
        pathlib.Path
        """
        return plots.write_effects_figure(self, path, dpi=dpi, top=top, bottom=bottom, prob=prob, ax=ax)

    def write_ppc_figure(self, path: str | os.PathLike[str], *, dpi: int = 120, n_replicates: int = 100,
                         seed: int | None = None, ax: Axes | None = None) -> Path:
        """Draw the posterior predictive check into ``path``; see :func:`uncertank.bayes.plots.write_ppc_figure`.

        Parameters
        ----------
        path : str or os.PathLike
            Destination (PNG unless its suffix names another format).
        dpi, n_replicates, seed, ax
            As in :func:`uncertank.bayes.plots.write_ppc_figure`.

        Returns
        -------
        pathlib.Path
        """
        return plots.write_ppc_figure(self, path, dpi=dpi, n_replicates=n_replicates, seed=seed, ax=ax)

    # ------------------------------------------------------------------ persistence
    def to_netcdf(self, path: str | os.PathLike[str]) -> Path:
        """Write the posterior, the data and the settings to one netCDF file, atomically.

        Parameters
        ----------
        path : str or os.PathLike
            Destination; its folder is created when missing.

        Returns
        -------
        pathlib.Path
            The path written; :meth:`from_netcdf` reads it back.
        """
        import xarray as xr

        validate_trace(self.idata)
        p = Path(path)
        data = self.data
        columns = {}
        for col in data.columns:
            values = data[col]
            numeric = col != "system" and (col != "topic" or str(values.dtype).startswith("int"))
            columns[col] = ("obs", values.to_numpy() if numeric else values.astype(str).to_numpy(dtype=object))
        ds = xr.Dataset(columns)
        ds.attrs["uncertank_settings"] = json.dumps({
            "family": self.family, "sampler": self.sampler, "timings": self.timings,
            "model_options": self.model_options, "seed": self.seed,
            "topic_dtype": str(data["topic"].dtype),
            "gate": None if self.gate is None else self.gate.to_dict(),
        })
        az = require_arviz()
        groups = {g: getattr(self.idata, g) for g in self.idata.groups()
                  if g in ("posterior", "sample_stats", "observed_data")}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out = az.InferenceData(**groups, uncertank_data=ds)
        with atomic_path(p) as tmp:
            out.to_netcdf(str(tmp))
        return p

    @classmethod
    def from_netcdf(cls, path: str | os.PathLike[str]) -> SystemComparison:
        """Read a comparison written by :meth:`to_netcdf`.

        Parameters
        ----------
        path : str or os.PathLike
            The netCDF file.

        Returns
        -------
        SystemComparison
        """
        import pandas as pd

        az = require_arviz()
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"path must be an existing netCDF file; got {str(p)!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = az.from_netcdf(str(p))
        if "uncertank_data" not in idata.groups():
            raise ValueError(f"{str(p)!r} was not written by SystemComparison.to_netcdf (no uncertank_data group)")
        ds = idata["uncertank_data"]
        settings = json.loads(ds.attrs["uncertank_settings"])
        data = pd.DataFrame({name: np.asarray(ds[name].values) for name in ds.data_vars})
        data["system"] = data["system"].astype(str)
        if settings.get("topic_dtype", "").startswith("int"):
            data["topic"] = data["topic"].astype(np.int64)
        else:
            data["topic"] = data["topic"].astype(str)
        gate = settings.get("gate")
        return cls(idata, data, family=settings["family"], sampler=settings["sampler"],
                   timings=settings["timings"], model_options=settings["model_options"],
                   seed=settings["seed"], gate=None if gate is None else Gate(**gate))
