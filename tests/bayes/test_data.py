from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from uncertank.bayes import check_frame, drop_bottom_systems, frame_from_runs, frame_from_trec_covid
from uncertank.datasets.trec_files import read_qrels, read_trec_run


def _frame(n_sys=3, n_top=4, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "system": np.repeat([f"s{i}" for i in range(n_sys)], n_top),
        "topic": np.tile(np.arange(1, n_top + 1), n_sys),
        "score": rng.uniform(size=n_sys * n_top),
    })


def test_check_frame_cleans_types():
    df = _frame()
    df["topic"] = df["topic"].astype(str)
    df["extra"] = 1
    out = check_frame(df, "zoib")
    assert list(out.columns) == ["system", "topic", "score"]
    assert out["topic"].dtype == np.int64
    named = check_frame(df.assign(topic=["t" + str(t) for t in df["topic"]]), "gaussian")
    assert named["topic"].tolist()[:2] == ["t1", "t2"]


@pytest.mark.parametrize(
    ("mutate", "family", "exc", "match"),
    [
        (lambda d: d.values, "zoib", TypeError, "df must be a pandas DataFrame; got ndarray"),
        (lambda d: d.drop(columns="topic"), "zoib", ValueError, r"missing \['topic'\]"),
        (lambda d: d, "zoib_rank", ValueError, r"missing \['rank'\]"),
        (lambda d: d.assign(score=d["score"].where(d.index != 2)), "zoib", ValueError,
         "column 'score' must not hold NaN; got 1 missing"),
        (lambda d: d.assign(system=d["system"].where(d.index != 0)), "gaussian", ValueError,
         "column 'system' must not hold NaN"),
        (lambda d: d.assign(score="high"), "gaussian", TypeError, "column 'score' must be numeric"),
        (lambda d: d.assign(score=np.where(d.index == 1, np.inf, d["score"])), "gaussian", ValueError,
         "must be finite"),
        (lambda d: d.assign(score=d["score"] + 0.5), "zoib", ValueError,
         r"\(family 'zoib'\) must lie in \[0, 1\]"),
        (lambda d: d[d["system"] == "s0"], "zoib", ValueError, "at least 2 distinct systems to compare; got 1"),
        (lambda d: d[d["topic"] == 1], "gaussian", ValueError, "at least 2 distinct topics to compare; got 1"),
        (lambda d: pd.concat([d, d.iloc[:1]]), "zoib", ValueError, r"one row per \('system', 'topic'\)"),
        (lambda d: d.iloc[:0], "zoib", ValueError, "df must not be empty"),
        (lambda d: d, "beta", ValueError, "family must be one of 'gaussian', 'zoib', 'zoib_rank'; got 'beta'"),
    ],
)
def test_check_frame_errors(mutate, family, exc, match):
    with pytest.raises(exc, match=match):
        check_frame(mutate(_frame()), family)


def test_check_frame_gaussian_accepts_scores_outside_unit_interval():
    out = check_frame(_frame().assign(score=lambda d: d["score"] * 10 - 3), "gaussian")
    assert out["score"].min() < 0


@pytest.mark.parametrize(
    ("rank", "exc", "match"),
    [
        ([1.5] * 12, ValueError, "must hold integers >= 1; got 12 others, e.g. 1.5"),
        ([0] * 12, ValueError, "must hold integers >= 1"),
        (["a"] * 12, TypeError, "column 'rank' must hold integers >= 1; got dtype"),
    ],
)
def test_check_frame_rank_errors(rank, exc, match):
    with pytest.raises(exc, match=match):
        check_frame(_frame().assign(rank=rank), "zoib_rank")


def test_check_frame_rank_duplicates():
    df = _frame().assign(rank=1)
    assert check_frame(df, "zoib_rank")["rank"].dtype == np.int64
    with pytest.raises(ValueError, match=r"one row per \('system', 'topic', 'rank'\)"):
        check_frame(pd.concat([df, df.iloc[:2]]), "zoib_rank")


def test_drop_bottom_systems_plain():
    df = check_frame(_frame(n_sys=8, seed=1), "zoib")
    means = df.groupby("system")["score"].mean().sort_values()
    kept = drop_bottom_systems(df, 0.25)
    assert set(kept["system"]) == set(means.index[2:])
    assert drop_bottom_systems(df, 0.0).equals(df)
    # per-rank data: a system's per-topic score is the sum of its gains
    ranked = pd.DataFrame({"system": ["a"] * 4 + ["b"] * 2 + ["c"] * 2, "topic": [1, 1, 2, 2, 1, 2, 1, 2],
                           "rank": [1, 2, 1, 2, 1, 1, 1, 1], "score": [0.1] * 4 + [0.15] * 2 + [0.05] * 2})
    assert set(drop_bottom_systems(check_frame(ranked, "zoib_rank"), 0.34)["system"]) == {"a", "b"}


@pytest.mark.parametrize(
    ("fraction", "exc", "match"),
    [(1.0, ValueError, r"must lie in \[0, 1\)"), (-0.1, ValueError, r"must lie in \[0, 1\)"),
     ("0.2", TypeError, "drop_bottom must be a number"), (0.9, ValueError, "leaves 1 system")],
)
def test_drop_bottom_errors(fraction, exc, match):
    with pytest.raises(exc, match=match):
        drop_bottom_systems(check_frame(_frame(n_sys=3), "zoib"), fraction)


RUN_A = """\
1 Q0 d1 1 3.0 A
1 Q0 d2 2 2.0 A
1 Q0 d3 3 2.0 A
1 Q0 d4 4 1.0 A
2 Q0 d5 1 1.0 A
"""
RUN_B = """\
1 Q0 d4 1 9.0 B
1 Q0 d1 2 8.0 B
9 Q0 d1 1 8.0 B
"""
QRELS = """\
1 0 d1 2
1 0 d3 1
1 0 d4 0
2 0 d6 1
3 0 d1 1
"""


@pytest.fixture
def trec_dir(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.txt").write_text(RUN_A)
    (runs / "b.txt").write_text(RUN_B)
    (tmp_path / "qrels.txt").write_text(QRELS)
    return tmp_path


def _plain_rbp(run: pd.DataFrame, qrels: pd.DataFrame, phi: float, gain: str, depth=None):
    grades = {(q, d): max(int(r), 0) for q, d, r in qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False)}
    top = max(grades.values())
    out = {}
    for system in sorted(set(run["system"])):
        for topic in sorted(set(qrels["query_id"])):
            rows = run[(run["system"] == system) & (run["query_id"] == topic)]
            docs = sorted(zip(rows["score"], rows["doc_id"], strict=True), reverse=True)  # score desc, doc desc
            total = 0.0
            for k, (_, doc) in enumerate(docs, start=1):
                if depth is not None and k > depth:
                    break
                g = grades.get((topic, doc), 0)
                g = (g > 0) * 1.0 if gain == "binary" else g / top
                total += (1 - phi) * phi ** (k - 1) * g
            out[(system, topic)] = total
    return out


@pytest.mark.parametrize(("phi", "gain", "depth"), [(0.8, "graded", None), (0.5, "binary", None), (0.8, "graded", 2)])
def test_frame_from_runs_matches_plain_rbp(trec_dir, phi, gain, depth):
    df = frame_from_runs(trec_dir / "runs", trec_dir / "qrels.txt", phi=phi, gain=gain, depth=depth)
    run = pd.concat([read_trec_run(trec_dir / "runs" / f) for f in ("a.txt", "b.txt")])
    ref = _plain_rbp(run, read_qrels(trec_dir / "qrels.txt"), phi, gain, depth)
    assert len(df) == 2 * 3  # every system on every judged topic
    got = {(s, t): v for s, t, v in df[["system", "topic", "score"]].itertuples(index=False)}
    assert got.keys() == ref.keys()
    for key, v in ref.items():
        assert got[key] == pytest.approx(v, abs=1e-12), key
    # hand check: system A, topic 1, graded phi 0.8: d1 (2/2) at rank 1, d3 (1/2) at rank 2
    # (d2 and d3 tie at 2.0, d3 first by descending doc id)
    if (phi, gain, depth) == (0.8, "graded", None):
        assert got[("A", "1")] == pytest.approx(0.2 * 1.0 + 0.2 * 0.8 * 0.5)


def test_frame_from_runs_per_rank(trec_dir):
    df = frame_from_runs([trec_dir / "runs" / "a.txt"], trec_dir / "qrels.txt", per_rank=True, depth=3)
    assert list(df.columns) == ["system", "topic", "rank", "score"]
    t1 = df[df["topic"] == "1"]
    assert t1["rank"].tolist() == [1, 2, 3]
    np.testing.assert_allclose(t1["score"], [0.2, 0.2 * 0.8 * 0.5, 0.0])
    totals = frame_from_runs(trec_dir / "runs" / "a.txt", trec_dir / "qrels.txt", depth=3)
    np.testing.assert_allclose(totals.set_index("topic").loc["1", "score"], t1["score"].sum())
    # the result feeds the zoib_rank family
    check_frame(frame_from_runs(trec_dir / "runs", trec_dir / "qrels.txt", per_rank=True, depth=2), "zoib_rank")


def test_frame_from_runs_errors(trec_dir, tmp_path):
    q = trec_dir / "qrels.txt"
    with pytest.raises(ValueError, match="per_rank=True needs depth="):
        frame_from_runs(trec_dir / "runs", q, per_rank=True)
    with pytest.raises(ValueError, match=r"phi must lie in \(0, 1\)"):
        frame_from_runs(trec_dir / "runs", q, phi=1.0)
    with pytest.raises(ValueError, match="depth must be an integer >= 1"):
        frame_from_runs(trec_dir / "runs", q, depth=0)
    with pytest.raises(ValueError, match="gain must be one of 'graded', 'binary'"):
        frame_from_runs(trec_dir / "runs", q, gain="ndcg")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="runs must be a DataFrame, a run file"):
        frame_from_runs(42, q)
    with pytest.raises(TypeError, match="qrels must be a DataFrame or a path"):
        frame_from_runs(trec_dir / "runs", 42)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no files"):
        frame_from_runs(empty, q)
    with pytest.raises(ValueError, match="runs must hold at least one run"):
        frame_from_runs([], q)
    with pytest.raises(ValueError, match="missing"):
        frame_from_runs(pd.DataFrame({"query_id": ["1"]}), q)
    (trec_dir / "runs" / "c.txt").write_text(RUN_A)  # same tag A twice
    with pytest.raises(ValueError, match="retrieve a document twice"):
        frame_from_runs(trec_dir / "runs", q)
    other = tmp_path / "other.qrels"
    other.write_text("77 0 d1 1\n")
    with pytest.raises(ValueError, match="no query of runs is judged"):
        frame_from_runs(trec_dir / "runs" / "a.txt", other)


def test_frame_from_trec_covid():
    assert frame_from_trec_covid("zoib")["system"].nunique() == 42
    assert frame_from_trec_covid("gaussian", pooled_only=False)["system"].nunique() == 107
    ranked = frame_from_trec_covid("zoib_rank")
    assert "rank" in ranked.columns and ranked["system"].nunique() == 42
    with pytest.raises(ValueError, match="family must be one of"):
        frame_from_trec_covid("normal")
