"""Fitting: :func:`compare` builds a model, runs NUTS, checks the trace and returns a comparison.

Three NUTS implementations (``sampler``): PyMC's own, nutpie (compiled once
per family and data set and cached for the session), and numpyro through
PyMC. ``"auto"`` (the default) takes nutpie when it is installed.

The ESS gate (``target_ess=``) is the convergence rule of Benham, Moffat &
Culpepper (ECIR 2021): bulk ESS of at least 10,000 with R-hat below 1.01.
With nutpie the chains keep drawing after one tuning phase until the
smallest bulk ESS over the reported parameters reaches the target and the
largest R-hat is at most 1.01 (checked every few seconds on the draws so
far, all chains cut to the same length), or until ``time_budget`` seconds
have passed. With the other samplers each round reruns the chains with more
draws per chain after the same tuning (same seed, so the earlier draws are
repeated), the number of draws extrapolated from the ESS per draw so far.

Whatever the sampler, the trace is validated before anything reads it
(:func:`~uncertank.bayes.diagnostics.validate_trace`), and Ctrl-C during
sampling raises :class:`KeyboardInterrupt` to the caller: nutpie's and
PyMC's habit of returning the partial trace of an interrupted run is
overridden, so that no partial result is ever summarised or written.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
import signal
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, TypeVar

import numpy as np

from uncertank._optional import require, require_pymc
from uncertank.bayes.cells import FAMILIES
from uncertank.bayes.comparison import Gate, SystemComparison
from uncertank.bayes.data import check_frame, drop_bottom_systems
from uncertank.bayes.diagnostics import (
    RHAT_MAX,
    ConvergenceError,
    ConvergenceWarning,
    SamplingError,
    min_bulk_ess_and_max_rhat,
    validate_trace,
)
from uncertank.bayes.models import check_model_options, model_for
from uncertank.validation import check_choice, check_positive_int, check_unit_interval

if TYPE_CHECKING:
    from types import FrameType

    import arviz as az
    import pandas as pd
    import pymc as pm

    from uncertank.progress import Tracker

__all__ = ["SAMPLERS", "compare", "default_sampler"]

#: The NUTS implementations :func:`compare` can hand sampling to (``"auto"`` picks one).
SAMPLERS: tuple[str, ...] = ("pymc", "nutpie", "numpyro")

Sampler = Literal["auto", "pymc", "nutpie", "numpyro"]

#: Least seconds between two ESS checks of a gated nutpie run (a check copies the trace so far; later checks
#: come when the target is predicted, at most a fifth of the time so far after the last).
_CHECK_EVERY_S = 5.0

#: Most float64 values one gated nutpie round may hold (400 MB): nutpie preallocates the draws it is asked for, so
#: a round asks for at most this many (``50 * target_ess / chains`` draws per chain would need 200 GB at 1e9).
_NUTPIE_ROUND_VALUES = 50_000_000

# Compiled nutpie models, keyed by family, options and a digest of the data (handed back to nutpie untouched).
_NUTPIE_CACHE: OrderedDict[str, object] = OrderedDict()
_NUTPIE_CACHE_SIZE = 8

_T = TypeVar("_T")


class _NutpieRun(Protocol):
    """What is used of a background (``blocking=False``) nutpie run."""

    @property
    def is_finished(self) -> object: ...

    def inspect(self) -> az.InferenceData: ...

    def wait(self) -> az.InferenceData: ...

    def cancel(self) -> None: ...


class _Common(TypedDict):
    """The sampler settings every round of :func:`compare` passes on."""

    tune: int
    chains: int
    seed: int
    target_accept: float
    cores: int
    progressbar: bool


def default_sampler() -> str:
    """``"nutpie"`` when nutpie is installed, ``"pymc"`` otherwise."""
    return "nutpie" if importlib.util.find_spec("nutpie") is not None else "pymc"


@dataclass(frozen=True)
class _GateSpec:
    target_ess: float
    time_budget: float | None
    max_draws: int


def _digest(family: str, data: pd.DataFrame, options: Mapping[str, object]) -> str:
    h = hashlib.sha256(family.encode())
    h.update(json.dumps(options, sort_keys=True, default=str).encode())
    for col in data.columns:
        h.update(f"\x1e{col}\x1e".encode())
        h.update("\x1f".join(map(str, data[col].tolist())).encode())
    return h.hexdigest()


@contextlib.contextmanager
def _sigint_seen() -> Iterator[dict[str, bool]]:
    """Record whether SIGINT arrived, whatever the sampler does with the KeyboardInterrupt.

    PyMC catches KeyboardInterrupt and returns the partial trace; nutpie does
    the same in blocking mode. The handler still raises KeyboardInterrupt
    (or calls the handler it replaces), and remembers that it did.
    """
    seen = {"sigint": False}
    _SIGINT_WATCHES.append(seen)
    try:
        with _sigint_handler(seen):
            yield seen
    finally:
        _SIGINT_WATCHES.remove(seen)


#: What the active ``_sigint_seen`` blocks have recorded (innermost last).
_SIGINT_WATCHES: list[dict[str, bool]] = []


def _stop_after_sigint(**_: object) -> None:
    """PyMC's per-draw callback: after Ctrl-C, end every chain still to run at its first draw.

    PyMC swallows KeyboardInterrupt chain by chain, so with sequential chains
    (``cores=1``) a Ctrl-C would end one chain and let the next run to the end.
    """
    if _SIGINT_WATCHES and _SIGINT_WATCHES[-1]["sigint"]:
        raise KeyboardInterrupt


def _draw_callback(track: Tracker, *, stop_on_sigint: bool) -> Callable[..., None]:
    """PyMC's per-draw callback: count draws and divergences for :mod:`uncertank.progress`.

    With ``stop_on_sigint`` (sequential chains) it also ends the chains
    still to run after Ctrl-C (:func:`_stop_after_sigint`).
    """
    divergences = [0]

    def callback(*, draw: object = None, **rest: object) -> None:
        if stop_on_sigint:
            _stop_after_sigint(**rest)
        stats = getattr(draw, "stats", None) or [{}]
        if not getattr(draw, "tuning", True) and bool(stats[0].get("diverging", False)):
            divergences[0] += 1
        track.advance(1, divergences=divergences[0])

    return callback


@contextlib.contextmanager
def _sigint_handler(seen: dict[str, bool]) -> Iterator[None]:
    """Install the SIGINT handler that records into ``seen`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous == signal.SIG_IGN:
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        seen["sigint"] = True
        if callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interruptible(run: Callable[[], _T]) -> _T:
    """Run a sampler; Ctrl-C during it becomes KeyboardInterrupt here, never a partial trace."""
    with _sigint_seen() as seen:
        try:
            out = run()
        except KeyboardInterrupt:
            raise
        except Exception:
            if seen["sigint"]:
                raise KeyboardInterrupt from None  # e.g. an IndexError on an empty interrupted trace
            raise
    if seen["sigint"]:
        raise KeyboardInterrupt
    return out


def _completed_draws(idata: az.InferenceData) -> int:
    """Draws completed by every chain of a (partial) nutpie trace: finite in every variable."""
    post = idata["posterior"]
    if "draw" not in post.dims or post.sizes["draw"] == 0:
        return 0
    done = np.ones((post.sizes["chain"], post.sizes["draw"]), dtype=bool)
    for da in post.data_vars.values():
        vals = np.asarray(da.values, dtype=np.float64)
        done &= np.isfinite(vals.reshape(vals.shape[0], vals.shape[1], -1)).all(axis=2)
    stats = idata["sample_stats"] if "sample_stats" in idata.groups() else None
    if stats is not None and "tuning" in stats:
        done = done & ~np.asarray(stats["tuning"].values, dtype=bool)
    # the length of the finite prefix of each chain
    prefix = np.where(done.all(axis=1), done.shape[1], np.argmin(done, axis=1))
    return int(prefix.min())


def _truncate(idata: az.InferenceData, n: int) -> az.InferenceData:
    """The first ``n`` draws of every chain, in every group with a draw dimension."""
    out = idata.isel(draw=slice(0, n))
    assert out is not None  # None only in place
    return out


def _nutpie(
    model: pm.Model, *, draws: int, tune: int, chains: int, seed: int, target_accept: float, cores: int,
    progressbar: bool, cache_key: str, gate: _GateSpec | None,
) -> tuple[az.InferenceData, dict[str, float | None], Gate | None]:
    nutpie = require("nutpie", "bayes", what='sampler="nutpie"')
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

    def start(n: int) -> _NutpieRun:
        # nutpie starts a chain only when a core frees up: an open-ended (gated) run needs them all at once
        run: _NutpieRun = nutpie.sample(
            compiled, draws=n, tune=tune, chains=chains, cores=cores if gate is None else chains, seed=seed,
            progress_bar=progressbar, target_accept=target_accept, low_rank_modified_mass_matrix=True,
            save_warmup=False, blocking=False,
        )
        return run

    result: Gate | None = None
    if gate is None:
        run = start(draws)
        try:
            _watch(run, draws)
            idata = run.wait()
        except BaseException:
            with contextlib.suppress(Exception):  # the run may be over already; keep the first error
                run.cancel()  # Ctrl-C included: discard the partial trace nutpie would hand back
            raise
    else:
        idata, result = _nutpie_rounds(start, draws=draws, tune=tune, chains=chains, gate=gate, started=t1,
                                       width=_values_per_draw(model))
    t2 = time.perf_counter()
    return idata, {"compile_s": t1 - t0, "sample_s": t2 - t1}, result


#: Seconds between two looks at a background nutpie run's trace for the progress lines (only when someone listens).
_LOOK_EVERY_S = 15.0


def _watch(run: _NutpieRun, draws: int, *, poll: float = 0.5) -> None:
    """While a background nutpie run samples, report its draws and divergences to :mod:`uncertank.progress`.

    With a reporter installed (a study), the trace so far is read every
    :data:`_LOOK_EVERY_S` seconds (a copy: ``run.inspect()``) for the draws
    every chain has completed after tuning and the divergent transitions
    among them, until the run is finished; without one, it returns at once
    (the caller's ``run.wait()`` waits).
    """
    from uncertank.progress import tracker

    with tracker("sampling (nutpie)", total=draws, unit="draws per chain after tuning") as track:
        if track.reporter is None:
            return
        last = -math.inf
        while not _finished(run):
            time.sleep(poll)
            if time.perf_counter() - last >= _LOOK_EVERY_S:
                last = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # ArviZ on a trace with no draws yet
                    look = run.inspect()
                n = _completed_draws(look)
                diverging = 0
                if n > 0 and "sample_stats" in look.groups() and "diverging" in look["sample_stats"]:
                    diverging = int(np.asarray(look["sample_stats"]["diverging"].values, dtype=bool)[:, :n].sum())
                track.advance(max(n - track.done, 0), divergences=diverging)
            else:
                track.advance(0)


def _values_per_draw(model: pm.Model) -> int:
    """About how many values nutpie stores per draw and chain: every variable, constrained and not, and its stats."""
    sizes = [int(np.prod(shape)) for shape in model.eval_rv_shapes().values()]
    return 2 * sum(sizes) + 16


def _round_cap(gate: _GateSpec, *, draws: int, chains: int, width: int) -> int:
    """Most draws per chain of one gated nutpie round: ``max_draws``, and what fits in :data:`_NUTPIE_ROUND_VALUES`."""
    return min(gate.max_draws, max(draws, _NUTPIE_ROUND_VALUES // max(1, chains * width)))


def _nutpie_rounds(
    start: Callable[[int], _NutpieRun], *, draws: int, tune: int, chains: int, gate: _GateSpec, started: float,
    width: int,
) -> tuple[az.InferenceData, Gate]:
    """Gated nutpie: rounds of at most :func:`_round_cap` draws per chain, each watched until the gate decides.

    The first round asks for enough draws to reach the target at an ESS of
    half a draw per draw; a round that finishes short of the target is
    followed by a longer one (same seed and tuning, so its first draws repeat
    the last round's), extrapolated from the ESS per draw so far, while the
    time budget affords it. The budget counts from the first round.
    """
    cap = _round_cap(gate, draws=draws, chains=chains, width=width)
    n = min(cap, max(draws, math.ceil(2 * gate.target_ess / chains)))
    last: _Look | None = None
    checks = 0
    while True:
        t_round = time.perf_counter()
        run = start(n)
        try:
            look = _nutpie_gate(run, draws=draws, gate=gate, started=started)
        except BaseException:
            with contextlib.suppress(Exception):  # the run may be over already; keep the first error
                run.cancel()  # Ctrl-C included: discard the partial trace nutpie would hand back
            raise
        checks += look.checks
        reason = ""
        if look.n == 0:
            if look.finished or last is None:
                raise SamplingError(
                    "the sampler finished without a whole draw after tuning" if look.finished else
                    f"the time budget of {gate.time_budget} s ran out before the first draw after tuning; "
                    "raise time_budget or lower tune"
                )
            look, reason = last, f"time budget of {gate.time_budget:g} s ran out"  # keep the last round's draws
        elif look.met:
            reason = "target reached"
        elif look.out_of_time:
            reason = f"time budget of {gate.time_budget:g} s ran out"
        elif n >= cap:
            reason = f"draw cap reached ({cap} per chain)"
        else:
            ratio = gate.target_ess / look.ess if look.ess > 0 and np.isfinite(look.ess) else 2.0
            nxt = min(cap, max(n + 1, math.ceil(n * min(max(ratio, 1.0), 10.0) * 1.15)))
            if gate.time_budget is not None:
                per_draw = max(time.perf_counter() - t_round, 1e-9) / (n + tune)  # tuning included
                affordable = int((gate.time_budget - (time.perf_counter() - started)) / per_draw) - tune
                if affordable <= n:
                    reason = f"time budget of {gate.time_budget:g} s ran out"
                nxt = min(nxt, affordable)
            last, n = look, nxt
        if reason:
            assert look.idata is not None  # n > 0
            return look.idata, Gate(
                target_ess=gate.target_ess, time_budget=gate.time_budget, met=look.met,
                budget_exhausted=reason.startswith("time budget"), reason=reason, draws=look.n, rounds=checks,
                min_ess_bulk=look.ess, max_rhat=look.rhat, elapsed_s=time.perf_counter() - started,
            )


def _finished(run: _NutpieRun) -> bool:
    """Whether a background nutpie run is done (nutpie raises TimeoutError while it is busy)."""
    try:
        return bool(run.is_finished)
    except TimeoutError:
        return False


def _next_wait(elapsed: float, n: int, ess: float, rate: float, *, draws: int, target: float) -> float:
    """Seconds until the next look: the predicted time to the target, at most a fifth of the time so far."""
    longest = max(_CHECK_EVERY_S, 0.2 * elapsed)
    if rate <= 0 or not np.isfinite(ess) or ess <= 0:
        return longest
    needed = max(draws, n * target / ess) - n  # ESS grows about in proportion to the draws
    return min(longest, max(_CHECK_EVERY_S, 1.02 * needed / rate))


@dataclass(frozen=True)
class _Look:
    """The last look at a gated nutpie round: its draws (cut to whole ones) and the gate's numbers on them."""

    idata: az.InferenceData | None
    n: int
    ess: float
    rhat: float
    met: bool
    finished: bool
    out_of_time: bool
    checks: int


def _nutpie_gate(run: _NutpieRun, *, draws: int, gate: _GateSpec, started: float) -> _Look:
    """Watch a background nutpie run until the target is met, the run finishes or the time budget runs out."""
    checks = 0
    last_check, wait = time.perf_counter(), _CHECK_EVERY_S
    prev_n, prev_t = 0, last_check
    while True:
        now = time.perf_counter()
        elapsed = now - started
        out_of_time = gate.time_budget is not None and elapsed >= gate.time_budget
        finished = _finished(run)
        if finished or out_of_time or now - last_check >= wait:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # ArviZ on a trace with no draws yet
                idata = run.wait() if finished else run.inspect()
            last_check = time.perf_counter()
            checks += 1
            n = _completed_draws(idata)
            ess, rhat = (float("nan"), float("nan"))
            if n >= 4:
                kept = _truncate(idata, n)
                ess, rhat = min_bulk_ess_and_max_rhat(kept)
            single = idata["posterior"].sizes["chain"] < 2
            met = n >= draws and ess >= gate.target_ess and (single or rhat <= RHAT_MAX)
            rate = (n - prev_n) / max(last_check - prev_t, 1e-9) if prev_n > 0 else 0.0  # draws per second
            prev_n, prev_t = n, last_check
            wait = _next_wait(last_check - started, n, ess, rate, draws=draws, target=gate.target_ess)
            if met or finished or out_of_time:
                if not finished:
                    run.cancel()
                return _Look(_truncate(idata, n) if n > 0 else None, n, float(ess), float(rhat), bool(met),
                             bool(finished), bool(out_of_time and not met), checks)
        time.sleep(min(0.05, _CHECK_EVERY_S))


def _pymc(
    model: pm.Model, *, sampler: str, draws: int, tune: int, chains: int, seed: int, target_accept: float,
    cores: int, progressbar: bool,
) -> tuple[az.InferenceData, dict[str, float | None]]:
    pm = require_pymc()
    if sampler == "numpyro":
        try:
            import numpyro  # noqa: F401
        except ImportError as exc:
            raise ImportError(f'sampler="numpyro" needs numpyro and jax: pip install numpyro ({exc})') from exc
    t0 = time.perf_counter()
    kwargs: dict[str, object] = {}
    if sampler == "numpyro":
        kwargs["nuts_sampler"] = "numpyro"
        kwargs["nuts_sampler_kwargs"] = {"chain_method": "sequential" if cores == 1 else "parallel"}
    from uncertank.progress import tracker

    with model, warnings.catch_warnings(), tracker("sampling", total=(tune + draws) * chains,
                                                   unit="draws (all chains, tuning included)") as track:
        if sampler != "numpyro":
            kwargs["callback"] = _draw_callback(track, stop_on_sigint=cores == 1)
        warnings.filterwarnings("ignore", message=".*[Nn]umber of samples is too small.*")
        idata = pm.sample(
            draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
            target_accept=target_accept, progressbar=progressbar,
            compute_convergence_checks=False, return_inferencedata=True, **kwargs,
        )
    total = time.perf_counter() - t0
    sampling = idata.posterior.attrs.get("sampling_time")
    sample_s = float(sampling) if sampling is not None else total
    return idata, {"compile_s": max(total - sample_s, 0.0), "sample_s": sample_s}


def _pymc_gate(
    model: pm.Model, *, sampler: str, draws: int, gate: _GateSpec, started: float, tune: int, chains: int, seed: int,
    target_accept: float, cores: int, progressbar: bool,
) -> tuple[az.InferenceData, dict[str, float | None], Gate]:
    n, rounds = draws, 0
    compile_s = 0.0
    while True:
        t_round = time.perf_counter()
        idata, timings = _interruptible(partial(
            _pymc, model, sampler=sampler, draws=n, tune=tune, chains=chains, seed=seed, target_accept=target_accept,
            cores=cores, progressbar=progressbar))
        validate_trace(idata, chains=chains, draws=n)
        rounds += 1
        compile_s += float(timings["compile_s"] or 0.0)
        round_s = time.perf_counter() - t_round
        ess, rhat = min_bulk_ess_and_max_rhat(idata)
        single = idata["posterior"].sizes["chain"] < 2
        met = ess >= gate.target_ess and (single or rhat <= RHAT_MAX)
        elapsed = time.perf_counter() - started
        reason = ""
        if met:
            reason = "target reached"
        elif n >= gate.max_draws:
            reason = f"draw cap reached ({gate.max_draws} per chain)"
        else:
            ratio = gate.target_ess / ess if ess > 0 and np.isfinite(ess) else 2.0
            nxt = min(gate.max_draws, max(n + 1, math.ceil(n * min(max(ratio, 1.0), 10.0) * 1.15)))
            if gate.time_budget is not None:
                # seconds per draw (tuning included) from the sampling time, compilation excluded
                sampled = float(timings["sample_s"] or round_s)
                per_draw = max(sampled, 1e-9) / (n + tune)
                affordable = int((gate.time_budget - elapsed) / per_draw) - tune
                if affordable <= n:
                    reason = f"time budget of {gate.time_budget:g} s ran out"
                nxt = min(nxt, affordable)
            if not reason:
                n = nxt
                continue
        return idata, {"compile_s": compile_s, "sample_s": elapsed - compile_s}, Gate(
            target_ess=gate.target_ess, time_budget=gate.time_budget, met=bool(met),
            budget_exhausted=reason.startswith("time budget"), reason=reason, draws=n, rounds=rounds,
            min_ess_bulk=float(ess), max_rhat=float(rhat), elapsed_s=elapsed,
        )


def compare(
    df: pd.DataFrame,
    *,
    family: Literal["gaussian", "zoib", "zoib_rank"],
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    sampler: Sampler = "auto",
    drop_bottom: float = 0.0,
    target_accept: float = 0.9,
    cores: int | None = None,
    strict: bool = False,
    progressbar: bool = False,
    model_options: Mapping[str, object] | None = None,
    target_ess: float | None = None,
    time_budget: float | None = None,
    max_draws: int | None = None,
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
        Draws kept and tuning steps, per chain. With ``target_ess``,
        ``draws`` is the least number of draws per chain kept.
    chains : int
        Independent chains (at least 2 for R-hat; with one, R-hat is
        reported as unavailable and the fit flagged).
    seed : int
        Seed of the sampler.
    sampler : {"auto", "pymc", "nutpie", "numpyro"}
        ``"auto"``: nutpie when installed, else PyMC. PyMC's own NUTS,
        nutpie (compiled once per family and data, with its low-rank
        mass-matrix adaptation), or numpyro through PyMC (needs
        ``pip install numpyro``).
    drop_bottom : float
        Fraction of systems, lowest mean score first, to discard before
        fitting (:func:`~uncertank.bayes.drop_bottom_systems`).
    target_accept : float
        NUTS target acceptance rate (the paper's ``adapt_delta`` was 0.9).
    cores : int, optional
        Chains run in parallel; ``min(chains, os.cpu_count())`` by default.
    strict : bool
        Raise :class:`~uncertank.bayes.ConvergenceError` instead of warning
        when the fit fails a convergence check or misses ``target_ess``.
    progressbar : bool
        Show the sampler's progress.
    model_options : dict, optional
        Extra keyword arguments of the model function: ``sufficient``,
        ``centred`` and ``system_effects`` (fixed sum-to-zero effects below
        10 systems by default, :func:`~uncertank.bayes.gaussian`) for every
        family, plus ``rank_effect``,
        ``one_inflation`` and ``rank_prior_scale`` for ``"zoib_rank"``.
    target_ess : float, optional
        Keep sampling until the smallest bulk ESS over the reported
        parameters reaches this (the paper: 10,000) with R-hat <= 1.01.
        None (default): exactly ``draws`` draws per chain.
    time_budget : float, optional
        Seconds of sampling (tuning included, compilation not) allowed to
        reach ``target_ess``; when they run out the draws so far are kept,
        ``SystemComparison.gate.budget_exhausted`` is True and a
        :class:`~uncertank.bayes.ConvergenceWarning` says so.
    max_draws : int, optional
        Most draws per chain with ``target_ess`` (default
        ``max(draws, 50 * target_ess / chains)``).

    Returns
    -------
    SystemComparison

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C during sampling, whatever the sampler; nothing is returned.
    SamplingError
        When the sampler returns a trace that is not whole (draws missing,
        NaN or infinite values).

    Examples
    --------
    >>> from uncertank.bayes import compare, frame_from_trec_covid
    >>> cmp = compare(frame_from_trec_covid("zoib"), family="zoib", target_ess=10_000)  # doctest: +SKIP
    >>> cmp.gate.met, cmp.system_effects().head(3)  # doctest: +SKIP
    """
    check_choice(family, "family", FAMILIES)
    check_choice(sampler, "sampler", ("auto", *SAMPLERS))
    draws = check_positive_int(draws, "draws")
    tune = check_positive_int(tune, "tune", minimum=0)
    chains = check_positive_int(chains, "chains")
    seed = check_positive_int(seed, "seed", minimum=0)
    check_unit_interval(target_accept, "target_accept")
    n_cores = min(chains, os.cpu_count() or 1) if cores is None else check_positive_int(cores, "cores")
    gate = _gate_spec(target_ess, time_budget, max_draws, draws=draws, chains=chains)
    options = check_model_options(family, model_options)
    chosen = default_sampler() if sampler == "auto" else sampler
    data = drop_bottom_systems(check_frame(df, family), drop_bottom)
    model = model_for(family, data, **options)
    t0 = time.perf_counter()
    result: Gate | None = None
    common: _Common = {"tune": tune, "chains": chains, "seed": int(seed), "target_accept": float(target_accept),
                       "cores": n_cores, "progressbar": progressbar}
    if chosen == "nutpie":
        idata, timings, result = _interruptible(lambda: _nutpie(
            model, draws=draws, cache_key=_digest(family, data, options), gate=gate, **common))
        validate_trace(idata, chains=chains, draws=draws if result is None else result.draws)
    elif gate is None:
        idata, timings = _interruptible(lambda: _pymc(model, sampler=chosen, draws=draws, **common))
        validate_trace(idata, chains=chains, draws=draws)
    else:
        idata, timings, result = _pymc_gate(model, sampler=chosen, draws=draws, gate=gate, started=t0, **common)
    timings["total_s"] = time.perf_counter() - t0
    cmp = SystemComparison(idata, data, family=family, sampler=chosen, timings=timings,
                           model_options=options, seed=int(seed), gate=result)
    if result is not None and not result.met:
        msg = (f"{family} fit ({chosen}) missed target_ess={result.target_ess:g}: {result.reason}; "
               f"min bulk ESS {result.min_ess_bulk:.0f}, max R-hat {result.max_rhat:.3f} "
               f"after {result.draws} draws per chain")
        if strict:
            raise ConvergenceError(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    cmp.diagnostics(strict=strict)
    return cmp


def _gate_spec(target_ess: float | None, time_budget: float | None, max_draws: int | None, *, draws: int,
               chains: int) -> _GateSpec | None:
    if target_ess is None:
        for name, value in (("time_budget", time_budget), ("max_draws", max_draws)):
            if value is not None:
                raise ValueError(f"{name} applies with target_ess only; got {name}={value!r} and target_ess=None")
        return None
    if isinstance(target_ess, bool) or not isinstance(target_ess, (int, float)) or not target_ess > 0:
        raise ValueError(f"target_ess must be a number > 0 or None; got {target_ess!r}")
    if time_budget is not None and (isinstance(time_budget, bool) or not isinstance(time_budget, (int, float))
                                    or not time_budget > 0):
        raise ValueError(f"time_budget must be a number of seconds > 0 or None; got {time_budget!r}")
    cap = max(draws, math.ceil(50 * float(target_ess) / chains)) if max_draws is None else \
        check_positive_int(max_draws, "max_draws", minimum=draws)
    return _GateSpec(float(target_ess), None if time_budget is None else float(time_budget), cap)

