"""The comparison report against ranx's ``compare``: 10 systems x 5,000 queries x 5 metrics, 10,000 draws.

One synthetic collection (``--queries`` queries of ``--docs`` candidates,
graded 0-2; ``--systems`` runs whose scores separate the grades more and
more) is judged by both libraries with the same five metrics (MAP, MRR,
nDCG@10, P@10, R@20):

- **uncertank**: ``compare_runs`` on the per-query values with Fisher's
  randomisation test (``test="randomization"``, ``--draws`` sign patterns
  drawn once and shared by all 45 pairs and 5 metrics) and the bootstrap
  intervals of every mean difference (``--draws`` resamples, also shared),
  then every rendering (Markdown, LaTeX, CSV, JSON); the same with the
  paired t-test; and ``evaluate_runs`` (the per-query values from the runs),
  which ranx's time includes, timed apart. Median of ``--repeats`` runs.
- **ranx** ``compare(qrels, runs, metrics, stat_test="fisher",
  n_permutations=--draws)`` (and ``"student"``), in a fresh process with an
  empty numba cache (``NUMBA_CACHE_DIR``): the import, the first call on
  five queries (numba compiles its kernels there), then the full call once
  (after compile). "Including compile" adds the first call to the full one.
  ranx tests each pair of systems twice (once each way; the second
  overwrites the first), 90 tests per metric, and draws its own
  permutations, so the two sides cannot share draws: the script reports how
  many of the 450 significance marks (system x metric x other) agree at
  alpha = 0.05 without correction, and that the means are equal.

Building the inputs (frames, ranx's Run and Qrels) is not timed. The script
rewrites its own section of benchmarks/RESULTS.md (``<!-- begin: bench_compare
-->``) atomically.

Usage::

    python benchmarks/bench_compare.py            # full size: ranx's Fisher run takes about 15 minutes here
    python benchmarks/bench_compare.py --quick    # 500 queries, 1,000 draws: a smoke run
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _results import Row, markdown_table, write_section

HERE = Path(__file__).resolve().parent
NAME = "bench_compare"

#: uncertank's metric entries and ranx's names for the same five metrics.
METRICS: list[tuple[Any, str, str]] = [
    ("map", "map", "MAP"),
    ("mrr", "mrr", "MRR"),
    ({"name": "ndcg", "k": 10}, "ndcg@10", "nDCG@10"),
    ("P@10", "precision@10", "P@10"),
    ("R@20", "recall@20", "R@20"),
]


def make_collection(n_queries: int, n_docs: int, n_systems: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Grades (0-2, about 20% relevant, one relevant per query at least) and each system's scores."""
    rng = np.random.default_rng(seed)
    grades = rng.choice([0, 0, 0, 0, 1, 1, 2, 0, 0, 0], size=(n_queries, n_docs))
    grades[:, 0] = np.maximum(grades[:, 0], 1)
    strength = np.linspace(0.3, 1.0, n_systems)
    scores = strength[:, None, None] * grades[None] + rng.normal(size=(n_systems, n_queries, n_docs))
    return {"grades": grades, "scores": scores}


def _ids(n_queries: int, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    q = np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), n_docs)
    d = np.tile(np.array([f"d{j}" for j in range(n_docs)], dtype=object), n_queries)
    return q, d


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall seconds over ``repeats`` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


# --------------------------------------------------------------------------- ranx, in its own process


def ranx_worker(data_path: str, draws: int) -> dict[str, Any]:
    """ranx's side, run in a fresh process: import, compile on five queries, then the full calls."""
    t0 = time.perf_counter()
    import pandas as pd
    from ranx import Qrels, Run, compare

    t_import = time.perf_counter() - t0
    data = np.load(data_path)
    grades, scores = data["grades"], data["scores"]
    n_sys, n_q, n_d = scores.shape
    qid, did = _ids(n_q, n_d)
    keep = grades.ravel() > 0
    ids = {"q_id": object, "doc_id": object}  # ranx asserts object columns; pandas 3 would make them str

    def frame(q: np.ndarray, d: np.ndarray, score: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"q_id": q, "doc_id": d, "score": score}).astype(ids)

    qrels_df = frame(qid[keep], did[keep], grades.ravel()[keep].astype(np.int64))
    qrels = Qrels.from_df(qrels_df)
    runs = [Run.from_df(frame(qid, did, scores[s].ravel()), name=f"s{s}") for s in range(n_sys)]
    metrics = [m for _, m, _ in METRICS]
    tiny_q = set(qid[: 5 * n_d])
    tiny_qrels = Qrels.from_df(qrels_df[qrels_df.q_id.isin(tiny_q)])
    tiny_runs = [Run.from_df(frame(qid[: 5 * n_d], did[: 5 * n_d], scores[s].ravel()[: 5 * n_d]), name=f"s{s}")
                 for s in range(n_sys)]
    t0 = time.perf_counter()
    compare(tiny_qrels, tiny_runs, metrics, stat_test="fisher", n_permutations=10, max_p=0.05)
    compare(tiny_qrels, tiny_runs, metrics, stat_test="student", max_p=0.05)
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    fisher = compare(qrels, runs, metrics, stat_test="fisher", n_permutations=draws, max_p=0.05)
    t_fisher = time.perf_counter() - t0
    t0 = time.perf_counter()
    student = compare(qrels, runs, metrics, stat_test="student", max_p=0.05)
    t_student = time.perf_counter() - t0

    def marks(report: Any) -> dict[str, list[str]]:
        names = report.model_names
        return {f"{a}|{m}": [b for b in names if b != a and report.comparisons[a, b][m]["significant"]
                             and report.results[a][m] > report.results[b][m]] for a in names for m in metrics}

    return {
        "import": t_import, "compile": t_compile, "fisher": t_fisher, "student": t_student,
        "means": {n: dict(v) for n, v in fisher.results.items()},
        "marks_fisher": marks(fisher), "marks_student": marks(student),
        "numba_threads": int(__import__("numba").config.NUMBA_NUM_THREADS),
    }


# --------------------------------------------------------------------------- uncertank


def run(args: argparse.Namespace) -> str:
    import pandas as pd

    from uncertank import compare_runs
    from uncertank.evaluate import evaluate_runs

    load_before = os.getloadavg()[0]
    data = make_collection(args.queries, args.docs, args.systems)
    grades, scores = data["grades"], data["scores"]
    qid, did = _ids(args.queries, args.docs)
    qrels = pd.DataFrame({"query_id": qid, "doc_id": did, "relevance": grades.ravel()})
    frames = [pd.DataFrame({"system": f"s{s}", "query_id": qid, "doc_id": did, "score": scores[s].ravel()})
              for s in range(args.systems)]
    entries = [e for e, _, _ in METRICS]

    t_eval, ev = timed(lambda: evaluate_runs(frames, qrels, metrics=entries), 1)
    labels = ev.ranking
    per_query = {r.name: {m: r.per_query[m] for m in labels} for r in ev.runs}

    def report(test: Any) -> Any:
        rep = compare_runs(per_query, test=test, correction="none", alpha=0.05, n_resamples=args.draws, seed=0)
        for text in (rep.to_markdown(), rep.to_latex(), rep.to_csv(), rep.to_json()):
            assert text
        return rep

    t_rand, rep_rand = timed(lambda: report("randomization"), args.repeats)
    t_t, rep_t = timed(lambda: report("t"), args.repeats)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "collection.npz")
        np.savez(path, grades=grades, scores=scores)
        env = {**os.environ, "NUMBA_CACHE_DIR": os.path.join(tmp, "numba-cache")}
        out = subprocess.run([sys.executable, __file__, "--ranx-worker", path, "--draws", str(args.draws)],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"ranx's process failed:\n{out.stderr[-3000:]}")
        ranx = json.loads(out.stdout.strip().splitlines()[-1])
    load_after = os.getloadavg()[0]

    # the same runs: equal means; how many marks agree
    ranx_name = {m: r for _, r, m in METRICS}
    worst = max(abs(ranx["means"][s][ranx_name[m]] - rep_rand.means[m][s]) for s in rep_rand.systems for m in labels)

    def agreement(rep: Any, theirs: dict[str, list[str]]) -> tuple[int, int]:
        same = total = 0
        for s in rep.systems:
            for m in labels:
                mine = set(rep.beats(s, m))
                other = set(theirs[f"{s}|{ranx_name[m]}"])
                for o in rep.systems:
                    if o != s:
                        total += 1
                        same += (o in mine) == (o in other)
        return same, total

    agree_f, total_f = agreement(rep_rand, ranx["marks_fisher"])
    agree_t, total_t = agreement(rep_t, ranx["marks_student"])

    incl = ranx["import"] + ranx["compile"]
    rows: list[Row] = [
        {"what": f"Fisher randomisation, {args.draws:,} draws", "ours": t_rand, "ours_eval": t_rand + t_eval,
         "ranx": ranx["fisher"], "ranx_incl": ranx["fisher"] + incl},
        {"what": "paired t-test", "ours": t_t, "ours_eval": t_t + t_eval,
         "ranx": ranx["student"], "ranx_incl": ranx["student"] + incl},
    ]
    cols = {
        "test": lambda r: r["what"],
        "uncertank report": lambda r: f"{r['ours']:.2f}",
        "uncertank evaluate + report": lambda r: f"{r['ours_eval']:.2f}",
        "ranx after compile": lambda r: f"{r['ranx']:.2f}",
        "ranx incl. import + compile": lambda r: f"{r['ranx_incl']:.2f}",
        "ranx after compile / uncertank (evaluate + report)": lambda r: f"{r['ranx'] / r['ours_eval']:.1f}x",
        "ranx incl. compile / uncertank (evaluate + report)": lambda r: f"{r['ranx_incl'] / r['ours_eval']:.1f}x",
    }
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}" for p in ("numpy", "scipy", "ranx", "numba"))
    avx512 = _avx512_lines()
    cmd = "python benchmarks/bench_compare.py" + (" --quick" if args.quick else "")
    lines = [
        f"## Comparison report: uncertank `compare_runs` against ranx `compare` (`benchmarks/{NAME}.py`)",
        "",
        f"Measured {_dt.date.today().isoformat()} with `{cmd}` on {platform.machine()}, {os.cpu_count()} cores "
        f"(`grep -c avx512 /proc/cpuinfo`: {avx512}; shared with other jobs: 1-minute load average "
        f"{load_before:.1f} before, {load_after:.1f} after), Python {platform.python_version()}, {versions} "
        f"({ranx['numba_threads']} numba threads). {args.systems} systems x {args.queries:,} queries "
        f"({args.docs} candidates each) x 5 metrics (MAP, MRR, nDCG@10, P@10, R@20), {args.draws:,} draws; "
        f"wall seconds, uncertank the median of {args.repeats} runs, ranx one run.",
        "",
        markdown_table(cols, rows),
        "",
        "Notes:",
        "",
        f"- uncertank's report: `compare_runs` over all 45 pairs and 5 metrics (tests, the {args.draws:,}-resample "
        "bootstrap interval of every mean difference, effect sizes), then `to_markdown`, `to_latex`, `to_csv` and "
        f"`to_json`; `evaluate_runs` (the per-query values from the runs) took {t_eval:.2f} s, added in the "
        "columns that compare with ranx, whose `compare` evaluates the runs itself.",
        f"- ranx: import {ranx['import']:.2f} s, first call on five queries (numba compiling `evaluate` and the "
        f"Fisher test, with an empty `NUMBA_CACHE_DIR`) {ranx['compile']:.2f} s. ranx runs each pair twice "
        "(90 ordered pairs per metric) and draws new permutations per pair.",
        f"- The same runs: the means of the two libraries differ by at most {worst:.1e}. Significance marks "
        f"(system x other x metric, alpha = 0.05, no correction, as ranx marks): {agree_t} of {total_t} agree "
        f"with ranx's for the t-test, {agree_f} of {total_f} for the randomisation test (independent draws on the "
        "two sides, so a p-value near 0.05 may fall on either side).",
    ]
    return "\n".join(lines)


def _avx512_lines() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return str(sum("avx512" in line for line in f))
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="500 queries and 1,000 draws: a smoke run")
    ap.add_argument("--systems", type=int, default=10)
    ap.add_argument("--queries", type=int, default=None, help="default 5,000 (500 with --quick)")
    ap.add_argument("--docs", type=int, default=50, help="candidates per query")
    ap.add_argument("--draws", type=int, default=None, help="default 10,000 (1,000 with --quick)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of uncertank's side (median reported)")
    ap.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    ap.add_argument("--ranx-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.draws is None:
        args.draws = 1_000 if args.quick else 10_000
    if args.ranx_worker is not None:
        print(json.dumps(ranx_worker(args.ranx_worker, args.draws)))
        return 0
    if args.queries is None:
        args.queries = 500 if args.quick else 5_000
    body = run(args)
    print(body)
    if not args.no_write:
        write_section(NAME, body, args.output)
        print(f"\nwrote section {NAME!r} of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
