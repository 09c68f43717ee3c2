"""Write a study's report: results.json, report.md, report.html and PNG figures."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from uncertank._io import atomic_path, atomic_write_text

__all__ = ["markdown_table", "write_report"]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1000 else f"{v:.1f}"
    return str(v)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as a Markdown table (columns: every key, first seen first); floats with 4 decimals."""
    if not rows:
        return "(none)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _reliability_figures(result: dict[str, Any], fig_dir: Path) -> list[str]:
    curves = result.get("reliability", {})
    if not curves:
        return []
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    names = []
    fig_dir.mkdir(parents=True, exist_ok=True)
    for cond, per_ranker in curves.items():
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfectly calibrated")
        for ranker, c in per_ranker.items():
            ax.plot(c["mean_confidence"], c["fraction_relevant"], marker="o", ms=3, label=ranker)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean predicted P(relevant)", ylabel="fraction relevant",
               title=f"Reliability: {cond}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        name = "reliability-" + "".join(ch if ch.isalnum() else "-" for ch in cond) + ".png"
        with atomic_path(fig_dir / name) as tmp:
            fig.savefig(tmp, dpi=110, format="png")
        plt.close(fig)
        names.append(name)
    return names


def write_report(result: dict[str, Any], out: Path) -> None:
    """Write ``results.json``, ``report.md``, ``report.html`` and figures into ``out``."""
    figures = _reliability_figures(result, out / "figures")
    atomic_write_text(out / "results.json", json.dumps(result, indent=2, default=str))
    title = result["config"]["name"]
    d = result["data"]
    parts = [
        f"# {title}\n",
        f"Training queries: {d['train']}, validation queries: {d['valid']}; test queries per condition: "
        + ", ".join(f"{k} {v}" for k, v in d["test"].items()) + ".\n",
        "## Effectiveness\n", markdown_table(result["effectiveness"]),
        "## Calibration\n",
        "ECE: 10 equal-width bins (Naeini et al. 2015); 'ECE Penha-Hauff' is the convention of their released "
        "code (50 bins, divided by the number of bins again).\n",
        markdown_table(result["calibration"]),
        "## Risk-aware reranking\n", markdown_table(result["risk"]),
        "## NOTA prediction (macro-F1, stratified 5-fold CV)\n", markdown_table(result["nota"]),
    ]
    if "bayes" in result:
        rows = [{"family": fam, **{k: v for k, v in r.items() if k != "diagnostics"}}
                for fam, r in result["bayes"].items()]
        parts += ["## Bayesian comparison of TREC-COVID round 1 systems\n", markdown_table(rows)]
    parts += ["## Figures\n"] + [f"![{f}](figures/{f})\n" for f in figures]
    parts += ["## Timings (seconds)\n", markdown_table([result["timings"]])]
    md = "\n".join(parts)
    atomic_write_text(out / "report.md", md)
    atomic_write_text(out / "report.html", _to_html(md, title))


def _to_html(md: str, title: str) -> str:
    """A dependency-free rendering of the report's Markdown subset (headings, tables, images, text)."""
    body: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, rows = table[0], table[2:]
            body.append("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr></thead>")
            body.append("<tbody>" + "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows) + "</tbody></table>")
            table.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush()
        if line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("!["):
            src = line[line.index("(") + 1 : line.rindex(")")]
            body.append(f'<img src="{html.escape(src)}" alt="{html.escape(src)}">')
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}img{max-width:45%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")
