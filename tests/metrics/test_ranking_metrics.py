from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from tests.optional import given, settings, st
from uncertank import RankedLists
from uncertank.metrics import _inputs as I
from uncertank.metrics import (
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    rank_biased_precision,
    recall_at_k,
)
from uncertank.metrics import ranks as R

# --------------------------------------------------------------------------- data


def ragged(seed: int, n_queries: int = 40, max_len: int = 12, ties: bool = False, grades: int = 3,
           p_rel: float = 0.3):
    """Seeded ragged lists: flat scores, labels, offsets; some queries without a relevant."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, n_queries)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    scores = rng.random(n) + 0.01  # positive: torchmetrics-style peers drop scores <= 0
    if ties:
        scores = np.round(scores * 4) / 4  # few distinct values: many ties
    labels = np.where(rng.random(n) < p_rel, rng.integers(1, grades + 1, n), 0)
    return scores, labels, offsets


def per_query_lists(scores, labels, offsets):
    return [(scores[a:b], labels[a:b]) for a, b in itertools.pairwise(offsets)]


def ref_order(s):
    """The documented tie rule, written out: descending score, then input position."""
    return sorted(range(len(s)), key=lambda i: (-s[i], i))


def ref_metrics(scores, labels, offsets, k=3, p=0.8, n_cut=None, max_grade=None, depth=None):
    """Plain per-query loops for every metric."""
    out = {name: [] for name in ("recall", "rr", "ap", "ndcg", "rbp", "res")}
    for s, y in per_query_lists(scores, labels, offsets):
        s, y = list(s), list(y)
        if n_cut is not None:
            s, y = s[:n_cut], y[:n_cut]
        order = ref_order(s)
        ranked = [y[i] for i in order]
        out["recall"].append(float(any(g > 0 for g in ranked[:k])))
        rr = 0.0
        for r, g in enumerate(ranked):
            if g > 0:
                rr = 1.0 / (r + 1)
                break
        out["rr"].append(rr)
        n_rel = sum(g > 0 for g in ranked)
        hits, ap = 0, 0.0
        for r, g in enumerate(ranked):
            if g > 0:
                hits += 1
                ap += hits / (r + 1)
        out["ap"].append(ap / n_rel if n_rel else 0.0)
        dcg = sum(g / math.log2(r + 2) for r, g in enumerate(ranked[:k]))
        ideal = sorted(y, reverse=True)
        idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal[:k]))
        out["ndcg"].append(dcg / idcg if idcg > 0 else 0.0)
        d = len(ranked) if depth is None else min(depth, len(ranked))
        rbp = 0.0
        for r, g in enumerate(ranked[:d]):
            gain = float(g > 0) if max_grade is None else min(g, max_grade) / max_grade
            rbp += (1 - p) * gain * p ** r
        out["rbp"].append(rbp)
        out["res"].append(p ** d)
    return {key: np.array(v) for key, v in out.items()}


def all_paths(scores, labels, offsets):
    """The same lists as a RankedLists in every internal layout: padded block and flat."""
    rl = RankedLists.from_flat(scores, labels, offsets)
    yield "padded", rl
    yield "flat", rl  # run with _PAD_FACTOR = 0 below


@pytest.fixture(params=["padded", "flat"])
def layout(request, monkeypatch):
    if request.param == "flat":
        monkeypatch.setattr(I, "_PAD_FACTOR", 0)
    return request.param


# --------------------------------------------------------------------------- plain-loop references


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_all_metrics_match_plain_loops(seed, ties, layout):
    scores, labels, offsets = ragged(seed, ties=ties)
    rl = RankedLists.from_flat(scores, labels, offsets)
    ref = ref_metrics(scores, labels, offsets, k=3, p=0.7)
    np.testing.assert_array_equal(recall_at_k(rl, k=3, per_query=True), ref["recall"])
    np.testing.assert_allclose(mean_reciprocal_rank(rl, per_query=True), ref["rr"], rtol=1e-12)
    np.testing.assert_allclose(mean_average_precision(rl, per_query=True), ref["ap"], rtol=1e-12)
    np.testing.assert_allclose(ndcg_at_k(rl, k=3, per_query=True), ref["ndcg"], rtol=1e-12)
    value, res = rank_biased_precision(rl, p=0.7, per_query=True)
    np.testing.assert_allclose(value, ref["rbp"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(res, ref["res"], rtol=1e-12)
    assert recall_at_k(rl, k=3) == pytest.approx(ref["recall"].mean())
    assert mean_average_precision(rl) == pytest.approx(ref["ap"].mean())


@pytest.mark.parametrize("ties", [False, True])
def test_dense_input_matches_plain_loops(ties):
    rng = np.random.default_rng(5)
    s = rng.random((30, 8))
    if ties:
        s = np.round(s * 3) / 3
    y = np.where(rng.random((30, 8)) < 0.25, rng.integers(1, 4, (30, 8)), 0)
    offsets = np.arange(0, 30 * 8 + 1, 8)
    ref = ref_metrics(s.ravel(), y.ravel(), offsets, k=2, p=0.9, max_grade=3, depth=5)
    np.testing.assert_array_equal(recall_at_k(s, y, k=2, per_query=True), ref["recall"])
    np.testing.assert_allclose(mean_reciprocal_rank(s, y, per_query=True), ref["rr"])
    np.testing.assert_allclose(mean_average_precision(s, y, per_query=True), ref["ap"])
    np.testing.assert_allclose(ndcg_at_k(s, y, k=2, per_query=True), ref["ndcg"])
    value, res = rank_biased_precision(s, y, p=0.9, max_grade=3, depth=5, per_query=True)
    np.testing.assert_allclose(value, ref["rbp"], atol=1e-15)
    np.testing.assert_allclose(res, ref["res"])


@pytest.mark.parametrize("method", ["compare", "sort", "lexsort"])
@pytest.mark.parametrize("ties", [False, True])
def test_rank_methods_agree(method, ties):
    scores, labels, offsets = ragged(11, n_queries=60, ties=ties, p_rel=0.5)
    lists = I.as_lists(RankedLists.from_flat(scores, labels, offsets), None).as_block()
    got = R.relevant_ranks(lists, ideal=True, method=method)
    ref_rank, ref_above, ref_ideal = [], [], []
    for s, y in per_query_lists(scores, labels, offsets):
        order = ref_order(list(s))
        pos = {i: r for r, i in enumerate(order)}
        iorder = sorted(range(len(y)), key=lambda i: (-y[i], i))
        ipos = {i: r for r, i in enumerate(iorder)}
        for j in range(len(s)):
            if y[j] > 0:
                ref_rank.append(pos[j])
                ref_above.append(sum(1 for i in range(len(s)) if y[i] > 0 and pos[i] < pos[j]))
                ref_ideal.append(ipos[j])
    np.testing.assert_array_equal(got.rank, ref_rank)
    np.testing.assert_array_equal(got.above, ref_above)
    np.testing.assert_array_equal(got.ideal, ref_ideal)


def test_compare_path_chunks(monkeypatch):
    monkeypatch.setattr(R, "_CHUNK_CELLS", 16)  # several chunks of two rows
    scores, labels, offsets = ragged(3, n_queries=25, ties=True, p_rel=0.4)
    lists = I.as_lists(RankedLists.from_flat(scores, labels, offsets), None).as_block()
    a = R.relevant_ranks(lists, ideal=True, method="compare")
    b = R.relevant_ranks(lists, ideal=True, method="lexsort")
    np.testing.assert_array_equal(a.rank, b.rank)
    np.testing.assert_array_equal(a.above, b.above)
    np.testing.assert_array_equal(a.ideal, b.ideal)


def test_method_choice_follows_density():
    rng = np.random.default_rng(0)
    s = rng.random((100, 10))
    sparse = I.as_lists(s, (rng.random((100, 10)) < 0.1).astype(int))
    dense = I.as_lists(s, np.ones((100, 10), dtype=int))
    assert R._choose_method(sparse, int((sparse.y2 > 0).sum())) == "compare"
    assert R._choose_method(dense, 1000) == "sort"


def test_recall_first_n_candidates():
    scores, labels, offsets = ragged(4, ties=True)
    rl = RankedLists.from_flat(scores, labels, offsets)
    ref = ref_metrics(scores, labels, offsets, k=1, n_cut=2)
    np.testing.assert_array_equal(recall_at_k(rl, k=1, n=2, per_query=True), ref["recall"])
    s2, y2 = np.random.default_rng(0).random((9, 10)), np.eye(9, 10, dtype=int)
    ref2 = ref_metrics(s2.ravel(), y2.ravel(), np.arange(0, 91, 10), k=1, n_cut=2)
    np.testing.assert_array_equal(recall_at_k(s2, y2, k=1, n=2, per_query=True), ref2["recall"])


def test_recall_first_n_flat_layout(monkeypatch):
    monkeypatch.setattr(I, "_PAD_FACTOR", 0)
    scores, labels, offsets = ragged(8, ties=True)
    rl = RankedLists.from_flat(scores, labels, offsets)
    ref = ref_metrics(scores, labels, offsets, k=2, n_cut=3)
    np.testing.assert_array_equal(recall_at_k(rl, k=2, n=3, per_query=True), ref["recall"])


# --------------------------------------------------------------------------- the tie rule


def test_tie_rule_earlier_candidate_ranks_first():
    # All scores tie: the ranking is the input order.
    scores = [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
    labels = [[0, 1, 0], [1, 0, 0]]
    assert recall_at_k(scores, labels, k=1, per_query=True).tolist() == [0.0, 1.0]
    assert mean_reciprocal_rank(scores, labels, per_query=True).tolist() == [0.5, 1.0]
    assert mean_average_precision(scores, labels, per_query=True).tolist() == [0.5, 1.0]
    value, _ = rank_biased_precision(scores, labels, p=0.5, per_query=True)
    assert value.tolist() == [0.25, 0.5]
    # A partial tie: candidate 2 (label 1) ties with candidate 0 and comes after it.
    assert mean_reciprocal_rank([[0.7, 0.2, 0.7]], [[0, 0, 1]]) == 0.5
    assert mean_reciprocal_rank([[0.7, 0.2, 0.7]], [[1, 0, 0]]) == 1.0


def test_tie_rule_same_in_every_layout(monkeypatch):
    s = np.array([0.5, 0.5, 0.9, 0.5, 0.5, 0.1, 0.5])
    y = np.array([0, 1, 0, 1, 0, 0, 1])
    offsets = np.array([0, 4, 7])
    expected = [(1 / 3 + 2 / 4) / 2, 1 / 2]  # relevant at ranks 3, 4 and at rank 2
    rl = RankedLists.from_flat(s, y, offsets)
    np.testing.assert_allclose(mean_average_precision(rl, per_query=True), expected)
    monkeypatch.setattr(I, "_PAD_FACTOR", 0)
    np.testing.assert_allclose(mean_average_precision(rl, per_query=True), expected)


# --------------------------------------------------------------------------- independent references


@pytest.mark.parametrize("seed", [0, 7])
def test_matches_pytrec_eval(seed, layout):
    pytrec_eval = pytest.importorskip("pytrec_eval")

    scores, labels, offsets = ragged(seed, n_queries=50, max_len=20)  # continuous: no ties
    qrel, run = {}, {}
    for q, (s, y) in enumerate(per_query_lists(scores, labels, offsets)):
        qrel[f"q{q}"] = {f"d{j}": int(y[j]) for j in range(len(s))}
        run[f"q{q}"] = {f"d{j}": float(s[j]) for j in range(len(s))}
    ev = pytrec_eval.RelevanceEvaluator(qrel, {"map", "recip_rank", "ndcg_cut.5", "map_cut.5"})
    res = ev.evaluate(run)
    ref = {m: np.array([res[f"q{q}"][m] for q in range(len(offsets) - 1)])
           for m in ("map", "recip_rank", "ndcg_cut_5", "map_cut_5")}
    rl = RankedLists.from_flat(scores, labels, offsets)
    assert (ref["map"] == 0).any()  # some queries have no relevant candidate: trec_eval counts 0
    np.testing.assert_allclose(mean_average_precision(rl, per_query=True), ref["map"], atol=1e-12)
    np.testing.assert_allclose(mean_average_precision(rl, k=5, per_query=True), ref["map_cut_5"], atol=1e-12)
    np.testing.assert_allclose(mean_reciprocal_rank(rl, per_query=True), ref["recip_rank"], atol=1e-12)
    np.testing.assert_allclose(ndcg_at_k(rl, k=5, per_query=True), ref["ndcg_cut_5"], atol=1e-12)
    assert mean_average_precision(rl) == pytest.approx(ref["map"].mean(), abs=1e-12)


@pytest.mark.slow  # ranx compiles its numba kernels on first use (~25 s here)
def test_matches_ranx():
    ranx = pytest.importorskip("ranx")
    Qrels, Run, evaluate = ranx.Qrels, ranx.Run, ranx.evaluate

    rng = np.random.default_rng(3)
    n_q, n_c = 40, 10
    s = rng.random((n_q, n_c)) + 0.01
    y = np.where(rng.random((n_q, n_c)) < 0.3, rng.integers(1, 3, (n_q, n_c)), 0)
    y[np.arange(n_q), rng.integers(0, n_c, n_q)] = 1  # ranx needs a relevant per query
    qrels = Qrels.from_dict({f"q{q:03d}": {f"d{j}": int(y[q, j]) for j in range(n_c) if y[q, j] > 0}
                             for q in range(n_q)})
    run = Run.from_dict({f"q{q:03d}": {f"d{j}": float(s[q, j]) for j in range(n_c)} for q in range(n_q)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate(qrels, run, ["map", "mrr", "ndcg@5", "hit_rate@1", "hit_rate@3"],
                       return_mean=False)
        binary = Qrels.from_dict({f"q{q:03d}": {f"d{j}": 1 for j in range(n_c) if y[q, j] > 0}
                                  for q in range(n_q)})
        rbp = evaluate(binary, Run.from_dict(run.to_dict()), "rbp.8", return_mean=False)
    np.testing.assert_allclose(mean_average_precision(s, y, per_query=True), res["map"], atol=1e-12)
    np.testing.assert_allclose(mean_reciprocal_rank(s, y, per_query=True), res["mrr"], atol=1e-12)
    np.testing.assert_allclose(ndcg_at_k(s, y, k=5, per_query=True), res["ndcg@5"], atol=1e-12)
    np.testing.assert_allclose(recall_at_k(s, y, k=1, per_query=True), res["hit_rate@1"])
    np.testing.assert_allclose(recall_at_k(s, y, k=3, per_query=True), res["hit_rate@3"])
    np.testing.assert_allclose(rank_biased_precision(s, y, p=0.8, per_query=True)[0], rbp, atol=1e-12)


def test_large_dense_matches_sorted_reference():
    # One relevant per query, the R_10@1 setting, at a size that exercises chunking.
    rng = np.random.default_rng(1)
    s = rng.random((50_000, 10))
    pos = rng.integers(0, 10, 50_000)
    y = np.zeros((50_000, 10), dtype=np.int64)
    y[np.arange(50_000), pos] = 1
    order = np.argsort(-s, axis=1, kind="stable")
    rank = np.argmax(np.take_along_axis(y, order, 1), axis=1)
    assert recall_at_k(s, y, k=1) == pytest.approx(np.mean(rank == 0))
    assert mean_average_precision(s, y) == pytest.approx(np.mean(1 / (rank + 1)))
    assert mean_reciprocal_rank(s, y) == pytest.approx(np.mean(1 / (rank + 1)))


# --------------------------------------------------------------------------- conventions


def test_queries_without_relevant_count_zero():
    s = [[0.9, 0.1], [0.4, 0.6]]
    y = [[0, 0], [0, 1]]
    for fn in (recall_at_k, mean_reciprocal_rank, mean_average_precision, ndcg_at_k):
        vals = fn(s, y, per_query=True)
        assert vals[0] == 0.0 and vals[1] == 1.0
        assert fn(s, y) == 0.5
    value, residual = rank_biased_precision(s, y, p=0.5, per_query=True)
    assert value.tolist() == [0.0, 0.5] and residual.tolist() == [0.25, 0.25]
    # no relevant candidate anywhere, in every layout
    rl = RankedLists.from_flat([0.1, 0.2, 0.3], [0, 0, 0], [0, 1, 3])
    for fn in (recall_at_k, mean_reciprocal_rank, mean_average_precision, ndcg_at_k):
        assert fn(rl, per_query=True).tolist() == [0.0, 0.0]
        assert fn(np.ones((2, 3)), np.zeros((2, 3), dtype=int)) == 0.0
    assert rank_biased_precision(rl, p=0.5) == (0.0, (0.5 + 0.25) / 2)


def test_rbp_residual_depth_and_grades():
    s = [[0.9, 0.8, 0.7, 0.6]]
    y = [[2, 0, 1, 0]]
    assert rank_biased_precision(s, y, p=0.5) == (0.5 * (1 + 0.25), 0.5**4)
    assert rank_biased_precision(s, y, p=0.5, depth=2) == (0.5, 0.25)
    assert rank_biased_precision(s, y, p=0.5, max_grade=2) == (0.5 * (1 + 0.5 * 0.25), 0.5**4)
    # value + residual bounds the RBP of any continuation of the list
    v, r = rank_biased_precision(s, y, p=0.5, depth=2)
    v_full, _ = rank_biased_precision(s, y, p=0.5)
    assert v <= v_full <= v + r


def test_ndcg_uses_linear_gain():
    # 2^y - 1 would weigh the label 3 candidate 7x label 1; linear gain weighs it 3x.
    got = ndcg_at_k([[0.9, 0.8]], [[1, 3]], k=2)
    assert got == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))


def test_ndcg_k_none_is_full_list():
    s, y, offsets = ragged(2)
    rl = RankedLists.from_flat(s, y, offsets)
    np.testing.assert_allclose(ndcg_at_k(rl, k=None, per_query=True),
                               ndcg_at_k(rl, k=100, per_query=True))


def test_accepts_bool_float_and_small_int_labels():
    s = np.array([[0.3, 0.9, 0.1]])
    for y in (np.array([[False, True, False]]), np.array([[0.0, 1.0, 0.0]]),
              np.array([[0, 1, 0]], dtype=np.int8), np.array([[0, 1, 0]], dtype=np.uint8)):
        assert mean_reciprocal_rank(s, y) == 1.0
    assert mean_reciprocal_rank(s.astype(np.float32), [[0, 1, 0]]) == 1.0


def test_mrr_cutoff_and_map_cutoff():
    s = [[0.9, 0.8, 0.7]]
    y = [[0, 0, 1]]
    assert mean_reciprocal_rank(s, y, k=2) == 0.0
    assert mean_reciprocal_rank(s, y, k=3) == pytest.approx(1 / 3)
    assert mean_average_precision(s, y, k=2) == 0.0


# --------------------------------------------------------------------------- properties


@st.composite
def lists_strategy(draw):
    n_q = draw(st.integers(1, 8))
    lengths = draw(st.lists(st.integers(1, 6), min_size=n_q, max_size=n_q))
    n = sum(lengths)
    scores = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.3, 0.9]), min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return np.array(scores), np.array(labels), offsets


@settings(max_examples=60, deadline=None)
@given(lists_strategy(), st.randoms(use_true_random=False))
def test_permuting_queries_changes_nothing(data, rnd):
    scores, labels, offsets = data
    rl = RankedLists.from_flat(scores, labels, offsets)
    perm = list(range(rl.n_queries))
    rnd.shuffle(perm)
    shuffled = rl.subset(perm)
    for fn in (recall_at_k, mean_reciprocal_rank, mean_average_precision, ndcg_at_k):
        a, b = fn(rl, per_query=True), fn(shuffled, per_query=True)
        np.testing.assert_allclose(a[perm], b)
        assert fn(rl) == pytest.approx(fn(shuffled))
        assert ((a >= 0) & (a <= 1 + 1e-12)).all()
    v1, r1 = rank_biased_precision(rl)
    v2, r2 = rank_biased_precision(shuffled)
    assert v1 == pytest.approx(v2) and r1 == pytest.approx(r2)
    assert 0 <= v1 <= 1 and v1 + r1 <= 1 + 1e-12


@settings(max_examples=60, deadline=None)
@given(lists_strategy())
def test_layouts_agree(data):
    scores, labels, offsets = data
    rl = RankedLists.from_flat(scores, labels, offsets)
    ref = ref_metrics(scores, labels, offsets, k=2)
    np.testing.assert_allclose(mean_average_precision(rl, per_query=True), ref["ap"], atol=1e-12)
    np.testing.assert_allclose(ndcg_at_k(rl, k=2, per_query=True), ref["ndcg"], atol=1e-12)
    np.testing.assert_array_equal(recall_at_k(rl, k=2, per_query=True), ref["recall"])


# --------------------------------------------------------------------------- errors


def test_error_nan_and_inf_scores():
    with pytest.raises(ValueError, match=r"scores must be finite.*NaN"):
        recall_at_k([[0.1, np.nan]], [[0, 1]])
    with pytest.raises(ValueError, match="scores must be finite"):
        mean_average_precision([[0.1, np.inf]], [[0, 1]])


def test_error_mismatched_shapes():
    with pytest.raises(ValueError, match=r"scores and labels must have the same shape; got \(1, 2\) and \(1, 3\)"):
        ndcg_at_k([[0.1, 0.2]], [[0, 1, 0]])


def test_error_mismatched_offsets():
    with pytest.raises(ValueError, match="offsets must end at the number of pairs"):
        recall_at_k(RankedLists.from_flat([0.1, 0.2, 0.3], [0, 1, 0], [0, 2]))


def test_error_empty_input():
    with pytest.raises(ValueError, match="at least one query"):
        recall_at_k(np.zeros((0, 3)), np.zeros((0, 3), dtype=int))


def test_error_query_without_candidates():
    with pytest.raises(ValueError, match="every query needs at least one candidate"):
        recall_at_k(np.zeros((3, 0)), np.zeros((3, 0), dtype=int))
    with pytest.raises(ValueError, match="every query needs at least one candidate; query 1"):
        mean_average_precision(RankedLists.from_flat([0.1, 0.2], [0, 1], [0, 2, 2]))


def test_error_negative_and_fractional_labels():
    with pytest.raises(ValueError, match=r"labels must be integers >= 0; got 1 negative values, e\.g\. -1"):
        recall_at_k([[0.1, 0.2]], [[0, -1]])
    with pytest.raises(ValueError, match="non-integer"):
        recall_at_k([[0.1, 0.2]], [[0, 0.5]])
    with pytest.raises(TypeError, match="labels must be integers"):
        recall_at_k([[0.1, 0.2]], [["a", "b"]])


def test_error_wrong_rank_and_missing_or_extra_labels():
    with pytest.raises(ValueError, match=r"scores must be 2-D .* got an array of shape \(3,\)"):
        recall_at_k([0.1, 0.2, 0.3], [0, 1, 0])
    with pytest.raises(ValueError, match="labels are required when scores is an array"):
        recall_at_k([[0.1, 0.2]])
    rl = RankedLists.from_dense([[0.1, 0.2]], [[0, 1]])
    with pytest.raises(ValueError, match="labels must be None when scores is a RankedLists"):
        recall_at_k(rl, [[0, 1]])


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda s, y: recall_at_k(s, y, k=0), ValueError, "k must be an integer >= 1; got 0"),
        (lambda s, y: recall_at_k(s, y, k=1.5), TypeError, "k must be an integer >= 1"),
        (lambda s, y: recall_at_k(s, y, n=0), ValueError, "n must be an integer >= 1; got 0"),
        (lambda s, y: ndcg_at_k(s, y, k=-2), ValueError, "k must be an integer >= 1"),
        (lambda s, y: mean_average_precision(s, y, k=0), ValueError, "k must be"),
        (lambda s, y: mean_reciprocal_rank(s, y, k=0), ValueError, "k must be"),
        (lambda s, y: rank_biased_precision(s, y, p=1.0), ValueError, r"p must lie in \(0, 1\); got 1.0"),
        (lambda s, y: rank_biased_precision(s, y, p=0), ValueError, r"p must lie in \(0, 1\); got 0"),
        (lambda s, y: rank_biased_precision(s, y, p="0.8"), TypeError, r"p must be a number in \(0, 1\); got str"),
        (lambda s, y: rank_biased_precision(s, y, depth=0), ValueError, "depth must be an integer >= 1"),
        (lambda s, y: rank_biased_precision(s, y, max_grade=0), ValueError, "max_grade must be"),
    ],
)
def test_error_bad_options(call, exc, match):
    with pytest.raises(exc, match=match):
        call([[0.1, 0.2]], [[0, 1]])
