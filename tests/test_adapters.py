from __future__ import annotations

import numpy as np
import pytest

from uncertank import CallableRanker, EnsembleRanker, QuerySet, Ranker, StochasticRanker


def _qs() -> QuerySet:
    return QuerySet.from_lists(
        ["wifi down", "sound broken"], [["fix wifi", "hi", "wifi"], ["sound", "x"]], [[1, 0, 0], [1, 0]]
    )


def _overlap(context, candidates):
    words = set(" ".join(context).split())
    return [len(words & set(c.split())) / 2 for c in candidates]


def test_callable_ranker_scores_per_query_in_order():
    r = CallableRanker(_overlap)
    pred = r.predict(_qs())
    assert r.name == "_overlap" and isinstance(r, Ranker)
    np.testing.assert_allclose(pred.scores, [0.5, 0.0, 0.5, 0.5, 0.0])
    np.testing.assert_array_equal(pred.offsets, [0, 3, 5])


def test_callable_ranker_errors():
    with pytest.raises(TypeError, match="fn must be callable"):
        CallableRanker(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must return one score per candidate \\(3\\) for query 0"):
        CallableRanker(lambda c, cands: [0.1], name="short").predict(_qs())
    with pytest.raises(ValueError, match="finite"):
        CallableRanker(lambda c, cands: [float("nan")] * len(cands)).predict(_qs())
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        CallableRanker(lambda c, cands: [2.0] * len(cands)).predict(_qs())
    raw = CallableRanker(lambda c, cands: [2.0] * len(cands), probabilistic=False).predict(_qs())
    assert raw.scores.max() == 2.0


def test_ensemble_ranker_stacks_members():
    members = [CallableRanker(lambda c, cands, v=v: [v] * len(cands), name=f"m{v}") for v in (0.2, 0.4, 0.9)]
    ens = EnsembleRanker(members)
    assert isinstance(ens, StochasticRanker)
    samples = ens.predict_samples(_qs())
    assert samples.samples.shape == (3, 5)
    np.testing.assert_allclose(samples.mean(), 0.5)
    np.testing.assert_allclose(samples.var(), np.var([0.2, 0.4, 0.9]))
    np.testing.assert_allclose(ens.predict(_qs()).scores, 0.5)
    assert ens.predict_samples(_qs(), n_samples=2).n_samples == 2


def test_ensemble_ranker_errors():
    one = CallableRanker(_overlap)
    with pytest.raises(ValueError, match="at least 2 members; got 1"):
        EnsembleRanker([one])
    with pytest.raises(TypeError, match=r"rankers\[1\] must have a predict"):
        EnsembleRanker([one, object()])  # type: ignore[list-item]
    ens = EnsembleRanker([one, one])
    with pytest.raises(ValueError, match="n_samples must be <= the number of members"):
        ens.predict_samples(_qs(), n_samples=3)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        ens.predict_samples(_qs(), n_samples=0)
