"""Pooled against fixed system effects when a comparison has few systems.

Simulates per-query effectiveness of K systems on 150 topics (a topic
difficulty, a system effect of 0.15 per system on the log-odds scale,
per-query noise, 15% exact zeros and 15% exact ones, as per-query AP of
rerankers has), fits the Gaussian and the ZOiB model with the system
effects pooled (the paper's ``r_system ~ Normal(0, sd_system)``) and fixed
(``r_system ~ ZeroSumNormal(s)``), 4 chains x 1,000 draws after 1,000
tuning steps, and records each fit's convergence checks.

    python docs/scripts/few_systems.py            # writes docs/results/few_systems.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parents[1] / "results" / "few_systems.json"


def simulate(k: int, n_topics: int = 150, seed: int = 0) -> pd.DataFrame:
    """Per-query scores of ``k`` systems on ``n_topics`` topics, with exact zeros and ones."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.5, n_topics)
    rows = []
    for j in range(k):
        p = 1.0 / (1.0 + np.exp(-(difficulty + 0.15 * j + rng.normal(0.0, 0.8, n_topics))))
        score = np.where(rng.random(n_topics) < 0.15, 0.0, np.where(rng.random(n_topics) < 0.15, 1.0, p))
        rows += [{"system": f"s{j}", "topic": f"t{i}", "score": float(v)} for i, v in enumerate(score)]
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", default="2,4,8")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from uncertank.bayes import compare

    rows = []
    for k in (int(v) for v in args.systems.split(",")):
        df = simulate(k)
        for family in ("gaussian", "zoib"):
            for effects in ("pooled", "fixed"):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cmp = compare(df, family=family, draws=1000, tune=1000, chains=4, seed=0,
                                  model_options={"system_effects": effects})
                d = cmp.diagnostics()
                rows.append({"systems": k, "family": family, "system_effects": effects, "ok": d.ok,
                             "max_rhat": d.max_rhat, "min_ess_bulk": d.min_ess_bulk,
                             "n_divergences": d.n_divergences, "seconds": time.perf_counter() - t0,
                             "sampler": cmp.sampler})
                print(json.dumps(rows[-1]), flush=True)
    args.out.write_text(json.dumps({"command": "python docs/scripts/few_systems.py", "topics": 150,
                                    "chains": 4, "draws": 1000, "tune": 1000, "rows": rows}, indent=2) + "\n",
                        encoding="utf-8")


if __name__ == "__main__":
    main()
