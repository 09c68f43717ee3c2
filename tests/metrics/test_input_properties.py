"""Property tests of the one input layer, over every registered metric."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

from tests.optional import HealthCheck, given, settings, st
from uncertank import Predictions, QuerySet, RankedLists
from uncertank.metrics import as_metric
from uncertank.plugins import registry

METRICS = {name: as_metric(info.factory, name=name) for name, info in registry("metrics").items()}
BUILTIN = ["recall_at_k", "precision", "trec_recall_at_k", "map", "mrr", "ndcg", "rbp", "rbp_residual", "ece", "mce",
           "brier", "nll"]


@st.composite
def lists(draw, equal=False):
    n_q = draw(st.integers(1, 12))
    if equal:
        lengths = [draw(st.integers(1, 8))] * n_q
    else:
        lengths = draw(st.lists(st.integers(1, 8), min_size=n_q, max_size=n_q))
    n = sum(lengths)
    grid = draw(st.sampled_from([2, 5, 100]))
    p = np.asarray(draw(st.lists(st.integers(0, grid), min_size=n, max_size=n)), dtype=np.float64) / grid
    y = np.asarray(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return p, y, offsets


# --------------------------------------------------------------------------- references


def ref_order(s):
    return sorted(range(len(s)), key=lambda i: (-s[i], i))


def ref_per_query(p, y, offsets, name):
    out = []
    for a, b in itertools.pairwise(offsets):
        s, lab = list(p[a:b]), list(y[a:b])
        ranked = [lab[i] for i in ref_order(s)]
        rel = [g > 0 for g in ranked]
        if name == "recall_at_k":
            out.append(float(any(rel[:1])))
        elif name == "precision":  # P@10: always over 10
            out.append(sum(rel[:10]) / 10)
        elif name == "trec_recall_at_k":  # relevant in the top 10 over all relevant
            out.append(sum(rel[:10]) / sum(rel) if sum(rel) else 0.0)
        elif name == "mrr":
            out.append(next((1.0 / (r + 1) for r, v in enumerate(rel) if v), 0.0))
        elif name == "map":
            hits, total = 0, 0.0
            for r, v in enumerate(rel):
                if v:
                    hits += 1
                    total += hits / (r + 1)
            out.append(total / sum(rel) if sum(rel) else 0.0)
    return np.mean(out)


def ref_ece(p, y, c=10):
    bins = [min(math.floor(v * c), c - 1) for v in p]
    total = 0.0
    for b in range(c):
        idx = [i for i in range(len(p)) if bins[i] == b]
        if idx:
            total += len(idx) / len(p) * abs(np.mean([p[i] for i in idx]) - np.mean([y[i] > 0 for i in idx]))
    return total


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=lists())
def test_every_input_form_gives_the_reference_value(data):
    p, y, offsets = data
    rl = RankedLists.from_flat(p, y, offsets)
    pred = Predictions(p, offsets)
    qs = QuerySet([["c"]] * (offsets.size - 1), [f"d{i}" for i in range(p.size)], offsets, y)
    for name in BUILTIN:
        m = METRICS[name]
        value = m(rl)
        assert m(pred, y) == value, name
        assert m(pred, qs) == value, name
        if name in ("recall_at_k", "precision", "trec_recall_at_k", "mrr", "map"):
            assert value == pytest.approx(ref_per_query(p, y, offsets, name), rel=1e-12, abs=1e-15)
        if m.kind == "calibration":
            assert m(p, y) == pytest.approx(value, rel=1e-12, abs=1e-15), name  # flat pairs
    assert METRICS["ece"](rl) == pytest.approx(ref_ece(p, y), rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(data=lists(equal=True))
def test_dense_arrays_equal_the_ranked_lists(data):
    p, y, offsets = data
    n_q = offsets.size - 1
    rl = RankedLists.from_flat(p, y, offsets)
    for name in BUILTIN:
        m = METRICS[name]
        assert m(p.reshape(n_q, -1), y.reshape(n_q, -1)) == m(rl), name
        assert m(p.reshape(n_q, -1).tolist(), y.reshape(n_q, -1).tolist()) == m(rl), name
        if m.per_query:
            np.testing.assert_array_equal(m(p.reshape(n_q, -1), y.reshape(n_q, -1), per_query=True),
                                          m(rl, per_query=True))


# --------------------------------------------------------------------------- invalid inputs


def bad_inputs():
    """(description, scores, labels, words one of which the message must contain)."""
    good = np.full((2, 3), 0.5)
    lab = np.array([[1, 0, 0], [0, 1, 0]])
    nan = good.copy()
    nan[1, 2] = np.nan
    inf = good.copy()
    inf[0, 0] = np.inf
    cases = [
        ("nan score", nan, lab, ("scores", "probs")),
        ("inf score", inf, lab, ("scores", "probs")),
        ("negative label", good, -lab, ("labels",)),
        ("fractional label", good, lab + 0.5, ("labels",)),
        ("nan label", good, np.where(lab == 1, np.nan, 0.0), ("labels",)),
        ("string scores", good.astype(str), lab, ("scores", "probs")),
        ("object scores", np.array([[object()] * 3] * 2), lab, ("scores", "probs")),
        ("string labels", good, lab.astype(str), ("labels",)),
        ("complex scores", good + 1j, lab, ("scores", "probs")),
        ("shape mismatch", good, lab[:, :2], ("labels",)),
        ("3-D", good[None], lab[None], ("scores", "probs")),
        ("0-D", np.float64(0.5), np.int64(1), ("scores", "probs")),
        ("no query", np.zeros((0, 3)), np.zeros((0, 3), dtype=int), ("scores", "probs", "query")),
        ("no candidate", np.zeros((2, 0)), np.zeros((2, 0), dtype=int), ("scores", "probs", "candidate")),
        ("ragged lists", [[0.5, 0.2], [0.1]], [[1, 0], [0]], ("scores", "probs")),
        ("missing labels", good, None, ("labels",)),
        ("labels with RankedLists", RankedLists.from_dense(good, lab), lab, ("labels",)),
        ("offsets not from 0", SimpleNamespace(scores=np.full(6, 0.5), offsets=np.array([1, 3, 6])), lab.ravel(),
         ("offsets",)),
        ("offsets past the end", SimpleNamespace(scores=np.full(6, 0.5), offsets=np.array([0, 3, 7])), lab.ravel(),
         ("offsets",)),
        ("decreasing offsets", SimpleNamespace(scores=np.full(6, 0.5), offsets=np.array([0, 4, 3, 6])),
         lab.ravel(), ("offsets",)),
        ("float offsets", SimpleNamespace(scores=np.full(6, 0.5), offsets=np.array([0, 2.5, 6])), lab.ravel(),
         ("offsets",)),
        ("predictions without labels", SimpleNamespace(scores=np.full(6, 0.5), offsets=np.array([0, 3, 6])), None,
         ("labels",)),
        ("predictions labels length", SimpleNamespace(scores=np.full(6, 0.5), offsets=np.array([0, 3, 6])),
         np.ones(5, dtype=int), ("labels",)),
        ("unlabelled query set", SimpleNamespace(scores=np.full(2, 0.5), offsets=np.array([0, 2])),
         SimpleNamespace(labels=None), ("labels",)),
    ]
    return cases


@pytest.mark.parametrize("name", BUILTIN)
@pytest.mark.parametrize("case", bad_inputs(), ids=lambda c: c[0])
def test_invalid_inputs_raise_a_named_error(name, case):
    _, scores, labels, words = case
    with pytest.raises((ValueError, TypeError)) as info:
        METRICS[name](scores, labels)
    assert any(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("name", ["ece", "mce", "brier", "nll"])
def test_calibration_metrics_reject_scores_outside_the_unit_interval(name):
    with pytest.raises(ValueError, match=r"probs.*must lie in \[0, 1\]"):
        METRICS[name](np.array([[0.5, 1.5]]), np.array([[1, 0]]))
    with pytest.raises(ValueError, match=r"probs \(the RankedLists scores\) must lie in \[0, 1\]"):
        METRICS[name](RankedLists.from_dense([[0.5, -0.1]], [[1, 0]]))


@pytest.mark.parametrize("name", ["recall_at_k", "map", "mrr", "ndcg", "rbp"])
def test_ranking_metrics_need_the_query_structure(name):
    with pytest.raises(ValueError, match=r"scores must be 2-D of shape \(n_queries, n_candidates\)"):
        METRICS[name](np.array([0.5, 0.2]), np.array([1, 0]))


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(BUILTIN),
    shape=st.tuples(st.integers(0, 3), st.integers(0, 3)),
    bad=st.sampled_from(["nan", "neg_label", "mismatch", "bool_scores_3d", "huge_label_float"]),
)
def test_random_invalid_inputs_never_give_a_number(name, shape, bad):
    rng = np.random.default_rng(0)
    s = rng.random(shape)
    y = rng.integers(0, 2, shape)
    if bad == "nan":
        s = np.full(shape, np.nan)
    elif bad == "neg_label":
        y = y - 2
    elif bad == "mismatch":
        y = rng.integers(0, 2, (shape[0] + 1, shape[1]))
    elif bad == "bool_scores_3d":
        s = s[None] > 0.5
        y = y[None]
    else:
        y = y + 0.25
    with pytest.raises((ValueError, TypeError)) as info:
        METRICS[name](s, y)
    assert any(w in str(info.value) for w in ("scores", "probs", "labels", "query", "candidate"))
