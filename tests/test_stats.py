from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as ss

from uncertank.stats import (
    SignificanceResult,
    adjust_pvalues,
    bonferroni,
    holm,
    paired_bootstrap_test,
    paired_ttest,
    randomization_test,
    significance_marks,
    wilcoxon_signed_rank,
)

ALTS = ["two-sided", "greater", "less"]


def scores(seed, n=30, shift=0.05):
    rng = np.random.default_rng(seed)
    b = rng.random(n)
    a = np.clip(b + shift + rng.normal(0, 0.1, n), 0, 1)
    return a, b


@pytest.mark.parametrize("alternative", ALTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ttest_matches_scipy(alternative, seed):
    a, b = scores(seed)
    ref = ss.ttest_rel(a, b, alternative=alternative)
    got = paired_ttest(a, b, alternative=alternative)
    assert got.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert got.mean_difference == pytest.approx(np.mean(a - b))
    assert got.n == 30 and got.alternative == alternative


def test_ttest_degenerate_differences_follow_scipy():
    got = paired_ttest([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert got.statistic == np.inf and got.pvalue == 0.0
    same = paired_ttest([1.0, 2.0], [1.0, 2.0])
    assert np.isnan(same.statistic) and np.isnan(same.pvalue)
    with np.errstate(all="ignore"):
        assert np.isnan(ss.ttest_rel([1.0, 2.0], [1.0, 2.0]).pvalue)


@pytest.mark.parametrize("alternative", ALTS)
def test_wilcoxon_exact_matches_scipy(alternative):
    a, b = scores(3, n=20)
    ref = ss.wilcoxon(a, b, alternative=alternative, method="exact")
    got = wilcoxon_signed_rank(a, b, alternative=alternative)
    assert got.method.endswith("(exact)")
    assert got.statistic == ref.statistic
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("alternative", ALTS)
@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_approx_with_ties_and_zeros_matches_scipy(alternative, correction):
    rng = np.random.default_rng(4)
    a = np.round(rng.random(80), 1)
    b = np.round(np.clip(a + rng.normal(0.03, 0.1, 80), 0, 1), 1)  # ties and zero differences
    assert (a == b).any()
    ref = ss.wilcoxon(a, b, alternative=alternative, method="asymptotic", correction=correction)
    got = wilcoxon_signed_rank(a, b, alternative=alternative, method="approx", correction=correction)
    assert got.statistic == pytest.approx(ref.statistic)
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert got.n == int((a != b).sum())
    auto = wilcoxon_signed_rank(a, b, alternative=alternative, correction=correction)
    assert auto.pvalue == pytest.approx(ref.pvalue, rel=1e-9)  # n > 50: scipy's auto is asymptotic too


def test_wilcoxon_large_sample_auto_matches_scipy():
    a, b = scores(5, n=200)
    assert wilcoxon_signed_rank(a, b).pvalue == pytest.approx(ss.wilcoxon(a, b).pvalue, rel=1e-9)


def test_wilcoxon_exact_distribution_by_enumeration():
    # The exact null of W+ for n = 6: enumerate all 64 sign patterns by hand.
    n = 6
    sums = [sum(r + 1 for r in range(n) if (mask >> r) & 1) for mask in range(2**n)]
    a = np.array([0.3, -0.1, 0.5, 0.7, -0.2, 0.9])  # ranks of |d|: 3,1,4,5,2,6
    w = 3 + 4 + 5 + 6
    got = wilcoxon_signed_rank(a, np.zeros(n), alternative="greater", method="exact")
    assert got.pvalue == pytest.approx(sum(s >= w for s in sums) / 64)
    got = wilcoxon_signed_rank(a, np.zeros(n), alternative="less", method="exact")
    assert got.pvalue == pytest.approx(sum(s <= w for s in sums) / 64)


@pytest.mark.parametrize("alternative", ALTS)
def test_randomization_exact_matches_scipy(alternative):
    a, b = scores(6, n=10, shift=0.03)
    ref = ss.permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                              n_resamples=np.inf, alternative=alternative, vectorized=False)
    got = randomization_test(a, b, alternative=alternative)
    assert got.method == "randomisation (exact)"
    assert got.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
    assert got.statistic == pytest.approx(ref.statistic)


def test_randomization_monte_carlo_close_to_exact():
    a, b = scores(7, n=16, shift=0.03)
    exact = randomization_test(a, b, n_resamples=2**16)
    mc = randomization_test(a, b, n_resamples=4000, seed=0)
    assert exact.method.endswith("(exact)") and mc.method.endswith("(Monte Carlo)")
    assert abs(mc.pvalue - exact.pvalue) < 0.03
    assert mc.pvalue == randomization_test(a, b, n_resamples=4000, seed=0).pvalue
    assert 0 < mc.pvalue <= 1


def test_bootstrap_matches_plain_loop():
    a, b = scores(8, n=25, shift=0.02)
    d = a - b
    rng = np.random.default_rng(42)
    obs = d.mean()
    d0 = d - obs
    nulls = []
    for _ in range(3000):
        idx = rng.integers(0, d.size, size=d.size)
        nulls.append(d0[idx].mean())
    nulls = np.array(nulls)
    g = abs(obs) * 1e-12 + 1e-15
    greater = (np.sum(nulls >= obs - g) + 1) / 3001
    less = (np.sum(nulls <= obs + g) + 1) / 3001
    for alt, want in (("greater", greater), ("less", less), ("two-sided", min(1, 2 * min(greater, less)))):
        got = paired_bootstrap_test(a, b, n_resamples=3000, seed=42, alternative=alt)
        assert got.pvalue == pytest.approx(want, rel=1e-12)
        assert got.statistic == pytest.approx(obs)


def test_resampling_tests_have_nominal_size():
    # Under the null, p < 0.05 about 5% of the time.
    rng = np.random.default_rng(9)
    rejections = {"boot": 0, "perm": 0}
    for _ in range(200):
        a, b = rng.normal(size=30), rng.normal(size=30)
        rejections["boot"] += paired_bootstrap_test(a, b, n_resamples=500, seed=rng).pvalue < 0.05
        rejections["perm"] += randomization_test(a, b, n_resamples=500, seed=rng).pvalue < 0.05
    for count in rejections.values():
        assert 2 <= count <= 25


def test_bonferroni_and_holm_match_plain_loops():
    rng = np.random.default_rng(10)
    p = rng.random(12) ** 3
    m = p.size
    bon = [min(1.0, m * v) for v in p]
    order = sorted(range(m), key=lambda i: p[i])
    holm_ref = [0.0] * m
    running = 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * p[i]))
        holm_ref[i] = running
    np.testing.assert_allclose(bonferroni(p), bon)
    np.testing.assert_allclose(holm(p), holm_ref)
    assert (holm(p) <= bonferroni(p) + 1e-15).all()
    np.testing.assert_array_equal(adjust_pvalues(p, "none"), p)
    np.testing.assert_array_equal(adjust_pvalues(p, "bonferroni"), bonferroni(p))


def test_significance_marks():
    assert significance_marks([0.01, 0.02, 0.4]) == ["†", "", ""]
    assert significance_marks([0.01, 0.02, 0.4], correction="holm") == ["†", "†", ""]
    assert significance_marks([0.01, 0.06], correction="none", mark="*") == ["*", ""]
    res = [paired_ttest(*scores(s, shift=0.2)) for s in range(3)]
    assert significance_marks(res) == ["†", "†", "†"]
    assert significance_marks([]) == []
    assert isinstance(res[0], SignificanceResult) and res[0].significant()


def test_errors():
    msg = r"a and b must hold one score per query each, paired; got shapes \(3,\) and \(2,\)"
    with pytest.raises(ValueError, match=msg):
        paired_ttest([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="a paired test needs at least 2 pairs; got 1"):
        paired_ttest([1.0], [2.0])
    with pytest.raises(ValueError, match="a must be finite"):
        paired_bootstrap_test([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="a must not be empty"):
        randomization_test([], [])
    with pytest.raises(ValueError, match="alternative must be one of 'two-sided', 'greater', 'less'; got 'bigger'"):
        paired_ttest([1, 2, 3], [1, 2, 4], alternative="bigger")
    with pytest.raises(ValueError, match="method must be one of 'auto', 'exact', 'approx'"):
        wilcoxon_signed_rank([1, 2, 3], [1, 2, 4], method="perm")
    with pytest.raises(ValueError, match="at least one non-zero difference"):
        wilcoxon_signed_rank([1, 2], [1, 2])
    with pytest.raises(ValueError, match="n_resamples must be an integer >= 1; got 0"):
        paired_bootstrap_test([1, 2], [2, 1], n_resamples=0)
    with pytest.raises(ValueError, match="n_resamples must be an integer >= 1"):
        randomization_test([1, 2], [2, 1], n_resamples=-5)
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\]; got 1 values outside, e.g. 1.2"):
        holm([0.1, 1.2])
    with pytest.raises(ValueError, match="pvalues must lie in"):
        bonferroni([-0.1])
    with pytest.raises(ValueError, match="method must be one of 'bonferroni', 'holm', 'none'"):
        adjust_pvalues([0.1], "fdr")
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\); got 1.5"):
        significance_marks([0.1], alpha=1.5)
