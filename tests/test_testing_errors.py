"""The conformance kit names a plugin's mistake: every failure inside a check is a ConformanceError."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from uncertank import Predictions, PredictiveSamples, QuerySet
from uncertank.metrics import Metric, recall_at_k
from uncertank.testing import (
    ConformanceError,
    check_metric,
    check_ranker,
    check_recalibrator,
    check_stochastic_ranker,
)
from uncertank.validation import InvalidPredictionError

QS = QuerySet.from_lists(["q1", "q2"], [["a", "b", "c"], ["d", "e"]], [[1, 0, 0], [0, 1]])


class Fine:
    name = "fine"

    def predict(self, queries):
        return Predictions(np.linspace(0.1, 0.9, queries.n_pairs), queries.offsets, ranker=self.name)


class BuildsNaN(Fine):
    name = "builds-nan"

    def predict(self, queries):
        scores = np.full(queries.n_pairs, 0.5)
        scores[1] = np.nan
        return Predictions(scores, queries.offsets)  # Predictions itself raises ValueError


class BareArray(Fine):
    name = "bare"

    def predict(self, queries):
        return np.full(queries.n_pairs, 0.5)


class OneShort(Fine):
    name = "one-short"

    def predict(self, queries):
        return Predictions(np.full(queries.n_pairs - 1, 0.5), np.array([0, queries.n_pairs - 1]))


class Above1(Fine):
    name = "above-1"

    def predict(self, queries):
        pred = Predictions(np.full(queries.n_pairs, 0.5), queries.offsets)
        object.__setattr__(pred, "scores", np.full(queries.n_pairs, 1.25))
        return pred


class FitRaises(Fine):
    name = "fit-raises"
    is_fitted = False

    def fit(self, train, valid=None):
        raise RuntimeError("no GPU")


class SaveRaises(Fine):
    name = "save-raises"

    def save(self, path):
        raise OSError("disk full")

    @classmethod
    def load(cls, path):  # pragma: no cover - never reached
        return cls()


class NameRaises:
    @property
    def name(self):
        raise KeyError("config")

    def predict(self, queries):  # pragma: no cover - never reached
        return Fine().predict(queries)


class SamplesWrongShape(Fine):
    name = "samples-shape"

    def predict_samples(self, queries, *, n_samples=None):
        return PredictiveSamples(np.full((3, queries.n_pairs + 1), 0.5), np.array([0, queries.n_pairs + 1]))


class SamplesRaise(Fine):
    name = "samples-raise"

    def predict_samples(self, queries, *, n_samples=None):
        if n_samples is not None:
            raise ValueError("n_samples is fixed at 3")
        return PredictiveSamples(np.full((3, queries.n_pairs), 0.5), queries.offsets)


CASES = [
    (BuildsNaN(), check_ranker, "predict", ValueError,
     "raised ValueError: scores must be finite; got 1 NaN or inf values, e.g. nan"),
    (BareArray(), check_ranker, "predict", InvalidPredictionError,
     "predict must return uncertank.Predictions; got ndarray of shape (5,)"),
    (OneShort(), check_ranker, "predict", InvalidPredictionError,
     "scores must have shape (5,), one per pair; got (4,)"),
    (Above1(), check_ranker, "predict", InvalidPredictionError,
     "probabilistic scores must lie in [0, 1]; got 5 values outside, e.g. 1.25"),
    (NameRaises(), check_ranker, "protocol", KeyError, "raised KeyError: 'config'"),
    (SaveRaises(), check_ranker, "save/load", OSError, "raised OSError: disk full"),
    (SamplesWrongShape(), check_stochastic_ranker, "predict_samples", InvalidPredictionError,
     "samples must have shape (n_samples, 5), one joint draw per row; got (3, 6)"),
    (SamplesRaise(), check_stochastic_ranker, "n_samples", ValueError, "raised ValueError: n_samples is fixed at 3"),
]


@pytest.mark.parametrize(("ranker", "check", "step", "cause", "message"), CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_every_failure_inside_a_check_is_a_conformance_error_with_its_cause(ranker, check, step, cause, message):
    with pytest.raises(ConformanceError, match=re.escape(f"({type(ranker).__name__}) fails check '{step}': "
                                                         f"{message}")) as info:
        check(ranker, QS)
    assert isinstance(info.value.__cause__, cause)


def test_a_fit_that_raises_is_named():
    with pytest.raises(ConformanceError, match=r"ranker 'fit-raises' \(FitRaises\) fails check 'fit': "
                                               r"raised RuntimeError: no GPU") as info:
        check_ranker(FitRaises(), QS, train=QS)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_metric_that_raises_is_named_with_the_check_it_failed():
    def breaks_on_dense(scores, labels=None, *, per_query=False):
        if isinstance(scores, np.ndarray) and scores.ndim == 2:
            raise ValueError("dense arrays are not supported")
        return recall_at_k(scores, labels, k=1, per_query=per_query)

    metric = Metric(breaks_on_dense, name="flaky", kind="ranking")
    with pytest.raises(ConformanceError, match="metric 'flaky' fails check 'inputs agree': raised ValueError: "
                                               "dense arrays are not supported") as info:
        check_metric(metric)
    assert isinstance(info.value.__cause__, ValueError)

    def always_raises(scores, labels=None):
        raise ZeroDivisionError("empty")

    with pytest.raises(ConformanceError, match="metric 'boom' fails check 'value': raised ZeroDivisionError"):
        check_metric(always_raises, name="boom")


class _TransformRaises:
    def fit(self, scores, labels):
        return self

    def transform(self, scores):
        raise ValueError("scores must be logits")


class _FitRaises(_TransformRaises):
    def fit(self, scores, labels):
        raise np.linalg.LinAlgError("singular matrix")


def test_a_recalibrator_that_raises_is_named():
    with pytest.raises(ConformanceError, match="'_TransformRaises' fails check 'transform': raised ValueError: "
                                               "scores must be logits") as info:
        check_recalibrator(_TransformRaises)
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(ConformanceError, match="'_FitRaises' fails check 'fit': raised LinAlgError: singular"):
        check_recalibrator(_FitRaises)


def test_a_good_ranker_still_passes(tmp_path: Path):
    assert check_ranker(Fine(), QS)[-1] == "input unchanged"
