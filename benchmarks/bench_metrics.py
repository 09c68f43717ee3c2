"""Speed of uncertank's evaluators side by side with torchmetrics, netcal, ranx and scikit-learn.

Rows (full size; ``--quick`` divides every size by 10):

- ECE (10 equal-width bins, l1) on 10 million (probability, label) pairs;
- the reliability curve (10 bins) on the same pairs;
- R_10@1, MAP, and both together, on one million queries of 10 candidates.

Each cell is the median wall time of ``--repeats`` runs (default 3) of one
call on data already in the library's input format (numpy arrays, torch
tensors, or ranx's numpy run/qrels arrays); building that input is not
timed. ranx's numba kernels are compiled by a warm-up call before timing.
ranx's run must be sorted by score: its own parallel sort
(``ranx.utils.descending_sort_parallel``) is timed with it, as that is part
of going from scores to a ranx evaluation. torchmetrics' retrieval metrics
loop over queries in Python; by default they are timed on 100,000 queries
(one run) and scaled by 10, which the table marks with ``*``.

The script rewrites its own section of benchmarks/RESULTS.md (between
``<!-- begin: bench_metrics -->`` and ``<!-- end: bench_metrics -->``)
atomically, through ``uncertank.files.atomic_write_text``.

Usage::

    python benchmarks/bench_metrics.py            # full sizes, about 3 minutes here
    python benchmarks/bench_metrics.py --quick    # sizes / 10
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import math
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _results import write_section

HERE = Path(__file__).resolve().parent
NAME = "bench_metrics"


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median seconds over ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def exact_ece(p: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    """ECE with every bin sum taken by math.fsum (correctly rounded): the accuracy yardstick."""
    idx = np.minimum((p * n_bins).astype(np.intp), n_bins - 1)
    order = np.argsort(idx, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(idx, minlength=n_bins))])
    total = []
    for b in range(n_bins):
        sel = order[bounds[b]:bounds[b + 1]]
        total.append(abs(math.fsum(p[sel].tolist()) - math.fsum(y[sel].tolist())))
    return math.fsum(total) / p.size


def make_pairs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities skewed towards 0 (as a ranker's), labels slightly miscalibrated."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 3.0, n)
    y = (rng.random(n) < np.minimum(1.0, 1.15 * p)).astype(np.int64)
    return p, y


def make_lists(n_queries: int, n_cand: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One relevant candidate per query, scored a little higher on average."""
    rng = np.random.default_rng(seed)
    s = rng.random((n_queries, n_cand))
    pos = rng.integers(0, n_cand, n_queries)
    s[np.arange(n_queries), pos] += 0.3
    y = np.zeros((n_queries, n_cand), dtype=np.int64)
    y[np.arange(n_queries), pos] = 1
    return s, y, pos


def fmt_s(t: float | None, star: bool = False) -> str:
    if t is None:
        return "n/a"
    return f"{t:.3f}{'*' if star else ''}"


def run(args: argparse.Namespace) -> str:
    import ranx
    import torch
    from netcal.metrics import ECE as NetcalECE
    from ranx.utils import descending_sort_parallel
    from sklearn.calibration import calibration_curve
    from torchmetrics.functional.classification import binary_calibration_error
    from torchmetrics.functional.classification.calibration_error import _binning_bucketize
    from torchmetrics.retrieval import RetrievalHitRate, RetrievalMAP

    from uncertank.metrics import (
        expected_calibration_error,
        mean_average_precision,
        recall_at_k,
        reliability_curve,
    )

    torch.set_num_threads(os.cpu_count() or 1)
    scale = 10 if args.quick else 1
    n_pairs = 10_000_000 // scale
    n_queries = 1_000_000 // scale
    n_tm = min(n_queries, args.torchmetrics_queries // scale)
    tm_factor = n_queries / n_tm
    rep = args.repeats
    rows: list[dict[str, Any]] = []

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    # ------------------------------------------------------------- calibration
    log(f"data: {n_pairs:,} pairs")
    p, y = make_pairs(n_pairs)
    p32 = torch.from_numpy(p.astype(np.float32))
    p64 = torch.from_numpy(p)
    yt = torch.from_numpy(y)
    values: dict[str, float] = {"exact (math.fsum)": exact_ece(p, y, 10)}

    log("ECE")
    t_unc, v = timed(lambda: expected_calibration_error(p, y, n_bins=10), rep)
    values["uncertank"] = v
    t_tm32, v = timed(lambda: float(binary_calibration_error(p32, yt, n_bins=10)), rep)
    values["torchmetrics float32"] = v
    t_tm64, v = timed(lambda: float(binary_calibration_error(p64, yt, n_bins=10)), rep)
    values["torchmetrics float64"] = v
    ece = NetcalECE(bins=10)
    t_nc, v = timed(lambda: float(ece.measure(p, y)), rep)
    values["netcal"] = v
    rows.append({"task": "ECE, 10 bins", "size": f"{n_pairs:,} pairs", "uncertank": t_unc,
                 "torchmetrics": min(t_tm32, t_tm64), "netcal": t_nc, "ranx": None, "sklearn": None,
                 "note": f"torchmetrics float32 {t_tm32:.3f} s, float64 {t_tm64:.3f} s"})

    log("reliability curve")
    t_unc, curve = timed(lambda: reliability_curve(p, y, n_bins=10), rep)
    t_sk, sk = timed(lambda: calibration_curve(y, p, n_bins=10), rep)
    bounds = torch.linspace(0, 1, 11, dtype=torch.float64)
    t_tm, _ = timed(lambda: _binning_bucketize(p64, yt, bounds), rep)
    t_nc, _ = timed(lambda: ece.measure(p, y, return_map=True, return_num_samples=True), rep)
    np.testing.assert_allclose(curve.nonempty().fraction_relevant, sk[0], rtol=1e-9)
    rows.append({"task": "reliability curve, 10 bins", "size": f"{n_pairs:,} pairs", "uncertank": t_unc,
                 "torchmetrics": t_tm, "netcal": t_nc, "ranx": None, "sklearn": t_sk,
                 "note": "torchmetrics: its private `_binning_bucketize` (float64); netcal: "
                         "`ECE.measure(return_map=True, return_num_samples=True)`"})

    # ------------------------------------------------------------- ranking
    log(f"data: {n_queries:,} queries x 10 candidates")
    s, lab, pos = make_lists(n_queries, 10)
    docids = np.broadcast_to(np.arange(10, dtype=np.float64), s.shape)
    run_arr = np.stack([docids, s], axis=2)
    qrels_arr = np.stack([pos.astype(np.float64), np.ones(n_queries)], axis=1)[:, None, :].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log("ranx warm-up (numba compilation, not timed)")
        t0 = time.perf_counter()
        small = descending_sort_parallel(run_arr[:50].copy())
        ranx.evaluate(qrels_arr[:50], small, ["hit_rate@1", "map"])
        compile_s = time.perf_counter() - t0

        def ranx_eval(metrics: list[str]) -> Any:
            sorted_run = descending_sort_parallel(run_arr.copy())
            return ranx.evaluate(qrels_arr, sorted_run, metrics)

        t_copy, _ = timed(lambda: run_arr.copy(), rep)
        log("R_10@1")
        t_unc_r, r_unc = timed(lambda: recall_at_k(s, lab, k=1), rep)
        t_rx_r, r_rx = timed(lambda: ranx_eval(["hit_rate@1"]), rep)
        log("MAP")
        t_unc_m, m_unc = timed(lambda: mean_average_precision(s, lab), rep)
        t_rx_m, m_rx = timed(lambda: ranx_eval(["map"]), rep)
        log("R_10@1 + MAP")
        t_unc_b, _ = timed(lambda: (recall_at_k(s, lab, k=1), mean_average_precision(s, lab)), rep)
        t_rx_b, _ = timed(lambda: ranx_eval(["hit_rate@1", "map"]), rep)
    assert abs(r_unc - float(r_rx)) < 1e-12 and abs(m_unc - float(m_rx)) < 1e-12

    log(f"torchmetrics retrieval on {n_tm:,} queries (one run each)")
    sub = slice(0, n_tm)
    preds = torch.from_numpy(s[sub].ravel())
    target = torch.from_numpy(lab[sub].ravel() > 0)
    index = torch.arange(n_tm).repeat_interleave(10)

    def tm_metric(cls: Any, **kw: Any) -> float:
        m = cls(**kw)
        m.update(preds, target, indexes=index)
        return float(m.compute())

    t_tm_r, r_tm = timed(lambda: tm_metric(RetrievalHitRate, top_k=1), 1)
    t_tm_m, m_tm = timed(lambda: tm_metric(RetrievalMAP), 1)
    assert abs(r_tm - recall_at_k(s[sub], lab[sub], k=1)) < 1e-6
    assert abs(m_tm - mean_average_precision(s[sub], lab[sub])) < 1e-5
    star = tm_factor > 1
    for task, t_unc, t_rx, t_tm in (
        ("R_10@1", t_unc_r, t_rx_r, t_tm_r * tm_factor),
        ("MAP", t_unc_m, t_rx_m, t_tm_m * tm_factor),
        ("R_10@1 + MAP", t_unc_b, t_rx_b, (t_tm_r + t_tm_m) * tm_factor),
    ):
        rows.append({"task": task, "size": f"{n_queries:,} queries x 10", "uncertank": t_unc,
                     "torchmetrics": t_tm, "tm_star": star, "netcal": None, "ranx": t_rx,
                     "sklearn": None, "note": ""})

    # ------------------------------------------------------------- report
    def ver(dist: str) -> str:
        return importlib.metadata.version(dist)

    lines = []
    today = _dt.date.today().isoformat()
    cmd = "python benchmarks/bench_metrics.py" + (" --quick" if args.quick else "")
    lines.append("## Metrics: uncertank against torchmetrics, netcal, ranx and scikit-learn")
    lines.append("")
    lines.append(f"Measured {today} with `{cmd}` on {platform.machine()}, {os.cpu_count()} cores "
                 f"(shared with other jobs), Python {platform.python_version()}, numpy {np.__version__}, "
                 f"torch {ver('torch')} ({torch.get_num_threads()} threads), torchmetrics "
                 f"{ver('torchmetrics')}, netcal {ver('netcal')}, ranx {ver('ranx')} "
                 f"(numba {ver('numba')}, {os.cpu_count()} threads), scikit-learn {ver('scikit-learn')}. "
                 f"Seconds, median "
                 f"of {rep} runs; the last column is the fastest peer's time over uncertank's "
                 "(above 1: uncertank is faster).")
    lines.append("")
    lines.append("| task | size | uncertank | torchmetrics | netcal | ranx | scikit-learn | fastest peer / uncertank |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in rows:
        peers = [t for t in (r["torchmetrics"], r["netcal"], r["ranx"], r["sklearn"]) if t is not None]
        ratio = min(peers) / r["uncertank"]
        lines.append(
            f"| {r['task']} | {r['size']} | {fmt_s(r['uncertank'])} | "
            f"{fmt_s(r['torchmetrics'], r.get('tm_star', False))} | {fmt_s(r['netcal'])} | "
            f"{fmt_s(r['ranx'])} | {fmt_s(r['sklearn'])} | {ratio:.1f}x |"
        )
    lines.append("")
    lines.append("Notes:")
    lines.append("")
    lines.append(f"- ECE: torchmetrics' best of float32 and float64 tensors ({rows[0]['note']}); "
                 "torchmetrics `binary_calibration_error` with its default input validation.")
    lines.append(f"- Reliability curve: scikit-learn `calibration_curve`; {rows[1]['note']}.")
    lines.append(f"- ranx: `ranx.evaluate` on numpy run/qrels arrays (its fastest input), timed together "
                 f"with `descending_sort_parallel` on a copy of the run (the copy alone takes "
                 f"{t_copy:.3f} s); numba compilation excluded by a warm-up call ({compile_s:.1f} s, compiling or "
                 "loading numba's on-disk cache). "
                 "Building ranx `Run`/`Qrels` objects from dicts is much slower and not timed.")
    if star:
        lines.append(f"- `*` torchmetrics `RetrievalHitRate(top_k=1)` / `RetrievalMAP` measured once on "
                     f"{n_tm:,} queries ({t_tm_r:.2f} s, {t_tm_m:.2f} s) and multiplied by "
                     f"{tm_factor:g}: their `compute()` loops over queries in Python, so time grows "
                     "linearly with the number of queries.")
    lines.append("- Every library returned the same R_10@1 and MAP (checked in the script); the "
                 "reliability fractions equal scikit-learn's.")
    lines.append("")
    lines.append(f"ECE values on the {n_pairs:,} pairs (10 bins), and the deviation from the ECE with "
                 "every bin sum taken by `math.fsum`:")
    lines.append("")
    lines.append("| library | ECE | relative deviation |")
    lines.append("|---|---|---|")
    exact = values["exact (math.fsum)"]
    for name, val in values.items():
        lines.append(f"| {name} | {val:.6g} | {abs(val - exact) / exact:.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes divided by 10")
    ap.add_argument("--repeats", type=int, default=3, help="runs per cell (median reported)")
    ap.add_argument("--torchmetrics-queries", type=int, default=100_000,
                    help="queries on which torchmetrics' retrieval metrics are timed (then scaled)")
    ap.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    body = run(args)
    print(body)
    if not args.no_write:
        write_section(NAME, body, args.output)
        print(f"\nwrote section {NAME!r} of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
