"""Split conformal candidate sets: the quantile against a loop and crepes, coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uncertank import Predictions, RankedLists
from uncertank.conformal import (
    ConformalThreshold,
    candidate_sets,
    conformal_quantile,
    split_conformal,
    split_queries,
)
from uncertank.conformal.sets import query_conformity, sets_from_thresholds


def _loop_threshold(lists: RankedLists, alpha: float) -> float:
    """Split conformal by the book, one query at a time: nonconformity -max relevant score, its quantile."""
    nonconf = []
    for q in range(lists.n_queries):
        lo, hi = lists.offsets[q], lists.offsets[q + 1]
        rel = [lists.scores[j] for j in range(lo, hi) if lists.labels[j] > 0]
        nonconf.append(-max(rel) if rel else math.inf)
    n = len(nonconf)
    rank = math.ceil((n + 1) * (1 - alpha) - 1e-9)  # the ceil((n + 1)(1 - alpha))-th smallest nonconformity
    return -math.inf if rank > n else -sorted(nonconf)[rank - 1]


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2, 0.5])
@pytest.mark.parametrize("n", [9, 50, 237])
def test_threshold_matches_the_textbook_quantile(make_one_relevant, alpha, n):
    lists = make_one_relevant(n, ragged=True, seed=n)
    assert split_conformal(lists, alpha=alpha).threshold == _loop_threshold(lists, alpha)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
@pytest.mark.parametrize("n", [50, 237, 1000])
def test_threshold_equals_crepes_split_conformal_quantile(make_one_relevant, alpha, n):
    """crepes' ConformalRegressor on the same scores: residuals M - c, interval lower end M - q = our threshold.

    alpha (n + 1) is never a whole number here: crepes takes int((1 - confidence)(n + 1)), which float
    rounding can move by one at whole numbers.
    """
    crepes = pytest.importorskip("crepes")
    lists = make_one_relevant(n, seed=7 * n)
    c = query_conformity(lists, "threshold")
    top = float(c.max()) + 1.0
    cr = crepes.ConformalRegressor().fit(top - c)
    lower = cr.predict_int(np.array([top]), confidence=1 - alpha)[0, 0]
    assert split_conformal(lists, alpha=alpha).threshold == pytest.approx(lower, abs=1e-12)


def _coverage_over_splits(pool: RankedLists, n_cal: int, alpha: float, method: str, trials: int):
    covs = []
    for t in range(trials):
        split = split_queries(pool, calibration=n_cal, seed=t)
        cal, test = split.take(pool, "calibration"), split.take(pool, "test")
        th = split_conformal(cal, alpha=alpha, method=method)  # type: ignore[arg-type]
        covs.append(candidate_sets(test, th).covered(test.labels).mean())
    return np.asarray(covs)


@pytest.mark.parametrize("method", ["threshold", "topk", "aps"])
def test_mean_coverage_over_random_splits_lies_in_the_conformal_interval(make_one_relevant, method):
    """Exchangeable queries (random splits of one pool): mean coverage in [1 - alpha, 1 - alpha + 1/(n + 1)].

    400 splits of 600 queries into n = 99 calibration and 501 test queries. Monte Carlo error: the
    interval is widened by 4 standard errors of the mean over splits (the split-to-split standard
    deviation of coverage, about 0.03, over sqrt(400)). The upper end needs untied conformity scores:
    the scores are continuous for "threshold" and "aps"; top-k ranks tie, so only its lower end is checked.
    """
    pool = make_one_relevant(600, seed=11)
    if method == "aps":
        pool = pool.with_scores(1 / (1 + np.exp(-pool.scores)))
    alpha, n = 0.1, 99
    cov = _coverage_over_splits(pool, n, alpha, method, trials=400)
    se = cov.std(ddof=1) / math.sqrt(cov.size)
    assert cov.mean() >= 1 - alpha - 4 * se, (cov.mean(), se)
    if method != "topk":
        assert cov.mean() <= 1 - alpha + 1 / (n + 1) + 4 * se, (cov.mean(), se)


def test_sets_hold_what_the_threshold_says(make_one_relevant):
    lists = make_one_relevant(200, ragged=True, seed=3)
    th = split_conformal(lists, alpha=0.2)
    sets = candidate_sets(lists, th)
    np.testing.assert_array_equal(sets.mask, lists.scores >= th.threshold)
    assert th.calibration_risk == pytest.approx(1 - sets.covered(lists.labels).mean())
    k = split_conformal(lists, alpha=0.2, method="topk")
    ks = candidate_sets(Predictions(lists.scores, lists.offsets, probabilistic=False), k)
    np.testing.assert_array_equal(ks.sizes, np.minimum(lists.lengths, k.k))
    assert k.threshold is None and k.k >= 1
    assert k.calibration_risk == pytest.approx(1 - ks.covered(lists.labels).mean())
    per_query = sets_from_thresholds(lists, np.full(lists.n_queries, th.threshold))
    np.testing.assert_array_equal(per_query.mask, sets.mask)


def test_aps_sets_grow_where_the_mass_is_spread():
    flat = RankedLists.from_dense([[0.25, 0.25, 0.25, 0.25], [0.97, 0.01, 0.01, 0.01]], [[1, 0, 0, 0], [1, 0, 0, 0]])
    th = ConformalThreshold(risk="coverage", method="aps", alpha=0.1, delta=None, threshold=0.7, k=None,
                            n_calibration=1, calibration_risk=0.0, feasible=True, guarantee="", mass="sum")
    assert candidate_sets(flat, th).sizes.tolist() == [3, 1]  # mass above: 0, .25, .5 | 0, .97


def test_too_few_queries_or_unanswerable_ones_are_said(make_one_relevant):
    small = make_one_relevant(5, seed=0)
    th = split_conformal(small, alpha=0.1)  # floor(0.1 * 6) = 0: only the whole list
    assert th.threshold == -math.inf and th.feasible and "the whole list" in th.guarantee
    lists = make_one_relevant(50, seed=0)
    labels = lists.labels.copy()
    labels[lists.offsets[0]:lists.offsets[20]] = 0  # 20 of 50 queries have no relevant candidate
    bad = split_conformal(RankedLists(lists.scores, labels, lists.offsets), alpha=0.1)
    assert not bad.feasible and bad.threshold == -math.inf and "20 of the 50" in bad.guarantee
    assert bad.calibration_risk == pytest.approx(0.4)
    assert conformal_quantile([0.9, 0.1, 0.5], 0.5) == 0.5
    assert conformal_quantile([1.0, -math.inf], 0.4) == -math.inf


def test_errors(make_one_relevant):
    lists = make_one_relevant(10)
    with pytest.raises(ValueError, match="alpha must lie in"):
        split_conformal(lists, alpha=1.0)
    with pytest.raises(TypeError, match="alpha must be a number"):
        split_conformal(lists, alpha="0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method must be one of"):
        split_conformal(lists, method="knn")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mass must be one of"):
        split_conformal(lists, method="aps", mass="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="conformity must be 1-D"):
        conformal_quantile([[0.1]], 0.1)
    with pytest.raises(ValueError, match=r"conformity must be finite \(infinities allowed\); got 1 NaN"):
        conformal_quantile([0.1, math.nan], 0.1)
    th = split_conformal(lists)
    with pytest.raises(TypeError, match="scores must be conformity scores"):
        candidate_sets(np.zeros(3), th)
    with pytest.raises(TypeError, match="calibrated must be a ConformalThreshold"):
        candidate_sets(lists, 0.5)  # type: ignore[arg-type]
    import dataclasses

    with pytest.raises(ValueError, match="controls abstention"):
        candidate_sets(lists, dataclasses.replace(th, risk="abstain"))
    with pytest.raises(ValueError, match="has no threshold"):
        candidate_sets(lists, dataclasses.replace(th, threshold=None))
    with pytest.raises(ValueError, match="thresholds must be one number or one per query"):
        sets_from_thresholds(lists, [0.1, 0.2])
    with pytest.raises(ValueError, match="thresholds must not hold NaN"):
        sets_from_thresholds(lists, np.full(10, math.nan))
