"""Check in the numbers of a finished full study (docs/study.md).

    uncertank run docs/studies/full.toml --out full-study
    python docs/scripts/full_study_summary.py full-study

reads ``full-study/results.json`` and writes ``docs/results/full_study.json``
(every aggregate the docs page quotes: no per-query arrays) and copies the
report's figures to ``docs/results/full_study/``. The comparisons with
``bert`` are the report's own (:func:`uncertank.experiment.analysis.compare_to_reference`:
a paired t-test over queries for the ranking metrics, Holm-corrected over
each table).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TABLE_METRICS = ("R@1", "MAP", "ECE", "ECE balanced", "Brier")


def summarise(result: Any) -> dict[str, Any]:
    """The aggregates of a :class:`~uncertank.experiment.result.StudyResult` quoted in docs/study.md."""
    from uncertank.experiment.analysis import compare_to_reference

    conds = list(result.conditions)
    # one family of tests per table, as in the report: in-domain alone, then the shifted conditions
    comps = {c.condition + "|" + c.ranker + "|" + c.metric: c
             for fam in ([conds[0]], conds[1:]) if fam
             for c in compare_to_reference(result, fam, TABLE_METRICS)}
    table: dict[str, dict[str, Any]] = {}
    for cond in conds:
        rows: dict[str, Any] = {}
        for ranker in result.rankers:
            ev = result.evaluation(ranker, cond)
            if ev is None:
                continue
            row: dict[str, Any] = {m: ev.metrics.get(m) for m in TABLE_METRICS if m in ev.metrics}
            if ev.mean_std is not None:
                row["mean_std"] = ev.mean_std
            if ev.selective is not None:
                row["AURC"] = ev.selective.aurc
            for m in TABLE_METRICS:
                c = comps.get(f"{cond}|{ranker}|{m}")
                if c is not None:
                    row[f"{m} change vs bert %"] = c.change
                    if c.p_adjusted is not None:
                        row[f"{m} p (Holm) vs bert"] = c.p_adjusted
            if ev.risk is not None:
                row["risk"] = {"b": ev.risk.b, "R@1 mean": ev.risk.r1_mean, "R@1 risk-aware": ev.risk.r1_risk_aware,
                               "p": ev.risk.p_value, "R@1 against b (test)": ev.risk.test_curve}
            if ev.nota is not None:
                row["nota"] = {"F1 means": ev.nota.f1_means, "F1 means sd": ev.nota.f1_means_sd,
                               "F1 means+var": ev.nota.f1_means_var, "F1 means+var sd": ev.nota.f1_means_var_sd,
                               "p": ev.nota.p_value}
            rows[ranker] = row
        table[cond] = rows
    bayes = {
        family: {"converged": b.converged, "n_systems": b.n_systems, "best_distinguishable": b.best_distinguishable,
                 "worst_distinguishable": b.worst_distinguishable, "diagnostics": b.diagnostics}
        for family, b in (result.bayes or {}).items()
    }
    computed = {name: round(s.seconds, 1) for name, s in result.steps.items()}
    return {
        "study": result.config.get("name") if isinstance(result.config, dict) else None,
        "sizes": result.sizes,
        "conditions": conds,
        "rankers": list(result.rankers),
        "results": table,
        "bayes": bayes,
        "step_seconds": computed,
        "total_seconds": round(sum(s.seconds for s in result.steps.values()), 1),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", type=Path, help="the folder `uncertank run` wrote")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "full_study.json")
    ap.add_argument("--figures", type=Path, default=ROOT / "docs" / "results" / "full_study")
    args = ap.parse_args(argv)
    src = args.study / "results.json"
    if not src.is_file():
        raise SystemExit(f"study must be a folder holding results.json; {src} does not exist")
    from uncertank._io import atomic_write_text
    from uncertank.experiment.result import StudyResult

    result = StudyResult.from_dict(json.loads(src.read_text()))
    payload = {"command": "uncertank run docs/studies/full.toml --out full-study", **summarise(result)}
    atomic_write_text(args.out, json.dumps(payload, indent=2, sort_keys=True, allow_nan=True) + "\n")
    args.figures.mkdir(parents=True, exist_ok=True)
    for png in sorted((args.study / "figures").glob("*.png")):
        shutil.copyfile(png, args.figures / png.name)
    print(f"wrote {args.out} and {len(list(args.figures.glob('*.png')))} figures to {args.figures}", file=sys.stderr)


if __name__ == "__main__":
    main()
