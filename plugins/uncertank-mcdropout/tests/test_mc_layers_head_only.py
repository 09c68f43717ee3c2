"""``mc_layers=0``: dropout in the head only, the whole encoder run once per batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uncertank_mcdropout import MCDropoutRanker

from uncertank.nn import NeuralRanker
from uncertank.nn.testing import tiny_config, toy_queries

N_LAYERS = 2  # the tiny BERT's


def _mc(**kw):
    params = dict(n_passes=4, max_length=32, eval_batch_size=64, show_progress=False)
    params.update(kw)
    return MCDropoutRanker(tiny_config(), **params)


def test_head_only_runs_the_encoder_once_per_batch_and_the_passes_differ():
    queries = toy_queries()
    ranker = _mc(mc_layers=0)
    encoder = ranker.build_model().encoder
    calls = {"embeddings": 0, **{i: 0 for i in range(N_LAYERS)}}

    def count(key):
        def hook(mod, args, out):
            calls[key] += 1
        return hook

    handles = [encoder.embeddings.register_forward_hook(count("embeddings"))]
    handles += [encoder.encoder.layer[i].register_forward_hook(count(i)) for i in range(N_LAYERS)]
    try:
        samples = ranker.predict_samples(queries).samples
    finally:
        for h in handles:
            h.remove()
    # 100 pairs -> 2 batches: every encoder module once per batch, whatever T.
    assert calls == {"embeddings": 2, 0: 2, 1: 2}
    assert samples.shape == (4, 100)
    assert all(np.abs(samples[t] - samples[0]).max() > 1e-6 for t in range(1, 4))  # the head's masks differ
    # The modules are restored after scoring.
    assert type(encoder.embeddings).__name__ == "BertEmbeddings"
    assert all(type(m).__name__ == "BertLayer" for m in encoder.encoder.layer)


def test_head_only_with_no_head_dropout_has_no_variance():
    ranker = MCDropoutRanker(
        tiny_config(), n_passes=3, max_length=32, show_progress=False, mc_layers=0
    )
    for m in ranker.build_model().head.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    samples = ranker.predict_samples(toy_queries(n_queries=3)).samples
    np.testing.assert_allclose(samples.var(axis=0), 0.0, atol=1e-12)
    # ... and then equals the deterministic model's scores.
    bert = NeuralRanker(tiny_config(), max_length=32, show_progress=False)
    bert.model = ranker.build_model()
    bert.tokenizer = ranker.tokenizer
    np.testing.assert_allclose(samples[0], bert.predict(toy_queries(n_queries=3)).scores, atol=1e-6)


def test_all_layers_equals_plain_mc_dropout():
    queries = toy_queries(n_queries=4)
    plain = _mc().score(queries, n_passes=4, mc=True, seed=0)
    np.testing.assert_array_equal(_mc(mc_layers=N_LAYERS).predict_samples(queries).samples, plain)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (-1, ValueError, r"mc_layers must be an integer >= 0; got -1"),
        (1.5, TypeError, r"mc_layers must be an integer >= 0; got float 1.5"),
        (True, TypeError, r"mc_layers must be an integer >= 0; got bool True"),
    ],
)
def test_bad_mc_layers_are_refused_at_construction(bad, error, message):
    with pytest.raises(error, match=message):
        _mc(mc_layers=bad)


def test_more_layers_than_the_encoder_has_is_refused():
    with pytest.raises(ValueError, match=rf"mc_layers must be <= the encoder's {N_LAYERS} layers; got 3"):
        _mc(mc_layers=N_LAYERS + 1).predict_samples(toy_queries(n_queries=1))
    bert = NeuralRanker(tiny_config(), max_length=32, show_progress=False)
    with pytest.raises(ValueError, match=rf"mc_layers must be <= the encoder's {N_LAYERS} layers; got 3"):
        MCDropoutRanker.from_ranker(bert, mc_layers=N_LAYERS + 1)
    with pytest.raises(ValueError, match=r"mc_layers must be an integer >= 0; got -1"):
        MCDropoutRanker.from_ranker(bert, mc_layers=-1)
    assert MCDropoutRanker.from_ranker(bert, mc_layers=0).mc_layers == 0


def test_a_model_without_encoder_layers_is_refused():
    ranker = _mc(mc_layers=0)
    ranker.model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="mc_layers needs a BERT-style encoder"):
        ranker.predict_samples(toy_queries(n_queries=1))


def test_pre_encoded_pairs_score_like_their_queries():
    queries = toy_queries(n_queries=3)
    ranker = _mc(mc_layers=0)
    np.testing.assert_array_equal(
        ranker.score_top_layers(ranker.encode(queries), n_passes=3, mc_layers=1),
        ranker.score_top_layers(queries, n_passes=3, mc_layers=1),
    )
