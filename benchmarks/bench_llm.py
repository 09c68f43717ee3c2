"""Cost of the yes/no LLM reranker's ``predict`` per pair against ``bert``'s, in one paired run.

``llm`` is the packaged SmolLM2-135M-Instruct (134,515,008 parameters, 30
layers) with the LoRA adapters, prompt and ``max_length`` that
docs/studies/llm.toml fine-tunes and saves (``.cache/llm_models/llm``);
``bert`` is that study's cross-encoder (three MiniLM layers, mean-pooled,
``max_length`` 64) from its ``models/`` folder. Both predict the same
Ubuntu-sample test queries, tokenisation included: after a warm-up,
``--repeats`` rounds in which ``llm.predict`` is timed right after
``bert.predict``; the ratio is the median of the paired ratios. A
``llm_mc_dropout`` pass, a ``llm_prompts`` wording and a Laplace ``predict``
each cost one ``llm`` scoring.

    python benchmarks/bench_llm.py --llm .cache/llm_models/llm

The results replace this script's section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import statistics
from typing import Any

from _results import clock, markdown_table, write_section

NAME = "bench_llm"

def _avx512() -> bool:
    """Whether the CPU has AVX-512 (CPU times differ about 2x between machines with and without it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return "avx512" in fh.read()
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=8, help="test queries of 10 candidates (default 8)")
    parser.add_argument("--repeats", type=int, default=3, help="paired rounds (default 3)")
    parser.add_argument("--llm", default=None, help="a saved llm checkpoint (the study's save_to)")
    parser.add_argument("--bert", default=None, help="a saved bert checkpoint")
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    args = parser.parse_args()

    import torch
    from uncertank_llm import LLMRanker

    from uncertank.datasets import load
    from uncertank.nn import load_ranker

    load_before = os.getloadavg()[0]
    test = load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0, max_queries=args.queries)
    llm_path = args.llm or ".cache/llm_models/llm"
    bert_path = args.bert or next(iter(sorted(glob.glob(".cache/llm_study/models/bert-*"))), None)
    if not os.path.isdir(llm_path) or bert_path is None:
        parser.error("run docs/studies/llm.toml first (uncertank run docs/studies/llm.toml --out .cache/llm_study), "
                     "or give --llm and --bert checkpoints")
    llm: Any = None

    def read() -> None:
        nonlocal llm
        llm = LLMRanker.load(llm_path, device="cpu", show_progress=False)

    t_load = clock(read)
    bert: Any = load_ranker(bert_path, device="cpu", show_progress=False)
    llm.predict(test), bert.predict(test)  # warm-up
    t_llm, t_bert, ratios = [], [], []
    for _ in range(args.repeats):
        b = clock(lambda: bert.predict(test))
        a = clock(lambda: llm.predict(test))
        t_bert.append(b)
        t_llm.append(a)
        ratios.append(a / b)
    n = test.n_pairs
    ids = llm.encode(test)
    tokens = sum(len(s) for s in ids) / len(ids)
    load_after = os.getloadavg()[0]
    rows = [
        {"scorer": "bert `predict` (3 MiniLM layers, max_length 64)", "s": min(t_bert) / n * 1000, "ratio": 1.0},
        {"scorer": f"llm `predict` (SmolLM2-135M, {tokens:.0f} prompt tokens on average)",
         "s": min(t_llm) / n * 1000, "ratio": statistics.median(ratios)},
    ]
    table = markdown_table({
        "scorer": lambda r: r["scorer"],
        "s per 1,000 pairs (best run)": lambda r: f"{r['s']:.1f}",
        "ratio to bert (median paired)": lambda r: f"{r['ratio']:.1f}",
    }, rows)
    what = f"the study's fine-tuned `llm` (`{llm_path}`) and `bert` (`{bert_path}`)"
    body = (
        f"## The yes/no LLM reranker's cost per pair against `bert` (`benchmarks/bench_llm.py`)\n\n"
        f"Command: `python benchmarks/bench_llm.py --repeats {args.repeats}` after `uncertank run "
        f"docs/studies/llm.toml --out .cache/llm_study`\n\n"
        f"Models: {what}. Both predict the same {test.n_queries} Ubuntu-sample test queries ({n} pairs, "
        f"tokenisation included, batches of {llm.eval_batch_size} and {bert.training_config.eval_batch_size}); "
        f"after a warm-up, {args.repeats} rounds, each `llm` call timed right after a `bert` call. Reading the "
        f"GGUF file and loading the adapters took {t_load:.1f} s. Device: cpu ({platform.machine()}, "
        f"{'with' if _avx512() else 'without'} AVX-512, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; 1-minute load average {load_before:.1f} before, {load_after:.1f} after)."
        f"\n\n{table}\n\n"
        f"A `llm_mc_dropout` pass, a `llm_prompts` wording and a `llm_laplace` `predict` each cost one `llm` "
        f"scoring: T passes or K wordings cost T or K times this.\n"
    )
    print(body)
    if not args.no_write:
        write_section(NAME, body)


if __name__ == "__main__":
    main()
