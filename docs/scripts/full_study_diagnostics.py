"""Two checks behind the readings of docs/study.md, from a finished study's saved predictions.

    python docs/scripts/full_study_diagnostics.py docs/studies/full.toml full-study

1. Lexical overlap: for every test condition, the mean share of a
   candidate's word types that also occur in the context, for the relevant
   candidate and for the negatives, and the mean within-query Spearman
   correlation between that overlap and each neural ranker's score. It says
   what a ranker trained on BM25 negatives learned about overlap, and so why
   it fails on random negatives.
2. Risk-aware reranking over a wide grid of ``b`` (-20 to 100, far past the
   study's grid): R_10@1 on validation and on every test condition, for
   every stochastic ranker. It says whether a ``b`` outside the study's grid
   would have helped.
3. The balanced ECE, robustly: one balanced subsample (600 relevant pairs
   and 600 of the 5,400 negatives) moves with its seed, so for every ranker
   and test condition the mean over ``--balanced-seeds`` subsamples with its
   standard deviation over seeds, and for every ranker but ``bert`` its
   difference from ``bert`` with a 95% interval from a paired bootstrap
   over the test queries (``--bootstrap`` resamples, 10 subsamples each;
   ``mc_dropout_frontier.balanced_ece_reduction_interval``). It says which
   of the page's balanced-ECE comparisons are larger than their noise.

No model is run: the scores and samples are the study's own files
(``<study>/predictions``, chosen by the cache keys in its results.json).
Writes docs/results/full_study_diagnostics.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import runpy
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# the frontier's balanced ECE and its paired query bootstrap, read from its file (sys.path is left alone)
_frontier = runpy.run_path(str(Path(__file__).with_name("mc_dropout_frontier.py")), run_name="mc_dropout_frontier")
balanced_ece_reduction_interval = _frontier["balanced_ece_reduction_interval"]
balanced_eces = _frontier["balanced_eces"]

WIDE_GRID = (-20.0, -5.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0)
_WORD = re.compile(r"\w+")


def _types(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def overlap(context: list[str], candidates: list[str]) -> np.ndarray:
    """Per candidate: the share of its word types that also occur in the context (0 for an empty candidate)."""
    ctx = _types(" ".join(context))
    out = np.zeros(len(candidates))
    for i, cand in enumerate(candidates):
        words = _types(cand)
        out[i] = len(ctx & words) / len(words) if words else 0.0
    return out


def balanced_table(payload: dict[str, Any]) -> str:
    """docs/study.md's table of the balanced ECE over many subsamples, from this script's JSON.

    Per ranker and condition: the mean balanced ECE; for the reference ranker
    its standard deviation over subsamples, for the others the change against
    the reference with its 95% interval, bold when the interval excludes 0.
    """
    from uncertank.experiment.report import markdown_table

    table, settings = payload["balanced_ece"], payload["balanced_ece_settings"]
    ref, conditions = settings["reference"], settings["conditions"]
    rows = []
    for ranker in settings["rankers"]:
        row = {"ranker": f"`{ranker}`"}
        for cond in conditions:
            cell = table[cond][ranker]
            if ranker == ref:
                row[cond] = f"{cell['mean']:.3f} (sd {cell['seed_sd']:.3f})"
            else:
                lo, hi = cell["change_ci95"]
                change = f"{cell['change_vs_reference']:+.3f}, {lo:+.3f} to {hi:+.3f}"
                row[cond] = f"{cell['mean']:.3f} ({'**' + change + '**' if lo > 0 or hi < 0 else change})"
        rows.append(row)
    return markdown_table(rows).rstrip("\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", type=Path, help="the study file")
    ap.add_argument("study", type=Path, help="the folder `uncertank run` wrote")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "full_study_diagnostics.json")
    ap.add_argument("--balanced-seeds", type=int, default=100, help="balanced subsamples per mean")
    ap.add_argument("--bootstrap", type=int, default=1000, help="query resamples per interval")
    args = ap.parse_args(argv)
    results_file = args.study / "results.json"
    if not results_file.is_file():
        raise SystemExit(f"study must be a folder holding results.json; {results_file} does not exist")
    from scipy.stats import spearmanr

    from uncertank import PredictiveSamples
    from uncertank.experiment import load_config
    from uncertank.experiment.config import DataSettings
    from uncertank.experiment.runner import load_data
    from uncertank.files import atomic_write_text
    from uncertank.metrics import recall_at_k
    from uncertank.uncertainty import risk_aware_rerank

    steps = json.loads(results_file.read_text())["steps"]
    config = load_config(args.config)
    data = load_data(config.section(DataSettings))
    sets = {"valid": data.valid, **data.tests}

    loaded: dict[tuple[str, str], dict[str, Any]] = {}

    def saved(ranker: str, split: str) -> dict[str, Any]:
        """The study's saved prediction of ``ranker`` on ``split``, read once."""
        if (ranker, split) not in loaded:
            key = steps[f"predict {ranker} {split}"]["key"]
            (path,) = (args.study / "predictions").glob(f"*-{key}.npz")
            with np.load(path) as z:
                loaded[(ranker, split)] = {name: z[name] for name in z.files}
        return loaded[(ranker, split)]

    neural = [rc.key for rc in config.rankers if rc.name != "bm25"]
    lexical: dict[str, Any] = {}
    for cond, qs in data.tests.items():
        ov = np.concatenate([overlap(list(ctx), list(cands)) for ctx, cands, _ in qs])
        labels = np.asarray(qs.labels)
        row: dict[str, Any] = {"overlap_relevant": float(ov[labels > 0].mean()),
                               "overlap_negatives": float(ov[labels == 0].mean()), "spearman_score_overlap": {}}
        bounds = np.asarray(qs.offsets)
        for ranker in neural:
            scores = saved(ranker, cond)["mean"]
            rhos = []
            for a, b in itertools.pairwise(bounds):
                if np.ptp(ov[a:b]) > 0 and np.ptp(scores[a:b]) > 0:
                    rhos.append(spearmanr(ov[a:b], scores[a:b]).statistic)
            # None when no query has both varying overlap and varying scores
            row["spearman_score_overlap"][ranker] = float(np.mean(rhos)) if rhos else None
        lexical[cond] = row
    risk: dict[str, Any] = {}
    for ranker in neural:
        per_split: dict[str, Any] = {}
        for split, qs in sets.items():
            z = saved(ranker, split)
            if not bool(z["stochastic"]):
                break
            ps = PredictiveSamples(z["samples"], qs.offsets, ranker=ranker)
            per_split[split] = {str(b): float(recall_at_k(qs.ranked(risk_aware_rerank(ps, b=b)), k=1))
                                for b in WIDE_GRID}
        if per_split:
            risk[ranker] = per_split
    balanced: dict[str, Any] = {}
    reference = neural[0] if "bert" not in neural else "bert"
    for cond, qs in data.tests.items():
        labels = np.asarray(qs.labels)
        base = saved(reference, cond)["mean"]
        balanced[cond] = {}
        for ranker in neural:
            scores = saved(ranker, cond)["mean"]
            eces = balanced_eces(scores, labels, range(args.balanced_seeds))
            row = {"mean": float(eces.mean()), "seed_sd": float(eces.std(ddof=1)) if eces.size > 1 else 0.0,
                   "seed0": float(eces[0])}
            if ranker != reference:
                lo, hi = balanced_ece_reduction_interval(qs, base, scores, args.bootstrap,
                                                         n_seeds=min(10, args.balanced_seeds))
                # ranker minus reference: negative is better calibrated; the interval of the same difference
                row["change_vs_reference"] = row["mean"] - balanced[cond][reference]["mean"]
                row["change_ci95"] = [-hi, -lo]
            balanced[cond][ranker] = row
    payload = {
        "command": "python docs/scripts/full_study_diagnostics.py docs/studies/full.toml full-study",
        "balanced_ece": balanced,
        "balanced_ece_settings": {
            "reference": reference, "balanced_seeds": args.balanced_seeds, "bootstrap": args.bootstrap,
            "conditions": list(data.tests), "rankers": neural,
            "bins": "10 equal-width", "scores": "each ranker's mean prediction (the study's scores)",
        },
        "lexical_overlap": lexical,
        "risk_r1_wide_grid": risk,
        "grid": list(WIDE_GRID),
    }
    atomic_write_text(args.out, json.dumps(payload, indent=2, sort_keys=True) + "\n")
    print(json.dumps(lexical, indent=1))


if __name__ == "__main__":
    main()
