from __future__ import annotations

import numpy as np
import pytest

from tests.optional import HealthCheck, given, settings, st
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


# --------------------------------------------------------------------------- ownership (issue 12)


def test_ranked_lists_owns_its_arrays():
    from uncertank.metrics import mean_reciprocal_rank

    scores = np.array([0.1, 0.9, 0.5, 0.4])
    labels = np.array([1, 0, 0, 1])
    offsets = np.array([0, 2, 4])
    rl = RankedLists.from_flat(scores, labels, offsets)
    before = mean_reciprocal_rank(rl)
    scores[0] = 5.0  # the caller changes its arrays afterwards
    labels[:] = 0
    offsets[1] = 3
    assert mean_reciprocal_rank(rl) == before
    np.testing.assert_array_equal(rl.labels, [1, 0, 0, 1])
    for arr in (rl.scores, rl.labels, rl.offsets):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0


def test_ranked_lists_nan_cannot_get_in_after_validation():
    scores = np.array([0.1, 0.9])
    rl = RankedLists.from_flat(scores, [1, 0], [0, 2])
    scores[0] = np.nan
    assert np.isfinite(rl.scores).all()
    dense = np.array([[0.2, 0.3]])
    rl2 = RankedLists.from_dense(dense, [[0, 1]])
    dense[0, 0] = np.nan
    assert np.isfinite(rl2.scores).all()


def test_predictions_and_samples_own_their_arrays():
    scores = np.array([0.2, 0.7, 0.4])
    p = Predictions(scores, np.array([0, 3]))
    scores[0] = 7.0  # would not be a probability
    assert p.scores[0] == 0.2 and not p.scores.flags.writeable
    x = np.array([[0.1, 0.2], [0.3, 0.4]])
    ps = PredictiveSamples(x, np.array([0, 2]))
    mean = ps.mean().copy()
    x[:] = 100.0
    np.testing.assert_array_equal(ps.mean(), mean)
    np.testing.assert_allclose(ps.var(), [0.01, 0.01])  # mean and var describe the same samples
    with pytest.raises(ValueError, match="read-only"):
        ps.samples[0, 0] = 1.0


def test_queryset_owns_its_texts_and_labels():
    cands = ["a", "b"]
    labels = np.array([1, 0])
    ctx = [["hi"]]
    qs = QuerySet(ctx, cands, np.array([0, 2]), labels, query_ids=["q"])
    cands[0] = "changed"
    labels[0] = 0
    ctx[0][0] = "changed"
    assert qs.candidates == ["a", "b"] and qs.contexts == [["hi"]]
    np.testing.assert_array_equal(qs.labels, [1, 0])


def test_own_read_only_arrays_are_not_copied_again():
    rl = RankedLists.from_flat([0.1, 0.2], [0, 1], [0, 2])
    again = rl.with_scores(rl.scores)
    assert again.scores is rl.scores and again.labels is rl.labels


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize("bad", [[[0.5, 1]], [[1.9, 0]], [[1, -1]]])
def test_from_lists_rejects_non_integer_and_negative_labels(bad):
    with pytest.raises(ValueError, match="labels must be integers >= 0"):
        QuerySet.from_lists(["q"], [["a", "b"]], bad)


def test_labels_accept_whole_floats_and_reject_other_types():
    qs = QuerySet.from_lists(["q"], [["a", "b"]], [[1.0, 0.0]])
    assert qs.labels.dtype == np.int64 and qs.labels.tolist() == [1, 0]
    with pytest.raises(TypeError, match="labels must be integers >= 0; got dtype"):
        QuerySet.from_lists(["q"], [["a", "b"]], [["1", "0"]])
    with pytest.raises(TypeError, match="labels must be integers >= 0; got dtype complex"):
        RankedLists.from_flat([0.1, 0.2], np.array([1 + 0j, 0]), [0, 2])
    with pytest.raises(TypeError, match="labels must be integers >= 0; got values of dtype object"):
        RankedLists.from_flat([0.1, 0.2], np.array([{}, 0], dtype=object), [0, 2])
    with pytest.raises(ValueError, match="below 2\\*\\*63"):
        RankedLists.from_flat([0.1, 0.2], [1e30, 0], [0, 2])


def test_scores_reject_strings_and_complex():
    with pytest.raises(TypeError, match="scores must be numeric"):
        RankedLists.from_flat(["0.5", "0.1"], [0, 1], [0, 2])
    with pytest.raises(TypeError, match="scores must be numeric"):
        Predictions(np.array([0.5 + 1j]), np.array([0, 1]))


# --------------------------------------------------------------------------- texts, repr, digest


def test_queryset_rejects_non_text():
    with pytest.raises(TypeError, match=r"candidates must hold str; candidates\[1\] is int"):
        QuerySet([["c"]], ["a", 3], np.array([0, 2]))
    with pytest.raises(TypeError, match="candidates must be a sequence of str; got str"):
        QuerySet([["c"]], "ab", np.array([0, 2]))
    with pytest.raises(TypeError, match=r"contexts\[0\] must hold str"):
        QuerySet([["c", None]], ["a"], np.array([0, 1]))
    with pytest.raises(TypeError, match="contexts must be a sequence of contexts; got int"):
        QuerySet(3, ["a"], np.array([0, 1]))
    with pytest.raises(TypeError, match="query_ids must hold str"):
        QuerySet([["c"]], ["a"], np.array([0, 1]), query_ids=[1])
    with pytest.raises(TypeError, match="name must be a str"):
        QuerySet([["c"]], ["a"], np.array([0, 1]), name=None)


def test_queryset_repr_is_short():
    qs = _qs()
    assert repr(qs) == "QuerySet('', 3 queries, 6 pairs, labelled)"
    big = QuerySet.from_lists(["q"] * 500, [["x" * 100] * 10] * 500, name="big")
    assert repr(big) == "QuerySet('big', 500 queries, 5000 pairs, unlabelled)"


def test_queryset_digest_tracks_content_only():
    qs = _qs()
    d = qs.digest()
    assert len(d) == 64 and int(d, 16) >= 0
    renamed = QuerySet(qs.contexts, qs.candidates, qs.offsets, qs.labels, name="other", query_ids=["a", "b", "c"])
    assert renamed.digest() == d
    assert qs.subset([0, 1, 2]).digest() == d
    variants = [
        QuerySet.from_lists(["a b", ["x", "y z"], "q"], [["c1", "c2"], ["d1", "d2", "d3"], ["e1"]],
                            [[1, 0], [0, 0, 1], [1]]),  # one label
        QuerySet.from_lists(["a b", ["x", "y z"], "q"], [["c1", "c2"], ["d1", "d2", "d3"], ["e2"]],
                            [[1, 0], [0, 0, 2], [1]]),  # one candidate
        QuerySet.from_lists(["a", ["b", "y z"], "q"], [["c1", "c2"], ["d1", "d2", "d3"], ["e1"]],
                            [[1, 0], [0, 0, 2], [1]]),  # context split differently
        QuerySet.from_lists(["a b", ["x", "y z"], "q"], [["c1", "c2", "d1"], ["d2", "d3"], ["e1"]],
                            [[1, 0, 0], [0, 2], [1]]),  # list boundary moved
        QuerySet.from_lists(["a b", ["x", "y z"], "q"], [["c1", "c2"], ["d1", "d2", "d3"], ["e1"]]),  # no labels
    ]
    digests = {v.digest() for v in variants}
    assert d not in digests and len(digests) == len(variants)


def test_predictions_ranked_checks_offsets():
    qs = _qs()  # lists of 2, 3 and 1
    p = Predictions(np.linspace(0, 1, 6), np.array([0, 3, 5, 6]))  # same pairs, other lists
    with pytest.raises(ValueError, match="labels is a QuerySet with other lists than these predictions"):
        p.ranked(qs)
    with pytest.raises(ValueError, match=r"scores and labels must have the same shape; got \(5,\) and \(6,\)"):
        Predictions(np.linspace(0, 1, 5), np.array([0, 5])).ranked(qs.labels)


def test_containers_pickle_and_old_pickles_naming_uncertank_types_load():
    """The classes live in uncertank._types, which their pickles name; a pickle naming it loads."""
    import pickle

    import uncertank._types as types

    qs = _qs()
    objs = [qs, qs.ranked(np.arange(6.0)), Predictions(np.full(6, 0.5), qs.offsets, ranker="r"),
            PredictiveSamples(np.arange(12.0).reshape(2, 6), qs.offsets, ranker="r")]
    for obj in objs:
        cls = type(obj)
        assert getattr(types, cls.__name__) is cls
        new = pickle.dumps(obj, protocol=0)
        assert cls.__module__ == "uncertank._types"
        old = new.replace(f"c{cls.__module__}\n".encode(), b"cuncertank._types\n")
        for payload in (new, old):
            back = pickle.loads(payload)
            assert type(back) is cls
            np.testing.assert_array_equal(back.offsets, obj.offsets)
    assert pickle.loads(pickle.dumps(qs)).digest() == qs.digest()


def test_predictive_samples_rejects_bad_ddof_type_and_ranker():
    with pytest.raises(TypeError, match="ddof must be an int"):
        PredictiveSamples(np.zeros((2, 4)), np.array([0, 4]), ddof=0.5)
    with pytest.raises(TypeError, match="ranker must be a str"):
        PredictiveSamples(np.zeros((2, 4)), np.array([0, 4]), ranker=3)
    with pytest.raises(TypeError, match="probabilistic must be a bool"):
        Predictions(np.zeros(4), np.array([0, 4]), probabilistic="yes")


# --------------------------------------------------------------------------- property-based


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _lists(draw):
    lengths = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    n = sum(lengths)
    scores = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return lengths, scores, labels


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _mrr_loop(scores, labels, lengths):
    """Reference MRR: a stable sort on descending score per query, in plain Python."""
    out, lo = [], 0
    for n in lengths:
        s, y = scores[lo : lo + n], labels[lo : lo + n]
        order = sorted(range(n), key=lambda i: -s[i])
        out.append(next((1.0 / (r + 1) for r, i in enumerate(order) if y[i] > 0), 0.0))
        lo += n
    return float(np.mean(out))


@_SETTINGS
@given(_lists())
def test_valid_lists_construct_and_round_trip(data):
    from uncertank.metrics import mean_reciprocal_rank

    lengths, scores, labels = data
    rl = RankedLists.from_flat(scores, labels, _offsets(lengths))
    np.testing.assert_array_equal(rl.lengths, lengths)
    back = rl.subset(np.arange(rl.n_queries))
    np.testing.assert_array_equal(back.scores, scores)
    np.testing.assert_array_equal(back.labels, labels)
    assert mean_reciprocal_rank(rl) == pytest.approx(_mrr_loop(scores, labels, lengths))
    if len(set(lengths)) == 1:
        s2, y2 = rl.to_dense()
        again = RankedLists.from_dense(s2, y2)
        np.testing.assert_array_equal(again.scores, rl.scores)
    cands = [[f"c{i}-{j}" for j in range(n)] for i, n in enumerate(lengths)]
    lab_lists, lo = [], 0
    for n in lengths:
        lab_lists.append(labels[lo : lo + n])
        lo += n
    qs = QuerySet.from_lists([f"q{i}" for i in range(len(lengths))], cands, lab_lists)
    for q in range(qs.n_queries):
        ctx, c, y = qs.query(q)
        assert ctx == [f"q{q}"] and c == cands[q] and y.tolist() == lab_lists[q]
    assert qs.ranked(scores).labels.tolist() == labels
    p = Predictions(scores, qs.offsets, probabilistic=False)
    assert p.ranked(qs).n_pairs == len(scores)


def _bad_case(draw):
    """One invalid (scores, labels, offsets) triple and the argument it should be blamed on."""
    lengths, scores, labels = draw(_lists())
    offsets = _offsets(lengths).tolist()
    n = len(scores)
    kind = draw(st.sampled_from([
        "nan", "inf", "str_scores", "complex", "scores_2d", "short_labels", "neg_label", "frac_label",
        "str_label", "offsets_start", "offsets_end", "offsets_order", "offsets_frac", "offsets_2d",
        "offsets_short", "offsets_str",
    ]))
    i = draw(st.integers(0, n - 1))
    if kind == "nan":
        scores[i] = float("nan")
        return scores, labels, offsets, "scores"
    if kind == "inf":
        scores[i] = draw(st.sampled_from([float("inf"), float("-inf")]))
        return scores, labels, offsets, "scores"
    if kind == "str_scores":
        return [str(s) for s in scores], labels, offsets, "scores"
    if kind == "complex":
        return [complex(s, 1) for s in scores], labels, offsets, "scores"
    if kind == "scores_2d":
        return [scores], labels, offsets, "scores"
    if kind == "short_labels":
        return scores, [*labels, 0], offsets, "labels"
    if kind == "neg_label":
        labels[i] = draw(st.integers(-5, -1))
        return scores, labels, offsets, "labels"
    if kind == "frac_label":
        lab = [float(v) for v in labels]
        lab[i] = lab[i] + draw(st.sampled_from([0.5, 0.25, 0.9]))
        return scores, lab, offsets, "labels"
    if kind == "str_label":
        return scores, [str(v) for v in labels], offsets, "labels"
    if kind == "offsets_start":
        offsets[0] = draw(st.integers(1, 3))
        return scores, labels, offsets, "offsets"
    if kind == "offsets_end":
        offsets[-1] += draw(st.sampled_from([-1, 1, 5]))
        return scores, labels, offsets, "offsets" if offsets[-1] != offsets[-2] else ("offsets", "query")
    if kind == "offsets_order":
        return scores, labels, [0, n, *offsets[1:]] if len(offsets) > 2 else [0, n, 0, n], ("offsets", "query")
    if kind == "offsets_frac":
        return scores, labels, [0.5, *offsets[1:]], "offsets"
    if kind == "offsets_2d":
        return scores, labels, [offsets], "offsets"
    if kind == "offsets_short":
        return scores, labels, [n], "offsets"
    return scores, labels, [str(o) for o in offsets], "offsets"


@_SETTINGS
@given(st.data())
def test_invalid_lists_raise_naming_the_argument(data):
    scores, labels, offsets, blamed = _bad_case(data.draw)
    names = blamed if isinstance(blamed, tuple) else (blamed,)
    with pytest.raises((ValueError, TypeError)) as info:
        RankedLists.from_flat(scores, labels, offsets)
    assert any(name in str(info.value) for name in names), str(info.value)
    if blamed in ("scores", "offsets"):
        with pytest.raises((ValueError, TypeError)) as info:
            Predictions(np.asarray(scores, dtype=object) if blamed == "scores" else np.zeros(len(labels)),
                        offsets, probabilistic=False)
        assert any(name in str(info.value) for name in names), str(info.value)


@_SETTINGS
@given(_lists(), st.integers(1, 4))
def test_predictive_samples_match_numpy_after_the_caller_mutates(data, n_samples):
    lengths, scores, _ = data
    x = np.tile(np.asarray(scores, dtype=np.float64), (n_samples, 1)) + np.arange(n_samples)[:, None]
    ps = PredictiveSamples(x, _offsets(lengths))
    ref_mean, ref_var = x.mean(0), x.var(0)
    x[:] = np.nan
    np.testing.assert_allclose(ps.mean(), ref_mean)
    np.testing.assert_allclose(ps.var(), ref_var)
