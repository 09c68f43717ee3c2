"""A study's report has "A paper's table": compare_runs on the study's own per-query values, and table.tex."""

from __future__ import annotations

import json
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest

from uncertank import CallableRanker, ComparisonReport, compare_runs, hookimpl
from uncertank.experiment import ConditionConfig, RankerConfig, ReportConfig, StudyConfig, StudyConfigError, run_study
from uncertank.experiment.config import BayesConfig, load_config
from uncertank.experiment.report import render_report, write_report
from uncertank.experiment.result import BayesOutcome, StudyResult
from uncertank.experiment.table import paper_table
from uncertank.plugins import get_plugin_manager

_KEYS = ("systems", "metrics", "means", "pairs", "n_queries", "query_ids", "dropped", "baseline", "test",
         "correction", "family", "alpha", "n_resamples", "seed")


def _overlap(context, candidates):
    last = set(context[-1].lower().split())
    return [len(last & set(c.lower().split())) / (2 + len(set(c.lower().split()))) for c in candidates]


@hookimpl
def uncertank_rankers():
    return {"overlap": lambda: CallableRanker(_overlap, name="overlap")}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small study: bm25 (the reference, scores not probabilities) and overlap (probabilities), two conditions."""
    pytest.importorskip("bm25s")
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("paper_table_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="paper-table-rankers")
    out = tmp_path_factory.mktemp("paper-table") / "out"
    try:
        config = StudyConfig(
            name="tiny table", train_dataset="ubuntu-sample",
            conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),
                        ConditionConfig("cross-NS random", "ubuntu-sample", "random")),
            rankers=(RankerConfig("bm25"), RankerConfig("overlap")),
            max_train_queries=20, max_valid_queries=30, max_test_queries=40, risk_grid=(0.0,), nota=False,
            bayes=BayesConfig(enabled=False),
        )
        result = run_study(config, out)
    finally:
        get_plugin_manager(refresh=True)
    return out, result


@pytest.mark.slow
def test_a_studys_report_has_the_table_and_its_latex(tiny):
    out, result = tiny
    md = (out / "report.md").read_text()
    assert "## A paper's table" in md and "[A paper's table](#a-paper-s-table)" in md
    stored = json.loads((out / "results.json").read_text())["paper_table"]
    assert stored["condition"] == "in-domain" and stored["left_out"] == []
    rep = ComparisonReport.from_dict(stored["report"])
    assert (out / "table.tex").read_text() == rep.to_latex(label="tab:tiny-table")
    assert "\\toprule" in (out / "table.tex").read_text()
    html = (out / "report.html").read_text()
    assert 'id="a-paper-s-table"' in html
    # bm25 gives no probabilities: a dash in its calibration cells; overlap's are its study values
    assert rep.calibration_metrics == ["ECE", "Brier"] and set(rep.calibration) == {"overlap"}
    ev = result.evaluation("overlap", "in-domain")
    for c in rep.calibration_metrics:
        assert rep.calibration["overlap"][c]["value"] == pytest.approx(ev.metrics[c], abs=1e-12)
    # re-rendered from the folder alone: the same bytes
    before = {f: (out / f).read_bytes() for f in ("report.md", "report.html", "table.tex")}
    render_report(out)
    assert {f: (out / f).read_bytes() for f in before} == before


@pytest.mark.slow
def test_the_table_is_compare_runs_on_the_studys_per_query_values(tiny):
    out, _ = tiny
    document = json.loads((out / "results.json").read_text())
    result = StudyResult.from_dict(document)
    stored = document["paper_table"]["report"]
    evs = [result.evaluation(r, "in-domain") for r in result.rankers]
    metrics = stored["metrics"]
    assert metrics == [m for m, info in result.metric_info.items() if info["kind"] == "ranking"]
    direct = compare_runs({ev.ranker: {m: ev.per_query[m] for m in metrics} for ev in evs}, metrics=metrics,
                          baseline="bm25", test="t", correction="holm", family="table", n_resamples=10_000,
                          seed=0, alpha=0.05).to_dict()
    assert {k: stored[k] for k in _KEYS} == {k: direct[k] for k in _KEYS}


@pytest.mark.slow
def test_by_default_the_tables_marks_are_the_in_domain_sections_marks(tiny):
    _, result = tiny
    rep = ComparisonReport.from_dict(result.paper_table.report)
    pairs = {(p.system, p.metric): p for p in rep.pairs}
    tested = [c for c in result.significance.tables["in-domain"] if c.p_value is not None]
    assert tested
    for c in tested:
        p = pairs[(c.ranker, c.metric)]
        assert p.pvalue == pytest.approx(c.p_value, rel=1e-9)
        assert p.pvalue_adjusted == pytest.approx(c.p_adjusted, rel=1e-9)
        assert p.significant == c.significant


def _synthetic() -> StudyResult:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from test_report import make_full_result
    finally:
        sys.path.pop(0)
    return make_full_result(n_rankers=3)


def _rows(result: StudyResult, shift: float) -> list[dict]:
    ref = result.config["reference"]
    return [{"system": r, "diff_mean": 0.1, "diff_lower": 0.0, "diff_upper": 0.2, "p_better": 0.9 - shift,
             "verdict": "better"} for r in result.rankers if r != ref]


def test_the_bayesian_verdicts_sit_beside_from_the_first_converged_fit_of_the_first_condition(tmp_path):
    result = _synthetic()
    ref, cond = result.config["reference"], result.conditions[0]
    failed = BayesOutcome("gaussian", 3, None, None, False, {"problems": ["R-hat"]}, systems="study",
                          condition=cond, metric="MAP", baseline=ref)
    run = {"system": "a run", "diff_mean": 0.0, "diff_lower": -0.1, "diff_upper": 0.1, "p_better": 0.5,
           "verdict": "not distinguishable"}
    rows = [*_rows(result, 0.0), run]
    good = BayesOutcome("zoib", 4, 1, 1, True, {}, systems="study", condition=cond, metric="MAP", baseline=ref,
                        against_baseline=rows)
    other = BayesOutcome("gaussian", 3, 1, 1, True, {}, systems="study", condition=result.conditions[1],
                         metric="MAP", baseline=ref, against_baseline=_rows(result, 0.3))
    result = replace(result, bayes={"gaussian in": failed, "zoib in": good, "gaussian other": other})
    table = paper_table(ReportConfig(test="randomization", resamples=200), result, probabilities={},
                        calibration_metrics=[], seed=3)
    assert table is not None and table.condition == cond
    rep = ComparisonReport.from_dict(table.report)
    evs = [result.evaluation(r, cond) for r in result.rankers]
    metrics = rep.metrics
    direct = compare_runs({ev.ranker: {m: ev.per_query[m] for m in metrics} for ev in evs}, metrics=metrics,
                          baseline=ref, test="randomization", correction="holm", family="table", n_resamples=200,
                          seed=3, bayes=rows[:-1], bayes_reference=ref, bayes_metric="MAP (zoib model)")
    assert table.report == direct.to_dict()
    assert set(rep.bayes) == set(result.rankers) - {ref}  # the external run's row is not a ranker of the table
    assert all(b["p_better"] == 0.9 for b in rep.bayes.values())
    write_report(replace(result, paper_table=table), tmp_path)
    md = (tmp_path / "report.md").read_text()
    section = md.split("## A paper's table")[1].split("\n## ")[0]
    assert "| P(better) | verdict |" in section and "the Bayesian comparison of MAP (zoib model)" in section
    assert "P(better)" in (tmp_path / "table.tex").read_text()


def test_a_result_without_a_table_says_so_and_leaves_no_table_tex(tmp_path):
    (tmp_path / "table.tex").write_text("an earlier study's table")
    write_report(_synthetic(), tmp_path)
    assert not (tmp_path / "table.tex").exists()
    md = (tmp_path / "report.md").read_text()
    assert "No comparison table" in md.split("## A paper's table")[1]


def test_one_ranker_gives_no_table():
    result = _synthetic()
    ref = result.config["reference"]
    alone = replace(result, evaluations=[e for e in result.evaluations if e.ranker == ref])
    assert paper_table(ReportConfig(), alone, probabilities={}, calibration_metrics=[], seed=0) is None


@pytest.mark.parametrize(("table", "error"), [
    ('test = "anova"', r"report\.test: must be one of 't', 'wilcoxon', 'randomization', 'bootstrap' or 'tukey'"),
    ('test = "tukey"\ncorrection = "holm"', r"report\.correction: 'holm' with test = \"tukey\""),
    ('test = "tukey"\nfamily = "table"', r"report\.family: \"table\" with test = \"tukey\""),
    ('correction = "fdr"', r"report\.correction: must be one of"),
    ("resamples = 0", r"report\.resamples: must be >= 1"),
    ('tests = "t"', r"report\.tests: unknown key; known: test, correction, family, resamples"),
])
def test_the_report_table_is_checked_at_the_door(tmp_path, table, error):
    path = tmp_path / "study.toml"
    path.write_text('[study]\ntrain_dataset = "ubuntu-sample"\n[[conditions]]\nname = "in"\n'
                    f'dataset = "ubuntu-sample"\n[[rankers]]\nname = "bm25"\n[report]\n{table}\n')
    with pytest.raises(StudyConfigError, match=error):
        load_config(path)


def test_the_report_options_resolve_as_compare_runs_takes_them():
    assert ReportConfig().options == {"test": "t", "correction": "holm", "family": "table", "n_resamples": 10_000}
    assert ReportConfig(test="tukey").options == {"test": "tukey", "correction": "none", "family": "metric",
                                                  "n_resamples": 10_000}
