"""check_prediction: what a ranker returned, checked right after predict / predict_samples."""

from __future__ import annotations

import re

import numpy as np
import pytest

from uncertank import Predictions, PredictiveSamples, QuerySet
from uncertank.validation import InvalidPredictionError, check_prediction

QS = QuerySet.from_lists(["q1", "q2"], [["a", "b", "c"], ["d", "e"]])  # 5 pairs, offsets [0, 3, 5]
GOOD = [0.1, 0.9, 0.3, 0.5, 0.2]


def _bypass(obj, field, value):
    """Set a field of a frozen prediction without its own check, as a buggy ranker could."""
    object.__setattr__(obj, field, value)
    return obj


def test_good_predictions_and_samples_pass_and_come_back():
    pred = Predictions(GOOD, QS.offsets)
    assert check_prediction(pred, QS, ranker="r") is pred
    raw = Predictions([3.0, -1.0, 0.0, 7.5, 2.0], QS.offsets, probabilistic=False)
    assert check_prediction(raw, QS, ranker="bm25") is raw
    ps = PredictiveSamples(np.tile(GOOD, (4, 1)), QS.offsets)
    assert check_prediction(ps, QS, ranker="r", samples=True, n_samples=4, probabilistic=True) is ps


FAULTS = [
    (np.array(GOOD), {}, "predict must return uncertank.Predictions; got ndarray of shape (5,)"),
    (GOOD, {}, "predict must return uncertank.Predictions; got list"),
    (Predictions(GOOD[:4], [0, 2, 4]), {}, "scores must have shape (5,), one per pair; got (4,)"),
    (Predictions(GOOD, [0, 2, 5]), {},
     "predictions must carry the offsets of the QuerySet scored; got offsets[1] = 2, the QuerySet's is 3"),
    (_bypass(Predictions(GOOD, QS.offsets), "scores", np.array([0.1, np.nan, 0.3, 0.5, 0.2])), {},
     "scores must be finite; got 1 NaN or infinite values, e.g. nan"),
    (_bypass(Predictions(GOOD, QS.offsets), "scores", np.array([0.1, 1.7, 0.3, -0.5, 0.2])), {},
     "probabilistic scores must lie in [0, 1]; got 2 values outside, e.g. 1.7"),
    (Predictions([3.0, 0.0, 0.0, 0.0, 0.0], QS.offsets, probabilistic=False), {"probabilistic": True},
     "probabilistic scores must lie in [0, 1]; got 1 values outside, e.g. 3.0"),
    (Predictions(GOOD, QS.offsets), {"samples": True},
     "predict_samples must return uncertank.PredictiveSamples; got Predictions"),
    (np.ones((3, 5)), {"samples": True},
     "predict_samples must return uncertank.PredictiveSamples; got ndarray of shape (3, 5)"),
    (PredictiveSamples(np.ones((3, 4)), [0, 2, 4]), {"samples": True},
     "samples must have shape (n_samples, 5), one joint draw per row; got (3, 4)"),
    (_bypass(PredictiveSamples(np.ones((3, 5)), QS.offsets), "samples", np.ones(5)), {"samples": True},
     "samples must have shape (n_samples, 5), one joint draw per row; got (5,)"),
    (PredictiveSamples(np.ones((3, 5)), QS.offsets), {"samples": True, "n_samples": 2},
     "n_samples=2 must give 2 rows; got 3"),
    (PredictiveSamples(np.ones((3, 5)), [0, 1, 5]), {"samples": True},
     "samples must carry the offsets of the QuerySet scored; got offsets[1] = 1, the QuerySet's is 3"),
    (PredictiveSamples(np.ones((3, 5)), [0, 5]), {"samples": True},
     "samples must carry the offsets of the QuerySet scored; got offsets of 1 queries, the QuerySet has 2"),
    (_bypass(PredictiveSamples(np.ones((2, 5)), QS.offsets), "samples", np.array([[1.0] * 5, [np.inf] * 5])),
     {"samples": True}, "samples must be finite; got 5 NaN or infinite values, e.g. inf"),
    (PredictiveSamples(np.full((2, 5), 1.5), QS.offsets), {"samples": True, "probabilistic": True},
     "the ranker's scores are probabilities, so every sample must lie in [0, 1]; got 10 values outside, e.g. 1.5"),
]


@pytest.mark.parametrize(("pred", "options", "problem"), FAULTS, ids=[str(i) for i in range(len(FAULTS))])
def test_each_fault_raises_a_value_error_naming_the_ranker_and_the_condition(pred, options, problem):
    with pytest.raises(InvalidPredictionError, match=re.escape(f"ranker 'mine' on ubuntu/test: {problem}")) as info:
        check_prediction(pred, QS, ranker="mine", condition="ubuntu/test", **options)
    assert isinstance(info.value, ValueError)
    assert (info.value.ranker, info.value.condition, info.value.problem) == ("mine", "ubuntu/test", problem)
    with pytest.raises(InvalidPredictionError, match=re.escape(f"ranker 'mine': {problem}")):
        check_prediction(pred, QS, ranker="mine", **options)


def test_samples_of_raw_scores_are_not_range_checked_by_default():
    ps = PredictiveSamples(np.full((2, 5), 4.0), QS.offsets)
    assert check_prediction(ps, QS, ranker="r", samples=True) is ps


def test_argument_errors():
    pred = Predictions(GOOD, QS.offsets)
    with pytest.raises(TypeError, match="queries must be a QuerySet; got list"):
        check_prediction(pred, [], ranker="r")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ranker must be a str \(the ranker's name\); got int"):
        check_prediction(pred, QS, ranker=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="condition must be a str or None; got tuple"):
        check_prediction(pred, QS, ranker="r", condition=("a", "b"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1; got 0"):
        check_prediction(pred, QS, ranker="r", samples=True, n_samples=0)


@pytest.mark.parametrize(("value", "kwargs", "error", "message"), [
    (True, {}, TypeError, "must be a finite number; got bool True"),
    ("1", {}, TypeError, "got str '1'"),
    (float("nan"), {}, ValueError, "must be a finite number; got nan"),
    (float("inf"), {"minimum": 0}, ValueError, "finite number >= 0; got inf"),
    (-0.1, {"minimum": 0}, ValueError, ">= 0; got -0.1"),
    (0, {"minimum": 0, "exclusive_minimum": True}, ValueError, "> 0; got 0"),
    (1.0, {"minimum": 0, "maximum": 1, "exclusive_maximum": True}, ValueError, ">= 0 and < 1; got 1.0"),
])
def test_check_real_names_the_argument_the_bounds_and_the_value(value, kwargs, error, message):
    from uncertank.validation import check_real

    with pytest.raises(error, match=re.escape(message)):
        check_real(value, "x", **kwargs)


def test_check_real_returns_a_float():
    from uncertank.validation import check_real

    assert check_real(np.int64(3), "x", minimum=0, maximum=3) == 3.0
    assert isinstance(check_real(np.float32(0.5), "x"), float)
