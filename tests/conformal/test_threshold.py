"""The one-call API: any ranker's predictions in, a threshold to ship out, applied the same way to new queries."""

from __future__ import annotations

import json

import numpy as np
import pytest

from uncertank import Predictions, PredictiveSamples, RankedLists
from uncertank.conformal import (
    Answers,
    CandidateSets,
    apply_threshold,
    calibrate_threshold,
    conformal_risk_control,
    conformity_scores,
    fdr_control,
    labelled_scores,
    split_conformal,
    split_queries,
)


@pytest.fixture
def stochastic():
    """A stochastic ranker's joint draws over 400 queries of 6 candidates, with labels."""
    rng = np.random.default_rng(0)
    n_q, width, draws = 400, 6, 8
    y = (rng.random((n_q, width)) < 0.3).astype(np.int64)
    y[np.arange(n_q), rng.integers(0, width, n_q)] = 1
    logits = rng.normal(0, 1, (n_q, width)) + 1.5 * y
    samples = 1 / (1 + np.exp(-(logits.ravel()[None, :] + rng.normal(0, 0.5, (draws, n_q * width)))))
    offsets = np.arange(0, n_q * width + 1, width)
    return PredictiveSamples(samples, offsets, ranker="mc"), y.ravel()


@pytest.mark.parametrize("score", ["mean", "quantile", "lower"])
def test_each_risk_dispatches_to_its_procedure_on_the_chosen_score(stochastic, score):
    samples, labels = stochastic
    lists = labelled_scores(samples, labels, score=score, quantile=0.2, k_std=1.5)
    kw = {"score": score, "quantile": 0.2, "k_std": 1.5}
    cov = calibrate_threshold(samples, labels, risk="coverage", alpha=0.1, **kw)
    assert cov.threshold == split_conformal(lists, alpha=0.1).threshold and cov.score == score
    miss = calibrate_threshold(samples, labels, risk="miss", alpha=0.1, method="topk", **kw)
    assert miss.k == conformal_risk_control(lists, alpha=0.1, method="topk").k
    fdr = calibrate_threshold(samples, labels, risk="fdr", alpha=0.3, delta=0.1, **kw)
    assert fdr.threshold == fdr_control(lists, alpha=0.3, delta=0.1).threshold
    aps = calibrate_threshold(samples, labels, risk="coverage", method="aps", **kw)
    assert aps.mass in ("sum", "softmax")


def test_apply_scores_new_queries_the_way_calibration_did(stochastic):
    samples, labels = stochastic
    split = split_queries(samples, calibration=0.5, seed=0)
    cal, test = split.take(samples, "calibration"), split.take(samples, "test")
    y = labels.reshape(400, 6)
    cal_y = split.take(y, "calibration").ravel()
    th = calibrate_threshold(cal, cal_y, risk="coverage", score="quantile", quantile=0.25)
    sets = apply_threshold(th, test)
    assert isinstance(sets, CandidateSets)
    q = conformity_scores(test, score="quantile", quantile=0.25).scores
    np.testing.assert_array_equal(sets.mask, q >= th.threshold)
    ab = calibrate_threshold(cal, cal_y, risk="abstain", alpha=0.3, delta=0.1)
    assert isinstance(apply_threshold(ab, test), Answers)
    with pytest.raises(ValueError, match="score='score' needs one score per pair"):
        apply_threshold(calibrate_threshold(Predictions(cal.mean(), cal.offsets), cal_y), test)
    json.dumps(th.to_dict())


def test_to_dict_is_json_with_infinite_thresholds():
    th = calibrate_threshold(RankedLists.from_dense([[0.9, 0.1], [0.8, 0.2]], [[1, 0], [1, 0]]), risk="coverage")
    d = th.to_dict()
    assert d["threshold"] == "-inf" and d["n_calibration"] == 2 and "risk" in d
    json.dumps(d, allow_nan=False)
    lower = calibrate_threshold(PredictiveSamples(np.random.default_rng(0).random((3, 4)), [0, 2, 4]),
                                [1, 0, 0, 1], score="lower", k_std=2.0)
    assert lower.to_dict()["k_std"] == 2.0


def test_errors(stochastic):
    samples, labels = stochastic
    with pytest.raises(ValueError, match="risk must be one of"):
        calibrate_threshold(samples, labels, risk="precision")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method 'aps' does not apply to risk 'miss'"):
        calibrate_threshold(samples, labels, risk="miss", method="aps")
    with pytest.raises(ValueError, match="method must be one of"):
        calibrate_threshold(samples, labels, method="kmeans")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delta must lie in"):
        calibrate_threshold(samples, labels, risk="fdr", delta=0.0)
    with pytest.raises(TypeError, match="calibrated must be a ConformalThreshold"):
        apply_threshold(0.5, samples)  # type: ignore[arg-type]
