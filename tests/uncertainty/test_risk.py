from __future__ import annotations

import numpy as np
import pytest

from uncertank import PredictiveSamples, RankedLists
from uncertank.uncertainty import risk_aware_rerank, select_risk_aversion


def _loop_rerank(x: np.ndarray, offsets: np.ndarray, b: float, w: np.ndarray) -> list[list[int]]:
    """Eq. 7 of Penha & Hauff written as plainly as possible, one query at a time."""
    orders = []
    for q in range(len(offsets) - 1):
        block = x[:, offsets[q] : offsets[q + 1]]
        mean = block.mean(0)
        cov = np.atleast_2d(np.cov(block, rowvar=False, ddof=0))
        placed: list[int] = []
        for _rank in range(block.shape[1]):
            best, best_val = None, -np.inf
            for r in range(block.shape[1]):
                if r in placed:
                    continue
                val = mean[r] - b * cov[r, r] - 2 * b * sum(w[i] * cov[r, placed[i]] for i in range(len(placed)))
                if val > best_val:
                    best, best_val = r, val
            placed.append(best)
        orders.append(placed)
    return orders


@pytest.mark.parametrize("b", [-0.7, 0.0, 0.3, 2.0])
@pytest.mark.parametrize("weights", ["uniform", "dcg"])
def test_matches_plain_loop_on_variable_length_lists(b, weights):
    rng = np.random.default_rng(3)
    offsets = np.array([0, 5, 9, 14, 16, 21])
    x = rng.random((12, 21)) * rng.random(21)
    ps = PredictiveSamples(x, offsets)
    new = risk_aware_rerank(ps, b=b, weights=weights)
    w = np.ones(5) if weights == "uniform" else 1 / np.log2(np.arange(2, 7))
    for q, order in enumerate(_loop_rerank(x, offsets, b, w)):
        got = np.argsort(-new[offsets[q] : offsets[q + 1]], kind="stable")
        assert got.tolist() == order


def test_b_zero_ranks_by_mean_and_custom_weights():
    rng = np.random.default_rng(0)
    x = rng.random((8, 10))
    ps = PredictiveSamples(x, np.array([0, 10]))
    new = risk_aware_rerank(ps, b=0.0)
    assert np.argsort(-new).tolist() == np.argsort(-x.mean(0), kind="stable").tolist()
    same = risk_aware_rerank(ps, b=0.5, weights=np.ones(10))
    np.testing.assert_array_equal(same, risk_aware_rerank(ps, b=0.5))


def test_select_risk_aversion_picks_the_best_grid_point():
    rng = np.random.default_rng(1)
    x = rng.random((10, 40))
    offsets = np.arange(0, 41, 10)
    labels = np.zeros(40, dtype=int)
    labels[offsets[:-1] + rng.integers(0, 10, 4)] = 1
    ps = PredictiveSamples(x, offsets)

    def metric(r: RankedLists) -> float:
        s, y = r.to_dense()
        return float(y[np.arange(4), s.argmax(1)].mean())

    sel = select_risk_aversion(ps, labels, metric, grid=[-1.0, 0.0, 1.0])
    assert sel.scores.shape == (3,)
    assert sel.scores[[-1.0, 0.0, 1.0].index(sel.b)] == sel.scores.max()
    # ties go to the value closest to 0
    flat = select_risk_aversion(ps, labels, lambda r: 0.5, grid=[-1.0, 0.2, -0.1, 1.0])
    assert flat.b == -0.1


def test_errors():
    ps = PredictiveSamples(np.random.default_rng(0).random((3, 4)), np.array([0, 4]))
    with pytest.raises(ValueError, match="weights must be one of"):
        risk_aware_rerank(ps, b=1.0, weights="log")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one weight per rank"):
        risk_aware_rerank(ps, b=1.0, weights=[1.0, 1.0])
    with pytest.raises(ValueError, match="b must be a finite number"):
        risk_aware_rerank(ps, b=float("nan"))
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\)"):
        select_risk_aversion(ps, [0, 1], lambda r: 0.0)
