"""The report writer and the analysis behind it, on synthetic StudyResults (made-up numbers, not results)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from uncertank.experiment.analysis import (
    best_rankers,
    compare_to_reference,
    higher_is_better,
    metric_labels,
    reference_ranker,
    relative_change,
    significance,
)
from uncertank.experiment.report import markdown_table, write_report
from uncertank.experiment.result import (
    BayesOutcome,
    Curve,
    Evaluation,
    NotaOutcome,
    RiskOutcome,
    SelectiveOutcome,
    StepInfo,
    StudyResult,
)
from uncertank.formatting import format_number, format_pvalue

CONDITIONS = ["in-domain", "cross-NS random", "cross-domain chitchat"]
METRIC_INFO = {
    "R@1": {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False},
    "MAP": {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False},
    "plugin score": {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False},
    "ECE": {"kind": "calibration", "higher_is_better": False, "needs_probabilities": True},
    "ECE balanced": {"kind": "calibration", "higher_is_better": False, "needs_probabilities": True},
}
# ranker -> (probabilistic, stochastic, R@1 hit rate, ECE)
RANKERS = {
    "bm25": (False, False, 0.30, None),
    "bert": (True, False, 0.40, 0.20),
    "mc_dropout": (True, True, 0.70, 0.05),
    "ensemble": (True, True, 0.41, 0.30),
}


def make_result(*, seed: int = 0, n_queries: int = 60, smoke: bool = False, rankers: dict | None = None,
                bayes_figure_dir: Path | None = None) -> StudyResult:
    """A synthetic study: per-query hits drawn with the rates in ``RANKERS`` (shared noise keeps pairs close)."""
    rng = np.random.default_rng(seed)
    rankers = RANKERS if rankers is None else rankers
    base = rng.random((len(CONDITIONS), n_queries))
    evaluations = []
    for name, (prob, stoch, rate, ece) in rankers.items():
        for ci, cond in enumerate(CONDITIONS):
            shift = 0.1 * ci
            hits = (base[ci] < max(rate - shift, 0.05)).astype(float)
            ap = np.clip(hits * 0.8 + rng.random(n_queries) * 0.2, 0, 1)
            plugin = np.clip(hits * 0.5 + 0.25, 0, 1)
            metrics = {"R@1": float(hits.mean()), "MAP": float(ap.mean()), "plugin score": float(plugin.mean())}
            per_query = {"R@1": hits.tolist(), "MAP": ap.tolist(), "plugin score": plugin.tolist()}
            ev = Evaluation(name, cond, prob, stoch, metrics, per_query)
            if prob:
                ev.metrics["ECE"] = ece + 0.05 * ci
                ev.metrics["ECE balanced"] = ece * 1.5 + 0.05 * ci
                ev.recalibrated = {
                    "platt": {"ECE": ev.metrics["ECE"] * 0.5, "ECE balanced": ev.metrics["ECE balanced"] * 0.9},
                    "isotonic": {"ECE": ev.metrics["ECE"] * 0.7, "ECE balanced": ev.metrics["ECE balanced"] * 0.8},
                }
                conf = [0.05, 0.25, 0.55, 0.85]
                ev.reliability = Curve(conf, [max(c - ece, 0.0) for c in conf], [900, 300, 60, 12])
                ev.imbalance = {k: (ece or 0) * (1 + 0.2 * k) for k in range(1, 10)}
            if stoch:
                grid = [0.0, 0.1, 0.5, 1.0]
                ev.risk = RiskOutcome(b=0.1 if name == "mc_dropout" else 0.0,
                                      valid_curve={b: 0.4 + 0.01 * (b == 0.1) for b in grid},
                                      test_curve={b: metrics["R@1"] + 0.02 * (b == 0.1) for b in grid},
                                      r1_mean=metrics["R@1"],
                                      r1_risk_aware=metrics["R@1"] + 0.02 * (name == "mc_dropout"),
                                      p_value=0.003 if name == "mc_dropout" else None)
            cov = np.linspace(0.1, 1.0, 10)
            risk = (1 - rate) * cov
            ev.selective = SelectiveOutcome("probability" if prob else "margin", cov.tolist(), risk.tolist(),
                                            float(np.trapezoid(risk, cov)), 0.05)
            if prob and ci == 0:
                ev.nota = (NotaOutcome(0.6, 0.02, 0.66, 0.03, 0.004) if stoch else NotaOutcome(0.58, 0.02))
            if stoch:
                ev.mean_std = 0.05
            evaluations.append(ev)
    bayes = {}
    for fam in ("gaussian", "zoib"):
        figures = []
        if bayes_figure_dir is not None:
            from matplotlib.figure import Figure

            fig = Figure(figsize=(3, 2))
            fig.add_subplot().plot([0, 1], [0, 1])
            (bayes_figure_dir / "figures").mkdir(parents=True, exist_ok=True)
            fig.savefig(bayes_figure_dir / "figures" / f"bayes-{fam}-ppc.png")
            figures = [f"figures/bayes-{fam}-ppc.png"]
        effects = [{"system": f"run{i}", "mean": 0.1 * i - 0.5, "lower": 0.1 * i - 0.7, "upper": 0.1 * i - 0.3}
                   for i in range(12)]
        converged = fam == "gaussian"  # the zoib fit failed its checks: no verdict from it
        bayes[fam] = BayesOutcome(fam, 12, 7 if converged else None, 6 if converged else None, converged,
                                  {"max_rhat": 1.004 if fam == "gaussian" else 1.08, "min_ess_bulk": 812.0,
                                   "divergences": 0 if fam == "gaussian" else 3,
                                   "problems": [] if fam == "gaussian" else ["r-hat above 1.01"]},
                                  effects, {"credibly riskier than run0 (r=1)": 4}, figures)
    steps = {"data": StepInfo("a1b2c3", 1.5), "fit bert": StepInfo("d4e5f6", 612.25, resumed=True),
             "bayes gaussian": StepInfo("0719ab", 30.0)}
    config = {"name": "synthetic study", **({"reference": "bert"} if "bert" in rankers else {})}
    result = StudyResult(config=config,
                         sizes={"train": 500, "valid": 100, "test": dict.fromkeys(CONDITIONS, n_queries)},
                         metric_info=METRIC_INFO, evaluations=evaluations, bayes=bayes, steps=steps, smoke=smoke)
    return replace(result, significance=significance(result))  # the study's last stage, as run_study runs it


def _table(md: str, header_start: str) -> list[list[str]]:
    """The rows (cells) of the first Markdown table whose header starts with ``header_start``."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return [rows[0], *rows[2:]]


# --------------------------------------------------------------------------- formatting


def test_numbers_print_as_integers_or_with_significant_decimals():
    assert format_number(200) == "200" and format_number(np.int64(7)) == "7"
    assert format_number(0.412345) == "0.4123"
    assert format_number(0.00312345) == "0.00312"
    assert format_number(12.3456) == "12.346" and format_number(612.25) == "612.2"
    assert format_number(float("nan")) == "n/a" and format_number(None) == "–"
    assert format_pvalue(0.0123) == "0.012" and format_pvalue(4.2e-6) == "4.2e-06"


def test_markdown_table_keeps_integers_and_order():
    text = markdown_table([{"a": 0.123456, "n": 3}, {"a": 2.0, "n": 10, "b": "y"}])
    assert text.splitlines() == ["| a | n | b |", "|---|---|---|", "| 0.1235 | 3 |  |", "| 2.000 | 10 | y |"]
    assert markdown_table([]) == "(none)\n"


# --------------------------------------------------------------------------- analysis


def test_reference_is_the_studys_else_the_first_ranker():
    assert reference_ranker(make_result()) == "bert"  # the config's reference
    no_bert = {k: v for k, v in RANKERS.items() if k != "bert"}
    assert reference_ranker(make_result(rankers=no_bert)) == "bm25"  # none recorded: the first ranker
    only_bm25 = make_result(rankers={"bm25": RANKERS["bm25"]})
    assert reference_ranker(only_bm25) == "bm25"
    assert compare_to_reference(only_bm25, CONDITIONS, ["R@1"]) == []
    stale = make_result()
    stale.config["reference"] = "gone"
    with pytest.raises(ValueError, match="reference must be one of its rankers"):
        reference_ranker(stale)


def test_metric_labels_and_best_follow_metric_info():
    result = make_result()
    assert metric_labels(result, "ranking") == ["R@1", "MAP", "plugin score"]
    assert metric_labels(result, "calibration") == ["ECE", "ECE balanced"]
    assert not higher_is_better(result, "ECE") and higher_is_better(result, "R@1")
    in_dom = [e for e in result.evaluations if e.condition == CONDITIONS[0]]
    assert best_rankers(result, CONDITIONS[0], "R@1") == [max(in_dom, key=lambda e: e.metrics["R@1"]).ranker]
    probs = [e for e in in_dom if "ECE" in e.metrics]
    assert best_rankers(result, CONDITIONS[0], "ECE") == [min(probs, key=lambda e: e.metrics["ECE"]).ranker]


def test_comparisons_match_scipy_ttest_and_a_hand_written_holm():
    result = make_result(seed=3)
    comps = compare_to_reference(result, CONDITIONS[1:], ["R@1", "MAP", "ECE"])
    tested = [c for c in comps if c.p_value is not None]
    assert {c.metric for c in comps if c.p_value is None} == {"ECE"}  # pooled metric: no per-query values
    raw = []
    for c in tested:
        a = result.evaluation(c.ranker, c.condition).per_query[c.metric]
        b = result.evaluation("bert", c.condition).per_query[c.metric]
        p = 1.0 if a == b else sps.ttest_rel(a, b).pvalue
        raw.append(1.0 if math.isnan(p) else p)
        assert c.p_value == pytest.approx(raw[-1], rel=1e-9)
        assert c.change == pytest.approx(100 * (c.value - c.reference_value) / abs(c.reference_value))
    m = len(raw)
    order = sorted(range(m), key=lambda i: raw[i])
    holm, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * raw[i]))
        holm[i] = running
    for c, h in zip(tested, holm, strict=True):
        assert c.p_adjusted == pytest.approx(h, rel=1e-9)
        assert c.significant == (h < 0.05)
    ece = [c for c in comps if c.metric == "ECE"]
    assert all(c.better == (c.value < c.reference_value) for c in ece)  # lower ECE is better
    assert relative_change(1.0, 0.0) is None


def test_a_relative_change_too_large_for_a_float_is_none_and_a_non_number_is_named():
    assert relative_change(1e308, 0.5) is None
    assert relative_change(0.44, 0.40) == pytest.approx(10.0)
    with pytest.raises(TypeError, match=r"^value must be a number; got str '0.4'$"):
        relative_change("0.4", 0.5)


def test_per_query_values_with_nan_are_not_tested():
    result = make_result()
    result.evaluation("ensemble", CONDITIONS[0]).per_query["R@1"][3] = float("nan")
    comps = {c.ranker: c for c in compare_to_reference(result, CONDITIONS[:1], ["R@1"])}
    assert comps["ensemble"].p_value is None and not comps["ensemble"].significant
    assert comps["mc_dropout"].p_value is not None


def test_analysis_errors_name_the_argument():
    result = make_result()
    with pytest.raises(ValueError, match="kind must be one of"):
        metric_labels(result, "speed")  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="'nope' is not in this study's metric_info"):
        higher_is_better(result, "nope")
    with pytest.raises(ValueError, match="alpha must lie in"):
        compare_to_reference(result, CONDITIONS, ["R@1"], alpha=1.5)
    with pytest.raises(ValueError, match="reference must be one of"):
        compare_to_reference(result, CONDITIONS, ["R@1"], reference="nobody")


# --------------------------------------------------------------------------- the report


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    result = make_result(bayes_figure_dir=out)
    write_report(result, out)
    return result, out


def test_writes_every_file_atomically_and_results_round_trip(written):
    result, out = written
    for name in ("results.json", "report.md", "report.html"):
        assert (out / name).stat().st_size > 500
    back = StudyResult.from_dict(json.loads((out / "results.json").read_text()))
    assert back == result
    assert not list(out.glob("**/*.tmp"))
    pngs = sorted((out / "figures").glob("*.png"))
    names = {p.name for p in pngs}
    assert {"reliability.png", "ece-imbalance.png", "risk-r1-vs-b.png", "risk-coverage.png",
            "bayes-system-effects.png"} <= names
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_metric_label_and_section_is_in_the_report(written):
    result, out = written
    md = (out / "report.md").read_text()
    for label in result.metric_info:
        assert f"`{label}`" in md
    for heading in ("In-domain effectiveness and calibration", "Cross negative sampling and cross-domain",
                    "Recalibration", "Risk-aware reranking", "NOTA prediction", "Selective prediction",
                    "Reliability diagrams", "ECE against the imbalance ratio", "Bayesian comparison of systems",
                    "Timings and cache keys"):
        assert f"## {heading}" in md
    assert "Warning" not in md  # not a smoke run


def test_in_domain_table_bolds_the_best_per_column(written):
    result, out = written
    rows = _table((out / "report.md").read_text(), "| ranker | `R@1`")
    header = rows[0]
    for j, col in enumerate(header[1:], start=1):
        label = col.strip("`")
        values = {e.ranker: e.metrics[label] for e in result.evaluations
                  if e.condition == CONDITIONS[0] and label in e.metrics}
        target = max(values.values()) if METRIC_INFO[label]["higher_is_better"] else min(values.values())
        for row in rows[1:]:
            ranker = row[0].strip("`")
            if ranker not in values:
                assert row[j] == "–"
                continue
            assert row[j].startswith("**") == (values[ranker] == target), (label, ranker, row[j])


def test_shifted_tables_show_change_and_markers_from_the_tests(written):
    result, out = written
    md = (out / "report.md").read_text()
    labels = [m for m in METRIC_INFO]
    comps = {(c.condition, c.ranker, c.metric): c for c in compare_to_reference(result, CONDITIONS[1:], labels)}
    assert any(c.significant for c in comps.values()) and not all(c.significant for c in comps.values())
    for cond in CONDITIONS[1:]:
        section = md[md.index(f"### Condition `{cond}`"):]
        rows = _table(section, "| ranker")
        header = [c.strip("`") for c in rows[0]]
        for row in rows[1:]:
            ranker = row[0].strip("`")
            for j, label in enumerate(header[1:], start=1):
                c = comps.get((cond, ranker, label))
                if ranker == "bert" or c is None:
                    assert "%" not in row[j]
                    continue
                assert f"({c.change:+.1f}%)" in row[j]
                assert row[j].rstrip("*").endswith("†") == c.significant
    assert "Holm-corrected" in md


@pytest.mark.slow  # writes two whole reports with their figures
def test_sentences_follow_the_numbers(tmp_path):
    md = _write_md(make_result(), tmp_path / "a")
    first = _paragraph_after(md, "## In-domain effectiveness and calibration")
    assert "`mc_dropout` ranks best by `R@1`" in first
    assert "By `ECE`, `mc_dropout` is best calibrated" in first
    assert "`mc_dropout` is better calibrated than `bert` (0.2000)" in first
    # Swap the numbers: now the ensemble is the better calibrated one and bm25 ranks best.
    swapped = dict(RANKERS, ensemble=(True, True, 0.41, 0.01), mc_dropout=(True, True, 0.2, 0.25),
                   bm25=(False, False, 0.9, None))
    md2 = _write_md(make_result(rankers=swapped), tmp_path / "b")
    first2 = _paragraph_after(md2, "## In-domain effectiveness and calibration")
    assert "`bm25` ranks best by `R@1`" in first2 and "significantly above `bert`: `bm25`" in first2
    assert "By `ECE`, `ensemble` is best calibrated" in first2
    assert "`ensemble` is better calibrated than `bert`" in first2 and "`mc_dropout` is better" not in first2
    nota = _paragraph_after(md, "## NOTA prediction")
    assert "raises F1 for 2 of 2 stochastic rankers, significantly (p < 0.05) for `mc_dropout` and `ensemble`" in nota


def test_smoke_run_shows_a_warning_first(tmp_path):
    write_report(make_result(smoke=True, n_queries=10), tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert md.index("> **Warning.** This is a smoke run") < md.index("## In-domain")
    assert '<div class="warning" role="alert">' in (tmp_path / "report.html").read_text()


def test_html_is_self_contained_with_contents_and_anchors(written):
    _, out = written
    page = (out / "report.html").read_text()
    anchors = re.findall(r'<h[23] id="([^"]+)"', page)
    assert len(anchors) == len(set(anchors)) >= 10
    for a in re.findall(r'<nav class="toc">.*?</nav>', page, flags=re.S)[0].split('href="#')[1:]:
        assert a.split('"')[0] in anchors
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<script" not in page
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert len(srcs) == len(list((out / "figures").glob("*.png")))
    assert all((out / s).is_file() for s in srcs)
    assert "<figcaption>Figure 1." in page


def test_timings_bayes_and_risk_tables_hold_the_result(written):
    result, out = written
    md = (out / "report.md").read_text()
    steps = _table(md, "| step |")
    assert steps[1:] == [[f"`{n}`", f"{s.seconds:.1f}", "yes" if s.resumed else "no", f"`{s.key}`"]
                         for n, s in result.steps.items()]
    bayes = _table(md, "| family | systems")
    assert bayes[0][5:] == ["largest R-hat", "smallest bulk ESS", "divergent transitions"]  # labels, not field names
    assert "`zoib`, problems: r-hat above 1.01." in md and "`gaussian`, problems" not in md
    assert bayes[1][1:6] == ["12", "7", "6", "yes", "1.004"] and bayes[2][4] == "**no**" and bayes[2][7] == "3"
    assert bayes[2][2:4] == ["no verdict", "no verdict"]
    assert ("with `zoib`, **no verdict**: the fit failed its convergence checks (r-hat above 1.01) after 1 fit; "
            "sample more" in md)
    assert "with `gaussian`, 7 of 12 systems are credibly different from the best and 6 from the worst" in md
    assert "figures/bayes-zoib-ppc.png" in md
    risk = _table(md, "| condition | ranker | b |")
    mc = [r for r in risk[1:] if r[1] == "`mc_dropout`"]
    assert len(mc) == len(CONDITIONS) and all(r[5] == "+0.0200†" and r[6] == "0.003" for r in mc)
    holm = {(t.ranker, t.condition): t for t in result.significance.risk}
    assert all(r[7] == f"{holm[('mc_dropout', r[0].strip('`'))].p_adjusted:.3f}" == "0.009" for r in mc)


def test_write_report_rejects_a_dict(tmp_path):
    with pytest.raises(TypeError, match="result must be a StudyResult"):
        write_report({"config": {}}, tmp_path)  # type: ignore[arg-type]


def test_a_study_without_stochastic_or_probabilistic_rankers_still_reports(tmp_path):
    result = make_result(rankers={"bm25": RANKERS["bm25"], "tfidf": (False, False, 0.25, None)})
    result.bayes = {}
    write_report(result, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "risk-aware reranking (Penha & Hauff 2021, eq. 7) was not run" in md
    assert "No ranker's scores are probabilities" in md
    assert "Bayesian" not in md


def _write_md(result: StudyResult, out: Path) -> str:
    write_report(result, out)
    return (out / "report.md").read_text()


def _paragraph_after(md: str, heading: str) -> str:
    rest = md[md.index(heading) + len(heading):].strip()
    return rest.split("\n\n")[0]


# --------------------------------------------------------------------------- calibration read with discrimination

DEFAULT_METRIC_INFO = {
    "R@1": ("ranking", "recall_at_k", {"k": 1}), "R@2": ("ranking", "recall_at_k", {"k": 2}),
    "R@5": ("ranking", "recall_at_k", {"k": 5}), "MAP": ("ranking", "map", {}), "MRR": ("ranking", "mrr", {}),
    "nDCG@10": ("ranking", "ndcg", {"k": 10}), "ECE": ("calibration", "ece", {}),
    "ECE quantile": ("calibration", "ece", {"strategy": "quantile"}),
    "ECE balanced": ("calibration", "ece", {"balanced": True, "seed": 0}),
    "ECE Penha-Hauff": ("calibration", "ece", {"convention": "penha-hauff"}), "MCE": ("calibration", "mce", {}),
    "Brier": ("calibration", "brier", {}), "NLL": ("calibration", "nll", {}),
}


def make_full_result(*, seed: int = 0, n_rankers: int = 7, constant: bool = False,
                     n_candidates: int | None = 10) -> StudyResult:
    """A synthetic study with every default metric of a study (thirteen columns), as the runner labels them.

    MAP equals MRR in every row (one relevant candidate per list). With
    ``constant``, the ranker ``base_rate`` scores every pair 0.1 (the base
    rate of lists of 10) and ``half`` every pair 0.5: both rank at chance
    (R@1 0.1); ``base_rate`` has the lowest ECE, ``half`` the lowest
    balanced ECE (its classes balanced, 0.5 is their base rate).
    """
    from uncertank.experiment.result import CalibrationDetail

    names = ["bm25", "bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr", "bert lists"][:n_rankers]
    rankers: dict[str, tuple[bool, bool, float, float | None]] = {
        n: (n != "bm25", n in ("mc_dropout", "ensemble"), 0.3 + 0.05 * i, 0.1 + 0.03 * i) for i, n in enumerate(names)}
    rankers["bm25"] = RANKERS["bm25"]
    if constant:
        rankers |= {"base_rate": (True, False, 0.1, 0.0), "half": (True, False, 0.1, 0.4)}
    base = make_result(seed=seed, rankers=rankers)
    info = {label: {"kind": kind, "higher_is_better": kind == "ranking", "needs_probabilities": kind != "ranking",
                    "name": name, "options": opts} for label, (kind, name, opts) in DEFAULT_METRIC_INFO.items()}
    rng = np.random.default_rng(seed)
    evs = []
    for e in base.evaluations:
        hits = np.asarray(e.per_query["R@1"])
        rr = np.where(hits == 1, 1.0, rng.choice([0.5, 1 / 3, 0.25, 0.1], size=hits.size))
        if e.ranker in ("base_rate", "half"):
            hits = (np.arange(hits.size) % 10 == 0).astype(float)  # R@1 = 0.1 exactly: chance
            rr = np.where(hits == 1, 1.0, 0.15)
        pq = {"R@1": hits, "R@2": np.maximum(hits, rr >= 0.5), "R@5": np.maximum(hits, rr >= 0.2),
              "MAP": rr, "MRR": rr, "nDCG@10": np.clip(rr * 1.1, 0, 1)}
        per_query = {k: np.asarray(v, dtype=float).tolist() for k, v in pq.items()}
        metrics = {k: float(np.mean(v)) for k, v in per_query.items()}
        detail = None
        if e.probabilistic:
            ece = e.metrics["ECE"]
            metrics |= {"ECE": ece, "ECE quantile": ece * 1.02, "ECE balanced": e.metrics["ECE balanced"],
                        "ECE Penha-Hauff": ece / 50, "MCE": 0.3 + ece, "Brier": 0.08 + ece / 4, "NLL": 0.3 + ece}
            detail = CalibrationDetail(bias=ece / 2, over_bins=3, filled_bins=4, mce_all=0.3 + ece, mce_min_count=50,
                                       mce=0.2 + ece if e.ranker != "bert" else 0.3 + ece)
            if e.ranker == "base_rate":
                metrics |= {"ECE": 0.0012, "ECE quantile": 0.0012, "ECE balanced": 0.4, "ECE Penha-Hauff": 0.00002,
                            "MCE": 0.0012, "Brier": 0.09, "NLL": 0.325}
                detail = CalibrationDetail(0.0012, 1, 1, 0.0012, 50, 0.0012)
                e.reliability = Curve([0.1], [0.0988], [600])
            elif e.ranker == "half":
                metrics |= {"ECE": 0.4, "ECE quantile": 0.4, "ECE balanced": 0.0006, "ECE Penha-Hauff": 0.008,
                            "MCE": 0.4, "Brier": 0.25, "NLL": 0.693}
                detail = CalibrationDetail(0.4, 1, 1, 0.4, 50, 0.4)
                e.reliability = Curve([0.5], [0.1], [600])
        evs.append(replace(e, metrics=metrics, per_query=per_query, calibration=detail))
    config = {**base.config} | ({"n_candidates": n_candidates} if n_candidates else {})
    full = replace(base, metric_info=info, evaluations=evs, config=config)
    return replace(full, significance=significance(full))


def _bold(row: list[str], j: int) -> bool:
    return row[j].startswith("**")


def _tables_after(md: str, title: str) -> list[list[str]]:
    """The rows of the table under the bold title line ``**title**``."""
    return _table(md[md.index(f"**{title}**"):], "| ranker")


@pytest.mark.slow  # two whole reports
def test_a_constant_predictor_is_never_called_best_calibrated(tmp_path):
    md = _write_md(make_full_result(n_rankers=4, constant=True), tmp_path / "a")
    rows = _tables_after(md, "Calibration, `in-domain`")
    header = [c.strip("`") for c in rows[0]]
    by = {r[0].strip("`"): r for r in rows[1:]}
    ece, bal = header.index("ECE"), header.index("ECE balanced")
    assert by["base_rate"][ece] == "0.0012" and not _bold(by["base_rate"], ece)  # the lowest ECE, not bold
    assert by["half"][bal] == "0.0006" and not _bold(by["half"], bal)  # the lowest balanced ECE, not bold
    assert _bold(by["bert"], ece) and _bold(by["bert"], bal)  # the best of the rankers that rank
    first = _paragraph_after(md, "## In-domain effectiveness and calibration")
    assert "By `ECE`, `bert` is best calibrated of the rankers that rank better than chance" in first
    assert "`base_rate` is best" not in first and "`base_rate` are best" not in first
    assert ("`base_rate` (`ECE` 0.0012) is not named: it ranks no better than chance (`R@1` 0.1000, chance "
            "0.1000: 1/10 with one relevant among 10 candidates) and scores every pair in one bin") in first
    assert "its `ECE` is low because it predicts about the base rate (mean score minus fraction relevant: +0.0012)" \
        in first
    assert "`half` (`ECE` 0.4000) is not named" in first
    note = next(line for line in md.splitlines() if line.startswith("`base_rate` (`ECE` 0.0012) is never in bold"))
    assert "predicts about the base rate" in note
    recal = _table(md, "| condition | ranker | scores")
    for row in recal[1:]:
        if row[1] in ("`base_rate`", "`half`"):
            assert not any(c.startswith("**") for c in row[3:]), row
    assert "Never in bold: `base_rate` under `in-domain`" in md
    # The same numbers without a list length or the one-bin detail: nothing says it is at chance, and the
    # constant predictor is named (the gate above is what keeps it out).
    bare = make_full_result(n_rankers=4, constant=True, n_candidates=None)
    bare = replace(bare, evaluations=[replace(e, calibration=None, reliability=None) for e in bare.evaluations])
    first2 = _paragraph_after(_write_md(bare, tmp_path / "b"), "## In-domain effectiveness and calibration")
    assert "By `ECE`, `base_rate` is best calibrated" in first2


def test_chance_level_follows_the_studys_metrics_and_list_length():
    from uncertank.experiment.report.chance import chance_level, set_aside

    result = make_full_result(n_rankers=3, constant=True)
    level = chance_level(result)
    assert level is not None and (level.label, level.value) == ("R@1", 0.1)
    assert set(set_aside(result, CONDITIONS[0])) == {"base_rate", "half"}
    no_r = replace(result, metric_info={k: v for k, v in result.metric_info.items() if not k.startswith("R@")})
    mrr = chance_level(no_r)
    assert mrr is not None and mrr.label == "MRR" and mrr.value == pytest.approx(sum(1 / r for r in range(1, 11)) / 10)
    assert chance_level(replace(result, config={})) is None
    r2 = replace(result, metric_info={**result.metric_info,
                                      "R_2@1": {**result.metric_info["R@1"], "options": {"k": 1, "n": 2}}})
    assert chance_level(r2) == level  # R@1 of lists of 10 comes first: the smallest k, then the order


def test_notes_say_map_equals_mrr_and_where_the_mce_comes_from(tmp_path):
    result = make_full_result(n_rankers=4)
    md = _write_md(result, tmp_path / "a")
    in_domain = md[md.index("## In-domain"):md.index("## Cross negative")]
    assert "`MAP` equals `MRR` in every row" in in_domain
    # bert's MCE is its largest gap over bins of 50 pairs; the other two probabilistic rankers' come from smaller bins
    assert ("`MCE` takes the largest gap of any bin, however few pairs it holds: for 2 of the 3 rankers here it "
            "comes from a bin of fewer than 50 pairs") in in_domain
    # One row where MAP and MRR differ: no note.
    evs = list(result.evaluations)
    i = next(i for i, e in enumerate(evs) if e.ranker == "bert" and e.condition == CONDITIONS[0])
    evs[i] = replace(evs[i], metrics={**evs[i].metrics, "MAP": evs[i].metrics["MAP"] + 0.01})
    md2 = _write_md(replace(result, evaluations=evs), tmp_path / "b")
    in_domain2 = md2[md2.index("## In-domain"):md2.index("## Cross negative")]
    assert "equals `MRR`" not in in_domain2


def test_every_metric_column_is_defined_under_its_table_and_in_its_tooltip(tmp_path):
    result = make_full_result(n_rankers=3)
    out = tmp_path / "r"
    md = _write_md(result, out)
    page = (out / "report.html").read_text()
    in_domain = md[md.index("## In-domain"):md.index("## Cross negative")]
    for label in DEFAULT_METRIC_INFO:
        assert re.search(rf"`{re.escape(label)}`: [a-zA-Z]", in_domain), label
        assert re.search(rf'<th title="[^"]+"><code>{re.escape(label)}</code></th>', page), label
    assert "about 50x smaller than `ECE`" in in_domain and "Penha &amp; Hauff's released code (EACL 2021)" in page
    # effectiveness and calibration are two tables; every condition has both
    for cond in CONDITIONS:
        assert f"**Effectiveness, `{cond}`**" in md and f"**Calibration, `{cond}`**" in md
    assert max(len(r) for r in _tables_after(md, "Calibration, `in-domain`")) == 1 + 7


def test_more_than_eight_columns_are_split_into_tables_of_equal_width(tmp_path):
    result = make_result()
    extra = [f"plugin metric {i}" for i in range(12)]
    info = {**result.metric_info, **{m: {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False}
                                     for m in extra}}
    evs = [replace(e, metrics={**e.metrics, **dict.fromkeys(extra, 0.5)}) for e in result.evaluations]
    md = _write_md(replace(result, metric_info=info, evaluations=evs), tmp_path)
    first, second = (_tables_after(md, f"Effectiveness, `in-domain` ({i} of 2)") for i in (1, 2))
    assert (len(first[0]), len(second[0])) == (1 + 8, 1 + 7)  # 15 ranking columns: 8 and 7, and the ranker
    assert "`plugin metric 11`" in second[0]


def test_figures_link_to_their_full_size_file_and_are_not_too_wide(written):
    _, out = written
    page = (out / "report.html").read_text()
    figures = re.findall(r"<figure>(.*?)</figure>", page, flags=re.S)
    assert len(figures) >= 5
    for fig in figures:
        src = re.findall(r'<img src="([^"]+)"', fig)[0]
        assert f'<a href="{src}"' in fig.split("<img")[0]  # the image itself is the link
    for png in (out / "figures").glob("*.png"):
        width = int.from_bytes(png.read_bytes()[16:20], "big")
        assert width <= 1150, (png.name, width)  # shown unscaled in a 1,280 px window
