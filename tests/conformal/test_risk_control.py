"""Conformal risk control of the miss rate: against a brute-force search, MAPIE, and by simulation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from uncertank import RankedLists
from uncertank.conformal import candidate_sets, conformal_risk_control, split_conformal, split_queries


def _miss(lists: RankedLists, keep: np.ndarray) -> float:
    """Mean over queries of the share of relevant candidates not kept (0 without any), by a loop."""
    total = 0.0
    for q in range(lists.n_queries):
        lo, hi = lists.offsets[q], lists.offsets[q + 1]
        rel = [j for j in range(lo, hi) if lists.labels[j] > 0]
        if rel:
            total += sum(not keep[j] for j in rel) / len(rel)
    return total / lists.n_queries


def _brute_threshold(lists: RankedLists, alpha: float) -> float:
    """The largest threshold among every score (and +-inf) whose inflated risk is <= alpha."""
    n = lists.n_queries
    best = -math.inf
    for t in [*np.unique(lists.scores).tolist(), math.inf]:
        if (n * _miss(lists, lists.scores >= t) + 1) / (n + 1) <= alpha + 1e-12:
            best = max(best, t)
    return best


def _brute_k(lists: RankedLists, alpha: float) -> int:
    n = lists.n_queries
    from uncertank.conformal.lists import list_positions

    ranks = list_positions(lists.scores, lists.offsets)
    for k in range(int(lists.lengths.max()) + 1):
        if (n * _miss(lists, ranks < k) + 1) / (n + 1) <= alpha + 1e-12:
            return k
    raise AssertionError("the whole list always has risk 0")


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.3])
def test_threshold_and_k_match_a_brute_force_search(make_several_relevant, alpha):
    lists = make_several_relevant(60, n_candidates=6, seed=int(alpha * 100))
    labels = lists.labels.copy()
    labels[:6] = 0  # a query without relevant candidates: miss rate 0
    lists = RankedLists(lists.scores, labels, lists.offsets)
    th = conformal_risk_control(lists, alpha=alpha)
    assert th.threshold == _brute_threshold(lists, alpha)
    assert th.calibration_risk == pytest.approx(_miss(lists, lists.scores >= th.threshold))
    k = conformal_risk_control(lists, alpha=alpha, method="topk")
    assert k.k == _brute_k(lists, alpha)


def test_one_relevant_candidate_is_split_conformal(make_one_relevant):
    lists = make_one_relevant(137, ragged=True, seed=2)
    for alpha in (0.05, 0.1, 0.2):
        assert conformal_risk_control(lists, alpha=alpha).threshold == split_conformal(lists, alpha=alpha).threshold


def test_too_few_queries_certify_only_the_whole_list(make_several_relevant):
    small = make_several_relevant(5)
    th = conformal_risk_control(small, alpha=0.1)  # 1 / 6 > 0.1
    assert th.threshold == -math.inf and th.calibration_risk == 0.0 and "only the whole list" in th.guarantee
    assert conformal_risk_control(small, alpha=0.1, method="topk").k == 10


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_same_sets_as_mapie_risk_control_on_the_binary_reduction(make_several_relevant, alpha):
    """MAPIE's MultiLabelClassificationController (recall, CRC): queries as samples, candidates as labels.

    MAPIE keeps the candidates with p > lambda over a grid and the largest lambda whose inflated risk is
    < alpha; over the grid of every score, its lambda is the score just below our threshold (we keep
    p >= t), so both keep the same candidates of every calibration query.
    """
    risk_control = pytest.importorskip("mapie.risk_control")
    lists = make_several_relevant(100, n_candidates=5, seed=5, probabilities=True)
    p, y = lists.to_dense()
    grid = np.unique(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapie = risk_control.MultiLabelClassificationController(
            predict_function=lambda idx: p[idx], risk="recall", method="crc", target_level=1 - alpha,
            predict_params=grid,
        ).calibrate(np.arange(p.shape[0]), y)
    lam = float(np.asarray(mapie.best_predict_param).ravel()[0])
    th = conformal_risk_control(lists, alpha=alpha)
    assert th.threshold == grid[np.searchsorted(grid, lam, side="right")]
    np.testing.assert_array_equal(candidate_sets(lists, th).mask, (p > lam).ravel())


def test_mean_miss_rate_over_random_splits_is_at_most_alpha(make_several_relevant):
    """400 random splits of 600 exchangeable queries (n = 99 calibrate): mean test miss rate <= alpha.

    Monte Carlo error: 4 standard errors of the mean over the splits.
    """
    pool = make_several_relevant(600, seed=9)
    alpha, risks = 0.1, []
    for t in range(400):
        split = split_queries(pool, calibration=99, seed=t)
        cal, test = split.take(pool, "calibration"), split.take(pool, "test")
        th = conformal_risk_control(cal, alpha=alpha)
        risks.append(candidate_sets(test, th).miss_rate(test.labels).mean())
    r = np.asarray(risks)
    assert r.mean() <= alpha + 4 * r.std(ddof=1) / math.sqrt(r.size), r.mean()
    assert r.mean() >= alpha - 2 / (99 + 1) - 4 * r.std(ddof=1) / math.sqrt(r.size)  # CRC's lower bound


def test_errors(make_several_relevant):
    lists = make_several_relevant(10)
    with pytest.raises(ValueError, match="method must be one of 'threshold', 'topk'"):
        conformal_risk_control(lists, method="aps")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alpha must lie in"):
        conformal_risk_control(lists, alpha=0.0)
