"""Weighted split conformal under covariate shift, and the two-sample test that names a shift."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uncertank import RankedLists
from uncertank.conformal import (
    LikelihoodRatioWeights,
    candidate_sets,
    conformal_quantile,
    domain_weights,
    exchangeability_test,
    split_conformal,
    weighted_conformal,
    weighted_thresholds,
)


def _draw(rng: np.random.Generator, n: int, shift: float) -> tuple[np.ndarray, RankedLists]:
    """Queries with a feature x ~ N(shift, 1); the relevant candidate scores lower as x grows (harder queries).

    P(relevance | query) is the same for any shift: covariate shift. The likelihood ratio of x ~ N(1, 1)
    against N(0, 1) is exp(x - 1/2).
    """
    x = rng.normal(shift, 1.0, n)
    y = np.zeros((n, 10), dtype=np.int64)
    y[np.arange(n), rng.integers(0, 10, n)] = 1
    s = rng.normal(0.0, 1.0, (n, 10))
    s[y == 1] += 2.0 - 1.5 * x
    return x, RankedLists.from_dense(s, y)


def test_weighted_conformal_restores_coverage_that_shift_takes_away():
    """Calibrate on x ~ N(0, 1), test on x ~ N(1, 1); 500 queries each, alpha = 0.1.

    Over 100 draws (true likelihood ratios) and 40 draws (ratios estimated by logistic regression
    on x), the mean test coverage of the weighted sets reaches 1 - alpha within 4 standard errors
    over the draws, while plain split conformal loses it by more than 0.15. The shift is named by
    the two-sample test.
    """
    alpha, plain, true_w, est_w, sizes = 0.1, [], [], [], []
    for t in range(100):
        rng = np.random.default_rng(t)
        xc, cal = _draw(rng, 500, 0.0)
        xt, test = _draw(rng, 500, 1.0)
        plain.append(candidate_sets(test, split_conformal(cal, alpha=alpha)).covered(test.labels).mean())
        exact = LikelihoodRatioWeights(np.exp(xc - 0.5), np.exp(xt - 0.5))
        true_w.append(weighted_conformal(cal, test, exact, alpha=alpha).sets.covered(test.labels).mean())
        if t < 40:
            est = domain_weights(xc[:, None], xt[:, None])
            ws = weighted_conformal(cal, test, est, alpha=alpha)
            est_w.append(ws.sets.covered(test.labels).mean())
            sizes.append(ws.sets.sizes.mean())
            assert ws.effective_size < 500 and ws.n_calibration == 500
    for cov in (true_w, est_w):
        c = np.asarray(cov)
        assert c.mean() >= 1 - alpha - 4 * c.std(ddof=1) / math.sqrt(c.size), c.mean()
    assert np.mean(plain) < 1 - alpha - 0.15
    assert np.mean(sizes) < 10  # informative sets, not the whole list
    check = exchangeability_test(cal, test)
    assert not check.exchangeable and "not exchangeable" in check.message and check.p_value < 1e-6


def test_equal_weights_give_split_conformal_and_a_loop_agrees():
    rng = np.random.default_rng(0)
    c = rng.normal(size=57)
    for alpha in (0.05, 0.1, 0.3):
        t = weighted_thresholds(c, np.ones(57), np.ones(4), alpha=alpha)
        assert (t == conformal_quantile(c, alpha)).all()
    wc, wt = rng.random(57) * 3, rng.random(20) * 3
    got = weighted_thresholds(c, wc, wt, alpha=0.2)
    for j, w in enumerate(wt):
        # the textbook quantile: smallest v with sum_{i: V_i <= v} p_i >= 1 - alpha, V = -c, mass w at +inf
        total = wc.sum() + w
        v_sorted = np.sort(-c)
        mass = np.cumsum(wc[np.argsort(-c)]) / total
        idx = np.flatnonzero(mass >= 0.8 - 1e-12)
        want = -math.inf if idx.size == 0 else -v_sorted[idx[0]]
        assert got[j] == want


def test_domain_weights_on_tfidf_of_the_contexts():
    """A domain classifier on TF-IDF features (sparse): calibration queries that read like the test ones weigh more."""
    text = pytest.importorskip("sklearn.feature_extraction.text")
    install = ["how do I install the package", "apt get install fails", "package manager broken install"]
    wifi = ["wifi driver not working", "network card wifi drops", "wireless driver for the wifi adapter"]
    cal = [install[i % 3] if i % 5 else wifi[i % 3] for i in range(200)]  # 20% wifi
    test = [wifi[i % 3] if i % 5 else install[i % 3] for i in range(200)]  # 80% wifi
    vec = text.TfidfVectorizer().fit(cal + test)
    w = domain_weights(vec.transform(cal), vec.transform(test))
    is_wifi = np.array(["wifi" in c or "wireless" in c for c in cal])
    assert w.calibration[is_wifi].mean() > 4 * w.calibration[~is_wifi].mean()
    assert w.test.shape == (200,) and 20 < w.effective_size < 200


def test_exchangeable_queries_pass_the_check():
    rng = np.random.default_rng(5)
    _, a = _draw(rng, 400, 0.0)
    _, b = _draw(rng, 400, 0.0)
    for summary in ("top", "mean"):
        check = exchangeability_test(a, b, summary=summary)  # type: ignore[arg-type]
        assert check.exchangeable and "no evidence" in check.message
        assert check.to_dict()["n_test"] == 400


def test_errors():
    rng = np.random.default_rng(0)
    _, cal = _draw(rng, 20, 0.0)
    _, test = _draw(rng, 10, 0.0)
    with pytest.raises(ValueError, match="calibration_features must be 2-D"):
        domain_weights(np.zeros(5), np.zeros((5, 1)))
    with pytest.raises(ValueError, match="test_features must hold at least one query"):
        domain_weights(np.zeros((5, 1)), np.zeros((0, 1)))
    with pytest.raises(ValueError, match=r"clip must be a finite number > 0 and < 0\.5; got 0\.7"):
        domain_weights(np.zeros((5, 1)), np.zeros((5, 1)), clip=0.7)
    with pytest.raises(TypeError, match="classifier must have fit and predict_proba"):
        domain_weights(np.zeros((5, 1)), np.zeros((5, 1)), classifier=object())
    with pytest.raises(TypeError, match="weights must be LikelihoodRatioWeights"):
        weighted_conformal(cal, test, (np.ones(20), np.ones(10)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"weights\.calibration must hold one weight per calibration query"):
        weighted_conformal(cal, test, LikelihoodRatioWeights(np.ones(3), np.ones(10)))
    with pytest.raises(ValueError, match=r"weights\.test must hold one weight per test query"):
        weighted_conformal(cal, test, LikelihoodRatioWeights(np.ones(20), np.ones(3)))
    with pytest.raises(ValueError, match="must be 1-D of one length"):
        weighted_thresholds([0.1, 0.2], [1.0], [1.0])
    with pytest.raises(ValueError, match="test_weights must be 1-D"):
        weighted_thresholds([0.1], [1.0], [[1.0]])
    with pytest.raises(ValueError, match="calibration_weights must be finite and >= 0"):
        weighted_thresholds([0.1], [-1.0], [1.0])
    with pytest.raises(ValueError, match="conformity must not hold NaN"):
        weighted_thresholds([math.nan], [1.0], [1.0])
    with pytest.raises(ValueError, match="calibration_weights must not all be 0"):
        weighted_thresholds([0.1], [0.0], [1.0])
    with pytest.raises(TypeError, match="calibration must be Predictions or RankedLists"):
        exchangeability_test(np.zeros(3), test)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="summary must be one of"):
        exchangeability_test(cal, test, summary="median")  # type: ignore[arg-type]
