"""Recalibration at its edges: temperature at its bounds, degenerate validation data for every recalibrator."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from uncertank.metrics import mean_reciprocal_rank
from uncertank.recalibration import (
    DegenerateDataWarning,
    HistogramBinning,
    IsotonicCalibration,
    PlattScaling,
    TemperatureScaling,
)

ALL = [PlattScaling, TemperatureScaling, IsotonicCalibration, HistogramBinning]
PROBE = [0.1, 0.2999, 0.3, 0.3001]


def logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


#: logit(1 - 1e-12), computed without rounding 1 - 1e-12 first
Z_MAX = math.log1p(-1e-12) - math.log(1e-12)


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


# --------------------------------------------------------------------------- temperature at its bounds


def test_temperature_at_its_lower_bound_keeps_the_order_and_the_mrr():
    cal = TemperatureScaling().fit([0.9, 0.1], [1, 0])  # separable: the likelihood runs to the bound
    t_min = max(logit(0.9), logit(0.99)) / Z_MAX
    assert cal.temperature_bounds_ == pytest.approx((t_min, math.exp(5)), rel=1e-12)
    assert cal.temperature_ == pytest.approx(t_min, rel=1e-6)
    scores = [0.62, 0.7, 0.1]
    out = cal.transform(scores)
    assert out.tolist() == pytest.approx([sigmoid(logit(s) / cal.temperature_) for s in scores], rel=1e-12)
    assert out[2] < out[0] < out[1] < 1.0  # was [1.0, 1.0, 0.0] at T = exp(-5)
    labels = np.array([[0, 1, 0]])
    assert mean_reciprocal_rank(np.array([scores]), labels) == 1.0
    assert mean_reciprocal_rank(out[None, :], labels) == 1.0  # was 0.5


def test_temperature_bound_follows_the_largest_validation_logit():
    p = 1 - 1e-9  # logit 20.7 > logit(0.99)
    cal = TemperatureScaling().fit([p, 1 - p], [1, 0])
    assert cal.temperature_bounds_[0] == pytest.approx(logit(p) / Z_MAX, rel=1e-9)
    assert cal.transform([p])[0] == pytest.approx(1 - 1e-12, abs=1e-15)  # not rounded to 1.0
    assert cal.transform([p])[0] < 1.0


@pytest.mark.parametrize(("scores", "labels", "bound"), [([0.9, 0.1], [1, 0], 0), ([0.9, 0.1], [0, 1], 1)])
def test_temperature_keeps_every_order_strictly_at_either_bound(scores, labels, bound):
    cal = TemperatureScaling().fit(scores, labels)
    assert cal.temperature_ == pytest.approx(cal.temperature_bounds_[bound], rel=1e-6)
    grid = np.linspace(0.01, 0.99, 981)
    assert (np.diff(cal.transform(grid)) > 0).all()
    on_logits = TemperatureScaling(inputs="logits").fit([logit(s) for s in scores], labels)
    assert on_logits.temperature_ == pytest.approx(cal.temperature_, rel=1e-6)
    assert (np.diff(on_logits.transform(np.log(grid) - np.log1p(-grid))) > 0).all()


def test_temperature_does_not_clip_scores_into_ties():
    cal = TemperatureScaling().fit([0.9, 0.8, 0.2, 0.7], [1, 0, 0, 1])
    out = cal.transform([0.0, 1e-300, 1e-14, 1e-13, 0.5, 1.0])
    assert out[0] == 0.0 and out[-1] == 1.0 and out[4] == 0.5
    assert (np.diff(out) > 0).all()  # 1e-14 and 1e-13 were both clipped to 1e-12


def test_temperature_fit_on_exact_zeros_and_ones_is_finite():
    cal = TemperatureScaling().fit([0.0, 1.0, 0.3, 0.6], [0, 1, 1, 0])
    assert math.isfinite(cal.temperature_)
    assert cal.transform([0.0, 1.0]).tolist() == [0.0, 1.0]


# --------------------------------------------------------------------------- degenerate validation data


def expected_shift(x: list[float], y: list[int], probe: list[float]) -> list[float]:
    """sigmoid((s - mean) / sd + logit((k + 1) / (n + 2))), sd = 1 for constant scores, by a plain loop."""
    n, k = len(x), sum(y)
    mean = sum(x) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / n)
    sd = 1.0 if max(x) == min(x) else sd
    r = (k + 1) / (n + 2)
    return [sigmoid((s - mean) / sd + logit(r)) for s in probe]


CASES = [
    ([0.3, 0.3, 0.3, 0.3], [0, 1, 0, 0], "the validation scores are all equal (0.3)"),
    ([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], "the validation labels are all non-relevant (0 of 4 relevant)"),
    ([0.1, 0.2, 0.3, 0.4], [1, 1, 1, 1], "the validation labels are all relevant (4 of 4)"),
]


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(("x", "y", "reason"), CASES)
def test_every_recalibrator_falls_back_to_an_order_keeping_map_on_degenerate_data(cls, x, y, reason):
    with pytest.warns(DegenerateDataWarning, match=rf"{cls.__name__}\.fit: {re.escape(reason)}, which cannot "
                                                   r"identify the map; falling back to .*which keeps every order"):
        cal = cls().fit(x, y)
    assert cal.fallback_ == reason
    out = cal.transform(PROBE)
    expected = PROBE if cls is TemperatureScaling else expected_shift(x, y, PROBE)
    assert out.tolist() == pytest.approx(expected, rel=1e-12)
    assert (np.diff(out) > 0).all()


def test_platt_on_constant_scores_no_longer_fits_a_huge_slope():
    x = np.full(10, 0.3)  # std() is 5.55e-17, not 0: the old fit read the rounding noise as signal
    assert x.std() > 0
    with pytest.warns(DegenerateDataWarning):
        cal = PlattScaling().fit(x, [0, 1] * 5)
    assert (cal.a_, cal.b_) == pytest.approx((1.0, logit(6 / 12) - 0.3), abs=1e-12)
    out = cal.transform(PROBE)
    assert out.tolist() == pytest.approx([sigmoid(s - 0.3) for s in PROBE], rel=1e-12)  # was [0, 0, 0.5, 1]


def test_a_fit_on_good_data_after_a_fallback_forgets_it():
    with pytest.warns(DegenerateDataWarning):
        cal = IsotonicCalibration().fit([0.3, 0.3], [0, 1])
    assert cal.model_ is None
    cal.fit([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    assert cal.fallback_ is None and cal.model_ is not None
    assert cal.transform([0.1, 0.25, 0.4]).tolist() == [0.0, 0.5, 1.0]
    hist = HistogramBinning(n_bins=2).fit([0.1, 0.2, 0.7, 0.9], [0, 1, 1, 1])
    with pytest.warns(DegenerateDataWarning):
        hist.fit([0.1, 0.2], [0, 0])
    assert hist.values_ is None and hist.edges_ is None


def test_scores_that_differ_are_not_degenerate():
    cal = PlattScaling().fit([0.3, 0.3 + 1e-9, 0.3, 0.3 + 1e-9], [0, 1, 0, 1])
    assert cal.fallback_ is None
