"""Learn-then-Test's pieces against MAPIE and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from uncertank.conformal import fixed_sequence, hoeffding_bentkus, learn_then_test, min_certifiable, threshold_grid


def _by_hand(r: float, n: int, alpha: float, binary: bool) -> float:
    a = min(r, alpha)
    h1 = (a * math.log(a / alpha) if a > 0 else 0.0) + (1 - a) * math.log((1 - a) / (1 - alpha))
    bentkus = (1 if binary else math.e) * binom.cdf(math.ceil(n * r), n, alpha)
    return min(math.exp(-n * h1), bentkus, 1.0)


@pytest.mark.parametrize("binary", [False, True])
def test_hoeffding_bentkus_by_hand(binary):
    rng = np.random.default_rng(0)
    r = rng.random(50) * 0.3
    n = rng.integers(1, 500, 50)
    got = hoeffding_bentkus(r, n, 0.1, binary=binary)
    want = [_by_hand(float(a), int(b), 0.1, binary) for a, b in zip(r, n, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert hoeffding_bentkus([0.0], 0, 0.1).tolist() == [1.0]


@pytest.mark.parametrize("binary", [False, True])
def test_hoeffding_bentkus_equals_mapie(binary):
    methods = pytest.importorskip("mapie.risk_control.methods")
    rng = np.random.default_rng(1)
    r = rng.random(200) * 0.4
    n = rng.integers(1, 2000, 200).astype(float)
    for alpha in (0.05, 0.1, 0.2):
        want = methods.compute_hoeffding_bentkus_p_value(r, n, alpha, binary)[:, 0]
        np.testing.assert_allclose(hoeffding_bentkus(r, n, alpha, binary=binary), np.minimum(want, 1.0), rtol=1e-12)


def test_fixed_sequence_equals_mapie():
    fwer = pytest.importorskip("mapie.risk_control.fwer_control")
    rng = np.random.default_rng(2)
    for _ in range(50):
        p = np.sort(rng.random(30) ** 3) * rng.choice([0.5, 1.0, 3.0])
        p[rng.integers(0, 30)] = rng.random()  # a bump breaks the order now and then
        want = fwer.control_fwer(p, 0.1, fwer_method="fixed_sequence")
        assert list(range(fixed_sequence(p, 0.1))) == sorted(want.tolist())


def test_learn_then_test_and_the_smallest_certifiable_sample():
    m = min_certifiable(0.1, 0.1)
    assert hoeffding_bentkus([0.0], m, 0.1, binary=True)[0] <= 0.1 < hoeffding_bentkus([0.0], m - 1, 0.1,
                                                                                          binary=True)[0]
    n_rej, p = learn_then_test([0.0, 0.02, 0.05, 0.3, 0.0], 400, alpha=0.1, delta=0.1, binary=True)
    assert n_rej == 3 and p.shape == (5,)


def test_threshold_grid():
    g = threshold_grid(np.array([0.2, 0.9]), probabilistic=True, size=11)
    assert g.tolist() == [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    raw = threshold_grid(np.array([3.0, -1.0, 2.0, 2.0]), probabilistic=False, size=101)
    assert raw.tolist() == [3.0, 2.0, -1.0]
    assert threshold_grid(np.zeros(1), probabilistic=True, thresholds=[0.3, 0.7, 0.3]).tolist() == [0.7, 0.3]


def test_errors():
    with pytest.raises(ValueError, match="risk must be 1-D"):
        hoeffding_bentkus([[0.1]], 10, 0.1)
    with pytest.raises(ValueError, match=r"risk must lie in \[0, 1\]"):
        hoeffding_bentkus([1.5], 10, 0.1)
    with pytest.raises(ValueError, match="n must be >= 0"):
        hoeffding_bentkus([0.1], -1, 0.1)
    with pytest.raises(ValueError, match="pvalues must be 1-D"):
        fixed_sequence([[0.1]], 0.1)
    with pytest.raises(ValueError, match="delta must lie in"):
        fixed_sequence([0.1], 1.5)
    with pytest.raises(ValueError, match="thresholds must be 1-D"):
        threshold_grid(np.zeros(1), probabilistic=True, thresholds=[])
    with pytest.raises(ValueError, match="thresholds must be finite"):
        threshold_grid(np.zeros(1), probabilistic=True, thresholds=[math.inf])
