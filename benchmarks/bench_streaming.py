"""Streaming accumulators against the in-memory metrics, and a constant-memory run over many pairs.

Rows:

1. Throughput, side by side in one run: every metric on ``--pairs-memory``
   pairs (lists of 10 candidates) at once with the in-memory function, and
   the same pairs fed in chunks of ``--chunk`` pairs to the streaming
   accumulator (``update`` per chunk, then ``compute``). Median of
   ``--repeats`` runs each; the ratio is the streaming throughput over the
   in-memory one (1.0: as fast). The values are checked equal (rtol 1e-12).
2. The Parquet reader: the same pairs written to a Parquet file, streamed
   back with ``read_scored_pairs`` into the accumulators of all metrics in
   one pass, against all the in-memory functions on the arrays.
3. Constant memory: ``--pairs-stream`` simulated pairs (default 1e9), made
   chunk by chunk from a seeded generator (lists of 10 candidates, one
   relevant, probabilities correlated with relevance) and fed to the
   accumulators of ECE, MCE, Brier, NLL, the reliability curve, R@1 and MAP.
   The peak resident set size (``VmHWM``) is read before the
   first chunk, after 1% of the chunks, and at the end; the time to
   simulate the chunks is measured apart and reported.

The script rewrites its own section of benchmarks/RESULTS.md (between
``<!-- begin: bench_streaming -->`` and ``<!-- end: bench_streaming -->``).

Usage::

    nice -n 10 python benchmarks/bench_streaming.py              # 1e9 pairs streamed
    python benchmarks/bench_streaming.py --quick                 # small sizes, seconds
    python benchmarks/bench_streaming.py --pairs-stream 100000000
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import resource
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _results import paired, write_section

HERE = Path(__file__).resolve().parent
NAME = "bench_streaming"
N_CAND = 10

METRICS: list[Any] = [
    "ece", "mce", "brier", "nll", {"name": "recall_at_k", "k": 1}, "map", "mrr", {"name": "ndcg", "k": 10},
]
STREAM_METRICS: list[Any] = ["ece", "mce", "brier", "nll", {"name": "recall_at_k", "k": 1}, "map"]


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB.

    ``VmHWM`` of /proc/self/status where there is one: ``ru_maxrss`` survives
    ``exec`` on Linux, so a child started by a large parent would report the
    parent's peak.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _scalar(value: object) -> float:
    """A scalar accumulator's value (a float; the curve accumulator's is no scalar and is not asked)."""
    if not isinstance(value, float):
        raise TypeError(f"expected a float from a scalar accumulator; got {type(value).__name__}")
    return value


def make_chunk(rng: np.random.Generator, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense lists of 10 candidates, the first relevant; probabilities correlated with relevance."""
    y = np.zeros((n_queries, N_CAND), dtype=np.int64)
    y[:, 0] = 1
    p = rng.random((n_queries, N_CAND)) * 0.6
    p[:, 0] += 0.4 * rng.random(n_queries)
    return p, y


def stream_run(pairs: int, chunk: int, repeats: int) -> dict[str, Any]:
    """The constant-memory run; called in a fresh process so that its peak RSS is its own."""
    from uncertank.metrics import ReliabilityAccumulator, reliability_curve, resolve_metrics

    chunk_q = max(1, chunk // N_CAND)
    stream_metrics = resolve_metrics(STREAM_METRICS)
    accs = [m.accumulator() for m in stream_metrics] + [ReliabilityAccumulator()]
    n_chunks = max(1, pairs // (chunk_q * N_CAND))
    srng = np.random.default_rng(1)
    rss_start = peak_rss_mib()
    rss_early = rss_start
    t_gen = t_upd = t_mem = 0.0
    sampled = 0
    every = max(1, n_chunks // 50)  # time the in-memory functions on every 50th chunk too, interleaved
    t_wall = time.perf_counter()
    for i in range(n_chunks):
        t0 = time.process_time()
        cp, cy = make_chunk(srng, chunk_q)
        t1 = time.process_time()
        t_gen += t1 - t0
        if i % every == 0:  # the in-memory functions first, so they do not find the chunk warmer
            for m in stream_metrics:
                m(cp, cy)
            reliability_curve(cp, cy)
            t1b = time.process_time()
            t_mem += t1b - t1
            sampled += 1
            t1 = t1b
        for acc in accs:
            acc.update(cp, cy)
        t_upd += time.process_time() - t1
        if i + 1 == max(1, n_chunks // 100):
            rss_early = peak_rss_mib()
        if (i + 1) % max(1, n_chunks // 20) == 0:
            print(f"stream: {i + 1}/{n_chunks} chunks, {time.perf_counter() - t_wall:.0f} s wall, "
                  f"peak RSS {peak_rss_mib():.0f} MiB", file=sys.stderr, flush=True)
    values = [_scalar(acc.compute()) for acc in accs[:-1]]
    rss_end = peak_rss_mib()
    wall = time.perf_counter() - t_wall
    t_one = t_mem / sampled
    return {
        "pairs": n_chunks * chunk_q * N_CAND, "chunks": n_chunks, "chunk": chunk_q * N_CAND, "wall": wall,
        "cpu_update": t_upd, "cpu_simulate": t_gen, "cpu_one_chunk_in_memory": t_one,
        "rss_start": rss_start, "rss_early": rss_early, "rss_end": rss_end,
        "labels": [m.display_label for m in stream_metrics], "values": values, "every": every,
    }


def run(args: argparse.Namespace) -> str:
    from uncertank import RankedLists
    from uncertank.metrics import ReliabilityAccumulator, read_scored_pairs, reliability_curve, resolve_metrics

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    rng = np.random.default_rng(0)
    n_q = args.pairs_memory // N_CAND
    p, y = make_chunk(rng, n_q)
    chunk_q = max(1, args.chunk // N_CAND)
    metrics = resolve_metrics(METRICS)
    rows = []
    for m in metrics:

        def stream(m: Any = m) -> Any:
            acc = m.accumulator()
            for lo in range(0, n_q, chunk_q):
                acc.update(p[lo:lo + chunk_q], y[lo:lo + chunk_q])
            return acc.compute()

        t_mem, t_str, ratio, v_mem, v_str = paired(partial(m, p, y), stream, args.repeats)
        if not np.isclose(v_str, v_mem, rtol=1e-12, atol=0):
            raise AssertionError(f"{m.display_label}: streaming {v_str!r} != in-memory {v_mem!r}")
        rows.append((m.display_label, t_mem, t_str, ratio))
        log(f"{m.display_label}: in memory {t_mem:.3f} s, streaming {t_str:.3f} s")

    def rel_stream() -> Any:
        acc = ReliabilityAccumulator()
        for lo in range(0, n_q, chunk_q):
            acc.update(p[lo:lo + chunk_q], y[lo:lo + chunk_q])
        return acc.compute()

    t_mem, t_str, ratio, c_mem, c_str = paired(lambda: reliability_curve(p, y), rel_stream, args.repeats)
    if not np.array_equal(c_str.counts, c_mem.counts):
        raise AssertionError("reliability counts differ")
    rows.append(("reliability curve", t_mem, t_str, ratio))
    log(f"reliability: in memory {t_mem:.3f} s, streaming {t_str:.3f} s")

    # ---------------------------------------------------------------- parquet reader
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairs.parquet"
        table = pa.table({"query_id": np.repeat(np.arange(n_q), N_CAND), "score": p.ravel(), "label": y.ravel()})
        pq.write_table(table, path, row_group_size=args.chunk)
        del table
        size_mib = path.stat().st_size / 2**20

        def all_in_memory() -> list[Any]:
            rl = RankedLists.from_dense(p, y)
            return [m(rl) for m in metrics]

        def all_from_parquet() -> list[Any]:
            accs = [m.accumulator() for m in metrics]
            for chunk in read_scored_pairs(path, chunk_size=args.chunk):
                for acc in accs:
                    acc.update(chunk)
            return [acc.compute() for acc in accs]

        t_all_mem, t_all_pq, pq_ratio, v_all_mem, v_all_pq = paired(all_in_memory, all_from_parquet, args.repeats)
        if not np.allclose(v_all_pq, v_all_mem, rtol=1e-12, atol=0):
            raise AssertionError("Parquet stream differs from the in-memory values")
    log(f"parquet: in memory {t_all_mem:.3f} s, from parquet {t_all_pq:.3f} s")

    # ---------------------------------------------------------------- constant memory
    import json
    import subprocess

    cmd = [sys.executable, __file__, "--stream-only", "--pairs-stream", str(args.pairs_stream),
           "--chunk", str(args.chunk), "--repeats", str(args.repeats)]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    t_mem_set = sum(tm for label, tm, _, _ in rows if label in set(r["labels"]) | {"reliability curve"})
    mem_pps = args.pairs_memory / t_mem_set

    # ---------------------------------------------------------------- report
    import numpy

    stamp = _dt.date.today().isoformat()
    cpu = os.cpu_count()
    lines = [
        "## Streaming evaluators: accumulators against the in-memory metrics",
        "",
        f"Measured {stamp} with `{args.command}` on {platform.machine()}, {cpu} cores (shared with other jobs), "
        f"Python {platform.python_version()}, numpy {numpy.__version__}, pyarrow {pa.__version__}. "
        f"CPU seconds of the process (`time.process_time`, robust to the other jobs on the machine), median of "
        f"{args.repeats} runs.",
        "",
        f"Throughput on {args.pairs_memory:,} pairs ({n_q:,} queries x {N_CAND}), streamed in chunks of "
        f"{chunk_q * N_CAND:,} pairs; ratio = streaming throughput / in-memory throughput, "
        "the median of the ratios of runs made alternately. Every streamed "
        "value equals the in-memory one (rtol 1e-12; bin counts exactly).",
        "",
        "| metric | in memory (CPU s) | streaming (CPU s) | ratio |",
        "|---|---|---|---|",
    ]
    for label, tm, ts, ratio in rows:
        lines.append(f"| {label} | {tm:.3f} | {ts:.3f} | {ratio:.2f} |")
    lines += [
        "",
        f"All {len(metrics)} metrics in one pass over a Parquet file ({size_mib:.0f} MiB, row groups of "
        f"{args.chunk:,} rows) with `read_scored_pairs`, against the in-memory functions on a RankedLists: "
        f"{t_all_pq:.3f} CPU s against {t_all_mem:.3f} (ratio {pq_ratio:.2f}; reading and "
        "splitting at query boundaries included).",
        "",
        f"Constant memory (a fresh process): {r['pairs']:,} simulated pairs ({r['chunks']:,} chunks of "
        f"{r['chunk']:,}) through the accumulators of {', '.join(r['labels'])} and the reliability curve: "
        f"{r['wall']:.0f} s wall; {r['cpu_update']:.0f} CPU s in `update`, {r['cpu_simulate']:.0f} CPU s "
        f"simulating the chunks. Throughput in `update`: {r['pairs'] / r['cpu_update'] / 1e6:.2f} million pairs "
        f"per CPU second, against {mem_pps / 1e6:.2f} million for the same metrics in memory on "
        f"{args.pairs_memory:,} pairs (table above, measured before; ratio "
        f"{r['pairs'] / r['cpu_update'] / mem_pps:.2f}) and "
        f"{r['chunk'] / r['cpu_one_chunk_in_memory'] / 1e6:.2f} million for the in-memory functions timed on every "
        f"{r['every']}th chunk during the run (interleaved; ratio "
        f"{(r['pairs'] / r['cpu_update']) / (r['chunk'] / r['cpu_one_chunk_in_memory']):.2f}). Peak RSS "
        f"{r['rss_start']:.0f} MiB before the first chunk, {r['rss_early']:.0f} MiB after 1% of them, "
        f"{r['rss_end']:.0f} MiB at the end. "
        + ", ".join(f"{lab} {v:.6f}" for lab, v in zip(r["labels"], r["values"], strict=True)) + ".",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs-memory", type=int, default=10_000_000)
    ap.add_argument("--pairs-stream", type=int, default=1_000_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1e6 pairs in memory, 1e7 streamed, chunks of 1e5")
    ap.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print the section instead of writing it")
    ap.add_argument("--stream-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.stream_only:
        import json

        print(json.dumps(stream_run(args.pairs_stream, args.chunk, args.repeats)))
        return 0
    if args.quick:
        args.pairs_memory, args.pairs_stream, args.chunk = 1_000_000, 10_000_000, 100_000
    args.command = "python benchmarks/bench_streaming.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.command = args.command.strip()
    body = run(args)
    if args.no_write:
        print(body)
    else:
        write_section(NAME, body, args.output)
        print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
