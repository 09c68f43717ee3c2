"""Summarise the post-hoc study on the real run's frozen encoder: PG-DRR's settings and the training ratio.

The studies (run first; each resumes), the real run's bert (.cache/real_run/bert)
and its Hugging Face export (.cache/real_run/bert_hf) before them::

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study
    python docs/scripts/own_model_real_run.py
    uncertank run docs/studies/posthoc_ablation.toml --out .cache/posthoc_ablation
    uncertank run docs/studies/posthoc_pgdrr_bank.toml --out .cache/posthoc_pgdrr_bank
    uncertank run docs/studies/posthoc_pgdrr_more.toml --out .cache/posthoc_pgdrr_more
    uncertank run docs/studies/lists_bert.toml --out .cache/lists_bert
    uncertank run docs/studies/real_run_ensemble.toml --out .cache/real_run_ensemble
    uncertank run docs/studies/lists_intercept.toml --out .cache/lists_intercept
    uncertank run docs/studies/lists_full.toml --out .cache/lists_full
    python docs/scripts/posthoc_ablation.py .cache/posthoc_ablation --bank .cache/posthoc_pgdrr_bank \
        --more .cache/posthoc_pgdrr_more --end-to-end .cache/lists_bert --ensemble .cache/real_run_ensemble \
        --intercept .cache/lists_intercept --lists-full .cache/lists_full
    python docs/scripts/posthoc_ablation.py --render      # the docs tables from the JSON

For every ranker of the study this writes to --out (JSON):

- validation (the study's 200 valid queries, in-domain) R_10@1, MAP, ECE
  over all pairs and balanced ECE (the mean of 100 balanced subsamples),
  computed here from the stored validation scores; the PG-DRR configuration
  is chosen on these numbers only: the lowest balanced ECE;
- the test numbers of every condition, as results.json has them, with the
  risk-aware reranking outcome (validation b, the oracle b and RA-BERT's
  mix of bert's means with the head's variances, each with its paired test);
- per condition, the difference to ``bert`` (the folder as it is) of ECE
  over all pairs and of balanced ECE, with a 95% paired query-bootstrap
  interval (:func:`uncertank.stats.query_bootstrap_interval`, 1,000
  replicates; the balanced ECE of a replicate is one balanced subsample
  seeded by the replicate, so the interval includes the subsampling);
- the seconds each head took to fit (the memory bank's cost included).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "posthoc_ablation.toml"
BANK_STUDY = ROOT / "docs" / "studies" / "posthoc_pgdrr_bank.toml"
MORE_STUDY = ROOT / "docs" / "studies" / "posthoc_pgdrr_more.toml"
END_TO_END_STUDY = ROOT / "docs" / "studies" / "lists_bert.toml"
ENSEMBLE_STUDY = ROOT / "docs" / "studies" / "real_run_ensemble.toml"
INTERCEPT_STUDY = ROOT / "docs" / "studies" / "lists_intercept.toml"
LISTS_FULL_STUDY = ROOT / "docs" / "studies" / "lists_full.toml"
FULL_STUDY = ROOT / "docs" / "results" / "full_study.json"
FULL_DIAGNOSTICS = ROOT / "docs" / "results" / "full_study_diagnostics.json"
OUT = ROOT / "docs" / "results" / "pgdrr_ablation.json"
LABELS = ("R@1", "MAP", "ECE", "ECE balanced (mean of 100)")
N_RESAMPLES = 1000


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    from uncertank.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def _scores(folder: Path, label: str, split: str) -> np.ndarray:
    """The stored mean scores of ``label`` on ``split`` (one file per ranker and split)."""
    from uncertank.experiment.stages import file_stem  # how the runner names its files

    found = sorted((folder / "predictions").glob(f"{file_stem(label)}-{file_stem(split)}-*.npz"))
    if len(found) != 1:
        raise FileNotFoundError(f"expected one prediction file of {label!r} on {split!r} in {folder}; got {found}")
    with np.load(found[0]) as z:
        return np.asarray(z["mean"], dtype=np.float64)


def _metrics(scores: np.ndarray, qs: Any) -> dict[str, float]:
    from uncertank import RankedLists
    from uncertank.metrics import expected_calibration_error, mean_average_precision, recall_at_k

    rl = RankedLists.from_flat(scores, qs.labels, qs.offsets)
    return {
        "R@1": float(recall_at_k(rl, k=1)),
        "MAP": float(mean_average_precision(rl)),
        "ECE": float(expected_calibration_error(scores, qs.labels, n_bins=10)),
        "ECE balanced (mean of 100)": float(
            expected_calibration_error(scores, qs.labels, n_bins=10, balanced=True, seed=0, n_subsamples=100)
        ),
    }


def _intervals(scores: np.ndarray, ref: np.ndarray, qs: Any) -> dict[str, list[float]]:
    """95% paired query-bootstrap intervals of (ranker - bert) for both ECEs."""
    from uncertank.metrics import expected_calibration_error
    from uncertank.stats import query_bootstrap_interval

    labels = np.asarray(qs.labels)

    def diff(balanced: bool) -> Any:
        def stat(pos: np.ndarray, b: int) -> float:
            y = labels[pos]
            kw: dict[str, Any] = {"n_bins": 10, "balanced": balanced, "seed": b}
            return float(expected_calibration_error(scores[pos], y, **kw)
                         - expected_calibration_error(ref[pos], y, **kw))
        return stat

    return {
        "ECE": list(query_bootstrap_interval(qs.offsets, diff(False), n_resamples=N_RESAMPLES, seed=0)),
        "ECE balanced": list(query_bootstrap_interval(qs.offsets, diff(True), n_resamples=N_RESAMPLES, seed=0)),
    }


LISTS_REFERENCE = "bert head lists"


def _learned_length_scale(folder: Path, label: str, key: str) -> float:
    """The kernel's length scale of the fitted model the study saved for ``label``."""
    from uncertank_pgdrr import PGDRRRanker

    from uncertank.experiment.stages import file_stem
    from uncertank.nn import load_ranker

    ranker = load_ranker(folder / "models" / f"{file_stem(label)}-{key}")
    assert isinstance(ranker, PGDRRRanker), type(ranker)
    return float(ranker.kernel_length_scale)


def _study_rows(folder: Path, study: Path, skip: set[str], lists_folder: Path,
                lists_reference: str = LISTS_REFERENCE) -> tuple[Any, dict[str, Any]]:
    """The rows of the study's rankers (all but ``skip``), with their intervals against its reference.

    A head trained on lists is also compared with the plain head trained on
    lists (``lists_reference``, in ``lists_folder``): the papers' own setting.
    A learned length scale is read from the fitted model.
    """
    from uncertank.experiment import load_config
    from uncertank.experiment.config import DataSettings
    from uncertank.experiment.result import StudyResult
    from uncertank.experiment.runner import load_data

    config = load_config(study)
    result = StudyResult.from_dict(json.loads((folder / "results.json").read_text()))
    data = load_data(config.section(DataSettings))
    ref = config.reference or config.rankers[0].key  # the study's own rule when none is named
    rows: dict[str, Any] = {}
    for rc in config.rankers:
        label = rc.key
        if label in skip:
            continue
        row: dict[str, Any] = {"ranker": rc.name, "params": dict(rc.params), "study": str(study.relative_to(ROOT)),
                               "valid": _metrics(_scores(folder, label, "valid"), data.valid), "test": {}}
        step = result.steps.get(f"fit {label}")
        row["fit_seconds"] = None if step is None or step.resumed else round(step.seconds, 1)
        for cond, qs in data.tests.items():
            ev = next(e for e in result.evaluations if e.ranker == label and e.condition == cond)
            entry: dict[str, Any] = {k: float(ev.metrics[k]) for k in LABELS}
            if label != ref:
                entry["minus_bert_95"] = _intervals(_scores(folder, label, cond), _scores(folder, ref, cond), qs)
            if rc.params.get("train_ratio") == 9 and label != lists_reference:
                entry["minus_bert_head_lists_95"] = _intervals(
                    _scores(folder, label, cond), _scores(lists_folder, lists_reference, cond), qs)
            if ev.risk is not None:
                r = ev.risk
                entry["risk"] = {"b": r.b, "R@1_mean": r.r1_mean, "R@1_risk_aware": r.r1_risk_aware,
                                 "p_value": r.p_value, "oracle_b": r.oracle_b, "R@1_oracle": r.r1_oracle,
                                 "p_value_oracle": r.p_value_oracle, "mixed_b": r.mixed_b,
                                 "R@1_mixed": r.r1_mixed, "R@1_mixed_mean": r.r1_mixed_mean,
                                 "p_value_mixed": r.p_value_mixed}
            row["test"][cond] = entry
        if rc.params.get("length_scale") == "learned" and step is not None:
            row["length_scale_learned"] = _learned_length_scale(folder, label, step.key)
        rows[label] = row
        print(f"{label}: valid {row['valid']}", flush=True)
    return data, rows


def _full_study_pairs(conditions: list[str]) -> dict[str, Any]:
    """The full study's GP rankers trained end to end on balanced pairs (the same data, queries and seeds).

    R_10@1 and ECE over all pairs from docs/results/full_study.json; balanced
    ECE (mean of 100) and its interval against ``bert`` from
    docs/results/full_study_diagnostics.json (no scores of these models are
    checked in, so ECE over all pairs has no interval here).
    """
    results = json.loads(FULL_STUDY.read_text())["results"]
    balanced = json.loads(FULL_DIAGNOSTICS.read_text())["balanced_ece"]
    rows: dict[str, Any] = {}
    for name in ("sngp", "gpf_bert", "pgdrr"):
        test: dict[str, Any] = {}
        for cond in conditions:
            r, b = results[cond][name], balanced[cond][name]
            test[cond] = {"R@1": r["R@1"], "MAP": r["MAP"], "ECE": r["ECE"], "ECE balanced (mean of 100)": b["mean"],
                          "minus_bert_95": {"ECE balanced": b["change_ci95"]}}
        rows[f"{name} pairs"] = {"ranker": name, "source": f"{FULL_STUDY.relative_to(ROOT)}, "
                                 f"{FULL_DIAGNOSTICS.relative_to(ROOT)}", "test": test}
    return rows


def summarise(folder: Path, study: Path = STUDY, bank: Path | None = None, end_to_end: Path | None = None,
              more: Path | None = None, ensemble: Path | None = None, intercept: Path | None = None,
              lists_full: Path | None = None) -> dict[str, Any]:
    """Validation and test numbers of every ranker, the intervals against bert, and the choice.

    ``bank`` and ``more``: the output folders of docs/studies/posthoc_pgdrr_bank.toml
    and posthoc_pgdrr_more.toml, whose PG-DRR rows join the others (their
    ``bert`` is the same folder on the same queries, so it is not repeated).
    ``end_to_end``: docs/studies/lists_bert.toml's (models fine-tuned end to
    end on pairs or lists, 600 test queries), beside the full study's GP
    rankers trained on pairs. ``ensemble``: docs/studies/real_run_ensemble.toml's.
    ``intercept`` and ``lists_full``: docs/studies/lists_intercept.toml's and
    lists_full.toml's, whose rows join the end-to-end ones (their ``bert`` and
    ``bert lists`` are the same checkpoints on the same queries, so they are
    not repeated).
    """
    if end_to_end is None and (intercept is not None or lists_full is not None):
        raise ValueError("intercept and lists_full join the end-to-end rows: give end_to_end too; got "
                         f"end_to_end=None, intercept={intercept}, lists_full={lists_full}")
    data, rows = _study_rows(folder, study, set(), folder)
    runs = [f"uncertank run {study.relative_to(ROOT)} --out {folder.name}"]
    flags = ""
    for extra_folder, extra_study, flag in ((bank, BANK_STUDY, "--bank"), (more, MORE_STUDY, "--more")):
        if extra_folder is not None:
            rows.update(_study_rows(extra_folder, extra_study, {"bert"}, folder)[1])
            runs.append(f"uncertank run {extra_study.relative_to(ROOT)} --out {extra_folder.name}")
            flags += f" {flag} {extra_folder.name}"
    pgdrr = [k for k in rows if rows[k]["ranker"] == "pgdrr"]
    chosen = min(pgdrr, key=lambda k: rows[k]["valid"]["ECE balanced (mean of 100)"])
    extra: dict[str, Any] = {}
    if end_to_end is not None:  # fine-tuned end to end on pairs or on lists (600 test queries)
        e2e_data, e2e_rows = _study_rows(end_to_end, END_TO_END_STUDY, set(), end_to_end, "bert lists")
        extra["end_to_end"] = {"study": str(END_TO_END_STUDY.relative_to(ROOT)), "rankers": e2e_rows,
                               "pairs": _full_study_pairs(list(e2e_data.tests)),
                               "test_queries": {c: q.n_queries for c, q in e2e_data.tests.items()}}
        runs.append(f"uncertank run {END_TO_END_STUDY.relative_to(ROOT)} --out {end_to_end.name}")
        flags += f" --end-to-end {end_to_end.name}"
        for extra_folder, extra_study, flag in ((intercept, INTERCEPT_STUDY, "--intercept"),
                                                (lists_full, LISTS_FULL_STUDY, "--lists-full")):
            if extra_folder is not None:
                e2e_rows.update(_study_rows(extra_folder, extra_study, {"bert", "bert lists"}, extra_folder,
                                            "bert lists")[1])
                runs.append(f"uncertank run {extra_study.relative_to(ROOT)} --out {extra_folder.name}")
                flags += f" {flag} {extra_folder.name}"
    if ensemble is not None:  # the real run's ensemble of five, and RA-BERT (600 test queries)
        ens_data, ens_rows = _study_rows(ensemble, ENSEMBLE_STUDY, set(), ensemble)
        extra["ensemble"] = {"study": str(ENSEMBLE_STUDY.relative_to(ROOT)), "rankers": ens_rows,
                             "test_queries": {c: q.n_queries for c, q in ens_data.tests.items()}}
        runs.append(f"uncertank run {ENSEMBLE_STUDY.relative_to(ROOT)} --out {ensemble.name}")
        flags += f" --ensemble {ensemble.name}"
    return {**extra,
        "command": "; ".join([*runs, f"python docs/scripts/posthoc_ablation.py {folder.name}{flags}"]),
        "sizes": {"train_queries": data.train.n_queries, "valid_queries": data.valid.n_queries,
                  "test_queries": {c: q.n_queries for c, q in data.tests.items()}},
        "conditions": list(data.tests),
        "reference": "bert",
        "rankers": rows,
        "pgdrr_chosen_on_validation": chosen,
        "selection": "the PG-DRR configuration with the lowest validation balanced ECE (mean of 100)",
        "intervals": f"95% paired query bootstrap of (ranker - bert), {N_RESAMPLES} replicates; balanced ECE "
                     "from one balanced subsample per replicate",
        "machine": f"{os.uname().machine}, {os.cpu_count()} cores",
    }


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


RATIO_PAIRS = (("bert head pairs", "bert head lists"), ("sngp pairs", "sngp lists"),
               ("gpf_bert pairs", "gpf_bert lists"), ("pgdrr default", "pgdrr lists", "pgdrr lists, bank as trained"))


def _with_interval(t: dict[str, Any], key: str, interval: str) -> str:
    cell = _fmt(t[key])
    if "minus_bert_95" in t:
        lo, hi = t["minus_bert_95"][interval]
        cell += f" [{lo:+.3f}, {hi:+.3f}]"
    return cell


def _risk_table(conds: list[str], rows: dict[str, Any], labels: tuple[str, ...]) -> str:
    """Risk-aware R_10@1: the validation b, the oracle b, and RA-BERT (bert's means, the ranker's variances).

    Each cell is ``b: R_10@1`` (with the p-value against ranking by the mean); with one label the head
    column is left out (every row would repeat it).
    """

    def p(v: float | None) -> str:
        return "" if v is None else f" (p {v:.2g})"

    head = len(labels) > 1
    lines = ["| condition | " + ("head | " if head else "") + "R_10@1 by the mean | b (validation): R_10@1 | "
             "oracle b: R_10@1 | RA-BERT b: bert's R_10@1 → RA-BERT |",
             "|---|" + ("---|" if head else "") + "---:|" * 4]
    for c in conds:
        for label in labels:
            r = rows.get(label, {}).get("test", {}).get(c, {}).get("risk")
            if r is None:
                continue
            mixed = "–" if r["mixed_b"] is None else (
                f"{r['mixed_b']:g}: {_fmt(r['R@1_mixed_mean'])} → {_fmt(r['R@1_mixed'])}{p(r['p_value_mixed'])}")
            lines.append(f"| {c} | " + (f"{label} | " if head else "") + f"{_fmt(r['R@1_mean'])} | "
                         f"{r['b']:g}: {_fmt(r['R@1_risk_aware'])}{p(r['p_value'])} | "
                         f"{r['oracle_b']:g}: {_fmt(r['R@1_oracle'])}{p(r['p_value_oracle'])} | {mixed} |")
    return "\n".join(lines)


def _lists_ece_lines(head: str, conds: list[str], rows: dict[str, Any], reference: str) -> list[str]:
    """Table lines: ECE over all pairs of ``reference`` and of every row compared with it (trained on lists)."""
    lines = [f"| {head} | " + " | ".join(conds) + " |", "|---|" + "---|" * len(conds)]
    for label, row in rows.items():
        if label == reference or "minus_bert_head_lists_95" in row["test"][conds[0]]:
            cells = []
            for c in conds:
                t = row["test"][c]
                cell = _fmt(t["ECE"])
                if "minus_bert_head_lists_95" in t:
                    lo, hi = t["minus_bert_head_lists_95"]["ECE"]
                    cell += f" [{lo:+.3f}, {hi:+.3f}]"
                cells.append(cell)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def tables(
payload: dict[str, Any]) -> dict[str, str]:
    """The docs tables: PG-DRR's ablation (validation, test), lists against pairs, and the risk bounds."""
    conds, rows = payload["conditions"], payload["rankers"]
    pgdrr = ["bert", *(k for k, r in rows.items() if r["ranker"] == "pgdrr")]
    out: dict[str, str] = {}
    lines = ["| configuration | valid R_10@1 | valid MAP | valid ECE | valid balanced ECE | fit (s) |",
             "|---|---:|---:|---:|---:|---:|"]
    for label in pgdrr:
        v, mark = rows[label]["valid"], " (chosen)" if label == payload["pgdrr_chosen_on_validation"] else ""
        if "length_scale_learned" in rows[label]:
            mark = f" (learned: {rows[label]['length_scale_learned']:.2f})" + mark
        fit = None if label == "bert" else rows[label]["fit_seconds"]  # the folder as it is: not trained
        lines.append(f"| {label}{mark} | {_fmt(v['R@1'])} | {_fmt(v['MAP'])} | {_fmt(v['ECE'])} | "
                     f"{_fmt(v['ECE balanced (mean of 100)'])} | {_fmt(fit, 0)} |")
    out["pgdrr valid"] = "\n".join(lines)
    lines = ["| configuration | " + " | ".join(conds) + " |", "|---|" + "---|" * len(conds)]
    for label in pgdrr:
        cells = [f"{_fmt(t['R@1'])} / {_fmt(t['ECE'])} / "
                 + _with_interval(t, "ECE balanced (mean of 100)", "ECE balanced")
                 for t in (rows[label]["test"][c] for c in conds)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    out["pgdrr test"] = "\n".join(lines)
    for key, interval, name in (("ECE", "ECE", "ratio ECE"),
                                ("ECE balanced (mean of 100)", "ECE balanced", "ratio balanced ECE")):
        lines = ["| head | " + " | ".join(conds) + " |", "|---|" + "---|" * len(conds)]
        order = ["bert", *(k for pair in RATIO_PAIRS for k in pair if k in rows)]
        for label in order:
            cells = [_with_interval(rows[label]["test"][c], key, interval) for c in conds]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        out[name] = "\n".join(lines)
    out["lists ECE"] = "\n".join(_lists_ece_lines("head (lists of ten)", conds, rows, LISTS_REFERENCE))
    if "end_to_end" in payload:
        e2e, pairs = payload["end_to_end"]["rankers"], payload["end_to_end"].get("pairs", {})
        lines = ["| fine-tuned end to end | " + " | ".join(conds) + " |", "|---|" + "---|" * len(conds)]
        order = ["bert", "bert lists", "bert lists, all queries"] + [
            k for name in ("sngp", "gpf_bert", "pgdrr")
            for k in (f"{name} pairs", f"{name} lists", f"{name} lists, intercept",
                      f"{name} lists, GP layer at 3e-3", f"{name} lists, focal loss, GP layer at 3e-3",
                      *(["pgdrr lists, bank at 1:9"] if name == "pgdrr" else []))
        ]
        for label in (k for k in order if k in e2e or k in pairs):
            row = e2e.get(label) or pairs[label]
            cells = []
            for c in conds:
                t = row["test"][c]
                ece = _fmt(t["ECE"])
                if "ECE" in t.get("minus_bert_95", {}):
                    ece = _with_interval(t, "ECE", "ECE")
                cells.append(f"{_fmt(t['R@1'])} / {ece} / "
                             + _with_interval(t, "ECE balanced (mean of 100)", "ECE balanced"))
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        out["end to end"] = "\n".join(lines)
        lines = _lists_ece_lines("fine-tuned on lists of ten", conds, e2e, "bert lists")
        if len(lines) > 3:  # the GP rankers trained on lists are in
            out["end to end lists ECE"] = "\n".join(lines)
    out["risk"] = _risk_table(conds, rows, ("sngp pairs", "gpf_bert pairs", "pgdrr default"))
    if "ensemble" in payload:
        out["ensemble risk"] = _risk_table(conds, payload["ensemble"]["rankers"], ("ensemble",))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, nargs="?", help="the study's output folder")
    ap.add_argument("--study", type=Path, default=STUDY)
    ap.add_argument("--bank", type=Path, help="the output folder of docs/studies/posthoc_pgdrr_bank.toml")
    ap.add_argument("--more", type=Path, help="the output folder of docs/studies/posthoc_pgdrr_more.toml")
    ap.add_argument("--end-to-end", type=Path, help="the output folder of docs/studies/lists_bert.toml")
    ap.add_argument("--ensemble", type=Path, help="the output folder of docs/studies/real_run_ensemble.toml")
    ap.add_argument("--intercept", type=Path, help="the output folder of docs/studies/lists_intercept.toml")
    ap.add_argument("--lists-full", type=Path, help="the output folder of docs/studies/lists_full.toml")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--render", action="store_true", help="print the docs tables from --out and stop")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.render:
        for name, table in tables(json.loads(args.out.read_text())).items():
            print(f"<!-- {name} -->\n{table}\n")
        return
    if args.folder is None:
        ap.error("give the study's output folder (or --render)")
    payload = summarise(args.folder, args.study.resolve(), args.bank, args.end_to_end, args.more,
                        args.ensemble, args.intercept, args.lists_full)
    _atomic_json(args.out, payload)
    for name, table in tables(payload).items():
        print(f"<!-- {name} -->\n{table}\n")


if __name__ == "__main__":
    main()
