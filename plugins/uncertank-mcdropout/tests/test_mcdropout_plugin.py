from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from uncertank_mcdropout import MCDropoutRanker

import uncertank
from uncertank import PredictiveSamples
from uncertank.nn import (
    CrossEncoderModel,
    NeuralRanker,
    build_backbone,
    dropout_active,
    dropout_owners,
    encode_queries,
    score_probabilities,
    seed_everything,
)
from uncertank.nn.testing import tiny_config, toy_queries

ATTENTION_ONLY = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.3)


def tiny_model(**dropouts):
    seed_everything(0)
    encoder, tok = build_backbone(tiny_config(**dropouts))
    return CrossEncoderModel(encoder, dropout=0.0 if "hidden_dropout_prob" in dropouts else None), tok


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
def test_attention_dropout_alone_gives_variance(attn_implementation):
    model, tok = tiny_model(**ATTENTION_ONLY)
    model.encoder.set_attn_implementation(attn_implementation)
    enc = encode_queries(tok, toy_queries(), max_length=32)
    probs = score_probabilities([model], enc, n_passes=4, mc=True, seed=0)
    assert probs.var(axis=0).mean() > 1e-8
    # The pitfall: switching on only the nn.Dropout modules leaves attention dropout off.
    model.eval()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train()
    with torch.no_grad():
        outs = [torch.softmax(model(**enc.batch(np.arange(enc.n_pairs))), -1)[:, 1] for _ in range(3)]
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def test_no_dropout_anywhere_is_refused_not_reported_as_no_variance():
    model, tok = tiny_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    enc = encode_queries(tok, toy_queries(), max_length=32)
    with pytest.raises(ValueError, match=r"MC dropout needs dropout: its .* sites all have rate 0"):
        score_probabilities([model], enc, n_passes=3, mc=True, seed=0)
    np.testing.assert_array_equal(score_probabilities([model], enc, n_passes=2)[0],  # eval passes still run
                                  score_probabilities([model], enc, n_passes=2)[1])


def test_mc_dropout_switches_only_dropout_owners_and_restores():
    model, _ = tiny_model()
    owners = set(map(id, dropout_owners(model)))
    names = {type(m).__name__ for m in dropout_owners(model)}
    assert {"Dropout", "BertSelfAttention", "BertEmbeddings", "BertSelfOutput", "BertOutput"} <= names
    assert {"LayerNorm", "Linear", "BertModel", "BertLayer"}.isdisjoint(names)
    model.train()
    with dropout_active(model) as switched:
        assert {id(m) for m in switched} == owners
        for m in model.modules():
            assert m.training == (id(m) in owners)
    assert all(m.training for m in model.modules())


def test_batch_norm_owning_dropout_is_refused():
    class Odd(nn.BatchNorm1d):
        def __init__(self):
            super().__init__(4)
            self.drop = nn.Dropout(0.1)

    with (
        pytest.raises(ValueError, match=r"Odd that owns a dropout.*batch statistics"),
        dropout_active(nn.Sequential(Odd())),
    ):
        pass


@pytest.mark.slow
def test_ranker_through_the_entry_point():
    ranker = uncertank.make_ranker(
        "mc_dropout", backbone=tiny_config(), n_passes=5, max_length=32, show_progress=False
    )
    assert isinstance(ranker, MCDropoutRanker)
    assert isinstance(ranker, uncertank.StochasticRanker)
    queries = toy_queries()
    samples = ranker.fit(queries).predict_samples(queries)
    assert isinstance(samples, PredictiveSamples)
    assert samples.samples.shape == (5, 100)
    assert ((samples.samples >= 0) & (samples.samples <= 1)).all()
    assert samples.var().mean() > 0
    np.testing.assert_array_equal(ranker.predict(queries).scores, samples.mean())
    # Seeded: the same draws again, without touching the global generator's stream.
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    np.testing.assert_array_equal(ranker.predict_samples(queries).samples, samples.samples)
    assert torch.equal(torch.rand(3), expected)
    assert ranker.predict_samples(queries, n_samples=2).samples.shape == (2, 100)


def test_passes_are_batched_not_one_example_at_a_time():
    model, tok = tiny_model()
    enc = encode_queries(tok, toy_queries(), max_length=32)
    calls = []
    handle = model.register_forward_hook(lambda mod, args, kwargs_out: calls.append(1))
    try:
        score_probabilities([model], enc, n_passes=3, mc=True, batch_size=64, seed=0, mc_impl="reference")
        assert len(calls) == 3 * 2  # 100 pairs -> 2 batches, 3 passes each
        calls.clear()
        score_probabilities([model], enc, n_passes=3, mc=True, batch_size=64, seed=0)
        assert 2 <= len(calls) < 3 * 2  # the fast path stacks the passes of a short batch into fewer calls
    finally:
        handle.remove()


@pytest.mark.slow
def test_loads_a_bert_checkpoint_and_from_ranker(tmp_path):
    queries = toy_queries()
    bert = NeuralRanker(tiny_config(), max_length=32, epochs=1, batch_size=4, show_progress=False)
    bert.fit(queries)
    bert.save(tmp_path / "bert")
    mc = MCDropoutRanker.load(tmp_path / "bert", n_passes=3)
    assert mc.n_passes == 3 and mc.name == "mc_dropout"
    shared = MCDropoutRanker.from_ranker(bert, n_passes=3)
    np.testing.assert_array_equal(mc.predict_samples(queries).samples, shared.predict_samples(queries).samples)
    mc.save(tmp_path / "mc")
    again = MCDropoutRanker.load(tmp_path / "mc")
    assert again.n_passes == 3
    np.testing.assert_array_equal(again.predict_samples(queries).samples, mc.predict_samples(queries).samples)


def test_from_ranker_takes_the_rankers_params_and_overrides():
    bert = NeuralRanker(tiny_config(), max_length=32, eval_batch_size=64, seed=3, show_progress=True)
    mc = MCDropoutRanker.from_ranker(bert, n_passes=2, eval_batch_size=16, show_progress=False)
    cfg = mc.training_config
    assert (cfg.eval_batch_size, cfg.show_progress, cfg.seed, cfg.max_length) == (16, False, 3, 32)
    assert bert.training_config.eval_batch_size == 64 and bert.training_config.show_progress
    assert MCDropoutRanker.from_ranker(bert).training_config == bert.training_config
    with pytest.raises(ValueError, match="eval_batch_size must be an integer >= 1; got 0"):
        MCDropoutRanker.from_ranker(bert, eval_batch_size=0)


def test_errors():
    with pytest.raises(ValueError, match="n_passes"):
        MCDropoutRanker(tiny_config(), n_passes=0)
    with pytest.raises(TypeError, match="ranker must be a NeuralRanker"):
        MCDropoutRanker.from_ranker("bert")
    ranker = MCDropoutRanker(tiny_config(), n_passes=2, show_progress=False)
    with pytest.raises(ValueError, match="n_samples"):
        ranker.predict_samples(toy_queries(), n_samples=0)
    with pytest.raises(TypeError, match="queries must be a QuerySet"):
        ranker.predict_samples("queries")
    with pytest.raises(ValueError, match="models must hold at least one"):
        score_probabilities([], None)


# -- layer-restricted MC dropout (mc_layers) ---------------------------------------------------


def _mc(**kw):
    params = dict(n_passes=4, max_length=32, eval_batch_size=64, show_progress=False)
    params.update(kw)
    return MCDropoutRanker(tiny_config(), **params).fit(toy_queries(n_queries=2))  # fitted the same way each call


def test_mc_layers_equal_to_all_layers_is_plain_mc_dropout():
    queries = toy_queries()
    plain = _mc().predict_samples(queries).samples
    all_layers = _mc(mc_layers=2).predict_samples(queries).samples  # the tiny BERT has 2 layers
    np.testing.assert_array_equal(all_layers, plain)


def test_mc_layers_computes_the_lower_layers_once_per_batch():
    queries = toy_queries()
    ranker = _mc(mc_layers=1)
    layers = ranker.build_model().encoder.encoder.layer
    calls = [0, 0]
    lower_outputs: list[torch.Tensor] = []

    def count(i):
        def hook(mod, args, out):
            calls[i] += 1
            if i == 0:
                lower_outputs.append(out.clone())
        return hook

    handles = [layers[i].register_forward_hook(count(i)) for i in (0, 1)]
    try:
        samples = ranker.predict_samples(queries).samples
        assert calls == [2, 2 * 4]  # 100 pairs -> 2 batches; the lower layer once each, the top one T times
        ranker.set_params(seed=7)
        other = ranker.predict_samples(queries).samples
    finally:
        for h in handles:
            h.remove()
    assert samples.shape == (4, 100) and samples.var(axis=0).mean() > 0
    assert np.abs(other - samples).max() > 1e-6  # another seed, other masks in the top layer
    # The lower layer runs in eval mode: the same output whatever the seed.
    assert all(torch.equal(a, b) for a, b in zip(lower_outputs[:2], lower_outputs[2:], strict=True))
    assert all(isinstance(m, type(layers[0])) for m in layers)  # the layers are restored


def test_mc_layers_errors_and_round_trip(tmp_path):
    with pytest.raises(ValueError, match=r"mc_layers must be <= the encoder's 2 layers; got 3"):
        _mc(mc_layers=3).predict_samples(toy_queries(n_queries=1))
    ranker = _mc(mc_layers=1)
    ranker.save(tmp_path / "ck")
    again = MCDropoutRanker.load(tmp_path / "ck")
    assert again.mc_layers == 1
    queries = toy_queries(n_queries=3)
    np.testing.assert_array_equal(again.predict_samples(queries).samples, ranker.predict_samples(queries).samples)


# -- mc_layers=0: dropout in the head only, the whole encoder run once per batch ----------

N_LAYERS = 2  # the tiny BERT's


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
    ).fit(toy_queries(n_queries=2))
    for m in ranker.build_model().head.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    samples = ranker.predict_samples(toy_queries(n_queries=3)).samples
    np.testing.assert_allclose(samples.var(axis=0), 0.0, atol=1e-12)
    # ... and then equals the deterministic model's scores.
    deterministic = NeuralRanker.predict(ranker, toy_queries(n_queries=3)).scores  # the same model, dropout off
    np.testing.assert_allclose(samples[0], deterministic, atol=1e-6)


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
