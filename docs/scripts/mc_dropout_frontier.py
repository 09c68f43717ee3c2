"""The cost/calibration frontier of MC dropout in the top k layers (``mc_layers``), on the real run's model.

Takes member 0 of the real run (``docs/scripts/real_run_neural.py``: the
work folder it found by the same settings digest, the same validation and
test queries) and, for every k in ``--ks`` (0 = dropout in the head only,
``all`` = plain MC dropout), scores the validation and test queries with
``MCDropoutRanker.from_ranker(bert, n_passes=--passes, mc_layers=k)``; T =
5, 10 and 20 are the first T of those passes. Per (k, T):

- cost: the network on one pre-encoded batch of 64 test pairs, as a ratio to
  ``bert`` timed right before it (median over ``--repeats`` rounds, the
  paired timing of ``benchmarks/bench_inference.py``);
- ECE over all test pairs and balanced (10 equal-width bins, balanced seed
  0), and the share of full MC dropout's (k = all, T = 10) balanced-ECE
  reduction over ``bert`` that the setting keeps;
- R_10@1 of the mean; risk-aware gain: test R_10@1 of the risk-aware ranking
  at the ``b`` chosen on validation R_10@1 (the study's grid) minus that of
  the mean;
- NOTA macro-F1 (random forest, stratified 5-fold), means only and means
  plus variances, with the paired t-test between them;

and ``bert``'s own row (dropout off). Everything goes to ``--out`` (JSON), the
frontier to ``--figure`` (PNG: cost ratio against the share kept, one line per
T) and a markdown table to stdout. Samples are cached as .npy (one file per
split and k) in a sub-folder of the real run's work folder named by a digest
of member 0's weights, so a rerun resumes::

    python docs/scripts/real_run_neural.py --stage train     # member 0 first (if not trained yet)
    python docs/scripts/mc_dropout_frontier.py
    python docs/scripts/mc_dropout_frontier.py --smoke       # the whole pipeline on a tiny random model

``--real-run-args`` passes the arguments the real run was started with (its
settings digest names the work folder), e.g. ``--real-run-args
"--num-hidden-layers 3"``. ``--smoke`` trains a 4-layer random BERT for a
few steps on 30 toy queries and runs everything into a temporary folder
(under ``--workdir`` when given).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_run_neural import _atomic_json, _atomic_npy, _settings_key, _subset  # noqa: E402

PASSES = (5, 10, 20)
REFERENCE_T = 10
TARGET_COST, TARGET_SHARE = 2.5, 0.9


def _real_run_args(argv: list[str]) -> argparse.Namespace:
    """The real run's arguments, parsed by real_run_neural.py's own parser (its defaults, then ``argv``).

    ``real_run_neural.main`` is stopped right after it parses: nothing is
    loaded, trained or written.
    """
    import real_run_neural

    parsed: list[argparse.Namespace] = []
    original = argparse.ArgumentParser.parse_args

    class _Parsed(Exception):
        pass

    def capture(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
        parsed.append(original(self, args, namespace))
        raise _Parsed

    with mock.patch.object(argparse.ArgumentParser, "parse_args", capture):
        try:
            real_run_neural.main(argv)
        except _Parsed:
            pass
    return parsed[0]


def _parse_ks(text: str) -> list[int | None]:
    ks: list[int | None] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "all":
            ks.append(None)
        elif part.isdigit():
            ks.append(int(part))
        else:
            raise SystemExit(f"--ks must be a comma list of integers >= 0 and 'all'; got {text!r}")
    if not ks or len(set(ks)) != len(ks):
        raise SystemExit(f"--ks must name distinct values; got {text!r}")
    return ks


def _label(k: int | None) -> str:
    return "all" if k is None else str(k)


def _smoke_data(work: Path, n_valid: int, n_test: int) -> tuple[Any, Any, Path]:
    """Toy queries and a 4-layer random BERT trained for 24 steps on 30 of them, saved as member_0."""
    from uncertank import make_ranker
    from uncertank.nn.testing import tiny_config, toy_queries

    folder = work / "member_0"
    if not (folder / "uncertank.json").exists():
        bert = make_ranker(
            "bert", backbone=tiny_config(num_hidden_layers=4), max_length=32, epochs=3, batch_size=8, lr=3e-3,
            show_progress=False, device="cpu",
        )
        bert.fit(toy_queries(30, seed=0))
        bert.save(folder)
    return toy_queries(n_valid, seed=1), toy_queries(n_test, seed=2), folder


def _cost_batch(bert: Any, test: Any, n_pairs: int) -> Any:
    """The first ``n_pairs`` test pairs, encoded by ``bert``'s tokenizer (as benchmarks/bench_inference.py)."""
    from uncertank.nn.inputs import EncodedPairs

    first = test.subset(np.arange(min(test.n_queries, -(-n_pairs // 10))))
    enc = bert.encode(first)
    n = min(n_pairs, enc.n_pairs)
    hi = enc.offsets[n]
    return EncodedPairs(enc.input_ids[:hi], enc.token_type_ids[:hi], enc.offsets[: n + 1], enc.pad_token_id)


def _paired_ratios(base: Any, fns: dict[Any, Any], repeats: int) -> tuple[dict[Any, float], dict[Any, float]]:
    """Median over ``repeats`` rounds of ``t(fn) / t(base)``, ``base`` timed right before each ``fn``; best times."""
    base()
    for fn in fns.values():
        fn()  # warm-up
    ratios: dict[Any, list[float]] = {k: [] for k in fns}
    best: dict[Any, float] = {"base": math.inf, **{k: math.inf for k in fns}}
    for _ in range(repeats):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            base()
            t1 = time.perf_counter()
            fn()
            t2 = time.perf_counter()
            best["base"] = min(best["base"], t1 - t0)
            best[key] = min(best[key], t2 - t1)
            ratios[key].append((t2 - t1) / (t1 - t0))
    return {k: float(np.median(v)) for k, v in ratios.items()}, best


def _samples(path_dir: Path, split: str, queries: Any, k: int | None, passes: int, bert: Any) -> Any:
    """(passes, n_pairs) samples of ``split`` under ``mc_layers=k``: read from a cached file, or scored and saved."""
    from uncertank_mcdropout import MCDropoutRanker

    stem = f"{split}_q{queries.n_queries}_k{_label(k)}_T"
    for found in sorted(path_dir.glob(f"{stem}*.npy")):
        if found.stem[len(stem):].isdigit() and int(found.stem[len(stem):]) >= passes:
            return np.load(found)[:passes]
    t0 = time.perf_counter()
    samples = MCDropoutRanker.from_ranker(bert, n_passes=passes, mc_layers=k).predict_samples(queries).samples
    _atomic_npy(path_dir / f"{stem}{passes}.npy", samples)
    print(f"{split}, k = {_label(k)}: {passes} passes over {queries.n_pairs} pairs in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    return samples


def _calibration(ranked: Any) -> dict[str, float]:
    from uncertank.metrics import expected_calibration_error, recall_at_k

    return {
        "ECE": float(expected_calibration_error(ranked.scores, ranked.labels, n_bins=10, strategy="uniform")),
        "ECE_balanced": float(expected_calibration_error(ranked, n_bins=10, strategy="uniform", balanced=True, seed=0)),
        "R10@1": float(recall_at_k(ranked, k=1)),
    }


def _row(valid: Any, test: Any, valid_samples: Any, test_samples: Any, grid: Any, trees: int) -> dict[str, Any]:
    """Every number of one (k, T): calibration, R_10@1, risk-aware gain, NOTA F1."""
    from uncertank import PredictiveSamples
    from uncertank.metrics import recall_at_k
    from uncertank.uncertainty import compare_nota, make_nota_task, risk_aware_rerank, select_risk_aversion

    def r1(r: Any) -> float:
        return float(recall_at_k(r, k=1))

    vs = PredictiveSamples(valid_samples, valid.offsets, ranker="mc_dropout")
    ts = PredictiveSamples(test_samples, test.offsets, ranker="mc_dropout")
    ranked = test.ranked(ts.mean())
    row = _calibration(ranked)
    sel = select_risk_aversion(vs, valid.labels, r1, grid=grid)
    risk_r1 = r1(test.ranked(risk_aware_rerank(ts, b=sel.b)))
    row.update({"risk_b": sel.b, "R10@1_risk_aware": risk_r1, "risk_aware_gain": risk_r1 - row["R10@1"]})
    cmp = compare_nota(make_nota_task(ranked, ts.var(), seed=0), n_estimators=trees, seed=0)
    row.update({
        "NOTA_F1_means": cmp.means_only.f1_mean, "NOTA_F1_with_variance": cmp.with_variance.f1_mean,
        "NOTA_F1_with_variance_std": cmp.with_variance.f1_std,
        "NOTA_p_value": None if math.isnan(cmp.p_value) else cmp.p_value,
        "mean_predictive_std": float(test_samples.std(0).mean()),
    })
    return row


def _figure(rows: list[dict[str, Any]], share_defined: bool, path: Path, title: str) -> None:
    """Cost ratio to bert (log x) against the share of the reference's balanced-ECE reduction kept, one line per T."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter, PercentFormatter

    from uncertank._io import atomic_path

    key = "share_of_full_ece_reduction" if share_defined else "ECE_balanced"
    fig, ax = plt.subplots(figsize=(7, 4.6), constrained_layout=True)
    for t in sorted({r["T"] for r in rows}):
        line = [r for r in rows if r["T"] == t]  # in the order of --ks
        xs, ys = [r["cost_ratio"] for r in line], [r[key] for r in line]
        ax.plot(xs, ys, marker="o", label=f"T = {t}")
        for r, x, y in zip(line, xs, ys, strict=True):
            ax.annotate(f"k={r['k']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if share_defined:
        ax.axhline(TARGET_SHARE, color="grey", linestyle="--", linewidth=1, label=f"{TARGET_SHARE:.0%} kept")
        ax.set_ylabel(f"share of full MC dropout's (k = all, T = {REFERENCE_T})\nbalanced-ECE reduction over bert")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    else:
        ax.set_ylabel("balanced ECE (full MC dropout does not reduce bert's)")
    ax.axvline(TARGET_COST, color="grey", linestyle=":", linewidth=1, label=f"{TARGET_COST}x bert")
    ax.set_xscale("log")
    lo, hi = min(r["cost_ratio"] for r in rows), max(r["cost_ratio"] for r in rows)
    ax.set_xticks([x for x in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if lo / 2 <= x <= hi * 2])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("cost: ratio to bert's time on one batch of 64 test pairs")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def _fmt(x: Any, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _table(bert_row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        "| k | T | cost (x bert) | ECE (all) | ECE (balanced) | share of full reduction | R_10@1 | "
        "risk-aware gain (b) | NOTA F1 means | NOTA F1 + var |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| `bert` | 1 | 1.00 | {_fmt(bert_row['ECE'])} | {_fmt(bert_row['ECE_balanced'])} | 0 | "
        f"{_fmt(bert_row['R10@1'])} | | {_fmt(bert_row['NOTA_F1_means'])} | |",
    ]
    for r in rows:
        lines.append(
            f"| {r['k']} | {r['T']} | {r['cost_ratio']:.2f} | {_fmt(r['ECE'])} | {_fmt(r['ECE_balanced'])} | "
            f"{_fmt(r['share_of_full_ece_reduction'], 2)} | {_fmt(r['R10@1'])} | "
            f"{r['risk_aware_gain']:+.3f} ({r['risk_b']:g}) | {_fmt(r['NOTA_F1_means'])} | "
            f"{_fmt(r['NOTA_F1_with_variance'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the measurement; return the JSON payload it writes to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test-queries", type=int, default=None, help="the real run's (600) by default")
    ap.add_argument("--valid-queries", type=int, default=None, help="the real run's (200) by default")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of paired timings")
    ap.add_argument("--ks", default="0,1,2,3,all", help="mc_layers values: integers >= 0 and 'all'")
    ap.add_argument("--passes", type=int, default=max(PASSES), help="T scored per k (the largest T)")
    ap.add_argument("--cost-pairs", type=int, default=64, help="pairs in the timed batch")
    ap.add_argument("--nota-trees", type=int, default=100, help="trees of the NOTA random forest")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="the real run's --workdir (its default); with --smoke, where the temporary folder goes")
    ap.add_argument("--real-run-args", default="", help="the arguments real_run_neural.py was run with")
    ap.add_argument("--out", type=Path, default=None, help="docs/results/mc_dropout_frontier.json")
    ap.add_argument("--figure", type=Path, default=None, help="docs/results/mc_dropout_frontier.png")
    ap.add_argument("--smoke", action="store_true", help="a tiny random model on toy queries, in a temporary folder")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ks = _parse_ks(args.ks)
    if args.passes < 1 or args.repeats < 1 or args.cost_pairs < 1 or args.nota_trees < 1:
        raise SystemExit("--passes, --repeats, --cost-pairs and --nota-trees must be >= 1")
    passes = sorted({t for t in PASSES if t <= args.passes} | {args.passes})
    ref_t = REFERENCE_T if REFERENCE_T in passes else max(passes)

    import torch

    import uncertank.datasets as ud
    from uncertank._io import file_digest
    from uncertank.experiment import StudyConfig
    from uncertank.nn import get_accelerator, load_ranker, score_probabilities
    from uncertank.uncertainty import evaluate_nota, make_nota_task

    rr = _real_run_args(shlex.split(args.real_run_args))
    n_valid = args.valid_queries or (20 if args.smoke else rr.valid_queries)
    n_test = args.test_queries or (20 if args.smoke else rr.test_queries)
    if args.smoke:
        torch.set_num_threads(1)  # a tiny model: fewer threads, less jitter in its millisecond timings
        if args.workdir is not None:
            args.workdir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="mc_dropout_frontier_", dir=args.workdir))
        valid, test, member = _smoke_data(work, n_valid, n_test)
        source = "smoke: a 4-layer random BERT trained for 24 steps on 30 toy queries"
    else:
        work = (args.workdir or rr.workdir) / _settings_key(rr)
        member = work / "member_0"
        if not (member / "uncertank.json").exists():
            raise SystemExit(
                f"the real run's member 0 is not trained yet ({member}); run "
                f"`python docs/scripts/real_run_neural.py --stage train {args.real_run_args}` first"
            )
        data = {
            split: ud.load("ubuntu-sample", split=split, negatives="bm25" if split == "test" else rr.negatives,
                           n_candidates=10, seed=0)
            for split in ("valid", "test")
        }
        valid, test = _subset(data["valid"], n_valid, 1), _subset(data["test"], n_test, 2)
        source = f"member 0 of the real run ({work.relative_to(ROOT) if work.is_relative_to(ROOT) else work})"
    results = work if args.smoke else ROOT / "docs" / "results"
    out = args.out or results / "mc_dropout_frontier.json"
    figure = args.figure or results / "mc_dropout_frontier.png"
    # Named by the weights' digest: a retrained member 0 never reuses another's samples.
    cache = work / "mc_dropout_frontier" / file_digest(member / "model.safetensors")[:12]
    cache.mkdir(parents=True, exist_ok=True)

    bert = load_ranker(member, show_progress=False)  # no bars inside the timed calls
    model = bert.build_model()
    n_layers = len(model.encoder.encoder.layer)
    bad = [k for k in ks if k is not None and k > n_layers]
    if bad:
        raise SystemExit(f"--ks: the model has {n_layers} encoder layers; got {', '.join(map(str, bad))}")
    grid = StudyConfig.__dataclass_fields__["risk_grid"].default

    # bert's own row: dropout off, means only.
    bert_file = cache / f"test_q{test.n_queries}_bert.npy"
    if not bert_file.exists():
        _atomic_npy(bert_file, bert.predict(test).scores)
    ranked = test.ranked(np.load(bert_file))
    bert_row: dict[str, Any] = {"k": "none", "T": 1, "cost_ratio": 1.0, **_calibration(ranked)}
    bert_row["NOTA_F1_means"] = evaluate_nota(make_nota_task(ranked, None, seed=0), n_estimators=args.nota_trees,
                                              seed=0).f1_mean

    samples = {
        (split, k): _samples(cache, split, qs, k, args.passes, bert)
        for k in ks for split, qs in (("valid", valid), ("test", test))
    }

    # Cost: the networks side by side on one pre-encoded batch.
    from uncertank_mcdropout import MCDropoutRanker

    batch = _cost_batch(bert, test, args.cost_pairs)
    acc = get_accelerator(bert.device)
    rankers = {k: MCDropoutRanker.from_ranker(bert, n_passes=args.passes, mc_layers=k) for k in ks}

    def timed(k: int | None, t: int) -> Any:
        mc, layers = rankers[k], n_layers if k is None else k
        return lambda: mc.score_top_layers(batch, n_passes=t, mc_layers=layers)

    load_before = os.getloadavg()
    ratios, best = _paired_ratios(
        lambda: score_probabilities([model], batch, batch_size=batch.n_pairs, accelerator=acc),
        {(k, t): timed(k, t) for k in ks for t in passes},
        args.repeats,
    )
    load_after = os.getloadavg()

    rows: list[dict[str, Any]] = []
    for k in ks:
        for t in passes:
            row = {"k": _label(k), "mc_layers": k, "T": t, "cost_ratio": ratios[(k, t)],
                   "s_per_1000_pairs_best": best[(k, t)] / batch.n_pairs * 1000}
            row.update(_row(valid, test, samples[("valid", k)][:t], samples[("test", k)][:t], grid, args.nota_trees))
            rows.append(row)
    ref = next((r for r in rows if r["k"] == "all" and r["T"] == ref_t), None)
    full = None if ref is None else bert_row["ECE_balanced"] - ref["ECE_balanced"]
    share_defined = full is not None and full > 0
    for r in rows:
        r["ece_balanced_reduction"] = bert_row["ECE_balanced"] - r["ECE_balanced"]
        r["share_of_full_ece_reduction"] = r["ece_balanced_reduction"] / full if share_defined else None
    met = [
        {"k": r["k"], "T": r["T"], "cost_ratio": r["cost_ratio"], "share": r["share_of_full_ece_reduction"]}
        for r in rows
        if share_defined and r["cost_ratio"] <= TARGET_COST and r["share_of_full_ece_reduction"] >= TARGET_SHARE
    ]
    _figure(rows, share_defined, figure,
            f"mc_layers: cost against calibration kept\n{source}\n"
            f"{test.n_queries} test and {valid.n_queries} validation queries")

    cli = list(sys.argv[1:] if argv is None else argv)
    payload: dict[str, Any] = {
        "command": " ".join(["python docs/scripts/mc_dropout_frontier.py", *map(shlex.quote, cli)]),
        "source": source,
        "settings": {
            "ks": [_label(k) for k in ks], "passes": passes, "scored_passes": args.passes,
            "n_layers": n_layers, "reference": {"k": "all", "T": ref_t},
            "max_length": bert.training_config.max_length, "cost_pairs": batch.n_pairs,
            "cost_mean_tokens": float(batch.lengths.mean()), "repeats": args.repeats,
            "risk_grid": list(grid), "nota_trees": args.nota_trees,
            "real_run_args": args.real_run_args, "work_folder": str(work), "samples_folder": str(cache),
            "ece": "10 equal-width bins on [0, 1]; ECE over all test pairs, ECE_balanced keeps as many "
            "non-relevant as relevant pairs (seed 0)",
            "cost": "median over rounds of t(configuration) / t(bert) on one pre-encoded batch, bert timed "
            "right before each configuration; s_per_1000_pairs_best is the best round",
            "risk": "b chosen on validation R_10@1 over risk_grid (ties: closest to 0); gain = test R_10@1 "
            "of the risk-aware ranking minus that of the mean",
            "nota": "random forest, stratified 5-fold, macro-F1; task seed 0",
        },
        "data": {"valid_queries": valid.n_queries, "test_queries": test.n_queries, "test_pairs": test.n_pairs},
        "machine": {
            "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__, "threads": torch.get_num_threads(), "device": str(acc.device),
        },
        "load_average": {"before_timing": list(load_before), "after_timing": list(load_after)},
        "bert": bert_row,
        "frontier": rows,
        "target": {
            "cost_at_most": TARGET_COST, "share_at_least": TARGET_SHARE, "reference_reduction": full,
            "share_defined": share_defined, "met_by": met,
        },
    }
    _atomic_json(out, payload)
    print(_table(bert_row, rows))
    if not share_defined:
        print(f"\nFull MC dropout (k = all, T = {ref_t}) does not reduce bert's balanced ECE here: no share.")
    else:
        print(f"\nSettings at <= {TARGET_COST}x bert keeping >= {TARGET_SHARE:.0%} of the reduction: "
              + (", ".join(f"k={m['k']}, T={m['T']}" for m in met) or "none"))
    print(f"\nJSON: {out}\nfigure: {figure}", flush=True)
    return payload


if __name__ == "__main__":
    main()
