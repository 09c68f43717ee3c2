from __future__ import annotations

import numpy as np
import pytest

from tests.optional import given, settings, st
from uncertank import RankedLists
from uncertank.metrics import reliability_curve, resolve_metrics
from uncertank.metrics.accumulators import ReliabilityAccumulator
from uncertank.metrics.sharded import evaluate_dask

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

METRICS = [
    {"name": "recall_at_k", "k": 1}, "map", "mrr", {"name": "ndcg", "k": 5}, "rbp", "ece",
    {"name": "ece", "norm": "max", "label": "MCE via ece"}, "brier", "nll",
    {"name": "ece", "strategy": "quantile", "n_bins": 6},
]


def make(seed, n_queries=60, max_len=9, ties=True):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, n_queries)
    n = int(lengths.sum())
    p = np.round(rng.random(n), 1) if ties else rng.random(n)
    y = (rng.random(n) < p).astype(np.int64)
    rl = RankedLists.from_flat(p, y, np.concatenate([[0], np.cumsum(lengths)]))
    frame = pd.DataFrame({"query_id": np.repeat(np.arange(n_queries), lengths), "score": p, "label": y})
    return rl, frame


def check(got, rl):
    for m in resolve_metrics(METRICS):
        assert got[m.display_label] == pytest.approx(m(rl), rel=1e-12, abs=1e-15), m.display_label
    ref = reliability_curve(rl, n_bins=10)
    np.testing.assert_array_equal(got["curve"].counts, ref.counts)
    np.testing.assert_allclose(got["curve"].fraction_relevant, ref.fraction_relevant, rtol=1e-12)
    refq = reliability_curve(rl, n_bins=4, strategy="quantile")
    np.testing.assert_array_equal(got["quantile curve"].counts, refq.counts)
    np.testing.assert_array_equal(got["quantile curve"].edges, refq.edges)


def request(frame, **kw):
    metrics = {m.display_label: m for m in resolve_metrics(METRICS)}
    metrics["curve"] = ReliabilityAccumulator(n_bins=10)
    metrics["quantile curve"] = ReliabilityAccumulator(n_bins=4, strategy="quantile")
    return evaluate_dask(frame, metrics, **kw)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), npartitions=st.integers(1, 40))
def test_any_partitioning_gives_the_in_memory_values(seed, npartitions):
    rl, frame = make(seed)
    # partitions cut through queries: the merge joins the pieces
    ddf = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    check(request(ddf, scheduler="synchronous"), rl)


def test_single_query_partitions_and_empty_partitions():
    rl, frame = make(1, n_queries=3, max_len=30, ties=False)
    ddf = dd.from_pandas(frame, chunksize=2, sort=False)  # every query spans several partitions
    assert ddf.npartitions > 3
    empty = ddf.map_partitions(lambda df: df.iloc[:0])
    check(request(dd.concat([empty, ddf, empty]), scheduler="synchronous"), rl)


@pytest.mark.slow
def test_local_cluster_equals_the_in_memory_result(tmp_path):
    distributed = pytest.importorskip("distributed")
    rl, frame = make(7, n_queries=400)
    frame.to_parquet(tmp_path / "pairs.parquet", row_group_size=97)
    ddf = dd.read_parquet(tmp_path / "pairs.parquet", split_row_groups=True)
    assert ddf.npartitions > 1
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        got = request(ddf, scheduler=client)
    check(got, rl)


def test_sharded_errors():
    _rl, frame = make(2, n_queries=10)
    ddf = dd.from_pandas(frame, npartitions=2, sort=False)
    with pytest.raises(ValueError, match="frame has no column 'qid'"):
        evaluate_dask(ddf, ["map"], query="qid")
    with pytest.raises(TypeError, match=r"frame must be a dask\.dataframe\.DataFrame; got DataFrame"):
        evaluate_dask(frame, ["map"])
    bad = frame.copy()
    bad.loc[bad["query_id"] == 1, "query_id"] = 0
    bad.loc[bad["query_id"] == 2, "query_id"] = 1
    bad.loc[bad["query_id"] == 3, "query_id"] = 0  # query 0 comes back after query 1
    with pytest.raises(ValueError, match="the rows of query 0 are not contiguous"):
        evaluate_dask(dd.from_pandas(bad, npartitions=1, sort=False), ["map"], scheduler="synchronous")
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        evaluate_dask(ddf, ["nope"])
