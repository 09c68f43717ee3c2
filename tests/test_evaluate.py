"""`uncertank evaluate` and uncertank.evaluate against pytrec_eval on the bundled test files (tests/data)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.evaluate import EvaluationReport, evaluate_runs, parse_metric

pytrec_eval = pytest.importorskip("pytrec_eval")

DATA = Path(__file__).parent / "data"
COVID_RUNS = [DATA / f"trec-covid-r1.{s}.run" for s in ("BBGhelani1", "base.unipd.it", "BioinfoUA-emb")]
COVID_QRELS = DATA / "trec-covid-r1.qrels"
EDGE_RUNS = [DATA / "edge-a.run", DATA / "edge-b.run"]
EDGE_QRELS = DATA / "edge.qrels"

#: our metric entry -> pytrec_eval measure
PAIRS = [
    ("map", "map"),
    ({"name": "map", "k": 5}, "map_cut_5"),
    ("mrr", "recip_rank"),
    ({"name": "ndcg", "k": None}, "ndcg"),
    ({"name": "ndcg", "k": 5}, "ndcg_cut_5"),
    ({"name": "ndcg", "k": 10}, "ndcg_cut_10"),
    ({"name": "recall_at_k", "k": 1}, "success_1"),
    ({"name": "recall_at_k", "k": 5}, "success_5"),
    ({"name": "recall_at_k", "k": 10}, "success_10"),
]


def _parse(path: Path, n: int) -> list[list[str]]:
    """An independent reader: whitespace-split lines."""
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _pytrec(run: Path, qrels: Path) -> dict[str, dict[str, float]]:
    q: dict[str, dict[str, int]] = {}
    for qid, _, doc, rel in _parse(qrels, 4):
        q.setdefault(qid, {})[doc] = int(rel)
    r: dict[str, dict[str, float]] = {}
    for qid, _, doc, _, score, _ in _parse(run, 6):
        r.setdefault(qid, {})[doc] = float(score)
    measures = {m for _, m in PAIRS}
    return pytrec_eval.RelevanceEvaluator(q, measures).evaluate(r)


@pytest.mark.parametrize(("runs", "qrels"), [(COVID_RUNS, COVID_QRELS), (EDGE_RUNS, EDGE_QRELS)],
                         ids=["trec-covid", "edge"])
def test_every_metric_equals_pytrec_eval_per_query_and_mean(runs, qrels):
    report = evaluate_runs(runs, qrels, metrics=[e for e, _ in PAIRS])
    labels = report.ranking
    assert len(labels) == len(PAIRS)
    for run_path, scores in zip(runs, report.runs, strict=True):
        ref = _pytrec(run_path, qrels)
        assert sorted(scores.query_ids) == sorted(ref)  # the same queries are evaluated
        for label, (_, measure) in zip(labels, PAIRS, strict=True):
            ours = dict(zip(scores.query_ids, scores.per_query[label].tolist(), strict=True))
            for qid, values in ref.items():
                assert ours[qid] == pytest.approx(values[measure], abs=1e-12), (run_path.name, qid, measure)
            mean = np.mean([values[measure] for values in ref.values()])
            assert scores.summary[label] == pytest.approx(mean, abs=1e-12)


def test_edge_files_exercise_what_they_claim():
    ref = _pytrec(EDGE_RUNS[0], EDGE_QRELS)
    assert "q5" not in ref and "q4" not in ref and "q2" in ref  # unjudged run query, unretrieved judged query
    assert ref["q2"]["map"] == 0.0
    # q1: d2 and d1 tie at 5.0; trec_eval puts d2 first (descending doc id), so the relevant d1 is at rank 2
    assert ref["q1"]["recip_rank"] == 0.5
    report = evaluate_runs(EDGE_RUNS[:1], EDGE_QRELS)
    assert report.runs[0].query_ids == ["10", "9", "q1", "q2", "q3"]  # string order: not all ids are numbers
    # MAP of q1 divides by the 3 relevant documents of the qrels, d9 included (never retrieved)
    i = report.runs[0].query_ids.index("q1")
    assert report.runs[0].per_query["MAP"][i] == pytest.approx((1 / 2 + 2 / 3) / 3)


def test_significance_is_a_holm_corrected_paired_t_test():
    from scipy import stats

    report = evaluate_runs(COVID_RUNS, COVID_QRELS)
    base = report.runs[0]
    for label in report.ranking:
        raw = []
        for run in report.runs[1:]:
            assert run.query_ids == base.query_ids
            ref = stats.ttest_rel(run.per_query[label], base.per_query[label])
            comp = report.comparisons[run.name][label]
            if math.isnan(ref.pvalue):
                assert comp["pvalue"] == 1.0  # identical per-query values
            else:
                assert comp["pvalue"] == pytest.approx(ref.pvalue, rel=1e-9)
            assert comp["mean_difference"] == pytest.approx(np.mean(run.per_query[label] - base.per_query[label]))
            assert comp["n"] == 30
            raw.append(comp["pvalue"])
        # Holm over the two comparisons, by hand
        order = np.argsort(raw)
        adj = np.empty(2)
        adj[order[0]] = min(1, 2 * raw[order[0]])
        adj[order[1]] = max(adj[order[0]], min(1, raw[order[1]]))
        got = [report.comparisons[r.name][label]["pvalue_holm"] for r in report.runs[1:]]
        np.testing.assert_allclose(got, adj)
    assert "BBGhelani1" not in report.comparisons  # the baseline is not compared with itself


def test_significance_on_runs_over_different_queries_uses_the_shared_ones():
    report = evaluate_runs(EDGE_RUNS, EDGE_QRELS)
    a, b = report.runs
    assert set(a.query_ids) == {"10", "9", "q1", "q2", "q3"} and set(b.query_ids) == {"10", "9", "q1", "q2", "q3"}
    assert report.comparisons["edge-b.run"]["MAP"]["n"] == 5


def test_calibration_with_probabilities_matches_a_loop():
    report = evaluate_runs(COVID_RUNS[:1], COVID_QRELS, probabilities=True)
    summary = report.runs[0].summary
    assert {"ECE", "Brier", "NLL"} <= set(summary)
    qrels = {(t, d): int(g) for t, _, d, g in _parse(COVID_QRELS, 4)}
    p, y = [], []
    for t, _, d, _, s, _ in _parse(COVID_RUNS[0], 6):
        p.append(float(s))
        y.append(1.0 if qrels.get((t, d), 0) > 0 else 0.0)
    p, y = np.array(p), np.array(y)
    assert summary["Brier"] == pytest.approx(np.mean((p - y) ** 2))
    # ECE: 10 equal-width bins, 1.0 in the last one
    ece = 0.0
    for b in range(10):
        m = (np.minimum((p * 10).astype(int), 9) == b)
        if m.any():
            ece += m.sum() / p.size * abs(p[m].mean() - y[m].mean())
    assert summary["ECE"] == pytest.approx(ece)
    assert report.runs[0].n_pairs == p.size
    assert "ECE" not in report.ranking and "ECE" in report.metrics


def test_bad_inputs_of_the_api(tmp_path):
    with pytest.raises(ValueError, match="metric 'ECE' needs probabilities; pass probabilities=True"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, metrics=["map", "ece"])
    with pytest.raises(ValueError, match="unknown metric 'p10'"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, metrics=["p10"])
    with pytest.raises(TypeError, match="runs must be a non-empty sequence"):
        evaluate_runs(COVID_RUNS[0], COVID_QRELS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="runs must be a non-empty sequence"):
        evaluate_runs([], COVID_QRELS)
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\)"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, alpha=1.5)
    with pytest.raises(TypeError, match="probabilities must be a bool"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, probabilities="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metrics must be distinct"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, metrics=["map", "map"])
    with pytest.raises(ValueError, match="metrics must name at least one metric"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, metrics=[])
    with pytest.raises(ValueError, match=r"edge-a.run: --probabilities needs scores in \[0, 1\]; 11 scores lie"):
        evaluate_runs(EDGE_RUNS[:1], EDGE_QRELS, probabilities=True)
    other = tmp_path / "other.qrels"
    other.write_text("zz 0 d1 1\n")
    with pytest.raises(ValueError, match=r"run file .*edge-a\.run: no query of run is judged"):
        evaluate_runs(EDGE_RUNS[:1], other)


def test_parse_metric():
    assert parse_metric("map") == "map"
    assert parse_metric("ndcg:k=5") == {"name": "ndcg", "k": 5}
    assert parse_metric("ndcg:k=null") == {"name": "ndcg", "k": None}
    assert parse_metric("rbp:p=0.5,depth=7") == {"name": "rbp", "p": 0.5, "depth": 7}
    with pytest.raises(ValueError, match="options are key=value pairs"):
        parse_metric("ndcg:5")
    with pytest.raises(ValueError, match="a metric must be a name"):
        parse_metric(" ")


def test_same_file_names_in_two_folders_keep_their_paths(tmp_path):
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "run").write_bytes(EDGE_RUNS[1].read_bytes())
    report = evaluate_runs([tmp_path / "x" / "run", tmp_path / "y" / "run"], EDGE_QRELS)
    assert [r.name for r in report.runs] == ["run", str(tmp_path / "y" / "run")]


# --------------------------------------------------------------------------- the command


def _cli(*args: str):
    return CliRunner().invoke(cli, ["evaluate", *args])


def test_cli_table_marks_significance_and_matches_the_api():
    args = [a for r in COVID_RUNS for a in ("--run", str(r))] + ["--qrels", str(COVID_QRELS)]
    res = _cli(*args)
    assert res.exit_code == 0, res.output
    report = evaluate_runs(COVID_RUNS, COVID_QRELS)
    lines = res.output.splitlines()
    assert lines[0].split() == ["run", "queries", "MAP", "MRR", "nDCG@10", "R@1", "R@10"]
    for run, line in zip(report.runs, lines[2:5], strict=True):
        cells = line.split()
        assert cells[0] == run.name and cells[1] == "30"
        for label, cell in zip(report.ranking, cells[2:], strict=True):
            assert float(cell.rstrip("†")) == pytest.approx(run.summary[label], abs=5e-5)
            assert cell.endswith("†") == report.significant(run.name, label)
    assert lines[-1].startswith("† differs from trec-covid-r1.BBGhelani1.run")


def test_cli_csv_json_and_per_query():
    base = [a for r in EDGE_RUNS for a in ("--run", str(r))] + ["--qrels", str(EDGE_QRELS)]
    res = _cli(*base, "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert [r["run"] for r in rows] == ["edge-a.run", "edge-b.run"]
    assert rows[0]["MAP p"] == "" and 0 <= float(rows[1]["MAP p_holm"]) <= 1
    res = _cli(*base, "--format", "json", "--per-query", "-m", "map", "-m", "ndcg:k=5")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["metrics"] == ["MAP", "nDCG@5"] and out["baseline"] == "edge-a.run"
    ref = _pytrec(EDGE_RUNS[1], EDGE_QRELS)
    for qid, values in out["runs"]["edge-b.run"]["per_query"].items():
        assert values["MAP"] == pytest.approx(ref[qid]["map"])
        assert values["nDCG@5"] == pytest.approx(ref[qid]["ndcg_cut_5"])
    res = _cli(*base, "--per-query", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert len(rows) == 10 and {r["query_id"] for r in rows} == {"10", "9", "q1", "q2", "q3"}
    res = _cli("--run", str(EDGE_RUNS[1]), "--qrels", str(EDGE_QRELS), "--probabilities", "--per-query")
    assert res.exit_code == 0 and res.output.splitlines()[-1].split()[:2] == ["edge-b.run", "all"]
    res = _cli("--run", str(EDGE_RUNS[1]), "--qrels", str(EDGE_QRELS), "--probabilities")
    assert res.exit_code == 0 and "ECE" in res.output.splitlines()[0]


def _one_line_exit_2(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("which", "content", "needles"),
    [
        ("run", "1 Q0 d1 1 0.5 x\n1 Q0 d2 2 oops x\n", ["line 2", "score must be a number"]),
        ("run", "1 Q0 d1 1 0.5\n", ["line 1", "expected 6 fields"]),
        ("run", "1 Q0 d1 1 0.5 x\n1 Q0 d1 2 0.4 x\n", ["line 2", "retrieved twice"]),
        ("qrels", "1 0 d1 1\n1 0 d2 high\n", ["line 2", "relevance must be an integer"]),
        ("qrels", "1 0 d1\n", ["line 1", "expected 4 fields"]),
        ("run", b"1 Q0 caf\xe9 1 0.5 x\n", ["line 1", "not UTF-8"]),
        ("qrels", b"\x00\x01\x02\x03", ["line 1", "binary"]),
    ],
)
def test_cli_bad_files_give_one_line_naming_file_and_line_and_exit_2(tmp_path, which, content, needles):
    bad = tmp_path / f"bad.{which}"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    run = bad if which == "run" else EDGE_RUNS[0]
    qrels = bad if which == "qrels" else EDGE_QRELS
    _one_line_exit_2(_cli("--run", str(run), "--qrels", str(qrels)), str(bad), *needles)


def test_cli_broken_archive_missing_file_and_bad_options_exit_2(tmp_path):
    gz = tmp_path / "run.gz"
    gz.write_bytes(gzip.compress(EDGE_RUNS[0].read_bytes())[:30])
    _one_line_exit_2(_cli("--run", str(gz), "--qrels", str(EDGE_QRELS)), str(gz), "broken gzip archive")
    _one_line_exit_2(_cli("--run", str(tmp_path / "none.run"), "--qrels", str(EDGE_QRELS)),
                     "run file", "none.run", "does not exist")
    _one_line_exit_2(_cli("--run", str(EDGE_RUNS[0]), "--qrels", str(tmp_path / "none.qrels")),
                     "qrels file", "does not exist")
    _one_line_exit_2(_cli("--run", str(EDGE_RUNS[0]), "--qrels", str(EDGE_QRELS), "-m", "ece"),
                     "needs probabilities")
    _one_line_exit_2(_cli("--run", str(EDGE_RUNS[0]), "--qrels", str(EDGE_QRELS), "-m", "nope"),
                     "unknown metric 'nope'")
    _one_line_exit_2(_cli("--run", str(EDGE_RUNS[0]), "--qrels", str(EDGE_QRELS), "-m", "ndcg:kk=3"), "kk")


def test_report_round_trips_through_json():
    report = evaluate_runs(EDGE_RUNS, EDGE_QRELS)
    assert isinstance(report, EvaluationReport)
    text = report.render("json", per_query=True)
    assert json.loads(text) == report.to_dict(per_query=True)
    frame = report.to_frame(per_query=True)
    assert list(frame.columns) == ["run", "query_id", *report.ranking] and len(frame) == 10
    assert list(report.to_frame()["run"]) == ["edge-a.run", "edge-b.run"]
    with pytest.raises(ValueError, match="fmt must be one of 'table', 'csv', 'json'"):
        report.render("xml")  # type: ignore[arg-type]


def test_docs_example_runs_and_prints_what_the_docs_show(monkeypatch):
    import re
    import shlex

    root = Path(__file__).parents[1]
    text = (root / "docs" / "trec.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n\$ (uncertank evaluate .*?)\n(.*?)```", text, re.S)
    assert block is not None
    command, shown = block.group(1), block.group(2)
    monkeypatch.chdir(root)
    res = CliRunner().invoke(cli, shlex.split(command)[1:])
    assert res.exit_code == 0, res.output
    assert res.output == shown
    code = re.search(r"```python\n(from uncertank.evaluate import evaluate_runs.*?)```", text, re.S)
    assert code is not None
    exec(compile(code.group(1), "trec.md", "exec"), {"__name__": "docs"})


def test_every_column_carries_its_measures_identifier():
    report = evaluate_runs(COVID_RUNS[:2], COVID_QRELS)
    assert report.metrics == ["MAP", "MRR", "nDCG@10", "R@1", "R@10"]  # the labels of the defaults are kept
    assert report.measures == {"MAP": "AP", "MRR": "RR", "nDCG@10": "nDCG@10", "R@1": "Success@1",
                               "R@10": "Success@10"}
    out = json.loads(report.render("json"))
    assert out["measures"] == report.measures and out["metrics"] == report.metrics
    # trec_eval's recall at 10 and R_n@10 are two columns with two identifiers, and (here) two values
    both = evaluate_runs(COVID_RUNS[:1], COVID_QRELS, metrics=["R@10", {"name": "recall_at_k", "k": 10}])
    assert both.measures == {"Recall@10": "R@10", "R@10": "Success@10"}
    summary = both.runs[0].summary
    assert summary["Recall@10"] < summary["R@10"]  # many relevant documents per topic: a hit is easier
    with pytest.raises(ValueError, match=r"metrics must be distinct; .*MAP \(AP\) more than once"):
        evaluate_runs(COVID_RUNS[:1], COVID_QRELS, metrics=["map", "map"])
