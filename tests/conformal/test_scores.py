from __future__ import annotations

import numpy as np
import pytest

from uncertank import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.conformal import conformity_scores, labelled_scores
from uncertank.conformal.scores import resolve_score


@pytest.fixture
def samples():
    rng = np.random.default_rng(0)
    return PredictiveSamples(rng.random((20, 7)), np.array([0, 3, 7]), ranker="mc")


def test_every_score_of_a_stochastic_ranker_against_numpy(samples):
    draws = samples.samples
    np.testing.assert_allclose(conformity_scores(samples).scores, draws.mean(axis=0))
    np.testing.assert_allclose(conformity_scores(samples, score="mean").scores, draws.mean(axis=0))
    np.testing.assert_allclose(conformity_scores(samples, score="quantile", quantile=0.25).scores,
                               np.quantile(draws, 0.25, axis=0))
    lower = conformity_scores(samples, score="lower", k_std=2.0)
    np.testing.assert_allclose(lower.scores, draws.mean(axis=0) - 2.0 * draws.std(axis=0))
    assert lower.probabilistic is bool(((lower.scores >= 0) & (lower.scores <= 1)).all())
    for s in ("mean", "quantile", "lower"):
        out = conformity_scores(samples, score=s)
        np.testing.assert_array_equal(out.offsets, samples.offsets)
        assert out.ranker == "mc"


def test_deterministic_inputs_keep_their_scores():
    p = Predictions(np.array([0.2, 0.9, 0.4]), np.array([0, 2, 3]))
    assert conformity_scores(p) is p
    r = RankedLists.from_flat([3.0, -1.0, 2.0], [1, 0, 0], [0, 2, 3])
    out = conformity_scores(r, score="score")
    np.testing.assert_array_equal(out.scores, r.scores)
    assert not out.probabilistic
    dense = conformity_scores([[0.1, 0.5], [0.7, 0.2]])
    np.testing.assert_array_equal(dense.offsets, [0, 2, 4])
    assert dense.probabilistic


def test_labelled_scores_pairs_labels_of_every_accepted_kind(samples):
    labels = np.array([1, 0, 0, 0, 1, 0, 0])
    a = labelled_scores(samples, labels, score="quantile", quantile=0.5)
    np.testing.assert_allclose(a.scores, np.median(samples.samples, axis=0))
    np.testing.assert_array_equal(a.labels, labels)
    qs = QuerySet.from_lists(["q1", "q2"], [["a", "b", "c"], ["d", "e", "f", "g"]], [[1, 0, 0], [0, 1, 0, 0]])
    b = labelled_scores(samples, qs)
    np.testing.assert_array_equal(b.labels, qs.labels)
    r = RankedLists.from_dense([[0.3, 0.4]], [[0, 1]])
    assert labelled_scores(r) is r
    c = labelled_scores([[0.3, 0.4], [0.9, 0.1]], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(c.labels, [0, 1, 1, 0])


def test_errors_name_what_is_wrong(samples):
    with pytest.raises(ValueError, match="score='score' needs one score per pair"):
        conformity_scores(samples, score="score")
    with pytest.raises(ValueError, match="needs a stochastic ranker's PredictiveSamples"):
        conformity_scores([[0.1, 0.2]], score="mean")
    with pytest.raises(ValueError, match="score must be one of"):
        resolve_score(samples, "median")
    with pytest.raises(ValueError, match=r"quantile must lie in \[0, 1\]; got 1.5"):
        conformity_scores(samples, score="quantile", quantile=1.5)
    with pytest.raises(ValueError, match="k_std must be a number >= 0"):
        conformity_scores(samples, score="lower", k_std=-1)
    with pytest.raises(TypeError, match="predictions must be Predictions"):
        conformity_scores(QuerySet.from_lists(["q"], [["a"]]))
    with pytest.raises(ValueError, match="labels are required"):
        labelled_scores(samples)
    with pytest.raises(ValueError, match="labels must be None when predictions is a RankedLists"):
        labelled_scores(RankedLists.from_dense([[0.3, 0.4]], [[0, 1]]), [0, 1])
