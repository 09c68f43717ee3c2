"""Post-hoc GP heads on a user's model with a few hundred training queries: do they learn, or say so?

Reproduces "Post-hoc heads from a few hundred queries" in docs/own-ranker.md::

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study   # bert, in .cache/real_run/bert
    python docs/scripts/posthoc_few_queries.py                             # the runs (minutes), then the table
    python docs/scripts/posthoc_few_queries.py --render                    # the docs table, from the JSON

The real run's fine-tuned ``bert`` (docs/studies/real_run.toml saves it to
.cache/real_run/bert) is exported as a plain Hugging Face folder
(:func:`own_model_real_run.export`, the folder the own-model study loads),
and each post-hoc head (``sngp``, ``gpf_bert``, ``pgdrr``) is fitted on its
frozen encoder from ``--train-queries`` training queries (300: the case of
a user with a few hundred labelled queries) and 200 validation queries, with
each ``--recipe``: the head's defaults at one epoch, and at a higher rate
and more epochs. Every fit goes through the library's check of a post-hoc
head against the model's own head on the validation queries
(``history_.head_valid_map`` and ``own_head_valid_map``, and
``uncertank.nn.PostHocHeadWarning`` when the head ranks worse). Each head
and the model's own head are then scored on the 600 in-domain test queries
of the export check (a fixed draw): R_10@1 and MAP of ``predict()`` and of
the mean of ``predict_samples()`` (its default number of draws, and 1,000),
and the fit's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from own_model_real_run import EXPORTED, SOURCE, export  # noqa: E402

OUT = ROOT / "docs" / "results" / "posthoc_few_queries.json"
HEADS = ("sngp", "gpf_bert", "pgdrr")
#: Each recipe's options for every head (show_progress off; seed 0).
RECIPES: dict[str, dict[str, Any]] = {
    "1 epoch, default lr": {"epochs": 1},
    "5 epochs, lr 1e-3": {"epochs": 5, "lr": 1e-3},
}


def _data(n_train: int) -> tuple[Any, Any, Any]:
    import uncertank.datasets as ud

    train = ud.load("ubuntu-sample", split="train", negatives="bm25", n_candidates=10, seed=0, max_queries=n_train)
    valid = ud.load("ubuntu-sample", split="valid", negatives="bm25", n_candidates=10, seed=0, max_queries=200)
    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0)
    idx = np.sort(np.random.default_rng(2).choice(test.n_queries, size=600, replace=False))
    return train, valid, test.subset(idx)  # the export check's 600 in-domain test queries


def _ranking(scores: np.ndarray, test: Any) -> dict[str, float]:
    from uncertank.metrics import mean_average_precision, recall_at_k

    ranked = test.ranked(scores)
    return {"R@1": float(recall_at_k(ranked, k=1)), "MAP": float(mean_average_precision(ranked))}


def run(folder: Path, n_train: int) -> dict[str, Any]:
    """Fit every head with every recipe on ``folder``'s frozen encoder; score them and the model's own head."""
    from uncertank import StochasticRanker
    from uncertank.nn import NeuralRanker, PostHocHeadWarning, from_pretrained

    train, valid, test = _data(n_train)
    own = from_pretrained(folder, show_progress=False)
    rows: list[dict[str, Any]] = [{"ranker": "bert (the folder's own head)", "recipe": None,
                                   "predict": _ranking(own.predict(test).scores, test)}]
    print(rows[-1], flush=True)
    for recipe, options in RECIPES.items():
        for head in HEADS:
            ranker = from_pretrained(folder, head, show_progress=False, seed=0, **options)
            assert isinstance(ranker, NeuralRanker) and isinstance(ranker, StochasticRanker)  # every GP head is both
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", PostHocHeadWarning)
                ranker.fit(train, valid)
            seconds = time.perf_counter() - t0
            history = ranker.history_
            assert history is not None  # fit records it
            row = {
                "ranker": head, "recipe": recipe, "options": options, "fit_seconds": round(seconds, 1),
                "valid_map": history.head_valid_map, "own_valid_map": history.own_head_valid_map,
                "head_learned": history.head_learned,
                "warning": next((str(w.message) for w in caught if issubclass(w.category, PostHocHeadWarning)), None),
                "predict": _ranking(ranker.predict(test).scores, test),
                "samples_mean": _ranking(ranker.predict_samples(test).mean(), test),
                "samples_mean_1000": _ranking(ranker.predict_samples(test, n_samples=1000).mean(), test),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {"folder": str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder),
            "train_queries": train.n_queries, "train_pairs_per_epoch": "balanced pairs of those queries",
            "valid_queries": valid.n_queries, "test_queries": test.n_queries, "rows": rows,
            "machine": f"{os.cpu_count()} CPU cores"}


def render(payload: dict[str, Any]) -> str:
    """The docs table: per head and recipe, validation MAP against the own head's, test R@1, the warning."""
    own = payload["rows"][0]
    lines = ["| head | recipe | valid MAP (own head's) | warned | test R_10@1: `predict` | mean of default draws | "
             "mean of 1,000 draws | fit s |", "|---|---|---|---|---|---|---|---|",
             f"| `bert` (own head) | none | | | {own['predict']['R@1']:.3f} | | | |"]
    for r in payload["rows"][1:]:
        lines.append(f"| `{r['ranker']}` | {r['recipe']} | {r['valid_map']:.3f} ({r['own_valid_map']:.3f}) | "
                     f"{'yes' if r['warning'] else 'no'} | {r['predict']['R@1']:.3f} | "
                     f"{r['samples_mean']['R@1']:.3f} | {r['samples_mean_1000']['R@1']:.3f} | "
                     f"{r['fit_seconds']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=SOURCE, help="the real run's fine-tuned bert (a checkpoint)")
    ap.add_argument("--exported", type=Path, default=EXPORTED, help="the Hugging Face folder it is exported to")
    ap.add_argument("--train-queries", type=int, default=300)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--render", action="store_true", help="print the docs table from --out and stop")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.render:
        print(render(json.loads(args.out.read_text())))
        return
    if not (args.exported / "config.json").exists():
        print(json.dumps(export(args.source, args.exported), indent=2), flush=True)
    payload = run(args.exported, args.train_queries)
    from uncertank.files import atomic_write_text

    atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")
    print(render(payload))


if __name__ == "__main__":
    main()
