"""redraw_negatives: the data layer builds training negatives, keeping every rule (issue 11)."""

from __future__ import annotations

import numpy as np
import pytest

from uncertank import QuerySet
from uncertank.datasets import build_query_set, dialogue_of, load, normalize_text, redraw_negatives
from uncertank.datasets.dialogues import Dialogue

# Dialogue A is long; B and C are short. A query of A at turn t may not use A's other texts, so
# with 6 negatives its only allowed texts are exactly the 6 of B and C: the dialogue rule decides.
DIALOGUES = [
    Dialogue("A", tuple(f"alpha turn {i} about drivers" for i in range(10))),
    Dialogue("B", ("bravo one", "bravo two", "bravo three")),
    Dialogue("C", ("charlie one", "charlie two", "charlie three")),
]
POOL = [u for d in DIALOGUES for u in d.utterances]
POOL_IDS = [f"{d.dialogue_id}#{t}" for d in DIALOGUES for t in range(len(d.utterances))]
TEXTS_OF = {d.dialogue_id: set(d.utterances) for d in DIALOGUES}


@pytest.fixture
def built() -> QuerySet:
    return build_query_set(DIALOGUES, negatives="random", n_candidates=2, max_instances_per_dialogue=None, seed=0)


def _check_rules(qs: QuerySet, original: QuerySet, *, dialogue_rule: bool = True) -> None:
    assert qs.query_ids == original.query_ids
    for q in range(qs.n_queries):
        ctx, cands, labels = qs.query(q)
        octx, ocands, olabels = original.query(q)
        assert ctx == octx
        positive = ocands[int(np.flatnonzero(olabels)[0])]
        assert labels.sum() == 1 and cands[int(np.flatnonzero(labels)[0])] == positive
        negs = [c for c, y in zip(cands, labels, strict=True) if y == 0]
        keys = [normalize_text(c) for c in negs]
        assert len(set(keys)) == len(keys)  # never an identical text twice
        assert normalize_text(positive) not in keys  # never the positive
        assert not set(keys) & {normalize_text(u) for u in ctx}  # never a context utterance
        if dialogue_rule:
            own = dialogue_of(qs.query_ids[q])
            assert not set(negs) & TEXTS_OF[own], (qs.query_ids[q], negs)  # never the query's own dialogue


@pytest.mark.parametrize("negatives", ["random", "bm25"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_redraw_keeps_every_rule_where_the_dialogue_rule_decides(built, negatives, seed):
    out = redraw_negatives(built, negatives=negatives, n_candidates=7, seed=seed, pool=POOL, pool_ids=POOL_IDS)
    assert (out.lengths == 7).all() and out.n_queries == built.n_queries
    _check_rules(out, built)
    # the queries of A got exactly the six texts of B and C: nothing else was allowed
    for q in range(out.n_queries):
        if dialogue_of(out.query_ids[q]) == "A":
            _, cands, labels = out.query(q)
            assert {c for c, y in zip(cands, labels, strict=True) if y == 0} == TEXTS_OF["B"] | TEXTS_OF["C"]
    assert out.name == f"/{negatives}"


def test_without_the_dialogue_rule_a_query_would_get_its_own_dialogue(built):
    out = redraw_negatives(built, negatives="random", n_candidates=7, seed=0, pool=POOL, pool_ids=POOL_IDS,
                           groups=None, pool_groups=None)
    _check_rules(out, built, dialogue_rule=False)
    own = [set(out.query(q)[1]) & TEXTS_OF["A"] - {out.query(q)[1][int(np.flatnonzero(out.query(q)[2])[0])]}
           for q in range(out.n_queries) if dialogue_of(out.query_ids[q]) == "A"]
    assert any(own)  # so the rule above is what kept them out


def test_explicit_groups_equal_the_ids(built):
    groups = [dialogue_of(i) for i in built.query_ids]
    pool_groups = [dialogue_of(i) for i in POOL_IDS]
    a = redraw_negatives(built, n_candidates=7, seed=3, pool=POOL, pool_ids=POOL_IDS)
    b = redraw_negatives(built, n_candidates=7, seed=3, pool=POOL, pool_ids=POOL_IDS, groups=groups,
                         pool_groups=pool_groups)
    assert a.digest() == b.digest() and a.candidate_ids == b.candidate_ids


def test_default_pool_is_the_sets_own_candidates_with_the_dialogue_rule():
    train = load("ubuntu-sample", split="valid", negatives="random", n_candidates=5, cache=False)
    out = redraw_negatives(train, negatives="random", seed=7)
    assert (out.lengths == 5).all() and out.n_queries == train.n_queries
    assert set(out.candidates) <= set(train.candidates)
    assert out.digest() != train.digest()
    for q in range(out.n_queries):
        own = dialogue_of(out.query_ids[q])
        labels = out.query(q)[2]
        for j in np.flatnonzero(labels == 0):
            cid = out.candidate_ids[int(out.offsets[q]) + int(j)]
            assert dialogue_of(cid) != own
    again = redraw_negatives(train, negatives="random", seed=7)
    assert again.digest() == out.digest()  # seeded


def test_redraw_drops_queries_without_a_relevant_candidate():
    qs = QuerySet.from_lists(["q1", "q2", "q3"], [["a", "b"], ["c", "d"], ["e", "f"]], [[1, 0], [0, 0], [0, 2]],
                             query_ids=["x", "y", "z"])
    with pytest.warns(RuntimeWarning, match="1 of 3 queries have no relevant candidate"):
        out = redraw_negatives(qs, n_candidates=3, groups=None, pool_groups=None)
    assert out.query_ids == ["x", "z"]
    assert [out.query(q)[1][int(np.flatnonzero(out.query(q)[2])[0])] for q in range(2)] == ["a", "f"]


def test_redraw_errors(built):
    unlabelled = QuerySet.from_lists(["q"], [["a", "b"]])
    with pytest.raises(ValueError, match="queries must be labelled"):
        redraw_negatives(unlabelled)
    with pytest.raises(ValueError, match="no query has a relevant candidate"):
        redraw_negatives(QuerySet.from_lists(["q"], [["a", "b"]], [[0, 0]]))
    with pytest.raises(TypeError, match="queries must be a QuerySet; got list"):
        redraw_negatives([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pool_ids needs pool"):
        redraw_negatives(built, pool_ids=["a"])
    with pytest.raises(ValueError, match=r"pool_ids must hold one id per pool text \(16\); got 1"):
        redraw_negatives(built, pool=POOL, pool_ids=["a"])
    with pytest.raises(ValueError, match="groups must be a sequence of dialogue ids, 'ids' or None; got 'x'"):
        redraw_negatives(built, groups="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pool_groups must be a sequence of dialogue ids, 'ids' or None"):
        redraw_negatives(built, pool_groups="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="groups must hold one dialogue per query"):
        redraw_negatives(built, groups=["A"])
    with pytest.raises(ValueError, match="pool_groups must hold one dialogue per pool text"):
        redraw_negatives(built, pool=POOL, pool_ids=POOL_IDS, pool_groups=["A"])
    with pytest.raises(ValueError, match="can use only"):  # too few allowed texts for 8 negatives
        redraw_negatives(built, n_candidates=9, pool=POOL, pool_ids=POOL_IDS)
