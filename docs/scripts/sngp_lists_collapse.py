"""Why SNGP trained end to end on lists of ten predicts one number: the intercept and the GP layer's rate, tested.

Fine-tuned end to end on lists of ten (``train_ratio=9``) from the lists-trained
``bert`` (docs/studies/lists_bert.toml), ``sngp`` and ``gpf_bert`` gave every
pair the same probability. Their GP output layer had no intercept: the logit
was ``phi(x) . beta`` alone, so the only way to predict the 10% base rate for
most pairs is to make ``phi`` the same for every input, and the encoder learns
exactly that (the intercept alone turned out not to be enough). This script
trains ``sngp`` the same way three times, on a
seeded subset of training queries: with the intercept held at 0
(``output_bias=False``, the layer as it was), learned from 0
(``output_bias_init=0``), and learned from the training pairs' prior
log-odds, ``-log 9`` (the default); and, as the control, a new plain
``bert`` head on the same encoder, trained the same way. Two more variants
keep the prior log-odds and change what else could drive the collapse: the
GP layer trained at 3e-3 (``head_lr``, PG-DRR's GP-layer rate) and no
spectral normalisation. It measures what a collapse would show:

- the spread of the encoder's ``[CLS]`` vectors across pairs (mean over the
  dimensions of the standard deviation across 400 validation pairs), beside
  their spread within one vector;
- the spread of P(relevant) over the validation pairs;
- validation MAP and R_10@1 (chance: 0.293 and 0.1).

    python docs/scripts/sngp_lists_collapse.py --out docs/results/sngp_lists_collapse.json

About 40 minutes on 2 CPU cores with the defaults (six trainings of 500 steps); a variant already in
--out is not trained again.
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
BERT_LISTS = ROOT / ".cache" / "real_run" / "bert_lists"  # saved by docs/studies/real_run.toml


def _spread(ranker: Any, queries: Any) -> dict[str, float]:
    """Across-pair and within-vector standard deviations of the ``[CLS]`` vectors entering the head."""
    import torch

    from uncertank.nn import pool_encoder

    model = ranker.build_model().eval()
    enc = ranker.encode(queries)
    batch = enc.batch(np.arange(enc.n_pairs), torch.device("cpu"))
    with torch.no_grad():
        h = pool_encoder(model.encoder, batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"),
                         pooling=ranker.pooling)
    return {"cls_std_across_pairs": float(h.std(0).mean()), "cls_std_within_vector": float(h.std(1).mean())}


VARIANTS: dict[str, dict[str, Any]] = {
    "intercept held at 0": {"output_bias": False},
    "intercept learned from 0": {"output_bias": True, "output_bias_init": 0.0},
    "intercept learned from the prior log-odds": {"output_bias": True, "output_bias_init": None},
    "plain head (bert), the control": {},
    # what else could drive the collapse: the GP layer learning as fast as the paper's (3e-3, PG-DRR's
    # GP-layer rate), so beta and the gradient it sends the encoder grow sooner; no spectral normalisation
    "prior log-odds, GP layer at lr 3e-3": {"output_bias": True, "output_bias_init": None, "head_lr": 3e-3},
    "prior log-odds, no spectral normalisation": {"output_bias": True, "output_bias_init": None,
                                                  "spec_norm_bound": None},
}


def run_one(variant: str, train: Any, valid: Any, probe: Any, *, queries: int, seed: int) -> dict[str, Any]:
    """Train ``sngp`` from the lists-trained ``bert`` on lists of ten and measure the collapse."""
    from uncertank_sngp import SNGPRanker

    from uncertank.metrics import mean_average_precision, recall_at_k
    from uncertank.nn import NeuralRanker, load_ranker

    bert = load_ranker(BERT_LISTS)
    assert isinstance(bert, NeuralRanker), type(bert)
    cls = type(bert) if not VARIANTS[variant] else SNGPRanker  # the control: a new bert head, as sngp's
    ranker: Any = cls.from_ranker(  # bert or SNGPRanker: the SNGP attributes are read only when gp
        bert, max_length=64, epochs=1, batch_size=16, lr=1e-4, seed=seed, train_ratio=9,
        max_train_queries=queries, show_progress=False, **VARIANTS[variant],
    )
    gp = cls is SNGPRanker
    start = None
    if gp:
        start = ranker.prior_log_odds(train) if ranker.output_bias_init is None else ranker.output_bias_init
    t0 = time.perf_counter()
    ranker.fit(train)
    seconds = time.perf_counter() - t0
    pred = ranker.predict(valid)
    loss = np.asarray(ranker.history_.loss)
    return {
        "variant": variant,
        **VARIANTS[variant],
        "intercept_start": (start if VARIANTS[variant]["output_bias"] else 0.0) if gp else None,
        "fit_seconds": round(seconds, 1),
        "steps": int(loss.size),
        "loss_last_50": float(loss[-50:].mean()),
        "intercept": float(ranker.build_model().gp.bias.detach()) if gp else None,
        "valid_MAP": float(mean_average_precision(pred, valid.labels)),
        "valid_R@1": float(recall_at_k(pred, valid.labels, k=1)),
        "prob_std_across_pairs": float(np.std(pred.scores)),
        "prob_mean": float(np.mean(pred.scores)),
        **_spread(ranker, probe),
    }


def measure_saved(folder: Path, label: str, valid: Any, probe: Any) -> dict[str, Any]:
    """The same measurements on a ranker a study trained and saved (``folder``), nothing trained here."""
    from uncertank.metrics import mean_average_precision, recall_at_k
    from uncertank.nn import NeuralRanker, load_ranker

    ranker = load_ranker(folder)
    assert isinstance(ranker, NeuralRanker), type(ranker)
    loss = np.asarray((json.loads((folder / "uncertank.json").read_text()).get("history") or {}).get("loss") or [])
    pred = ranker.predict(valid)
    gp = getattr(ranker.build_model(), "gp", None)
    return {
        "variant": label,
        "folder": str(folder.resolve().relative_to(ROOT)),
        "intercept_start": None,
        "steps": int(loss.size),
        "loss_last_50": float(loss[-50:].mean()) if loss.size else None,
        "intercept": None if gp is None else float(gp.bias.detach()),
        # the output weights start at sd 0.01 (output_init_std): how far they moved
        "beta_std": None if gp is None else float(gp.beta.weight.detach().std()),
        "valid_MAP": float(mean_average_precision(pred, valid.labels)),
        "valid_R@1": float(recall_at_k(pred, valid.labels, k=1)),
        "prob_std_across_pairs": float(np.std(pred.scores)),
        "prob_mean": float(np.mean(pred.scores)),
        **_spread(ranker, probe),
    }


def full_size_table(payload: dict[str, Any]) -> str:
    """The docs table of the full-size rows (``--full-size``)."""
    lines = ["| model (lists, full size) | steps | intercept | beta sd | MAP / R_10@1 | P: sd / mean "
             "| [CLS] sd: across (within) |", "|---|---:|---:|---:|---|---|---|"]
    for r in payload["full_size"]["rows"]:
        c = "–" if r["intercept"] is None else f"{r['intercept']:.2f}"
        b = "–" if r.get("beta_std") is None else f"{r['beta_std']:.4f}"
        lines.append(f"| {r['variant']} | {r['steps']} | {c} | {b} | {r['valid_MAP']:.3f} / {r['valid_R@1']:.3f} | "
                     f"{r['prob_std_across_pairs']:.1e} / {r['prob_mean']:.3f} | "
                     f"{r['cls_std_across_pairs']:.4f} ({r['cls_std_within_vector']:.2f}) |")
    return "\n".join(lines)


def table(payload: dict[str, Any]) -> str:
    """The docs table of ``payload`` (the script's JSON)."""
    lines = ["| variant | intercept | MAP / R_10@1 | P: sd / mean | [CLS] sd: across (within) | loss |",
             "|---|---|---|---|---|---:|"]
    for r in payload["rows"]:
        c = "–" if r["intercept"] is None else f"{r['intercept_start']:.2f} → {r['intercept']:.2f}"
        lines.append(f"| {r['variant']} | {c} | {r['valid_MAP']:.3f} / {r['valid_R@1']:.3f} | "
                     f"{r['prob_std_across_pairs']:.1e} / {r['prob_mean']:.3f} | "
                     f"{r['cls_std_across_pairs']:.4f} ({r['cls_std_within_vector']:.2f}) | {r['loss_last_50']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=800, help="training queries (lists of ten), seeded")
    parser.add_argument("--valid-queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "sngp_lists_collapse.json")
    parser.add_argument("--render", action="store_true", help="print the docs table from --out and stop")
    parser.add_argument("--full-size", type=Path, default=None, metavar="STUDY_OUT",
                        help="measure instead the models a study trained on lists at full size and saved "
                             "(uncertank run docs/studies/lists_intercept.toml --out STUDY_OUT), beside the "
                             "lists-trained bert they start from; written to --out under 'full_size'")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.render:
        payload = json.loads(args.out.read_text())
        print(table(payload))
        if "full_size" in payload:
            print("\n" + full_size_table(payload))
        return 0

    import uncertank.datasets as ud
    from uncertank.files import atomic_write_text

    if not (BERT_LISTS / "uncertank.json").exists():
        parser.error(f"{BERT_LISTS} is missing: run "
                     "`uncertank run docs/studies/real_run.toml --out .cache/real_run/study` first")
    valid = ud.load("ubuntu-sample", split="valid", negatives="bm25", n_candidates=10, seed=0,
                    max_queries=args.valid_queries)
    probe = valid.subset(np.arange(min(40, valid.n_queries)))
    if args.full_size is not None:  # measures saved models: no training split needed
        return _full_size(args, valid, probe)
    train = ud.load("ubuntu-sample", split="train", negatives="bm25", n_candidates=10, seed=0)
    settings = {"train_queries": args.queries, "valid_queries": args.valid_queries, "seed": args.seed}
    done: dict[str, Any] = {}
    kept: dict[str, Any] = {}  # the --full-size measurements: another step's, kept as they are
    if args.out.exists():
        before = json.loads(args.out.read_text())
        if all(before.get(k) == v for k, v in settings.items()):
            done = {r["variant"]: r for r in before["rows"]}
        if "full_size" in before:
            kept["full_size"] = before["full_size"]
    rows = []
    for variant in VARIANTS:
        rows.append(done.get(variant) or run_one(variant, train, valid, probe, queries=args.queries, seed=args.seed))
        payload = {"command": "python docs/scripts/sngp_lists_collapse.py", "start": str(BERT_LISTS.relative_to(ROOT)),
                   "train_ratio": 9, **settings, "rows": rows, **kept}
        atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")  # after each variant: resumable
    print(table(payload))
    return 0


def _full_size(args: argparse.Namespace, valid: Any, probe: Any) -> int:
    from uncertank.experiment import load_config
    from uncertank.experiment.stages import file_stem  # how the runner names its model folders
    from uncertank.files import atomic_write_text

    config = load_config(ROOT / "docs" / "studies" / "lists_intercept.toml")
    steps = json.loads((args.full_size / "results.json").read_text())["steps"]
    rows = [measure_saved(BERT_LISTS, "bert lists, the starting encoder", valid, probe)]
    for rc in config.rankers:
        if rc.checkpoint is not None:
            continue  # bert and bert lists: loaded, not trained by the study
        folder = args.full_size / "models" / f"{file_stem(rc.key)}-{steps[f'fit {rc.key}']['key']}"
        if not (folder / "uncertank.json").exists():
            raise SystemExit(f"--full-size: {folder} (the saved model of {rc.key!r}) is missing; run the study")
        rows.append(measure_saved(folder, rc.key, valid, probe))
    payload = json.loads(args.out.read_text())
    payload["full_size"] = {
        "command": "python docs/scripts/sngp_lists_collapse.py --full-size .cache/lists_intercept",
        "study": "docs/studies/lists_intercept.toml", "valid_queries": args.valid_queries, "rows": rows,
    }
    atomic_write_text(args.out, json.dumps(payload, indent=2) + "\n")
    print(full_size_table(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
