from __future__ import annotations

import numpy as np
import pytest

from uncertank.metrics import recall_at_k
from uncertank.plugins import registry
from uncertank.recalibration import HistogramBinning, IsotonicCalibration, PlattScaling, TemperatureScaling

sklearn_lm = pytest.importorskip("sklearn.linear_model")


# --------------------------------------------------------------------------- references


def ref_pava(x, y):
    """Isotonic least squares by a plain loop: sort, then pool adjacent violators."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    blocks = []  # [sum, count]
    for i in order:
        blocks.append([float(y[i]), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = []
    for s, c in blocks:
        fitted += [s / c] * c
    out = [0.0] * len(x)
    for pos, i in enumerate(order):
        out[i] = fitted[pos]
    return out


def bm25_like_lists(rng, n_queries=300, n_cand=10):
    """Lists whose relevant candidate tends to score lowest (BM25-sampled negatives outscore it)."""
    scores = rng.gamma(4.0, 2.0, size=(n_queries, n_cand)) + 8.0
    labels = np.zeros((n_queries, n_cand), dtype=int)
    labels[:, 0] = 1
    scores[:, 0] = rng.gamma(2.0, 2.0, size=n_queries)  # the positive: lower lexical overlap
    return scores, labels


# --------------------------------------------------------------------------- platt


def test_platt_matches_unregularised_logistic_regression():
    rng = np.random.default_rng(0)
    x = rng.normal(size=2000) * 3.0 + 5.0
    y = (rng.random(2000) < 1 / (1 + np.exp(-(1.7 * (x - 5.0) / 3.0 - 0.4)))).astype(int)
    cal = PlattScaling().fit(x, y)
    ref = sklearn_lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
    assert cal.a_ == pytest.approx(ref.coef_[0, 0], rel=1e-5)
    assert cal.b_ == pytest.approx(ref.intercept_[0], abs=1e-5)
    np.testing.assert_allclose(cal.transform(x), ref.predict_proba(x[:, None])[:, 1], atol=1e-6)


def test_platt_slope_is_nonnegative_where_the_unconstrained_fit_reverses_the_ranking():
    rng = np.random.default_rng(1)
    s, y = bm25_like_lists(rng)
    x, lab = s.ravel(), y.ravel()
    ref = sklearn_lm.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x[:, None], lab)
    assert ref.coef_[0, 0] < 0  # ordinary maximum likelihood wants a negative slope
    free = PlattScaling(nonnegative_slope=False).fit(x, lab)
    assert free.a_ == pytest.approx(ref.coef_[0, 0], rel=1e-4)
    cal = PlattScaling().fit(x, lab)
    assert cal.a_ == 0.0
    assert cal.b_ == pytest.approx(np.log(lab.mean() / (1 - lab.mean())), abs=1e-6)


def test_no_builtin_recalibrator_reverses_an_order_where_unconstrained_platt_does():
    rng = np.random.default_rng(2)
    s_val, y_val = bm25_like_lists(rng)
    s_test, y_test = bm25_like_lists(rng)
    raw_r1 = recall_at_k(s_test, y_test, k=1)
    order = np.argsort(s_test.ravel(), kind="stable")

    free = PlattScaling(nonnegative_slope=False).fit(s_val.ravel(), y_val.ravel())
    p_free = free.transform(s_test.ravel())
    assert (np.diff(p_free[order]) < 0).any()  # reversed
    assert recall_at_k(p_free.reshape(s_test.shape), y_test, k=1) > raw_r1 + 0.3

    names = set(registry("recalibrators"))
    assert {"temperature", "platt", "isotonic", "histogram"} <= names
    for name in ("temperature", "platt", "isotonic", "histogram"):
        factory = registry("recalibrators")[name].factory
        if name == "temperature":
            cal = factory(inputs="logits")
        else:
            cal = factory()
        cal.fit(s_val.ravel(), y_val.ravel())
        p = cal.transform(s_test.ravel())
        assert ((p >= 0) & (p <= 1)).all(), name
        assert (np.diff(p[order]) >= 0).all(), f"{name} reverses an order"
        # ties broken by the raw score give back the raw ranking
        keys = np.lexsort((-s_test, -p.reshape(s_test.shape)), axis=1)
        top = keys[:, 0]
        assert y_test[np.arange(len(top)), top].mean() == pytest.approx(raw_r1), name


# --------------------------------------------------------------------------- temperature


def test_temperature_matches_logistic_regression_on_logits_without_intercept():
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=3.0, size=5000)
    y = (rng.random(5000) < 1 / (1 + np.exp(-logits))).astype(int)
    p = 1 / (1 + np.exp(-2.0 * logits))  # overconfident by T = 2
    cal = TemperatureScaling().fit(p, y)
    z = np.log(p) - np.log1p(-p)
    ref = sklearn_lm.LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=10_000).fit(z[:, None], y)
    assert cal.temperature_ == pytest.approx(1.0 / ref.coef_[0, 0], rel=1e-5)
    assert cal.temperature_ == pytest.approx(2.0, rel=0.1)
    np.testing.assert_allclose(cal.transform(p), ref.predict_proba(z[:, None])[:, 1], atol=1e-6)
    on_logits = TemperatureScaling(inputs="logits").fit(z, y)
    assert on_logits.temperature_ == pytest.approx(cal.temperature_, rel=1e-6)


# --------------------------------------------------------------------------- isotonic and binning


def test_isotonic_matches_a_plain_pool_adjacent_violators_loop():
    rng = np.random.default_rng(4)
    x = rng.random(300)
    y = (rng.random(300) < x).astype(int)
    cal = IsotonicCalibration().fit(x, y)
    np.testing.assert_allclose(cal.transform(x), ref_pava(x.tolist(), y.tolist()), atol=1e-12)
    assert cal.transform([-1.0])[0] == cal.transform([x.min()])[0]  # clipped outside the fitted range


def test_histogram_binning_matches_a_plain_loop_and_pools_decreasing_bins():
    rng = np.random.default_rng(5)
    x = rng.random(1000)
    y = (rng.random(1000) < 0.2 + 0.6 * x).astype(int)
    y[(x > 0.5) & (x < 0.6)] = 0  # a bin whose fraction drops below its neighbours
    cal = HistogramBinning(n_bins=10).fit(x, y)
    edges = np.quantile(x, np.linspace(0, 1, 11))
    bins = [min(sum(v >= e for e in edges[1:-1]), 9) for v in x]
    frac = [np.mean([y[i] for i in range(len(x)) if bins[i] == b]) for b in range(10)]
    counts = [bins.count(b) for b in range(10)]
    # the plain fraction decreases somewhere; the fitted values are its weighted PAVA
    assert any(frac[b + 1] < frac[b] for b in range(9))
    expected = ref_pava(list(range(10)), frac) if len(set(counts)) == 1 else None
    assert expected is not None  # equal-mass bins of distinct scores have equal counts
    np.testing.assert_allclose(cal.values_, expected, atol=1e-12)
    np.testing.assert_allclose(cal.transform(x), np.asarray(expected)[bins], atol=1e-12)
    assert (np.diff(cal.values_) >= 0).all()


def test_histogram_binning_fills_empty_bins_from_below():
    # ties put every score in the top bins: the lower bins are empty
    cal = HistogramBinning(n_bins=4).fit([0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1])
    assert cal.values_.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1.0])


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("cls", [PlattScaling, TemperatureScaling, IsotonicCalibration, HistogramBinning])
def test_transform_before_fit_raises(cls):
    with pytest.raises(RuntimeError, match="fitted before transform"):
        cls().transform([0.1])


def test_recalibrator_input_errors():
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]"):
        TemperatureScaling().fit([0.2, 3.0], [0, 1])
    with pytest.raises(ValueError, match="same shape"):
        PlattScaling().fit([0.2, 0.3], [0, 1, 1])
    with pytest.raises(ValueError, match="scores must be finite"):
        IsotonicCalibration().fit([0.2, np.nan], [0, 1])
    with pytest.raises(ValueError, match="labels must be integers >= 0"):
        HistogramBinning().fit([0.2, 0.3], [0, -1])
    with pytest.raises(ValueError, match="inputs must be one of 'probabilities', 'logits'"):
        TemperatureScaling(inputs="scores")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nonnegative_slope must be a bool"):
        PlattScaling(nonnegative_slope="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        HistogramBinning(n_bins=0)


def test_platt_stopped_by_its_line_search_at_the_optimum_has_converged(monkeypatch):
    """L-BFGS-B's "ABNORMAL" stop where the projected gradient is about zero is a converged fit; elsewhere not."""
    import warnings

    import scipy.optimize

    from uncertank.recalibration import NotConvergedWarning, PlattScaling

    rng = np.random.default_rng(0)
    scores, labels = rng.normal(size=200), rng.integers(0, 2, 200).astype(float)
    real = scipy.optimize.minimize

    def stopped(grad):
        def minimize(*args, **kwargs):
            res = real(*args, **kwargs)
            res.success, res.message, res.jac = False, "ABNORMAL: ", np.asarray(grad, dtype=float)
            return res
        return minimize

    monkeypatch.setattr(scipy.optimize, "minimize", stopped([3e-7, 6e-8]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotConvergedWarning)
        assert PlattScaling().fit(scores, labels).converged_ is True
    monkeypatch.setattr(scipy.optimize, "minimize", stopped([0.0, 0.5]))  # the intercept still moves
    with pytest.warns(NotConvergedWarning):
        assert PlattScaling().fit(scores, labels).converged_ is False
