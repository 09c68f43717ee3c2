"""Cost of the ``laplace`` ranker's ``predict`` against ``bert``'s on the same model, in one paired run.

The model is a user's folder: the packaged all-MiniLM-L6-v2 with a
one-logit sequence-classification head, saved with ``save_pretrained`` (its
head is untrained, which costs what a trained one does). ``bert`` scores it
as it is (``from_pretrained(folder)``); ``laplace`` is
``from_pretrained(folder, "laplace")`` fitted on Ubuntu-sample training
pairs (the full Hessian of the 385 output-layer parameters, the prior
precision by marginal likelihood). Both predict the same Ubuntu-sample test
queries, encoding included, at the same ``max_length`` and batch size: after
a warm-up, ``--repeats`` rounds in which ``laplace.predict`` is timed right
after ``bert.predict``; the ratio is the median over rounds of the paired
ratio (target <= 1.05: the probit costs one forward pass and a product with
the contrast's square root per batch). ``predict_samples`` (100 joint draws,
still one forward pass) is timed the same way, and ``fit`` once.

    python benchmarks/bench_laplace.py                 # 8 test queries (80 pairs), 5 rounds

The results replace this script's section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
from pathlib import Path

from _results import clock, markdown_table, write_section

NAME = "bench_laplace"


def _folder(root: Path) -> Path:
    """The packaged MiniLM with a one-logit classification head, saved as a user's Hugging Face folder."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from uncertank.nn import default_backbone_path

    torch.manual_seed(0)
    src = default_backbone_path()
    model = AutoModelForSequenceClassification.from_pretrained(src, num_labels=1)
    folder = root / "minilm-cross-encoder"
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(src).save_pretrained(str(folder))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=8, help="test queries of 10 candidates (default 8)")
    parser.add_argument("--train-queries", type=int, default=100, help="training queries (default 100)")
    parser.add_argument("--repeats", type=int, default=5, help="paired rounds (default 5)")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    args = parser.parse_args()

    import torch
    from uncertank_laplace.ranker import LaplaceRanker

    from uncertank.datasets import load
    from uncertank.nn import from_pretrained

    load_before = os.getloadavg()[0]
    test = load("ubuntu-sample", split="test", negatives="random", n_candidates=10, seed=0, max_queries=args.queries)
    train = load("ubuntu-sample", split="train", negatives="random", n_candidates=10, seed=0,
                 max_queries=args.train_queries)
    common = {"max_length": args.max_length, "eval_batch_size": 32, "show_progress": False, "device": "cpu"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = _folder(Path(tmp))
        bert = from_pretrained(folder, **common)
        laplace = from_pretrained(folder, "laplace", **common)
        assert isinstance(laplace, LaplaceRanker)
        fit_s = clock(lambda: laplace.fit(train))
        post = laplace.posterior_
        bert.predict(test), laplace.predict(test), laplace.predict_samples(test)  # warm-up
        rounds: dict[str, list[float]] = {"bert": [], "laplace": [], "laplace_samples": []}
        ratios: dict[str, list[float]] = {"laplace": [], "laplace_samples": []}
        for _ in range(args.repeats):
            for key, fn in (("laplace", lambda: laplace.predict(test)),
                            ("laplace_samples", lambda: laplace.predict_samples(test))):
                b = clock(lambda: bert.predict(test))
                t = clock(fn)
                rounds["bert"].append(b)
                rounds[key].append(t)
                ratios[key].append(t / b)
    load_after = os.getloadavg()[0]
    per_k = 1000 / test.n_pairs
    rows = [
        {"what": "bert `predict` (the model as it is)", "best": min(rounds["bert"]) * per_k, "ratio": 1.0,
         "target": "1"},
        {"what": "laplace `predict` (probit, one forward pass)", "best": min(rounds["laplace"]) * per_k,
         "ratio": statistics.median(ratios["laplace"]), "target": "<= 1.05"},
        {"what": "laplace `predict_samples` (100 joint draws, one forward pass)",
         "best": min(rounds["laplace_samples"]) * per_k, "ratio": statistics.median(ratios["laplace_samples"]),
         "target": ""},
    ]
    table = markdown_table({
        "scorer": lambda r: r["what"],
        "s per 1,000 pairs (best run)": lambda r: f"{r['best']:.2f}",
        "ratio to bert (median paired)": lambda r: f"{r['ratio']:.3f}",
        "target": lambda r: r["target"],
    }, rows)
    met = "met" if statistics.median(ratios["laplace"]) <= 1.05 else "NOT met"
    assert post is not None
    body = f"""## Last-layer Laplace: `laplace` predict against `bert` on the same model (`benchmarks/bench_laplace.py`)

Command: `python benchmarks/bench_laplace.py --repeats {args.repeats}`

Model: the packaged all-MiniLM-L6-v2 with a one-logit classification head, saved as a user's folder; `bert` is
`from_pretrained(folder)`, `laplace` is `from_pretrained(folder, "laplace")` fitted on {train.n_queries}
Ubuntu-sample training queries ({post.n_data} balanced pairs; full Hessian of {post.n_params} parameters; prior
precision {post.prior_precision:.4g} by marginal likelihood; `fit` took {fit_s:.1f} s, one forward pass over the
pairs). Both predict the same {test.n_queries} test queries ({test.n_pairs} pairs, encoding included,
max_length {args.max_length}, batches of 32); after a warm-up, {args.repeats} rounds, each `laplace` call timed
right after a `bert` call. Device: cpu ({platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()}
threads; 1-minute load average {load_before:.1f} before, {load_after:.1f} after, on a machine shared with other
jobs).

{table}

`laplace`'s probit `predict` costs {statistics.median(ratios["laplace"]):.3f} x `bert`'s (target <= 1.05: {met}).
"""
    print(body)
    if not args.no_write:
        write_section(NAME, body)


if __name__ == "__main__":
    main()
