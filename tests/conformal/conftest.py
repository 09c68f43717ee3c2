"""Simulated ranking problems shared by the conformal tests: exchangeable queries with known structure."""

from __future__ import annotations

import numpy as np
import pytest

from uncertank import RankedLists


def one_relevant(n_queries: int, n_candidates: int = 10, *, seed: int = 0, ragged: bool = False) -> RankedLists:
    """Lists with exactly one relevant candidate; continuous scores (no ties), the relevant one higher on average."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, n_candidates + 1, n_queries) if ragged else np.full(n_queries, n_candidates)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    labels = np.zeros(offsets[-1], dtype=np.int64)
    labels[offsets[:-1] + rng.integers(0, lengths)] = 1
    scores = rng.normal(0.0, 1.0, offsets[-1]) + 1.5 * labels
    return RankedLists(scores, labels, offsets)


def several_relevant(n_queries: int, n_candidates: int = 10, *, seed: int = 0, p_rel: float = 0.3,
                     probabilities: bool = False) -> RankedLists:
    """Lists with a random number (>= 1) of relevant candidates; continuous scores."""
    rng = np.random.default_rng(seed)
    y = (rng.random((n_queries, n_candidates)) < p_rel).astype(np.int64)
    y[np.arange(n_queries), rng.integers(0, n_candidates, n_queries)] = 1
    s = rng.normal(0.0, 1.0, y.shape) + 1.2 * y
    if probabilities:
        s = 1.0 / (1.0 + np.exp(-(s - 0.6) * 1.5))
    return RankedLists.from_dense(s, y)


@pytest.fixture
def make_one_relevant():
    return one_relevant


@pytest.fixture
def make_several_relevant():
    return several_relevant
