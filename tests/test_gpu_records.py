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
    assert set(million) == {"0", "2.76", "50", "10000"}
    assert min(million.values()) >= 10  # the target at 10^6 draws
    for z, ratio in million.items():
        assert f"{ratio:.1f}x (z = {z if z != '10000' else '10^4'})" in flat, z
    gpu = json.loads((RECORDS / "pgdrr_bank_cost.json").read_text())["bank_sizes"]["4096"]
    cpu = json.loads((ROOT / "docs" / "results" / "pgdrr_bank_cost.json").read_text())["bank_sizes"]["4096"]
    assert f"takes {gpu['sweep']:.3f} s on the GPU against {cpu['sweep']:.1f} s" in flat
    assert f"{gpu['fit_bank_50_sweeps_s']:.1f} s against {cpu['fit_bank_50_sweeps_s']:,.0f} s" in flat


def test_the_tests_log_is_the_one_the_docs_describe():
    log = (RECORDS / "pytest.log").read_text()
    summary = re.search(r"^(\d+) passed, (\d+) skipped", log, re.M)
    assert summary is not None and "failed" not in log.splitlines()[-1]
    assert not re.search(r"^FAILED ", log, re.M)
    assert f"{summary.group(1)} passed, 0 failed, {summary.group(2)} skipped" in " ".join(DOCS.split())


def _numbers(section: str, row: str) -> tuple[float, float]:
    """The (s per 1,000 pairs, ratio) of the table row that starts with ``row``."""
    line = next(ln for ln in section.splitlines() if ln.startswith(f"| {row} |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    return float(cells[1]), float(cells[2])


def test_the_gpu_inference_section_is_the_logged_run_and_the_docs_quote_it():
    log = (RECORDS / "inference.log").read_text()
    section = _section((ROOT / "benchmarks" / "RESULTS.md").read_text(), "bench_inference_cuda")
    assert section in log and "--device cuda --pairs 1024" in section
    flat = " ".join(DOCS.split())
    mc = _numbers(section, "mc_dropout (T=10), fast masks, default (1 pass(es) per call)")[1]
    stacked = _numbers(section, "mc_dropout (T=10), fast masks, all T passes in one call (T x batch)")[1]
    loop = _numbers(section, "ensemble (M=5), member by member")[1]
    vmap = _numbers(section, "ensemble (M=5), vmap over stacked weights")[1]
    assert f"(T = 10) {mc:.2f}x (target <= 10.5; its T passes stacked into one call {stacked:.2f}x" in flat
    assert f"member by member {loop:.2f}x (<= 5.25) and with `torch.func.vmap` over stacked weights {vmap:.2f}x" in flat
    assert mc <= 10.5 and loop <= 5.25 < vmap  # the targets, and the member loop the faster
    for name in ("sngp", "gpf_bert"):
        assert _numbers(section, f"{name} (D = 2048, mean-field)")[1] <= 1.05
    whole = {n: _numbers(section, n)[1] for n in ("sngp", "gpf_bert", "pgdrr")}
    assert f"cost {whole['sngp']:.2f}x and {whole['gpf_bert']:.2f}x (`pgdrr` {whole['pgdrr']:.2f}x)" in flat
    assert whole["pgdrr"] <= 1.20
    share = _numbers(section, "tokenisation alone (`encode`, on the host)")[1]
    assert f"Tokenisation takes {share:.0%}" in section and f"is {share:.0%} of `bert`'s whole `predict`" in flat
    pairs = re.search(r"`bert` scores ([\d,]+) pairs per second on the pre-encoded batch and ([\d,]+)", section)
    assert pairs is not None
    assert f"{pairs.group(1)} pairs per second on a pre-encoded batch and {pairs.group(2)}" in flat
    cross = _numbers(section, "bert predict (eval_batch_size 32, the default)")[1]
    assert cross <= 1.0 and f"its `predict` takes {cross:.2f}x the time" in flat


def test_the_profile_shows_the_gp_heads_kernels_beside_berts():
    log = (RECORDS / "inference_profile.log").read_text()
    device_ms = {m.group(1): float(m.group(2)) for m in
                 re.finditer(r"^== profile: (\w+) predict, 1030 pairs: \{.*'device_ms': ([\d.]+)\}", log, re.M)}
    assert set(device_ms) == {"bert", "sngp", "gpf_bert", "pgdrr"}
    ratios = {n: v / device_ms["bert"] for n, v in device_ms.items()}
    flat = " ".join(DOCS.split())
    assert f"{ratios['sngp']:.2f}x" == f"{ratios['gpf_bert']:.2f}x" == "1.10x"
    assert "the kernels of `sngp` and `gpf_bert` take 1.10x `bert`'s on the device" in flat


def test_the_demo_ran_on_the_gpu_to_its_report():
    log = (RECORDS / "demo.log").read_text()
    assert re.search(r"report written to", log) and "no warnings" in log
    written = float(re.search(r"^\s*([\d.]+)s report written", log, re.M).group(1))
    bert = float(re.search(r"bert: ready in ([\d.]+) s", log).group(1))
    flat = " ".join(DOCS.split())
    assert f"from start to report in {written:.1f} s" in flat and f"in {bert:.1f} s" in flat
