"""The Bayesian comparison's gate on TREC-COVID round 1: time to the paper's ESS target, per family.

Benham, Moffat & Culpepper (ECIR 2021) accept a fit when every parameter's
bulk ESS is at least 10,000 with R-hat below 1.01 (their R pipeline, 12 chains
of 12,000 iterations per model, took hours). This script fits each family
(gaussian, zoib, zoib_rank) on the bundled TREC-COVID round 1 data in the
paper's setting (42 pooled runs x 30 topics; 8,828 per-rank gains for
zoib_rank) with ``compare(..., target_ess=10_000, time_budget=...)`` and
records, per family: wall time of the whole ``compare()`` call (model build,
compilation, tuning, sampling until the target), minimum bulk ESS, maximum
R-hat, divergences, draws per chain, and the load average of the shared
machine at start and end. Targets on a 2-core machine: ZOiB under 60 s,
ZOiB-rank under 3 minutes.

``--fixed`` runs the older table instead: a fixed 4 x 1,000 draws per
sampler (PyMC, nutpie, numpyro when installed), with ESS per second.

Each table goes to benchmarks/RESULTS.md between the markers of its own
section (other sections are left as they are; the file is replaced
atomically).

Run:  python benchmarks/bench_bayes.py [--families zoib] [--target-ess 10000] [--time-budget 600]
      python benchmarks/bench_bayes.py --fixed [--samplers nutpie pymc] [--draws 1000]
"""

from __future__ import annotations

import os

# numpyro runs chains in parallel only over several XLA host devices; set before jax loads.
os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count() or 1}")

import argparse
import importlib.util
import json
import platform
import sys
import time
import warnings
from pathlib import Path

from _results import Row, markdown_table, write_section

FAMILIES = ("gaussian", "zoib", "zoib_rank")
SAMPLERS = ("pymc", "nutpie", "numpyro")
#: Wall-time targets of the gate (seconds), on the 2-core development machine.
TARGETS = {"zoib": 60.0, "zoib_rank": 180.0}


def _versions() -> str:
    import arviz
    import pymc
    import pytensor

    parts = [f"pymc {pymc.__version__}", f"pytensor {pytensor.__version__}", f"arviz {arviz.__version__}"]
    for mod in ("nutpie", "numpyro", "jax"):
        if importlib.util.find_spec(mod) is not None:
            parts.append(f"{mod} {__import__(mod).__version__}")
    return ", ".join(parts)


def _machine() -> str:
    return (f"Machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python "
            f"{platform.python_version()}; {_versions()}. The machine is shared: the load average beside "
            "each row shows how contended the cores were, and times scale with it.")


def run_gate(family: str, *, target_ess: float, time_budget: float, tune: int, chains: int, seed: int,
             sampler: str) -> dict[str, object]:
    """One gated fit: ``compare(..., target_ess=, time_budget=)`` timed as a whole."""
    from uncertank.bayes import compare, frame_from_trec_covid

    df = frame_from_trec_covid(family)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare(df, family=family, sampler=sampler, draws=100, tune=tune, chains=chains, seed=seed,  # type: ignore[arg-type]
                      target_ess=target_ess, time_budget=time_budget)
        diag = cmp.diagnostics()
    wall = time.perf_counter() - t0
    gate = cmp.gate
    assert gate is not None
    return {
        "family": family, "sampler": cmp.sampler, "n_obs": len(cmp.data), "n_cells": cmp.design.n_cells,
        "wall_s": wall, "compile_s": float(cmp.timings["compile_s"] or 0.0),
        "sample_s": float(cmp.timings["sample_s"] or 0.0), "draws": cmp.n_draws, "chains": cmp.n_chains,
        "min_ess_bulk": diag.min_ess_bulk, "min_ess_tail": diag.min_ess_tail, "max_rhat": diag.max_rhat,
        "divergences": diag.n_divergences, "met": gate.met, "reason": gate.reason,
        "worst_ess": diag.worst_ess, "best": len(cmp.distinguishable("best")),
        "worst": len(cmp.distinguishable("worst")), "load_avg_1min_at_start": load0,
        "load_avg_1min_at_end": os.getloadavg()[0],
    }


def run_fixed(family: str, sampler: str, draws: int, tune: int, chains: int, seed: int) -> dict[str, object]:
    """One fit with a fixed number of draws (the sampler comparison)."""
    from uncertank.bayes import compare, frame_from_trec_covid

    df = frame_from_trec_covid(family)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare(df, family=family, sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed)  # type: ignore[arg-type]
        diag = cmp.diagnostics()
    wall = time.perf_counter() - t0
    sample_s = float(cmp.timings["sample_s"] or float("nan"))
    return {
        "family": family, "sampler": sampler, "n_obs": len(cmp.data), "wall_s": wall,
        "compile_s": float(cmp.timings["compile_s"] or 0.0), "sample_s": sample_s,
        "min_ess_bulk": diag.min_ess_bulk, "min_ess_tail": diag.min_ess_tail, "max_rhat": diag.max_rhat,
        "divergences": diag.n_divergences, "ess_per_s_sampling": diag.min_ess_bulk / sample_s,
        "ess_per_s_wall": diag.min_ess_bulk / wall, "best": len(cmp.distinguishable("best")),
        "worst": len(cmp.distinguishable("worst")), "load_avg_1min_at_start": load0,
        "load_avg_1min_at_end": os.getloadavg()[0],
    }


def _load(r: Row) -> str:
    return f"{r['load_avg_1min_at_start']:.1f}, {r['load_avg_1min_at_end']:.1f}"


def gate_table(rows: list[dict[str, object]]) -> str:
    """The gate rows as a Markdown table."""
    return markdown_table({
        "family": lambda r: f"{r['family']}",
        "sampler": lambda r: f"{r['sampler']}",
        "obs (cells)": lambda r: f"{r['n_obs']} ({r['n_cells']})",
        "wall s": lambda r: f"{r['wall_s']:.0f}",
        "compile s": lambda r: f"{r['compile_s']:.0f}",
        "sampling s": lambda r: f"{r['sample_s']:.0f}",
        "draws per chain": lambda r: f"{r['chains']} x {r['draws']}",
        "min bulk ESS": lambda r: f"{r['min_ess_bulk']:,.0f}",
        "max R-hat": lambda r: f"{r['max_rhat']:.3f}",
        "divergences": lambda r: f"{r['divergences']}",
        "target met": lambda r: "yes" if r["met"] else "no: " + str(r["reason"]),
        "best / worst distinguishable": lambda r: f"{r['best']} / {r['worst']}",
        "load avg (start, end)": _load,
    }, rows)


def fixed_table(rows: list[dict[str, object]]) -> str:
    """The sampler-comparison rows as a Markdown table."""
    return markdown_table({
        "family": lambda r: f"{r['family']}",
        "sampler": lambda r: f"{r['sampler']}",
        "obs": lambda r: f"{r['n_obs']}",
        "fit (wall) s": lambda r: f"{r['wall_s']:.1f}",
        "compile s": lambda r: f"{r['compile_s']:.1f}",
        "sampling s": lambda r: f"{r['sample_s']:.1f}",
        "min bulk ESS": lambda r: f"{r['min_ess_bulk']:.0f}",
        "ESS/s (sampling)": lambda r: f"{r['ess_per_s_sampling']:.1f}",
        "ESS/s (wall)": lambda r: f"{r['ess_per_s_wall']:.1f}",
        "max R-hat": lambda r: f"{r['max_rhat']:.3f}",
        "divergences": lambda r: f"{r['divergences']}",
        "best / worst distinguishable": lambda r: f"{r['best']} / {r['worst']}",
        "load avg (start, end)": _load,
    }, rows)


def _gate_body(rows: list[dict[str, object]], args: argparse.Namespace, cmd: str) -> str:
    verdicts = []
    for r in rows:
        limit = TARGETS.get(str(r["family"]))
        if limit is None:
            continue
        ok = r["met"] and float(r["wall_s"]) < limit and float(r["max_rhat"]) <= 1.01  # type: ignore[arg-type]
        verdicts.append(f"- {r['family']}: {float(r['wall_s']):.0f} s wall for bulk ESS "  # type: ignore[arg-type]
                        f"{float(r['min_ess_bulk']):,.0f} and R-hat {float(r['max_rhat']):.3f}: "  # type: ignore[arg-type]
                        f"{'meets' if ok else 'misses'} the target (under {limit:.0f} s)")
    return "\n".join([
        "## Bayesian comparison: the paper's ESS gate (`bench_bayes.py`)",
        "",
        f"Command: `{cmd.strip()}`. Data: bundled TREC-COVID round 1, the paper's 42 pooled runs x 30 "
        f"topics (zoib_rank: per-rank gains). `compare(..., target_ess={args.target_ess:g}, "
        f"time_budget={args.time_budget:g})`: {args.chains} chains, {args.tune} tuning steps, then draws "
        "until every reported parameter's bulk ESS reaches the target with R-hat <= 1.01; seed "
        f"{args.seed}, target_accept 0.9.",
        _machine(),
        "",
        "\"wall\" is the whole `compare()` call in one process, families one after the other: model build, "
        "compilation (numba for nutpie), tuning and sampling until the gate. Sufficient statistics per "
        "cell, centred group effects.",
        "",
        gate_table(rows),
        "",
        *verdicts,
    ])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    ap.add_argument("--fixed", action="store_true", help="The fixed-draws sampler comparison instead of the gate.")
    ap.add_argument("--samplers", nargs="+", choices=SAMPLERS, default=None,
                    help="--fixed: samplers to compare (all installed by default); gate: the first one "
                         "(default: nutpie when installed).")
    ap.add_argument("--target-ess", type=float, default=10_000.0)
    ap.add_argument("--time-budget", type=float, default=600.0)
    ap.add_argument("--draws", type=int, default=1000, help="--fixed: draws per chain.")
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="Also write the raw rows here.")
    ap.add_argument("--no-write", action="store_true", help="Print only; leave RESULTS.md alone.")
    args = ap.parse_args(argv)
    cmd = "python benchmarks/bench_bayes.py " + " ".join(argv if argv is not None else sys.argv[1:])

    rows = []
    if args.fixed:
        wanted = args.samplers or list(SAMPLERS)
        samplers = [s for s in wanted if s != "numpyro" or importlib.util.find_spec("numpyro") is not None]
        skipped = sorted(set(wanted) - set(samplers))
        for family in args.families:
            for sampler in samplers:
                print(f"{family} / {sampler} ...", file=sys.stderr, flush=True)
                row = run_fixed(family, sampler, args.draws, args.tune, args.chains, args.seed)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
        body = "\n".join([
            "## Bayesian comparison: fit time and ESS per second, fixed draws (`bench_bayes.py --fixed`)",
            "",
            f"Command: `{cmd.strip()}`. {args.chains} chains x {args.draws} draws after {args.tune} tuning "
            f"steps, seed {args.seed}, target_accept 0.9.",
            _machine(),
            "",
            fixed_table(rows),
            *([f"- not run: {', '.join(skipped)} (not installed)"] if skipped else []),
        ])
        section = "bench_bayes"
    else:
        from uncertank.bayes.fit import default_sampler

        sampler = (args.samplers or [default_sampler()])[0]
        for family in args.families:
            print(f"{family} / {sampler}: until bulk ESS {args.target_ess:g} ...", file=sys.stderr, flush=True)
            row = run_gate(family, target_ess=args.target_ess, time_budget=args.time_budget, tune=args.tune,
                           chains=args.chains, seed=args.seed, sampler=sampler)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
        body = _gate_body(rows, args, cmd)
        section = "bench_bayes_gate"
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print(body)
    if not args.no_write:
        write_section(section, body)


if __name__ == "__main__":
    main()
