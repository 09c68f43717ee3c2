"""The tables and the figure of docs/scripts/mc_dropout_frontier.py, from the JSON payload it writes.

``docs_table`` draws the two tables of docs/uncertainty.md, ``results_section``
the section of benchmarks/RESULTS.md, ``table`` the wide table the script
prints, and ``figure`` the frontier's PNG (cost ratio against the share of
full MC dropout's balanced-ECE reduction kept, one line per T). The script
reads this file with ``runpy`` (``sys.path`` is left alone), as tests do.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_T = 10  # full MC dropout's passes, the reference reduction's
TARGET_COST, TARGET_SHARE = 2.5, 0.9  # the target: <= 2.5x bert keeping >= 90% of the reference reduction


def figure(rows: list[dict[str, Any]], share_defined: bool, path: Path, title: str) -> None:
    """Cost ratio to bert (log x) against the share of the reference's balanced-ECE reduction kept, one line per T."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter, PercentFormatter

    from uncertank.files import atomic_path

    key = "share_of_full_ece_reduction" if share_defined else "ECE_balanced"
    fig, ax = plt.subplots(figsize=(7, 4.6), constrained_layout=True)
    for t in sorted({r["T"] for r in rows}):
        line = [r for r in rows if r["T"] == t]  # in the order of --ks
        xs, ys = [r["cost_ratio"] for r in line], [r[key] for r in line]
        (drawn,) = ax.plot(xs, ys, marker="o", label=f"T = {t}")
        if share_defined:  # the paired bootstrap's 95% interval of each share
            lo = [y - r["share_ci95"][0] for r, y in zip(line, ys, strict=True)]
            hi = [r["share_ci95"][1] - y for r, y in zip(line, ys, strict=True)]
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor=drawn.get_color(), alpha=0.45, capsize=3)
        for r, x, y in zip(line, xs, ys, strict=True):
            ax.annotate(f"k={r['k']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if share_defined:
        ax.axhline(TARGET_SHARE, color="grey", linestyle="--", linewidth=1, label=f"{TARGET_SHARE:.0%} kept")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_ylabel(f"share of full MC dropout's (k = all, T = {REFERENCE_T})\nbalanced-ECE reduction over bert "
                      "(bars: 95% CI)")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    else:
        ax.set_ylabel("balanced ECE (full MC dropout does not reduce bert's)")
    ax.axvline(TARGET_COST, color="grey", linestyle=":", linewidth=1, label=f"{TARGET_COST}x bert")
    ax.set_xscale("log")
    costs: list[float] = [float(r["cost_ratio"]) for r in rows]
    least, most = min(costs), max(costs)
    ax.set_xticks([x for x in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if least / 2 <= x <= most * 2])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("cost: ratio to bert's time on one batch of 64 test pairs")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def _fmt(x: Any, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def table(bert_row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        "| k | T | cost (x bert) | ECE (all) | ECE (balanced) | share of full reduction | R_10@1 | "
        "risk-aware gain (b) | NOTA F1 means | NOTA F1 + var | balanced-ECE reduction [95% CI] |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        f"| `bert` | 1 | 1.00 | {_fmt(bert_row['ECE'])} | {_fmt(bert_row['ECE_balanced'])} | 0 | "
        f"{_fmt(bert_row['R10@1'])} | | {_fmt(bert_row['NOTA_F1_means'])} | | |",
    ]
    for r in rows:
        lines.append(
            f"| {r['k']} | {r['T']} | {r['cost_ratio']:.2f} | {_fmt(r['ECE'])} | {_fmt(r['ECE_balanced'])} | "
            f"{_fmt(r['share_of_full_ece_reduction'], 2)} | {_fmt(r['R10@1'])} | "
            f"{r['risk_aware_gain']:+.3f} ({r['risk_b']:g}) | {_fmt(r['NOTA_F1_means'])} | "
            f"{_fmt(r['NOTA_F1_with_variance'])} | {r['ece_balanced_reduction']:+.3f} "
            f"[{r['ece_balanced_reduction_ci95'][0]:+.3f}, {r['ece_balanced_reduction_ci95'][1]:+.3f}] |"
        )
    return "\n".join(lines)


def _k_name(k: str, n_layers: int) -> str:
    return {"0": "0 (head)", "all": f"all ({n_layers})"}.get(k, k)


def docs_table(payload: dict[str, Any]) -> str:
    """The frontier's two tables in docs/uncertainty.md (balanced ECE; the rest), from the JSON it writes."""
    bert, n_layers = payload["bert"], payload["settings"]["n_layers"]
    calibration = [
        "| k | T | cost (x bert) | ECE, balanced | reduction | 95% interval | share kept |",
        "|---|---:|---:|---:|---:|---|---:|",
        f"| `bert` | 1 | 1.00 | {bert['ECE_balanced']:.3f} | | | |",
    ]
    ranking = [
        "| k | T | ECE, all pairs | R_10@1 | risk-aware gain (b) | NOTA F1, means | NOTA F1, + variances |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| `bert` | 1 | {bert['ECE']:.3f} | {bert['R10@1']:.3f} | | {bert['NOTA_F1_means']:.3f} | |",
    ]
    for r in payload["frontier"]:
        lo, hi = r["ece_balanced_reduction_ci95"]
        k = _k_name(r["k"], n_layers)
        calibration.append(
            f"| {k} | {r['T']} | {r['cost_ratio']:.2f} | {r['ECE_balanced']:.3f} | "
            f"{r['ece_balanced_reduction']:+.3f} | {lo:+.3f} to {hi:+.3f} | "
            f"{_fmt(r['share_of_full_ece_reduction'], 2)} |"
        )
        ranking.append(
            f"| {k} | {r['T']} | {r['ECE']:.3f} | {r['R10@1']:.3f} | {r['risk_aware_gain']:+.3f} ({r['risk_b']:g}) | "
            f"{r['NOTA_F1_means']:.3f} | {_fmt(r['NOTA_F1_with_variance'])} |"
        )
    return "\n".join(calibration) + "\n\n" + "\n".join(ranking)


def results_section(payload: dict[str, Any]) -> str:
    """The frontier's section of benchmarks/RESULTS.md, from the JSON this script writes."""
    settings, passes = payload["settings"], payload["settings"]["passes"]
    n_layers, target = settings["n_layers"], payload["target"]
    recost = payload.get("cost_remeasured")
    load = recost["load_average"] if recost else payload["load_average"]
    rows = {(r["k"], r["T"]): r for r in payload["frontier"]}
    header = "| mc_layers k | " + " | ".join(f"T = {t}: cost (x bert) | T = {t}: share" for t in passes) + " |"
    lines = [header, "|---|" + "---:|" * (2 * len(passes))]
    for k in settings["ks"]:
        cells = [f"{rows[(k, t)]['cost_ratio']:.2f} | {_fmt(rows[(k, t)]['share_of_full_ece_reduction'], 2)}"
                 for t in passes]
        lines.append(f"| {_k_name(k, n_layers).replace('(head)', '(head only)')} | " + " | ".join(cells) + " |")
    ref, bert = settings["reference"], payload["bert"]
    ref_row = rows[(ref["k"], ref["T"])]
    met = ", ".join(f"k = {m['k']} at T = {m['T']} ({m['cost_ratio']:.2f}x, {m['share']:.0%})"
                    for m in target["met_by"]) or "no setting"
    lo, hi = ref_row["ece_balanced_reduction_ci95"]
    return "\n".join([
        "## MC dropout's `mc_layers` frontier (`docs/scripts/mc_dropout_frontier.py`)",
        "",
        f"Command: `{payload['command']}`. Model: {payload['source']}; all-MiniLM-L6-v2 fine-tuned with the "
        "recipe of `docs/studies/real_run.toml` (6 layers, `[CLS]`, one epoch at lr 1e-4 on the train split's own "
        f"BM25 candidates); {payload['data']['test_queries']} test and "
        f"{payload['data']['valid_queries']} validation queries. Cost: the median over {settings['repeats']} "
        "rounds of t(configuration) / t(bert) on one "
        f"pre-encoded batch of {settings['cost_pairs']} test pairs, bert timed right before each configuration; "
        f"{payload['machine']['threads']} CPU threads, torch {payload['machine']['torch']}, 1-minute load "
        f"{load['before_timing'][0]:.1f} before and {load['after_timing'][0]:.1f} after. Share: of full MC "
        f"dropout's (k = {ref['k']}, T = {ref['T']}) balanced-ECE reduction over bert. Every number, with the "
        "ECE, R_10@1, risk-aware and NOTA columns and the bootstrap intervals, is in "
        "`docs/results/mc_dropout_frontier.json`."
        + (f" The cost column was measured again with `{recost['command']}` ({recost['repeats']} rounds, on "
           "the MC dropout passes of the time; the weights do not change the cost), on "
           f"{recost['weights']}; the share and calibration columns are the original run's." if recost else ""),
        "",
        *lines,
        "",
        f"Target (<= {target['cost_at_most']}x bert keeping >= {target['share_at_least']:.0%} of full MC "
        f"dropout's balanced-ECE reduction): met by {met}. The reference reduction is "
        f"{target['reference_reduction']:.3f} (bert {bert['ECE_balanced']:.3f}, full MC dropout "
        f"{ref_row['ECE_balanced']:.3f}; 95% interval {lo:+.3f} to {hi:+.3f} over resampled test queries)"
        + ("." if target.get("reference_reduction_second_draw") is None else
           f"; the next {ref['T']} passes, a second draw of the same setting, give "
           f"{target['reference_reduction_second_draw']:.3f}."),
    ])


def write_results_section(payload: dict[str, Any]) -> None:
    results = runpy.run_path(str(ROOT / "benchmarks" / "_results.py"), run_name="_results")
    results["write_section"]("mc_dropout_frontier", results_section(payload))
