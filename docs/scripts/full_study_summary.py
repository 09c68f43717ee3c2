"""Check in the numbers of a finished full study (docs/study.md), or of the real run (docs/rankers.md).

    uncertank run docs/studies/full.toml --out full-study
    python docs/scripts/full_study_summary.py full-study

    uncertank run docs/studies/real_run.toml --out .cache/real_run/study
    python docs/scripts/full_study_summary.py .cache/real_run/study --out docs/results/real_run.json \\
        --figures docs/results/real_run --command "uncertank run docs/studies/real_run.toml --out .cache/real_run/study"

reads ``full-study/results.json`` and writes ``docs/results/full_study.json``
(every aggregate the docs page quotes: no per-query arrays) and copies the
report's figures to ``docs/results/full_study/``. The comparisons with
``bert`` are the report's own (:func:`uncertank.experiment.analysis.compare_to_reference`:
a paired t-test over queries for the ranking metrics, Holm-corrected over
each table). With models a study saved (``save_to``), their training
histories go to the file too (``training``).
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
    from uncertank.experiment.analysis import compare_to_reference, reference_ranker

    conds = list(result.conditions)
    ref = reference_ranker(result)
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
            row: dict[str, Any] = dict(ev.metrics)  # every metric the study computed
            if ev.mean_std is not None:
                row["mean_std"] = ev.mean_std
            if ev.recalibrated:
                row["ECE recalibrated"] = {name: m["ECE"] for name, m in ev.recalibrated.items() if "ECE" in m}
            if ev.selective is not None:
                row["AURC"] = ev.selective.aurc
            if ev.conformal is not None:
                row["conformal"] = {k: getattr(ev.conformal, k) for k in (
                    "alpha", "coverage", "coverage_lower", "coverage_upper", "mean_size", "weighted_coverage",
                    "weighted_mean_size", "exchangeable")}
            for m in TABLE_METRICS:
                c = comps.get(f"{cond}|{ranker}|{m}")
                if c is not None:
                    row[f"{m} change vs {ref} %"] = c.change
                    if c.p_adjusted is not None:
                        row[f"{m} p (Holm) vs {ref}"] = c.p_adjusted
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
        "reference": ref,
        "results": table,
        "bayes": bayes,
        "step_seconds": computed,
        "environment": result.environment,
        "total_seconds": round(sum(s.seconds for s in result.steps.values()), 1),
    }


def _num(v: Any, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _with_change(row: dict[str, Any], metric: str, ranker: str, reference: str = "bert") -> str:
    """``0.412 (-10.4%)*``: the value, its change against the reference, * when the Holm-corrected t-test says so."""
    if metric not in row:
        return "–"
    cell = _num(row[metric])
    change = row.get(f"{metric} change vs {reference} %")
    if ranker != reference and change is not None:
        cell += f" ({change:+.1f}%)"
    p = row.get(f"{metric} p (Holm) vs {reference}")
    if p is not None and p < 0.05:
        cell += "*"
    return cell


def _table(columns: list[str], rows: list[list[str]]) -> str:
    """Pre-formatted cells as a Markdown table, by the report's own writer."""
    from uncertank.experiment.report import markdown_table

    return markdown_table([dict(zip(columns, r, strict=True)) for r in rows]).rstrip("\n")


def tables(payload: dict[str, Any]) -> dict[str, str]:
    """The Markdown tables of docs/study.md, generated from the summary (the docs test regenerates them)."""
    res, conds, rankers = payload["results"], payload["conditions"], payload["rankers"]
    ref = payload.get("reference", "bert")
    ind = res[conds[0]]
    out = {}
    out["in-domain"] = _table(
        ["ranker", "R_10@1", "MAP", "ECE (all pairs)", "ECE (balanced)", "mean predictive std", "AURC"],
        [[f"`{r}`", _num(ind[r].get("R@1")), _num(ind[r].get("MAP")), _num(ind[r].get("ECE")),
          _num(ind[r].get("ECE balanced")), _num(ind[r].get("mean_std")), _num(ind[r].get("AURC"))]
         for r in rankers if r in ind])
    for metric, key in (("R@1", "R_10@1"), ("ECE", "ECE (all pairs)"), ("ECE balanced", "ECE (balanced)")):
        out[key] = _table(
            ["ranker", *conds],
            [[f"`{r}`", *(_with_change(res[c].get(r, {}), metric, r, ref) for c in conds)]
             for r in rankers if any(metric in res[c].get(r, {}) for c in conds)])
    out["recalibration"] = _table(
        ["ranker", *conds],
        [[f"`{r}`", *(f"{res[c][r]['ECE']:.3f} → {res[c][r]['ECE recalibrated']['platt']:.3f}"
                      if "platt" in res[c].get(r, {}).get("ECE recalibrated", {}) else "–" for c in conds)]
         for r in rankers if "ECE recalibrated" in ind.get(r, {})])
    conformal_rows = []
    for r in rankers:
        cells = []
        for c in conds:
            conf = res[c].get(r, {}).get("conformal")
            cells.append("–" if conf is None else f"{conf['mean_size']:.2f} ({conf['coverage']:.2f})")
        if any(cell != "–" for cell in cells):
            conformal_rows.append([f"`{r}`", *cells])
    if conformal_rows:
        alpha = next(res[c][r]["conformal"]["alpha"] for c in conds for r in rankers
                     if res[c].get(r, {}).get("conformal"))
        out["conformal"] = _table(["ranker", *(f"{c}: set size (coverage) at {1 - alpha:g}" for c in conds)],
                                  conformal_rows)
    risk_rows = []
    for c in conds:
        for r in rankers:
            risk = res[c].get(r, {}).get("risk")
            if risk is None:
                continue
            change = risk["R@1 risk-aware"] - risk["R@1 mean"]
            risk_rows.append([c, f"`{r}`", f"{risk['b']:g}", _num(risk["R@1 mean"]), _num(risk["R@1 risk-aware"]),
                              f"{change:+.3f}", "–" if risk["p"] is None else f"{risk['p']:.3g}"])
    out["risk"] = _table(["condition", "ranker", "b (validation)", "R_10@1 by the mean", "R_10@1 risk-aware",
                          "change", "p (paired t-test)"], risk_rows)
    nota_rows = []
    for r in rankers:
        nota = ind.get(r, {}).get("nota")
        if nota is None:
            continue
        with_var = "–" if nota["F1 means+var"] is None else \
            f"{nota['F1 means+var']:.3f} ± {nota['F1 means+var sd']:.3f}"
        nota_rows.append([f"`{r}`", f"{nota['F1 means']:.3f} ± {nota['F1 means sd']:.3f}", with_var,
                          "–" if nota["p"] is None else f"{nota['p']:.3g}"])
    out["nota"] = _table(["ranker", "F1, means", "F1, means + variances", "p (paired t-test)"], nota_rows)
    bayes_rows = []
    for family, b in payload["bayes"].items():
        d = b["diagnostics"]
        bayes_rows.append([family, "yes" if b["converged"] else "no", f"{d['max_rhat']:.3f}",
                           f"{d['min_ess_bulk']:,.0f}", str(d["n_divergences"]),
                           str(b["best_distinguishable"]), str(b["worst_distinguishable"])])
    out["bayes"] = _table(["family", "converged", "max R-hat", "min bulk ESS", "divergences",
                           "best distinguishable", "worst distinguishable"], bayes_rows)
    return out


def _oracle(curve: dict[str, float]) -> tuple[float, float]:
    """The grid's best ``b`` on the test condition (the smallest ``|b|`` on ties) and its R_10@1."""
    by_b = {float(b): v for b, v in curve.items()}
    best = max(by_b, key=lambda g: (by_b[g], -abs(g), -g))
    return best, by_b[best]


def smallest_p(gain_queries: int, n_queries: int) -> float | None:
    """The smallest p-value a two-sided paired t-test over queries could give a gain of ``gain_queries``.

    R_10@1 changes by whole queries; a net gain of ``k`` needs at least ``k``
    queries to change, and the test is most confident when exactly ``k``
    change, all for the better (differences: ``k`` ones, the rest zeros).
    Any other outcome with the same gain gives a larger p.
    """
    import numpy as np

    from uncertank.stats import paired_ttest

    if gain_queries <= 0:
        return None
    d = np.zeros(n_queries)
    d[:gain_queries] = 1.0
    return float(paired_ttest(d, np.zeros(n_queries)).pvalue)


def oracle_table(payload: dict[str, Any], diagnostics: dict[str, Any]) -> str:
    """The oracle bound of risk-aware reranking: the best ``b`` on each test condition, from the checked-in curves.

    Two grids: the study's (``payload``'s test curves) and the wide one of
    the diagnostics script; the gain is over ranking by the mean, in queries.
    """
    res, conds = payload["results"], payload["conditions"]
    wide = diagnostics["risk_r1_wide_grid"]
    rows = []
    for c in conds:
        n = payload["sizes"]["test"][c]
        for r in payload["rankers"]:
            risk = res[c].get(r, {}).get("risk")
            if risk is None:
                continue
            mean = risk["R@1 mean"]
            cells = [c, f"`{r}`", _num(mean), f"{risk['b']:g}: {_num(risk['R@1 risk-aware'])}"]
            for curve in (risk["R@1 against b (test)"], wide.get(r, {}).get(c)):
                if curve is None:
                    cells += ["–", "–"]
                    continue
                b, best = _oracle(curve)
                gain = round((best - mean) * n)
                p = smallest_p(gain, n)
                cells += [f"{b:g}: {_num(best)} ({gain:+d})", "–" if p is None else f"{p:.2g}"]
            rows.append(cells)
    return _table(["condition", "ranker", "R_10@1 by the mean", "b (validation): R_10@1",
                   "oracle b, study grid: R_10@1 (gain in queries)", "smallest p, study grid",
                   "oracle b, wide grid: R_10@1 (gain in queries)", "smallest p, wide grid"], rows)


def training(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What each model a study saved (``save_to``) recorded of its training, read from the folder's manifest.

    Per model: the number of steps, the mean training loss over the first and
    the last ten steps, the validation MAP after each epoch, and the versions
    and CPU kernels that trained it (when the checkpoint records them). A folder
    that is gone, or a model without a training history, is left out.
    """
    out: dict[str, dict[str, Any]] = {}
    for rc in config.get("rankers", []):
        folder = rc.get("save_to")
        manifest = None if folder is None else Path(folder) / "uncertank.json"
        if manifest is None or not manifest.is_file():
            continue
        history = json.loads(manifest.read_text()).get("history") or {}
        loss = [float(v) for v in history.get("loss", [])]
        if not loss:
            continue
        out[rc.get("label") or rc["name"]] = {
            "steps": len(loss),
            "loss first 10": sum(loss[:10]) / len(loss[:10]),
            "loss last 10": sum(loss[-10:]) / len(loss[-10:]),
            "valid MAP": [float(v) for v in history.get("valid_map", [])],
        }
        if history.get("environment"):
            out[rc.get("label") or rc["name"]]["environment"] = history["environment"]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("study", type=Path, nargs="?", help="the folder `uncertank run` wrote")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "full_study.json")
    ap.add_argument("--figures", type=Path, default=ROOT / "docs" / "results" / "full_study",
                    help="where the report's figures are copied ('-': nowhere)")
    ap.add_argument("--markdown", action="store_true", help="print the docs page's tables from --out and stop")
    ap.add_argument("--command", default="uncertank run docs/studies/full.toml --out full-study",
                    help="the command that ran the study, recorded in --out")
    args = ap.parse_args(argv)
    if args.markdown:
        for name, text in tables(json.loads(args.out.read_text())).items():
            print(f"<!-- {name} -->\n{text}\n")
        return
    src = Path("<none given>") if args.study is None else args.study / "results.json"
    if not src.is_file():
        raise SystemExit(f"study must be a folder holding results.json; {src} does not exist")
    from uncertank.experiment.result import StudyResult
    from uncertank.files import atomic_write_text

    raw = json.loads(src.read_text())
    result = StudyResult.from_dict(raw)
    payload = {"command": args.command, **summarise(result)}
    trained = training(raw.get("config", {}))
    if trained:
        payload["training"] = trained
    atomic_write_text(args.out, json.dumps(payload, indent=2, sort_keys=True, allow_nan=True) + "\n")
    if str(args.figures) == "-":
        print(f"wrote {args.out}", file=sys.stderr)
        return
    args.figures.mkdir(parents=True, exist_ok=True)
    for png in sorted((args.study / "figures").glob("*.png")):
        shutil.copyfile(png, args.figures / png.name)
    print(f"wrote {args.out} and {len(list(args.figures.glob('*.png')))} figures to {args.figures}", file=sys.stderr)


if __name__ == "__main__":
    main()
