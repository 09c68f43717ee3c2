"""The real run's fine-tuned bert as a user's own model: exported, loaded back, and given every method.

Reproduces "The real run's model as a user's own" in docs/rankers.md::

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study   # bert, in .cache/real_run/bert
    python docs/scripts/own_model_real_run.py                              # the rest (resumes)
    python docs/scripts/own_model_real_run.py --render                     # the docs table, from the JSON

Stages:

1. export: the real run's ``bert`` (docs/studies/real_run.toml saves it to
   .cache/real_run/bert, --source) written with ``save_pretrained`` as a
   plain Hugging Face / sentence-transformers folder (.cache/real_run/bert_hf,
   --exported; the post-hoc studies docs/studies/posthoc_*.toml load it too),
   loaded back with ``uncertank.nn.from_pretrained`` and scored on 600
   in-domain test queries (a fixed draw, ``np.random.default_rng(2)``)
   beside the checkpoint: the largest absolute difference goes to the JSON.
2. study: ``uncertank run docs/studies/own_model.toml`` (the folder as it
   is, MC dropout on it, post-hoc ``sngp``/``gpf_bert``/``pgdrr`` heads on
   its frozen encoder; the full study's four conditions, test queries and
   seeds), resumable in --study-out.
3. laplace (``--stage laplace``, after the others): docs/studies/own_model_laplace.toml,
   last-layer Laplace on the same folder, conditions and queries, in
   --laplace-out; its rows join the summary in --out, with its fit and
   predict seconds and a check that its ``bert`` rows equal the study's.
4. summary: its numbers beside the end-to-end ones of the full study
   (docs/results/full_study.json) and their training times (the ``fit``
   steps of the real run's study, docs/results/real_run.json, written by
   ``python docs/scripts/full_study_summary.py .cache/real_run/study --out
   docs/results/real_run.json --figures docs/results/real_run``), written to
   --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / ".cache" / "real_run" / "bert"  # docs/studies/real_run.toml's save_to for bert
EXPORTED = ROOT / ".cache" / "real_run" / "bert_hf"
REAL_RUN = ROOT / "docs" / "results" / "real_run.json"  # the real run's study, summarised
REAL_RUN_COMMAND = "uncertank run docs/studies/real_run.toml --out .cache/real_run/study"
STUDY = ROOT / "docs" / "studies" / "own_model.toml"
LAPLACE_STUDY = ROOT / "docs" / "studies" / "own_model_laplace.toml"
LABELS = ("R@1", "MAP", "ECE", "ECE balanced", "ECE balanced (mean of 100)")
POST_HOC = ("sngp", "gpf_bert", "pgdrr")


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    from uncertank.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def export(source: Path, folder: Path) -> dict[str, Any]:
    """Write the checkpoint ``source`` as a Hugging Face ``folder``, load it back, compare scores on test queries."""
    import uncertank.datasets as ud
    from uncertank.nn import NeuralRanker, from_pretrained, load_ranker

    if not (source / "uncertank.json").exists():
        raise SystemExit(f"{source} is missing: run `{REAL_RUN_COMMAND}` first")
    ranker = load_ranker(source, show_progress=False)
    assert isinstance(ranker, NeuralRanker), type(ranker)
    t0 = time.perf_counter()
    ranker.save_pretrained(folder)
    seconds = time.perf_counter() - t0
    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0)
    idx = np.sort(np.random.default_rng(2).choice(test.n_queries, size=600, replace=False))
    test = test.subset(idx)  # 600 in-domain test queries, a fixed draw
    original = ranker.predict(test).scores
    again = from_pretrained(folder, show_progress=False).predict(test).scores
    diff = np.abs(original - again)
    return {
        "folder": str(folder.relative_to(ROOT)),
        "export_s": round(seconds, 2),
        "test_pairs": int(original.size),
        "max_abs_difference": float(diff.max()),
        "mean_abs_difference": float(diff.mean()),
        "files": sorted(p.name for p in folder.iterdir()),
    }


def run_study(out: Path, study: Path = STUDY) -> None:
    """``uncertank run`` on the study file (it resumes from what ``out`` holds)."""
    cmd = [str(Path(sys.executable).parent / "uncertank"), "run", str(study), "--out", str(out)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def _metrics(metrics: dict[str, Any]) -> dict[str, float | None]:
    return {label: (None if metrics.get(label) is None else float(metrics[label])) for label in LABELS}


def train_seconds_end_to_end(real_run: Path = REAL_RUN) -> dict[str, float | None]:
    """The seconds the real run's study took to fit bert and the GP rankers from it (``None``: no such step).

    ``real_run`` is that study's summary (docs/scripts/full_study_summary.py): its ``step_seconds`` has
    a ``"fit <ranker>"`` step per trained ranker.
    """
    if not real_run.exists():
        raise SystemExit(
            f"{real_run} is missing: run `{REAL_RUN_COMMAND}`, then `python docs/scripts/full_study_summary.py "
            ".cache/real_run/study --out docs/results/real_run.json --figures docs/results/real_run`")
    steps = json.loads(real_run.read_text()).get("step_seconds", {})
    return {name: (None if steps.get(f"fit {name}") is None else float(steps[f"fit {name}"]))
            for name in (*POST_HOC, "bert")}


def summarise(study_out: Path, exported: dict[str, Any], real_run: Path = REAL_RUN) -> dict[str, Any]:
    """The study's numbers beside the full study's end-to-end rankers and their training times (``real_run``)."""
    from uncertank.experiment.result import StudyResult

    study = StudyResult.from_dict(json.loads((study_out / "results.json").read_text()))
    full = json.loads((ROOT / "docs" / "results" / "full_study.json").read_text())
    rows: dict[str, dict[str, Any]] = {}
    risk: dict[str, dict[str, Any]] = {}
    for e in study.evaluations:
        if e.ranker == "bm25":
            continue
        label = f"{e.ranker} (post-hoc)" if e.ranker in POST_HOC else f"{e.ranker} (your folder)"
        rows.setdefault(label, {})[e.condition] = _metrics(e.metrics)
        if e.risk is not None:
            best = max(e.risk.test_curve, key=lambda g: (e.risk.test_curve[g], -abs(g), -g))  # type: ignore[union-attr]
            risk.setdefault(label, {})[e.condition] = {
                "b": e.risk.b, "R@1_mean": e.risk.r1_mean, "R@1_risk_aware": e.risk.r1_risk_aware,
                "p_value": e.risk.p_value, "oracle_b": best, "R@1_oracle": e.risk.test_curve[best],
            }
    # the full study's balanced ECE over 100 subsamples (seeds 0-99), from its diagnostics run
    diag = json.loads((ROOT / "docs" / "results" / "full_study_diagnostics.json").read_text())["balanced_ece"]
    for cond in study.conditions:
        for name in ("bert", "mc_dropout", *POST_HOC):
            entry = full["results"].get(cond, {}).get(name)
            if entry is not None:
                m = _metrics(entry)
                mean = diag.get(cond, {}).get(name, {}).get("mean")
                m["ECE balanced (mean of 100)"] = None if mean is None else float(mean)
                rows.setdefault(f"{name} (end to end, full study)", {})[cond] = m
    fit_s = {name: round(study.steps[f"fit {name}"].seconds, 1) for name in POST_HOC if f"fit {name}" in study.steps}
    predict_s = {
        name: round(sum(s.seconds for k, s in study.steps.items() if k.startswith(f"predict {name} ")), 1)
        for name in ("bert", "mc_dropout", *POST_HOC)
    }
    end_to_end_s = train_seconds_end_to_end(real_run)
    return {
        "command": "python docs/scripts/own_model_real_run.py",
        "study": str(STUDY.relative_to(ROOT)),
        "export": exported,
        "conditions": study.conditions,
        "results": rows,
        "risk": risk,
        "fit_seconds_post_hoc": fit_s,
        "predict_seconds_all_conditions": predict_s,
        "train_seconds_end_to_end": end_to_end_s,
        "notes": {
            "post_hoc": "GP head trained alone on the frozen encoder of the exported folder: train split, "
                        "one epoch of balanced pairs, lr 1e-3, batch 16",
            "end_to_end": "the full study's rankers (docs/studies/full.toml): a new head on a copy of bert's "
                          "fine-tuned encoder, then one epoch of training of encoder and head, lr 1e-4; their "
                          "training seconds are the fit steps of docs/studies/real_run.toml "
                          "(docs/results/real_run.json)",
            "ECE balanced": "one balanced subsample (seed 0), as in the full study; "
                            "'mean of 100' averages 100 subsamples: drawn one after another from seed 0 for "
                            "this study's rankers (the metric's n_subsamples=100), with seeds 0-99 for the "
                            "full study's (docs/results/full_study_diagnostics.json)",
            "oracle_b": "the grid's b with the best test R@1 (an upper bound, chosen with test labels)",
        },
        "machine": f"{os.uname().machine}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end",
    }


def add_laplace(payload: dict[str, Any], laplace_out: Path) -> dict[str, Any]:
    """``payload`` with the Laplace study's rows and seconds under ``"laplace"``.

    The folder the Laplace study loads is the export of ``--source`` on this
    machine; its ``bert`` rows are compared with the full study's ``bert``
    (``bert_rows_max_abs_difference_vs_full_study``: 0 when the export is
    that model), since the retrained model of the study above may differ
    (see the docs' "The retrained model is not the study's model").
    """
    from uncertank.experiment.result import StudyResult

    study = StudyResult.from_dict(json.loads((laplace_out / "results.json").read_text()))
    mine: dict[str, dict[str, Any]] = {}
    for e in study.evaluations:
        mine.setdefault(e.ranker, {})[e.condition] = _metrics(e.metrics)
    full = payload["results"].get("bert (end to end, full study)", {})
    keys = ("R@1", "MAP", "ECE", "ECE balanced")
    gaps = [abs(float(m[k]) - float(full[c][k])) for c, m in mine["bert"].items() for k in keys
            if m.get(k) is not None and full.get(c, {}).get(k) is not None]
    predict_s = {name: round(sum(s.seconds for k, s in study.steps.items() if k.startswith(f"predict {name} ")), 1)
                 for name in ("bert", "laplace")}
    return {
        **payload,
        "laplace": {
            "study": str(LAPLACE_STUDY.relative_to(ROOT)),
            "results": {"bert (the exported folder)": mine["bert"], "laplace (the exported folder)": mine["laplace"]},
            "fit_seconds": round(study.steps["fit laplace"].seconds, 1) if "fit laplace" in study.steps else None,
            "predict_seconds_all_conditions": predict_s,
            "predict_cost_vs_bert": round(predict_s["laplace"] / predict_s["bert"], 3) if predict_s["bert"] else None,
            "bert_rows_max_abs_difference_vs_full_study": max(gaps) if gaps else None,
            "machine": f"{os.uname().machine}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
                       "at the end",
            "note": "the same conditions and test queries as the study above; predict seconds in one run, both "
                    "rankers, on a shared machine (a ratio, not a timing)",
        },
    }


def laplace_posterior(laplace_out: Path) -> dict[str, Any]:
    """The fitted Laplace posterior's prior precision and logit spread on the 600 in-domain test queries.

    How far the probit moves a probability toward 1/2 is set by the logit's
    posterior standard deviation against its mean: ``factor`` is
    ``1 / sqrt(1 + pi v / 8)``, the scale the probit applies to the logit.
    """
    from uncertank_laplace import LaplaceRanker

    import uncertank.datasets as ud
    from uncertank.nn import load_ranker

    folders = sorted(f for f in (laplace_out / "models").glob("laplace-*") if not f.name.endswith(".tmp"))
    laplace = load_ranker(folders[-1], show_progress=False)
    assert isinstance(laplace, LaplaceRanker), type(laplace)
    test = ud.load("ubuntu-sample", split="test", negatives="bm25", n_candidates=10, seed=0)
    idx = np.sort(np.random.default_rng(2).choice(test.n_queries, size=600, replace=False))
    mean, var = (np.asarray(x, dtype=np.float64) for x in laplace.latent_mean_variance(test.subset(idx)))
    sd = np.sqrt(var)
    factor = 1.0 / np.sqrt(1.0 + np.pi * var / 8.0)
    return {"prior_precision": float(laplace.posterior_.prior_precision), "in_domain_pairs": int(mean.size),
            "median_abs_logit": float(np.median(np.abs(mean))), "median_logit_sd": float(np.median(sd)),
            "max_logit_sd": float(sd.max()), "min_probit_factor": float(factor.min()),
            "median_probit_factor": float(np.median(factor))}


def render_laplace(payload: dict[str, Any]) -> str:
    """The docs table of the Laplace study: its bert and laplace rows, as :func:`render`'s cells."""
    return render({"conditions": payload["conditions"], "results": payload["laplace"]["results"]})


def render(payload: dict[str, Any]) -> str:
    """The docs table: R_10@1, MAP, ECE, ECE balanced per ranker and condition."""
    conds = payload["conditions"]
    lines = ["| ranker | " + " | ".join(conds) + " |", "|---|" + "---:|" * len(conds)]

    def fmt(v: float | None) -> str:
        return "–" if v is None else f"{v:.3f}"

    for label, by_cond in payload["results"].items():
        cells = []
        for c in conds:
            m = by_cond.get(c)
            cells.append("–" if m is None else " / ".join(fmt(m[k]) for k in ("R@1", "MAP", "ECE", "ECE balanced")))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_balanced(payload: dict[str, Any]) -> str:
    """The docs table of balanced ECE as the mean over 100 balanced subsamples, per ranker and condition."""
    conds = payload["conditions"]
    lines = ["| ranker | " + " | ".join(conds) + " |", "|---|" + "---:|" * len(conds)]
    for label, by_cond in payload["results"].items():
        cells = []
        for c in conds:
            v = (by_cond.get(c) or {}).get("ECE balanced (mean of 100)")
            cells.append("–" if v is None else f"{v:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=SOURCE,
                    help="the real run's fine-tuned bert, a checkpoint folder (docs/studies/real_run.toml)")
    ap.add_argument("--exported", type=Path, default=EXPORTED,
                    help="where the Hugging Face folder goes (its export check beside it, as <folder>.json)")
    ap.add_argument("--real-run", type=Path, default=REAL_RUN,
                    help="the real run's study summary, for the training times (docs/scripts/full_study_summary.py)")
    ap.add_argument("--study-out", type=Path, default=ROOT / ".cache" / "own_model_study")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "own_model_real_run.json")
    ap.add_argument("--render", action="store_true", help="print the docs table from --out and stop")
    ap.add_argument("--stage", choices=["all", "summary", "laplace"], default="all",
                    help="summary: only read --study-out's results.json (no export, no study run); laplace: run "
                         "docs/studies/own_model_laplace.toml and add its rows to --out")
    ap.add_argument("--laplace-out", type=Path, default=ROOT / ".cache" / "own_model_laplace")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.render:
        payload = json.loads(args.out.read_text())
        print(render(payload), render_balanced(payload), sep="\n\n")
        if "laplace" in payload:
            print("", render_laplace(payload), sep="\n")
        return
    exported_file = args.exported.with_name(args.exported.name + ".json")
    if exported_file.exists():
        exported = json.loads(exported_file.read_text())
    else:
        exported = export(args.source, args.exported)
        _atomic_json(exported_file, exported)
    print(json.dumps(exported, indent=2), flush=True)
    if args.stage == "laplace":
        run_study(args.laplace_out, LAPLACE_STUDY)
        payload = add_laplace(json.loads(args.out.read_text()), args.laplace_out)
        payload["laplace"]["posterior"] = laplace_posterior(args.laplace_out)
        _atomic_json(args.out, payload)
        print(json.dumps(payload["laplace"], indent=2), render_laplace(payload), sep="\n\n")
        return
    if args.stage == "all":
        run_study(args.study_out)
    payload = summarise(args.study_out, exported, args.real_run)
    _atomic_json(args.out, payload)
    print(render(payload), render_balanced(payload), sep="\n\n")


if __name__ == "__main__":
    main()
