from __future__ import annotations

import numpy as np
import pytest

from uncertank import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.conformal import split_queries
from uncertank.conformal.split import query_positions


def test_the_split_is_seeded_disjoint_and_complete():
    a = split_queries(101, calibration=0.4, seed=3)
    b = split_queries(101, calibration=0.4, seed=3)
    c = split_queries(101, calibration=0.4, seed=4)
    np.testing.assert_array_equal(a.calibration, b.calibration)
    assert not np.array_equal(a.calibration, c.calibration)
    assert a.calibration.size == 40 and a.test.size == 61
    assert sorted([*a.calibration, *a.test]) == list(range(101))
    assert split_queries(10, calibration=7).calibration.size == 7
    assert split_queries(3, calibration=0.01).calibration.size == 1  # at least one each side
    assert split_queries(3, calibration=0.99).test.size == 1


def test_take_keeps_every_container_aligned(make_one_relevant):
    lists = make_one_relevant(30, ragged=True, seed=1)
    split = split_queries(lists, calibration=0.5, seed=0)
    pred = Predictions(lists.scores, lists.offsets, probabilistic=False)
    rng = np.random.default_rng(0)
    samples = PredictiveSamples(rng.random((4, lists.n_pairs)), lists.offsets)
    for part in ("calibration", "test"):
        r = split.take(lists, part)
        p = split.take(pred, part)
        s = split.take(samples, part)
        np.testing.assert_array_equal(p.scores, r.scores)
        np.testing.assert_array_equal(p.offsets, r.offsets)
        np.testing.assert_array_equal(s.offsets, r.offsets)
        idx = split.calibration if part == "calibration" else split.test
        np.testing.assert_array_equal(s.samples[:, : r.lengths[0]], samples.samples[:, lists.offsets[idx[0]]:
                                                                                     lists.offsets[idx[0] + 1]])
        np.testing.assert_array_equal(split.take(np.arange(30), part), idx)
    qs = QuerySet.from_lists([f"q{i}" for i in range(30)], [["a"]] * 30)
    assert split.take(qs, "test").contexts[0] == [f"q{split.test[0]}"]
    pos, off = query_positions(np.array([0, 2, 3, 6]), np.array([2, 0]))
    assert pos.tolist() == [3, 4, 5, 0, 1] and off.tolist() == [0, 3, 5]


def test_errors():
    with pytest.raises(ValueError, match="calibration as a fraction must lie in"):
        split_queries(10, calibration=1.0)
    with pytest.raises(ValueError, match=r"calibration as a number of queries must lie in \[1, 9\]"):
        split_queries(10, calibration=10)
    with pytest.raises(TypeError, match="calibration must be a fraction or a number"):
        split_queries(10, calibration="half")
    with pytest.raises(ValueError, match="queries must be an integer >= 2"):
        split_queries(1)
    with pytest.raises(ValueError, match="at least 2 queries to split"):
        split_queries(RankedLists.from_dense([[0.1, 0.2]], [[0, 1]]))
    split = split_queries(10)
    with pytest.raises(ValueError, match="the split is over 10 queries; the RankedLists given holds 2"):
        split.take(RankedLists.from_dense([[0.1], [0.2]], [[0], [1]]))
    with pytest.raises(ValueError, match="part must be 'calibration' or 'test'"):
        split.take(np.arange(10), "train")
    with pytest.raises(TypeError, match="obj must be RankedLists"):
        split.take([1, 2, 3])
