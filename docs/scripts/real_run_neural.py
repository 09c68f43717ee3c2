"""Fine-tune the packaged MiniLM on the Ubuntu sample and evaluate bert, mc_dropout, ensemble.

Reproduces the "Real run" section of docs/rankers.md::

    python docs/scripts/real_run_neural.py

Stages (each resumes from what the previous run left in --workdir):

1. train: M cross-encoders (seeds 0..M-1) fine-tuned on the train split (all
   of it by default, or a random subset with --train-queries), each keeping
   its best epoch on a random subset of the valid split.
2. predict: on a random subset of the test split, ``bert`` (member 0, dropout
   off), ``mc_dropout`` (member 0's weights, T passes with dropout on) and
   ``ensemble`` (all M members); scores saved as .npy, one file per ranker.
3. evaluate: R_10@1, MAP and ECE (10 uniform bins) with uncertank.metrics;
   the numbers, sizes, timings and this command go to --out (JSON), and the
   reliability diagrams to --figure (PNG).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    from uncertank._io import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def _atomic_npy(path: Path, array: Any) -> None:
    from uncertank._io import atomic_path

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, np.asarray(array))


def _subset(qs: Any, n: int | None, seed: int) -> Any:
    if n is None or n >= qs.n_queries:
        return qs
    idx = np.sort(np.random.default_rng(seed).choice(qs.n_queries, size=n, replace=False))
    return qs.subset(idx)


def _reliability_figure(preds: dict[str, Any], labels: Any, offsets: Any, path: Path) -> None:
    """Reliability diagrams over all test pairs and over a balanced sample, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from uncertank import RankedLists
    from uncertank.display import ReliabilityDisplay
    from uncertank.metrics import expected_calibration_error, reliability_curve

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), constrained_layout=True)
    for ax, balanced, title in zip(
        axes, (False, True), ("all test pairs (1 relevant : 9)", "balanced (1 relevant : 1, seed 0)"), strict=True
    ):
        for name, scores in preds.items():
            rl = RankedLists.from_flat(scores, labels, offsets)
            curve = reliability_curve(rl, n_bins=10, balanced=balanced, seed=0)
            ece = expected_calibration_error(rl, n_bins=10, balanced=balanced, seed=0)
            ReliabilityDisplay(curve, ece=float(ece), name=name).plot(ax=ax)
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=8)
    from uncertank._io import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-queries", type=int, default=None, help="all of the train split by default")
    ap.add_argument("--valid-queries", type=int, default=200)
    ap.add_argument("--test-queries", type=int, default=600)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--negatives", default="bm25")
    ap.add_argument("--workdir", type=Path, default=ROOT / ".cache" / "real_run_neural")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "real_run_neural.json")
    ap.add_argument("--figure", type=Path, default=ROOT / "docs" / "results" / "real_run_neural_reliability.png")
    ap.add_argument("--stage", choices=["all", "train", "predict", "evaluate"], default="all")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from uncertank_bert import BertRanker
    from uncertank_ensemble import DeepEnsembleRanker
    from uncertank_mcdropout import MCDropoutRanker

    import uncertank.datasets as ud
    from uncertank.nn import NeuralRanker

    work: Path = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    # The training negatives are built by the data layer (--negatives); the rankers
    # train on the pairs they are given. The test split always has BM25 negatives.
    data = {
        split: ud.load(
            "ubuntu-sample", split=split, negatives="bm25" if split == "test" else args.negatives,
            n_candidates=10, seed=0,
        )
        for split in ("train", "valid", "test")
    }
    train = _subset(data["train"], args.train_queries, 0)
    valid = _subset(data["valid"], args.valid_queries, 1)
    test = _subset(data["test"], args.test_queries, 2)
    timings_file = work / "timings.json"
    timings: dict[str, Any] = json.loads(timings_file.read_text()) if timings_file.exists() else {}

    members: list[NeuralRanker] = []
    if args.stage in ("all", "train", "predict"):
        for m in range(args.members):
            folder = work / f"member_{m}"
            if (folder / "uncertank.json").exists():
                members.append(BertRanker.load(folder))
                continue
            if args.stage == "predict":
                raise SystemExit(f"member {m} is not trained yet ({folder}); run --stage train")
            ranker = BertRanker(
                max_length=args.max_length,
                epochs=args.epochs,
                batch_size=args.batch_size,
                lr=args.lr,
                seed=m,
                device="auto",
            )
            t0 = time.perf_counter()
            ranker.fit(train, valid)
            timings[f"train_member_{m}_s"] = round(time.perf_counter() - t0, 1)
            ranker.save(folder)
            _atomic_json(timings_file, timings)
            hist = ranker.history_
            assert hist is not None
            print(
                f"member {m}: {timings[f'train_member_{m}_s']} s, first/last loss "
                f"{np.mean(hist.loss[:10]):.3f}/{np.mean(hist.loss[-10:]):.3f}, valid MAP {hist.valid_map}",
                flush=True,
            )
            members.append(ranker)

    # One file per ranker, named by what it depends on, so a rerun with other
    # --passes or --members recomputes only what changed.
    files = {
        "bert": work / "test_bert.npy",
        "mc_dropout": work / f"test_mc_dropout_T{args.passes}.npy",
        "ensemble": work / f"test_ensemble_M{args.members}.npy",
    }
    if args.stage in ("all", "predict"):
        makers = {
            "bert": lambda: members[0].predict(test).scores,
            "mc_dropout": lambda: MCDropoutRanker.from_ranker(members[0], n_passes=args.passes)
            .predict_samples(test)
            .samples,
            "ensemble": lambda: DeepEnsembleRanker.from_members(members).predict_samples(test).samples,
        }
        for name, path in files.items():
            if path.exists():
                continue
            t0 = time.perf_counter()
            scores = makers[name]()
            timings[f"predict_{name}_s"] = round(time.perf_counter() - t0, 1)
            _atomic_npy(path, scores)
            _atomic_json(timings_file, timings)
            print(f"{name} scored in {timings[f'predict_{name}_s']} s", flush=True)

    if args.stage in ("all", "evaluate"):
        from uncertank.metrics import expected_calibration_error, mean_average_precision, recall_at_k

        z = {name: np.load(path) for name, path in files.items()}
        labels, offsets = test.labels, test.offsets
        from uncertank import RankedLists

        results: dict[str, Any] = {}
        preds = {"bert": z["bert"], "mc_dropout": z["mc_dropout"].mean(0), "ensemble": z["ensemble"].mean(0)}
        for name, scores in preds.items():
            rl = RankedLists.from_flat(scores, labels, offsets)
            row = {
                "R10@1": float(recall_at_k(rl, k=1)),
                "MAP": float(mean_average_precision(rl)),
                "ECE": float(expected_calibration_error(rl.scores, rl.labels, n_bins=10, strategy="uniform")),
                "ECE_balanced": float(
                    expected_calibration_error(rl, n_bins=10, strategy="uniform", balanced=True, seed=0)
                ),
                "mean_score_relevant": float(scores[labels > 0].mean()),
                "mean_score_non_relevant": float(scores[labels == 0].mean()),
            }
            if name != "bert":
                row["mean_predictive_std"] = float(z[name].std(0).mean())
            results[name] = row
        _reliability_figure(preds, labels, offsets, args.figure)
        from uncertank import make_ranker

        rl_bm25 = make_ranker("bm25").predict(test).ranked(test)
        results["bm25_reference"] = {
            "R10@1": float(recall_at_k(rl_bm25, k=1)),
            "MAP": float(mean_average_precision(rl_bm25)),
            "note": "zero-shot BM25 on the same test queries (not a probability: no ECE)",
        }
        cli = list(sys.argv[1:] if argv is None else argv)
        if "--stage" in cli:  # the command that reproduces everything runs all stages
            i = cli.index("--stage")
            del cli[i : i + 2]
        training = {}
        for m in range(args.members):
            hist = json.loads((work / f"member_{m}" / "uncertank.json").read_text())["history"]
            training[f"member_{m}"] = {
                "steps": len(hist["loss"]),
                "mean_loss_first_10_steps": float(np.mean(hist["loss"][:10])),
                "mean_loss_last_10_steps": float(np.mean(hist["loss"][-10:])),
                "valid_map_per_epoch": hist["valid_map"],
            }
        payload = {
            "command": " ".join(["python docs/scripts/real_run_neural.py", *cli]),
            "training": training,
            "data": {
                "dataset": "ubuntu-sample (Ubuntu Dialogue Corpus sample), negatives=bm25, n_candidates=10, seed=0",
                "train_queries": train.n_queries,
                "train_pairs_per_epoch": 2 * int((train.labels > 0).sum()),
                "valid_queries": valid.n_queries,
                "test_queries": test.n_queries,
                "test_pairs": test.n_pairs,
            },
            "settings": {
                "backbone": "packaged all-MiniLM-L6-v2",
                "max_length": args.max_length,
                "epochs": args.epochs,
                "batch_size": args.batch_size,
                "lr": args.lr,
                "members": args.members,
                "passes": args.passes,
                "training_negatives": args.negatives,
                "ece": "10 equal-width bins on [0, 1] over all test pairs (1 relevant : 9 non-relevant); "
                "ECE_balanced keeps as many non-relevant as relevant pairs (seed 0), the setting of "
                "Penha & Hauff's Table 1",
            },
            "results": results,
            "timings_s": timings,
            "machine": {
                "platform": platform.platform(),
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "cuda": torch.cuda.is_available(),
            },
        }
        _atomic_json(args.out, payload)
        print(json.dumps(payload["results"], indent=2), flush=True)


if __name__ == "__main__":
    main()
