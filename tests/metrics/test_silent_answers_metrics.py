"""Inputs that used to give a wrong number without a word: each now gives the right value or a clear error.

RBP's residual with unjudged documents, a query that comes back in a
streamed file, scores and labels such as ``1_0``, ECE's bins at their
edges, a run file given twice, and runs and qrels given as frames or
mappings.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.evaluate import evaluate_runs
from uncertank.metrics import (
    ECEAccumulator,
    ReliabilityAccumulator,
    expected_calibration_error,
    rank_biased_precision,
    read_scored_pairs,
    reliability_curve,
)
from uncertank.metrics.binning import uniform_bin_index, uniform_edges

DATA = Path(__file__).parents[1] / "data"
EDGE_RUNS = [DATA / "edge-a.run", DATA / "edge-b.run"]
EDGE_QRELS = DATA / "edge.qrels"


def _one_line_exit_2(res, *needles: str) -> str:
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- RBP residual


def test_rbp_residual_of_the_reported_case_counts_the_unjudged_document(tmp_path):
    # a (relevant), b (unjudged), c (judged non-relevant); p = 0.5:
    # residual = weight of b at rank 2 (0.5 * 0.5) + tail 0.5^3 = 0.375, not 0.125
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n1 0 c 0\n")
    run = tmp_path / "run"
    run.write_text("1 Q0 a 1 0.9 x\n1 Q0 b 2 0.8 x\n1 Q0 c 3 0.7 x\n")
    report = evaluate_runs([run], qrels, metrics=[{"name": "rbp", "p": 0.5}, {"name": "rbp_residual", "p": 0.5}])
    assert report.runs[0].summary["RBP residual(0.5)"] == 0.375
    assert report.runs[0].summary["RBP(0.5)"] == 0.5
    value, residual = rank_biased_precision([[0.9, 0.8, 0.7]], [[1, 0, 0]], p=0.5, judged=[[True, False, True]])
    assert (value, residual) == (0.5, 0.375)
    assert rank_biased_precision([[0.9, 0.8, 0.7]], [[1, 0, 0]], p=0.5)[1] == 0.125  # all judged: the tail only


def _rbp_loop(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], p: float, depth: int | None):
    """Per query: RBP and residual as rbp_eval defines them, ranks in trec_eval's order."""
    out = {}
    for q, per in run.items():
        if q not in qrels:
            continue
        ranked = [d for d, _ in sorted(per.items(), key=lambda x: (x[1], x[0]), reverse=True)]
        d_eval = len(ranked) if depth is None else min(depth, len(ranked))
        value = residual = 0.0
        for r, doc in enumerate(ranked[:d_eval]):
            w = (1 - p) * p**r
            if doc not in qrels[q]:
                residual += w
            elif qrels[q][doc] > 0:
                value += w
        out[q] = (value, residual + p**d_eval)
    return out


@pytest.mark.parametrize(("p", "depth"), [(0.8, None), (0.5, 3), (0.95, 10)])
def test_rbp_and_residual_over_a_run_match_a_loop(tmp_path, p, depth):
    rng = np.random.default_rng(7)
    docs = [f"d{i}" for i in range(20)]
    qrels = {f"q{q}": {d: int(rng.integers(0, 3)) for d in rng.choice(docs, 8, replace=False)} for q in range(12)}
    run = {f"q{q}": {d: float(np.round(rng.random(), 1)) for d in rng.choice(docs, int(rng.integers(1, 15)),
                                                                            replace=False)} for q in range(14)}
    report = evaluate_runs([run], qrels, metrics=[{"name": "rbp", "p": p, "depth": depth},
                                                  {"name": "rbp_residual", "p": p, "depth": depth}])
    scores = report.runs[0]
    ref = _rbp_loop(run, qrels, p, depth)
    value_label, residual_label = report.ranking
    for i, q in enumerate(scores.query_ids):
        assert scores.per_query[value_label][i] == pytest.approx(ref[q][0], abs=1e-12)
        assert scores.per_query[residual_label][i] == pytest.approx(ref[q][1], abs=1e-12)


def test_judged_is_checked():
    s, y = [[0.9, 0.8]], [[1, 0]]
    with pytest.raises(TypeError, match=r"judged must be bools .*got dtype int64"):
        rank_biased_precision(s, y, judged=[[1, 0]])
    with pytest.raises(ValueError, match=r"judged must have one entry per candidate, shape \(1, 2\) or \(2,\); got"):
        rank_biased_precision(s, y, judged=[True, False, True])
    with pytest.raises(ValueError, match="judged is False for 1 candidates with a relevant label"):
        rank_biased_precision(s, y, judged=[[False, True]])
    with pytest.raises(TypeError, match="judged must be an array of bools"):
        rank_biased_precision(s, y, judged=[[True], [True, False]])
    assert rank_biased_precision(s, y, p=0.5, judged=np.array([True, False]))[1] == 0.25 + 0.25


# --------------------------------------------------------------------------- streamed queries


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_query_that_comes_back_is_refused_in_any_position(tmp_path, fmt):
    frame = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q1"], "score": [0.9, 0.5, 0.7, 0.4], "label": [1, 1, 0, 0]})
    path = tmp_path / f"pairs.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    for chunk_size in (1, 2, 3, 4, 100):
        with pytest.raises(ValueError, match=r"pairs\.\w+: the rows of query 'q1' are not contiguous"):
            list(read_scored_pairs(path, chunk_size=chunk_size))
    frame.iloc[:3].to_csv(tmp_path / "ok.csv", index=False)  # q1 q1 q2: fine in every chunking
    for chunk_size in (1, 2, 3):
        assert sum(c.n_queries for c in read_scored_pairs(tmp_path / "ok.csv", chunk_size=chunk_size)) == 2


def test_a_query_that_comes_back_in_a_later_dask_partition_is_refused():
    dd = pytest.importorskip("dask.dataframe")
    from uncertank.metrics import evaluate_dask, mean_average_precision

    frame = pd.DataFrame({"query_id": [0, 0, 1, 1, 0, 0], "score": [0.9, 0.1, 0.8, 0.2, 0.7, 0.3],
                          "label": [1, 0, 0, 1, 1, 0]})
    ddf = dd.from_pandas(frame, npartitions=3, sort=False)  # [0 0] [1 1] [0 0]: each partition contiguous
    assert ddf.npartitions == 3
    with pytest.raises(ValueError, match="the rows of query 0 are not contiguous"):
        evaluate_dask(ddf, ["map"], scheduler="synchronous")
    # a query straddling adjacent partitions is still one query
    ok = pd.DataFrame({"query_id": [0, 0, 0, 1, 1, 1], "score": [0.9, 0.1, 0.8, 0.2, 0.7, 0.3],
                       "label": [1, 0, 0, 1, 1, 0]})
    out = evaluate_dask(dd.from_pandas(ok, npartitions=3, sort=False), ["map"], scheduler="synchronous")
    ref = mean_average_precision(ok["score"].to_numpy().reshape(2, 3), ok["label"].to_numpy().reshape(2, 3))
    assert out["MAP"] == pytest.approx(ref)


# --------------------------------------------------------------------------- numbers as trec_eval reads them


@pytest.mark.parametrize("score", ["1_0", "0x1p3", "\u0661", "1.5.2", "1e", "--1"])
def test_run_scores_that_trec_eval_would_not_read_whole_are_refused(tmp_path, score):
    from uncertank.datasets import read_trec_run

    path = tmp_path / "run"
    path.write_text(f"1 Q0 a 1 0.5 x\n1 Q0 b 2 {score} x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"run file {path}, line 2: score must be a number; got '{score}'"):
        read_trec_run(path)
    res = CliRunner().invoke(cli, ["evaluate", "--run", str(path), "--qrels", str(EDGE_QRELS)])
    _one_line_exit_2(res, str(path), "line 2", repr(score))


@pytest.mark.parametrize("score", ["0.5", "-1.2e-3", "+3", ".5", "5.", "1E+2"])
def test_decimal_scores_still_read(tmp_path, score):
    from uncertank.datasets import read_trec_run

    path = tmp_path / "run"
    path.write_text(f"1 Q0 a 1 {score} x\n", encoding="utf-8")
    assert read_trec_run(path)["score"].tolist() == [float(score)]


def test_underscores_are_refused_in_ranks_grades_and_labels(tmp_path):
    from uncertank.datasets import read_qrels, read_response_tsv, read_trec_run

    run = tmp_path / "run"
    run.write_text("1 Q0 a 1_0 0.5 x\n")
    with pytest.raises(ValueError, match="line 1: rank must be an integer; got '1_0'"):
        read_trec_run(run)
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n1 0 b 1_0\n")
    with pytest.raises(ValueError, match="line 2: relevance must be an integer; got '1_0'"):
        read_qrels(qrels)
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("1_0\tcontext\tcandidate\n")
    with pytest.raises(ValueError, match="line 1: the label must be an integer >= 0; got '1_0'"):
        read_response_tsv(tsv)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("query_id,score,label\nq,0.5,1\nq,0.4,1_0\n")
    with pytest.raises(ValueError, match=r"pairs\.csv: the label column must hold integers >= 0; got text .*'1_0'"):
        list(read_scored_pairs(pairs))
    pairs.write_text("query_id,score,label\nq,1_0,1\n")
    with pytest.raises(ValueError, match=r"pairs\.csv: cannot read columns"):
        list(read_scored_pairs(pairs))


# --------------------------------------------------------------------------- ECE's bins at their edges


def _rule(v: float, n: int) -> int:
    """The documented rule, by hand: the last b with b / n <= v; 1.0 in the last bin."""
    return min(max(b for b in range(n + 1) if b / n <= v), n - 1)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10, 11, 15, 20, 49, 50, 100, 1000])
def test_uniform_bins_follow_the_rule_at_every_edge_and_its_neighbours(n):
    values = []
    for k in range(n + 1):
        e = k / n
        values += [np.nextafter(e, -np.inf), e, np.nextafter(e, np.inf)]
    p = np.array([v for v in values if 0.0 <= v <= 1.0])
    expected = np.array([_rule(float(v), n) for v in p])
    np.testing.assert_array_equal(uniform_bin_index(p, n), expected)
    np.testing.assert_array_equal(uniform_edges(n), [b / n for b in range(n + 1)])
    labels = np.zeros(p.size, dtype=int)
    counts = np.bincount(expected, minlength=n)
    np.testing.assert_array_equal(reliability_curve(p, labels, n_bins=n).counts, counts)
    np.testing.assert_array_equal(ReliabilityAccumulator(n_bins=n).update(p, labels).compute().counts, counts)
    # the ECE from the bins of the rule, by a loop
    ece = sum(abs(p[expected == b].mean()) * (expected == b).sum() / p.size for b in range(n) if (expected == b).any())
    assert expected_calibration_error(p, labels, n_bins=n) == pytest.approx(ece, rel=1e-12)
    assert ECEAccumulator(n_bins=n).update(p, labels).compute() == pytest.approx(ece, rel=1e-12)


def test_the_reported_value_lands_below_its_edge():
    p = np.array([0.8999999999999999, 0.9])
    assert uniform_bin_index(p, 10).tolist() == [8, 9]
    assert reliability_curve(p, [0, 1], n_bins=10).counts[8:].tolist() == [1, 1]
    assert ECEAccumulator(n_bins=10).update(p, np.array([0, 1])).compute() == pytest.approx(
        (0.8999999999999999 + 0.1) / 2)


def test_uniform_bins_on_random_values_match_the_rule():
    rng = np.random.default_rng(0)
    for n in (3, 10, 30):
        p = np.concatenate([rng.random(2000), np.round(rng.random(2000), 2), [0.0, 1.0]])
        assert uniform_bin_index(p, n).tolist() == [_rule(float(v), n) for v in p]


# --------------------------------------------------------------------------- a run file given twice


def _cli(*args: str):
    return CliRunner().invoke(cli, ["evaluate", *args])


def test_a_run_file_given_twice_is_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"run file .*edge-a\.run is given twice \(runs\[0\] and runs\[1\]\)"):
        evaluate_runs([EDGE_RUNS[0], EDGE_RUNS[0]], EDGE_QRELS)
    monkeypatch.chdir(DATA)
    with pytest.raises(ValueError, match=r"is given twice \(runs\[0\] and runs\[2\]\)"):
        evaluate_runs(["edge-a.run", "edge-b.run", str(DATA / "edge-a.run")], EDGE_QRELS)  # another spelling
    line = _one_line_exit_2(_cli("--run", "edge-a.run", "--run", "edge-a.run", "--qrels", "edge.qrels"),
                            "edge-a.run", "given twice")
    assert line.startswith("uncertank evaluate: run file edge-a.run")


def test_p_values_sit_on_the_row_of_the_compared_run(tmp_path):
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
    (tmp_path / "x" / "run").write_bytes(EDGE_RUNS[0].read_bytes())
    (tmp_path / "y" / "run").write_bytes(EDGE_RUNS[1].read_bytes())
    a, b = tmp_path / "x" / "run", tmp_path / "y" / "run"
    res = _cli("--run", str(a), "--run", str(b), "--qrels", str(EDGE_QRELS), "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert [r["run"] for r in rows] == ["run", str(b)]
    assert rows[0]["MAP p"] == "" and rows[0]["MAP p_holm"] == ""  # the baseline carries no p-value
    report = evaluate_runs([a, b], EDGE_QRELS)
    assert float(rows[1]["MAP p"]) == report.comparisons[str(b)]["MAP"]["pvalue"]
    table = _cli("--run", str(a), "--run", str(b), "--qrels", str(EDGE_QRELS)).output.splitlines()
    assert "†" not in table[2]  # the baseline row is never marked


def test_runs_given_as_frames_are_named_apart_and_compared_in_order():
    from uncertank.datasets import read_trec_run

    a, b = read_trec_run(EDGE_RUNS[0]), read_trec_run(EDGE_RUNS[1])
    a = a.drop(columns="system")
    report = evaluate_runs([a, b, {"q1": {"d1": 1.0}}], EDGE_QRELS)
    names = [r.name for r in report.runs]
    assert names[0] == "runs[0]" and len(set(names)) == 3
    assert set(report.comparisons) == set(names[1:])
    ref = evaluate_runs(EDGE_RUNS, EDGE_QRELS)
    assert report.runs[0].summary == ref.runs[0].summary and report.runs[1].summary == ref.runs[1].summary
    assert report.comparisons[names[1]]["MAP"] == ref.comparisons["edge-b.run"]["MAP"]


# --------------------------------------------------------------------------- frames and mappings as inputs


QRELS = {"1": {"a": 1, "b": 0, "c": 2}, "2": {"a": 0, "d": 1}}
RUN = {"1": {"a": 0.9, "b": 0.8, "x": 0.7}, "2": {"d": 0.2, "a": 0.1}}


def test_mappings_and_frames_give_the_values_of_files(tmp_path):
    qp, rp = tmp_path / "qrels", tmp_path / "run"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, per in QRELS.items() for d, g in per.items()))
    rp.write_text("".join(f"{q} Q0 {d} 1 {s} t\n" for q, per in RUN.items() for d, s in per.items()))
    ref = evaluate_runs([rp], qp).runs[0].summary
    assert evaluate_runs([RUN], QRELS).runs[0].summary == ref
    frame = pd.DataFrame([(q, d, s) for q, per in RUN.items() for d, s in per.items()],
                         columns=["query_id", "doc_id", "score"])
    qframe = pd.DataFrame([(q, d, g) for q, per in QRELS.items() for d, g in per.items()],
                          columns=["query_id", "doc_id", "relevance"])
    assert evaluate_runs([frame], qframe).runs[0].summary == ref
    # identical judgements twice are kept once, as the file reader does
    assert evaluate_runs([frame], pd.concat([qframe, qframe.iloc[:1]])).runs[0].summary == ref


@pytest.mark.parametrize(
    ("run", "qrels", "message"),
    [
        ({"1": {"a": 0.9}}, {"1": {"a": 1, "b": float("nan")}},
         r"qrels: relevance is missing at row 1 \(query '1', document 'b'\)"),
        ({"1": {"a": 0.9}}, {"1": {"a": 1, "b": None}}, "qrels: relevance is missing at row 1"),
        ({"1": {"a": 0.9}}, {"1": {"a": "high"}}, r"qrels: relevance must be an integer; row 0 .* holds 'high'"),
        ({"1": {"a": 0.9}}, {"1": {"a": "1_0"}}, "qrels: relevance must be an integer; row 0 .* holds '1_0'"),
        ({"1": {"a": 0.9}}, {"1": {"a": 1.5}}, "qrels: relevance must be an integer; row 0 .* holds 1.5"),
        ({"1": {"a": 0.9}}, {"1": {"a": True}}, "qrels: relevance must be an integer; row 0 .* holds True"),
        ({"1": {"a": 0.9}}, {1: {"a": 1}, "1": {"a": 2}}, "qrels: document 'a' of query '1' is judged twice "
                                                          r"with different grades \[1, 2\]"),
        ({"1": {"a": 0.9}}, {}, "qrels holds no judgements"),
        ({"1": {"a": 0.9}}, {"1": [1, 2]}, "qrels must map each query id to a mapping"),
        ({"1": {"a": float("nan")}}, QRELS, r"runs\[0\]: score is missing at row 0"),
        ({"1": {"a": float("inf")}}, QRELS, r"runs\[0\]: score must be a finite number; row 0"),
        ({"1": {"a": "0.5x"}}, QRELS, r"runs\[0\]: score must be a finite number; row 0 .* holds '0.5x'"),
        ({"1": {"a": 0.5}, 1: {"a": 0.4}}, QRELS,
         r"runs\[0\]: document 'a' is retrieved twice for query '1' \(rows 0 and 1\); trec_eval refuses"),
        ({}, QRELS, r"runs\[0\] holds no entries"),
    ],
)
def test_bad_frames_and_mappings_are_refused_naming_the_argument(run, qrels, message):
    with pytest.raises((ValueError, TypeError), match=message):
        evaluate_runs([run], qrels)


def test_bad_frames_name_their_argument_and_row():
    from uncertank.datasets import ranked_lists_from_run

    frame = pd.DataFrame({"query_id": ["1", "1", "1"], "doc_id": ["a", "b", "a"], "score": [0.9, 0.5, 0.1]})
    with pytest.raises(ValueError, match=r"runs\[0\]: document 'a' is retrieved twice for query '1' \(rows 0 and 2\)"):
        evaluate_runs([frame], QRELS)
    with pytest.raises(ValueError, match=r"^run: document 'a' is retrieved twice"):
        ranked_lists_from_run(frame, QRELS)
    qframe = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [1.0, np.nan]})
    with pytest.raises(ValueError, match=r"^qrels: relevance is missing at row 1"):
        ranked_lists_from_run(frame.iloc[:2], qframe)
    qframe = pd.DataFrame({"query_id": ["1", None], "doc_id": ["a", "b"], "relevance": [1, 1]})
    with pytest.raises(ValueError, match="qrels: query_id is missing at row 1"):
        evaluate_runs([frame.iloc[:2]], qframe)
    with pytest.raises(TypeError, match=r"qrels must be a path, a pandas DataFrame or a mapping"):
        evaluate_runs([frame.iloc[:2]], [("1", "a", 1)])  # type: ignore[arg-type]
    two = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "a"], "score": [0.9, 0.5], "system": ["s", "t"]})
    with pytest.raises(ValueError, match=r"runs\[0\] holds 2 systems; give one run per frame"):
        evaluate_runs([two], QRELS)


# --------------------------------------------------------------------------- empty and unparsable files


@pytest.mark.parametrize(
    ("which", "content", "needles"),
    [
        ("run", "", ["holds no entries"]),
        ("run", "\n  \n", ["holds no entries"]),
        ("qrels", "", ["holds no judgements"]),
        ("qrels", " \n", ["holds no judgements"]),
        ("run", "query_id doc_id score\n", ["line 1", "expected 6 fields"]),
        ("qrels", "1 0 a 1.0\n", ["line 1", "relevance must be an integer; got '1.0'"]),
        ("run", b"\x1f\x8b\x08\x00garbage", ["line 1"]),
    ],
)
def test_cli_empty_or_unparsable_files_give_one_line_and_exit_2(tmp_path, which, content, needles):
    bad = tmp_path / f"bad.{which}"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    run = bad if which == "run" else EDGE_RUNS[0]
    qrels = bad if which == "qrels" else EDGE_QRELS
    _one_line_exit_2(_cli("--run", str(run), "--qrels", str(qrels)), str(bad), *needles)


def test_cli_a_folder_is_one_line_too(tmp_path):
    _one_line_exit_2(_cli("--run", str(tmp_path), "--qrels", str(EDGE_QRELS)), str(tmp_path), "is a folder")
    _one_line_exit_2(_cli("--run", str(EDGE_RUNS[0]), "--qrels", str(tmp_path)), str(tmp_path), "is a folder")


def test_a_query_the_run_misses_has_residual_one_with_complete():
    run = {"1": {"a": 0.9}}
    report = evaluate_runs([run], QRELS, metrics=["rbp", "rbp_residual", "map"], complete=True)
    scores = report.runs[0]
    assert scores.query_ids == ["1", "2"]
    assert scores.per_query["RBP residual(0.8)"][1] == 1.0  # nothing retrieved: all of RBP is open
    assert scores.per_query["RBP(0.8)"][1] == 0.0 and scores.per_query["MAP"][1] == 0.0
