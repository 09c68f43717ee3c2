"""Do the docs' commands give the full study's models and numbers back? (docs/study.md, "Reproduce")

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study
    uncertank run docs/studies/full_check.toml --out .cache/full_check
    python docs/scripts/full_study_summary.py .cache/full_check --out .cache/full_check/summary.json --figures -
    git show eaac854:docs/results/real_run_neural.json > .cache/full_study_training.json
    python docs/scripts/full_study_check.py .cache/full_check/summary.json \\
        --training .cache/full_study_training.json --models .cache/real_run

compares two things with what the full study's own run recorded, and writes
``docs/results/full_study_check.json``:

- **the models**: for each model folder under the ``--models`` folders
  (``bert``, ``sngp``, ..., an ensemble's ``member_1``, ...), the SHA-256 of its weights and its training losses
  (steps, mean over the first and the last ten) against the training record
  of the run that trained the full study's models (``--training``: that
  run's ``real_run_neural.json``, where ``bert`` is ``member_0``);
- **the numbers**: every number of the summary of a study that scores those
  models as ``docs/studies/full.toml`` does (the first argument)
  against ``docs/results/full_study.json``, ranker by ranker and condition
  by condition. Comparisons with ``bert`` (changes, Holm-corrected p-values)
  are left out: they depend on which other rankers share the table. The
  Bayesian comparison of the TREC-COVID systems is compared the same way,
  family by family.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The reference run's names for the models of docs/studies/real_run.toml
REFERENCE_NAMES = {"bert": "member_0"}
#: Leaves of a summary row that compare a ranker with bert rather than describe it
RELATIVE = ("change vs bert", "p (Holm) vs bert")


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    from uncertank.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def leaves(value: Any, prefix: str = "") -> dict[str, float]:
    """Every number in a nested summary row, by its path (``risk/R@1 mean``); lists are indexed."""
    if isinstance(value, bool) or value is None:
        return {}
    if isinstance(value, (int, float)):
        return {prefix: float(value)}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    out: dict[str, float] = {}
    for key, sub in items:
        out.update(leaves(sub, f"{prefix}/{key}" if prefix else str(key)))
    return out


def side_by_side(theirs: dict[str, float], ours: dict[str, float]) -> dict[str, Any]:
    """The numbers both sides have: how many, how many equal, the largest gap, and each that differs."""
    shared = sorted(set(ours) & set(theirs))
    gaps = {k: abs(ours[k] - theirs[k]) for k in shared}
    return {
        "numbers": len(shared),
        "equal": sum(g == 0.0 for g in gaps.values()),
        "max abs difference": max(gaps.values(), default=0.0),
        "differ": {k: {"full study": theirs[k], "retrained": ours[k]} for k in shared if gaps[k] > 0.0},
    }


def compare_numbers(reference: dict[str, Any], retrained: dict[str, Any]) -> dict[str, Any]:
    """Per condition and ranker present in both summaries: how many numbers agree exactly, and the largest gap."""
    out: dict[str, Any] = {}
    for cond, rows in retrained["results"].items():
        for ranker, row in rows.items():
            ref_row = reference["results"].get(cond, {}).get(ranker)
            if ref_row is None:
                continue
            ours = {k: v for k, v in leaves(row).items() if not any(r in k for r in RELATIVE)}
            theirs = {k: v for k, v in leaves(ref_row).items() if not any(r in k for r in RELATIVE)}
            out.setdefault(ranker, {})[cond] = side_by_side(theirs, ours)
    return out


def compare_bayes(reference: dict[str, Any], retrained: dict[str, Any]) -> dict[str, Any]:
    """Per family of the Bayesian comparison in both summaries: its diagnostics and verdicts, number by number."""
    out: dict[str, Any] = {}
    for family, fit in retrained.get("bayes", {}).items():
        ref = reference.get("bayes", {}).get(family)
        if ref is None:
            continue
        out[family] = {
            **side_by_side(leaves(ref), leaves(fit)),
            "converged": {"full study": ref.get("converged"), "retrained": fit.get("converged")},
            "same verdicts": all(fit.get(k) == ref.get(k) for k in ("best_distinguishable", "worst_distinguishable")),
        }
    return out


def compare_models(models: Path, training: dict[str, Any]) -> dict[str, Any]:
    """Weights digest and training losses of each saved model, against the reference run's record."""
    import numpy as np

    out: dict[str, Any] = {}
    for manifest in sorted(models.glob("*/uncertank.json")):
        folder = manifest.parent
        loss = (json.loads(manifest.read_text()).get("history") or {}).get("loss") or []
        if not loss:
            continue
        weights = folder / "model.safetensors"
        mine = {
            "steps": len(loss),
            "mean loss first 10": float(np.mean(loss[:10])),
            "mean loss last 10": float(np.mean(loss[-10:])),
        }
        entry: dict[str, Any] = {
            "weights sha256": hashlib.sha256(weights.read_bytes()).hexdigest() if weights.is_file() else None,
            "retrained": mine,
        }
        ref = training.get(REFERENCE_NAMES.get(folder.name, folder.name))
        if ref is not None:
            theirs = {"steps": ref["steps"], "mean loss first 10": ref["mean_loss_first_10_steps"],
                      "mean loss last 10": ref["mean_loss_last_10_steps"]}
            entry["full study"] = theirs
            entry["equal"] = theirs == mine
        out[folder.name] = entry
    return out


def machine() -> dict[str, Any]:
    """What decides the floating-point kernels: the CPU's instruction set as torch sees it, threads, versions."""
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "torch cpu capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summary", type=Path, help="full_study_summary.py's file for the study that scored the models")
    ap.add_argument("--training", type=Path, required=True,
                    help="the training record of the full study's models (real_run_neural.json at eaac854)")
    ap.add_argument("--models", type=Path, nargs="+", default=[ROOT / ".cache" / "real_run"],
                    help="folders of retrained models: docs/studies/real_run.toml's save_to folders' parent, "
                         "and an ensemble's folder (its member_0 ... member_4)")
    ap.add_argument("--reference", type=Path, default=ROOT / "docs" / "results" / "full_study.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "full_study_check.json")
    ap.add_argument("--commands", nargs="*", default=[], help="the commands that made the inputs, recorded in --out")
    args = ap.parse_args(argv)
    for path, what in ((args.summary, "summary"), (args.training, "--training"), (args.reference, "--reference")):
        if not path.is_file():
            raise SystemExit(f"{what}: expected a JSON file; {path} does not exist")
    for folder in args.models:
        if not folder.is_dir():
            raise SystemExit(f"--models: expected a folder of saved models; {folder} is not one")
    training = json.loads(args.training.read_text()).get("training")
    if not isinstance(training, dict):
        raise SystemExit(f"--training: expected a file with a 'training' object; {args.training} has none")
    reference, summary = json.loads(args.reference.read_text()), json.loads(args.summary.read_text())
    payload = {
        "commands": args.commands,
        "machine": machine(),
        "models": {name: entry for folder in args.models for name, entry in compare_models(folder, training).items()},
        "numbers": compare_numbers(reference, summary),
        "bayes": compare_bayes(reference, summary),
    }
    _atomic_json(args.out, payload)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
