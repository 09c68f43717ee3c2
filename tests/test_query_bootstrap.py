"""uncertank.stats.query_bootstrap_interval: whole queries resampled, checked against a loop."""

from __future__ import annotations

import numpy as np
import pytest

from uncertank.stats import query_bootstrap_interval


def _loop_interval(offsets, values, n_resamples, level, seed):
    """The same replicates by a loop over the drawn queries."""
    rng = np.random.default_rng(seed)
    n_queries = len(offsets) - 1
    reps = []
    for _ in range(n_resamples):
        drawn = rng.integers(0, n_queries, size=n_queries)
        pos = [p for q in drawn for p in range(offsets[q], offsets[q + 1])]
        reps.append(values[pos].mean())
    return tuple(np.quantile(reps, [(1 - level) / 2, (1 + level) / 2]))


def test_equals_a_loop_over_the_drawn_queries():
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 8, size=25)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values = rng.random(offsets[-1])
    got = query_bootstrap_interval(offsets, lambda pos, b: values[pos].mean(), n_resamples=300, level=0.9, seed=7)
    assert got == pytest.approx(_loop_interval(offsets, values, 300, 0.9, 7), abs=1e-12)


def test_paired_statistics_see_the_same_queries_and_their_replicate_index():
    offsets = np.array([0, 3, 5, 9])
    a, b = np.arange(9.0), np.arange(9.0) + 2.0
    seen = []

    def diff(pos, rep):
        seen.append(rep)
        return float(b[pos].mean() - a[pos].mean())

    assert query_bootstrap_interval(offsets, diff, n_resamples=50) == pytest.approx((2.0, 2.0))
    assert seen == list(range(50))


def test_errors():
    with pytest.raises(ValueError, match="offsets must be a non-decreasing 1-d array from 0"):
        query_bootstrap_interval([1, 2], lambda p, b: 0.0)
    with pytest.raises(TypeError, match="statistic must be callable; got int"):
        query_bootstrap_interval([0, 2], 3)
    with pytest.raises(ValueError, match=r"level must lie in \(0, 1\); got 1.5"):
        query_bootstrap_interval([0, 2], lambda p, b: 0.0, level=1.5)
