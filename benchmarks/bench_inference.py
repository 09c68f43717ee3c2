"""Inference cost of mc_dropout (T passes), ensemble (M members), sngp, gpf_bert and pgdrr, as ratios to bert.

One backbone, one batch of real Ubuntu-sample pairs; each configuration is
timed right after a bert run, ``--repeats`` rounds; the median paired ratio is kept. Targets:
mc_dropout <= 1.05 x T and ensemble <= 1.05 x M times bert (no overhead beyond
the passes themselves), sngp and gpf_bert <= 1.05 x, pgdrr <= 1.10 x; PG-DRR's
Table 2 (Ye et al., AAAI 2023) reports 9.7x, 5.0x, 1.12x (SNGP) and 1.49x on a
GPU, GPF-BERT's Table 3 1.16x.

Two tables: the networks on one pre-encoded batch (``score_probabilities``,
what ``predict`` runs after encoding), and whole ``predict`` calls on the
same queries (encoding included) for the rankers whose prediction is not a
plain forward pass: ``sngp``/``gpf_bert`` (mean-field, a triangular solve per
batch) and ``pgdrr`` (a GP conditioned on its memory bank; measured when the
``uncertank-pgdrr`` plugin is installed, built with ``make_ranker("pgdrr")``).
The GP rankers are timed with the state they have after training (their
``on_train_end`` run on real training pairs: a covariance, a memory bank) on
untrained weights, which costs the same.

MC dropout is timed on both implementations of ``score_probabilities``
(``mc_impl="fast"``, the default, and ``"reference"``), one pass and T
passes, and with the passes of a batch stacked into one call or run one by
one; ``--compile`` adds a ``torch.compile``-d dropout pass. Two more tables:
``bert``'s ``predict`` against sentence-transformers' ``CrossEncoder.predict``
on the same weights (80 pairs, ``max_length`` 128: the CrossEncoder is saved
and loaded back as ``NeuralRanker(pretrained=...)``), and
``risk_aware_rerank`` on 100,000 queries x 10 candidates x 30 samples against
its mean-variance floor (one pass over the draws for the means, one for the
second moments, and a stable per-query sort by ``mean - b var``), each call
the first in a fresh process, and warm.

    python benchmarks/bench_inference.py            # packaged MiniLM, 64 pairs, T=10, M=5

The results replace this script's section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from _results import write_section

NAME = "bench_inference"
#: What the benchmark sets as ``weights_source_`` of its rankers, whose untrained heads cost what trained ones do.
UNTRAINED = "benchmark: untrained weights"


def _synchronize() -> None:
    """Wait for the GPU's queued work, if torch has started CUDA: a call that returns a device tensor returns
    before its kernels ran, and its time would land on the next call timed."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _clock(fn: Callable[[], Any]) -> float:
    _synchronize()
    t0 = time.perf_counter()
    fn()
    _synchronize()
    return time.perf_counter() - t0


def _paired_ratios(
    base: Callable[[], Any], fns: dict[str, Callable[[], Any]], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Time every function right after the baseline, ``repeats`` rounds.

    On a machine shared with other jobs the load drifts, so each ratio is
    taken against the baseline timed just before it, and the median over
    rounds is kept; absolute times are the best of all runs.

    Returns
    -------
    ratios : dict
        Median of ``t(fn) / t(base)`` per function.
    best : dict
        Best absolute time per function, ``"base"`` included.
    """
    base()
    for fn in fns.values():
        fn()  # warm-up
    ratios: dict[str, list[float]] = {k: [] for k in fns}
    best: dict[str, float] = {"base": float("inf"), **{k: float("inf") for k in fns}}
    for _ in range(repeats):
        for key, fn in fns.items():
            tb, tf = _clock(base), _clock(fn)
            best["base"] = min(best["base"], tb)
            best[key] = min(best[key], tf)
            ratios[key].append(tf / tb)
    return {k: float(np.median(v)) for k, v in ratios.items()}, best


RISK_CODE = """
import sys, time, numpy as np
from uncertank import PredictiveSamples
from uncertank.uncertainty import risk_aware_rerank
n_q, length, n_samples = 100_000, 10, 30
draws = np.random.default_rng(0).random((n_samples, n_q * length))
offsets = np.arange(0, n_q * length + 1, length)

def floor(ps):
    # mean-variance reranking with the library's calls: mean(), var(), a stable sort of each list
    mean, var = ps.mean(), ps.var()
    return np.argsort(-(mean - 0.5 * var).reshape(n_q, length), axis=1, kind="stable")

def lean(ps):
    # the least a mean-variance reranking does: one pass for the means, one for the second moments
    # (no temporary of the draws' size, as numpy.var makes), and the same sort
    mean = ps.samples.mean(axis=0)
    var = np.einsum("sp,sp->p", ps.samples, ps.samples) / n_samples - mean * mean
    return np.argsort(-(mean - 0.5 * var).reshape(n_q, length), axis=1, kind="stable")

def rerank(ps):
    return risk_aware_rerank(ps, b=0.5)

fn = {"floor": floor, "lean": lean, "rerank": rerank}[sys.argv[1]]
times = []
for _ in range(int(sys.argv[2])):
    ps = PredictiveSamples(draws, offsets)  # as a ranker returns it: nothing computed yet
    t0 = time.perf_counter()
    fn(ps)
    times.append(time.perf_counter() - t0)
print(" ".join(map(repr, times)))
"""


def _risk_ratios(repeats: int) -> dict[str, float]:
    """risk_aware_rerank against its floors: first calls in fresh processes (paired), then warm (3rd call).

    Returns the median ratios to the library's mean-variance path (``first``,
    ``warm``) and to the lean floor (``lean_first``, ``lean_warm``), and the
    best first-call times.
    """
    ratios: dict[str, list[float]] = {"first": [], "warm": [], "lean_first": [], "lean_warm": []}
    best = {"floor": float("inf"), "lean": float("inf"), "rerank": float("inf")}
    for _ in range(repeats):
        t = {}
        for name in ("floor", "rerank", "lean"):
            out = subprocess.run(
                [sys.executable, "-c", RISK_CODE, name, "3"], check=True, capture_output=True, text=True
            ).stdout.split()
            t[name] = [float(x) for x in out]
            best[name] = min(best[name], t[name][0])
        ratios["first"].append(t["rerank"][0] / t["floor"][0])
        ratios["warm"].append(t["rerank"][-1] / t["floor"][-1])
        ratios["lean_first"].append(t["rerank"][0] / t["lean"][0])
        ratios["lean_warm"].append(t["rerank"][-1] / t["lean"][-1])
    summary = {k: float(np.median(v)) for k, v in ratios.items()}
    summary.update({f"{k}_s": v for k, v in best.items()})
    return summary


def _cross_encoder_ratio(queries: Any, repeats: int, device: str = "cpu") -> dict[str, Any]:
    """bert's predict / CrossEncoder.predict on the same weights (the CrossEncoder saved, loaded as pretrained).

    ``bert`` at its default ``eval_batch_size`` and at 32, CrossEncoder.predict's default; both on
    ``device``, each with its own default precision there (``bert``: bf16 autocast on a GPU).
    """
    import transformers
    from sentence_transformers import CrossEncoder

    from uncertank.nn import NeuralRanker, default_backbone_path

    transformers.logging.set_verbosity_error()
    cross = CrossEncoder(default_backbone_path(), num_labels=1, max_length=128, device=device)
    folder = tempfile.mkdtemp(prefix="bench-cross-encoder-")
    cross.save(folder)
    bert = NeuralRanker(pretrained=folder, max_length=128, device=device, show_progress=False)
    texts = [" ".join(c) for c in queries.contexts]
    pairs = [(texts[q], c) for q, c in zip(queries.query_index.tolist(), queries.candidates, strict=True)]
    ratio, best = _paired_ratios(
        lambda: cross.predict(pairs, show_progress_bar=False),
        {"bert": lambda: bert.predict(queries)}, repeats,
    )
    return {"ratio": ratio, "best": best, "tokens": float(bert.encode(queries).lengths.mean()),
            "batch": bert.training_config.eval_batch_size, "pairs": queries.n_pairs}


def _compiled_pass_ratio(model: Any, batch: Any, repeats: int) -> tuple[float, float]:
    """One torch.compile-d pass with dropout on (the reference modes) / one eager eval pass, and the compile time."""
    import torch

    from uncertank.nn import dropout_active

    inputs = batch.batch(np.arange(batch.n_pairs), torch.device("cpu"))
    compiled = torch.compile(model, dynamic=False)
    with torch.inference_mode():
        t0 = time.perf_counter()
        with dropout_active(model):
            compiled(**inputs)
        compile_s = time.perf_counter() - t0

        def eval_pass() -> None:
            model.eval()
            model(**inputs)

        def compiled_pass() -> None:
            with dropout_active(model):
                compiled(**inputs)

        ratio, _ = _paired_ratios(eval_pass, {"compiled": compiled_pass}, repeats)
    return ratio["compiled"], compile_s


def _profile(rankers: dict[str, Any], queries: Any, device: Any) -> dict[str, dict[str, float]]:
    """Where one warm whole ``predict`` of each ranker spends its time, from torch.profiler.

    Prints the busiest operators (host, and device on a GPU) and returns, per ranker, the call's wall time,
    the host time inside torch's operators and the device's kernel time (ms); what the wall time holds
    beyond the operators is Python, chiefly the tokenisation.
    """
    from torch.profiler import ProfilerActivity, profile

    on_gpu = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    out: dict[str, dict[str, float]] = {}
    for name, ranker in rankers.items():
        ranker.predict(queries)  # warm
        _synchronize()
        with profile(activities=activities) as prof:
            t0 = time.perf_counter()
            ranker.predict(queries)
            _synchronize()
            wall = time.perf_counter() - t0
        events = prof.key_averages()
        host = sum(e.self_cpu_time_total for e in events) / 1e3
        kernel = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0))
                     for e in events) / 1e3 if on_gpu else float("nan")
        out[name] = {"wall_ms": wall * 1e3, "host_ops_ms": host, "device_ms": kernel}
        print(f"== profile: {name} predict, {queries.n_pairs} pairs: {out[name]}", flush=True)
        print(events.table(sort_by="self_cpu_time_total", row_limit=12), flush=True)
        if on_gpu:
            print(events.table(sort_by="self_cuda_time_total", row_limit=8), flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backbone", choices=["minilm", "tiny"], default="minilm")
    ap.add_argument("--pairs", type=int, default=64, help="pairs in the batch")
    ap.add_argument("--max-length", type=int, default=100)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--compile", action="store_true", help="also time a torch.compile-d dropout pass (slow to compile)")
    ap.add_argument("--profile", action="store_true",
                    help="print torch.profiler's busiest operators of one whole predict per ranker (host and device)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args(argv)
    cli = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--no-write"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import importlib.util

    import torch

    import uncertank.datasets as ud
    from uncertank import make_ranker
    from uncertank.nn import (
        NeuralRanker,
        autocast,
        dropout_active,
        encode_queries,
        fast_mc_dropout,
        get_accelerator,
        mc_passes,
        resolve_device,
        score_probabilities,
    )
    from uncertank.nn.inference import PASS_TOKENS
    from uncertank.nn.testing import tiny_config

    backbone = None if args.backbone == "minilm" else tiny_config(max_position_embeddings=512)
    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0)
    train = ud.load("ubuntu-sample", split="train", negatives="bm25", n_candidates=10, seed=0)
    n_queries = -(-args.pairs // 10)
    queries = test.subset(np.arange(n_queries))
    common = dict(max_length=args.max_length, eval_batch_size=args.pairs, device=args.device, show_progress=False)
    members = [NeuralRanker(backbone, seed=m, **common) for m in range(args.members)]
    models = [m.build_model() for m in members]
    tokenizer = members[0].tokenizer_
    if tokenizer is None:  # build_model sets it
        raise RuntimeError("the first member has no tokenizer after build_model")
    enc = encode_queries(tokenizer, queries, max_length=args.max_length)
    keep = np.arange(min(args.pairs, enc.n_pairs))
    from uncertank.nn.inputs import EncodedPairs

    lo, hi = enc.offsets[keep[0]], enc.offsets[keep[-1] + 1]
    batch = EncodedPairs(
        enc.input_ids[lo:hi], enc.token_type_ids[lo:hi], enc.offsets[: keep.size + 1] - lo, enc.pad_token_id
    )
    acc = get_accelerator(args.device)
    device = resolve_device(args.device)

    # The GP rankers, in the state training leaves them in: on_train_end on real training pairs.
    train_pairs = train.subset(np.arange(30))
    gp_rankers: dict[str, Any] = {}
    names = ["sngp", "gpf_bert"] + (["pgdrr"] if importlib.util.find_spec("uncertank_pgdrr") else [])
    for name in names:
        ranker = make_ranker(name, backbone=backbone, seed=0, **common)
        assert isinstance(ranker, NeuralRanker)  # each GP ranker is one
        model = ranker.build_model()
        model.eval()
        labels = np.asarray(train_pairs.labels, dtype=np.int64)
        ranker.on_train_end(model, ranker.encode(train_pairs), labels, acc)
        ranker.weights_source_ = UNTRAINED  # only the cost is measured: untrained weights cost the same
        gp_rankers[name] = ranker
    members[0].weights_source_ = UNTRAINED

    def run(ms: list[Any], **kw: Any) -> Callable[[], Any]:
        return lambda: score_probabilities(ms, batch, batch_size=args.pairs, accelerator=acc, **kw)

    def stacked_passes(per_call: int) -> Callable[[], Any]:
        def fn() -> Any:
            inputs = batch.batch(np.arange(batch.n_pairs), device)
            # the fast masks are drawn on the CPU; on a GPU torch's own dropout, under the scoring path's autocast
            sites = fast_mc_dropout(models[0], seed=0) if device.type == "cpu" else dropout_active(models[0])
            with sites, autocast(device), torch.inference_mode():
                return mc_passes(models[0], inputs, args.passes, passes_per_call=per_call)

        return fn

    width = int(batch.lengths.max())
    default_per_call = max(1, PASS_TOKENS // (batch.n_pairs * width))

    load_before = os.getloadavg()[0]
    ratio, t = _paired_ratios(
        run(models[:1]),
        {
            "dropout_1": run(models[:1], mc=True, n_passes=1, seed=0),
            "dropout_1_reference": run(models[:1], mc=True, n_passes=1, seed=0, mc_impl="reference"),
            "mc_dropout": run(models[:1], mc=True, n_passes=args.passes, seed=0),
            "mc_dropout_one_by_one": stacked_passes(1),
            "mc_dropout_all_in_one": stacked_passes(args.passes),
            "mc_dropout_reference": run(models[:1], mc=True, n_passes=args.passes, seed=0, mc_impl="reference"),
            "ensemble": run(models, stacked=False),
            "ensemble_vmap": run(models, stacked=True),
            "sngp": run([gp_rankers["sngp"].build_model()]),
            "gpf_bert": run([gp_rankers["gpf_bert"].build_model()]),
        },
        args.repeats,
    )
    predict_ratio, predict_t = _paired_ratios(
        lambda: members[0].predict(queries),
        {"encode": partial(members[0].encode, queries),
         **{name: partial(r.predict, queries) for name, r in gp_rankers.items()}},
        args.repeats,
    )
    profiled = _profile({"bert": members[0], **gp_rankers}, queries, device) if args.profile else None
    load_mid = os.getloadavg()[0]
    compiled = _compiled_pass_ratio(models[0], batch, args.repeats) if args.compile else None
    # 8 queries on the CPU; on a GPU, where a few batches say nothing, 100 (1,000 pairs)
    cross = _cross_encoder_ratio(test.subset(np.arange(8 if device.type == "cpu" else 100)), args.repeats,
                                 str(device))
    load_cross = os.getloadavg()[0]
    precisions = " (bert: bf16 autocast; CrossEncoder: float32)" if device.type == "cuda" else ""
    # risk-aware reranking is numpy on the CPU: measured in the CPU's section, not again beside a GPU
    risk = _risk_ratios(args.repeats) if device.type == "cpu" else None
    load_after = os.getloadavg()[0]
    t["bert"] = t.pop("base")
    ratio["bert"] = 1.0
    per_k = {k: v / batch.n_pairs * 1000 for k, v in t.items()}
    predict_per_k = {k: v / queries.n_pairs * 1000 for k, v in predict_t.items()}
    tokens = float(batch.lengths.mean())
    papers = {"sngp": "1.12", "gpf_bert": "1.16 (GPF-BERT Table 3)", "pgdrr": "1.49"}
    lines = [
        "## Inference cost: bert, mc_dropout, ensemble, sngp, gpf_bert, pgdrr (`benchmarks/bench_inference.py`)",
        "",
        f"Command: `{' '.join(['python', 'benchmarks/bench_inference.py', *cli])}`",
        "",
        f"Backbone: {'packaged all-MiniLM-L6-v2' if backbone is None else 'tiny random BERT (2 layers, hidden 32)'}; "
        f"one batch of {batch.n_pairs} Ubuntu-sample test pairs (mean {tokens:.0f} tokens, max_length "
        f"{args.max_length}); T = {args.passes}, M = {args.members}; after a warm-up, {args.repeats} rounds in which "
        f"each configuration is timed right after a bert run; ratios are the median over rounds of the "
        f"paired ratio, times the best run. "
        f"Device: {device.type} ({platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; 1-minute load average {load_before:.1f} before, "
        f"{load_mid:.1f} after, on a machine shared with other jobs).",
        "",
        "The networks on one pre-encoded batch:",
        "",
        "| ranker | s per 1,000 pairs (best run) | ratio to bert (median paired) | target | papers (PG-DRR Table 2) |",
        "|---|---:|---:|---:|---:|",
        f"| bert | {per_k['bert']:.3g} | 1.00 | 1 | 1 |",
        f"| one dropout pass (fast masks) | {per_k['dropout_1']:.3g} | {ratio['dropout_1']:.2f} | <= 1.25 | |",
        f"| one dropout pass (reference: `bernoulli_`, unfused attention) | {per_k['dropout_1_reference']:.3g} | "
        f"{ratio['dropout_1_reference']:.2f} | | |",
        f"| mc_dropout (T={args.passes}), fast masks, default ({default_per_call} pass(es) per call) | "
        f"{per_k['mc_dropout']:.3g} | {ratio['mc_dropout']:.2f} | <= {1.25 * args.passes:.1f} | 9.7 |",
        f"| mc_dropout (T={args.passes}), fast masks, one pass per call | {per_k['mc_dropout_one_by_one']:.3g} | "
        f"{ratio['mc_dropout_one_by_one']:.2f} | | |",
        f"| mc_dropout (T={args.passes}), fast masks, all T passes in one call (T x batch) | "
        f"{per_k['mc_dropout_all_in_one']:.3g} | {ratio['mc_dropout_all_in_one']:.2f} | | |",
        f"| mc_dropout (T={args.passes}), reference | {per_k['mc_dropout_reference']:.3g} | "
        f"{ratio['mc_dropout_reference']:.2f} | | |",
        f"| ensemble (M={args.members}), member by member | {per_k['ensemble']:.3g} | {ratio['ensemble']:.2f} | "
        f"<= {1.05 * args.members:.2f} | 5.0 |",
        f"| ensemble (M={args.members}), vmap over stacked weights | {per_k['ensemble_vmap']:.3g} | "
        f"{ratio['ensemble_vmap']:.2f} | <= {1.05 * args.members:.2f} | 5.0 |",
        f"| sngp (D = 2048, mean-field) | {per_k['sngp']:.3g} | {ratio['sngp']:.2f} | <= 1.05 | 1.12 |",
        f"| gpf_bert (D = 2048, mean-field) | {per_k['gpf_bert']:.3g} | {ratio['gpf_bert']:.2f} | <= 1.05 | "
        "1.16 (GPF-BERT Table 3) |",
        "",
        f"One pass with dropout on costs {ratio['dropout_1']:.2f} x an eval pass with the fast masks "
        f"(target <= 1.25: {'met' if ratio['dropout_1'] <= 1.25 else 'missed'}) and "
        f"{ratio['dropout_1_reference']:.2f} x with the reference; mc_dropout (T = {args.passes}) costs "
        f"{ratio['mc_dropout']:.2f} x bert (target <= {1.25 * args.passes:.1f}: "
        f"{'met' if ratio['mc_dropout'] <= 1.25 * args.passes else 'missed'}), so its overhead beyond T "
        f"single passes is mc_dropout / (T x one dropout pass) = "
        f"{ratio['mc_dropout'] / (args.passes * ratio['dropout_1']):.2f}.",
        *(["", "The fast masks are a CPU path: on this device the rows named for them run torch's own dropout "
            "(`mc_implementation` picks the reference there), so they time the same work as the reference's."]
          if device.type != "cpu" else []),
        "",
        (
            f"torch.compile of the model with dropout on (the reference modes, inductor's own random "
            f"numbers; fixed shapes): one compiled pass costs {compiled[0]:.2f} x an eager eval pass, after "
            f"{compiled[1]:.0f} s of compilation (less when inductor's on-disk cache holds an earlier run's "
            f"kernels; not adopted: it is slower than the fast masks, needs a C++ compiler at run time and "
            f"compiles again for every new batch shape)."
            if compiled is not None
            else "torch.compile of the dropout pass: not measured in this run (`--compile`)."
        ),
        "",
        f"Whole `predict` calls on the same {queries.n_queries} queries ({queries.n_pairs} pairs, encoding included):",
        "",
        "| ranker | s per 1,000 pairs (best run) | ratio to bert's predict (median paired) | target | papers |",
        "|---|---:|---:|---:|---:|",
        f"| bert | {predict_per_k['base']:.3g} | 1.00 | 1 | 1 |",
        f"| tokenisation alone (`encode`, on the host) | {predict_per_k['encode']:.3g} | "
        f"{predict_ratio['encode']:.2f} | | |",
    ]
    for name in gp_rankers:
        target = "<= 1.10" if name == "pgdrr" else "<= 1.05"
        lines.append(
            f"| {name} | {predict_per_k[name]:.3g} | {predict_ratio[name]:.2f} | {target} | {papers[name]} |"
        )
    lines += [
        "",
        f"`bert` scores {1000 / per_k['bert']:,.0f} pairs per second on the pre-encoded batch and "
        f"{1000 / predict_per_k['base']:,.0f} in a whole `predict` (best runs). "
        f"Tokenisation takes {predict_ratio['encode']:.0%} of `bert`'s whole `predict` here: where it is most of "
        f"the call (a GPU), whole-`predict` ratios measure the host, and the networks' table above is the "
        f"methods' cost.",
    ]
    if profiled is not None:
        lines += [
            "",
            "One warm whole `predict` of each, under torch.profiler (its own overhead included): the call's "
            "wall time, the host's time inside torch's operators and the device's kernel time; the rest of the "
            "wall time is Python, chiefly the tokenisation.",
            "",
            "| ranker | wall (ms) | torch operators on the host (ms) | kernels on the device (ms) | "
            "kernels / bert's |",
            "|---|---:|---:|---:|---:|",
        ]
        base_kernels = profiled["bert"]["device_ms"]
        for name, row in profiled.items():
            kernels, share = "-", "-"  # no device kernels on the CPU
            if device.type == "cuda":
                kernels, share = f"{row['device_ms']:.1f}", f"{row['device_ms'] / base_kernels:.2f}"
            lines.append(f"| {name} | {row['wall_ms']:.1f} | {row['host_ops_ms']:.1f} | {kernels} | {share} |")
    if "pgdrr" not in gp_rankers:
        lines += ["", "pgdrr: not measured (the uncertank-pgdrr plugin is not installed)."]
    lines += [
        "",
        f"Scoring against sentence-transformers on the same weights: `bert` (`NeuralRanker(pretrained=...)` on a "
        f"saved `CrossEncoder(all-MiniLM-L6-v2, num_labels=1)`) `predict` over {cross['pairs']} pairs "
        f"({cross['pairs'] // 10} queries, max_length 128, mean {cross['tokens']:.0f} tokens) against "
        f"`CrossEncoder.predict` on the same pairs (batches of 32), tokenisation included, both on {device} "
        f"with their own default precision{precisions}, "
        f"paired as above (1-minute load {load_cross:.1f} after):",
        "",
        "| scorer | s per 1,000 pairs (best run) | ratio to CrossEncoder.predict (median paired) | target |",
        "|---|---:|---:|---:|",
        f"| CrossEncoder.predict | {cross['best']['base'] / cross['pairs'] * 1000:.3g} | 1.00 | |",
        f"| bert predict (eval_batch_size {cross['batch']}, the default) | "
        f"{cross['best']['bert'] / cross['pairs'] * 1000:.3g} "
        f"| {cross['ratio']['bert']:.2f} | <= 1.0 |",
    ]
    if risk is not None:
        lines += [
        "",
        f"Risk-aware reranking, 100,000 queries x 10 candidates x 30 samples, b = 0.5, on a `PredictiveSamples` "
        f"as a ranker returns it (nothing computed yet); medians over {args.repeats} rounds of fresh processes "
        f"(1-minute load {load_after:.1f} after):",
        "",
        "| floor | floor, first call (best, s) | risk_aware_rerank / floor, first call | third call | target |",
        "|---|---:|---:|---:|---:|",
        f"| the library's mean-variance path: `mean()`, `var()`, a stable sort per list | {risk['floor_s']:.3f} | "
        f"{risk['first']:.2f} | {risk['warm']:.2f} | <= 4 |",
        f"| lean: one pass for the means, one for the second moments (no temporary), the same sort | "
        f"{risk['lean_s']:.3f} | {risk['lean_first']:.2f} | {risk['lean_warm']:.2f} | |",
        "",
        f"`risk_aware_rerank` itself took {risk['rerank_s']:.3f} s (best first call).",
        ]
    if device.type == "cpu":
        lines += ["", "The GPU's numbers are a section of their own (`--device cuda`; docs/benchmarks.md, "
                  "\"On a GPU\")."]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:  # a GPU's numbers go to a section of their own beside the CPU's
        write_section(NAME if device.type == "cpu" else f"{NAME}_{device.type}", body)


if __name__ == "__main__":
    main()
