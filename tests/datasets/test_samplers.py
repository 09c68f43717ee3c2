from __future__ import annotations

import re

import numpy as np
import pytest

from uncertank.datasets import (
    BM25Sampler,
    RandomSampler,
    duplicate_stats,
    normalize_text,
    split_dialogues,
    ubuntu_dialogues,
)
from uncertank.datasets.dialogues import conversation_instances
from uncertank.datasets.retrieval import BM25Index
from uncertank.plugins import get_factory

WORD_POOL = [
    "mount the usb drive", "usb drive not found", "reboot the machine", "hello", "lol",
    "sudo apt-get update", "apt-get install vim", "yes", "yes ", "no", "thanks a lot",
    "the kernel panics on boot", "grub does not boot", "try a live cd",
]


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"\b\w\w+\b", text.lower()))


@pytest.fixture(scope="module")
def ubuntu_valid():
    ds = split_dialogues(ubuntu_dialogues())["valid"]
    ctx, resp, ids = conversation_instances(ds)
    pool = [u for d in ds for u in d.utterances]
    pool_groups = [d.dialogue_id for d in ds for _ in d.utterances]
    groups = [i.rsplit("#", 1)[0] for i in ids]
    return ctx, resp, groups, pool, pool_groups


def test_registered_names():
    assert get_factory("negative_samplers", "random") is RandomSampler
    assert get_factory("negative_samplers", "bm25") is BM25Sampler


def test_normalize_and_duplicates():
    assert normalize_text(" a \t b\n") == "a b"
    s = duplicate_stats(["ok", "ok ", " ok", "yes", "no", "no"], top=1)
    assert (s.n_texts, s.n_unique, s.n_duplicates, s.n_repeated) == (6, 3, 3, 2)
    assert s.most_common == [("ok", 3)]
    # independent count with a plain loop
    texts = [u for d in ubuntu_dialogues() for u in d.utterances]
    seen, dup = set(), 0
    for t in texts:
        key = " ".join(t.split())
        dup += key in seen
        seen.add(key)
    assert duplicate_stats(texts).n_duplicates == dup


@pytest.mark.parametrize("cls", [RandomSampler, BM25Sampler])
def test_contract_distinct_and_not_positive(cls):
    s = cls(WORD_POOL, seed=0)
    contexts = [["my usb drive"], ["boot fails"], ["hi"], ["yes"]]
    positives = ["mount the usb drive", "grub does not boot", "hello", "no"]
    neg = s.sample(contexts, positives, 5)
    assert neg.shape == (4, 5) and neg.dtype == np.int64
    for q in range(4):
        texts = [normalize_text(WORD_POOL[i]) for i in neg[q]]
        assert len(set(texts)) == 5
        assert normalize_text(positives[q]) not in texts
        assert normalize_text(contexts[q][0]) not in texts  # a context utterance is never a negative
    # the duplicate "yes " is merged with "yes": an index is always a first occurrence
    assert 8 not in neg


@pytest.mark.parametrize("cls", [RandomSampler, BM25Sampler])
def test_same_seed_same_negatives(cls, ubuntu_valid):
    ctx, resp, groups, pool, pool_groups = ubuntu_valid
    a = cls(pool, seed=7, groups=pool_groups).sample(ctx, resp, 9, groups=groups)
    b = cls(pool, seed=7, groups=pool_groups).sample(ctx, resp, 9, groups=groups)
    assert np.array_equal(a, b)


def test_random_depends_on_seed_and_is_roughly_uniform():
    pool = [f"text {i}" for i in range(50)]
    a = RandomSampler(pool, seed=0).sample([["c"]] * 2000, ["text 0"] * 2000, 5)
    b = RandomSampler(pool, seed=1).sample([["c"]] * 2000, ["text 0"] * 2000, 5)
    assert not np.array_equal(a, b)
    counts = np.bincount(a.ravel(), minlength=50)
    assert counts[0] == 0  # the positive
    # 10,000 draws over 49 texts: ~204 each; a chi-square style bound
    assert counts[1:].min() > 120 and counts[1:].max() < 300


def test_own_dialogue_excluded(ubuntu_valid):
    ctx, resp, groups, pool, pool_groups = ubuntu_valid
    own: dict[str, set[str]] = {}
    for text, g in zip(pool, pool_groups, strict=True):
        own.setdefault(g, set()).add(normalize_text(text))
    for cls in (RandomSampler, BM25Sampler):
        neg = cls(pool, seed=0, groups=pool_groups).sample(ctx, resp, 9, groups=groups)
        for q in range(len(ctx)):
            assert not own[groups[q]] & {normalize_text(pool[i]) for i in neg[q]}


def test_bm25_negatives_share_more_words_than_random(ubuntu_valid):
    ctx, resp, groups, pool, pool_groups = ubuntu_valid
    rnd = RandomSampler(pool, seed=0, groups=pool_groups).sample(ctx, resp, 9, groups=groups)
    bm = BM25Sampler(pool, seed=0, groups=pool_groups).sample(ctx, resp, 9, groups=groups)

    def overlap(neg):
        out = []
        for q in range(len(ctx)):
            c = _tokens(" ".join(ctx[q]))
            out.append(np.mean([len(c & _tokens(pool[i])) / max(1, len(_tokens(pool[i]))) for i in neg[q]]))
        return np.array(out)

    o_rnd, o_bm = overlap(rnd), overlap(bm)
    assert o_bm.mean() > 2 * o_rnd.mean()
    assert (o_bm > o_rnd).mean() > 0.8


def test_bm25_picks_the_best_matches_in_rank_order():
    pool = ["usb drive usb drive", "usb", "drive", "cat", "dog", "fish", "usb drive"]
    s = BM25Sampler(pool, seed=0, stopwords=None)
    neg = s.sample([["usb drive please"]], ["usb drive"], 3)[0]
    got = [pool[i] for i in neg]
    # "usb drive" itself is the positive; the two single-word texts and the doubled text come next
    assert set(got) == {"usb drive usb drive", "usb", "drive"}
    scores = BM25Index([pool[i] for i in neg], stopwords=None).pair_scores(
        ["usb drive please"], np.zeros(3, dtype=np.int64), np.arange(3)
    )
    assert scores[0] >= scores[1] - 1e-9 or got[0] == "usb drive usb drive"
    assert s.last_n_random == 0


def test_bm25_falls_back_to_random_without_overlap():
    s = BM25Sampler(["alpha", "beta", "gamma", "delta"], seed=0)
    neg = s.sample([["zzz unrelated"]], ["alpha"], 3)
    assert set(neg[0].tolist()) == {1, 2, 3}
    assert s.last_n_random == 3


def test_bm25_index_matches_bm25s_get_scores():
    bm25s = pytest.importorskip("bm25s")

    corpus = [u for d in ubuntu_dialogues()[:60] for u in d.utterances]
    corpus = list(dict.fromkeys(corpus))
    queries = [" ".join(d.utterances[:3]) for d in ubuntu_dialogues()[60:80]]
    idx = BM25Index(corpus)
    ref = bm25s.BM25()
    ref.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    n = len(corpus)
    qi = np.repeat(np.arange(len(queries)), n)
    di = np.tile(np.arange(n), len(queries))
    ours = idx.pair_scores(queries, qi, di).reshape(len(queries), n)
    for j, q in enumerate(queries):
        toks = bm25s.tokenize([q], stopwords="en", show_progress=False, return_ids=False)[0]
        toks = [t for t in toks if t in ref.vocab_dict]
        expected = ref.get_scores(toks) if toks else np.zeros(n)
        np.testing.assert_allclose(ours[j], expected, rtol=1e-5, atol=1e-5)
    ids, top = idx.top_k(queries, 5)
    for j in range(len(queries)):
        # reference: the 5 largest positive scores, by a plain sort
        positive = sorted((v for v in ours[j] if v > 0), reverse=True)[:5]
        np.testing.assert_allclose(top[j][: len(positive)], positive, rtol=1e-4)
        got = ids[j][: len(positive)]
        np.testing.assert_allclose(ours[j, got], positive, rtol=1e-4)
        assert (ids[j][len(positive) :] == -1).all() and (top[j][len(positive) :] == 0).all()


def test_bm25_top_k_breaks_ties_by_document_index():
    corpus = ["zeta", "alpha beta", "beta alpha", "gamma", "alpha beta"]
    filler = [f"filler{i}" for i in range(60)]
    # 3 of 5 documents match (dense block), or 3 of 65 (sparse block): both code paths
    for docs in (corpus, corpus + filler):
        ids, top = BM25Index(docs, stopwords=None).top_k(["alpha"], 4)
        assert ids[0].tolist() == [1, 2, 4, -1]
        assert top[0, 0] == top[0, 1] == top[0, 2] > 0


def test_bm25_okapi_formula_on_a_toy_corpus():
    # Lucene's BM25 written out (Lucene 8+ drops the constant (k1 + 1) factor, which
    # does not change rankings): idf = ln(1 + (N - df + 0.5) / (df + 0.5))
    corpus = ["apple banana", "apple apple cherry", "banana cherry date egg"]
    k1, b = 1.5, 0.75
    docs = [c.split() for c in corpus]
    avgdl = np.mean([len(d) for d in docs])
    n = len(docs)

    def score(query, d):
        total = 0.0
        for t in query.split():
            df = sum(t in x for x in docs)
            if df == 0:
                continue
            idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = d.count(t)
            total += idf * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))
        return total

    idx = BM25Index(corpus, stopwords=None)
    got = idx.pair_scores(["apple cherry"], np.zeros(3, dtype=np.int64), np.arange(3))
    np.testing.assert_allclose(got, [score("apple cherry", d) for d in docs], rtol=1e-5)


def test_errors():
    with pytest.raises(TypeError, match="pool must be a sequence of str; got str"):
        RandomSampler("abc")
    with pytest.raises(TypeError, match=r"pool must hold str; pool\[1\] is int"):
        RandomSampler(["a", 3])
    with pytest.raises(ValueError, match="pool must hold at least one non-empty text"):
        RandomSampler(["", "  "])
    with pytest.raises(TypeError, match="seed must be an integer >= 0; got str"):
        RandomSampler(["a"], seed="1")
    with pytest.raises(ValueError, match=r"groups must hold one group per pool text \(2\); got 1"):
        RandomSampler(["a", "b"], groups=["x"])
    s = RandomSampler(["a", "b", "c"])
    with pytest.raises(ValueError, match="k=3 negatives per query need a pool of at least 4 distinct texts"):
        s.sample([["x"]], ["a"], 3)
    with pytest.raises(ValueError, match="k must be an integer >= 1; got 0"):
        s.sample([["x"]], ["a"], 0)
    with pytest.raises(ValueError, match="contexts and positives must have the same length; got 2 and 1"):
        s.sample([["x"], ["y"]], ["a"], 1)
    with pytest.raises(ValueError, match=r"groups must hold one group per query \(1\); got 2"):
        s.sample([["x"]], ["a"], 1, groups=["g", "h"])
    # the context uses up the pool: query 0 has only "c" left but needs 2
    with pytest.raises(ValueError, match="query 0 can use only 1 of the pool's 3 distinct texts"):
        s.sample([["b"]], ["a"], 2)
    bad_method = re.escape("method must be one of 'lucene', 'robertson', 'atire'; got 'bm25+'")
    with pytest.raises(ValueError, match=bad_method):
        BM25Sampler(["a b", "c d"], method="bm25+")
    with pytest.raises(ValueError, match="corpus must hold at least one document"):
        BM25Index([])


def test_tight_pool_is_filled_exactly():
    # every row has exactly k allowed texts: the explicit fallback must find them
    pool = [f"t{i}" for i in range(40)]
    s = RandomSampler(pool, seed=0)
    contexts = [[f"t{j}" for j in range(1, 35)]] * 3
    neg = s.sample(contexts, ["t0"] * 3, 5)
    for row in neg:
        assert sorted(pool[i] for i in row) == [f"t{i}" for i in range(35, 40)]
