"""The GPU numbers in the docs are the H100 run's records (docs/results/gpu_h100/), rendered or quoted.

No GPU is needed: these read the committed records, render benchmarks/gpu_path.py's section from its
JSON, and check that docs/benchmarks.md quotes the records' numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "docs" / "results" / "gpu_h100"
DOCS = (ROOT / "docs" / "benchmarks.md").read_text()


def _section(text: str, name: str) -> str:
    begin, end = f"<!-- begin: {name} -->", f"<!-- end: {name} -->"
    return text[text.index(begin) + len(begin) : text.index(end)].strip()


def _rows() -> dict[str, dict]:
    return {r["ranker"]: r for r in json.loads((RECORDS / "gpu_path.json").read_text())["rows"]}


def test_the_results_section_is_the_records_rendering(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # the script imports its sibling _results
    script = load_script(ROOT / "benchmarks" / "gpu_path.py")
    body = script.render_record(RECORDS / "gpu_path.json")
    assert _section((ROOT / "benchmarks" / "RESULTS.md").read_text(), "gpu_path") == body.strip()


def test_every_ranker_learned_on_the_gpu_and_bert_as_on_the_cpu():
    rows = _rows()
    assert set(rows) == {"bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"}
    assert all(r["learned"] and r["device"]["r10_at_1"] >= 0.30 for r in rows.values())
    bert = rows["bert"]
    assert bert["device"]["r10_at_1"] == bert["cpu"]["r10_at_1"] == 0.43  # 258 of 600 queries
    assert f"R_10@1 {bert['device']['r10_at_1']:.3f} on the GPU" in DOCS
    assert f"{round(bert['top1_same'] * 600)} of 600 queries" in DOCS


def test_the_docs_quote_the_gaps_and_the_costs():
    rows = _rows()
    flat = " ".join(DOCS.split())
    for name in ("bert", "pgdrr"):
        assert f"{rows[name]['mean_abs_gap']:.1e}".replace("e-04", "e-4").replace("e-03", "e-3") in flat, name
        assert f"at most {rows[name]['max_abs_gap']:.3f}" in flat, name
    for name, text in {"mc_dropout": "(T = 10) {:.2f}x", "ensemble": "two {:.2f}x", "pgdrr": "`pgdrr` {:.2f}x",
                       "sngp": "`sngp` {:.2f}x", "gpf_bert": "`gpf_bert` {:.2f}x"}.items():
        assert text.format(rows[name]["cost_ratio"]) in flat, name
    pairs = json.loads((RECORDS / "gpu_path.json").read_text())["bert_pairs_per_s_warm"]
    assert f"{pairs:,.0f} pairs per second" in flat


def test_the_docs_quote_the_sampler_and_the_gibbs_sweep():
    flat = " ".join(DOCS.split())
    log = (RECORDS / "polya_gamma.log").read_text()
    million = {m.group(1): float(m.group(2)) for m in
               re.finditer(r"^\| 1,000,000 \| (\S+) \| [\d.]+ \([\d.]+x\) \| [\d.]+ \(([\d.]+)x\)", log, re.M)}
    assert million == {"0": 8.38, "2.76": 13.36, "50": 43.89, "10000": 22.4}
    for z, ratio in million.items():
        assert f"{ratio:.1f}x (z = {z if z != '10000' else '10^4'})" in flat, z
    gpu = json.loads((RECORDS / "pgdrr_bank_cost.json").read_text())["bank_sizes"]["4096"]
    cpu = json.loads((ROOT / "docs" / "results" / "pgdrr_bank_cost.json").read_text())["bank_sizes"]["4096"]
    assert f"takes {gpu['sweep']:.3f} s on the GPU against {cpu['sweep']:.1f} s" in flat
    assert f"{gpu['fit_bank_50_sweeps_s']:.1f} s against {cpu['fit_bank_50_sweeps_s']:,.0f} s" in flat


def test_the_tests_log_is_the_one_the_docs_describe():
    log = (RECORDS / "pytest.log").read_text()
    assert "1 failed, 505 passed, 2 skipped" in log
    assert "test_predict_samples_draw_the_same_normals_whatever_the_device" in log
    assert "505 passed, 1 failed" in " ".join(DOCS.split())
