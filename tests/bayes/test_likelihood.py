from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from uncertank.bayes import zoib_logp_graph, zoib_logpdf, zoib_rvs


def _scipy_zoib(y, mu, phi, zoi, coi):
    """Direct computation of the three cases with scipy.stats.beta."""
    if y == 0:
        return np.log(zoi * (1 - coi))
    if y == 1:
        return np.log(zoi * coi)
    return np.log(1 - zoi) + stats.beta(mu * phi, (1 - mu) * phi).logpdf(y)


CASES = [
    # y, mu, phi, zoi, coi
    (0.0, 0.3, 2.0, 0.2, 0.4),
    (1.0, 0.3, 2.0, 0.2, 0.4),
    (0.25, 0.3, 2.0, 0.2, 0.4),
    (0.999, 0.9, 50.0, 0.01, 0.9),
    (1e-6, 0.05, 0.7, 0.5, 0.5),
    (0.5, 0.5, 1.0, 0.0, 0.3),
]


@pytest.mark.parametrize(("y", "mu", "phi", "zoi", "coi"), CASES)
def test_numpy_logpdf_equals_scipy(y, mu, phi, zoi, coi):
    assert float(zoib_logpdf(y, mu, phi, zoi, coi)) == pytest.approx(_scipy_zoib(y, mu, phi, zoi, coi), rel=1e-10)


def test_pytensor_graph_equals_scipy_elementwise():
    import pytensor
    import pytensor.tensor as pt

    y, mu, phi, zoi, coi = (np.array(c, dtype=np.float64) for c in zip(*CASES, strict=True))
    args = [pt.dvector(n) for n in ("y", "mu", "phi", "zoi", "coi")]
    fn = pytensor.function(args, zoib_logp_graph(*args))
    ours = fn(y, mu, phi, zoi, coi)
    ref = np.array([_scipy_zoib(*c) for c in CASES])
    np.testing.assert_allclose(ours, ref, rtol=1e-10)


def test_pytensor_gradient_is_finite_at_zero_and_one():
    import pytensor
    import pytensor.tensor as pt

    mu, phi, zoi, coi = pt.dscalar("mu"), pt.dscalar("phi"), pt.dscalar("zoi"), pt.dscalar("coi")
    y = np.array([0.0, 1.0, 0.4])
    total = zoib_logp_graph(pt.as_tensor_variable(y), mu, phi, zoi, coi).sum()
    grads = pytensor.function([mu, phi, zoi, coi], pytensor.grad(total, [mu, phi, zoi, coi]))(0.3, 2.0, 0.2, 0.4)
    assert np.isfinite(grads).all()
    # d/dzoi of log(zoi(1-coi)) + log(zoi coi) + log(1-zoi) = 2/zoi - 1/(1-zoi)
    assert grads[2] == pytest.approx(2 / 0.2 - 1 / 0.8)


def test_logpdf_is_minus_inf_for_a_one_without_one_inflation():
    assert zoib_logpdf(1.0, 0.5, 2.0, 0.3, 0.0) == -np.inf
    # and integrates to 1 over the interior plus the two masses
    x = np.linspace(1e-9, 1 - 1e-9, 200001)
    dens = np.exp(zoib_logpdf(x, 0.3, 3.0, 0.2, 0.4))
    mass = np.trapezoid(dens, x) + 0.2
    assert mass == pytest.approx(1.0, abs=1e-3)


def test_rvs_match_the_three_cases():
    rng = np.random.default_rng(0)
    x = zoib_rvs(0.3, 2.0, 0.2, 0.4, rng=rng, size=100_000)
    assert x.min() >= 0 and x.max() <= 1
    se = np.sqrt(0.12 * 0.88 / x.size)
    assert abs((x == 0).mean() - 0.2 * 0.6) < 4 * se
    assert abs((x == 1).mean() - 0.2 * 0.4) < 4 * np.sqrt(0.08 * 0.92 / x.size)
    inner = x[(x > 0) & (x < 1)]
    assert stats.kstest(inner, stats.beta(0.6, 1.4).cdf).pvalue > 1e-3


def test_rvs_stay_in_unit_interval_for_extreme_parameters():
    rng = np.random.default_rng(1)
    mu = np.array([1e-9, 0.5, 1 - 1e-9, 1e-4])
    phi = np.array([1e-3, 1e-3, 1e-2, 1e4])
    x = zoib_rvs(mu[:, None], phi[:, None], 0.05, 0.5, rng=rng, size=(4, 5000))
    assert np.isfinite(x).all() and x.min() >= 0 and x.max() <= 1


def test_rvs_seed_reproducible_and_broadcast():
    a = zoib_rvs(np.full(7, 0.4), 3.0, 0.1, 0.5, rng=3)
    b = zoib_rvs(np.full(7, 0.4), 3.0, 0.1, 0.5, rng=np.random.default_rng(3))
    assert a.shape == (7,)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mu": 0.0}, r"mu must lie in \(0, 1\)"),
        ({"mu": 1.2}, r"mu must lie in \(0, 1\)"),
        ({"phi": -1.0}, "phi must be > 0"),
        ({"zoi": 1.5}, r"zoi must lie in \[0, 1\]"),
        ({"coi": -0.1}, r"coi must lie in \[0, 1\]"),
        ({"mu": np.nan}, "mu must be finite"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    params = {"mu": 0.5, "phi": 2.0, "zoi": 0.1, "coi": 0.5, **kwargs}
    with pytest.raises(ValueError, match=match):
        zoib_logpdf(0.3, **params)
    with pytest.raises(ValueError, match=match):
        zoib_rvs(**params, size=3)


def test_scores_outside_unit_interval_raise():
    with pytest.raises(ValueError, match=r"y must lie in \[0, 1\]; got 1 values outside, e.g. -0.1"):
        zoib_logpdf([-0.1, 0.5], 0.5, 2.0, 0.1, 0.5)
