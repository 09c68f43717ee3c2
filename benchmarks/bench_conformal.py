"""Conformal calibration and set construction on a million queries, against the numpy floor of each task.

Data: ``--queries`` queries (default 1,000,000) of 10 candidates, one relevant
candidate per query plus each other relevant with probability 0.1, scores
in [0, 1] correlated with relevance; built once, untimed, as a
``RankedLists`` (the input the procedures read).

Rows, each timed as a pair (ours, then its floor) ``--repeats`` times
alternately; CPU seconds of the process (``time.process_time``), the median
of each, and the median of the paired ratios ours / floor (1.0: as fast as
the floor):

1. split conformal calibration, score threshold: ``split_conformal`` against
   the best relevant score per query (``np.where`` + ``max`` along the rows)
   and one quantile (``np.partition``);
2. candidate sets at that threshold: ``candidate_sets`` against ``scores >= t``;
3. top-k calibration: ``split_conformal(method="topk")`` against one stable
   ``argsort`` along the rows, the rank of the best relevant candidate, and
   one quantile;
4. top-k sets: ``candidate_sets`` against the same ``argsort`` and ``rank < k``;
5. conformal risk control of the miss rate: ``conformal_risk_control``
   against one sort of the relevant scores, a cumulative sum of their
   weights and one ``searchsorted``;
6. the whole call from dense arrays, input checks included:
   ``calibrate_threshold(scores, labels, risk="coverage")`` against row 1's floor.

Every pair is checked to give the same threshold (or ``k``, or sets). Then,
without a floor, the Learn-then-Test calibrations (``fdr_control`` and the
abstention of ``calibrate_threshold(risk="abstain")``) are timed once each.

The script rewrites its own section of benchmarks/RESULTS.md (between
``<!-- begin: bench_conformal -->`` and ``<!-- end: bench_conformal -->``).

Usage::

    python benchmarks/bench_conformal.py              # 1e6 queries x 10
    python benchmarks/bench_conformal.py --quick      # 1e5 queries x 10
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _results import markdown_table, paired, write_section

HERE = Path(__file__).resolve().parent
NAME = "bench_conformal"
N_CAND = 10
ALPHA = 0.1


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random((n, N_CAND)) < 0.1).astype(np.int64)
    y[np.arange(n), rng.integers(0, N_CAND, n)] = 1
    s = 0.6 * rng.random((n, N_CAND)) + 0.4 * y * rng.random((n, 1))
    return s, y


def run(args: argparse.Namespace) -> str:
    from uncertank import RankedLists
    from uncertank.conformal import (
        calibrate_threshold,
        candidate_sets,
        conformal_rank,
        conformal_risk_control,
        fdr_control,
        split_conformal,
    )

    s2, y2 = make_data(args.queries)
    lists = RankedLists.from_dense(s2, y2)
    n = args.queries
    k_rank = conformal_rank(ALPHA, n)
    flat_s = lists.scores
    rows: list[dict[str, Any]] = []

    def record(task: str, floor: str, fa: Callable[[], Any], fb: Callable[[], Any],
               same: Callable[[Any, Any], bool]) -> Any:
        ta, tb, ratio, a, b = paired(fa, fb, args.repeats)
        if not same(a, b):
            raise AssertionError(f"{task}: ours and the floor disagree ({a!r} against {b!r})")
        rows.append({"task": task, "floor": floor, "ours": ta, "floor_s": tb, "ratio": ratio})
        print(f"{task}: {ta:.3f} s against {tb:.3f} s (ratio {ratio:.2f})", file=sys.stderr)
        return a

    def floor_threshold() -> float:
        c = np.where(y2 > 0, s2, -np.inf).max(axis=1)
        return float(np.partition(c, k_rank - 1)[k_rank - 1])

    th = record("split conformal calibration (threshold)", "`where` + row `max` + one `partition`",
                lambda: split_conformal(lists, alpha=ALPHA), floor_threshold,
                lambda a, b: a.threshold == b)
    record("candidate sets at the threshold", "`scores >= t`",
           lambda: candidate_sets(lists, th), lambda: flat_s >= th.threshold,
           lambda a, b: bool(np.array_equal(a.mask, b)))

    def floor_ranks() -> np.ndarray:
        order = np.argsort(-s2, axis=1, kind="stable")
        inv = np.empty_like(order)
        np.put_along_axis(inv, order, np.broadcast_to(np.arange(N_CAND), order.shape), axis=1)
        return inv

    def floor_topk() -> int:
        needed = np.where(y2 > 0, floor_ranks() + 1, N_CAND + 1).min(axis=1)
        return int(-np.partition(-needed, k_rank - 1)[k_rank - 1])

    tk = record("top-k calibration", "one row `argsort` + best relevant rank + one `partition`",
                lambda: split_conformal(lists, alpha=ALPHA, method="topk"), floor_topk,
                lambda a, b: a.k == b)
    record("top-k sets", "one row `argsort` + `rank < k`",
           lambda: candidate_sets(lists, tk), lambda: (floor_ranks() < tk.k).reshape(-1),
           lambda a, b: bool(np.array_equal(a.mask, b)))

    def floor_crc() -> float:
        rel = y2 > 0
        w = np.broadcast_to((1.0 / (n * rel.sum(axis=1)))[:, None], rel.shape)[rel]
        rs = s2[rel]
        order = np.argsort(rs, kind="stable")
        rs, cum = rs[order], np.concatenate(([0.0], np.cumsum(w[order])))
        bound = (ALPHA * (n + 1) - 1) / n
        j = int(np.searchsorted(cum, bound + 1e-12, side="right")) - 1
        # the threshold is the lowest relevant score with that much weight below it (ties: the next value up)
        return float(rs[j]) if j < rs.size else math.inf

    record("conformal risk control (miss rate)", "one sort of the relevant scores + `cumsum` + `searchsorted`",
           lambda: conformal_risk_control(lists, alpha=ALPHA), floor_crc,
           lambda a, b: a.threshold == b)
    record("`calibrate_threshold` from dense arrays (checks included)", "row 1's floor",
           lambda: calibrate_threshold(s2, y2, risk="coverage", alpha=ALPHA), floor_threshold,
           lambda a, b: a.threshold == b)

    t0 = time.process_time()
    fdr = fdr_control(lists, alpha=0.2, delta=0.1)
    t_fdr = time.process_time() - t0
    t0 = time.process_time()
    ab = calibrate_threshold(lists, risk="abstain", alpha=0.2, delta=0.1)
    t_ab = time.process_time() - t0

    import numpy

    load = os.getloadavg()
    table = markdown_table(
        {"task": lambda r: r["task"], "floor": lambda r: r["floor"], "ours (CPU s)": lambda r: f"{r['ours']:.3f}",
         "floor (CPU s)": lambda r: f"{r['floor_s']:.3f}", "ratio": lambda r: f"{r['ratio']:.2f}"},
        rows,
    )
    lines = [
        "## Conformal thresholds: calibration and sets against the numpy floor (`bench_conformal.py`)",
        "",
        f"Measured {_dt.date.today().isoformat()} with `{args.command}` on {platform.machine()}, "
        f"{os.cpu_count()} cores (shared with other jobs; load average {load[0]:.1f}), Python "
        f"{platform.python_version()}, numpy {numpy.__version__}. {n:,} queries x {N_CAND} candidates "
        f"({n * N_CAND:,} pairs), alpha {ALPHA}. CPU seconds of the process (`time.process_time`), median of "
        f"{args.repeats} runs made alternately with the floor; ratio = ours / floor, the median of the "
        "paired ratios (1.0: as fast as the floor). Every pair gives the same threshold, k or sets.",
        "",
        table,
        "",
        f"Learn-then-Test on the same lists, no floor, one run each: `fdr_control` (alpha 0.2, delta 0.1, "
        f"1,001 thresholds) {t_fdr:.2f} CPU s (threshold {fdr.threshold:g}); abstention "
        f"(`calibrate_threshold(risk=\"abstain\")`, alpha 0.2, delta 0.1) {t_ab:.2f} CPU s (threshold "
        f"{ab.threshold:g}).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="100,000 queries")
    ap.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print the section instead of writing it")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries = 100_000
    args.command = ("python benchmarks/bench_conformal.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    args.command = args.command.strip()
    body = run(args)
    print(body)
    if not args.no_write:
        write_section(NAME, body, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
