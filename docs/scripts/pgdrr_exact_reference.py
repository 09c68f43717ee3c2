"""PG-DRR's Gibbs predictive against an exact reference, on the real-run encoder's frozen features.

A fitted ``pgdrr`` ranker predicts from its memory bank: M projected
training features with their labels, ``n_chains`` Pólya-Gamma Gibbs chains
run on them (their last omega each), and per chain the Gaussian conditional
of the test latent, pushed through the sigmoid by Gauss-Hermite quadrature;
P(relevant) is the mean over chains. This script checks that predictive
against the same GP classifier (the bank's features, labels, RBF kernel and
nugget) sampled by a long PyMC NUTS run: latent ``f = L u``, ``u ~ N(0, I)``,
``K + jitter = L L^T``, ``y ~ Bernoulli(sigmoid(f))``; the test latent given
``f`` is ``N(K*^T K^-1 f, k** - K*^T K^-1 K*)`` and P(relevant) its mean
sigmoid (the same quadrature), averaged over the NUTS draws.

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study   # bert, in .cache/real_run/bert
    python docs/scripts/own_model_real_run.py   # .cache/real_run/bert_hf, then docs/studies/own_model.toml
    python docs/scripts/pgdrr_exact_reference.py --ranker .cache/own_model_study/models/pgdrr-<key>

The ranker: docs/studies/own_model.toml's post-hoc ``pgdrr`` head on the
real run's frozen encoder. The test points are the first ``--test-pairs``
in-domain test pairs of 600 test queries drawn by
``np.random.default_rng(2)`` (a fixed draw). The result goes to --out
(JSON): the largest and mean absolute difference of P(relevant),
the same in combined Monte Carlo standard errors of the two runs (the
tolerance: every point within 4), and the NUTS run's diagnostics (R-hat,
ESS, divergences).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _test_features(ranker: Any, n_pairs: int) -> Any:
    """The projected features of the first ``n_pairs`` in-domain test pairs (of 600 queries, a fixed draw)."""
    import torch

    import uncertank.datasets as ud

    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0)
    idx = np.sort(np.random.default_rng(2).choice(test.n_queries, size=600, replace=False))
    test = test.subset(idx[: -(-n_pairs // 10)])
    enc = ranker.encode(test)
    model = ranker.build_model().eval()
    keep = np.arange(min(n_pairs, enc.n_pairs))
    batch = enc.batch(keep, torch.device("cpu"))
    with torch.no_grad():
        feats = model.features(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))
        return feats.double(), np.asarray(test.labels)[keep]  # features() projects already


def nuts_reference(head: Any, z: Any, *, draws: int, tune: int, chains: int, seed: int) -> dict[str, Any]:
    """P(relevant) at ``z`` under the bank's GP classifier, by NUTS over the bank's latents."""
    import arviz as az
    import pymc as pm
    import torch
    from uncertank_pgdrr.gp import gauss_hermite_sigmoid

    n = int(head.bank_count)
    x = head.bank_features[:n]
    y = head.bank_labels[:n].numpy()
    k = head.kernel(x, x).numpy()
    k = k + head.jitter * head.output_scale * np.eye(n)
    chol = np.linalg.cholesky(k)
    with pm.Model():
        u = pm.Normal("u", 0.0, 1.0, shape=n)
        f = pm.Deterministic("f", pm.math.dot(chol, u))
        pm.Bernoulli("y", logit_p=f, observed=y)
        t0 = time.perf_counter()
        idata = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False, target_accept=0.9)
        seconds = time.perf_counter() - t0
    summary = az.summary(idata, var_names=["u"], kind="diagnostics")
    fs = idata.posterior["f"].values.reshape(-1, n)  # (draws, n)
    ks = head.kernel(x, z).numpy()  # (n, b)
    a = np.linalg.solve(k, ks)  # K^-1 K*
    mean = fs @ a  # (draws, b)
    var = np.clip(head.output_scale * (1 + head.jitter) - (ks * a).sum(0), 0, None)
    p_draws, _ = gauss_hermite_sigmoid(torch.as_tensor(mean), torch.as_tensor(np.broadcast_to(var, mean.shape)),
                                       n_points=head.n_quadrature)
    p = p_draws.numpy()
    ess = float(summary["ess_bulk"].min())
    return {
        "p": p.mean(0), "mc_se": p.std(0, ddof=1) / np.sqrt(ess), "seconds": seconds,
        "max_rhat": float(summary["r_hat"].max()), "min_ess_bulk": ess,
        "divergences": int(idata.sample_stats["diverging"].values.sum()),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranker", type=Path, required=True, help="a fitted pgdrr checkpoint folder")
    ap.add_argument("--test-pairs", type=int, default=200)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--tolerance", type=float, default=4.0,
                    help="largest difference accepted, in combined Monte Carlo standard errors of the two runs")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "pgdrr_exact_reference.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch

    from uncertank.nn import NeuralRanker, load_ranker

    ranker = load_ranker(args.ranker, show_progress=False, device="cpu")
    assert isinstance(ranker, NeuralRanker), type(ranker)
    head: Any = ranker.build_model().head  # the plugin's GP head, read by its attributes
    z, labels = _test_features(ranker, args.test_pairs)
    p_gibbs, _ = head.probabilities(z)
    ref = nuts_reference(head, z, draws=args.draws, tune=args.tune, chains=args.chains, seed=0)
    diff = np.abs(p_gibbs.numpy() - ref["p"])
    # the Gibbs predictive's own Monte Carlo error: its chains' spread over their number
    mean_c, var_c = head.predictive(z)
    from uncertank_pgdrr.gp import gauss_hermite_sigmoid

    per_chain, _ = gauss_hermite_sigmoid(mean_c, var_c, n_points=head.n_quadrature)
    gibbs_se = (per_chain.std(0) / np.sqrt(per_chain.shape[0])).numpy()
    z_scores = diff / np.sqrt(gibbs_se**2 + ref["mc_se"] ** 2)
    payload = {
        "command": "python docs/scripts/pgdrr_exact_reference.py --ranker " + str(args.ranker),
        "ranker": str(args.ranker),
        "bank_size": int(head.bank_count), "n_chains": int(head.n_chains), "test_pairs": int(z.shape[0]),
        "kernel": {"length_scale": head.length_scale, "output_scale": head.output_scale, "jitter": head.jitter,
                   "projection_dim": head.dim},
        "nuts": {k: v for k, v in ref.items() if k not in ("p", "mc_se")} | {
            "draws": args.draws, "tune": args.tune, "chains": args.chains},
        "max_abs_difference": float(diff.max()),
        "mean_abs_difference": float(diff.mean()),
        "reference_mc_se_max": float(ref["mc_se"].max()),
        "gibbs_mc_se_max": float(gibbs_se.max()),
        "gibbs_mc_se_mean": float(gibbs_se.mean()),
        "max_difference_in_standard_errors": float(z_scores.max()),
        "share_within_2_standard_errors": float(np.mean(z_scores <= 2)),
        "tolerance": f"every |P_gibbs - P_nuts| within {args.tolerance} combined Monte Carlo standard errors "
                     "(Gibbs: the spread of its chains over their number; NUTS: its draws' over their bulk ESS)",
        "within_tolerance": bool(z_scores.max() <= args.tolerance),
        "p_range_gibbs": [float(p_gibbs.min()), float(p_gibbs.max())],
        "p_range_reference": [float(ref["p"].min()), float(ref["p"].max())],
        "relevant_share_of_test_pairs": float(np.mean(labels)),
        "torch": torch.__version__,
    }
    from uncertank.files import atomic_write_text

    atomic_write_text(args.out, json.dumps(payload, indent=2, sort_keys=True) + "\n")
    print(json.dumps(payload, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
