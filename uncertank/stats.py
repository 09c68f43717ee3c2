"""Paired significance tests over per-query scores, and multiple-comparison corrections.

Every test compares two systems evaluated on the same queries: ``a`` and
``b`` are arrays of shape (n_queries,) (for example the ``per_query=True``
output of a ranking metric) and the tests work on the differences
``d = a - b``. Each returns a :class:`SignificanceResult`.

- :func:`paired_ttest`: Student's paired t-test, the test of Penha & Hauff
  (2021) (their released code calls ``scipy.stats.ttest_rel``, for example
  to compare NOTA feature sets).
- :func:`wilcoxon_signed_rank`: Wilcoxon's signed-rank test (Wilcoxon 1945).
- :func:`paired_bootstrap_test`: the bootstrap test of Efron & Tibshirani
  (1993, sec. 16.4), recommended for IR by Sakai (2006).
- :func:`randomization_test`: Fisher's paired randomisation (sign-flip)
  test, recommended for IR by Smucker, Allan & Carterette (2007); exact when
  all ``2^n`` sign patterns fit in ``n_resamples``.
- :func:`pairwise_randomization_test`, :func:`pairwise_bootstrap_test`:
  the same two resampling tests for every pair of systems at once, from one
  draw of signs (or resamples) shared by all pairs, vectorised with numpy.
- :func:`tukey_hsd`: Tukey's honestly significant difference over all pairs
  (Tukey 1949), with queries as blocks or as scipy computes it.
- :func:`bonferroni`, :func:`holm`, :func:`benjamini_hochberg`: adjusted
  p-values (Holm 1979; Benjamini & Hochberg 1995).
- :func:`significance_marks`: one symbol per comparison for result tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.validation import (
    as_float_array,
    check_choice,
    check_positive_int,
    check_probabilities,
    check_real,
    check_seed,
    check_unit_interval,
)

__all__ = [
    "PairwiseResult",
    "SignificanceResult",
    "adjust_pvalues",
    "benjamini_hochberg",
    "bonferroni",
    "holm",
    "paired_bootstrap_test",
    "paired_ttest",
    "pairwise_bootstrap_test",
    "pairwise_randomization_test",
    "query_bootstrap_interval",
    "randomization_test",
    "significance_marks",
    "tukey_hsd",
    "wilcoxon_signed_rank",
]

Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES: tuple[Alternative, ...] = ("two-sided", "greater", "less")
Correction = Literal["bonferroni", "holm", "none", "bh"]
CORRECTIONS: tuple[Correction, ...] = ("bonferroni", "holm", "none", "bh")

#: Resamples drawn per chunk by the resampling tests (bounds memory at ~n * this).
_CHUNK = 2048


@dataclass(frozen=True)
class SignificanceResult:
    """The outcome of a paired test.

    Attributes
    ----------
    statistic : float
        The test statistic (t, W, or the mean difference for the resampling tests).
    pvalue : float
        The p-value under the chosen alternative.
    mean_difference : float
        ``mean(a - b)``.
    n : int
        Number of pairs used.
    method : str
        Which test (and variant) produced it.
    alternative : str
        ``"two-sided"``, ``"greater"`` (a > b) or ``"less"`` (a < b).
    """

    statistic: float
    pvalue: float
    mean_difference: float
    n: int
    method: str
    alternative: str

    def significant(self, alpha: float = 0.05) -> bool:
        """Whether ``pvalue < alpha``."""
        return bool(self.pvalue < alpha)


def _differences(a: ArrayLike, b: ArrayLike, minimum: int = 2) -> NDArray[np.float64]:
    x = as_float_array(a, "a")
    y = as_float_array(b, "b")
    if x.shape != y.shape:
        raise ValueError(
            f"a and b must hold one score per query each, paired; got shapes {x.shape} and {y.shape}"
        )
    if x.size < minimum:
        raise ValueError(f"a paired test needs at least {minimum} pairs; got {x.size}")
    return x - y


def _pvalue_from_tails(p_greater: float, p_less: float, alternative: str) -> float:
    if alternative == "greater":
        return p_greater
    if alternative == "less":
        return p_less
    return min(1.0, 2.0 * min(p_greater, p_less))


def paired_ttest(a: ArrayLike, b: ArrayLike, *, alternative: Alternative = "two-sided") -> SignificanceResult:
    r"""Student's paired t-test on the per-query differences.

    $$
    t = \frac{\bar d}{s_d / \sqrt{n}}, \qquad d_i = a_i - b_i
    $$

    with $s_d$ the sample standard deviation (ddof 1) and ``n - 1``
    degrees of freedom (Student 1908). When every difference is equal the
    statistic is ``inf`` (or NaN if all are zero) and the p-value 0 (or NaN),
    as in :func:`scipy.stats.ttest_rel`.

    Parameters
    ----------
    a, b : array-like of shape (n_queries,)
        Paired scores of two systems, ``n_queries >= 2``.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` tests mean(a - b) > 0.

    Returns
    -------
    SignificanceResult

    Examples
    --------
    Differences (1, 2, 3): mean 2, sd 1, t = 2 / (1 / sqrt(3)).

    >>> res = paired_ttest([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    >>> round(res.statistic, 4), round(res.pvalue, 4)
    (3.4641, 0.0742)
    """
    from scipy import special

    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    d = _differences(a, b)
    n = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.divide(mean, sd / math.sqrt(n)))
    if math.isnan(t):
        p = math.nan
    else:
        p_less = float(special.stdtr(n - 1, t))
        p_greater = float(special.stdtr(n - 1, -t))
        p = _pvalue_from_tails(p_greater, p_less, alternative)
    return SignificanceResult(t, p, mean, n, "paired t-test", alternative)


def _signed_rank_counts(n: int) -> NDArray[np.float64]:
    """Number of sign patterns of ranks 1..n with each positive-rank sum, shape (n(n+1)/2 + 1,)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    top = 0
    for i in range(1, n + 1):  # add rank i: W -> W or W + i
        counts[i:top + i + 1] += counts[:top + 1].copy()
        top += i
    return counts


def wilcoxon_signed_rank(
    a: ArrayLike,
    b: ArrayLike,
    *,
    alternative: Alternative = "two-sided",
    method: Literal["auto", "exact", "approx"] = "auto",
    correction: bool = False,
) -> SignificanceResult:
    r"""Wilcoxon's signed-rank test on the per-query differences (Wilcoxon 1945).

    Zero differences are dropped (Wilcoxon's convention); the absolute
    differences are ranked with ties given their average rank; $W^+$
    is the sum of the ranks of the positive differences. The exact null
    distribution of $W^+$ (all $2^n$ sign patterns equally
    likely) is used when ``method="exact"``, or for ``"auto"`` when at most
    50 differences remain with no ties and no zeros; otherwise the normal
    approximation with mean $n(n+1)/4$ and variance
    $n(n+1)(2n+1)/24 - \sum_t (t^3 - t)/48$ over tie groups ``t``.

    Parameters
    ----------
    a, b : array-like of shape (n_queries,)
        Paired scores of two systems.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` tests whether a tends to exceed b.
    method : {"auto", "exact", "approx"}
        Null distribution (see above).
    correction : bool
        Continuity correction of 0.5 in the normal approximation.

    Returns
    -------
    SignificanceResult
        ``statistic`` is $\min(W^+, W^-)$ for a two-sided test and
        $W^+$ otherwise (as :func:`scipy.stats.wilcoxon` reports);
        ``n`` counts the non-zero differences.

    Examples
    --------
    Five positive differences: W+ = 15, the largest of 2^5 equally likely sums.

    >>> res = wilcoxon_signed_rank([2, 3, 4, 5, 6], [1.5, 2.1, 2.5, 3, 3.5], alternative="greater")
    >>> res.statistic, res.pvalue  # 1 / 32
    (15.0, 0.03125)
    """
    from scipy import special
    from scipy.stats import rankdata

    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    method = check_choice(method, "method", ("auto", "exact", "approx"))
    d_all = _differences(a, b, minimum=1)
    mean = float(d_all.mean())
    d = d_all[d_all != 0]
    n = d.size
    if n == 0:
        raise ValueError("wilcoxon_signed_rank needs at least one non-zero difference; a == b everywhere")
    ranks = rankdata(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    _, tie_sizes = np.unique(np.abs(d), return_counts=True)
    ties = bool((tie_sizes > 1).any())
    if method == "auto":
        method = "exact" if n <= 50 and not ties and d.size == d_all.size else "approx"
    if method == "exact":
        counts = _signed_rank_counts(n)
        cdf = np.cumsum(counts) / counts.sum()
        upper = np.concatenate([[1.0], 1.0 - cdf[:-1]])  # P(W >= w)
        hi = min(math.floor(r_plus), counts.size - 1)
        lo = min(math.ceil(r_plus), counts.size - 1)
        p_greater, p_less = float(upper[hi]), float(cdf[lo])
    else:
        mu = n * (n + 1) / 4.0
        var = n * (n + 1) * (2 * n + 1) / 24.0 - float((tie_sizes**3 - tie_sizes).sum()) / 48.0
        se = math.sqrt(var)
        shift = 0.0
        if correction:
            sign = {"greater": 1.0, "less": -1.0}.get(alternative, float(np.sign(r_plus - mu)))
            shift = sign * 0.5
        z = (r_plus - mu - shift) / se
        p_greater = float(special.ndtr(-z))
        p_less = float(special.ndtr(z))
    p = _pvalue_from_tails(p_greater, p_less, alternative)
    stat = min(r_plus, r_minus) if alternative == "two-sided" else r_plus
    return SignificanceResult(stat, p, mean, n, f"Wilcoxon signed-rank ({method})", alternative)


def _resampled_column_means(
    x: NDArray[np.float64], n_resamples: int, rng: np.random.Generator, kind: str
) -> NDArray[np.float64]:
    """Column means of ``x`` (n, c) under ``n_resamples`` bootstrap resamples or sign flips of its rows, (B, c).

    One draw serves every column: resample ``r`` uses the indices
    ``rng.integers(0, n, size=n)`` (``kind="bootstrap"``) or the signs
    ``rng.integers(0, 2, size=n) * 2 - 1`` (``"signflip"``), drawn in order,
    so a column holding ``a - b`` gets the draws a test of ``a`` against
    ``b`` alone gets. Both are linear in the rows: the bootstrap mean is
    ``counts @ x / n`` (``counts`` the times each row is drawn) and the
    sign-flip mean ``signs @ x / n``, so the columns of all systems go
    through one matrix product per chunk of draws, and a pair of systems is
    a difference of two columns.
    """
    n, c = x.shape
    out = np.empty((n_resamples, c))
    step = max(1, _CHUNK * 64 // max(n, 1))
    for a in range(0, n_resamples, step):  # chunks of resamples, bounded memory
        m = min(step, n_resamples - a)
        if kind == "bootstrap":
            idx = rng.integers(0, n, size=(m, n))
            rows = (idx + (np.arange(m) * n)[:, None]).ravel()
            weights = np.bincount(rows, minlength=m * n).reshape(m, n).astype(np.float64)
        else:
            weights = (rng.integers(0, 2, size=(m, n)) * 2 - 1).astype(np.float64)
        out[a:a + m] = weights @ x
    out /= n
    return out


def _enumerates(n: int, n_resamples: int) -> bool:
    """Whether all ``2^n`` sign patterns fit in ``n_resamples`` (then the randomisation test is exact)."""
    return n < 63 and 2**n <= n_resamples


def _exact_signflip_means(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Column means of ``x`` (n, c) under all ``2^n`` sign patterns of its rows, shape (2^n, c)."""
    n = x.shape[0]
    patterns = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    means: NDArray[np.float64] = ((patterns * 2 - 1).astype(np.float64) @ x) / n
    return means


def _tail_probabilities(
    null: NDArray[np.float64], observed: float, adjustment: int
) -> tuple[float, float]:
    # Relative tolerance so that a resample equal to the observed value counts as
    # at least as extreme despite rounding (as scipy.stats.permutation_test).
    gamma = abs(observed) * 1e-12 + 1e-15
    n = null.size
    p_greater = (int(np.count_nonzero(null >= observed - gamma)) + adjustment) / (n + adjustment)
    p_less = (int(np.count_nonzero(null <= observed + gamma)) + adjustment) / (n + adjustment)
    return p_greater, p_less


def paired_bootstrap_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10_000,
    alternative: Alternative = "two-sided",
    seed: int | np.random.Generator | None = None,
) -> SignificanceResult:
    r"""Paired bootstrap test of a zero mean difference (Efron & Tibshirani 1993, 16.4).

    The differences are shifted to mean zero (the null hypothesis), resampled
    with replacement ``n_resamples`` times, and the p-value is the share of
    resampled means at least as extreme as the observed mean $\bar d$:

    $$
    p_{>} = \frac{1 + \#\{\bar d^*_0 \ge \bar d\}}{1 + B}
    $$

    (two-sided: twice the smaller tail, at most 1). Sakai (2006) uses this
    test for IR evaluation.

    Parameters
    ----------
    a, b : array-like of shape (n_queries,)
        Paired scores of two systems.
    n_resamples : int
        Number of bootstrap resamples ``B``.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` tests mean(a - b) > 0.
    seed : int or numpy.random.Generator, optional
        Seeds the resampling. Resample ``r`` uses the indices
        ``rng.integers(0, n, size=n)``, drawn in order.

    Returns
    -------
    SignificanceResult
        ``statistic`` is the observed mean difference.

    Examples
    --------
    >>> res = paired_bootstrap_test([0.5, 0.6, 0.7, 0.8], [0.1, 0.2, 0.3, 0.4], seed=0)
    >>> round(res.statistic, 6), round(res.pvalue, 6)  # constant difference: 2 / (1 + 10000)
    (0.4, 0.0002)
    """
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    b_count = check_positive_int(n_resamples, "n_resamples")
    rng = np.random.default_rng(check_seed(seed, "seed"))
    d = _differences(a, b)
    observed = float(d.mean())
    null = _resampled_column_means((d - observed)[:, None], b_count, rng, "bootstrap")[:, 0]
    p = _pvalue_from_tails(*_tail_probabilities(null, observed, 1), alternative)
    return SignificanceResult(observed, p, observed, d.size, "paired bootstrap", alternative)


def query_bootstrap_interval(
    offsets: ArrayLike,
    statistic: Callable[[NDArray[np.int64], int], float],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of a statistic of whole queries resampled with replacement.

    Replicate ``b`` draws ``n_queries`` queries with replacement and returns
    ``statistic(positions, b)``, ``positions`` the pairs of the drawn queries
    (twice for a query drawn twice). A paired comparison computes both systems
    on the same positions (e.g. two rankers' balanced ECE); ``b`` seeds what
    the statistic draws itself per replicate.

    Parameters
    ----------
    offsets : array-like of shape (n_queries + 1,)
        Query boundaries into the flat pair arrays (``QuerySet.offsets``).
    statistic : callable
        ``statistic(positions, b) -> float``.
    n_resamples, seed : int
        Replicates, and the seed of the draw of queries.
    level : float
        Coverage of the interval, in (0, 1).

    Returns
    -------
    (float, float)
        The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the replicates.

    Examples
    --------
    >>> offsets = np.array([0, 2, 5, 6])
    >>> values = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    >>> lo, hi = query_bootstrap_interval(offsets, lambda pos, b: values[pos].mean(), n_resamples=200)
    >>> 0.0 <= lo <= values.mean() <= hi <= 1.0
    True
    """
    off = np.asarray(offsets)
    if off.dtype.kind == "f" and off.ndim == 1 and np.isfinite(off).all() and (off == np.round(off)).all() \
            and (np.abs(off) < 2.0**63).all():
        off = off.astype(np.int64)
    if off.dtype.kind not in "iu":
        raise TypeError(f"offsets must be integers; got {type(offsets).__name__} of dtype {off.dtype}")
    off = off.astype(np.int64)
    if off.ndim != 1 or off.size < 2 or off[0] != 0 or np.any(np.diff(off) < 0):
        raise ValueError("offsets must be a non-decreasing 1-d array from 0 with at least one query")
    if not callable(statistic):
        raise TypeError(f"statistic must be callable; got {type(statistic).__name__}")
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    check_positive_int(seed, "seed", minimum=0)
    check_unit_interval(level, "level")
    starts, lengths = off[:-1], np.diff(off)
    n_queries = lengths.size
    rng = np.random.default_rng(seed)
    values = np.empty(n_resamples)
    for b in range(n_resamples):
        drawn = rng.integers(0, n_queries, size=n_queries)
        n = lengths[drawn]
        # the pairs of each drawn query, in order: its start plus 0..n-1
        positions = np.repeat(starts[drawn] - np.cumsum(n) + n, n) + np.arange(n.sum())
        values[b] = float(statistic(positions, b))
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def randomization_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10_000,
    alternative: Alternative = "two-sided",
    seed: int | np.random.Generator | None = None,
) -> SignificanceResult:
    r"""Paired randomisation (sign-flip permutation) test of the mean difference.

    Under the null hypothesis the labels "a" and "b" are exchangeable within
    each query, so every sign pattern of the differences is equally likely
    (Fisher 1935; Smucker et al. 2007). When $2^n \le$ ``n_resamples``
    all patterns are enumerated and the p-value is exact,
    $\#\{\bar d^* \ge \bar d\} / 2^n$; otherwise ``n_resamples``
    random patterns give $(1 + \#\{\bar d^* \ge \bar d\}) / (1 + B)$.
    Two-sided: twice the smaller tail, at most 1 (as
    :func:`scipy.stats.permutation_test`).

    Parameters
    ----------
    a, b : array-like of shape (n_queries,)
        Paired scores of two systems.
    n_resamples : int
        Number of random sign patterns ``B`` (or the threshold for exact enumeration).
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` tests mean(a - b) > 0.
    seed : int or numpy.random.Generator, optional
        Seeds the random patterns.

    Returns
    -------
    SignificanceResult
        ``statistic`` is the observed mean difference.

    Examples
    --------
    Three positive differences: only the identity pattern (of 8) is as large.

    >>> res = randomization_test([3.0, 2.0, 4.0], [1.0, 1.0, 1.0], alternative="greater")
    >>> res.pvalue
    0.125
    """
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    b_count = check_positive_int(n_resamples, "n_resamples")
    d = _differences(a, b, minimum=1)
    n = d.size
    observed = float(d.mean())
    if _enumerates(n, b_count):
        null = _exact_signflip_means(d[:, None])[:, 0]
        tails = _tail_probabilities(null, observed, 0)
        method = "randomisation (exact)"
    else:
        null = _resampled_column_means(d[:, None], b_count, np.random.default_rng(seed), "signflip")[:, 0]
        tails = _tail_probabilities(null, observed, 1)
        method = "randomisation (Monte Carlo)"
    p = _pvalue_from_tails(*tails, alternative)
    return SignificanceResult(observed, p, observed, n, method, alternative)


# --------------------------------------------------------------------------- all pairs of systems at once


@dataclass(frozen=True, eq=False)
class PairwiseResult:
    """Every pair of systems compared on the same queries, as (n_systems, n_systems) matrices.

    Entry ``[..., i, j]`` compares system ``i`` with system ``j``; leading
    axes are those of the scores given (for example one per metric). The
    diagonal holds a mean difference of 0 and a p-value of 1.

    Attributes
    ----------
    statistic : ndarray of shape (..., n_systems, n_systems)
        The mean difference for the resampling tests, the studentized mean
        difference ``(mean_i - mean_j) / sqrt(MSE / n)`` for Tukey's HSD.
    pvalue : ndarray of shape (..., n_systems, n_systems)
        The p-value of each pair, symmetric for a two-sided test.
    mean_difference : ndarray of shape (..., n_systems, n_systems)
        ``mean(x_i - x_j)``.
    n : int
        Queries.
    method : str
        Which test (and variant) produced it.
    alternative : str
        ``"two-sided"``, ``"greater"`` (system ``i`` above ``j``) or ``"less"``.
    low, high : ndarray of shape (..., n_systems, n_systems) or None
        :func:`pairwise_bootstrap_test` only: the percentile interval of the
        mean difference over the same resamples, at ``level``.
    level : float or None
        Coverage of ``low`` and ``high``.
    """

    statistic: NDArray[np.float64]
    pvalue: NDArray[np.float64]
    mean_difference: NDArray[np.float64]
    n: int
    method: str
    alternative: str
    low: NDArray[np.float64] | None = None
    high: NDArray[np.float64] | None = None
    level: float | None = None


def _system_scores(scores: ArrayLike, minimum: int) -> NDArray[np.float64]:
    """Scores of shape (..., n_queries, n_systems), checked: at least 2 systems and ``minimum`` queries."""
    try:
        ndim = np.ndim(scores)
    except ValueError:  # ragged: the converter says so in its words
        ndim = 2
    if ndim < 2:
        raise ValueError(f"scores must have shape (..., n_queries, n_systems), at least 2-D; got {ndim}-D")
    x = as_float_array(scores, "scores", ndim=ndim)
    n, k = x.shape[-2:]
    if k < 2:
        raise ValueError(f"scores must hold at least 2 systems (its last axis); got shape {x.shape}")
    if n < minimum:
        raise ValueError(f"scores must hold at least {minimum} queries (its second-to-last axis); got shape {x.shape}")
    return x


def _columns(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scores (..., n_queries, k) as one (n_queries, n_blocks * k) matrix; column ``b * k + i``: system i, block b."""
    return np.ascontiguousarray(np.moveaxis(x, -2, 0).reshape(x.shape[-2], -1))


def _pair_tails(
    null: NDArray[np.float64], observed: NDArray[np.float64], k: int, adjustment: int, centred: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Upper and lower tail p-values of every pair, each of shape (n_blocks, k, k).

    ``null`` (B, n_blocks * k) are resampled column means and ``observed``
    (n_blocks * k,) the column means; a pair's resampled difference is the
    difference of its two columns, less the observed difference when
    ``centred`` (the bootstrap's null). Tails as :func:`_tail_probabilities`.
    """
    b_count = null.shape[0]
    blocks = observed.size // k
    greater = np.ones((blocks, k, k))
    less = np.ones((blocks, k, k))
    for blk in range(blocks):
        cols = slice(blk * k, (blk + 1) * k)
        nb, mu = null[:, cols], observed[cols]
        for i in range(k - 1):  # the pairs (i, j > i); (j, i) is their mirror
            obs = mu[i] - mu[i + 1:]
            diff = nb[:, [i]] - nb[:, i + 1:]
            if centred:
                diff -= obs
            gamma = np.abs(obs) * 1e-12 + 1e-15
            up = (np.count_nonzero(diff >= obs - gamma, axis=0) + adjustment) / (b_count + adjustment)
            down = (np.count_nonzero(diff <= obs + gamma, axis=0) + adjustment) / (b_count + adjustment)
            greater[blk, i, i + 1:], less[blk, i, i + 1:] = up, down
            greater[blk, i + 1:, i], less[blk, i + 1:, i] = down, up
    return greater, less


def _combine_tails(
    greater: NDArray[np.float64], less: NDArray[np.float64], alternative: str
) -> NDArray[np.float64]:
    if alternative == "greater":
        p = greater
    elif alternative == "less":
        p = less
    else:
        p = np.minimum(1.0, 2.0 * np.minimum(greater, less))
    k = p.shape[-1]
    p[..., np.arange(k), np.arange(k)] = 1.0
    return p


def _pair_matrix(values: NDArray[np.float64], lead: list[int], k: int) -> NDArray[np.float64]:
    """Column values (n_blocks * k,) as the (..., k, k) matrix of ``values_i - values_j``."""
    v = values.reshape(-1, k)
    return (v[:, :, None] - v[:, None, :]).reshape(*lead, k, k)


def pairwise_randomization_test(
    scores: ArrayLike,
    *,
    n_resamples: int = 10_000,
    alternative: Alternative = "two-sided",
    seed: int | np.random.Generator | None = None,
) -> PairwiseResult:
    r"""The paired randomisation test of :func:`randomization_test` for every pair of systems at once.

    One matrix of signs, ``n_resamples`` rows of one sign per query, is
    drawn once and shared by every pair (and every leading index, such as
    the metrics): the null mean of the pair $(i, j)$ under sign pattern
    $s$ is $s \cdot (x_i - x_j) / n = s \cdot x_i / n - s \cdot x_j / n$,
    so all systems go through one matrix product and each pair is a
    difference of two of its columns. The p-value of the pair $(i, j)$ is
    the one :func:`randomization_test` gives for ``(x_i, x_j)`` with the
    same ``seed`` (the same draws, in the same order), exact enumeration of
    all $2^n$ patterns included when they fit in ``n_resamples``.

    Parameters
    ----------
    scores : array-like of shape (..., n_queries, n_systems)
        Per-query scores, one column per system; leading axes (for example
        one per metric) share the draw.
    n_resamples : int
        Number of random sign patterns ``B``.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` tests, for entry ``[i, j]``, mean(x_i - x_j) > 0.
    seed : int or numpy.random.Generator, optional
        Seeds the sign patterns.

    Returns
    -------
    PairwiseResult
        ``statistic`` is the observed mean difference.

    Notes
    -----
    Memory is bounded by drawing the signs in chunks of about 131,072
    values; time is one (chunk, n_queries) by (n_queries, n_columns) matrix
    product per chunk plus a count over the pairs, so 10 systems, 5
    metrics, 5,000 queries and 10,000 patterns take a few seconds on two
    cores (``benchmarks/bench_compare.py``).

    Examples
    --------
    Three systems on three queries: all 8 sign patterns are enumerated.

    >>> x = [[3.0, 1.0, 1.0], [2.0, 1.0, 2.0], [4.0, 1.0, 3.0]]
    >>> res = pairwise_randomization_test(x, alternative="greater")
    >>> float(res.pvalue[0, 1]), float(randomization_test([3, 2, 4], [1, 1, 1], alternative="greater").pvalue)
    (0.125, 0.125)
    """
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    b_count = check_positive_int(n_resamples, "n_resamples")
    scores_ = _system_scores(scores, 1)
    *lead, n, k = scores_.shape
    x = _columns(scores_)
    observed = x.mean(axis=0)
    if _enumerates(n, b_count):
        null, adjustment, method = _exact_signflip_means(x), 0, "randomisation (exact)"
    else:
        rng = np.random.default_rng(seed)
        null, adjustment = _resampled_column_means(x, b_count, rng, "signflip"), 1
        method = "randomisation (Monte Carlo)"
    greater, less = _pair_tails(null, observed, k, adjustment, centred=False)
    p = _combine_tails(greater, less, alternative).reshape(*lead, k, k)
    diff = _pair_matrix(observed, lead, k)
    return PairwiseResult(diff, p, diff.copy(), n, method, alternative)


def pairwise_bootstrap_test(
    scores: ArrayLike,
    *,
    n_resamples: int = 10_000,
    alternative: Alternative = "two-sided",
    seed: int | np.random.Generator | None = None,
    level: float = 0.95,
) -> PairwiseResult:
    r"""The paired bootstrap test of :func:`paired_bootstrap_test` for every pair of systems, with intervals.

    One matrix of resampled queries, ``n_resamples`` rows of ``n_queries``
    indices, is drawn once and shared by every pair (and every leading
    index): the resampled mean of system $i$ is $c \cdot x_i / n$, with
    $c$ the number of times each query is drawn, so all systems go through
    one matrix product and each pair is a difference of two columns. The
    p-value of the pair $(i, j)$ is the one :func:`paired_bootstrap_test`
    gives for ``(x_i, x_j)`` with the same ``seed``; the same resamples,
    not shifted to the null, give the percentile interval of the mean
    difference (Efron & Tibshirani 1993, 13.3).

    Parameters
    ----------
    scores : array-like of shape (..., n_queries, n_systems)
        Per-query scores, one column per system, ``n_queries >= 2``.
    n_resamples : int
        Number of bootstrap resamples ``B``.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"`` tests, for entry ``[i, j]``, mean(x_i - x_j) > 0.
    seed : int or numpy.random.Generator, optional
        Seeds the resampling. Resample ``r`` uses the indices
        ``rng.integers(0, n, size=n)``, drawn in order.
    level : float
        Coverage of the percentile interval, in (0, 1).

    Returns
    -------
    PairwiseResult
        ``statistic`` is the observed mean difference; ``low`` and ``high``
        the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the
        resampled mean differences (``numpy.quantile``'s linear rule).

    Examples
    --------
    A constant difference of 0.4: every resample has it.

    >>> x = [[0.5, 0.1], [0.6, 0.2], [0.7, 0.3], [0.8, 0.4]]
    >>> res = pairwise_bootstrap_test(x, seed=0)
    >>> round(float(res.low[0, 1]), 6), round(float(res.high[0, 1]), 6), round(float(res.pvalue[0, 1]), 6)
    (0.4, 0.4, 0.0002)
    """
    alternative = check_choice(alternative, "alternative", ALTERNATIVES)
    b_count = check_positive_int(n_resamples, "n_resamples")
    level = check_real(level, "level", minimum=0, maximum=1, exclusive_minimum=True, exclusive_maximum=True)
    scores_ = _system_scores(scores, 2)
    *lead, n, k = scores_.shape
    x = _columns(scores_)
    observed = x.mean(axis=0)
    null = _resampled_column_means(x, b_count, np.random.default_rng(seed), "bootstrap")
    greater, less = _pair_tails(null, observed, k, 1, centred=True)
    p = _combine_tails(greater, less, alternative).reshape(*lead, k, k)
    blocks = observed.size // k
    low = np.zeros((blocks, k, k))
    high = np.zeros((blocks, k, k))
    q = [(1 - level) / 2, (1 + level) / 2]
    for blk in range(blocks):
        nb = null[:, blk * k:(blk + 1) * k]
        for i in range(k - 1):
            lo, hi = np.quantile(nb[:, [i]] - nb[:, i + 1:], q, axis=0)
            low[blk, i, i + 1:], high[blk, i, i + 1:] = lo, hi
            low[blk, i + 1:, i], high[blk, i + 1:, i] = 0.0 - hi, 0.0 - lo  # the mirror pair (no -0.0)
    diff = _pair_matrix(observed, lead, k)
    return PairwiseResult(diff, p, diff.copy(), n, "paired bootstrap", alternative,
                          low.reshape(*lead, k, k), high.reshape(*lead, k, k), level)


def tukey_hsd(scores: ArrayLike, *, blocked: bool = True) -> PairwiseResult:
    r"""Tukey's honestly significant difference test over every pair of systems (Tukey 1949).

    With $k$ systems on $n$ queries, system means $\bar x_i$ and a mean
    squared error $\mathrm{MSE}$ on $\nu$ degrees of freedom, the pair
    $(i, j)$ has

    $$
    q_{ij} = \frac{\bar x_i - \bar x_j}{\sqrt{\mathrm{MSE} / n}}, \qquad
    p_{ij} = P\left(Q_{k, \nu} \ge |q_{ij}|\right)
    $$

    with $Q_{k,\nu}$ the studentized range. The p-values are adjusted for
    all $k (k - 1) / 2$ pairs (family-wise error rate), so no further
    correction is applied over the pairs of one metric.

    ``blocked=True`` (the default, for IR: Carterette 2012; Sakai 2014)
    takes the queries as blocks, the two-way ANOVA without replication:
    $\mathrm{MSE} = \sum_{q,i} (x_{qi} - \bar x_i - \bar x_q + \bar x)^2 / \nu$
    with $\nu = (k - 1)(n - 1)$, so the differences between queries do not
    count as noise, as in the paired tests. ``blocked=False`` is the one-way
    test of :func:`scipy.stats.tukey_hsd` (and ranx's ``"tukey"``), which
    ignores the pairing: $\mathrm{MSE}$ is the pooled within-system variance,
    $\nu = k (n - 1)$.

    Parameters
    ----------
    scores : array-like of shape (..., n_queries, n_systems)
        Per-query scores, one column per system, ``n_queries >= 2``.
    blocked : bool
        Queries as blocks (above).

    Returns
    -------
    PairwiseResult
        ``statistic`` is $q_{ij}$ (signed), ``alternative`` two-sided.
        Where $\mathrm{MSE} = 0$ a pair with a difference has p-value 0,
        one without a difference 1.

    Examples
    --------
    >>> x = [[0.1, 0.5, 0.2], [0.3, 0.6, 0.3], [0.2, 0.9, 0.1], [0.4, 0.7, 0.4]]
    >>> res = tukey_hsd(x)
    >>> bool(res.pvalue[0, 1] < 0.05), bool(res.pvalue[0, 2] < 0.05)
    (True, False)
    """
    from scipy.stats import studentized_range

    if not isinstance(blocked, (bool, np.bool_)):
        raise TypeError(f"blocked must be a bool; got {type(blocked).__name__} {blocked!r}")
    x = _system_scores(scores, 2)
    n, k = x.shape[-2:]
    means = x.mean(axis=-2)  # (..., k)
    if blocked:
        resid = x - means[..., None, :] - x.mean(axis=-1, keepdims=True) + x.mean(axis=(-2, -1))[..., None, None]
        df = (k - 1) * (n - 1)
    else:
        resid = x - means[..., None, :]
        df = k * (n - 1)
    scale = np.abs(x).max(axis=(-2, -1), keepdims=True)
    resid = np.where(np.abs(resid) <= 1e-12 * scale, 0.0, resid)  # rounding is no noise: MSE 0 stays 0
    mse = (resid**2).sum(axis=(-2, -1)) / df
    diff = means[..., :, None] - means[..., None, :]
    se = np.sqrt(mse / n)[..., None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = diff / se
    q = np.where(diff == 0, 0.0, q)
    p = np.asarray(studentized_range.sf(np.abs(q), k, df), dtype=np.float64)
    p = np.where(np.isinf(q), 0.0, np.where(diff == 0, 1.0, p))
    name = "Tukey HSD (queries as blocks)" if blocked else "Tukey HSD (one-way)"
    return PairwiseResult(q, p, diff, n, name, "two-sided")


# --------------------------------------------------------------------------- corrections


def _pvalues(pvalues: ArrayLike) -> NDArray[np.float64]:
    p = as_float_array(pvalues, "pvalues")
    check_probabilities(p, "pvalues")
    return p


def bonferroni(pvalues: ArrayLike) -> NDArray[np.float64]:
    """Bonferroni-adjusted p-values: ``min(1, m * p)`` for ``m`` comparisons.

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1].

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> bonferroni([0.01, 0.02, 0.5]).tolist()
    [0.03, 0.06, 1.0]
    """
    p = _pvalues(pvalues)
    return np.minimum(1.0, p * p.size)


def holm(pvalues: ArrayLike) -> NDArray[np.float64]:
    r"""Holm's step-down adjusted p-values (Holm 1979).

    With the raw p-values sorted ascending, $p_{(1)} \le \dots \le p_{(m)}$,
    the adjusted value of $p_{(i)}$ is
    $\max_{j \le i} \min(1, (m - j + 1)\, p_{(j)})$; it controls
    the family-wise error rate like Bonferroni and rejects at least as often.

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1].

    Returns
    -------
    ndarray of shape (m,)
        In the input order.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(6).tolist()
    [0.03, 0.06, 0.06]
    """
    p = _pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


def benjamini_hochberg(pvalues: ArrayLike) -> NDArray[np.float64]:
    r"""Benjamini-Hochberg adjusted p-values, which control the false discovery rate (Benjamini & Hochberg 1995).

    With the raw p-values sorted ascending, the adjusted value of
    $p_{(i)}$ is $\min_{j \ge i} \min(1, m\, p_{(j)} / j)$: rejecting
    the adjusted values below $\alpha$ keeps the expected share of false
    rejections among the rejections at most $\alpha$ (for independent or
    positively dependent tests), as :func:`scipy.stats.false_discovery_control`
    with ``method="bh"``.

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1].

    Returns
    -------
    ndarray of shape (m,)
        In the input order.

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.04, 0.03, 0.5]).round(6).tolist()
    [0.04, 0.053333, 0.053333, 0.5]
    """
    p = _pvalues(pvalues)
    m = p.size
    order = np.argsort(p, kind="stable")[::-1]  # descending
    rank = m - np.arange(m)  # the ascending rank of each, largest first
    stepped = np.minimum.accumulate(np.minimum(1.0, p[order] * m / rank))
    out = np.empty(m)
    out[order] = stepped
    return out


def adjust_pvalues(pvalues: ArrayLike, method: Correction = "holm") -> NDArray[np.float64]:
    """Adjusted p-values by ``"bonferroni"``, ``"holm"``, ``"bh"`` (Benjamini-Hochberg) or ``"none"``.

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1].
    method : {"bonferroni", "holm", "none", "bh"}
        The correction: :func:`bonferroni`, :func:`holm` (both control the
        family-wise error rate), :func:`benjamini_hochberg` (the false
        discovery rate), or none.

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.02], "bonferroni").tolist()
    [0.02, 0.04]
    >>> adjust_pvalues([0.01, 0.02], "bh").tolist()
    [0.02, 0.02]
    """
    method = check_choice(method, "method", CORRECTIONS)
    if method == "bonferroni":
        return bonferroni(pvalues)
    if method == "holm":
        return holm(pvalues)
    if method == "bh":
        return benjamini_hochberg(pvalues)
    unadjusted: NDArray[np.float64] = _pvalues(pvalues).copy()
    return unadjusted


def significance_marks(
    results: Sequence[SignificanceResult] | ArrayLike,
    *,
    alpha: float = 0.05,
    correction: Correction = "bonferroni",
    mark: str = "†",
) -> list[str]:
    """One marker per comparison: ``mark`` where the adjusted p-value is below ``alpha``.

    Result tables mark the systems that differ significantly from a baseline
    (for example with †); when one table makes several comparisons, the
    p-values are corrected for their number (Bonferroni, or Holm's uniformly
    more powerful step-down). Pass the per-comparison results (or raw
    p-values) of one table.

    Parameters
    ----------
    results : sequence of SignificanceResult, or array-like of shape (m,)
        The tests of one family, or their raw p-values.
    alpha : float
        Significance level in (0, 1).
    correction : {"bonferroni", "holm", "none", "bh"}
        Multiple-comparison correction over the family (see :func:`adjust_pvalues`).
    mark : str
        The symbol for a significant result.

    Returns
    -------
    list of str
        ``mark`` or ``""`` per comparison.

    Examples
    --------
    >>> significance_marks([0.01, 0.02, 0.4], correction="bonferroni")
    ['†', '', '']
    """
    check_unit_interval(alpha, "alpha")
    if not isinstance(mark, str):
        raise TypeError(f"mark must be a str; got {type(mark).__name__} {mark!r}")
    if isinstance(results, (str, bytes)) or not isinstance(results, (np.ndarray, Iterable)):
        raise TypeError(f"results must be SignificanceResults or p-values; got {type(results).__name__} {results!r}")
    items: NDArray[np.generic] | list[object] = results if isinstance(results, np.ndarray) else list(results)
    if len(items) and all(isinstance(r, SignificanceResult) for r in items):
        raw = np.array([r.pvalue for r in items if isinstance(r, SignificanceResult)], dtype=np.float64)
    else:
        # a mix of results and numbers, or what is no number: as_float_array says which
        raw = as_float_array(items, "results") if len(items) else np.empty(0)  # type: ignore[arg-type]
    if raw.size == 0:
        return []
    adjusted = adjust_pvalues(raw, correction)
    return [mark if v < alpha else "" for v in adjusted]
