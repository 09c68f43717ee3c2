from __future__ import annotations

import numpy as np
import pytest

from uncertank import RankedLists
from uncertank.uncertainty import compare_nota, evaluate_nota, make_nota_task


def _ranked(n_q: int = 200, length: int = 10, seed: int = 0) -> tuple[RankedLists, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.zeros((n_q, length), dtype=int)
    labels[np.arange(n_q), rng.integers(0, length, n_q)] = 1
    scores = rng.random((n_q, length)) * 0.5 + labels * 0.5  # the relevant one tends to score high
    var = rng.random((n_q, length)) * 0.01 + (1 - labels) * 0.05
    return RankedLists.from_dense(scores, labels), var.ravel()


def test_task_matches_a_plain_loop():
    ranked, var = _ranked(n_q=30)
    task = make_nota_task(ranked, var, seed=4)
    scores, labels = ranked.to_dense()
    v = var.reshape(scores.shape)
    assert task.y.sum() == 15
    for q in range(30):
        kept = [j for j in range(10)]
        rel = int(np.flatnonzero(labels[q])[0])
        if task.y[q] == 1:
            kept.remove(rel)
            assert not np.isclose(task.means[q], scores[q, rel]).any()
        else:
            removed = [j for j in range(10) if not np.isclose(task.means[q], scores[q, j]).any()]
            assert len(removed) == 1 and removed[0] != rel
            kept.remove(removed[0])
        order = sorted(kept, key=lambda j: -scores[q, j])
        np.testing.assert_allclose(task.means[q], scores[q, order])
        np.testing.assert_allclose(task.variances[q], v[q, order])


def test_informative_scores_predict_nota_and_variance_adds_signal():
    ranked, var = _ranked(n_q=300)
    task = make_nota_task(ranked, var, seed=0)
    res = evaluate_nota(task, n_estimators=30)
    assert res.f1_per_fold.shape == (5,)
    assert res.f1_mean > 0.8  # top score reveals whether the relevant one is left
    cmp = compare_nota(task, n_estimators=30)
    assert cmp.with_variance.f1_mean >= cmp.means_only.f1_mean - 0.05
    # uninformative scores: chance level
    rng = np.random.default_rng(1)
    noise = ranked.with_scores(rng.random(ranked.n_pairs))
    assert evaluate_nota(make_nota_task(noise, seed=0), n_estimators=30).f1_mean < 0.65


def test_errors():
    ranked, var = _ranked(n_q=10)
    with pytest.raises(ValueError, match="exactly one relevant candidate per query for NOTA; query 0 has 2"):
        make_nota_task(RankedLists.from_dense([[0.1, 0.2, 0.3]] * 2, [[1, 1, 0], [1, 0, 0]]))
    with pytest.raises(ValueError, match="at least 3 candidates"):
        make_nota_task(RankedLists.from_dense([[0.1, 0.2]] * 2, [[1, 0], [1, 0]]))
    with pytest.raises(ValueError, match="at least 2 queries"):
        make_nota_task(RankedLists.from_dense([[0.1, 0.2, 0.3]], [[1, 0, 0]]))
    with pytest.raises(ValueError, match="same number of candidates"):
        make_nota_task(RankedLists.from_flat([0.1, 0.2, 0.3, 0.4], [1, 0, 1, 0], [0, 3, 4]))
    with pytest.raises(ValueError, match=r"variances must have shape \(100,\)"):
        make_nota_task(ranked, var[:5])
    with pytest.raises(ValueError, match="needs variances"):
        make_nota_task(ranked).features(use_variance=True)
    with pytest.raises(ValueError, match="n_splits must be an integer >= 2"):
        evaluate_nota(make_nota_task(ranked), n_splits=1)
