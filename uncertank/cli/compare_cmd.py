"""``uncertank compare``: the Bayesian comparison from the command line.

Three sources::

    uncertank compare SCORES.csv            # columns system,topic,score[,rank]
    uncertank compare RUNS_DIR QRELS        # TREC runs and qrels: RBP per topic (or per rank)
    uncertank compare trec-covid-round1     # the bundled data, the paper's 42 pooled runs

The output folder receives ``results.json`` (settings, timings, diagnostics,
distinguishability counts, URisk), ``effects.csv`` (system effects),
``posterior.nc`` (the fit, readable with
:meth:`uncertank.bayes.SystemComparison.from_netcdf`) and, when matplotlib
is installed, ``effects.png`` and ``ppc.png``. Every file is written
atomically. Those five names belong to the command: once a fit has
succeeded, the ones already in the folder (a previous run's) are removed
before the new files are written, so a previous run's figures never sit
beside new results; any other file in the folder is left alone.

A bad input (an unreadable or malformed file, a missing column, an unknown
system, a ``--risk-r`` that gives no finite loss weight >= 0) prints one
line naming it and exits with code 2, before the fit; a fit that fails
``--strict`` or a sampler that fails exits with code 1.

Convergence is a gate. A fit that fails a check (R-hat above 1.01, bulk or
tail ESS under 100 per chain, any divergence) is fitted again with twice
the draws and tuning steps and a target acceptance of 0.95, up to
``--retries`` times (1 by default); if it still fails, no verdict is given:
``results.json`` holds the diagnostics, the system effects (descriptive, not
a verdict) and the refusal, the console names the failed checks and what to
try, and the command exits with code 3. PyMC is imported only when the
command runs.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import click
from typing_extensions import NotRequired, TypedDict

from uncertank.bayes.cells import FAMILIES
from uncertank.cli._input_error import InputError, one_line
from uncertank.files import atomic_write_text, to_jsonable

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.bayes.comparison import SystemComparison

__all__ = ["BUNDLED", "OUTPUTS", "UNCONVERGED_EXIT", "compare_command"]

#: The name that selects the bundled TREC-COVID round 1 data.
BUNDLED = "trec-covid-round1"
#: Exit status of ``uncertank compare`` when the fit fails its convergence checks: no verdict is given.
UNCONVERGED_EXIT = 3
#: The files ``uncertank compare`` writes into its output folder (and removes there before writing anew).
OUTPUTS = ("results.json", "effects.csv", "posterior.nc", "effects.png", "ppc.png")
_SAMPLERS = ("auto", "pymc", "nutpie", "numpyro")


class _Distinguishable(TypedDict):
    """The systems credibly different from the best (or the worst), by intervals and by contrasts."""

    system: str
    interval: int
    interval_systems: list[str]
    contrast: int
    contrast_systems: list[str]


class _Summary(TypedDict):
    """``results.json`` of ``uncertank compare`` (:func:`summarise`, then the command's source and settings)."""

    family: str
    sampler: str
    n_systems: int
    n_topics: int
    n_obs: int
    chains: int
    draws: int
    timings: dict[str, float | None]
    diagnostics: dict[str, object]
    gate: dict[str, object] | None
    verdict: str | None
    distinguishable: dict[str, _Distinguishable] | None
    effects: list[dict[str, object]]
    urisk: NotRequired[dict[str, object]]
    source: NotRequired[str]
    settings: NotRequired[dict[str, object]]


def _one_line(exc: BaseException) -> str:
    """The message on one line, without the ``df`` that the Python API's messages name their argument by."""
    return one_line(exc).removeprefix("df ")


def _load_source(
    source: str, qrels: str | None, *, family: str, all_systems: bool, phi: float, depth: int | None, gain: str
) -> tuple[pd.DataFrame, str]:
    import pandas as pd

    from uncertank.bayes.data import check_frame, frame_from_runs, frame_from_trec_covid

    path = Path(source)
    if source == BUNDLED and not path.exists():
        if qrels is not None:
            raise click.UsageError(f"{BUNDLED} takes no QRELS argument")
        return frame_from_trec_covid(family, pooled_only=not all_systems), BUNDLED
    if not path.exists():
        raise InputError(f"SOURCE {source!r} is neither an existing file or folder nor {BUNDLED!r}")
    if all_systems:
        raise click.UsageError(f"--all-systems applies to {BUNDLED} only")
    if qrels is None:
        if path.is_dir():
            raise click.UsageError("a folder of runs needs a QRELS argument")
        try:
            df = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
            raise InputError(f"{source}: cannot read it as CSV: {_one_line(exc)}") from None
        try:
            return check_frame(df, family), str(path)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{source}: {_one_line(exc)}") from None
    if not Path(qrels).is_file():
        raise InputError(f"QRELS {qrels!r} is not a file")
    per_rank = family == "zoib_rank"
    if per_rank and depth is None:
        raise click.UsageError("--family zoib_rank on runs needs --depth (the pool depth)")
    try:
        df = frame_from_runs(path, qrels, phi=phi, per_rank=per_rank, depth=depth, gain=gain)  # type: ignore[arg-type]
    except (ValueError, TypeError, OSError) as exc:  # the message names the file (and the line) at fault
        raise InputError(_one_line(exc)) from None
    return df, f"{path} + {qrels}"


def summarise(cmp: SystemComparison, *, baseline: str | None, risk_r: tuple[float, ...],
              convention: str) -> _Summary:
    """The JSON-ready summary that ``results.json`` holds.

    Parameters
    ----------
    cmp : SystemComparison
        A fitted comparison.
    baseline : str, optional
        URisk baseline; no URisk without it.
    risk_r : tuple of float
        The loss weights (or TREC alphas) URisk is computed for.
    convention : {"benham", "trec"}
        URisk convention.

    Returns
    -------
    dict
        With ``"verdict"``: None when the fit passes its convergence
        checks; otherwise the refusal, and ``distinguishable`` and
        ``urisk`` are None.
    """
    from uncertank.bayes.diagnostics import ConvergenceError

    distinguishable: dict[str, dict[str, object]] | None = {}
    effects = cmp.system_effects()
    refusal: str | None = None
    try:
        cmp.check_converged("verdict")
    except ConvergenceError as exc:
        refusal = _one_line(exc)
    for ref in ("best", "worst") if refusal is None else ():
        assert distinguishable is not None
        entry: dict[str, object] = {"system": effects["system"].iloc[0 if ref == "best" else -1]}
        for method in ("interval", "contrast"):
            d = cmp.distinguishable(ref, method=method)
            entry[method] = len(d)
            entry[f"{method}_systems"] = d["system"].tolist()
        distinguishable[ref] = entry
    if refusal is not None:
        distinguishable = None
    out: dict[str, object] = {
        "family": cmp.family, "sampler": cmp.sampler, "n_systems": len(cmp.systems),
        "n_topics": len(cmp.topics), "n_obs": len(cmp.data), "chains": cmp.n_chains,
        "draws": cmp.n_draws, "timings": cmp.timings, "diagnostics": cmp.diagnostics().to_dict(),
        "gate": None if cmp.gate is None else cmp.gate.to_dict(),
        "verdict": refusal,
        "distinguishable": distinguishable,
        "effects": effects.to_dict(orient="records"),
    }
    if baseline is not None and refusal is None:
        out["urisk"] = {
            "baseline": baseline, "convention": convention,
            "tables": {f"r={r:g}": cmp.urisk(baseline, r=r, convention=convention).to_dict(orient="records")  # type: ignore[arg-type]
                       for r in risk_r},
        }
    summary: _Summary = to_jsonable(out)  # plain JSON values, of the keys typed by _Summary
    return summary


@click.command("compare")
@click.argument("source")
@click.argument("qrels", required=False)
@click.option("--family", type=click.Choice(FAMILIES), default="zoib", show_default=True,
              help="Model: Gaussian, zero-one-inflated beta, or per-rank ZOiB.")
@click.option("--draws", type=click.IntRange(min=1), default=1000, show_default=True, help="Draws per chain.")
@click.option("--tune", type=click.IntRange(min=0), default=1000, show_default=True, help="Tuning steps per chain.")
@click.option("--chains", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--sampler", type=click.Choice(_SAMPLERS), default="auto", show_default=True,
              help="NUTS implementation; auto: nutpie when installed (faster), else pymc.")
@click.option("--target-ess", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Keep sampling until every parameter's bulk ESS reaches this with R-hat <= 1.01 "
                   "(the paper: 10000).")
@click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds of sampling allowed to reach --target-ess.")
@click.option("--drop-bottom", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0, show_default=True,
              help="Fraction of systems, lowest mean score first, discarded before fitting.")
@click.option("--baseline", default=None,
              help="URisk baseline system (default for trec-covid-round1: bm25_baseline).")
@click.option("--risk-r", "risk_r", type=float, multiple=True, default=(1.0, 2.0), show_default=True,
              help="URisk loss weight r (repeatable).")
@click.option("--convention", type=click.Choice(["benham", "trec"]), default="benham", show_default=True,
              help="URisk sign and weight convention.")
@click.option("--phi", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True), default=0.8,
              show_default=True, help="RBP persistence (runs only).")
@click.option("--depth", type=click.IntRange(min=1), default=None,
              help="Evaluation depth for runs (required with --family zoib_rank).")
@click.option("--gain", type=click.Choice(["graded", "binary"]), default="graded", show_default=True,
              help="Gain of a judged document (runs only).")
@click.option("--all-systems", is_flag=True, help="trec-covid-round1: all 107 runs, not just the 42 pooled.")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=Path("compare-results"),
              show_default=True, help="Output folder.")
@click.option("--strict", is_flag=True, help="Fail when the fit misses a convergence threshold.")
@click.option("--retries", type=click.IntRange(min=0), default=1, show_default=True,
              help="Fits again, each with twice the draws and tuning and target acceptance 0.95, "
                   "while the fit fails its convergence checks; then no verdict (exit 3).")
@click.option("--plots/--no-plots", default=True, show_default=True, help="Write effects.png and ppc.png.")
@click.option("--progress/--no-progress", default=False, show_default=True, help="Show the sampler's progress.")
def compare_command(
    source: str, qrels: str | None, family: str, draws: int, tune: int, chains: int, seed: int, sampler: str,
    target_ess: float | None, time_budget: float | None, drop_bottom: float, baseline: str | None,
    risk_r: tuple[float, ...], convention: str, phi: float,
    depth: int | None, gain: str, all_systems: bool, output: Path, strict: bool, retries: int, plots: bool,
    progress: bool,
) -> None:
    """Compare systems with a Bayesian hierarchical model (Benham, Moffat & Culpepper, ECIR 2021).

    SOURCE is a CSV with columns system,topic,score (and rank for zoib_rank),
    a folder of TREC run files (then QRELS is required), or trec-covid-round1
    for the bundled TREC-COVID round 1 data.
    """
    from uncertank.bayes.diagnostics import ConvergenceError, ConvergenceWarning, SamplingError
    from uncertank.bayes.fit import compare, default_sampler
    from uncertank.bayes.risk_measures import loss_weight
    from uncertank.datasets.trec_covid import TREC_COVID_ROUND1_BM25_BASELINE

    for r in risk_r:  # URisk is computed after the fit: its weights are checked before it
        try:
            loss_weight(r, convention)  # type: ignore[arg-type]
        except (ValueError, TypeError) as exc:
            raise click.BadParameter(_one_line(exc), param_hint="'--risk-r'") from None
    if time_budget is not None and target_ess is None:
        raise click.UsageError("--time-budget applies with --target-ess only")
    df, label = _load_source(source, qrels, family=family, all_systems=all_systems, phi=phi, depth=depth,
                             gain=gain)
    if baseline is None and label == BUNDLED:
        baseline = TREC_COVID_ROUND1_BM25_BASELINE
    if baseline is not None and baseline not in set(df["system"].astype(str)):
        raise InputError(f"--baseline: {baseline!r} is not a system of {label}")
    chosen = default_sampler() if sampler == "auto" else sampler
    gate = "" if target_ess is None else f", until bulk ESS {target_ess:g}"
    click.echo(f"fitting {family} on {label}: {df['system'].nunique()} systems, "
               f"{df['topic'].nunique()} topics, {len(df)} rows ({chosen}, {chains}x{draws}{gate})", err=True)
    attempt_draws, attempt_tune, accept = draws, tune, 0.9
    for attempt in range(retries + 1):
        try:
            # Ctrl-C raises KeyboardInterrupt out of compare() whatever the sampler: nothing below runs
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)  # the gate below reports the checks
                cmp = compare(df, family=family, draws=attempt_draws, tune=attempt_tune,  # type: ignore[arg-type]
                              chains=chains, seed=seed, sampler=chosen,  # type: ignore[arg-type]
                              drop_bottom=drop_bottom, strict=strict, progressbar=progress, target_accept=accept,
                              target_ess=target_ess, time_budget=time_budget)
        except (ConvergenceError, SamplingError) as exc:  # the input was fine; the fit was not
            raise click.ClickException(_one_line(exc)) from None
        except (ValueError, TypeError) as exc:
            raise InputError(f"{label}: {_one_line(exc)}") from None
        if cmp.converged or attempt == retries:
            break
        attempt_draws, attempt_tune, accept = 2 * attempt_draws, 2 * attempt_tune, 0.95
        click.echo(f"the fit fails its convergence checks ({cmp.diagnostics().summary()}); fitting again with "
                   f"{attempt_draws} draws and {attempt_tune} tuning steps per chain, target acceptance {accept}",
                   err=True)
    if baseline is not None and baseline not in [str(s) for s in cmp.systems]:
        click.echo(f"baseline {baseline!r} was dropped by --drop-bottom; no URisk", err=True)
        baseline = None
    removed = _clear_outputs(output)
    if removed:
        click.echo(f"removed {', '.join(removed)} of a previous run from {output}", err=True)
    results = summarise(cmp, baseline=baseline, risk_r=tuple(risk_r), convention=convention)
    results["source"] = label
    results["settings"] = {"tune": attempt_tune, "seed": seed, "drop_bottom": drop_bottom, "phi": phi,
                           "depth": depth, "gain": gain, "all_systems": all_systems, "target_ess": target_ess,
                           "time_budget": time_budget, "target_accept": accept, "fits": attempt + 1}
    atomic_write_text(output / "results.json", json.dumps(results, indent=2) + "\n")
    atomic_write_text(output / "effects.csv", cmp.system_effects().to_csv(index=False))
    cmp.to_netcdf(output / "posterior.nc")
    written = ["results.json", "effects.csv", "posterior.nc"]
    if plots:
        written += _write_plots(cmp, output)
    d = results["distinguishable"]
    if results["verdict"] is not None or d is None:  # no verdict: distinguishable is None
        click.echo(f"{cmp.diagnostics().summary()}; wrote {', '.join(written)} to {output}", err=True)
        click.echo(f"Error: {results['verdict']}", err=True)
        raise SystemExit(UNCONVERGED_EXIT)
    click.echo(
        f"best {d['best']['system']}: distinguishable from {d['best']['interval']} systems "
        f"(intervals), {d['best']['contrast']} (contrasts); worst {d['worst']['system']}: "
        f"{d['worst']['interval']} and {d['worst']['contrast']}"
    )
    if cmp.gate is not None:
        click.echo(f"ESS gate: {cmp.gate.reason} after {cmp.gate.draws} draws per chain")
    click.echo(f"{cmp.diagnostics().summary()}; wrote {', '.join(written)} to {output}")


def _clear_outputs(output: Path) -> list[str]:
    """Create ``output`` and remove the files of :data:`OUTPUTS` a previous run left there; return their names."""
    try:
        output.mkdir(parents=True, exist_ok=True)
        removed = []
        for name in OUTPUTS:
            if (output / name).is_file():
                (output / name).unlink()
                removed.append(name)
    except OSError as exc:
        raise InputError(f"--output {output}: {_one_line(exc)}") from None
    return removed


def _write_plots(cmp: SystemComparison, output: Path) -> list[str]:
    try:
        import matplotlib
    except ImportError:
        click.echo('matplotlib is missing (pip install "uncertank[plot]"): no plots', err=True)
        return []
    matplotlib.use("Agg")
    cmp.write_effects_figure(output / "effects.png")
    cmp.write_ppc_figure(output / "ppc.png")
    return ["effects.png", "ppc.png"]


if __name__ == "__main__":  # pragma: no cover - ``python -m uncertank.cli.compare_cmd``
    compare_command()
