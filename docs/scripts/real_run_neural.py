"""Fine-tune the packaged MiniLM on the Ubuntu sample and evaluate neural rankers side by side.

Reproduces the "Real run" section of docs/rankers.md::

    python docs/scripts/real_run_neural.py                       # bert, mc_dropout, ensemble
    python docs/scripts/real_run_neural.py --rankers bert,mc_dropout,ensemble,sngp,gpf_bert,pgdrr

``--rankers`` takes any registered ranker names; every ranker gets the same
settings (backbone, max_length, epochs, batch size, lr, seed 0), the same
training pairs and the same test queries.

Stages (each resumes from what the previous run left in --workdir, under a
sub-folder named by a digest of the shared settings, so a run with other
settings never reuses another's models or scores):

1. train: for ``bert``, ``mc_dropout`` and ``ensemble``, M cross-encoders
   (seeds 0..M-1); any other ranker is built with
   ``make_ranker(name, max_length=..., epochs=..., batch_size=..., lr=...,
   seed=0, device="auto")``; each is fine-tuned on the train split (all of it
   by default, or a random subset with --train-queries), keeping its best
   epoch on a random subset of the valid split, and saved. With
   ``--from-bert``, those other rankers start from a copy of member 0's
   fine-tuned encoder (``cls.from_ranker(member_0, ...)``: a new head, then
   the same training), as ``mc_dropout`` starts from its weights.
2. predict: on a random subset of the test split, ``bert`` (member 0, dropout
   off), ``mc_dropout`` (member 0's weights, T passes with dropout on),
   ``ensemble`` (all M members), and for any other ranker ``predict`` and,
   when it has one, ``predict_samples``; scores saved as .npy, per ranker.
   With ``ensemble``, the M members are also saved as one ensemble
   checkpoint (``ensemble_M<M>``), which docs/studies/full.toml loads.
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


MEMBER_RANKERS = ("bert", "mc_dropout", "ensemble")


def _settings_key(args: argparse.Namespace) -> str:
    """A digest of everything the trained models and the test scores share."""
    import hashlib

    shared = {
        "train_queries": args.train_queries, "valid_queries": args.valid_queries,
        "test_queries": args.test_queries, "max_length": args.max_length, "epochs": args.epochs,
        "batch_size": args.batch_size, "lr": args.lr, "negatives": args.negatives,
        "num_hidden_layers": args.num_hidden_layers,
        # the training pairs are the train split's own candidates (no sampler redraw)
        "training_pairs": "given-candidates",
    }
    ratio = getattr(args, "train_ratio", "1")
    if ratio != "1":  # balanced pairs keep the digest the existing runs were made with
        shared["train_ratio"] = ratio
    return hashlib.sha256(json.dumps(shared, sort_keys=True).encode()).hexdigest()[:12]


def _history(folder: Path) -> dict[str, Any] | None:
    manifest = folder / "uncertank.json"
    if not manifest.exists():
        return None
    hist = json.loads(manifest.read_text()).get("history")
    if not hist or not hist.get("loss"):
        return None
    return {
        "steps": len(hist["loss"]),
        "mean_loss_first_10_steps": float(np.mean(hist["loss"][:10])),
        "mean_loss_last_10_steps": float(np.mean(hist["loss"][-10:])),
        "valid_map_per_epoch": hist.get("valid_map"),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rankers", default=",".join(MEMBER_RANKERS),
                    help="comma-separated registered ranker names (default: bert,mc_dropout,ensemble)")
    ap.add_argument("--train-queries", type=int, default=None, help="all of the train split by default")
    ap.add_argument("--valid-queries", type=int, default=200)
    ap.add_argument("--test-queries", type=int, default=600)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--num-hidden-layers", type=int, default=None, help="keep only the first layers of the backbone")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--train-ratio", default="1",
                    help="non-relevant training pairs per relevant one: 1 (balanced pairs), 9 (lists of ten as "
                         "they are) or 'all' (every candidate); with --train-queries, equal pairs at lower ratio")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--members", type=int, default=5)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--negatives", default="bm25", help="negatives of the train and valid splits (the data layer's)")
    ap.add_argument("--workdir", type=Path, default=ROOT / ".cache" / "real_run_neural")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "real_run_neural.json")
    ap.add_argument("--figure", type=Path, default=ROOT / "docs" / "results" / "real_run_neural_reliability.png")
    ap.add_argument("--from-bert", action="store_true",
                    help="rankers other than bert/mc_dropout/ensemble start from member 0's trained encoder")
    ap.add_argument("--stage", choices=["all", "train", "predict", "evaluate"], default="all")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    import uncertank
    import uncertank.datasets as ud
    from uncertank.plugins import registry

    rankers = [r.strip() for r in args.rankers.split(",") if r.strip()]
    known = registry("rankers")
    unknown = [r for r in rankers if r not in known]
    if unknown or not rankers or len(set(rankers)) != len(rankers):
        raise SystemExit(
            f"--rankers must name distinct registered rankers; got {args.rankers!r} "
            f"(unknown: {', '.join(unknown) or 'none'}; known: {', '.join(sorted(known))})"
        )
    uses_members = [r for r in rankers if r in MEMBER_RANKERS] or (["bert"] if args.from_bert else [])
    n_members = args.members if "ensemble" in rankers else 1
    others = [r for r in rankers if r not in MEMBER_RANKERS]
    # A ranker started from member 0 keeps its own model and score files.
    stem = {name: f"{name}_from_bert" if args.from_bert else name for name in others}

    work: Path = args.workdir / _settings_key(args)
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
    shared = {
        "max_length": args.max_length, "epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr,
        "num_hidden_layers": args.num_hidden_layers, "device": "auto",
        "train_ratio": None if args.train_ratio == "all" else int(args.train_ratio),
    }

    def fitted(name: str, folder: Path, make: Any, label: str) -> Any:
        """Load the ranker saved in ``folder``, or train, time and save it."""
        if (folder / "uncertank.json").exists():
            from uncertank.nn import load_ranker

            return load_ranker(folder)
        if args.stage == "predict":
            raise SystemExit(f"{label} is not trained yet ({folder}); run --stage train")
        ranker = make()
        t0 = time.perf_counter()
        ranker.fit(train, valid)
        timings[f"train_{label}_s"] = round(time.perf_counter() - t0, 1)
        ranker.save(folder)
        _atomic_json(timings_file, timings)
        hist = getattr(ranker, "history_", None)
        loss = f", first/last loss {np.mean(hist.loss[:10]):.3f}/{np.mean(hist.loss[-10:]):.3f}" if hist else ""
        print(f"{label}: {timings[f'train_{label}_s']} s{loss}", flush=True)
        return ranker

    members: list[Any] = []
    trained: dict[str, Any] = {}
    if args.stage in ("all", "train", "predict"):
        if uses_members:
            for m in range(n_members):
                members.append(fitted(
                    "bert", work / f"member_{m}",
                    lambda m=m: uncertank.make_ranker("bert", seed=m, **shared), f"member_{m}",
                ))
        for name in others:
            def make(name: str = name) -> Any:
                # the GP head as it was when these checkpoints were trained: no intercept
                head = {"output_bias": False} if name in ("sngp", "gpf_bert") else {}
                ranker = uncertank.make_ranker(name, seed=0, **shared, **head)
                return type(ranker).from_ranker(members[0], seed=0, **shared, **head) if args.from_bert else ranker

            trained[name] = fitted(name, work / stem[name], make, stem[name])
        if "ensemble" in rankers and len(members) >= 2:
            # the ensemble as one checkpoint (a study's [[rankers]] checkpoint = "...", docs/studies/full.toml)
            ens_folder = work / f"ensemble_M{len(members)}"
            if not (ens_folder / "uncertank.json").exists():
                from uncertank_ensemble import DeepEnsembleRanker

                DeepEnsembleRanker.from_members(members).save(ens_folder)

    # One file per ranker, named by what it depends on, so a rerun with other
    # --passes or --members recomputes only what changed.
    files: dict[str, dict[str, Path]] = {}
    for name in rankers:
        if name == "bert":
            files[name] = {"scores": work / "test_bert.npy"}
        elif name == "mc_dropout":
            files[name] = {"samples": work / f"test_mc_dropout_T{args.passes}.npy"}
        elif name == "ensemble":
            files[name] = {"samples": work / f"test_ensemble_M{args.members}.npy"}
        else:
            files[name] = {
                "scores": work / f"test_{stem[name]}.npy", "samples": work / f"test_{stem[name]}_samples.npy"
            }
    if args.stage in ("all", "predict"):
        from uncertank_ensemble import DeepEnsembleRanker
        from uncertank_mcdropout import MCDropoutRanker

        def score(name: str, kind: str) -> Any:
            if name == "bert":
                return members[0].predict(test).scores
            if name == "mc_dropout":
                return MCDropoutRanker.from_ranker(members[0], n_passes=args.passes).predict_samples(test).samples
            if name == "ensemble":
                return DeepEnsembleRanker.from_members(members).predict_samples(test).samples
            ranker = trained[name]
            if kind == "scores":
                return ranker.predict(test).scores
            return ranker.predict_samples(test).samples

        for name, kinds in files.items():
            for kind, path in kinds.items():
                if path.exists():
                    continue
                if kind == "samples" and name not in MEMBER_RANKERS and not hasattr(trained[name], "predict_samples"):
                    continue
                t0 = time.perf_counter()
                scores = score(name, kind)
                key = f"predict_{name}_s" if kind == "scores" or name in MEMBER_RANKERS else f"predict_samples_{name}_s"
                timings[key] = round(time.perf_counter() - t0, 1)
                _atomic_npy(path, scores)
                _atomic_json(timings_file, timings)
                print(f"{name} {kind} in {timings[key]} s", flush=True)

    if args.stage in ("all", "evaluate"):
        from uncertank import RankedLists
        from uncertank.metrics import expected_calibration_error, mean_average_precision, recall_at_k

        labels, offsets = test.labels, test.offsets
        results: dict[str, Any] = {}
        preds: dict[str, Any] = {}
        for name, kinds in files.items():
            samples = np.load(kinds["samples"]) if "samples" in kinds and kinds["samples"].exists() else None
            preds[name] = np.load(kinds["scores"]) if "scores" in kinds else samples.mean(0)  # type: ignore[union-attr]
            rl = RankedLists.from_flat(preds[name], labels, offsets)
            row = {
                "R10@1": float(recall_at_k(rl, k=1)),
                "MAP": float(mean_average_precision(rl)),
                "ECE": float(expected_calibration_error(rl.scores, rl.labels, n_bins=10, strategy="uniform")),
                "ECE_balanced": float(
                    expected_calibration_error(rl, n_bins=10, strategy="uniform", balanced=True, seed=0)
                ),
                "mean_score_relevant": float(preds[name][labels > 0].mean()),
                "mean_score_non_relevant": float(preds[name][labels == 0].mean()),
            }
            if samples is not None:
                row["mean_predictive_std"] = float(samples.std(0).mean())
                row["n_samples"] = int(samples.shape[0])
            for key in (f"predict_{name}_s", f"predict_samples_{name}_s"):
                if key in timings:
                    row[key.replace(f"_{name}", "")] = timings[key]
            results[name] = row
        _reliability_figure(preds, labels, offsets, args.figure)
        rl_bm25 = uncertank.make_ranker("bm25").predict(test).ranked(test)
        results["bm25_reference"] = {
            "R10@1": float(recall_at_k(rl_bm25, k=1)),
            "MAP": float(mean_average_precision(rl_bm25)),
            "note": "zero-shot BM25 on the same test queries (not a probability: no ECE)",
        }
        cli = list(sys.argv[1:] if argv is None else argv)
        if "--stage" in cli:  # the command that reproduces everything runs all stages
            i = cli.index("--stage")
            del cli[i : i + 2]
        training: dict[str, Any] = {}
        for m in range(n_members if uses_members else 0):
            hist = _history(work / f"member_{m}")
            if hist is not None:
                training[f"member_{m}"] = hist
        for name in others:
            hist = _history(work / stem[name])
            if hist is not None:
                training[name] = hist
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
                "rankers": rankers,
                "backbone": "packaged all-MiniLM-L6-v2"
                + (f" (first {args.num_hidden_layers} layers)" if args.num_hidden_layers else ""),
                "max_length": args.max_length,
                "epochs": args.epochs,
                "batch_size": args.batch_size,
                "lr": args.lr,
                "members": args.members,
                "passes": args.passes,
                "gp_rankers_start_from": "bert member 0's fine-tuned encoder" if args.from_bert else "the backbone",
                "training_negatives": f"the train split's own {args.negatives} candidates (balanced pairs)",
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
