from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as ss

from uncertank.stats import (
    SignificanceResult,
    adjust_pvalues,
    benjamini_hochberg,
    bonferroni,
    holm,
    paired_bootstrap_test,
    paired_ttest,
    pairwise_bootstrap_test,
    pairwise_randomization_test,
    randomization_test,
    significance_marks,
    tukey_hsd,
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


# --------------------------------------------------------------------------- every pair at once, one shared draw


def _systems(seed, n=40, k=4, binary=False):
    rng = np.random.default_rng(seed)
    if binary:
        return (rng.random((n, k)) < np.linspace(0.3, 0.7, k)).astype(float)
    return np.clip(rng.random((n, 1)) + np.linspace(0, 0.15, k) + rng.normal(0, 0.1, (n, k)), 0, 1)


@pytest.mark.parametrize("binary", [False, True], ids=["continuous", "binary"])
@pytest.mark.parametrize("alternative", ALTS)
def test_pairwise_randomization_equals_the_single_pair_test(binary, alternative):
    x = _systems(11, binary=binary)
    got = pairwise_randomization_test(x, n_resamples=1500, seed=3, alternative=alternative)
    assert got.method == "randomisation (Monte Carlo)" and got.pvalue.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            if i != j:
                one = randomization_test(x[:, i], x[:, j], n_resamples=1500, seed=3, alternative=alternative)
                assert got.pvalue[i, j] == one.pvalue
                assert got.mean_difference[i, j] == pytest.approx(one.mean_difference, abs=1e-15)
    assert np.all(np.diag(got.pvalue) == 1.0)


def test_pairwise_randomization_enumerates_small_samples_exactly():
    x = _systems(12, n=9, k=3)
    got = pairwise_randomization_test(x, n_resamples=512)
    assert got.method == "randomisation (exact)"
    for i, j in [(0, 1), (1, 2), (2, 0)]:
        assert got.pvalue[i, j] == randomization_test(x[:, i], x[:, j], n_resamples=512).pvalue


@pytest.mark.parametrize("binary", [False, True], ids=["continuous", "binary"])
def test_pairwise_bootstrap_equals_the_single_pair_test_and_a_loop_interval(binary):
    x = _systems(13, n=30, k=3, binary=binary)
    got = pairwise_bootstrap_test(x, n_resamples=1200, seed=9, level=0.9)
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            assert got.pvalue[i, j] == paired_bootstrap_test(x[:, i], x[:, j], n_resamples=1200, seed=9).pvalue
            rng = np.random.default_rng(9)  # the interval by a plain loop over the same resamples
            reps = []
            for _ in range(1200):
                idx = rng.integers(0, 30, size=30)
                reps.append(np.mean(x[idx, i] - x[idx, j]))
            lo, hi = np.quantile(reps, [0.05, 0.95])
            assert got.low[i, j] == pytest.approx(lo, abs=1e-12)
            assert got.high[i, j] == pytest.approx(hi, abs=1e-12)
    assert got.level == 0.9


def test_pairwise_tests_share_one_draw_across_leading_axes():
    a, b = _systems(14), _systems(15)
    stacked = pairwise_randomization_test(np.stack([a, b]), n_resamples=700, seed=1)
    assert stacked.pvalue.shape == (2, 4, 4)
    assert np.array_equal(stacked.pvalue[1], pairwise_randomization_test(b, n_resamples=700, seed=1).pvalue)
    boot = pairwise_bootstrap_test(np.stack([a, b]), n_resamples=700, seed=1)
    alone = pairwise_bootstrap_test(a, n_resamples=700, seed=1)
    assert np.array_equal(boot.pvalue[0], alone.pvalue)
    assert np.allclose(boot.low[0], alone.low, atol=1e-14)


def test_tukey_one_way_matches_scipy():
    x = _systems(16, n=25, k=5)
    got = tukey_hsd(x, blocked=False)
    ref = ss.tukey_hsd(*x.T)
    assert np.allclose(got.pvalue, ref.pvalue, rtol=1e-9, atol=1e-12)
    assert np.allclose(got.mean_difference, ref.statistic, atol=1e-15)
    assert got.method == "Tukey HSD (one-way)"


def test_tukey_blocked_matches_a_two_way_anova_loop():
    x = _systems(17, n=20, k=4)
    n, k = x.shape
    grand = x.mean()
    sse = sum((x[q, i] - x[:, i].mean() - x[q, :].mean() + grand) ** 2 for q in range(n) for i in range(k))
    df = (n - 1) * (k - 1)
    got = tukey_hsd(x)
    for i in range(k):
        for j in range(k):
            if i != j:
                q = (x[:, i].mean() - x[:, j].mean()) / np.sqrt(sse / df / n)
                assert got.statistic[i, j] == pytest.approx(q, rel=1e-10)
                assert got.pvalue[i, j] == pytest.approx(ss.studentized_range.sf(abs(q), k, df), rel=1e-9)
    # the queries' own spread is not noise: blocking separates the systems better than the one-way test
    assert got.pvalue[3, 0] < tukey_hsd(x, blocked=False).pvalue[3, 0]


def test_tukey_without_residual_noise():
    x = np.array([[0.1, 0.3, 0.1], [0.5, 0.7, 0.5], [0.2, 0.4, 0.2]])  # systems differ by constants: MSE = 0
    got = tukey_hsd(x)
    assert got.pvalue[1, 0] == 0.0 and got.pvalue[0, 2] == 1.0


def test_benjamini_hochberg_matches_scipy():
    rng = np.random.default_rng(18)
    p = np.concatenate([rng.random(30) ** 3, [0.01, 0.01, 1.0, 0.0]])
    assert np.allclose(benjamini_hochberg(p), ss.false_discovery_control(p, method="bh"), rtol=1e-12, atol=0)
    assert np.array_equal(adjust_pvalues(p, "bh"), benjamini_hochberg(p))


def test_pairwise_errors():
    with pytest.raises(ValueError, match=r"scores must hold at least 2 systems \(its last axis\); got shape \(5, 1\)"):
        pairwise_randomization_test(np.ones((5, 1)))
    with pytest.raises(ValueError, match="scores must hold at least 2 queries"):
        pairwise_bootstrap_test(np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"scores must have shape \(\.\.\., n_queries, n_systems\), at least 2-D; "
                                         r"got 1-D"):
        tukey_hsd([1.0, 2.0])
    with pytest.raises(ValueError, match="alternative must be one of"):
        pairwise_randomization_test(np.ones((5, 2)), alternative="up")
    with pytest.raises(ValueError, match=r"level must be a finite number > 0 and < 1; got 1"):
        pairwise_bootstrap_test(np.ones((5, 2)), level=1)
    with pytest.raises(ValueError, match="n_resamples must be an integer >= 1"):
        pairwise_bootstrap_test(np.ones((5, 2)), n_resamples=0)
    with pytest.raises(TypeError, match="blocked must be a bool; got str 'yes'"):
        tukey_hsd(np.ones((5, 2)), blocked="yes")
    with pytest.raises(ValueError, match=r"pvalues must lie in \[0, 1\]"):
        benjamini_hochberg([0.2, 1.5])
