"""Pólya-Gamma draws per second: uncertank_pgdrr.random_polya_gamma against the C package polyagamma.

For several batch sizes and tilts z, PG(1, z) is drawn by

- ``torch``: :func:`uncertank_pgdrr.random_polya_gamma` (batched Devroye) on the CPU,
- ``torch-cuda``: the same on the GPU when one is present (timed with synchronisation),
- ``polyagamma``: ``polyagamma.random_polyagamma(1, z, method="devroye")`` (C, one core),

each timed right after the ``polyagamma`` baseline, ``--repeats`` rounds; the
median paired ratio ``draws/s (ours) / draws/s (polyagamma)`` is kept (on a
machine shared with other jobs the load drifts), and the best absolute rate.
torch runs with ``--threads`` threads (1 by default, so both sides use one core).

    python benchmarks/bench_polya_gamma.py            # sizes 1e3, 3e4, 1e6; z in 0, 2.76, 50, 1e4
    python benchmarks/bench_polya_gamma.py --quick    # sizes 1e3, 3e4; 3 repeats
    python benchmarks/bench_polya_gamma.py --bank     # PG-DRR's memory bank: cost against M
    python benchmarks/bench_polya_gamma.py --predict  # PG-DRR's predict against bert's, packaged MiniLM
    python benchmarks/bench_polya_gamma.py --bank-sweep --threads 2   # M up to 4,096, one sweep each

With ``--bank``, the cost of PG-DRR's GP layer against the memory-bank size M
(30 chains, 64-dimensional features): refitting the bank (50 Gibbs sweeps,
once after training), P(relevant) of 1,000 test pairs, and the joint
predictive of 100 queries of 10 candidates (``predict_samples``), encoder
excluded. With ``--predict``, ``pgdrr``'s ``predict`` against ``bert``'s on
100 real Ubuntu-sample test pairs (packaged MiniLM, untrained head, memory
bank filled from 30 training queries as after training), paired, 3 rounds.
With ``--bank-sweep``, one Gibbs sweep on the bank, the predictive factors
and 1,000 predictions for M = 256, 1,024, 2,048 and 4,096 (``--sizes``), the
fit's 50 sweeps extrapolated from one, written to
docs/results/pgdrr_bank_cost.json. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch
from polyagamma import random_polyagamma
from uncertank_pgdrr import random_polya_gamma


def _clock(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _measure(n: int, z: float, repeats: int, cuda: bool) -> dict[str, tuple[float, float]]:
    """Best rate (draws/s) and median paired ratio to polyagamma, per sampler."""
    zt = torch.full((n,), z, dtype=torch.float64)
    zn = np.full(n, z)
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    fns: dict[str, Callable[[], Any]] = {"torch": lambda: random_polya_gamma(1, zt, generator=gen)}
    if cuda:
        zc = zt.cuda()
        gen_c = torch.Generator(device="cuda").manual_seed(0)

        def on_gpu() -> None:
            random_polya_gamma(1, zc, generator=gen_c)
            torch.cuda.synchronize()

        fns["torch-cuda"] = on_gpu

    def base() -> None:
        random_polyagamma(1, zn, method="devroye", random_state=rng)

    base()
    for fn in fns.values():
        fn()  # warm-up
    ratios: dict[str, list[float]] = {k: [] for k in fns}
    best = {"polyagamma": float("inf"), **{k: float("inf") for k in fns}}
    for _ in range(repeats):
        for name, fn in fns.items():
            tb = _clock(base)
            tf = _clock(fn)
            best["polyagamma"] = min(best["polyagamma"], tb)
            best[name] = min(best[name], tf)
            ratios[name].append(tb / tf)
    out = {name: (n / best[name], float(np.median(ratios[name]))) for name in fns}
    out["polyagamma"] = (n / best["polyagamma"], 1.0)
    return out


def _best(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    return min(_clock(fn) for _ in range(repeats))


def bank_cost(sizes: list[int], repeats: int) -> None:
    """Print the GP layer's cost against the memory-bank size M."""
    from uncertank_pgdrr.gp import GaussianProcessHead

    gen = torch.Generator().manual_seed(0)
    test = torch.randn(1000, 64, generator=gen, dtype=torch.float64) / 8
    print("| M | refit bank (s, once) | P(relevant), 1,000 pairs (s) | joint predictive, 100 x 10 (s) |")
    print("|---|---|---|---|")
    for m in sizes:
        head = GaussianProcessHead(64, projection_dim=None, bank_size=m)
        x = torch.randn(m, 64, generator=gen, dtype=torch.float64) / 8
        y = (torch.arange(m) % 2).long()
        head.push(x, y)

        def refit(head: GaussianProcessHead = head) -> None:
            head.refit()
            head.probabilities(test[:1])  # the factors are computed on first use

        t_refit = _best(refit, repeats)
        t_pred = _best(partial(head.probabilities, test), repeats)
        t_joint = _best(partial(head.joint_predictive, test.reshape(100, 10, 64)), repeats)
        print(f"| {m:,} | {t_refit:.3f} | {t_pred:.3f} | {t_joint:.3f} |", flush=True)


def bank_sweep_cost(
    sizes: list[int], repeats: int, n_chains: int = 30, dim: int = 64, n_test: int = 1000, device: str = "cpu"
) -> dict[str, Any]:
    """Seconds (best of ``repeats``) of one Gibbs sweep, the factors and 1,000 predictions per M; ratios to the first.

    The bank's fit (50 sweeps, then the factors) is extrapolated from one
    sweep, so that M = 4,096 can be measured in minutes; the chains' factors
    hold two float64 arrays of 30 x M x M.
    """
    from uncertank_pgdrr.gp import GaussianProcessHead, gibbs_sample

    dev = torch.device(device)

    def now() -> float:  # a clock that waits for the device's queued work
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter()

    gen = torch.Generator(device=dev).manual_seed(0)
    rows: dict[str, Any] = {}
    for m in sizes:
        x = torch.randn(m, dim, dtype=torch.float64, generator=gen, device=dev) / dim**0.5
        y = (torch.arange(m, device=dev) % 2).long()
        z = torch.randn(n_test, dim, dtype=torch.float64, generator=gen, device=dev) / dim**0.5
        head = GaussianProcessHead(dim, projection_dim=None, bank_size=m, n_chains=n_chains, n_bank_steps=1).to(dev)
        best = {"sweep": float("inf"), "factors": float("inf"), "predict_1000": float("inf")}
        for _ in range(repeats):
            t0 = now()
            gibbs_sample(head.kernel(x, x), y, n_chains=n_chains, n_steps=1, generator=gen)
            t1 = now()
            head.set_bank(x, y)  # one sweep again (n_bank_steps=1), then the factors on first use
            head.clear_cache()
            t2 = now()
            head._factors()
            t3 = now()
            head.predictive(z)
            t4 = now()
            best = {"sweep": min(best["sweep"], t1 - t0), "factors": min(best["factors"], t3 - t2),
                    "predict_1000": min(best["predict_1000"], t4 - t3)}
        rows[str(m)] = {**{k: round(v, 4) for k, v in best.items()},
                        "fit_bank_50_sweeps_s": round(50 * best["sweep"] + best["factors"], 2),
                        "factor_memory_gb": round(2 * n_chains * m * m * 8 / 1e9, 3)}
        print(m, rows[str(m)], flush=True)
        del head
    base = rows[str(sizes[0])]
    for row in rows.values():
        row["ratio_to_first"] = {k: round(row[k] / base[k], 1) for k in ("sweep", "factors", "predict_1000")}
    return rows


def predict_cost(repeats: int) -> None:
    """Print pgdrr's predict time against bert's on 100 real pairs (packaged MiniLM)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from uncertank_pgdrr.ranker import PGDRRRanker

    import uncertank.datasets as ud
    from uncertank import make_ranker
    from uncertank.nn import NeuralRanker, get_accelerator

    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0)
    train = ud.load("ubuntu-sample", split="train", negatives="bm25", n_candidates=10, seed=0)
    queries = test.subset(np.arange(10))
    common: dict[str, Any] = dict(max_length=128, eval_batch_size=100, device="cpu", show_progress=False)
    bert = NeuralRanker(None, seed=0, **common)
    pgdrr = make_ranker("pgdrr", backbone=None, seed=0, **common)
    assert isinstance(pgdrr, PGDRRRanker)
    model = pgdrr.build_model()
    model.eval()
    bank = train.subset(np.arange(30))
    t_bank = _clock(lambda: pgdrr.on_train_end(model, pgdrr.encode(bank), np.asarray(bank.labels, dtype=np.int64),
                                                get_accelerator("cpu")))
    bert.predict(queries)
    pgdrr.predict(queries)
    ratios, t_bert, t_pg = [], [], []
    for _ in range(repeats):
        tb = _clock(lambda: bert.predict(queries))
        tp = _clock(lambda: pgdrr.predict(queries))
        t_bert.append(tb)
        t_pg.append(tp)
        ratios.append(tp / tb)
    t_samples = _best(lambda: pgdrr.predict_samples(queries), 1)
    print("| what | seconds |")
    print("|---|---|")
    print(f"| fill the bank (score M = {int(pgdrr.head().bank_count)} pairs, 50 Gibbs sweeps) | {t_bank:.2f} |")
    print(f"| bert predict, 100 pairs (best) | {min(t_bert):.3f} |")
    print(f"| pgdrr predict, 100 pairs (best) | {min(t_pg):.3f} |")
    print(f"| pgdrr predict_samples, 30 joint draws | {t_samples:.3f} |")
    print(f"\nMedian paired ratio pgdrr / bert: {float(np.median(ratios)):.3f}")


def bank_sweep_table(payload: dict[str, Any]) -> str:
    """The markdown table of docs/pgdrr.md ("What M costs") from docs/results/pgdrr_bank_cost.json."""
    lines = ["| M | one Gibbs sweep (s) | the bank's fit, 50 sweeps and the factors (s) | P(relevant) of 1,000 pairs "
             "(s) | factors' memory (GB) | sweep / factors / prediction, x M = 256 |",
             "|---:|---:|---:|---:|---:|---|"]
    rows = payload["bank_sizes"]
    for m in sorted(rows, key=int):
        r, q = rows[m], rows[m]["ratio_to_first"]
        lines.append(f"| {int(m):,} | {r['sweep']:.2f} | {r['fit_bank_50_sweeps_s']:,.0f} | {r['predict_1000']:.2f} | "
                     f"{r['factor_memory_gb']:.2f} | {q['sweep']:g} / {q['factors']:g} / {q['predict_1000']:g} |")
    return "\n".join(lines)


def _bank_sweep_json(sizes: list[int], repeats: int, threads: int, device: str = "cpu", out: Any = None) -> None:
    import json
    import os
    from pathlib import Path

    from uncertank.files import atomic_write_text

    load_before = os.getloadavg()
    rows = bank_sweep_cost(sizes, repeats, device=device)
    payload = {
        "command": f"python benchmarks/bench_polya_gamma.py --bank-sweep --threads {threads} --sizes "
                   + ",".join(map(str, sizes)) + ("" if device == "cpu" else f" --device {device}"),
        "device": device if device == "cpu" else torch.cuda.get_device_name(torch.device(device)),
        "bank_sizes": rows, "n_chains": 30, "feature_dim": 64,
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": threads,
                    "cores": os.cpu_count(), "load_average_before": list(load_before),
                    "load_average_after": list(os.getloadavg())},
    }
    if out is None:
        out = Path(__file__).resolve().parents[1] / "docs" / "results" / "pgdrr_bank_cost.json"
    atomic_write_text(out, json.dumps(payload, indent=2, sort_keys=True) + "\n")
    print(bank_sweep_table(payload))


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1e3 and 3e4 only, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None, help="paired rounds (default 5; 3 with --quick)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--bank", action="store_true", help="PG-DRR's GP layer against the memory-bank size")
    parser.add_argument("--predict", action="store_true", help="pgdrr's predict against bert's (packaged MiniLM)")
    parser.add_argument("--bank-sweep", action="store_true", help="one Gibbs sweep and the factors, M up to 4,096")
    parser.add_argument("--sizes", default="256,1024,2048,4096", help="bank sizes of --bank-sweep")
    parser.add_argument("--device", default="cpu", help="--bank-sweep's device (cpu, cuda)")
    parser.add_argument("--out", default=None,
                        help="--bank-sweep's JSON record (default docs/results/pgdrr_bank_cost.json)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.predict:
        print(f"Measured {time.strftime('%Y-%m-%d')} with `python benchmarks/bench_polya_gamma.py --predict` on "
              f"{platform.machine()}, torch {torch.__version__}, {args.threads} CPU thread(s).\n")
        predict_cost(args.repeats or 3)
        return
    if args.bank_sweep:
        _bank_sweep_json([int(m) for m in args.sizes.split(",")], args.repeats or 2, args.threads, args.device,
                         args.out)
        return
    if args.bank:
        print(f"Measured {time.strftime('%Y-%m-%d')} with `python benchmarks/bench_polya_gamma.py --bank` on "
              f"{platform.machine()}, torch {torch.__version__}, {args.threads} CPU thread(s); best of 3.\n")
        bank_cost([64, 256, 1024] if args.quick else [64, 256, 512, 1024, 2048], 3)
        return
    sizes = [1_000, 30_000] if args.quick else [1_000, 30_000, 1_000_000]
    zs = [0.0, 2.76, 50.0, 1e4]
    repeats = args.repeats or (3 if args.quick else 5)
    cuda = torch.cuda.is_available()
    import polyagamma

    print(
        f"Measured {time.strftime('%Y-%m-%d')} with `python benchmarks/bench_polya_gamma.py"
        f"{' --quick' if args.quick else ''}` on {platform.machine()}, Python {platform.python_version()}, "
        f"torch {torch.__version__} ({args.threads} CPU thread{'s' if args.threads > 1 else ''}), "
        f"polyagamma {polyagamma.__version__} (method devroye, one core)"
        f"{', GPU ' + torch.cuda.get_device_name() if cuda else ', no GPU'}. "
        f"Millions of PG(1, z) draws per second (best of {repeats}); in brackets the median paired "
        "ratio to polyagamma (above 1: faster).\n"
    )
    cols = ["torch"] + (["torch-cuda"] if cuda else []) + ["polyagamma"]
    print("| draws | z | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for n in sizes:
        for z in zs:
            res = _measure(n, z, repeats, cuda)
            cells = [f"{res[c][0] / 1e6:.2f} ({res[c][1]:.2f}x)" if c != "polyagamma" else f"{res[c][0] / 1e6:.2f}"
                     for c in cols]
            print(f"| {n:,} | {z:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
