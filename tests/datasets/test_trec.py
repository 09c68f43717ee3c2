from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uncertank import RankedLists
from uncertank.datasets.trec import ranked_lists_from_run
from uncertank.datasets.trec_covid import TREC_COVID_ROUND1_BM25_BASELINE, load_trec_covid_round1
from uncertank.datasets.trec_files import read_qrels, read_trec_run

# A hand-written run: two queries, a tie on query 1 (d3 and d5 both 1.5), query 3 unjudged.
RUN = """\
1 Q0 d1 1 3.0 sysA
1 Q0 d3 2 1.5 sysA
1 Q0 d5 3 1.5 sysA
1 Q0 d2 4 0.5 sysA

2 Q0 d9 1 10 sysA
2 Q0 d7 2 9 sysA
2 Q0 d8 3 -1.5 sysA
3 Q0 d1 1 1.0 sysA
"""

QRELS = """\
1 0 d1 2
1 0 d5 1
1 0 d2 0
1 0 d4 1
2 0 d8 1
2 0 d7 -1
"""


@pytest.fixture
def run_path(tmp_path: Path) -> Path:
    p = tmp_path / "run.txt"
    p.write_text(RUN)
    return p


@pytest.fixture
def qrels_path(tmp_path: Path) -> Path:
    p = tmp_path / "qrels.txt"
    p.write_text(QRELS)
    return p


def test_read_trec_run_values_and_dtypes(run_path):
    run = read_trec_run(run_path)
    assert list(run.columns) == ["query_id", "q0", "doc_id", "rank", "score", "system"]
    assert len(run) == 8
    assert run["query_id"].tolist() == ["1"] * 4 + ["2"] * 3 + ["3"]
    assert run["doc_id"].tolist()[:4] == ["d1", "d3", "d5", "d2"]
    assert run["rank"].dtype == np.int64 and run["rank"].tolist()[4:7] == [1, 2, 3]
    assert run["score"].dtype == np.float64 and run["score"].tolist()[4:7] == [10.0, 9.0, -1.5]
    assert set(run["system"]) == {"sysA"}
    assert set(read_trec_run(run_path, system="renamed")["system"]) == {"renamed"}


def test_read_trec_run_gzip(tmp_path):
    p = tmp_path / "run.txt.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(RUN)
    assert len(read_trec_run(p)) == 8


RUN_FIRST, QRELS_FIRST = "1 Q0 d0 1 4.0 sysA", "1 0 d0 1"


@pytest.mark.parametrize(
    ("reader", "first", "line", "match"),
    [
        (read_trec_run, RUN_FIRST, "1 Q0 d1 1 3.0", "line 2: expected 6 fields.*got 5"),
        (read_trec_run, RUN_FIRST, "1 Q0 d1 1 3.0 sysA extra", "line 2: expected 6 fields.*got 7"),
        (read_trec_run, RUN_FIRST, "1 Q0 d1 first 3.0 sysA", "line 2: rank must be an integer; got 'first'"),
        (read_trec_run, RUN_FIRST, "1 Q0 d1 1 high sysA", "line 2: score must be a number; got 'high'"),
        (read_trec_run, RUN_FIRST, "1 Q0 d1 1 nan sysA", "line 2: score must be finite"),
        (read_trec_run, RUN_FIRST, "1 Q0 d0 1 3.0 sysA",
         r"line 2: document 'd0' is retrieved twice .*\(first at line 1\)"),
        (read_qrels, QRELS_FIRST, "1 0 d1", "line 2: expected 4 fields.*got 3"),
        (read_qrels, QRELS_FIRST, "1 0 d1 2 x", "line 2: expected 4 fields.*got 5"),
        (read_qrels, QRELS_FIRST, "1 0 d1 yes", "line 2: relevance must be an integer; got 'yes'"),
        (read_qrels, QRELS_FIRST, "1 0 d0 2", "line 2: document 'd0' of query '1' is judged 2 here and 1 at line 1"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, reader, first, line, match):
    p = tmp_path / "bad.txt"
    p.write_text(first + "\n" + line + "\n")
    with pytest.raises(ValueError, match=match) as info:
        reader(p)
    assert str(p) in str(info.value)


def test_read_trec_run_bad_paths(tmp_path):
    with pytest.raises(ValueError, match="must be an existing file"):
        read_trec_run(tmp_path / "missing.txt")
    with pytest.raises(TypeError, match="path must be a path"):
        read_trec_run(3)  # type: ignore[arg-type]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="holds no entries"):
        read_trec_run(empty)


def test_read_qrels_values(qrels_path):
    q = read_qrels(qrels_path)
    assert list(q.columns) == ["query_id", "doc_id", "relevance"]
    assert q["relevance"].dtype == np.int64
    assert q.values.tolist()[:2] == [["1", "d1", 2], ["1", "d5", 1]]
    assert q["relevance"].tolist()[-1] == -1  # kept as written


def test_read_qrels_identical_duplicate_is_kept_once(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text("1 0 d0 1\n1 0 d0 1\n")
    assert len(read_qrels(p)) == 1
    p.write_text("")
    with pytest.raises(ValueError, match="holds no judgements"):
        read_qrels(p)


def test_ranked_lists_from_run_orders_like_trec_eval(run_path, qrels_path):
    rl = ranked_lists_from_run(run_path, qrels_path)
    assert isinstance(rl, RankedLists)
    assert rl.query_ids == ["1", "2"]  # query 3 is not judged
    # Query 1: d3 and d5 tie at 1.5; trec_eval puts the larger doc id first.
    assert rl.candidate_ids == ["d1", "d5", "d3", "d2", "d9", "d7", "d8"]
    assert rl.labels.tolist() == [2, 1, 0, 0, 0, 0, 1]  # unjudged and -1 become 0
    assert rl.scores.tolist() == [3.0, 1.5, 1.5, 0.5, 10.0, 9.0, -1.5]
    assert rl.offsets.tolist() == [0, 4, 7]


def _plain_ap_rr_p(rl: RankedLists, qrels: pd.DataFrame, k: int) -> dict[str, dict[str, float]]:
    """AP, RR and P@k of each list in its stored order, by a plain loop."""
    out = {}
    for q in range(rl.n_queries):
        qid = rl.query_ids[q]
        labels = rl.labels[rl.offsets[q]:rl.offsets[q + 1]]
        n_rel = int((qrels[(qrels.query_id == qid)].relevance > 0).sum())
        hits, ap, rr = 0, 0.0, 0.0
        for i, lab in enumerate(labels, start=1):
            if lab > 0:
                hits += 1
                ap += hits / i
                if rr == 0.0:
                    rr = 1.0 / i
        out[qid] = {"map": ap / n_rel, "recip_rank": rr, f"P_{k}": float((labels[:k] > 0).sum()) / k}
    return out


def test_ranked_lists_match_pytrec_eval_with_ties(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    lines, qlines = [], []
    for q in range(1, 6):
        scores = rng.integers(0, 4, size=12).astype(float)  # many ties
        for d in range(12):
            lines.append(f"{q} Q0 doc{d:02d} {d + 1} {scores[d]} s")
            # doc00 is always judged relevant, so that every query has a relevant document.
            grade = 1 if d == 0 else int(rng.integers(0, 3))
            if d == 0 or rng.random() < 0.6:
                qlines.append(f"{q} 0 doc{d:02d} {grade}")
    (tmp_path / "r").write_text("\n".join(lines))
    (tmp_path / "q").write_text("\n".join(qlines))
    run, qrels = read_trec_run(tmp_path / "r"), read_qrels(tmp_path / "q")
    rl = ranked_lists_from_run(run, qrels)
    ours = _plain_ap_rr_p(rl, qrels, 5)
    qd: dict[str, dict[str, int]] = {}
    for row in qrels.itertuples():
        qd.setdefault(row.query_id, {})[row.doc_id] = int(row.relevance)
    rd: dict[str, dict[str, float]] = {}
    for row in run.itertuples():
        rd.setdefault(row.query_id, {})[row.doc_id] = float(row.score)
    ref = pytrec_eval.RelevanceEvaluator(qd, {"map", "recip_rank", "P_5"}).evaluate(rd)
    for qid, vals in ours.items():
        for name, v in vals.items():
            assert v == pytest.approx(ref[qid][name], abs=1e-4), (qid, name)


def test_ranked_lists_from_run_systems(run_path, qrels_path):
    run = read_trec_run(run_path)
    two = pd.concat([run, run.assign(system="sysB", score=-run["score"])], ignore_index=True)
    with pytest.raises(ValueError, match=r"holds 2 systems.*pass system="):
        ranked_lists_from_run(two, qrels_path)
    rl_b = ranked_lists_from_run(two, qrels_path, system="sysB")
    assert rl_b.candidate_ids[:4] == ["d2", "d5", "d3", "d1"]
    with pytest.raises(ValueError, match="system must be one of"):
        ranked_lists_from_run(two, qrels_path, system="sysC")
    with pytest.raises(ValueError, match="no 'system' column"):
        ranked_lists_from_run(run.drop(columns="system"), qrels_path, system="sysA")


def test_ranked_lists_from_run_bad_inputs(run_path, qrels_path, tmp_path):
    with pytest.raises(TypeError, match="run must be a path, a pandas DataFrame or a mapping"):
        ranked_lists_from_run([1, 2], qrels_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"qrels must have columns .*missing \['relevance'\]"):
        ranked_lists_from_run(run_path, pd.DataFrame({"query_id": ["1"], "doc_id": ["d1"]}))
    other = tmp_path / "other.qrels"
    other.write_text("99 0 d1 1\n")
    with pytest.raises(ValueError, match="no query of run is judged"):
        ranked_lists_from_run(run_path, other)


def test_load_trec_covid_round1_shapes_and_values():
    scores = load_trec_covid_round1("scores")
    assert scores.shape == (3210, 3) and list(scores.columns) == ["system", "topic", "score"]
    assert scores["system"].nunique() == 107 and scores["topic"].nunique() == 30
    assert scores["score"].between(0, 1).all()
    gains = load_trec_covid_round1("rbp_gain")
    assert gains.shape == (22463, 4) and list(gains.columns) == ["system", "topic", "rank", "score"]
    pooled = load_trec_covid_round1("pooled")
    assert pooled.shape == (143, 2) and int(pooled["pooled"].sum()) == 56
    assert len(load_trec_covid_round1("pooled", pooled_only=True)) == 56
    # The paper's setting: 42 pooled runs in the files (56 pooled, bottom 25% = 14 absent).
    p_scores = load_trec_covid_round1("scores", pooled_only=True)
    p_gains = load_trec_covid_round1("rbp_gain", pooled_only=True)
    assert p_scores["system"].nunique() == 42 == p_gains["system"].nunique()
    assert set(p_scores["system"]) == set(p_gains["system"])
    assert 56 - 42 == 56 // 4
    assert TREC_COVID_ROUND1_BM25_BASELINE in set(p_scores["system"])
    # The two files differ by two (unpooled) runs each way.
    assert len(set(scores["system"]) ^ set(gains["system"])) == 4


def test_bundled_files_are_the_shared_copies_with_licence():
    import importlib.resources as r

    folder = r.files("uncertank.datasets").joinpath("_data", "trec-covid-round1")
    assert "Copyright (c) 2021 Rodger Benham" in folder.joinpath("LICENSE").read_text()
    assert "rmit-ir/bayesian-shallow" in folder.joinpath("NOTICE.md").read_text()
    shared = Path("/work/shared/data/trec-covid-round1")
    if shared.is_dir():  # the provenance copy on the development machines
        for name in ("round1_data.csv", "round1_rbpgain.csv", "round1_pooled.csv"):
            assert folder.joinpath(name).read_bytes() == (shared / name).read_bytes()


def test_rbp_gain_is_rbp08_weight_times_graded_gain():
    g = load_trec_covid_round1("rbp_gain")
    gain = g["score"] / (0.2 * 0.8 ** (g["rank"] - 1))
    assert np.isin(gain.round(9), [0.0, 0.5, 1.0]).all()


def test_per_topic_score_is_consistent_with_binary_rbp05():
    """The documented finding: the unlabelled score behaves as binary RBP(0.5)."""
    d = load_trec_covid_round1("scores")
    g = load_trec_covid_round1("rbp_gain")
    rel = (g["score"] > 0).astype(float)
    g = g.assign(c=0.5 * 0.5 ** (g["rank"] - 1) * rel)
    agg = g.groupby(["system", "topic"]).agg(lo=("c", "sum"), depth=("rank", "max")).reset_index()
    m = d.merge(agg, on=["system", "topic"])
    assert len(m) == 3150
    ok = (m["score"] >= m["lo"] - 6e-5) & (m["score"] <= m["lo"] + 0.5 ** m["depth"] + 6e-5)
    assert int(ok.sum()) == 3137
    assert float((m["score"] - m["lo"]).abs()[~ok].max()) < 0.125
    # Graded RBP(0.8), the other natural reading, fits far fewer cells.
    gg = load_trec_covid_round1("rbp_gain")
    lo8 = gg.groupby(["system", "topic"])["score"].sum().rename("lo8").reset_index()
    m8 = d.merge(lo8, on=["system", "topic"])
    ok8 = (m8["score"] >= m8["lo8"] - 6e-5) & (m8["score"] <= m8["lo8"] + 0.8 ** 7 + 6e-5)
    assert ok8.mean() < 0.5


def test_load_trec_covid_round1_errors():
    with pytest.raises(ValueError, match="kind must be one of 'scores', 'rbp_gain', 'pooled'; got 'qrels'"):
        load_trec_covid_round1("qrels")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pooled_only must be a bool"):
        load_trec_covid_round1("scores", pooled_only=1)  # type: ignore[arg-type]


def test_fast_and_line_readers_agree(run_path, qrels_path):
    from uncertank.datasets import trec_files

    pd.testing.assert_frame_equal(read_trec_run(run_path), trec_files._read_trec_run_lines(run_path, None))
    pd.testing.assert_frame_equal(read_trec_run(run_path, system="x"), trec_files._read_trec_run_lines(run_path, "x"))
    pd.testing.assert_frame_equal(read_qrels(qrels_path), trec_files._read_qrels_lines(qrels_path))
    assert trec_files._fast_fields(run_path, 6) is not None  # the hand-written run takes the fast path


def test_ids_that_look_like_missing_values_stay_strings(tmp_path):
    p = tmp_path / "run.txt"
    p.write_text("NA Q0 null 1 1.0 nan\nNA Q0 0012 2 0.5 nan\n")
    run = read_trec_run(p)
    assert run["query_id"].tolist() == ["NA", "NA"] and run["doc_id"].tolist() == ["null", "0012"]
    assert run["system"].tolist() == ["nan", "nan"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1 Q0 d1 1.0 3.0 s\n", "line 1: rank must be an integer; got '1.0'"),
        ("1 Q0 d1 1 inf s\n", "line 1: score must be finite"),
    ],
)
def test_fast_path_falls_back_to_exact_errors(tmp_path, text, match):
    p = tmp_path / "r.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_trec_run(p)


def test_qrels_float_grade_is_an_error(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text("1 0 d1 1.0\n")
    with pytest.raises(ValueError, match=r"line 1: relevance must be an integer; got '1\.0'"):
        read_qrels(p)
