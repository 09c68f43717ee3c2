"""The vectorised list helpers against plain Python loops over queries, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from uncertank.conformal.lists import (
    best_relevant,
    best_relevant_rank,
    list_positions,
    mass_above,
    top_candidates,
    top_k_mask,
)


def _lists(ragged: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 8, 40) if ragged else np.full(40, 6)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    scores = rng.integers(0, 4, offsets[-1]).astype(float) / 4  # many ties
    labels = (rng.random(offsets[-1]) < 0.3).astype(np.int64)
    return scores, labels, offsets


@pytest.mark.parametrize("ragged", [False, True], ids=["dense", "ragged"])
def test_ranks_tops_and_best_relevant_match_a_loop(ragged):
    s, y, off = _lists(ragged)
    ranks, tops, best = list_positions(s, off), top_candidates(s, off), best_relevant(s, y, off)
    best_rank = best_relevant_rank(s, y, off)
    masks = {k: top_k_mask(s, off, k) for k in (0, 1, 3, 6, 9)}
    for q in range(off.size - 1):
        lo, hi = off[q], off[q + 1]
        order = sorted(range(lo, hi), key=lambda j: (-s[j], j))  # descending score, ties by position
        assert [ranks[j] for j in order] == list(range(hi - lo))
        assert tops[q] == order[0]
        rel = [s[j] for j in range(lo, hi) if y[j] > 0]
        assert best[q] == (max(rel) if rel else -np.inf)
        rel_ranks = [r for r, j in enumerate(order) if y[j] > 0]
        assert best_rank[q] == (min(rel_ranks) if rel_ranks else np.inf)
        for k, mask in masks.items():
            assert [bool(mask[j]) for j in order] == [r < k for r in range(hi - lo)]


@pytest.mark.parametrize("ragged", [False, True], ids=["dense", "ragged"])
@pytest.mark.parametrize("mass", ["sum", "softmax"])
def test_mass_above_matches_a_loop(ragged, mass):
    s, _, off = _lists(ragged, seed=1)
    s = s + 0.0  # zeros included: a list of all zeros is uniform under "sum"
    out = mass_above(s, off, mass)
    for q in range(off.size - 1):
        lo, hi = off[q], off[q + 1]
        x = s[lo:hi]
        if mass == "softmax":
            w = np.exp(x - x.max())
        else:
            w = x.copy() if x.sum() > 0 else np.ones_like(x)
        w = w / w.sum()
        order = sorted(range(hi - lo), key=lambda j: (-x[j], j))
        acc = 0.0
        for j in order:
            assert out[lo + j] == pytest.approx(acc, abs=1e-12)
            acc += w[j]


def test_sum_mass_refuses_negative_scores():
    with pytest.raises(ValueError, match="mass='sum' needs scores >= 0"):
        mass_above(np.array([0.5, -0.1]), np.array([0, 2]), "sum")


@pytest.mark.parametrize("ragged", [False, True], ids=["dense", "ragged"])
def test_list_positions_are_the_metrics_pair_ranks(ragged):
    """One meaning of a pair's rank: the flat helper equals uncertank.metrics.ranks.pair_ranks, ties included."""
    from uncertank import RankedLists
    from uncertank.metrics._inputs import as_lists
    from uncertank.metrics.ranks import pair_ranks

    for seed in range(5):
        s, y, off = _lists(ragged, seed)
        np.testing.assert_array_equal(list_positions(s, off), pair_ranks(as_lists(RankedLists(s, y, off), None)))
