"""Abstention with a guarantee: MAPIE's binary controller, the violation frequency, and the NOTA task."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from uncertank import Predictions, RankedLists
from uncertank.conformal import (
    abstention_curve,
    abstention_data,
    answer,
    calibrate_threshold,
    conformal_abstention,
    hoeffding_bentkus,
    min_certifiable,
    nota_abstention_data,
    split_queries,
    threshold_grid,
)
from uncertank.uncertainty import make_nota_task


def _pool(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Confidence U(0, 1); the answer is wrong with probability 1 - confidence: R(lambda) = (1 - lambda) / 2."""
    rng = np.random.default_rng(seed)
    conf = rng.random(n)
    return conf, (rng.random(n) > conf).astype(np.int64)


def test_curve_matches_a_loop():
    conf, err = _pool(300)
    conf = np.round(conf, 2)  # ties
    grid = threshold_grid(conf, probabilistic=True, size=21)
    answered, wrong = abstention_curve(conf, err, grid)
    for g, a, w in zip(grid, answered, wrong, strict=True):
        assert a == (conf >= g).sum() and w == err[conf >= g].sum()


def test_the_threshold_equals_mapie_binary_controller():
    """MAPIE's BinaryClassificationController (precision, fixed-sequence) on the binary reduction.

    A query is a sample, its top candidate's score the probability of the positive class "answer is
    right". Both test the same grid (ours after leaving out the thresholds that answer too few queries
    to be certified, which would stop MAPIE's sequence at once) and ship the lowest threshold rejected.

    MAPIE's p-values equal ours except where its risk, 1 - correct / answered in floats, times the
    number answered lands a hair above the error count (1 - 100 / 105 times 105 is 5.000000000000005),
    which its ceil makes one error more: there its p-value is larger (conservative). On this draw no
    such threshold lies in the tested sequence, and the thresholds agree.
    """
    risk_control = pytest.importorskip("mapie.risk_control")
    conf, err = _pool(1500, seed=9)
    alpha, delta = 0.1, 0.1
    th = conformal_abstention(conf, err, alpha=alpha, delta=delta)
    grid = threshold_grid(conf, probabilistic=True)
    answered, wrong = abstention_curve(conf, err, grid)
    keep = answered >= min_certifiable(alpha, delta)
    kept = np.sort(grid[keep])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapie = risk_control.BinaryClassificationController(
            predict_function=lambda idx: np.column_stack([1 - conf[idx], conf[idx]]), risk="precision",
            target_level=1 - alpha, confidence_level=1 - delta, list_predict_params=kept,
            fwer_method="fixed_sequence",
        ).calibrate(np.arange(conf.size), 1 - err)
    assert th.feasible and mapie.best_predict_param == pytest.approx(th.threshold, abs=1e-12)
    a, w = answered[keep][::-1], wrong[keep][::-1]  # MAPIE's order: ascending thresholds
    ours = hoeffding_bentkus(w / a, a, alpha, binary=True)
    theirs = np.asarray(mapie.p_values)[:, 0]
    inflated = np.ceil(a * (1 - (a - w) / a)) != w
    np.testing.assert_allclose(np.minimum(theirs[~inflated], 1), ours[~inflated], rtol=1e-9)
    assert (theirs[inflated] >= ours[inflated]).all()


def test_violation_frequency_is_at_most_delta():
    """300 draws of 2,000 calibration queries from the model above; true risk (1 - lambda) / 2 known.

    Monte Carlo error: delta plus 3 binomial standard errors.
    """
    alpha, delta, trials = 0.1, 0.1, 300
    violations, rates = 0, []
    for t in range(trials):
        conf, err = _pool(2000, seed=100 + t)
        th = conformal_abstention(conf, err, alpha=alpha, delta=delta)
        if th.feasible:
            violations += (1 - th.threshold) / 2 > alpha
            rates.append(1 - th.threshold)
    assert violations / trials <= delta + 3 * math.sqrt(delta * (1 - delta) / trials)
    assert len(rates) > trials * 0.8 and np.mean(rates) > 0.1  # not vacuous: most draws answer 10% or more


def test_conformal_nota_on_the_nota_task():
    """The NOTA task of Penha & Hauff (make_nota_task): answer only where an answer is likely there.

    Half of the queries lose their answer. Over 100 splits of 4,000 queries (half calibrate), the error
    rate among answered test queries stays below alpha in at least 1 - delta of the splits, up to the
    noise of 2,000 test queries (alpha + 0.02) and 3 binomial standard errors of the frequency.
    """
    rng = np.random.default_rng(0)
    n_q, length = 4000, 10
    labels = np.zeros((n_q, length), dtype=int)
    labels[np.arange(n_q), rng.integers(0, length, n_q)] = 1
    scores = 1 / (1 + np.exp(-(rng.normal(0, 1, (n_q, length)) + 2.5 * labels - 1.5)))
    task = make_nota_task(RankedLists.from_dense(scores, labels), seed=1)
    conf, err = nota_abstention_data(task)
    assert err.sum() == n_q // 2 and np.array_equal(conf, task.means[:, 0])
    alpha, delta, bad, answered = 0.1, 0.1, 0, []
    for t in range(100):
        split = split_queries(n_q, calibration=0.5, seed=t)
        c, e = split.take(conf, "calibration"), split.take(err, "calibration")
        th = conformal_abstention(c, e, alpha=alpha, delta=delta)
        ct, et = split.take(conf, "test"), split.take(err, "test")
        ans = ct >= th.threshold
        bad += ans.any() and et[ans].mean() > alpha + 0.02
        answered.append(ans.mean())
    assert bad / 100 <= delta + 3 * math.sqrt(delta * (1 - delta) / 100)
    assert np.mean(answered) > 0.2


def test_answers_and_the_facade(make_one_relevant):
    lists = make_one_relevant(3000, seed=2)
    p = lists.with_scores(1 / (1 + np.exp(-lists.scores)))
    split = split_queries(p, calibration=0.5, seed=0)
    cal, test = split.take(p, "calibration"), split.take(p, "test")
    th = calibrate_threshold(cal, risk="abstain", alpha=0.2, delta=0.1)
    conf, err = abstention_data(cal)
    assert th.threshold == conformal_abstention(conf, err, alpha=0.2, delta=0.1).threshold
    ans = answer(Predictions(test.scores, test.offsets), th)
    top_conf, top_err = abstention_data(test)
    np.testing.assert_array_equal(ans.answered, top_conf >= th.threshold)
    assert ans.error_rate(test.labels) == pytest.approx(top_err[ans.answered].mean())
    assert 0 < ans.answer_rate < 1


def test_nothing_certified_means_abstain_everywhere():
    conf, err = _pool(40, seed=1)
    th = conformal_abstention(conf, err, alpha=0.05, delta=0.05)
    assert not th.feasible and th.threshold == math.inf and "abstain on every query" in th.guarantee
    lists = RankedLists.from_dense([[0.9, 0.1]], [[1, 0]])
    assert answer(lists, th).answer_rate == 0.0 and answer(lists, th).error_rate([1, 0]) == 0.0


def test_errors():
    conf, err = _pool(50)
    with pytest.raises(ValueError, match="confidence must be 1-D"):
        conformal_abstention([[0.5]], [[0]])
    with pytest.raises(ValueError, match="errors must have the shape of confidence"):
        conformal_abstention(conf, err[:3])
    with pytest.raises(ValueError, match="confidence must be finite"):
        conformal_abstention([math.nan], [0])
    with pytest.raises(ValueError, match="errors must be 0 or 1"):
        conformal_abstention([0.5], [2])
    with pytest.raises(TypeError, match="task must be a NotaTask"):
        nota_abstention_data(conf)  # type: ignore[arg-type]
    th = conformal_abstention(conf, err)
    with pytest.raises(ValueError, match="calibrated must be a ConformalThreshold of risk 'abstain'"):
        answer(RankedLists.from_dense([[0.9]], [[1]]), calibrate_threshold([[0.9, 0.1]], [[1, 0]], risk="coverage"))
    with pytest.raises(TypeError, match="scores must be Predictions or RankedLists"):
        answer(np.zeros(3), th)  # type: ignore[arg-type]
    ans = answer(RankedLists.from_dense([[0.9, 0.1]], [[1, 0]]), th)
    with pytest.raises(ValueError, match=r"labels must have shape \(2,\), one per pair"):
        ans.error_rate([1])
