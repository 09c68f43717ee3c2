"""The ESS gate's time budget: how far past ``time_budget`` a gated nutpie fit runs.

``compare(..., target_ess=1e9, time_budget=B)`` can never reach its target,
so the budget alone stops it (a target this large once made nutpie
preallocate 50 * 1e9 / chains draws per chain and abort; the test
``tests/bayes/test_cli.py::test_compare_nutpie_huge_target_stops_at_the_budget``
checks that the budget stops the fit, and this script measures how soon).
Per budget it records the gate's own ``elapsed_s``, the wall time of the whole
``compare()`` call (model build and nutpie's compilation included), the draws
kept per chain and the overshoot ``elapsed_s - B``; the target is an overshoot
under 10 s (one look at the trace, at most ``_CHECK_EVERY_S`` = 5 s apart, and
the cancellation). The data are the CLI test's: 4 systems x 12 topics of
scores in [0, 1], gaussian family, 2 chains, 100 tuning steps.

The table goes to benchmarks/RESULTS.md between the markers of its own section.

Run:  python benchmarks/bench_time_budget.py [--budgets 5 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import warnings

import numpy as np
import pandas as pd
from _results import Row, markdown_table, write_section

#: The most seconds a gated fit may run past its budget.
TARGET_OVERSHOOT_S = 10.0


def _frame() -> pd.DataFrame:
    """The CLI test's scores: 4 systems x 12 topics, seeded."""
    rng = np.random.default_rng(0)
    n_sys, n_top = 4, 12
    df = pd.DataFrame({"system": np.repeat([f"s{i}" for i in range(n_sys)], n_top),
                       "topic": np.tile(np.arange(n_top), n_sys)})
    df["score"] = np.clip(rng.beta(2, 2, len(df)) + 0.15 * np.repeat(np.arange(n_sys), n_top), 0, 1)
    return df


def run_budget(budget: float, *, seed: int) -> dict[str, float]:
    """One fit that only the budget can stop, timed as a whole."""
    from uncertank.bayes import compare

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare(_frame(), family="gaussian", sampler="nutpie", draws=20, tune=100, chains=2, seed=seed,
                      target_ess=1e9, time_budget=budget)
    wall = time.perf_counter() - t0
    gate = cmp.gate
    if gate is None or not gate.budget_exhausted:
        raise RuntimeError(f"the fit with time_budget={budget} stopped for another reason: {gate}")
    return {"elapsed": gate.elapsed_s, "wall": wall, "draws": float(gate.draws)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", type=float, nargs="+", default=[5.0, 20.0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import nutpie

    load0 = os.getloadavg()[0]
    rows: list[Row] = []
    for budget in args.budgets:
        runs = [run_budget(budget, seed=seed) for seed in range(args.repeats)]
        elapsed = [r["elapsed"] for r in runs]
        rows.append({"budget": budget, "elapsed": statistics.median(elapsed), "worst": max(elapsed),
                     "wall": statistics.median(r["wall"] for r in runs),
                     "draws": statistics.median(r["draws"] for r in runs)})
        print(f"budget {budget:g} s: elapsed_s {elapsed}, overshoot at worst {max(elapsed) - budget:.2f} s")
    load1 = os.getloadavg()[0]
    table = markdown_table({
        "time_budget (s)": lambda r: f"{r['budget']:g}",
        "gate elapsed_s, median": lambda r: f"{r['elapsed']:.2f}",
        "overshoot, worst (s)": lambda r: f"{r['worst'] - r['budget']:.2f}",
        "target (s)": lambda r: f"< {TARGET_OVERSHOOT_S:g}",
        "met": lambda r: "yes" if r["worst"] - r["budget"] < TARGET_OVERSHOOT_S else "no",
        "compare() wall s, median": lambda r: f"{r['wall']:.2f}",
        "draws per chain kept": lambda r: f"{r['draws']:,.0f}",
    }, rows)
    body = "\n".join([
        "## The ESS gate's time budget (`benchmarks/bench_time_budget.py`)",
        "",
        f"Command: `python benchmarks/bench_time_budget.py --budgets {' '.join(f'{b:g}' for b in args.budgets)} "
        f"--repeats {args.repeats}`",
        "",
        f"`compare(..., sampler=\"nutpie\", target_ess=1e9, time_budget=B)` on 4 systems x 12 topics (gaussian, "
        f"2 chains, 100 tuning steps), {args.repeats} fits per budget. Machine: {os.cpu_count()} cores, "
        f"{platform.machine()}, Python {platform.python_version()}, nutpie {nutpie.__version__}; 1-minute load "
        f"average {load0:.1f} before, {load1:.1f} after, on a machine shared with other jobs.",
        "",
        table,
    ])
    write_section("bench_time_budget", body)


if __name__ == "__main__":
    main()
