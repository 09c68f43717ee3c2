from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.optional import HealthCheck, given, settings, st
from uncertank import RankedLists
from uncertank.metrics import (
    brier_score,
    calibration_by_rank,
    expected_calibration_error,
    mean_average_precision,
    negative_log_likelihood,
    reliability_curve,
    resolve_metrics,
)
from uncertank.metrics import quantiles as Q
from uncertank.metrics.accumulators import (
    BrierAccumulator,
    CalibrationByRankAccumulator,
    ECEAccumulator,
    NLLAccumulator,
    PerQueryMean,
    ReliabilityAccumulator,
)
from uncertank.metrics.quantiles import quantile_edges
from uncertank.metrics.scored_pairs import read_scored_pairs
from uncertank.metrics.streaming import evaluate_stream

ALL_METRICS = [
    {"name": "recall_at_k", "k": 1}, {"name": "recall_at_k", "k": 3, "n": 4}, "map", {"name": "map", "k": 2},
    "mrr", {"name": "ndcg", "k": 3}, {"name": "ndcg", "k": None}, "rbp", {"name": "rbp_residual", "depth": 3},
    "ece", {"name": "ece", "n_bins": 7, "norm": "l2"}, {"name": "ece", "convention": "penha-hauff"},
    {"name": "ece", "n_bins": 10, "convention": "penha-hauff", "label": "ECE PH 10"}, "mce", "brier", "nll",
    {"name": "ece", "strategy": "quantile"}, {"name": "mce", "strategy": "quantile", "n_bins": 4},
]


@st.composite
def ranked_lists(draw, max_queries=25, max_len=12):
    n_q = draw(st.integers(1, max_queries))
    lengths = draw(st.lists(st.integers(1, max_len), min_size=n_q, max_size=n_q))
    n = sum(lengths)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # a coarse grid makes ties, exact 0 and 1, and bin edges likely
    grid = draw(st.sampled_from([None, 4, 10, 50]))
    p = rng.random(n) if grid is None else rng.integers(0, grid + 1, n) / grid
    y = rng.integers(0, 3, n) * (rng.random(n) < p)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return RankedLists.from_flat(p, y, offsets)


def query_chunks(rl: RankedLists, cuts: list[int]) -> list[RankedLists]:
    bounds = sorted({0, rl.n_queries, *[c % (rl.n_queries + 1) for c in cuts]})
    return [rl.subset(np.arange(a, b)) for a, b in itertools.pairwise(bounds) if b > a]


def close(a, b):
    if isinstance(b, tuple):
        return all(close(x, z) for x, z in zip(a, b, strict=True))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rl=ranked_lists(), cuts=st.lists(st.integers(0, 30), max_size=6))
def test_any_chunking_into_whole_queries_gives_the_in_memory_value(rl, cuts):
    metrics = resolve_metrics(ALL_METRICS)
    chunks = query_chunks(rl, cuts)
    got = evaluate_stream(chunks, metrics)
    for m in metrics:
        assert close(got[m.display_label], m(rl)), m.display_label


@settings(max_examples=60, deadline=None)
@given(rl=ranked_lists(), cuts=st.lists(st.integers(0, 300), max_size=6), n_bins=st.integers(1, 12))
def test_pair_metrics_accept_any_split_and_bin_counts_are_exact(rl, cuts, n_bins):
    p, y = rl.scores, rl.labels
    bounds = sorted({0, p.size, *[c % (p.size + 1) for c in cuts]})
    ece, rel, brier, nll = ECEAccumulator(n_bins=n_bins), ReliabilityAccumulator(n_bins=n_bins), \
        BrierAccumulator(), NLLAccumulator()
    for a, b in itertools.pairwise(bounds):
        if b > a:
            for acc in (ece, rel, brier, nll):
                acc.update(p[a:b], y[a:b])
    ref = reliability_curve(p, y, n_bins=n_bins)
    curve = rel.compute()
    np.testing.assert_array_equal(curve.counts, ref.counts)  # exact
    np.testing.assert_array_equal(curve.edges, ref.edges)
    np.testing.assert_allclose(curve.mean_confidence, ref.mean_confidence, rtol=1e-12)
    np.testing.assert_allclose(curve.fraction_relevant, ref.fraction_relevant, rtol=1e-12)
    assert close(ece.compute(), expected_calibration_error(p, y, n_bins=n_bins))
    assert close(brier.compute(), brier_score(p, y))
    assert close(nll.compute(), negative_log_likelihood(p, y))


@settings(max_examples=40, deadline=None)
@given(rl=ranked_lists(), cuts=st.lists(st.integers(0, 30), max_size=5),
       max_rank=st.sampled_from([None, 1, 3, 20]), convention=st.sampled_from(["naeini", "penha-hauff"]),
       norm=st.sampled_from(["l1", "max"]))
def test_calibration_by_rank_streams_over_whole_queries(rl, cuts, max_rank, convention, norm):
    if convention == "penha-hauff":
        norm = "l1"
    acc = CalibrationByRankAccumulator(max_rank=max_rank, convention=convention, norm=norm)
    for chunk in query_chunks(rl, cuts):
        acc.update(chunk)
    ref = calibration_by_rank(rl, max_rank=max_rank, convention=convention, norm=norm)
    np.testing.assert_array_equal(np.isnan(acc.compute()), np.isnan(ref))
    np.testing.assert_allclose(acc.compute(), ref, rtol=1e-12, atol=1e-15)


def test_merge_equals_one_accumulator_over_everything():
    rng = np.random.default_rng(0)
    p, y = rng.random((200, 10)), rng.integers(0, 2, (200, 10))
    for m in resolve_metrics(["map", "ece", "brier", {"name": "ndcg", "k": 5}]):
        left, right, whole = m.accumulator(), m.accumulator(), m.accumulator()
        left.update(p[:70], y[:70])
        right.update(p[70:], y[70:])
        whole.update(p, y)
        assert left.merge(right).compute() == pytest.approx(whole.compute(), rel=1e-13)
        assert whole.compute() == pytest.approx(m(p, y), rel=1e-13)
    a, b = CalibrationByRankAccumulator(), CalibrationByRankAccumulator()
    a.update(p[:5, :3], y[:5, :3])  # shorter lists: the merge grows the positions
    b.update(p[5:], y[5:])
    np.testing.assert_allclose(
        a.merge(b).compute(),
        calibration_by_rank(RankedLists.from_flat(
            np.concatenate([p[:5, :3].ravel(), p[5:].ravel()]), np.concatenate([y[:5, :3].ravel(), y[5:].ravel()]),
            np.concatenate([np.arange(0, 16, 3), 15 + np.arange(1, 196) * 10]))),
        rtol=1e-12)


def test_a_large_stream_keeps_float64_accuracy():
    rng = np.random.default_rng(1)
    acc = ECEAccumulator()
    ps, ys = [], []
    for _ in range(20):
        p = rng.random(50_000).astype(np.float32).astype(np.float64)
        y = rng.random(50_000) < p
        acc.update(p, y)
        ps.append(p)
        ys.append(y)
    assert acc.compute() == pytest.approx(expected_calibration_error(np.concatenate(ps), np.concatenate(ys)),
                                          rel=1e-12)
    assert acc.counts.sum() == 1_000_000


@settings(max_examples=80, deadline=None)
@given(rl=ranked_lists(max_queries=40), n_bins=st.integers(1, 15), size=st.integers(1, 50),
       collect=st.sampled_from([0, 5, 1 << 20]))
def test_quantile_edges_equal_numpy_bit_for_bit(rl, n_bins, size, collect):
    p = rl.scores
    chunks = [(p[i:i + size], rl.labels[i:i + size]) for i in range(0, p.size, size)]
    old = Q._COLLECT
    Q._COLLECT = collect  # 0: resolve all 64 bits by histograms; 5: gather small groups; default: gather early
    try:
        edges = quantile_edges(chunks, n_bins=n_bins)
    finally:
        Q._COLLECT = old
    np.testing.assert_array_equal(edges, np.quantile(p, np.linspace(0, 1, n_bins + 1)))


def test_quantile_bins_stream_from_a_file_read_twice(tmp_path, lists):
    pytest.importorskip("pyarrow")
    path = tmp_path / "pairs.parquet"
    _frame(lists).to_parquet(path)
    got = evaluate_stream(lambda: read_scored_pairs(path, chunk_size=33),
                          {"q": {"name": "ece", "strategy": "quantile", "n_bins": 7},
                           "curve": ReliabilityAccumulator(strategy="quantile", n_bins=5)})
    assert got["q"] == pytest.approx(expected_calibration_error(lists, strategy="quantile", n_bins=7), rel=1e-12)
    ref = reliability_curve(lists, strategy="quantile", n_bins=5)
    np.testing.assert_array_equal(got["curve"].counts, ref.counts)
    np.testing.assert_array_equal(got["curve"].edges, ref.edges)


def test_streaming_errors():
    with pytest.raises(ValueError, match="ECEAccumulator cannot stream balanced=True"):
        ECEAccumulator(balanced=True)
    with pytest.raises(ValueError, match=r"applies only to balanced=True, which cannot stream; got n_subsamples=3"):
        ECEAccumulator(n_subsamples=3)
    assert ECEAccumulator(n_subsamples=1).update([0.2, 0.4], [0, 1]).compute() == pytest.approx(0.4)
    with pytest.raises(ValueError, match="CalibrationByRankAccumulator streams equal-width bins only"):
        CalibrationByRankAccumulator(strategy="quantile")
    with pytest.raises(ValueError, match="needs the quantile edges of all the scores before the first update"):
        ECEAccumulator(strategy="quantile").update([0.2, 0.4], [0, 1])
    with pytest.raises(ValueError, match=r"edges must be 11 non-decreasing finite values .* got shape \(3,\)"):
        ReliabilityAccumulator(strategy="quantile", edges=[0, 0.5, 1])
    with pytest.raises(ValueError, match="edges are for strategy='quantile'; got strategy='uniform'"):
        ECEAccumulator(edges=np.linspace(0, 1, 11))
    started = ECEAccumulator(strategy="quantile", n_bins=2, edges=[0, 0.5, 1]).update([0.2], [1])
    with pytest.raises(ValueError, match="set the edges before the first update"):
        started.set_edges([0, 0.4, 1])
    with pytest.raises(ValueError, match="equal-mass bins need the chunks twice"):
        evaluate_stream(iter([(np.array([0.5]), np.array([1]))]), [{"name": "ece", "strategy": "quantile"}])
    with pytest.raises(ValueError, match="quantile_edges needs at least one score"):
        quantile_edges([], n_bins=3)
    with pytest.raises(ValueError, match=r"a chunk tuple must be \(scores, labels\)"):
        quantile_edges([(1, 2, 3)])
    with pytest.raises(ValueError, match="metric 'ece' has no per-query value; it cannot be averaged"):
        PerQueryMean(resolve_metrics(["ece"])[0])
    with pytest.raises(ValueError, match=r"eps must be a finite number > 0 and < 0.5; got 2"):
        NLLAccumulator(eps=2)
    with pytest.raises(TypeError, match="can only merge a ECEAccumulator with another; got BrierAccumulator"):
        ECEAccumulator().merge(BrierAccumulator())
    with pytest.raises(ValueError, match="can only merge ECEAccumulators with the same options"):
        ECEAccumulator(n_bins=5).merge(ECEAccumulator(n_bins=6))
    for acc in (ECEAccumulator(), ReliabilityAccumulator(), BrierAccumulator(), NLLAccumulator(),
                CalibrationByRankAccumulator(), resolve_metrics(["map"])[0].accumulator()):
        with pytest.raises(ValueError, match=r"compute\(\) needs at least one chunk"):
            acc.compute()
    with pytest.raises(ValueError, match=r"a chunk tuple must be \(scores, labels\); got 3 items"):
        evaluate_stream([(1, 2, 3)], ["map"])
    with pytest.raises(ValueError, match="metrics must have distinct labels"):
        evaluate_stream([], ["map", "map"])
    with pytest.raises(TypeError, match="metrics must be a list or a mapping; got a single str"):
        evaluate_stream([], "map")
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        ECEAccumulator().update([0.5, 1.5], [0, 1])


def test_evaluate_stream_takes_accumulators_and_names():
    rng = np.random.default_rng(2)
    p, y = rng.random((30, 5)), rng.integers(0, 2, (30, 5))
    out = evaluate_stream([(p[:10], y[:10]), (p[10:], y[10:])],
                          {"curve": ReliabilityAccumulator(n_bins=4), "AP": "map"})
    assert list(out) == ["curve", "AP"]
    np.testing.assert_array_equal(out["curve"].counts, reliability_curve(p, y, n_bins=4).counts)



def test_evaluate_stream_takes_a_function_returning_the_chunks():
    rng = np.random.default_rng(3)
    p, y = rng.random((40, 6)), rng.integers(0, 2, (40, 6))
    calls = []

    def chunks():
        calls.append(1)
        return iter([(p[:15], y[:15]), (p[15:], y[15:])])

    # one pass (uniform bins, ranking): called once; equal-mass bins: called for every pass
    out = evaluate_stream(chunks, ["map", "ece"])
    assert len(calls) == 1
    assert out["MAP"] == pytest.approx(mean_average_precision(p, y), rel=1e-12)
    assert out["ECE"] == pytest.approx(expected_calibration_error(p, y), rel=1e-12)
    q = evaluate_stream(chunks, [{"name": "ece", "strategy": "quantile"}])
    assert len(calls) > 2
    assert q["ECE quantile"] == pytest.approx(expected_calibration_error(p, y, strategy="quantile"), rel=1e-12)


def test_evaluate_stream_names_chunks_when_it_is_not_iterable():
    with pytest.raises(TypeError, match=r"chunks must be an iterable of chunks .* a function returning one; got int"):
        evaluate_stream(3, ["map"])
    with pytest.raises(TypeError, match=r"chunks must be an iterable .*; got NoneType"):
        evaluate_stream(lambda: None, ["map"])


# --------------------------------------------------------------------------- reader


def _frame(rl: RankedLists, ids=None):
    pd = pytest.importorskip("pandas")
    q = np.repeat(np.arange(rl.n_queries), rl.lengths) if ids is None else ids
    return pd.DataFrame({"query_id": [f"q{v}" for v in q], "score": rl.scores, "label": rl.labels})


@pytest.fixture
def lists():
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 9, 40)
    n = int(lengths.sum())
    p = np.round(rng.random(n), 2)
    return RankedLists.from_flat(p, (rng.random(n) < p).astype(int), np.concatenate([[0], np.cumsum(lengths)]))


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("chunk_size", [1, 7, 1000])
def test_reader_streams_whole_queries_from_parquet_and_csv(tmp_path, lists, fmt, chunk_size):
    pytest.importorskip("pyarrow")
    df = _frame(lists)
    path = tmp_path / f"pairs.{fmt}"
    df.to_parquet(path) if fmt == "parquet" else df.to_csv(path, index=False)
    chunks = list(read_scored_pairs(path, chunk_size=chunk_size))
    assert sum(c.n_queries for c in chunks) == lists.n_queries
    np.testing.assert_array_equal(np.concatenate([c.lengths for c in chunks]), lists.lengths)
    np.testing.assert_array_equal(np.concatenate([c.scores for c in chunks]), lists.scores)
    np.testing.assert_array_equal(np.concatenate([c.labels for c in chunks]), lists.labels)
    got = evaluate_stream(lambda: read_scored_pairs(path, chunk_size=chunk_size), ALL_METRICS)
    for m in resolve_metrics(ALL_METRICS):
        assert close(got[m.display_label], m(lists))


def test_reader_errors(tmp_path, lists):
    pytest.importorskip("pyarrow")
    ids = np.repeat(np.arange(lists.n_queries), lists.lengths)
    ids[ids == 2] = 0  # query 0 comes back after query 1
    bad = tmp_path / "bad.parquet"
    _frame(lists, ids).to_parquet(bad)
    with pytest.raises(ValueError, match="the rows of query 'q0' are not contiguous"):
        list(read_scored_pairs(bad, chunk_size=10_000))
    good = tmp_path / "pairs.parquet"
    _frame(lists).to_parquet(good)
    with pytest.raises(ValueError, match="no column 'qid'"):
        list(read_scored_pairs(good, query="qid"))
    csv = tmp_path / "pairs.csv"
    _frame(lists).to_csv(csv, index=False)
    with pytest.raises(ValueError, match="cannot read columns"):
        list(read_scored_pairs(csv, score="prob"))
    with pytest.raises(ValueError, match="cannot tell the format of"):
        list(read_scored_pairs(tmp_path / "pairs.txt"))
    with pytest.raises(ValueError, match="format must be one of 'parquet', 'csv'; got 'json'"):
        list(read_scored_pairs(good, format="json"))
    with pytest.raises(TypeError, match="chunk_size must be an integer >= 1"):
        list(read_scored_pairs(good, chunk_size=1.5))
    neg = _frame(lists)
    neg.loc[3, "label"] = -1
    negp = tmp_path / "neg.parquet"
    neg.to_parquet(negp)
    with pytest.raises(ValueError, match="labels must be integers >= 0"):
        list(read_scored_pairs(negp))
