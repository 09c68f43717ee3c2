"""uncertank.compare_runs and its report, against scipy, ranx and plain loops on the same data."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats as ss

import uncertank
from uncertank import RankedLists
from uncertank.cli import cli
from uncertank.compare import ComparisonReport, check_test_options, compare_runs, report_format
from uncertank.evaluate import evaluate_runs
from uncertank.metrics import brier_score, expected_calibration_error
from uncertank.stats import (
    holm,
    pairwise_bootstrap_test,
    pairwise_randomization_test,
    query_bootstrap_interval,
    tukey_hsd,
)

DATA = Path(__file__).parent / "data"
COVID_RUNS = [DATA / f"trec-covid-r1.{s}.run" for s in ("BBGhelani1", "base.unipd.it", "BioinfoUA-emb")]
COVID_QRELS = DATA / "trec-covid-r1.qrels"


def per_query(seed=0, n=30, shifts=(0.0, 0.04, 0.12, 0.13), metrics=("MAP", "nDCG@10")):
    """Per-query values of len(shifts) systems: a shared query effect, a shift per system, noise."""
    rng = np.random.default_rng(seed)
    base = rng.random((len(metrics), n))
    names = ["bm25", "mono_t5", "ce", "ce_large"][: len(shifts)]
    return {s: {m: np.clip(base[k] + shift + rng.normal(0, 0.1, n), 0, 1) for k, m in enumerate(metrics)}
            for s, shift in zip(names, shifts, strict=True)}


def pair(rep, metric, system, other):
    return next(p for p in rep.pairs if p.metric == metric and p.system == system and p.other == other)


# --------------------------------------------------------------------------- against independent references


def test_t_test_pvalues_equal_scipy_and_holm_runs_over_each_metric():
    runs = per_query()
    rep = compare_runs(runs, n_resamples=200)
    assert rep.test == "t" and rep.correction == "holm" and rep.family == "metric"
    for m in rep.metrics:
        raw = []
        for p in (q for q in rep.pairs if q.metric == m):
            ref = ss.ttest_rel(runs[p.system][m], runs[p.other][m])
            assert p.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
            assert p.statistic == pytest.approx(ref.statistic, rel=1e-9)
            raw.append(p.pvalue)
        adjusted = [p.pvalue_adjusted for p in rep.pairs if p.metric == m]
        assert adjusted == pytest.approx(holm(raw).tolist(), rel=1e-12)
    assert len(rep.pairs) == 2 * 6  # all pairs of 4 systems, per metric


def test_wilcoxon_pvalues_equal_scipy():
    runs = per_query(1)
    rep = compare_runs(runs, test="wilcoxon", correction="none", n_resamples=200)
    for p in rep.pairs:
        ref = ss.wilcoxon(runs[p.system][p.metric], runs[p.other][p.metric])
        assert p.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
        assert p.pvalue_adjusted == p.pvalue


def test_benjamini_hochberg_over_the_table_equals_scipy():
    runs = per_query(2)
    rep = compare_runs(runs, correction="bh", family="table", n_resamples=200)
    raw = np.array([p.pvalue for p in rep.pairs])
    want = ss.false_discovery_control(raw, method="bh")
    assert np.allclose([p.pvalue_adjusted for p in rep.pairs], want, rtol=1e-12, atol=0)
    assert rep.family_size() == rep.family_size("MAP") == 12


def test_bonferroni_per_metric():
    runs = per_query(3)
    rep = compare_runs(runs, correction="bonferroni", n_resamples=200)
    for p in rep.pairs:
        assert p.pvalue_adjusted == pytest.approx(min(1.0, 6 * p.pvalue))


def test_tukey_is_the_blocked_hsd_without_a_further_correction():
    runs = per_query(4)
    rep = compare_runs(runs, test="tukey", n_resamples=200)
    assert rep.correction == "none"
    x = np.stack([np.stack([runs[s][m] for s in rep.systems], axis=-1) for m in rep.metrics])
    ref = tukey_hsd(x)
    for p in rep.pairs:
        m, i, j = rep.metrics.index(p.metric), rep.systems.index(p.system), rep.systems.index(p.other)
        assert p.pvalue == ref.pvalue[m, i, j] == p.pvalue_adjusted
    assert "Tukey's HSD over all pairs (queries as blocks), its p-values adjusted for all pairs" in rep.to_markdown()


def test_randomization_and_bootstrap_tests_are_the_pairwise_tests_with_one_draw():
    runs = per_query(5)
    x = np.stack([np.stack([runs[s][m] for s in runs], axis=-1) for m in ("MAP", "nDCG@10")])
    for test, fn in (("randomization", pairwise_randomization_test), ("bootstrap", pairwise_bootstrap_test)):
        rep = compare_runs(runs, test=test, correction="none", n_resamples=800, seed=4)
        ref = fn(x, n_resamples=800, seed=4)
        for p in rep.pairs:
            m, i, j = rep.metrics.index(p.metric), rep.systems.index(p.system), rep.systems.index(p.other)
            assert p.pvalue == ref.pvalue[m, i, j]
            assert p.statistic == pytest.approx(p.mean_difference)


def test_interval_of_the_mean_difference_equals_a_loop():
    runs = per_query(6, n=20, shifts=(0.0, 0.05))
    rep = compare_runs(runs, n_resamples=500, seed=11)
    a, b = runs["mono_t5"]["MAP"], runs["bm25"]["MAP"]
    rng = np.random.default_rng(11)
    reps = []
    for _ in range(500):
        idx = rng.integers(0, 20, size=20)
        reps.append(sum(a[q] - b[q] for q in idx) / 20)
    lo, hi = np.quantile(reps, [0.025, 0.975])
    p = pair(rep, "MAP", "mono_t5", "bm25")
    assert (p.low, p.high) == pytest.approx((lo, hi), abs=1e-12)
    d = a - b
    assert p.mean_difference == pytest.approx(d.mean())
    assert p.effect_size == pytest.approx(d.mean() / d.std(ddof=1))


def _trec_data(seed=9, n_queries=40, n_docs=20):
    """Qrels and four runs of continuous scores (no ties), as frames and as ranx's dicts."""
    rng = np.random.default_rng(seed)
    qrels = {}
    for q in range(n_queries):
        grades = rng.choice([0, 0, 0, 1, 2], n_docs)
        grades[0] = max(grades[0], 1)
        qrels[f"q{q}"] = {f"d{d}": int(g) for d, g in enumerate(grades)}
    runs = {}
    for name, strength in (("bm25", 0.5), ("mono", 0.65), ("ce", 0.8), ("rand", 0.3)):
        runs[name] = {q: {d: float(strength * g + rng.normal()) for d, g in docs.items()} for q, docs in qrels.items()}
    return qrels, runs


def _frames(qrels, runs):
    q = pd.DataFrame([(qid, d, g) for qid, docs in qrels.items() for d, g in docs.items()],
                     columns=["query_id", "doc_id", "relevance"])
    r = [pd.DataFrame([(name, qid, d, s) for qid, docs in run.items() for d, s in docs.items()],
                      columns=["system", "query_id", "doc_id", "score"]) for name, run in runs.items()]
    return q, r


def _ranx_marks(report, names, metrics):
    letters = "abcdefghij"
    out = {}
    for s in names:
        for m in metrics:
            out[s, m] = "".join(
                letters[j] for j, o in enumerate(names)
                if o != s and report.comparisons[s, o][m]["significant"] and report.results[s][m] > report.results[o][m]
            )
    return out


@pytest.mark.slow  # ranx's numba kernels compile on the first call (seconds), then load from its cache
@pytest.mark.parametrize(("ranx_test", "ours"), [("student", "t"), ("fisher", "randomization")])
def test_significance_marks_agree_with_ranx_compare(ranx_test, ours):
    """Same runs, same per-query values; 10,000 draws each (ranx's permutations cannot share our signs).

    The p-values of these runs spread from 0.0002 to 0.32, the nearest to alpha = 0.05 being 0.036 and 0.10,
    five standard errors of a difference of two Monte Carlo p-values at 10,000 draws (0.0027) and more away,
    where the marks must agree. ranx's own Fisher p-values vary from call to call with the same seed (its
    permutations run in parallel threads), so each pair is compared within five standard errors.
    """
    ranx = pytest.importorskip("ranx")
    qrels, runs = _trec_data()
    q, frames = _frames(qrels, runs)
    ev = evaluate_runs(frames, q, metrics=["map", {"name": "ndcg", "k": 10}])
    rep = compare_runs(ev, test=ours, correction="none", alpha=0.05, n_resamples=10_000, seed=0)
    names = list(runs)
    ranx_rep = ranx.compare(ranx.Qrels(qrels), [ranx.Run(r, name=n) for n, r in runs.items()],
                            metrics=["map", "ndcg@10"], stat_test=ranx_test, max_p=0.05, n_permutations=10_000)
    for ours_m, theirs_m in (("MAP", "map"), ("nDCG@10", "ndcg@10")):
        per_q = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(runs["ce"]), theirs_m, return_mean=False)
        assert np.allclose(ev.runs[2].per_query[ours_m], per_q, atol=1e-12)  # the same per-query values
        for s in names:
            for o in names:
                if s == o:
                    continue
                theirs = ranx_rep.comparisons[s, o][theirs_m]["p_value"]
                p = next(x for x in rep.pairs if x.metric == ours_m and {x.system, x.other} == {s, o})
                if ours == "t":
                    assert p.pvalue == pytest.approx(theirs, rel=1e-9)
                else:  # Monte Carlo on both sides: within five standard errors of their difference
                    assert abs(p.pvalue - theirs) <= 5 * np.sqrt(2 * theirs * (1 - theirs) / 10_000) + 1e-3
    mine = {(s, m): "".join(rep.letters[o] for o in rep.beats(s, m)) for s in names for m in rep.metrics}
    theirs_marks = _ranx_marks(ranx_rep, names, ["map", "ndcg@10"])
    assert mine == {(s, m): theirs_marks[s, t] for s in names for m, t in (("MAP", "map"), ("nDCG@10", "ndcg@10"))}
    assert any(mine.values()) and not all(mine.values())  # some marks, not all: the agreement says something


# --------------------------------------------------------------------------- inputs and alignment


def test_mapping_runs_are_aligned_on_shared_query_ids():
    rng = np.random.default_rng(8)
    ids_a = [f"q{i}" for i in range(12)]
    ids_b = [f"q{i}" for i in reversed(range(2, 14))]  # another order, two lost and two extra
    va, vb = rng.random(12), rng.random(12)
    rep = compare_runs({"a": {"AP": va}, "b": {"AP": vb}}, query_ids={"a": ids_a, "b": ids_b}, n_resamples=100)
    assert rep.n_queries == 10 and rep.query_ids == [f"q{i}" for i in range(2, 12)]
    assert rep.dropped == {"a": 2, "b": 2}
    b_by_id = dict(zip(ids_b, vb, strict=True))
    want = np.mean([va[i] - b_by_id[f"q{i}"] for i in range(2, 12)])
    assert rep.pairs[0].mean_difference == pytest.approx(-want)  # b minus a
    assert "the 10 queries all systems share (left out: 2 of a, 2 of b)" in rep.to_markdown()


def test_one_list_of_query_ids_for_all_and_positional_alignment():
    runs = per_query(9, n=8, shifts=(0, 0.1))
    by_ids = compare_runs(runs, query_ids=[f"t{i}" for i in range(8)], n_resamples=100)
    by_position = compare_runs(runs, n_resamples=100)
    assert by_ids.query_ids == [f"t{i}" for i in range(8)] and by_position.query_ids is None
    assert [p.pvalue for p in by_ids.pairs] == [p.pvalue for p in by_position.pairs]


def test_an_evaluation_report_is_aligned_on_the_queries_every_run_has():
    qrels, runs = _trec_data(n_queries=12)
    q, frames = _frames(qrels, runs)
    frames[1] = frames[1][frames[1].query_id != "q3"]  # mono misses a query
    ev = evaluate_runs(frames, q, metrics=["map", "mrr"])
    rep = compare_runs(ev, baseline="bm25", n_resamples=100)
    assert rep.n_queries == 11 and "q3" not in rep.query_ids
    assert rep.dropped == {"bm25": 1, "mono": 0, "ce": 1, "rand": 1}
    assert rep.metrics == ["MAP", "MRR"]
    assert all(p.other == "bm25" for p in rep.pairs) and len(rep.pairs) == 2 * 3
    keep = [i for i, qid in enumerate(ev.runs[0].query_ids) if qid != "q3"]
    assert rep.means["MAP"]["bm25"] == pytest.approx(ev.runs[0].per_query["MAP"][keep].mean())
    assert compare_runs(ev, metrics=["MRR"], n_resamples=50).metrics == ["MRR"]


def test_who_beats_whom_follows_the_direction_of_each_metric():
    runs = {"a": {"err": np.linspace(0.1, 0.2, 20), "gain": np.linspace(0.1, 0.2, 20)},
            "b": {"err": np.linspace(0.4, 0.5, 20) + np.sin(np.arange(20)) * 0.01,
                  "gain": np.linspace(0.4, 0.5, 20) + np.sin(np.arange(20)) * 0.01}}
    rep = compare_runs(runs, lower_is_better=["err"], n_resamples=100)
    assert rep.beats("b", "gain") == ["a"] and rep.beats("a", "gain") == []
    assert rep.beats("a", "err") == ["b"] and rep.beats("b", "err") == []
    tex = rep.to_latex()
    assert "\\textbf{0.150}\\textsuperscript{b}" in tex  # a's err: lowest, bold, beats b
    assert "\\textbf{0.450}\\textsuperscript{a}" in tex


def test_identical_systems_have_no_difference_to_test():
    v = np.linspace(0, 1, 10)
    for test in ("t", "wilcoxon", "randomization", "bootstrap"):
        rep = compare_runs({"a": {"m": v}, "b": {"m": v.copy()}, "c": {"m": v + 0.1 * np.cos(v)}},
                           test=test, n_resamples=100)
        p = pair(rep, "m", "b", "a")
        assert p.pvalue == 1.0 and np.isnan(p.statistic) and np.isnan(p.effect_size) and p.better is None


def test_calibration_columns_with_intervals_over_queries():
    rng = np.random.default_rng(10)
    runs = per_query(10, n=15, shifts=(0, 0.1))
    ids = [f"q{i}" for i in range(15)]
    lists = {s: RankedLists.from_flat(rng.random(15 * 6), rng.random(15 * 6) < 0.3, np.arange(0, 91, 6),
                                      query_ids=[*ids[:14], "extra"]) for s in ("bm25",)}
    rep = compare_runs(runs, query_ids=ids, calibration=lists, calibration_resamples=200, n_resamples=100, seed=3)
    assert rep.calibration_metrics == ["ECE", "Brier"] and set(rep.lower_is_better) == {"ECE", "Brier"}
    cut = lists["bm25"].subset(np.arange(14))  # "extra" is not a query the systems share
    cell = rep.calibration["bm25"]["ECE"]
    assert cell["value"] == pytest.approx(expected_calibration_error(cut))
    assert rep.calibration["bm25"]["Brier"]["value"] == pytest.approx(brier_score(cut))
    lo, hi = query_bootstrap_interval(cut.offsets, lambda pos, b: expected_calibration_error(
        cut.scores[pos], cut.labels[pos]), n_resamples=200, seed=3)
    assert (cell["low"], cell["high"]) == pytest.approx((lo, hi))
    assert "mono_t5" not in rep.calibration
    md = rep.to_markdown()
    assert "ECE [95% CI]" in md and f"[{cell['low']:.4f}, {cell['high']:.4f}]" in md
    frame = rep.to_frame()
    assert np.isnan(frame.loc[1, "ECE"]) and frame.loc[0, "ECE low"] == cell["low"]


def test_bayesian_columns_from_contrasts_rows_or_a_mapping():
    runs = per_query(11)
    contrasts = pd.DataFrame({"system": ["mono_t5", "ce", "ce_large"], "diff_mean": [0.01, 0.1, 0.12],
                              "diff_lower": [-0.02, 0.05, 0.06], "diff_upper": [0.04, 0.15, 0.2],
                              "p_better": [0.7, 0.999, 0.998], "verdict": ["not distinguishable", "better", "better"]})
    frame_rep = compare_runs(runs, bayes=contrasts, bayes_reference="bm25", bayes_metric="MAP", n_resamples=100)
    rows_rep = compare_runs(runs, bayes=contrasts.to_dict("records"), bayes_reference="bm25", n_resamples=100)
    map_rep = compare_runs(runs, bayes={r["system"]: r for r in contrasts.to_dict("records")},
                           bayes_reference="bm25", n_resamples=100)
    assert frame_rep.bayes == rows_rep.bayes == map_rep.bayes
    assert frame_rep.bayes["ce"]["p_better"] == 0.999 and frame_rep.bayes["ce"]["diff_lower"] == 0.05
    sys_frame = frame_rep.to_frame()
    assert sys_frame["verdict"].tolist() == ["reference", "not distinguishable", "better", "better"]
    tex = frame_rep.to_latex()
    assert "P(better) & Verdict" in tex and "the Bayesian comparison of MAP against bm25" in tex
    assert "the Bayesian comparison against bm25." in rows_rep.to_markdown()
    sure = compare_runs(runs, bayes={"ce": {"p_better": 0.99996, "verdict": "better"}}, n_resamples=50)
    assert "| >0.9999 | better |" in sure.to_markdown() and "\\textgreater{}0.999 & better" in sure.to_latex()


# --------------------------------------------------------------------------- renderings


def test_latex_structure_bold_superscripts_and_caption():
    runs = per_query(12)
    rep = compare_runs(runs, test="randomization", correction="holm", family="table", alpha=0.02,
                       n_resamples=2000)
    tex = rep.to_latex(label="tab:mine")
    for rule in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert tex.count(rule) == 1
    assert tex.index("\\toprule") < tex.index("\\midrule") < tex.index("\\bottomrule")
    assert "\\begin{tabular}{clrr}" in tex and "\\label{tab:mine}" in tex
    caption = re.search(r"\\caption\{(.*)\}\n", tex).group(1)
    assert "two-sided paired randomization test (Fisher, 2,000 sign patterns)" in caption
    assert "Holm's correction over all 12 comparisons of the table" in caption
    assert "$\\alpha$ = 0.02" in caption and "30 queries" in caption
    rows = [line for line in tex.splitlines() if line.endswith("\\\\") and line[:2] in ("a ", "b ", "c ", "d ")]
    assert [r.split(" & ")[1] for r in rows] == ["bm25", "mono\\_t5", "ce", "ce\\_large"]  # the legend: letter, name
    for k, m in enumerate(rep.metrics):
        cells = [r.removesuffix(" \\\\").split(" & ")[2 + k] for r in rows]
        best = max(rep.systems, key=lambda s: round(rep.means[m][s], 3))
        assert cells[rep.systems.index(best)].startswith("\\textbf{")
        assert sum(c.startswith("\\textbf{") for c in cells) >= 1
        for s, cell in zip(rep.systems, cells, strict=True):
            sup = re.search(r"\\textsuperscript\{(\w+)\}", cell)
            assert (sup.group(1) if sup else "") == "".join(rep.letters[o] for o in rep.beats(s, m))
    assert any("\\textsuperscript{" in r for r in rows)


def test_special_characters_are_escaped():
    v = np.linspace(0, 1, 6)
    rep = compare_runs({"a_b & c": {"P@5 (%)": v}, "x#1 {y}": {"P@5 (%)": v[::-1]}}, n_resamples=50)
    tex = rep.to_latex()
    assert "a\\_b \\& c" in tex and "x\\#1 \\{y\\}" in tex and "P@5 (\\%)" in tex
    md = compare_runs({"a|b": {"m": v}, "c": {"m": v[::-1]}}, n_resamples=50).to_markdown()
    assert "a\\|b" in md


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no LaTeX engine (pdflatex) installed")
def test_latex_compiles(tmp_path):
    rng = np.random.default_rng(13)
    runs = per_query(13)
    runs["ce_large"]["MAP"] = runs["ce"]["MAP"] + 0.01  # a constant difference: d_z is infinite
    lists = {s: RankedLists.from_dense(rng.random((30, 5)), rng.random((30, 5)) < 0.4) for s in runs}
    rep = compare_runs(runs, calibration=lists, calibration_resamples=50, n_resamples=200,
                       bayes={"ce": {"p_better": 0.9, "verdict": "better"}}, bayes_reference="bm25")
    assert any(np.isinf(p.effect_size) for p in rep.pairs)
    (tmp_path / "t.tex").write_text(rep.to_latex(standalone=True, pairwise=True), encoding="utf-8")
    out = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-2000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000


def test_markdown_csv_frame_and_json():
    runs = per_query(14)
    rep = compare_runs(runs, baseline="bm25", n_resamples=300)
    md = rep.to_markdown()
    assert md.startswith("|  | System | MAP | nDCG@10 |") and "<sup>a</sup>" in md and "**" in md
    assert "Each system is compared with the baseline bm25 (a) only." in md
    assert "| MAP | mono_t5 | bm25 |" in md and "d_z" in md
    assert "| Metric |" not in rep.to_markdown(pairwise=False)
    rows = list(csv.DictReader(io.StringIO(rep.to_csv())))
    assert [r["system"] for r in rows] == rep.systems and [r["letter"] for r in rows] == ["a", "b", "c", "d"]
    assert float(rows[2]["MAP"]) == rep.means["MAP"]["ce"] and rows[2]["MAP beats"] == "a"
    pairs = list(csv.DictReader(io.StringIO(rep.to_csv("pairs"))))
    assert len(pairs) == 6 and float(pairs[0]["pvalue"]) == rep.pairs[0].pvalue
    frame = rep.to_frame("pairs")
    assert list(frame.columns[:4]) == ["metric", "system", "other", "n"] and len(frame) == 6
    again = ComparisonReport.from_dict(json.loads(rep.to_json()))
    assert again.to_latex(pairwise=True) == rep.to_latex(pairwise=True)
    assert again.to_markdown() == rep.to_markdown() and again.to_csv("pairs") == rep.to_csv("pairs")


def test_write_picks_the_format_from_the_suffix(tmp_path):
    rep = compare_runs(per_query(15, shifts=(0, 0.1)), n_resamples=100)
    for suffix, start in ((".md", "|  | System"), (".tex", "\\begin{table}"), (".csv", "letter,system"),
                          (".json", "{")):
        path = tmp_path / f"report{suffix}"
        rep.write(path)
        assert path.read_text(encoding="utf-8").startswith(start)
    assert report_format("T.TEX") == "latex"
    with pytest.raises(ValueError, match=r"a report file's suffix must be one of .md, .tex, .csv, .json "
                                         r"\(the format\); got '.*report.pdf'"):
        rep.write(tmp_path / "report.pdf")
    assert not (tmp_path / "report.pdf").exists()


def test_top_level_exports():
    assert uncertank.compare_runs is compare_runs and uncertank.ComparisonReport is ComparisonReport


# --------------------------------------------------------------------------- every error


RUNS = {"a": {"m": [0.1, 0.2, 0.3]}, "b": {"m": [0.2, 0.2, 0.5]}}


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"test": "fisher"}, ValueError, "test must be one of 't', 'wilcoxon', 'randomization', 'bootstrap', 'tukey'; "
                                     "got 'fisher'"),
    ({"correction": "fdr"}, ValueError, "correction must be one of 'bonferroni', 'holm', 'none', 'bh'; got 'fdr'"),
    ({"family": "all"}, ValueError, "family must be one of 'metric', 'table'; got 'all'"),
    ({"test": "tukey", "correction": "holm"}, ValueError, "correction='holm' with test='tukey'"),
    ({"test": "tukey", "family": "table"}, ValueError, "family='table' with test='tukey'"),
    ({"baseline": "c"}, ValueError, r"baseline must be one of the systems \['a', 'b'\] or None; got 'c'"),
    ({"alpha": 1.5}, ValueError, "alpha must be a finite number > 0 and < 1; got 1.5"),
    ({"n_resamples": 0}, ValueError, "n_resamples must be an integer >= 1; got 0"),
    ({"calibration_resamples": 2.5}, TypeError, "calibration_resamples must be an integer >= 1; got float 2.5"),
    ({"seed": -1}, ValueError, "seed must be an integer >= 0; got -1"),
    ({"lower_is_better": "m"}, TypeError, "lower_is_better must be a sequence of metric labels; got 'm'"),
    ({"lower_is_better": ["x"]}, ValueError, r"lower_is_better names \['x'\], not among the metrics compared"),
    ({"metrics": ["m", "z"]}, ValueError, r"metrics: \['z'\] not among the per-query metrics every system has"),
    ({"metrics": ["m", "m"]}, ValueError, "metrics must be distinct"),
    ({"metrics": "m"}, TypeError, "metrics must be a sequence of metric labels"),
    ({"query_ids": ["q1", "q2"]}, ValueError, r"runs\['a'\]\['m'\] has 3 values but its query ids number 2"),
    ({"query_ids": ["q1", "q1", "q2"]}, ValueError, "query_ids holds query 'q1' more than once"),
    ({"query_ids": {"a": ["q1", "q2", "q3"]}}, ValueError, r"query_ids lacks the systems \['b'\]"),
    ({"query_ids": {"a": ["q1", "q2", "q3"], "b": ["x", "y", "z"]}}, ValueError,
     "runs share no query: a has 3, b has 3 query ids, none of them in all systems"),
    ({"query_ids": {"a": ["q1", "q2", "q3"], "b": ["q1", "y", "z"]}}, ValueError,
     "runs share 1 query; a paired comparison needs at least 2"),
    ({"query_ids": "q1"}, TypeError, "query_ids must be a sequence of query ids; got str"),
])
def test_option_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        compare_runs(RUNS, **{"n_resamples": 10, **kwargs})


@pytest.mark.parametrize(("runs", "error", "message"), [
    ({"a": {"m": [0.1, 0.2, 0.3]}, "b": {"m": [0.2, 0.4]}}, ValueError,
     r"runs\['b'\]\['m'\] has 2 values but runs\['a'\]\['m'\] has 3: values aligned by position need one length; "
     "pass query_ids"),
    ({"a": {"m": [0.1, 0.2]}}, ValueError, r"runs must hold at least two systems to compare; got 1 \('a'\)"),
    ({}, ValueError, "runs must hold at least two systems; got an empty mapping"),
    ([1, 2], TypeError, "runs must be an EvaluationReport"),
    ({"a": [0.1, 0.2], "b": {"m": [0.1, 0.2]}}, TypeError, r"runs\['a'\] must be a non-empty mapping"),
    ({1: {"m": [0.1, 0.2]}, "b": {"m": [0.1, 0.2]}}, TypeError, "runs: system names must be str; got int 1"),
    ({"a": {"m": [0.1, 0.2]}, "b": {"n": [0.1, 0.2]}}, ValueError, "runs hold no per-query metric that every system"),
    ({"a": {"m": [0.1, np.nan]}, "b": {"m": [0.1, 0.2]}}, ValueError, r"runs\['a'\]\['m'\]"),
    ({f"s{i}": {"m": [0.1, 0.2]} for i in range(53)}, ValueError, "runs may hold at most 52 systems"),
])
def test_input_errors(runs, error, message):
    with pytest.raises(error, match=message):
        compare_runs(runs, n_resamples=10)


def test_query_ids_with_an_evaluation_report_is_an_error():
    ev = evaluate_runs(COVID_RUNS[:2], COVID_QRELS, metrics=["map"])
    with pytest.raises(ValueError, match="query_ids must be None with an EvaluationReport"):
        compare_runs(ev, query_ids=["1"])


def test_calibration_errors():
    lists = RankedLists.from_dense([[0.2, 0.9], [0.4, 0.1], [0.3, 0.3]], [[0, 1], [1, 0], [0, 0]])
    with pytest.raises(TypeError, match="calibration must be a mapping"):
        compare_runs(RUNS, calibration=[lists])
    with pytest.raises(ValueError, match=r"calibration names systems \['z'\] that runs does not have"):
        compare_runs(RUNS, calibration={"z": lists})
    with pytest.raises(TypeError, match=r"calibration\['a'\] must be a RankedLists of probabilities; got ndarray"):
        compare_runs(RUNS, calibration={"a": np.ones(3)})
    with pytest.raises(ValueError, match="'MAP' is not a calibration metric"):
        compare_runs(RUNS, calibration={"a": lists}, calibration_metrics=["map"])
    with pytest.raises(TypeError, match="calibration_metrics must be a non-empty sequence"):
        compare_runs(RUNS, calibration={"a": lists}, calibration_metrics="ece")
    with pytest.raises(ValueError, match=r"calibration\['a'\].scores"):
        compare_runs(RUNS, calibration={"a": RankedLists.from_dense([[2.0, 0.5]], [[1, 0]])})
    ided = RankedLists.from_flat([0.1, 0.2], [0, 1], [0, 1, 2], query_ids=["x", "y"])
    with pytest.raises(ValueError, match=r"calibration\['a'\] holds none of the 3 queries the systems share"):
        compare_runs(RUNS, query_ids=["q1", "q2", "q3"], calibration={"a": ided})
    with pytest.raises(ValueError, match=r"calibration_metrics \['m'\] have the labels of per-query metrics"):
        compare_runs(RUNS, calibration={"a": lists}, calibration_metrics=[{"name": "ece", "label": "m"}])


def test_bayes_errors():
    with pytest.raises(ValueError, match="bayes names system 'z', which runs does not have"):
        compare_runs(RUNS, bayes={"z": {"p_better": 0.5, "verdict": "better"}})
    with pytest.raises(ValueError, match=r"bayes row 0 \('b'\) lacks \['verdict'\]"):
        compare_runs(RUNS, bayes=[{"system": "b", "p_better": 0.5}])
    with pytest.raises(ValueError, match=r"bayes\['b'\]\['p_better'\] must be a finite number >= 0 and <= 1; got 1.2"):
        compare_runs(RUNS, bayes={"b": {"p_better": 1.2, "verdict": "better"}})
    with pytest.raises(TypeError, match=r"bayes must be SystemComparison\.contrasts"):
        compare_runs(RUNS, bayes="b")
    with pytest.raises(TypeError, match=r"bayes\['b'\] must be a mapping with p_better and verdict; got float"):
        compare_runs(RUNS, bayes={"b": 0.9})
    with pytest.raises(TypeError, match="bayes row 0 must be a mapping with a 'system'"):
        compare_runs(RUNS, bayes=[{"p_better": 0.9}])
    with pytest.raises(ValueError, match="bayes_reference is given without bayes"):
        compare_runs(RUNS, bayes_reference="a")
    with pytest.raises(ValueError, match=r"bayes_reference must be one of the systems \['a', 'b'\] or None; got 'z'"):
        compare_runs(RUNS, bayes={"b": {"p_better": 0.9, "verdict": "better"}}, bayes_reference="z")
    with pytest.raises(ValueError, match="bayes_metric must be a str naming what bayes modelled, given with bayes; "
                                         "got 'MAP' without bayes"):
        compare_runs(RUNS, bayes_metric="MAP")
    with pytest.raises(ValueError, match="bayes_metric must be a str"):
        compare_runs(RUNS, bayes={"b": {"p_better": 0.9, "verdict": "better"}}, bayes_metric=3)
    with pytest.raises(ValueError, match="bayes_reference 'b' has a row of its own"):
        compare_runs(RUNS, bayes={"b": {"p_better": 0.9, "verdict": "better"}}, bayes_reference="b")


def test_rendering_errors():
    rep = compare_runs(RUNS, n_resamples=10)
    with pytest.raises(ValueError, match="which must be one of 'systems', 'pairs'; got 'all'"):
        rep.to_frame("all")
    with pytest.raises(ValueError, match="which must be one of 'systems', 'pairs'"):
        rep.to_csv("all")
    with pytest.raises(ValueError, match="digits must be an integer from 0 to 12; got 20"):
        rep.to_latex(digits=20)
    with pytest.raises(TypeError, match="digits must be an integer >= 0"):
        rep.to_markdown(digits=2.5)
    with pytest.raises(TypeError, match="label must be a str; got int"):
        rep.to_latex(label=3)
    with pytest.raises(TypeError, match="caption must be a str or None; got int"):
        rep.to_latex(caption=3)
    with pytest.raises(TypeError, match=r"data must be a mapping from ComparisonReport\.to_dict"):
        ComparisonReport.from_dict([1])
    with pytest.raises(ValueError, match="data is not a ComparisonReport's dict: it lacks pairs, n_queries"):
        ComparisonReport.from_dict({k: v for k, v in rep.to_dict().items() if k not in ("pairs", "n_queries")})
    assert rep.to_latex(caption="Mine.").count("\\caption{Mine.}") == 1


def test_check_test_options_resolves_the_correction():
    assert check_test_options("t", None, "table") == ("t", "holm", "table")
    assert check_test_options("tukey", "none", "metric") == ("tukey", "none", "metric")


# --------------------------------------------------------------------------- the command line


def test_evaluate_writes_the_report_in_each_format(tmp_path):
    runs = [a for r in COVID_RUNS for a in ("--run", str(r))]
    for suffix in (".md", ".tex", ".csv", ".json"):
        out = tmp_path / f"table{suffix}"
        res = CliRunner().invoke(cli, ["evaluate", *runs, "--qrels", str(COVID_QRELS), "-m", "map", "-m", "ndcg:k=10",
                                       "--report", str(out), "--test", "bootstrap", "--correction", "bh",
                                       "--family", "table", "--baseline", COVID_RUNS[0].name, "--resamples", "300",
                                       "--seed", "2"])
        assert res.exit_code == 0, res.output
        assert res.output.startswith("run ")  # evaluate's own table is printed as before
        assert out.stat().st_size > 0
    data = json.loads((tmp_path / "table.json").read_text(encoding="utf-8"))
    assert data["test"] == "bootstrap" and data["correction"] == "bh" and data["family"] == "table"
    assert data["baseline"] == COVID_RUNS[0].name and data["n_resamples"] == 300 and data["seed"] == 2
    ev = evaluate_runs(COVID_RUNS, COVID_QRELS, metrics=["map", {"name": "ndcg", "k": 10}])
    want = compare_runs(ev, test="bootstrap", correction="bh", family="table", baseline=COVID_RUNS[0].name,
                        n_resamples=300, seed=2)
    assert (tmp_path / "table.tex").read_text(encoding="utf-8") == want.to_latex()


def test_evaluate_report_with_probabilities_has_calibration_columns(tmp_path):
    rng = np.random.default_rng(16)
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"{q} 0 d{d} {int(rng.random() < 0.3)}\n" for q in range(1, 9) for d in range(6)))
    runs = []
    for name in ("x", "y"):
        path = tmp_path / name
        path.write_text("".join(f"{q} Q0 d{d} 0 {rng.random():.5f} {name}\n" for q in range(1, 9) for d in range(6)))
        runs += ["--run", str(path)]
    out = tmp_path / "t.json"
    res = CliRunner().invoke(cli, ["evaluate", *runs, "--qrels", str(qrels), "--probabilities", "-m", "map",
                                   "-m", "ece", "--report", str(out), "--resamples", "100"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["calibration_metrics"] == ["ECE"] and set(data["calibration"]) == {"x", "y"}
    res = CliRunner().invoke(cli, ["evaluate", *runs, "--qrels", str(qrels), "--probabilities",
                                   "--report", str(out), "--resamples", "100"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text(encoding="utf-8"))["calibration_metrics"] == ["ECE", "Brier", "NLL"]
    res = CliRunner().invoke(cli, ["evaluate", *runs, "--qrels", str(qrels), "--probabilities", "-m", "map",
                                   "--report", str(out), "--resamples", "100"])
    assert res.exit_code == 0, res.output  # -m names no calibration metric: evaluate shows none, nor the report
    assert json.loads(out.read_text(encoding="utf-8"))["calibration_metrics"] == []


@pytest.mark.parametrize(("args", "message"), [
    (["--report", "t.pdf"], "--report: a report file's suffix must be one of .md, .tex, .csv, .json"),
    (["--report", "t.md", "--test", "fisher"], "--report: test must be one of"),
    (["--report", "t.md", "--correction", "fdr"], "--report: correction must be one of"),
    (["--report", "t.md", "--family", "all"], "--report: family must be one of"),
    (["--report", "t.md", "--test", "tukey", "--correction", "holm"], "--report: correction='holm' with test='tukey'"),
    (["--report", "t.md", "--resamples", "0"], "--report: --resamples must be an integer >= 1; got 0"),
    (["--report", "t.md", "--seed", "-3"], "--report: --seed must be an integer >= 0; got -3"),
    (["--test", "wilcoxon", "--seed", "3"], "--test, --seed set the comparison report's options; pass --report FILE"),
])
def test_evaluate_report_options_fail_before_any_file_is_read(args, message, tmp_path):
    res = CliRunner().invoke(cli, ["evaluate", "--run", str(tmp_path / "missing.run"), "--qrels",
                                   str(tmp_path / "missing.qrels"), *args])
    assert res.exit_code == 2
    assert res.output.startswith(f"uncertank evaluate: {message}")


def test_evaluate_report_unknown_baseline(tmp_path):
    res = CliRunner().invoke(cli, ["evaluate", "--run", str(COVID_RUNS[0]), "--run", str(COVID_RUNS[1]),
                                   "--qrels", str(COVID_QRELS), "--report", str(tmp_path / "t.md"),
                                   "--baseline", "nope"])
    assert res.exit_code == 2 and "--report: baseline must be one of the systems" in res.output
    assert not (tmp_path / "t.md").exists()
