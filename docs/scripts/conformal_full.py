"""Conformal guarantees on the full study's data: the record and the table of docs/conformal.md.

Reproduces "On the full study's data" in docs/conformal.md: three studies
on the same data, conditions, seed and reference (``bert``): the rankers
that start from the real run's ``bert`` without training, the GP rankers
trained from it, and the deep ensemble trained beside it::

    uncertank run docs/studies/conformal_full.toml --out .cache/conformal_full        # each resumes
    uncertank run docs/studies/conformal_full_gp.toml --out .cache/conformal_full_gp
    uncertank run docs/studies/conformal_full_ensemble.toml --out .cache/conformal_full_ensemble
    python docs/scripts/conformal_full.py         # the record from the three folders, then the table
    python docs/scripts/conformal_full.py --render  # the table, from the record

The record (--out, docs/results/conformal_full.json) copies from each
study's ``results.json`` the numbers the docs quote: per ranker and
condition the conformal stage's outcome (``evaluations[i].conformal``,
docs/results-schema.md, "Thresholds with a guarantee": the threshold,
coverage and its Clopper-Pearson interval, mean set size, abstention's
answer and error rates, the paired t-test of set sizes against the
reference, the exchangeability check, the weighted sets under shift and the
coverage curve), the ranking metrics for context, and per study the seconds
of each step and the span of its log. The studies must agree on the data,
the settings and every ranker they share (the reference): a ranker in two
studies must have the same numbers in both, or no record is written.
Nothing is computed here that the studies did not compute.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The studies by their output folder's name.
STUDIES = {"conformal_full": "docs/studies/conformal_full.toml",
           "conformal_full_gp": "docs/studies/conformal_full_gp.toml",
           "conformal_full_ensemble": "docs/studies/conformal_full_ensemble.toml"}
RECORD = ROOT / "docs" / "results" / "conformal_full.json"

#: The fields of a ``ConformalOutcome`` the record keeps.
FIELDS = (
    "score", "alpha", "delta", "n_calibration", "n_test", "threshold", "feasible",
    "coverage", "coverage_lower", "coverage_upper", "mean_size",
    "abstain_threshold", "answer_rate", "error_rate",
    "exchangeable", "exchangeability_statistic", "exchangeability_p",
    "weighted_coverage", "weighted_coverage_lower", "weighted_coverage_upper", "weighted_mean_size",
    "effective_size", "curve_alpha", "curve_coverage", "curve_size",
    "reference", "reference_mean_size", "size_p_value",
)


def _log_span(log: Path) -> dict[str, Any] | None:
    """The seconds from the first to the last line of a study's ``run.log``, and how many runs it holds."""
    if not log.exists():
        return None
    stamps, runs = [], 0
    for line in log.read_text().splitlines():
        try:
            stamps.append(datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f"))
        except ValueError:
            continue
        runs += "[study] study " in line
    if not stamps:
        return None
    return {"seconds": round((stamps[-1] - stamps[0]).total_seconds(), 1), "runs": runs}


def _summarise_one(study_out: Path) -> dict[str, Any]:
    """The record of the study in ``study_out`` (its ``results.json`` and ``run.log``).

    Raises
    ------
    SystemExit
        When ``results.json`` is missing or a ranker has no conformal outcome (the stage did not run).
    """
    from uncertank.experiment.result import StudyResult

    path = study_out / "results.json"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `{_command(study_out)}` first")
    result = StudyResult.from_json(path.read_bytes(), source=str(path))
    conds, rankers = result.conditions, result.rankers
    outcomes: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for e in result.evaluations:
        if e.conformal is None:
            raise SystemExit(f"{path}: {e.ranker} / {e.condition} has no conformal outcome: the study must run "
                             "with [conformal] enabled")
        outcomes.setdefault(e.ranker, {})[e.condition] = {f: getattr(e.conformal, f) for f in FIELDS}
        metrics.setdefault(e.ranker, {})[e.condition] = {k: e.metrics.get(k) for k in sorted(e.metrics)}
    first = result.evaluations[0].conformal
    assert first is not None
    steps = {name: round(s.seconds, 1) for name, s in sorted(result.steps.items())}
    config = result.config
    return {
        "command": _command(study_out),
        "study": STUDIES.get(study_out.name),
        "data": {key: config.get(key) for key in _DATA},
        "conditions": conds,
        "rankers": rankers,
        "reference": result.config.get("reference"),
        "alpha": first.alpha,
        "delta": first.delta,
        "n_calibration": first.n_calibration,
        "significance_level": result.significance.alpha if result.significance is not None else 0.05,
        "conformal": outcomes,
        "metrics": metrics,
        "step_seconds": steps,
        "step_seconds_total": round(sum(s.seconds for s in result.steps.values()), 1),
        "run_log": _log_span(study_out / "run.log"),
        "environment": {k: result.environment.get(k) for k in sorted(result.environment)},
    }


def _command(study_out: Path) -> str:
    study = STUDIES.get(study_out.name)
    if study is None:
        return f"uncertank run STUDY.toml --out {study_out}"
    return f"uncertank run {study} --out .cache/{study_out.name}"


#: The study file's keys that say what data it measures on (the conditions' datasets and negatives included).
_DATA = ("train_dataset", "train_negatives", "n_candidates", "max_train_queries", "max_valid_queries",
         "max_test_queries", "seed", "conditions")
#: What the studies must share, and what each keeps for itself.
_SHARED = ("data", "conditions", "reference", "alpha", "delta", "n_calibration", "significance_level")
_OWN = ("command", "study", "rankers", "step_seconds", "step_seconds_total", "run_log", "environment")


def _same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-12 (the same computation read back from two JSON files)."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-12 or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def summarise(*study_outs: Path) -> dict[str, Any]:
    """The record of the studies in ``study_outs``, merged: their rankers in order, one entry a ranker.

    Raises
    ------
    SystemExit
        When a study's ``results.json`` is missing or lacks the conformal
        stage, when the studies differ in data or settings, or when a ranker
        they share has different numbers in two of them.
    """
    if not study_outs:
        raise SystemExit("give at least one study folder")
    parts = [_summarise_one(Path(p)) for p in study_outs]
    first = parts[0]
    record: dict[str, Any] = {k: first[k] for k in _SHARED}
    record.update(rankers=[], conformal={}, metrics={}, studies=[])
    for part, where in zip(parts, study_outs, strict=True):
        for key in _SHARED:
            if not _same(part[key], first[key]):
                raise SystemExit(f"{where}: its {key} is {part[key]!r}, {study_outs[0]}'s {first[key]!r}: "
                                 "the studies must share the data and the settings")
        for ranker in part["rankers"]:
            if ranker in record["conformal"]:
                for what in ("conformal", "metrics"):
                    if not _same(part[what][ranker], record[what][ranker]):
                        raise SystemExit(f"{where}: {ranker}'s {what} differ from those of an earlier study; a "
                                         "ranker the studies share must give the same numbers in each")
                continue
            record["rankers"].append(ranker)
            record["conformal"][ranker] = part["conformal"][ranker]
            record["metrics"][ranker] = part["metrics"][ranker]
        record["studies"].append({k: part[k] for k in _OWN})
    return record


def _num(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _p(p: float | None) -> str:
    from uncertank.formatting import format_pvalue

    return format_pvalue(p)


def render(record: dict[str, Any]) -> str:
    """The docs table: per condition and ranker, the sets, abstention, the exchangeability check and weighting."""
    ref = record["reference"]
    sig = record["significance_level"]
    lines = [
        f"| condition | ranker | threshold | coverage [95% CI] | mean size (`{ref}`'s, p) | answer rate "
        "| error rate | exchangeable (p) | weighted coverage [95% CI] | weighted size |",
        "|---|---|---:|---|---|---:|---:|---|---|---:|",
    ]
    for cond in record["conditions"]:
        for ranker in record["rankers"]:
            c = record["conformal"][ranker][cond]
            size = _num(c["mean_size"], 2)
            if c["reference_mean_size"] is not None:
                mark = " †" if c["size_p_value"] is not None and c["size_p_value"] < sig else ""
                size += f" ({_num(c['reference_mean_size'], 2)}, p {_p(c['size_p_value'])}){mark}"
            weighted = "–" if c["weighted_coverage"] is None else (
                f"{_num(c['weighted_coverage'])} [{_num(c['weighted_coverage_lower'])}, "
                f"{_num(c['weighted_coverage_upper'])}]")
            lines.append(
                f"| {cond} | `{ranker}` | {'all' if c['threshold'] is None else _num(c['threshold'])} "
                f"| {_num(c['coverage'])} [{_num(c['coverage_lower'])}, {_num(c['coverage_upper'])}] "
                f"| {size} | {_num(c['answer_rate'])} | {_num(c['error_rate'])} "
                f"| {'yes' if c['exchangeable'] else 'no'} (p {_p(c['exchangeability_p'])}) "
                f"| {weighted} | {_num(c['weighted_mean_size'], 2)} |")
    return "\n".join(lines)


def _atomic_json(path: Path, payload: dict[str, Any]) -> None:
    from uncertank.files import atomic_write_text

    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Write the record from a study's folder (or, with --render, print the table from the record)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study_out", type=Path, nargs="*",
                    default=[ROOT / ".cache" / name for name in STUDIES],
                    help="the studies' output folders (results.json, run.log), the first the reference's")
    ap.add_argument("--out", type=Path, default=RECORD, help="the record (JSON)")
    ap.add_argument("--render", action="store_true", help="print the docs table from --out and stop")
    args = ap.parse_args(argv)
    if not args.render:
        _atomic_json(args.out, summarise(*args.study_out))
        print(f"wrote {args.out}", file=sys.stderr)
    print(render(json.loads(args.out.read_text())))


if __name__ == "__main__":
    main()
