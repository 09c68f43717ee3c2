from __future__ import annotations

import numpy as np
import pytest

from uncertank import QuerySet, Ranker, make_ranker
from uncertank.baselines import BM25Ranker
from uncertank.datasets import load


def test_registered_and_a_ranker():
    r = make_ranker("bm25")
    assert isinstance(r, BM25Ranker)
    assert isinstance(r, Ranker)
    assert r.name == "bm25"
    assert make_ranker("bm25", k1=1.2, b=0.5).k1 == 1.2


def test_scores_match_bm25s_per_query():
    bm25s = pytest.importorskip("bm25s")

    qs = load("ubuntu-sample", split="test", negatives="random", cache=False).subset(np.arange(40))
    pred = make_ranker("bm25").predict(qs)
    assert pred.probabilistic is False
    assert pred.scores.shape == (qs.n_pairs,)
    assert np.array_equal(pred.offsets, qs.offsets)
    # reference: one bm25s index over the distinct candidates, get_scores per query
    docs = list(dict.fromkeys(qs.candidates))
    where = {t: i for i, t in enumerate(docs)}
    ref = bm25s.BM25()
    ref.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    for q in range(qs.n_queries):
        ctx, cands, _ = qs.query(q)
        toks = bm25s.tokenize([" ".join(ctx)], stopwords="en", show_progress=False, return_ids=False)[0]
        toks = [t for t in toks if t in ref.vocab_dict]
        full = ref.get_scores(toks) if toks else np.zeros(len(docs))
        expected = full[[where[c] for c in cands]]
        lo, hi = qs.offsets[q], qs.offsets[q + 1]
        np.testing.assert_allclose(pred.scores[lo:hi], expected, rtol=1e-5, atol=1e-6)


def test_toy_ranking_and_zero_for_no_overlap():
    qs = QuerySet.from_lists(
        [["my usb drive is not mounted"], ["the wifi dropped"]],
        [["mount the usb drive", "hello there", "usb"], ["restart the wifi", "cats"]],
        [[1, 0, 0], [1, 0]],
    )
    s = BM25Ranker().predict(qs).scores
    assert s[1] == 0.0 and s[4] == 0.0
    assert s[0] > s[2] > 0 and s[3] > 0


def test_bm25_beats_chance_on_random_negatives_and_not_on_bm25_negatives():
    # zero-shot R_10@1 computed by a plain loop: the top-scored candidate (first on ties) is relevant
    def r10_at_1(qs):
        s = make_ranker("bm25").predict(qs).scores
        hits = 0
        for q in range(qs.n_queries):
            lo, hi = qs.offsets[q], qs.offsets[q + 1]
            best = max(range(lo, hi), key=lambda j: (s[j], -j))
            hits += int(qs.labels[best] > 0)
        return hits / qs.n_queries

    rnd = r10_at_1(load("ubuntu-sample", split="test", negatives="random"))
    hard = r10_at_1(load("ubuntu-sample", split="test", negatives="bm25"))
    assert rnd > 0.25  # chance is 0.1
    assert hard < rnd - 0.15


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"k1": -1.0}, ValueError, "k1 must be >= 0; got -1.0"),
        ({"b": 1.5}, ValueError, r"b must lie in \[0, 1\]; got 1.5"),
        ({"k1": "1"}, TypeError, "k1 must be a number; got str"),
        ({"b": True}, TypeError, "b must be a number; got bool"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        BM25Ranker(**kwargs)


def test_bad_method_and_input():
    with pytest.raises(ValueError, match="method must be one of 'lucene', 'robertson', 'atire'; got 'bm25l'"):
        BM25Ranker(method="bm25l")
    with pytest.raises(TypeError, match="queries must be a QuerySet; got list"):
        BM25Ranker().predict([])  # type: ignore[arg-type]
