from __future__ import annotations

import numpy as np
import pytest

from uncertank import Predictions, PredictiveSamples, QuerySet, RankedLists


def _qs() -> QuerySet:
    return QuerySet.from_lists(
        ["a b", ["x", "y z"], "q"],
        [["c1", "c2"], ["d1", "d2", "d3"], ["e1"]],
        [[1, 0], [0, 0, 2], [1]],
        query_ids=["q0", "q1", "q2"],
    )


def test_queryset_structure_and_subset():
    qs = _qs()
    assert qs.n_queries == 3 and qs.n_pairs == 6 and len(qs) == 3
    np.testing.assert_array_equal(qs.offsets, [0, 2, 5, 6])
    np.testing.assert_array_equal(qs.query_index, [0, 0, 1, 1, 1, 2])
    assert qs.contexts[0] == ["a b"]  # a string context becomes a one-turn list
    ctx, cands, labels = qs.query(1)
    assert ctx == ["x", "y z"] and cands == ["d1", "d2", "d3"]
    np.testing.assert_array_equal(labels, [0, 0, 2])
    sub = qs.subset([2, 0])
    assert sub.query_ids == ["q2", "q0"]
    assert list(sub.candidates) == ["e1", "c1", "c2"]
    np.testing.assert_array_equal(sub.labels, [1, 1, 0])
    np.testing.assert_array_equal(sub.offsets, [0, 1, 3])
    assert [c for _, c in qs.pairs()] == list(qs.candidates)
    mask = qs.subset(np.array([True, False, True]))
    assert mask.n_queries == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"offsets": [0, 2, 1, 3]}, "non-decreasing"),
        ({"offsets": [0, 1, 1, 3]}, "query 1 has none"),
        ({"offsets": [1, 3]}, "start at 0"),
        ({"offsets": [0, 2]}, "end at the number of pairs"),
        ({"offsets": [0]}, "n_queries >= 1"),
        ({"labels": [1, -1, 0]}, "negative"),
        ({"labels": [1, 0]}, "one per candidate"),
    ],
)
def test_queryset_rejects_bad_input(kwargs, match):
    base = {"contexts": [["c"]], "candidates": ["a", "b", "c"], "offsets": [0, 3], "labels": None}
    base.update(kwargs)
    n_q = len(base["offsets"]) - 1
    base["contexts"] = [["c"]] * max(n_q, 1)
    with pytest.raises(ValueError, match=match):
        QuerySet(**base)


def test_queryset_rejects_mismatched_contexts_and_ids():
    with pytest.raises(ValueError, match="contexts must hold one entry per query"):
        QuerySet([["a"], ["b"]], ["x"], np.array([0, 1]))
    with pytest.raises(ValueError, match="query_ids must hold one id per query"):
        QuerySet([["a"]], ["x"], np.array([0, 1]), query_ids=["1", "2"])
    with pytest.raises(ValueError, match="candidate_ids must hold one id per candidate"):
        QuerySet([["a"]], ["x"], np.array([0, 1]), candidate_ids=["1", "2"])
    with pytest.raises(ValueError, match="candidates must hold one list per context"):
        QuerySet.from_lists(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="labels must match candidates"):
        QuerySet.from_lists(["a"], [["x", "y"]], [[1]])
    with pytest.raises(ValueError, match="has no labels"):
        QuerySet.from_lists(["a"], [["x"]]).ranked([0.5])
    with pytest.raises(IndexError, match="indices must lie in"):
        _qs().subset([5])
    with pytest.raises(ValueError, match="as a mask must have shape"):
        _qs().subset(np.array([True, False]))


def test_ranked_lists_dense_and_flat_agree():
    rng = np.random.default_rng(0)
    s = rng.random((4, 5))
    y = rng.integers(0, 2, (4, 5))
    a = RankedLists.from_dense(s, y)
    b = RankedLists.from_flat(s.ravel(), y.ravel(), np.arange(0, 21, 5))
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert a.is_dense and a.n_queries == 4 and a.n_pairs == 20
    s2, y2 = a.to_dense()
    np.testing.assert_array_equal(s2, s)
    np.testing.assert_array_equal(y2, y)
    sub = a.subset([3, 1])
    np.testing.assert_array_equal(sub.scores, np.concatenate([s[3], s[1]]))
    assert a.with_scores(np.zeros(20)).scores.sum() == 0


def test_ranked_lists_variable_lengths():
    r = RankedLists.from_flat([0.1, 0.2, 0.3], [0, 1, 0], [0, 1, 3], query_ids=["a", "b"])
    assert not r.is_dense
    np.testing.assert_array_equal(r.lengths, [1, 2])
    with pytest.raises(ValueError, match="same number of candidates"):
        r.to_dense()


@pytest.mark.parametrize(
    ("scores", "labels", "offsets", "exc", "match"),
    [
        ([0.1, np.nan], [0, 1], [0, 2], ValueError, "finite"),
        ([0.1, np.inf], [0, 1], [0, 2], ValueError, "finite"),
        ([0.1, 0.2], [0, 1, 1], [0, 2], ValueError, "same shape"),
        ([], [], [0, 0], ValueError, "must not be empty"),
        ([0.1, 0.2], [0, -1], [0, 2], ValueError, "negative"),
        ([0.1, 0.2], [0, 0.5], [0, 2], ValueError, "non-integer"),
        ([0.1, 0.2], ["a", "b"], [0, 2], TypeError, "integers >= 0"),
        (["x", "y"], [0, 1], [0, 2], TypeError, "numeric"),
        ([0.1, 0.2], [0, 1], [0, 0, 2], ValueError, "query 0 has none"),
        ([0.1, 0.2], [0, 1], [0.5, 2], TypeError, "integers"),
        ([0.1, 0.2], [0, np.nan], [0, 2], ValueError, "finite integers"),
    ],
)
def test_ranked_lists_rejects_bad_input(scores, labels, offsets, exc, match):
    with pytest.raises(exc, match=match):
        RankedLists.from_flat(scores, labels, offsets)


def test_ranked_lists_rejects_bad_dense_and_ids():
    with pytest.raises(ValueError, match="2-D"):
        RankedLists.from_dense([0.1, 0.2], [0, 1])
    with pytest.raises(ValueError, match="same shape"):
        RankedLists.from_dense(np.zeros((2, 3)), np.zeros((3, 2), dtype=int))
    with pytest.raises(ValueError, match="query_ids"):
        RankedLists.from_flat([0.1], [0], [0, 1], query_ids=["a", "b"])
    with pytest.raises(ValueError, match="candidate_ids"):
        RankedLists.from_flat([0.1], [0], [0, 1], candidate_ids=["a", "b"])


def test_predictions_checks_probabilities_and_pairs_labels():
    qs = _qs()
    p = Predictions(np.linspace(0, 1, 6), qs.offsets, ranker="r")
    rl = p.ranked(qs)
    np.testing.assert_array_equal(rl.labels, qs.labels)
    assert p.ranked(np.zeros(6, dtype=int)).n_queries == 3
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]; got 1 values outside, e.g. 1.5"):
        Predictions(np.array([0.2, 1.5]), np.array([0, 2]))
    assert Predictions(np.array([-3.0, 7.0]), np.array([0, 2]), probabilistic=False).scores[1] == 7.0


def test_predictive_samples_moments_match_numpy_loop():
    rng = np.random.default_rng(1)
    offsets = np.array([0, 3, 5, 8, 9])
    x = rng.random((7, 9))
    ps = PredictiveSamples(x, offsets, ddof=1)
    np.testing.assert_allclose(ps.mean(), x.mean(0))
    np.testing.assert_allclose(ps.var(), x.var(0, ddof=1))
    np.testing.assert_allclose(ps.std(), x.std(0, ddof=1))
    blocks = ps.covariance_blocks()
    assert len(blocks) == 4
    for q in range(4):
        lo, hi = offsets[q], offsets[q + 1]
        ref = np.atleast_2d(np.cov(x[:, lo:hi], rowvar=False, ddof=1))
        np.testing.assert_allclose(blocks[q], ref)
    pred = ps.to_predictions()
    assert pred.probabilistic
    np.testing.assert_allclose(pred.scores, x.mean(0))
    assert ps.n_samples == 7 and ps.n_pairs == 9


def test_predictive_samples_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D"):
        PredictiveSamples(np.zeros(4), np.array([0, 4]))
    with pytest.raises(ValueError, match="end at the number of pairs"):
        PredictiveSamples(np.zeros((2, 4)), np.array([0, 3]))
    with pytest.raises(ValueError, match="ddof"):
        PredictiveSamples(np.zeros((2, 4)), np.array([0, 4]), ddof=2)
