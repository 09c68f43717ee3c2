"""Fit a family to a comparison frame and read the posterior: :func:`compare`.

The posterior summaries follow Benham, Moffat & Culpepper, "Bayesian System
Inference on Shallow Pools" (ECIR 2021): system effects with 95% credible
intervals, which systems the best (worst) one is credibly distinguishable
from, posterior predictive checks, and URisk computed on posterior
predictive replicates against a baseline system.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from uncertank._io import atomic_path
from uncertank._validation import check_choice, check_positive_int
from uncertank.bayes._deps import require_arviz, require_pymc
from uncertank.bayes.data import check_frame, drop_bottom_systems
from uncertank.bayes.likelihood import zoib_rvs
from uncertank.bayes.models import FAMILIES, model_for
from uncertank.bayes.risk import georisk, loss_weight, urisk, zrisk

if TYPE_CHECKING:
    import arviz as az
    import pandas as pd
    import pymc as pm
    from matplotlib.axes import Axes

__all__ = [
    "SAMPLERS",
    "ConvergenceError",
    "ConvergenceWarning",
    "Diagnostics",
    "SystemComparison",
    "compare",
]

#: The NUTS implementations :func:`compare` can hand sampling to.
SAMPLERS: tuple[str, ...] = ("pymc", "nutpie", "numpyro")

#: Thresholds of :meth:`SystemComparison.diagnostics` (Vehtari et al., Bayesian Analysis 2021).
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100

_DIAG_VARS = ("Intercept", "b_rank", "sd_system", "sd_topic", "r_system", "r_topic",
              "sigma", "phi", "zoi", "coi")


class ConvergenceWarning(UserWarning):
    """The sampler's output fails a convergence check (R-hat, ESS or divergences)."""


class ConvergenceError(RuntimeError):
    """Raised instead of :class:`ConvergenceWarning` under ``strict=True``."""


@dataclass(frozen=True)
class Diagnostics:
    """Convergence checks of a fit.

    Attributes
    ----------
    max_rhat : float
        Largest rank-normalised split R-hat over the checked variables (NaN
        with one chain).
    min_ess_bulk, min_ess_tail : float
        Smallest bulk and tail effective sample sizes.
    n_divergences : int
        Divergent transitions after tuning.
    n_chains, n_draws : int
        Chains and draws per chain.
    worst_rhat, worst_ess : str
        The variable (and coordinate) with the largest R-hat / smallest bulk ESS.
    problems : list of str
        One line per failed check; empty when all pass.
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

    @property
    def ok(self) -> bool:
        """True when every check passes."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``ok`` included)."""
        d = asdict(self)
        d["ok"] = self.ok
        return d


# Compiled nutpie models, keyed by family, options and a digest of the data.
_NUTPIE_CACHE: OrderedDict[str, Any] = OrderedDict()
_NUTPIE_CACHE_SIZE = 8


def _digest(family: str, data: pd.DataFrame, options: dict[str, Any]) -> str:
    h = hashlib.sha256(family.encode())
    h.update(json.dumps(options, sort_keys=True, default=str).encode())
    for col in data.columns:
        h.update(f"\x1e{col}\x1e".encode())
        h.update("\x1f".join(map(str, data[col].tolist())).encode())
    return h.hexdigest()


def _sample(
    model: pm.Model, *, sampler: str, draws: int, tune: int, chains: int, seed: int,
    target_accept: float, cores: int, progressbar: bool, cache_key: str,
) -> tuple[az.InferenceData, dict[str, float | None]]:
    pm = require_pymc()
    if sampler == "nutpie":
        try:
            import nutpie
        except ImportError as exc:
            raise ImportError(f'sampler="nutpie" needs nutpie: pip install nutpie ({exc})') from exc
        t0 = time.perf_counter()
        compiled = _NUTPIE_CACHE.get(cache_key)
        if compiled is None:
            compiled = nutpie.compile_pymc_model(model)
            _NUTPIE_CACHE[cache_key] = compiled
            while len(_NUTPIE_CACHE) > _NUTPIE_CACHE_SIZE:
                _NUTPIE_CACHE.popitem(last=False)
        else:
            _NUTPIE_CACHE.move_to_end(cache_key)
        t1 = time.perf_counter()
        idata = nutpie.sample(
            compiled, draws=draws, tune=tune, chains=chains, cores=cores, seed=seed,
            progress_bar=progressbar, target_accept=target_accept,
            low_rank_modified_mass_matrix=True, save_warmup=False,
        )
        t2 = time.perf_counter()
        return idata, {"compile_s": t1 - t0, "sample_s": t2 - t1}
    if sampler == "numpyro":
        try:
            import numpyro  # noqa: F401
        except ImportError as exc:
            raise ImportError(f'sampler="numpyro" needs numpyro and jax: pip install numpyro ({exc})') from exc
    t0 = time.perf_counter()
    kwargs: dict[str, Any] = {}
    if sampler == "numpyro":
        kwargs["nuts_sampler"] = "numpyro"
        kwargs["nuts_sampler_kwargs"] = {"chain_method": "sequential" if cores == 1 else "parallel"}
    with model:
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
            target_accept=target_accept, progressbar=progressbar,
            compute_convergence_checks=False, return_inferencedata=True, **kwargs,
        )
    total = time.perf_counter() - t0
    sampling = idata.posterior.attrs.get("sampling_time")
    sample_s = float(sampling) if sampling is not None else total
    return idata, {"compile_s": max(total - sample_s, 0.0), "sample_s": sample_s}


def compare(
    df: pd.DataFrame,
    *,
    family: Literal["gaussian", "zoib", "zoib_rank"],
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    sampler: Literal["pymc", "nutpie", "numpyro"] = "pymc",
    drop_bottom: float = 0.0,
    target_accept: float = 0.9,
    cores: int | None = None,
    strict: bool = False,
    progressbar: bool = False,
    model_options: dict[str, Any] | None = None,
) -> SystemComparison:
    """Fit a Bayesian hierarchical model of system and topic effects.

    Parameters
    ----------
    df : pandas.DataFrame
        Columns ``system``, ``topic``, ``score`` (plus ``rank`` for
        ``"zoib_rank"``), one row per system and topic (and rank); see
        :func:`~uncertank.bayes.check_frame`. Build it with
        :func:`~uncertank.bayes.frame_from_runs` or
        :func:`~uncertank.bayes.frame_from_trec_covid`.
    family : {"gaussian", "zoib", "zoib_rank"}
        The model (:func:`~uncertank.bayes.gaussian`,
        :func:`~uncertank.bayes.zoib`, :func:`~uncertank.bayes.zoib_rank`).
    draws, tune : int
        Draws kept and tuning steps, per chain.
    chains : int
        Independent chains (at least 2 for R-hat).
    seed : int
        Seed of the sampler.
    sampler : {"pymc", "nutpie", "numpyro"}
        PyMC's own NUTS, nutpie (compiled once per family and data, with its
        low-rank mass-matrix adaptation), or numpyro through PyMC (needs
        ``pip install numpyro``).
    drop_bottom : float
        Fraction of systems, lowest mean score first, to discard before
        fitting (:func:`~uncertank.bayes.drop_bottom_systems`).
    target_accept : float
        NUTS target acceptance rate (the paper's ``adapt_delta`` was 0.9).
    cores : int, optional
        Chains run in parallel; ``min(chains, os.cpu_count())`` by default.
    strict : bool
        Raise :class:`ConvergenceError` instead of warning when the fit
        fails a convergence check.
    progressbar : bool
        Show the sampler's progress.
    model_options : dict, optional
        Extra keyword arguments of the model function (``rank_effect``,
        ``one_inflation``, ``rank_prior_scale`` for ``"zoib_rank"``).

    Returns
    -------
    SystemComparison

    Examples
    --------
    >>> from uncertank.bayes import compare, frame_from_trec_covid
    >>> cmp = compare(frame_from_trec_covid("zoib"), family="zoib", sampler="nutpie")  # doctest: +SKIP
    >>> cmp.system_effects().head(3)  # doctest: +SKIP
    """
    check_choice(family, "family", FAMILIES)
    check_choice(sampler, "sampler", SAMPLERS)
    draws = check_positive_int(draws, "draws")
    tune = check_positive_int(tune, "tune", minimum=0)
    chains = check_positive_int(chains, "chains")
    seed = check_positive_int(seed, "seed", minimum=0)
    if not (isinstance(target_accept, (int, float)) and 0 < target_accept < 1):
        raise ValueError(f"target_accept must lie in (0, 1); got {target_accept!r}")
    n_cores = min(chains, os.cpu_count() or 1) if cores is None else check_positive_int(cores, "cores")
    options = dict(model_options or {})
    if options and family != "zoib_rank":
        raise ValueError(f"model_options apply to family 'zoib_rank' only; got {sorted(options)} "
                         f"for {family!r}")
    data = drop_bottom_systems(check_frame(df, family), drop_bottom)
    model = model_for(family, data, **options)
    t0 = time.perf_counter()
    idata, timings = _sample(
        model, sampler=sampler, draws=draws, tune=tune, chains=chains, seed=int(seed),
        target_accept=float(target_accept), cores=n_cores, progressbar=progressbar,
        cache_key=_digest(family, data, options),
    )
    timings["total_s"] = time.perf_counter() - t0
    cmp = SystemComparison(idata, data, family=family, sampler=sampler, timings=timings,
                           model_options=options, seed=int(seed))
    cmp.diagnostics(strict=strict)
    return cmp


def _quantiles(x: NDArray[np.float64], prob: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    lo, hi = np.quantile(x, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    return lo, hi


def _check_prob(prob: float) -> float:
    if isinstance(prob, bool) or not isinstance(prob, (int, float, np.floating)) or not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1); got {prob!r}")
    return float(prob)


class SystemComparison:
    """A fitted comparison: posterior summaries, checks, risk and plots.

    Built by :func:`compare` (or :meth:`from_netcdf`); not usually by hand.

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

    Attributes
    ----------
    systems, topics : list
        The coords, in model order.
    """

    def __init__(
        self,
        idata: az.InferenceData,
        data: pd.DataFrame,
        *,
        family: str,
        sampler: str,
        timings: dict[str, float | None] | None = None,
        model_options: dict[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        import pandas as pd

        check_choice(family, "family", FAMILIES)
        self.idata = idata
        self.data = data
        self.family = family
        self.sampler = sampler
        self.timings = dict(timings or {})
        self.model_options = dict(model_options or {})
        self.seed = seed
        post: Any = idata["posterior"]
        self.systems: list[Any] = [v.item() if hasattr(v, "item") else v for v in post["system"].values]
        self.topics: list[Any] = [v.item() if hasattr(v, "item") else v for v in post["topic"].values]
        self._s_code = pd.Index([str(s) for s in self.systems]).get_indexer(pd.Index(data["system"].astype(str)))
        self._t_code = pd.Index([str(t) for t in self.topics]).get_indexer(pd.Index(data["topic"].astype(str)))
        if (self._s_code < 0).any() or (self._t_code < 0).any():
            raise ValueError("data holds systems or topics that the posterior has no coords for")
        self._ppc_cache: dict[tuple[int, int], NDArray[np.float64]] = {}
        self._diag: Diagnostics | None = None
        self._warned = False

    def __repr__(self) -> str:
        return (f"SystemComparison(family={self.family!r}, sampler={self.sampler!r}, "
                f"systems={len(self.systems)}, topics={len(self.topics)}, "
                f"draws={self.n_chains}x{self.n_draws})")

    # ------------------------------------------------------------------ posterior access
    @property
    def _posterior(self) -> Any:
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

    # ------------------------------------------------------------------ summaries
    def system_effects(self, *, prob: float = 0.95) -> pd.DataFrame:
        """Posterior mean and equal-tailed credible interval of each system effect.

        Parameters
        ----------
        prob : float
            Mass of the interval (0.95: the 2.5% and 97.5% quantiles, as
            brms's ``posterior_summary`` and the paper's Figure 2).

        Returns
        -------
        pandas.DataFrame
            Columns ``system``, ``mean``, ``median``, ``lower``, ``upper``,
            sorted by ``mean``, best first. Effects are on the link scale:
            score units (gaussian) or log-odds of the Beta mean (zoib,
            zoib_rank).
        """
        import pandas as pd

        prob = _check_prob(prob)
        r = self._flat("r_system")
        lo, hi = _quantiles(r, prob)
        out = pd.DataFrame({
            "system": [str(s) for s in self.systems], "mean": r.mean(axis=0),
            "median": np.median(r, axis=0), "lower": lo, "upper": hi,
        })
        return out.sort_values(["mean", "system"], ascending=[False, True], kind="stable").reset_index(drop=True)

    def _reference(self, reference: str) -> int:
        names = [str(s) for s in self.systems]
        if reference in ("best", "worst"):
            means = self._flat("r_system").mean(axis=0)
            return int(np.argmax(means) if reference == "best" else np.argmin(means))
        if reference not in names:
            raise ValueError(
                f"reference must be 'best', 'worst' or a system name; got {reference!r} "
                f"(systems: {', '.join(sorted(names)[:8])}{', ...' if len(names) > 8 else ''})"
            )
        return names.index(reference)

    def distinguishable(
        self,
        reference: str = "best",
        *,
        method: Literal["interval", "contrast"] = "interval",
        prob: float = 0.95,
    ) -> pd.DataFrame:
        """The systems the reference is credibly better or worse than.

        Parameters
        ----------
        reference : str
            ``"best"`` or ``"worst"`` (highest or lowest posterior mean
            effect) or a system name.
        method : {"interval", "contrast"}
            ``"interval"``: the two systems' ``prob`` credible intervals do
            not overlap (reading the paper's Figure 2). ``"contrast"``: the
            ``prob`` credible interval of the difference of their effects
            excludes 0; this uses the joint posterior and separates more
            pairs.
        prob : float
            Credible mass.

        Returns
        -------
        pandas.DataFrame
            One row per distinguishable system, with columns ``system``,
            ``relation`` (``"better"`` when the reference is better than it,
            ``"worse"`` otherwise), ``diff_mean``, ``diff_lower``,
            ``diff_upper`` (the reference's effect minus the system's) and
            ``p_better`` (posterior probability that the reference's effect
            is larger). ``len()`` of it is the count the paper reports.
        """
        import pandas as pd

        check_choice(method, "method", ("interval", "contrast"))
        prob = _check_prob(prob)
        ref = self._reference(reference)
        r = self._flat("r_system")
        diff = r[:, [ref]] - r
        d_lo, d_hi = _quantiles(diff, prob)
        if method == "interval":
            lo, hi = _quantiles(r, prob)
            better = lo[ref] > hi
            worse = hi[ref] < lo
        else:
            better = d_lo > 0
            worse = d_hi < 0
        better[ref] = worse[ref] = False
        keep = better | worse
        out = pd.DataFrame({
            "system": np.asarray([str(s) for s in self.systems], dtype=object)[keep],
            "relation": np.where(better, "better", "worse")[keep],
            "diff_mean": diff.mean(axis=0)[keep], "diff_lower": d_lo[keep], "diff_upper": d_hi[keep],
            "p_better": (diff > 0).mean(axis=0)[keep],
        })
        return out.sort_values(["diff_mean", "system"], ascending=[False, True], kind="stable").reset_index(drop=True)

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self, *, strict: bool = False) -> Diagnostics:
        """R-hat, bulk and tail ESS, and divergences, checked against the usual thresholds.

        A fit passes when R-hat <= 1.01, bulk and tail ESS >= 100 per chain
        (Vehtari et al., "Rank-normalization, folding, and localization",
        Bayesian Analysis 2021) and no transition diverged. A failure warns
        with :class:`ConvergenceWarning` (once per comparison: :func:`compare`
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
            self._diag = self._compute_diagnostics()
        d = self._diag
        if not d.ok:
            msg = f"{self.family} fit ({self.sampler}) fails convergence checks: " + "; ".join(d.problems)
            if strict:
                raise ConvergenceError(msg)
            if not self._warned:
                self._warned = True
                warnings.warn(msg, ConvergenceWarning, stacklevel=2)
        return d

    def _compute_diagnostics(self) -> Diagnostics:
        az = require_arviz()
        names = [v for v in _DIAG_VARS if self._has(v)]
        post = self._posterior[names]
        n_chains, n_draws = self.n_chains, self.n_draws

        def worst(ds: Any, largest: bool) -> tuple[float, str]:
            best_val, best_name = (-np.inf if largest else np.inf), ""
            for name, da in ds.data_vars.items():
                vals = np.asarray(da.values, dtype=np.float64)
                if vals.size == 0 or np.isnan(vals).all():
                    continue
                i = int(np.nanargmax(vals) if largest else np.nanargmin(vals))
                v = float(vals.ravel()[i])
                if (v > best_val) if largest else (v < best_val):
                    where = np.unravel_index(i, vals.shape) if vals.ndim else ()
                    label = name
                    if vals.ndim:
                        dim = da.dims[0]
                        label = f"{name}[{da[dim].values[where[0]]}]"
                    best_val, best_name = v, label
            return best_val, best_name

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if n_chains >= 2:
                max_rhat, worst_rhat = worst(az.rhat(post), True)
            else:
                max_rhat, worst_rhat = float("nan"), ""
            min_bulk, worst_ess = worst(az.ess(post, method="bulk"), False)
            min_tail, _ = worst(az.ess(post, method="tail"), False)
        div = 0
        if hasattr(self.idata, "sample_stats") and "diverging" in self.idata.sample_stats:
            div = int(np.asarray(self.idata.sample_stats["diverging"].values).sum())
        problems = []
        if n_chains < 2:
            problems.append("R-hat needs at least 2 chains")
        elif not max_rhat <= RHAT_MAX:
            problems.append(f"max R-hat {max_rhat:.3f} > {RHAT_MAX} ({worst_rhat})")
        need = ESS_PER_CHAIN_MIN * n_chains
        if not min_bulk >= need:
            problems.append(f"min bulk ESS {min_bulk:.0f} < {need} ({worst_ess})")
        if not min_tail >= need:
            problems.append(f"min tail ESS {min_tail:.0f} < {need}")
        if div:
            problems.append(f"{div} divergent transitions")
        return Diagnostics(
            max_rhat=float(max_rhat), min_ess_bulk=float(min_bulk), min_ess_tail=float(min_tail),
            n_divergences=div, n_chains=n_chains, n_draws=n_draws, worst_rhat=worst_rhat,
            worst_ess=worst_ess, problems=problems,
        )

    # ------------------------------------------------------------------ posterior predictive
    def _draw_index(self, n_draws: int | None) -> NDArray[np.int64]:
        total = self.n_chains * self.n_draws
        if n_draws is None or n_draws >= total:
            return np.arange(total, dtype=np.int64)
        n = check_positive_int(n_draws, "n_draws")
        return np.unique(np.linspace(0, total - 1, n).round().astype(np.int64))

    def _linear_predictor(self, idx: NDArray[np.int64]) -> NDArray[np.float64]:
        eta = (self._flat("Intercept")[idx, None]
               + self._flat("r_system")[idx][:, self._s_code]
               + self._flat("r_topic")[idx][:, self._t_code])
        if self.family == "zoib_rank":
            rank = self.data["rank"].to_numpy(dtype=np.float64)
            if self.model_options.get("rank_effect", "linear") == "linear":
                eta = eta + self._flat("b_rank")[idx, None] * (rank - rank.mean())[None, :]
            else:
                levels = np.asarray([int(v) for v in self._posterior["rank"].values])
                dummies = (rank[:, None] == levels[None, 1:]).astype(np.float64)
                dummies -= dummies.mean(axis=0)
                eta = eta + self._flat("b_rank")[idx][:, 1:] @ dummies.T
        return eta  # type: ignore[no-any-return]

    def posterior_predictive(self, n_draws: int | None = 1000, *, seed: int | None = None) -> NDArray[np.float64]:
        """Replicated scores drawn from the posterior predictive distribution.

        One replicate per posterior draw: the likelihood's own sampler
        (:func:`~uncertank.bayes.likelihood.zoib_rvs` for the beta families,
        a Normal for the Gaussian) at that draw's parameters. Beta-family
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
        if key in self._ppc_cache:
            return self._ppc_cache[key]
        rng = np.random.default_rng(seed)
        out = np.empty((idx.size, len(self.data)), dtype=np.float64)
        chunk = max(1, 2_000_000 // max(len(self.data), 1))
        for start in range(0, idx.size, chunk):
            sl = idx[start:start + chunk]
            eta = self._linear_predictor(sl)
            if self.family == "gaussian":
                sigma = self._flat("sigma")[sl, None]
                out[start:start + sl.size] = eta + sigma * rng.standard_normal(eta.shape)
            else:
                mu = np.clip(1.0 / (1.0 + np.exp(-eta)), 1e-12, 1 - 1e-12)
                phi = self._flat("phi")[sl, None]
                zoi = self._flat("zoi")[sl, None]
                coi = self._flat("coi")[sl, None] if self._has("coi") else np.zeros_like(zoi)
                out[start:start + sl.size] = zoib_rvs(mu, phi, zoi, coi, rng=rng)
        self._ppc_cache[key] = out
        return out

    def _cells(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Sum ``values`` of shape (k, n_obs) into (k, n_systems, n_topics); NaN for empty cells."""
        from scipy import sparse

        n_s, n_t = len(self.systems), len(self.topics)
        cell = self._s_code * n_t + self._t_code
        a = sparse.csr_matrix((np.ones(cell.size), (np.arange(cell.size), cell)), shape=(cell.size, n_s * n_t))
        sums = np.asarray(a.T @ values.T).T
        counts = np.bincount(cell, minlength=n_s * n_t)
        sums[:, counts == 0] = np.nan
        return sums.reshape(values.shape[0], n_s, n_t)  # type: ignore[no-any-return]

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
        return self._cells(self.data["score"].to_numpy(dtype=np.float64)[None, :])[0]

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
    ) -> pd.DataFrame:
        """URisk of every system against ``baseline`` on posterior predictive replicates.

        For each posterior draw, the replicated per-topic scores of a system
        and of the baseline (:meth:`replicate_matrix`) give one URisk value
        (:func:`~uncertank.bayes.risk.urisk`); the expected a posteriori
        (EAP) value is their mean and the credible interval their
        quantiles, as in Benham et al.'s Figure 3. ZRisk and GeoRisk
        (:func:`~uncertank.bayes.risk.zrisk`, :func:`~uncertank.bayes.risk.georisk`,
        against all systems) are computed on the same replicates; Gaussian
        replicates are clipped to [0, 1] for these two, which need
        non-negative scores.

        Parameters
        ----------
        baseline : str
            The baseline system's name.
        r : float
            Loss weight (``"benham"``, usually 1 or 2) or TREC's alpha
            (``"trec"``).
        convention : {"benham", "trec"}
            ``"benham"``: URisk > 0 means riskier than the baseline;
            ``"trec"``: URisk > 0 means better. See :mod:`uncertank.bayes.risk`.
        prob : float
            Credible mass of the intervals.
        n_draws : int or None
            Posterior draws used (None for all).
        seed : int, optional
            Seed of the replicates; the fit's seed by default.

        Returns
        -------
        pandas.DataFrame
            One row per system other than the baseline: ``system``,
            ``urisk`` (EAP), ``urisk_lower``, ``urisk_upper``,
            ``urisk_observed`` (on the data), ``p_risky`` (posterior
            probability of doing worse than the baseline in URisk terms),
            ``zrisk``, ``zrisk_lower``, ``zrisk_upper``, ``georisk``,
            ``georisk_lower``, ``georisk_upper``; sorted from least to most
            risky.
        """
        import pandas as pd

        prob = _check_prob(prob)
        loss_weight(r, convention)
        names = [str(x) for x in self.systems]
        if baseline not in names:
            raise ValueError(
                f"baseline must be one of the compared systems; got {baseline!r} "
                f"(systems: {', '.join(sorted(names)[:8])}{', ...' if len(names) > 8 else ''})"
            )
        b = names.index(baseline)
        rep = self.replicate_matrix(n_draws, seed=seed)  # (D, S, T)
        obs = self.observed_matrix()
        u = urisk(rep, rep[:, [b], :], r=r, convention=convention)  # (D, S)
        u_obs = urisk(obs, obs[[b], :], r=r, convention=convention)
        lo, hi = _quantiles(u, prob)
        risky = (u > 0) if convention == "benham" else (u < 0)
        rows: dict[str, Any] = {
            "system": [str(s) for s in self.systems], "urisk": u.mean(axis=0),
            "urisk_lower": lo, "urisk_upper": hi, "urisk_observed": u_obs, "p_risky": risky.mean(axis=0),
        }
        complete = not np.isnan(obs).any()
        if complete:
            mat = np.clip(rep, 0.0, 1.0) if self.family == "gaussian" else rep
            for name, fn in (("zrisk", zrisk), ("georisk", georisk)):
                vals = fn(mat, r=r, convention=convention)
                v_lo, v_hi = _quantiles(vals, prob)
                rows[name], rows[f"{name}_lower"], rows[f"{name}_upper"] = vals.mean(axis=0), v_lo, v_hi
        else:
            for name in ("zrisk", "georisk"):
                for suffix in ("", "_lower", "_upper"):
                    rows[name + suffix] = np.full(len(self.systems), np.nan)
        out = pd.DataFrame(rows).drop(index=b)
        ascending = convention == "benham"
        return out.sort_values(["urisk", "system"], ascending=[ascending, True], kind="stable").reset_index(drop=True)

    # ------------------------------------------------------------------ plots
    def plot_effects(
        self, *, top: int | None = None, bottom: int | None = None, prob: float = 0.95, ax: Axes | None = None
    ) -> Axes:
        """Forest plot of the system effects with their credible intervals (the paper's Figure 2).

        Parameters
        ----------
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
        plt = _pyplot()
        eff = self.system_effects(prob=prob)
        if top is not None or bottom is not None:
            n = len(eff)
            t = check_positive_int(top, "top", minimum=0) if top is not None else 0
            bo = check_positive_int(bottom, "bottom", minimum=0) if bottom is not None else 0
            keep = sorted(set(range(min(t, n))) | set(range(max(n - bo, 0), n)))
            eff = eff.iloc[keep]
        if ax is None:
            _, ax = plt.subplots(figsize=(5.0, 0.6 + 0.18 * len(eff)))
        y = np.arange(len(eff))[::-1]
        ax.errorbar(eff["mean"], y, xerr=[eff["mean"] - eff["lower"], eff["upper"] - eff["mean"]],
                    fmt="o", ms=3, color="black", ecolor="0.4", elinewidth=1, capsize=2)
        ax.axvline(0.0, color="#7570b3", lw=1)
        ax.set_yticks(y)
        ax.set_yticklabels(eff["system"], fontsize=7)
        scale = "score" if self.family == "gaussian" else "log-odds"
        ax.set_xlabel(f"system effect ({scale}), mean and {prob:.0%} interval")
        ax.set_title(f"{self.family}: {len(self.systems)} systems", fontsize=9)
        return ax

    def plot_ppc(
        self, n_replicates: int = 100, *, seed: int | None = None, ax: Axes | None = None
    ) -> Axes:
        """Densities of replicated scores over the observed one (the tops of the paper's Figure 1).

        Kernel density estimates, as bayesplot's ``ppc_dens_overlay``. When
        the data and every replicate lie in [0, 1] the densities are drawn on
        [0, 1]; otherwise the range outside is shaded and the title gives
        the share of replicated scores that fall there.

        Parameters
        ----------
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
        from scipy.stats import gaussian_kde

        plt = _pyplot()
        n_replicates = check_positive_int(n_replicates, "n_replicates")
        rep = self.posterior_predictive(n_replicates, seed=seed)
        y = self.data["score"].to_numpy(dtype=np.float64)
        outside = float(((rep < 0) | (rep > 1)).mean())
        if outside == 0.0 and 0.0 <= y.min() and y.max() <= 1.0:
            grid = np.linspace(0.0, 1.0, 256)  # bounded family: draw the densities on [0, 1] only
        else:
            lo = min(float(y.min()), float(np.quantile(rep, 0.001)))
            hi = max(float(y.max()), float(np.quantile(rep, 0.999)))
            pad = 0.05 * (hi - lo)
            grid = np.linspace(lo - pad, hi + pad, 256)
        if ax is None:
            _, ax = plt.subplots(figsize=(5.0, 2.4))
        for row in rep:
            ax.plot(grid, gaussian_kde(row)(grid), color="#9ecae1", lw=0.5, alpha=0.5)
        ax.plot(grid, gaussian_kde(y)(grid), color="#08306b", lw=1.8, label="observed")
        ax.plot([], [], color="#9ecae1", lw=1, label=f"{rep.shape[0]} replicates")
        if grid[0] < 0.0:
            ax.axvspan(grid[0], 0.0, color="0.92", zorder=0)
        if grid[-1] > 1.0:
            ax.axvspan(1.0, grid[-1], color="0.92", zorder=0)
        ax.set_xlim(grid[0], grid[-1])
        title = f"posterior predictive check: {self.family}"
        if outside > 0:
            title += f" ({outside:.1%} of replicated scores outside [0, 1])"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("score" if self.family != "zoib_rank" else "per-rank gain")
        ax.set_ylabel("density")
        ax.legend(fontsize=7, frameon=False)
        return ax

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
            The path written. :meth:`from_netcdf` reads it back.
        """
        import xarray as xr

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
        return cls(idata, data, family=settings["family"], sampler=settings["sampler"],
                   timings=settings["timings"], model_options=settings["model_options"],
                   seed=settings["seed"])


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f'plots need matplotlib: pip install "uncertank[plot]" ({exc})') from exc
    return plt
