from __future__ import annotations

import numpy as np
import pytest

from uncertank.recalibration import PlattScaling, TemperatureScaling


def test_platt_matches_unregularised_logistic_regression():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.normal(size=2000)
    y = (rng.random(2000) < 1 / (1 + np.exp(-(1.7 * x - 0.4)))).astype(int)
    cal = PlattScaling().fit(x, y)
    ref = sklearn.LogisticRegression(C=np.inf, tol=1e-10).fit(x[:, None], y)
    assert cal.a_ == pytest.approx(ref.coef_[0, 0], rel=1e-4)
    assert cal.b_ == pytest.approx(ref.intercept_[0], abs=1e-4)
    np.testing.assert_allclose(cal.transform(x), ref.predict_proba(x[:, None])[:, 1], atol=1e-5)


def test_temperature_recovers_a_known_temperature():
    rng = np.random.default_rng(1)
    logits = rng.normal(scale=3.0, size=20000)
    y = (rng.random(20000) < 1 / (1 + np.exp(-logits))).astype(int)
    overconfident = 1 / (1 + np.exp(-2.0 * logits))  # true T = 2
    cal = TemperatureScaling().fit(overconfident, y)
    assert cal.temperature_ == pytest.approx(2.0, rel=0.05)
    p = cal.transform(overconfident)
    assert ((p >= 0) & (p <= 1)).all()


def test_recalibrator_errors():
    with pytest.raises(RuntimeError, match="fitted before transform"):
        PlattScaling().transform([0.1])
    with pytest.raises(RuntimeError, match="fitted before transform"):
        TemperatureScaling().transform([0.1])
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]"):
        TemperatureScaling().fit([0.2, 3.0], [0, 1])
    with pytest.raises(ValueError, match="same shape"):
        PlattScaling().fit([0.2, 0.3], [0, 1, 1])
