"""Fit time and ESS per second of the Bayesian comparison models, sampler by sampler.

Fits each family (gaussian, zoib, zoib_rank) on the bundled TREC-COVID round 1
data in the paper's setting (42 pooled runs x 30 topics; 8,828 per-rank gains
for zoib_rank) with PyMC's default NUTS, nutpie, and numpyro (through PyMC's
JAX backend) when it is installed, 4 chains x 1000 draws after 1000 tuning
steps, and writes a table to benchmarks/RESULTS.md between the markers of its
own section (other sections are left as they are; the file is replaced
atomically).

Run:  python benchmarks/bench_bayes.py [--families zoib] [--samplers nutpie] [--draws 1000]
"""

from __future__ import annotations

import os

# numpyro runs chains in parallel only over several XLA host devices; set before jax loads.
os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count() or 1}")

import argparse
import importlib.util
import json
import platform
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

NAME = "bench_bayes"
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
FAMILIES = ("gaussian", "zoib", "zoib_rank")
SAMPLERS = ("pymc", "nutpie", "numpyro")


def _versions() -> str:
    import arviz
    import pymc
    import pytensor

    parts = [f"pymc {pymc.__version__}", f"pytensor {pytensor.__version__}", f"arviz {arviz.__version__}"]
    for mod in ("nutpie", "numpyro", "jax"):
        if importlib.util.find_spec(mod) is not None:
            parts.append(f"{mod} {__import__(mod).__version__}")
    return ", ".join(parts)


def run_one(family: str, sampler: str, draws: int, tune: int, chains: int, seed: int) -> dict[str, object]:
    from uncertank.bayes import compare, frame_from_trec_covid

    df = frame_from_trec_covid(family)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare(df, family=family, sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed)
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


def _table(rows: list[dict[str, object]]) -> str:
    head = ("| family | sampler | obs | fit (wall) s | compile s | sampling s | min bulk ESS | "
            "ESS/s (sampling) | ESS/s (wall) | max R-hat | divergences | best / worst distinguishable | "
            "load avg (start, end) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['family']} | {r['sampler']} | {r['n_obs']} | {r['wall_s']:.1f} | {r['compile_s']:.1f} | "
            f"{r['sample_s']:.1f} | {r['min_ess_bulk']:.0f} | {r['ess_per_s_sampling']:.1f} | "
            f"{r['ess_per_s_wall']:.1f} | {r['max_rhat']:.3f} | {r['divergences']} | "
            f"{r['best']} / {r['worst']} | {r['load_avg_1min_at_start']:.1f}, {r['load_avg_1min_at_end']:.1f} |"
        )
    return "\n".join(lines)


def write_section(body: str, path: Path = RESULTS) -> None:
    """Replace this script's section of RESULTS.md (or append it), atomically."""
    begin, end = f"<!-- begin: {NAME} -->", f"<!-- end: {NAME} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.S)
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old.rstrip() + "\n\n" + block + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    ap.add_argument("--samplers", nargs="+", choices=SAMPLERS, default=list(SAMPLERS))
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="Also write the raw rows here.")
    ap.add_argument("--no-write", action="store_true", help="Print only; leave RESULTS.md alone.")
    args = ap.parse_args(argv)

    samplers = [s for s in args.samplers if s != "numpyro" or importlib.util.find_spec("numpyro") is not None]
    skipped = sorted(set(args.samplers) - set(samplers))
    rows = []
    for family in args.families:
        for sampler in samplers:
            print(f"{family} / {sampler} ...", file=sys.stderr, flush=True)
            row = run_one(family, sampler, args.draws, args.tune, args.chains, args.seed)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    cmd = "python benchmarks/bench_bayes.py " + " ".join(argv if argv is not None else sys.argv[1:])
    zoib_rows = [r for r in rows if r["family"] == "zoib"]
    verdicts = [
        f"- zoib with {r['sampler']}: {r['wall_s']:.0f} s wall, max R-hat {r['max_rhat']:.3f}, "
        f"{r['divergences']} divergences: "
        + ("meets" if r["wall_s"] < 60 and r["max_rhat"] <= 1.01 and r["divergences"] == 0 else "misses")
        + " the target (under 60 s, R-hat <= 1.01, no divergences)"
        for r in zoib_rows
    ]
    body = "\n".join([
        "## Bayesian comparison: fit time and ESS per second (`bench_bayes.py`)",
        "",
        f"Command: `{cmd.strip()}`. Data: bundled TREC-COVID round 1, the paper's 42 pooled runs "
        f"x 30 topics (zoib_rank: per-rank gains). {args.chains} chains x {args.draws} draws after "
        f"{args.tune} tuning steps, seed {args.seed}, target_accept 0.9, chains run on "
        f"{min(args.chains, os.cpu_count() or 1)} cores.",
        f"Machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}; {_versions()}. The machine is shared: the load average beside "
        "each row shows how contended the cores were, and times scale with it.",
        "",
        "\"fit (wall)\" is the whole `compare()` call: model build, compilation (numba for nutpie, "
        "C for PyMC, XLA for numpyro) and sampling. ESS is the smallest bulk ESS over the intercept, "
        "scales, system and topic effects and family parameters; ESS/s divides it by the sampling "
        "time or by the wall time.",
        "",
        _table(rows),
        "",
        *verdicts,
        *([f"- not run: {', '.join(skipped)} (not installed)"] if skipped else []),
    ])
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print(body)
    if not args.no_write:
        write_section(body)


if __name__ == "__main__":
    main()
