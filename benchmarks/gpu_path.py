"""The GPU path of the neural rankers: fit on CUDA in bf16, score there, and score the same checkpoints on the CPU.

Every first-party neural ranker (``bert``, ``mc_dropout``, ``ensemble``,
``sngp``, ``gpf_bert``, ``pgdrr``) is built by name through the registry,
as a study builds it: ``bert`` is fine-tuned from the packaged MiniLM, the
others start from it (``from_ranker``, as a study's ``init_from``). With
``--device cuda`` training and scoring run with bf16 autocast (what
``device="auto"`` picks on a GPU); each ranker is then saved, loaded back
with ``device="cpu"`` and scored again in float32. The record says:

- whether the GPU path runs end to end and its checkpoints load on a CPU;
- how far bf16 moves the probabilities (largest and mean absolute gap,
  the share of queries whose top candidate is the same) and the numbers a
  study reports (R_10@1, ECE) on both devices; ``mc_dropout``'s gap is
  between two sets of masks (drawn by each device's generator), so it
  includes Monte Carlo noise; PG-DRR's ``predict`` is its closed form
  over the saved Gibbs state, so its gap is rounding only;
- the cost of each ranker's whole ``predict`` on the device, as a ratio to
  ``bert``'s, each timed right after a ``bert`` run (the median over
  ``--repeats`` rounds): the quantity of PG-DRR's Table 2 (Ye et al., AAAI
  2023), which was measured on a GPU.

    python benchmarks/gpu_path.py                       # on a CUDA machine
    python benchmarks/gpu_path.py --device cpu --backbone tiny --no-write   # a smoke run anywhere

Every model is trained with the recipe of the real run
(docs/studies/real_run.toml: the six MiniLM layers, [CLS] pooling, rate
1e-4, pairs cut to 64 tokens, batches of 16, one epoch on balanced pairs of
all 9,539 training queries), and scored on its 600 in-domain test queries, so
that ``bert``'s R_10@1 on the device compares with the real run's, fitted on
the CPU with the same recipe (its checkpoint as the full study scores it,
docs/results/full_study.json, in-domain). The
demo's recipe (mean pooling, rate 2e-4, frozen embeddings) is tuned for its
three layers and 3,000 queries: on all six layers and 3,000 queries it ended
at R_10@1 0.21 on an H100 and 0.245 on the CPU (200 test queries; last loss
0.688 against 0.697 at the start), so the recipe, not the device, left it
untrained. The script refuses to report cost or calibration for a model that
did not learn: it stops when ``bert`` ends under ``--min-r10-at-1`` (0.30;
chance is 0.10) on the device, and marks any other ranker under it as
untrained, with no numbers. ``--cpu-fit`` fits ``bert`` on the CPU with
the same recipe, for the accuracy comparison across devices on a machine
with the time for it.

The results replace this script's section of benchmarks/RESULTS.md and are
written whole to ``--json`` when given.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _results import markdown_table, write_section

NAME = "gpu_path"
RANKERS = ("bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr")


def _synchronize(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], Any], device: Any) -> tuple[Any, float]:
    _synchronize(device)
    t0 = time.perf_counter()
    out = fn()
    _synchronize(device)
    return out, time.perf_counter() - t0


#: The real run's training recipe (docs/studies/real_run.toml), whose checkpoint the full study scores.
RECIPE = dict(pooling="cls", lr=1e-4, max_length=64, batch_size=16, epochs=1)
#: The CPU fits of that recipe, scored on the 600 in-domain test queries this script draws: the checkpoint the full
#: study scores (R_10@1 and ECE equal to 1e-9 when it is scored here), and the first real run's model, fitted by the
#: same command on a machine whose CPU kernels round differently (docs/rankers.md: one epoch carries that rounding
#: to other weights).
CPU_FITS = (
    ("the checkpoint the full study scores", Path("docs/results/full_study.json")),
    ("the first real run, another CPU", Path("docs/results/real_run.json")),
)


def _cpu_fits(train_queries: int | None, test_queries: int) -> list[dict[str, Any]]:
    """``bert`` fitted on the CPU with :data:`RECIPE`, where this run's setting is the real run's (else none)."""
    root = Path(__file__).resolve().parents[1]
    if train_queries is not None or test_queries != 600:
        return []
    fits = []
    for label, rel in CPU_FITS:
        if (root / rel).is_file():
            bert = json.loads((root / rel).read_text(encoding="utf-8"))["results"]["in-domain"]["bert"]
            fits.append({"r10_at_1": bert["R@1"], "ece": bert["ECE"], "label": label, "source": str(rel)})
    return fits


def _probabilities(ranker: Any, queries: Any) -> np.ndarray:
    """P(relevant) per pair as ``predict`` gives it: ``mc_dropout``'s and the ensemble's the mean of their
    draws, PG-DRR's its closed-form (Gauss-Hermite) predictive, with no sampling."""
    return np.asarray(ranker.predict(queries).scores, dtype=np.float64)


def _study_numbers(p: np.ndarray, queries: Any) -> dict[str, float]:
    from uncertank import Predictions
    from uncertank.metrics import expected_calibration_error, recall_at_k

    ranked = Predictions(p, queries.offsets).ranked(queries)
    return {"r10_at_1": float(recall_at_k(ranked, k=1)), "ece": float(expected_calibration_error(ranked))}


def _top1_agreement(a: np.ndarray, b: np.ndarray, offsets: np.ndarray) -> float:
    """The share of queries whose highest-scored candidate is the same under ``a`` and ``b``."""
    same = [int(np.argmax(a[s:e])) == int(np.argmax(b[s:e])) for s, e in itertools.pairwise(offsets)]
    return float(np.mean(same))


def _build(name: str, bert: Any, common: dict[str, Any], args: argparse.Namespace) -> Any:
    """``name`` started from the fitted ``bert``, as a study's ``init_from`` builds it."""
    from uncertank import WarmStartable, make_ranker

    built = make_ranker(name)  # building is cheap (models load lazily); the class gives from_ranker
    if not isinstance(built, WarmStartable):
        raise TypeError(f"{name!r} cannot start from a fitted bert (uncertank.WarmStartable)")
    cls = type(built)
    if name == "ensemble":  # the other members take bert's settings
        return cls.from_ranker(bert, n_members=args.members)
    params = {"n_passes": args.passes} if name == "mc_dropout" else {}
    if name in ("sngp", "gpf_bert", "pgdrr") and args.others_train_queries is not None:
        params["max_train_queries"] = args.others_train_queries
    return cls.from_ranker(bert, **{**common, **params})


def build_parser() -> argparse.ArgumentParser:
    """The script's command line (also read back from a record's command by :func:`render_record`)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backbone", choices=["minilm", "tiny"], default="minilm")
    ap.add_argument("--train-queries", type=int, default=None, help="default: all 9,539 (the real run's)")
    ap.add_argument("--others-train-queries", type=int, default=None,
                    help="training queries of sngp, gpf_bert and pgdrr, which start from the fitted bert "
                         "(default: --train-queries); the ensemble's members take bert's")
    ap.add_argument("--min-r10-at-1", type=float, default=0.30,
                    help="refuse to report cost or calibration of a model under this R_10@1 (chance 0.10)")
    ap.add_argument("--cpu-fit", action="store_true", help="also fit bert on the CPU with the same recipe")
    ap.add_argument("--test-queries", type=int, default=600)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rankers", default=",".join(RANKERS))
    ap.add_argument("--cpu-check", default=None,
                    help="the rankers whose checkpoints are scored on the CPU too (default: all of --rankers)")
    ap.add_argument("--json", type=Path, default=None, help="also write every number to this file")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    ap.add_argument("--render", type=Path, default=None,
                    help="write the section from a run's --json record instead of running (no GPU needed)")
    return ap


def render_record(path: Path) -> str:
    """This script's RESULTS.md section from the ``--json`` record at ``path``, with the run's own arguments."""
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    run_args = build_parser().parse_args(shlex.split(record["environment"]["command"])[2:])
    return render(record, run_args)


def main(argv: list[str] | None = None) -> None:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.render is not None:
        body = render_record(args.render)
        print(body)
        if not args.no_write:
            write_section(NAME, body)
        return
    cli = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--no-write"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    import uncertank.datasets as ud
    from uncertank import make_ranker
    from uncertank.nn import NeuralRanker, load_ranker, resolve_device
    from uncertank.nn.testing import tiny_config

    device = resolve_device(args.device)
    names = [n.strip() for n in args.rankers.split(",") if n.strip()]
    unknown = sorted(set(names) - set(RANKERS))
    if unknown or not names or names[0] != "bert":
        raise SystemExit(f"--rankers: a comma-separated list starting with bert, of {', '.join(RANKERS)}; "
                         f"got {args.rankers!r}")
    on_cpu_too = set(names if args.cpu_check is None else [n.strip() for n in args.cpu_check.split(",") if n.strip()])
    if not on_cpu_too <= set(names):
        raise SystemExit(f"--cpu-check: rankers of --rankers ({', '.join(names)}); got {args.cpu_check!r}")
    backbone = None if args.backbone == "minilm" else tiny_config(max_position_embeddings=512)
    train = ud.load("ubuntu-sample", split="train", negatives="bm25", n_candidates=10, seed=0)
    # a seeded subset drawn before the negatives, as a study draws max_test_queries (the real run's 600)
    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0,
                   max_queries=args.test_queries)
    common = dict(device=str(device), show_progress=False, max_train_queries=args.train_queries, seed=0,
                  eval_batch_size=256 if device.type == "cuda" else 32, **RECIPE)

    rankers: dict[str, Any] = {}
    fit_s: dict[str, float] = {}
    bert = make_ranker("bert", backbone=backbone, **common)
    assert isinstance(bert, NeuralRanker)  # the bert plugin's ranker is one
    rankers["bert"], fit_s["bert"] = _timed(lambda: bert.fit(train), device)
    learned = _study_numbers(_probabilities(bert, test), test)["r10_at_1"]
    if learned < args.min_r10_at_1:
        raise SystemExit(
            f"bert ended at R_10@1 {learned:.3f} on {device} (chance 0.10), under --min-r10-at-1 "
            f"{args.min_r10_at_1}: it did not learn, so no cost or calibration is reported"
        )
    cpu_fit: dict[str, Any] | None = None
    if args.cpu_fit:
        on_cpu_bert = make_ranker("bert", backbone=backbone, **{**common, "device": "cpu"})
        assert isinstance(on_cpu_bert, NeuralRanker)
        _, cpu_fit_s = _timed(lambda: on_cpu_bert.fit(train), torch.device("cpu"))
        cpu_fit = {"fit_s": cpu_fit_s, **_study_numbers(_probabilities(on_cpu_bert, test), test),
                   "device_r10_at_1": learned}
        print(json.dumps({"cpu_fit": cpu_fit}), flush=True)
    for name in names[1:]:
        ranker = _build(name, bert, common, args)
        if name == "mc_dropout":  # bert's network with dropout on: nothing to train
            rankers[name], fit_s[name] = ranker, 0.0
        else:
            rankers[name], fit_s[name] = _timed(partial(ranker.fit, train), device)

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gpu-path-") as tmp:
        for name, ranker in rankers.items():
            p_dev, dev_s = _timed(partial(_probabilities, ranker, test), device)
            folder = Path(tmp) / name
            ranker.save(folder)
            on_cpu = load_ranker(folder, device="cpu")  # loads on the CPU in any case
            cpu: dict[str, Any] = {"predict_cpu_s": None, "max_abs_gap": None, "mean_abs_gap": None,
                                   "top1_same": None, "cpu": None}
            if name in on_cpu_too:
                t0 = time.perf_counter()
                p_cpu = _probabilities(on_cpu, test)
                gap = np.abs(p_dev - p_cpu)
                cpu = {"predict_cpu_s": time.perf_counter() - t0, "max_abs_gap": float(gap.max()),
                       "mean_abs_gap": float(gap.mean()),
                       "top1_same": _top1_agreement(p_dev, p_cpu, np.asarray(test.offsets)),
                       "cpu": _study_numbers(p_cpu, test)}
            rows.append({
                "ranker": name,
                "fit_s": fit_s[name],
                "predict_device_s": dev_s,
                "pairs_per_s_device": test.n_pairs / dev_s,
                **cpu,
                "device": _study_numbers(p_dev, test),
                "trained_loss_last": (None if getattr(ranker, "history_", None) is None
                                      else float(np.mean(ranker.history_.loss[-10:]))),
            })
            rows[-1]["learned"] = rows[-1]["device"]["r10_at_1"] >= args.min_r10_at_1
            print(json.dumps(rows[-1]), flush=True)

    # predict cost on the device, each ranker right after bert, median paired ratio
    def call(r: Any) -> Callable[[], Any]:
        return lambda: _probabilities(r, test)

    ratios: dict[str, list[float]] = {r["ranker"]: [] for r in rows if r["ranker"] != "bert" and r["learned"]}
    for fn in [call(r) for r in rankers.values()]:
        _timed(fn, device)  # warm-up
    bert_s: list[float] = []
    for _ in range(args.repeats):
        for name in ratios:
            _, tb = _timed(call(rankers["bert"]), device)
            _, tr = _timed(call(rankers[name]), device)
            ratios[name].append(tr / tb)
            bert_s.append(tb)
    cost = {"bert": 1.0, **{n: float(np.median(v)) for n, v in ratios.items()}}
    #: bert's whole predict (tokenisation included) over the test pairs, warm: the median of its timed runs
    bert_pairs_per_s = test.n_pairs / float(np.median(bert_s)) if bert_s else None
    for row in rows:
        row["cost_ratio"] = cost.get(row["ranker"])  # None: the model did not learn, its cost says nothing

    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "none"
    env = {
        "device": device.type, "gpu": gpu, "torch": torch.__version__,
        "bf16_autocast": device.type == "cuda" and torch.cuda.is_bf16_supported(),
        "cpu": platform.processor() or platform.machine(), "cpu_threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "backbone": "packaged all-MiniLM-L6-v2" if backbone is None else "tiny random BERT",
        "command": " ".join(["python", "benchmarks/gpu_path.py", *cli]),
    }
    record = {"environment": env, "rows": rows, "cpu_fit": cpu_fit, "bert_pairs_per_s_warm": bert_pairs_per_s,
              "test_queries": test.n_queries, "bert_device_r10_at_1": learned}
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    body = render(record, args)
    print(body)
    if not args.no_write:
        write_section(NAME, body)


def render(record: Mapping[str, Any], args: argparse.Namespace) -> str:
    """This script's section of benchmarks/RESULTS.md from a run's JSON record (``--json``)."""
    env, rows, cpu_fit = record["environment"], record["rows"], record.get("cpu_fit")
    gpu, bert_pairs_per_s = env["gpu"], record.get("bert_pairs_per_s_warm")
    n_test = record.get("test_queries", args.test_queries)
    learned = record.get("bert_device_r10_at_1", rows[0]["device"]["r10_at_1"])
    cpu_fits = _cpu_fits(args.train_queries, n_test)
    papers = {"bert": "1", "mc_dropout": "9.7", "ensemble": "5.0", "sngp": "1.12", "gpf_bert": "1.16",
              "pgdrr": "1.49"}

    def untrained(fmt: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], str]:
        return lambda r: fmt(r) if r["learned"] else "(did not learn)"

    table = markdown_table(
        {
            "ranker": lambda r: r["ranker"],
            "fit on the device (s)": lambda r: "(bert's)" if r["ranker"] == "mc_dropout" else f"{r['fit_s']:.1f}",
            "predict cost / bert's (device)": untrained(lambda r: f"{r['cost_ratio']:.2f}"),
            "papers (PG-DRR Table 2, GPU)": lambda r: papers[r["ranker"]],
            "R_10@1 device / CPU": lambda r: f"{r['device']['r10_at_1']:.3f} / " + (
                "-" if r["cpu"] is None else f"{r['cpu']['r10_at_1']:.3f}"),
            "ECE device / CPU": untrained(lambda r: f"{r['device']['ece']:.4f} / " + (
                "-" if r["cpu"] is None else f"{r['cpu']['ece']:.4f}")),
            "largest / mean abs. gap in P": lambda r: "-" if r["cpu"] is None else
                f"{r['max_abs_gap']:.1e} / {r['mean_abs_gap']:.1e}",
            "same top-1": lambda r: "-" if r["cpu"] is None else f"{r['top1_same']:.3f}",
            "pairs/s on the device": lambda r: f"{r['pairs_per_s_device']:,.0f}",
        },
        rows,
    )
    return "\n".join([
        "## The GPU path: fit and score on CUDA in bf16, score the checkpoints on the CPU "
        "(`benchmarks/gpu_path.py`)",
        "",
        f"Command: `{env['command']}`",
        "",
        f"Device: {env['device']} ({gpu}; torch {env['torch']}, bf16 autocast {env['bf16_autocast']}); "
        f"the CPU side on the same machine ({env['cpu']}, {env['cpu_capability']} kernels, "
        f"{env['cpu_threads']} threads, float32). Backbone: {env['backbone']}; each ranker fitted on "
        f"{'all 9,539' if args.train_queries is None else args.train_queries} Ubuntu-sample training queries with "
        "the real run's recipe (balanced pairs, the six layers, [CLS] pooling, rate 1e-4, 64 tokens, batches "
        "of 16, one epoch"
        + ("" if args.others_train_queries is None else
           f"; `sngp`, `gpf_bert` and `pgdrr` start from the fitted `bert` and train on "
           f"{args.others_train_queries} of those queries")
        + "; `mc_dropout` is "
        f"`bert` with dropout on, T = {args.passes}; the ensemble has M = {args.members} members, `bert` "
        f"the first), then scored on {n_test} test queries with 9 BM25 negatives. The gap columns "
        "compare the device's `predict` with the CPU's on the same checkpoint; `mc_dropout`'s masks come "
        "from each device's generator, so its gap holds Monte Carlo noise as well as bf16 rounding; "
        "`pgdrr`'s `predict` is its closed form over the saved Gibbs state (rounding only); a dash: that ranker "
        "was not scored on the CPU (`--cpu-check`). Pairs per second: the whole `predict` on the device, "
        "tokenisation included, over the test pairs, timed once (the first call after training). A model under "
        f"R_10@1 {args.min_r10_at_1} on the device did not learn: its cost and calibration are not given. "
        + ("" if not cpu_fits else
           f"`bert` fitted on the CPU with the same recipe, on the same {n_test} test queries: "
           + "; ".join(f"R_10@1 {f['r10_at_1']:.3f}, ECE {f['ece']:.4f} ({f['label']}, {f['source']})"
                       for f in cpu_fits)
           + f"; on the device R_10@1 {learned:.3f}. ")
        + ("" if cpu_fit is None else
           f"`bert` fitted on the CPU with the same recipe: R_10@1 {cpu_fit['r10_at_1']:.3f} against "
           f"{cpu_fit['device_r10_at_1']:.3f} on the device, in {cpu_fit['fit_s']:.0f} s. ")
        + ("" if bert_pairs_per_s is None else
           f"Warm, `bert` scores {bert_pairs_per_s:,.0f} pairs per second on the device (tokenisation "
           "included; the median of its timed runs below). ")
        + "The cost "
        f"ratio is the median over {args.repeats} rounds of a ranker's whole scoring of the test queries "
        "(encoding included) against `bert`'s, timed right before it.",
        "",
        table,
    ])


if __name__ == "__main__":
    main()
