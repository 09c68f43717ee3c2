"""Measure the numbers quoted in docs/datasets.md and write them into that page.

Run from the repository root:

    python docs/scripts/datasets_numbers.py

It builds every bundled dataset split (sizes, duplicate counts) and, on each
test split, the three negative-sampling conditions (random, bm25, embedding),
times the builds (into an empty temporary cache) and a second, cached load, and scores each condition zero-shot with the
built-in BM25 ranker (``make_ranker("bm25")``), reporting R_10@1 (computed by
``uncertank.metrics.recall_at_k`` and checked against a plain numpy
expression). The section of docs/datasets.md between the markers
``<!-- begin: datasets-numbers -->`` and ``<!-- end: datasets-numbers -->`` is
rewritten in place (atomically); the rest of the page is left alone.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from uncertank import make_ranker
from uncertank.datasets import describe, load

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "datasets.md"
BEGIN, END = "<!-- begin: datasets-numbers -->", "<!-- end: datasets-numbers -->"
DATASETS = ("ubuntu-sample", "chitchat")
STRATEGIES = ("random", "bm25", "embedding")
_WORD = re.compile(r"\b\w\w+\b")


def r_at_1_plain(scores: np.ndarray, labels: np.ndarray, n: int) -> float:
    """R_n@1 by a plain expression: the first of the highest-scored candidates is relevant."""
    s = scores.reshape(-1, n)
    lab = labels.reshape(-1, n)
    top = np.argmax(s, axis=1)  # first maximum: ties go to the earlier position
    return float((lab[np.arange(lab.shape[0]), top] > 0).mean())


def word_overlap(qs) -> float:
    """Mean share of a negative's words that occur in its context."""
    shares = []
    for q in range(qs.n_queries):
        ctx, cands, labs = qs.query(q)
        words = set(_WORD.findall(" ".join(ctx).lower()))
        for c, lab in zip(cands, labs, strict=True):
            if lab == 0:
                toks = _WORD.findall(c.lower())
                shares.append(sum(t in words for t in toks) / len(toks) if toks else 0.0)
    return float(np.mean(shares))


def sizes_table(name: str) -> list[str]:
    summary = describe(name)
    rows = [
        "| split | dialogues | utterances (pool) | distinct pool texts | duplicate occurrences "
        "| queries | pairs (10 candidates) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for split, s in summary.items():
        rows.append(
            f"| {split} | {s.n_dialogues:,} | {s.n_utterances:,} | {s.pool.n_unique:,} | "
            f"{s.pool.n_duplicates:,} | {s.n_instances:,} | {10 * s.n_instances:,} |"
        )
    common = ", ".join(f"{t!r} ({c})" for t, c in summary["train"].pool.most_common[:6])
    rows.append("")
    rows.append(f"Most repeated texts of the train pool: {common}.")
    return rows


def zero_shot_table() -> list[str]:
    from uncertank.metrics import recall_at_k

    ranker = make_ranker("bm25")
    rows = [
        "| dataset (test split) | negatives | queries | build (s) | cached load (s) | share of negative "
        "words found in the context | BM25 R_10@1 | ± s.e. |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in DATASETS:
        for negatives in STRATEGIES:
            options = {"progress": False} if negatives == "embedding" else None
            t0 = time.perf_counter()
            qs = load(name, split="test", negatives=negatives, seed=0, sampler_options=options)
            build = time.perf_counter() - t0  # an empty cache: build, then write the cache
            t0 = time.perf_counter()
            cached = load(name, split="test", negatives=negatives, seed=0, sampler_options=options)
            read = time.perf_counter() - t0
            if list(cached.candidates) != list(qs.candidates):
                raise RuntimeError("the cached set differs from the built one")
            pred = ranker.predict(qs)
            ranked = qs.ranked(pred.scores)
            r1 = float(recall_at_k(ranked, k=1))
            assert qs.labels is not None
            plain = r_at_1_plain(pred.scores, qs.labels, 10)
            if abs(r1 - plain) > 1e-12:
                raise RuntimeError(f"recall_at_k ({r1}) and the plain expression ({plain}) disagree")
            se = float(np.sqrt(r1 * (1 - r1) / qs.n_queries))
            overlap = word_overlap(qs)
            print(f"{name} {negatives}: n={qs.n_queries} build={build:.1f}s R10@1={r1:.3f} overlap={overlap:.3f}",
                  file=sys.stderr, flush=True)
            rows.append(
                f"| {name} | {negatives} | {qs.n_queries:,} | {build:.1f} | {read:.2f} | {overlap:.3f} "
                f"| {r1:.3f} | {se:.3f} |"
            )
    return rows


def own_dialogue_share(name: str) -> float:
    """Share of BM25 negatives from the query's own dialogue if that rule were off (test split)."""
    from uncertank.datasets import BM25Sampler, chitchat_dialogues, split_dialogues, ubuntu_dialogues
    from uncertank.datasets.dialogues import conversation_instances

    dialogues = ubuntu_dialogues() if name == "ubuntu-sample" else chitchat_dialogues()
    ds = split_dialogues(dialogues)["test"]
    ctx, resp, ids = conversation_instances(ds)
    pool = [u for d in ds for u in d.utterances]
    owner = [d.dialogue_id for d in ds for _ in d.utterances]
    neg = BM25Sampler(pool, seed=0).sample(ctx, resp, 9)  # no groups: only positive/context/duplicates excluded
    own = np.array([[owner[j] == i.rsplit("#", 1)[0] for j in row] for i, row in zip(ids, neg, strict=True)])
    return float(own.mean())


def section() -> str:
    lines = [
        BEGIN,
        "",
        "_Written by `python docs/scripts/datasets_numbers.py` "
        f"(seed 0; {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}). "
        "Do not edit by hand._",
        "",
    ]
    for name in DATASETS:
        lines.append(f"**{name}** (80/10/10 split of dialogues, split seed 0, at most 10 queries per dialogue)")
        lines.append("")
        lines.extend(sizes_table(name))
        lines.append("")
    lines.append("**Zero-shot BM25 on each negative-sampling condition** (chance R_10@1 = 0.100)")
    lines.append("")
    lines.extend(zero_shot_table())
    lines.append("")
    for name in DATASETS:
        share = own_dialogue_share(name)
        lines.append(
            f"Without the own-dialogue rule, {100 * share:.1f}% of the BM25 negatives of {name}/test "
            "would come from the query's own dialogue (later replies or lines the context already holds)."
        )
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def rewrite(page: Path, new_section: str) -> None:
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + new_section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + new_section + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".datasets.", suffix=".md", dir=page.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, page)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main() -> None:
    # build into an empty, temporary cache so that build and cached-load times are real
    tmp_cache = tempfile.mkdtemp(prefix="uncertank-doc-numbers-")
    os.environ["UNCERTANK_CACHE"] = tmp_cache
    try:
        new = section()
    finally:
        shutil.rmtree(tmp_cache, ignore_errors=True)
    print(new)
    rewrite(PAGE, new)


if __name__ == "__main__":
    main()
