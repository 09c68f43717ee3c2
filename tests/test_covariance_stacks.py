"""PredictiveSamples.covariance_stacks against np.cov per query, and risk_aware_rerank against a loop on it."""

from __future__ import annotations

import numpy as np
import pytest

import uncertank._types as predictions
from uncertank import PredictiveSamples
from uncertank.uncertainty import risk_aware_rerank


def _samples(seed=0, n_samples=7):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 6, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return PredictiveSamples(rng.random((n_samples, offsets[-1])), offsets, ddof=1)


@pytest.mark.parametrize("chunk", [1, 10, 1 << 20])
def test_stacks_equal_np_cov_per_query(monkeypatch, chunk):
    monkeypatch.setattr(predictions, "_COV_CHUNK", chunk)  # chunks of one query, of a few, and all at once
    ps = _samples()
    seen = []
    for queries, blocks in ps.covariance_stacks():
        length = blocks.shape[-1]
        assert blocks.shape == (queries.size, length, length) and np.all(np.diff(queries) > 0)
        assert not blocks.flags.writeable
        for q, block in zip(queries, blocks, strict=True):
            lo, hi = ps.offsets[q], ps.offsets[q + 1]
            assert hi - lo == length
            expected = np.cov(ps.samples[:, lo:hi], rowvar=False, ddof=1).reshape(length, length)
            np.testing.assert_allclose(block, expected, rtol=1e-12, atol=1e-15)
            seen.append(int(q))
    assert sorted(seen) == list(range(40))
    assert ps.covariance_stacks()[0][1] is ps.covariance_stacks()[0][1]  # computed once


def test_blocks_are_writable_copies_in_query_order():
    ps = _samples(1)
    blocks = ps.covariance_blocks()
    assert len(blocks) == 40
    for q, block in enumerate(blocks):
        lo, hi = ps.offsets[q], ps.offsets[q + 1]
        np.testing.assert_allclose(block, np.atleast_2d(np.cov(ps.samples[:, lo:hi], rowvar=False, ddof=1)))
    blocks[0][...] = 0.0  # the caller's to change; the cached stacks stay as they were
    assert ps.covariance_blocks()[0].any()


def _rerank_loop(ps, b):
    """Penha & Hauff's greedy objective, one query at a time in plain Python."""
    mean = ps.mean()
    out = np.empty(ps.n_pairs)
    for q in range(ps.offsets.size - 1):
        lo, hi = ps.offsets[q], ps.offsets[q + 1]
        cov = np.atleast_2d(np.cov(ps.samples[:, lo:hi], rowvar=False, ddof=ps.ddof))
        left, placed = list(range(hi - lo)), []
        while left:
            ra = [mean[lo + r] - b * cov[r, r] - 2 * b * sum(cov[r, p] for p in placed) for r in left]
            best = left[int(np.argmax(ra))]
            placed.append(best)
            left.remove(best)
        for rank, r in enumerate(placed):
            out[lo + r] = (hi - lo) - rank
    return out


@pytest.mark.parametrize("b", [-1.0, 0.0, 0.7])
def test_rerank_equals_a_loop_over_queries(b):
    ps = _samples(2)
    np.testing.assert_array_equal(risk_aware_rerank(ps, b=b), _rerank_loop(ps, b))
