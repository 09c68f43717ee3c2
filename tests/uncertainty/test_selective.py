from __future__ import annotations

import numpy as np
import pytest

from uncertank import PredictiveSamples, RankedLists
from uncertank.metrics import recall_at_k
from uncertank.uncertainty import query_certainty, risk_coverage_curve, top1_loss


def _loop_curve(certainty, loss):
    order = sorted(range(len(loss)), key=lambda i: (-certainty[i], i))
    risk, total = [], 0.0
    for j, i in enumerate(order, start=1):
        total += loss[i]
        risk.append(total / j)
    return risk, sum(risk) / len(risk)


def test_curve_matches_a_loop_and_oracle_is_a_lower_bound():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        c = rng.integers(0, 5, size=n).astype(float)  # ties on purpose
        loss = (rng.random(n) < 0.4).astype(float)
        rc = risk_coverage_curve(c, loss)
        risk, aurc = _loop_curve(c.tolist(), loss.tolist())
        np.testing.assert_allclose(rc.risk, risk)
        assert rc.aurc == pytest.approx(aurc)
        assert rc.oracle_aurc <= rc.aurc + 1e-12
        assert rc.risk[-1] == pytest.approx(loss.mean())
        np.testing.assert_allclose(rc.coverage, np.arange(1, n + 1) / n)


def test_perfect_certainty_reaches_the_oracle():
    loss = np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    rc = risk_coverage_curve(1 - loss, loss)
    assert rc.aurc == pytest.approx(rc.oracle_aurc)
    assert rc.excess_aurc == pytest.approx(0.0)


def test_top1_loss_is_one_minus_recall_at_1():
    rng = np.random.default_rng(1)
    scores = rng.random((30, 10))
    labels = np.zeros((30, 10), dtype=int)
    labels[np.arange(30), rng.integers(0, 10, 30)] = 1
    ranked = RankedLists.from_dense(scores, labels)
    loss = top1_loss(ranked)
    assert 1 - loss.mean() == pytest.approx(recall_at_k(ranked, k=1))


def test_top_candidate_ties_go_to_the_earlier_position():
    ranked = RankedLists.from_dense(np.array([[0.5, 0.5, 0.1]]), np.array([[0, 1, 0]]))
    assert top1_loss(ranked).tolist() == [1.0]
    assert recall_at_k(ranked, k=1) == 0.0


def test_certainties():
    scores = np.array([[0.9, 0.2, 0.1], [0.4, 0.35, 0.3]])
    ranked = RankedLists.from_dense(scores, np.array([[1, 0, 0], [0, 1, 0]]))
    np.testing.assert_allclose(query_certainty(ranked), [0.9, 0.4])
    np.testing.assert_allclose(query_certainty(ranked, certainty="margin"), [0.7, 0.05])
    draws = np.stack([scores.ravel() - 0.05, scores.ravel() + 0.05, scores.ravel()])
    draws[:, 3] = [0.2, 0.6, 0.4]  # query 1's top candidate varies more
    samples = PredictiveSamples(draws, ranked.offsets)
    std = query_certainty(RankedLists(samples.mean(), ranked.labels, ranked.offsets), certainty="std",
                          samples=samples)
    assert std[0] > std[1]


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="same length"):
        risk_coverage_curve([0.1, 0.2], [1.0])
    with pytest.raises(ValueError, match="1-D"):
        risk_coverage_curve([[0.1]], [[1.0]])
    with pytest.raises(ValueError, match="certainty must not be empty"):
        risk_coverage_curve([], [])
    with pytest.raises(ValueError, match="certainty must be finite"):
        risk_coverage_curve([np.nan], [1.0])
    with pytest.raises(ValueError, match="loss must be finite"):
        risk_coverage_curve([0.1], [np.inf])
    ranked = RankedLists.from_dense(np.array([[0.9, 0.1]]), np.array([[1, 0]]))
    with pytest.raises(ValueError, match="certainty must be one of"):
        query_certainty(ranked, certainty="entropy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs samples"):
        query_certainty(ranked, certainty="std")
    with pytest.raises(ValueError, match="same 2 pairs"):
        query_certainty(ranked, certainty="std", samples=PredictiveSamples(np.ones((2, 3)) * 0.5, np.array([0, 3])))
    single = RankedLists.from_dense(np.array([[0.9]]), np.array([[1]]))
    with pytest.raises(ValueError, match="at least two candidates"):
        query_certainty(single, certainty="margin")
    with pytest.raises(ValueError, match="at least one candidate"):
        top1_loss(RankedLists(np.array([0.1]), np.array([1]), np.array([0, 0, 1])))
