"""A folder that cannot give the scores it is asked for is refused at load, naming what is missing."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel, BertConfig

import uncertank
from uncertank.nn import from_pretrained, load_ranker
from uncertank.nn.testing import tiny_classifier_folder, toy_queries


@pytest.fixture
def encoder_only(tmp_path):
    """A sentence-embedding style folder: an encoder and its tokenizer, no classification head."""
    folder = tiny_classifier_folder(tmp_path / "src")
    torch.manual_seed(0)
    cfg = BertConfig.from_pretrained(folder)
    out = tmp_path / "encoder"
    AutoModel.from_config(cfg).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, out / name)
    return out


@pytest.mark.parametrize("name", [None, "bert", "mc_dropout"])
def test_an_encoder_without_a_trained_head_is_refused(encoder_only, name):
    with pytest.raises(ValueError, match=r"has no trained weights for classifier\.bias, classifier\.weight") as err:
        from_pretrained(encoder_only, name).predict(toy_queries())
    message = str(err.value)
    assert "NeuralRanker(backbone=" in message and ".fit(train)" in message and "`uncertank plugins`" in message
    assert not any(f"'{plugin}'" in message for plugin in ("bert", "sngp", "mc_dropout")), message  # the core's own


def test_an_encoder_without_a_head_is_refused_by_load_ranker_and_an_ensemble(encoder_only):
    with pytest.raises(ValueError, match="no trained weights"):
        load_ranker(encoder_only).predict(toy_queries())
    other = shutil.copytree(encoder_only, encoder_only.parent / "encoder-copy")
    with pytest.raises(ValueError, match="no trained weights"):
        uncertank.make_ranker("ensemble", pretrained=[encoder_only, other]).predict(toy_queries())


def test_a_post_hoc_head_on_an_encoder_without_a_head_is_fine(encoder_only):
    """A post-hoc GP head uses the encoder only: the missing classifier is not needed."""
    pytest.importorskip("uncertank_sngp")
    ranker = from_pretrained(encoder_only, "sngp", epochs=1, batch_size=4, max_length=32, show_progress=False)
    scores = ranker.fit(toy_queries()).predict(toy_queries()).scores
    assert scores.shape == (100,) and np.isfinite(scores).all()


def test_a_folder_without_tokenizer_files_is_refused(tmp_path):
    folder = tiny_classifier_folder(tmp_path / "m")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    with pytest.raises(ValueError, match=r"holds no tokenizer \(none of tokenizer\.json"):
        from_pretrained(folder).predict(toy_queries())


def test_a_complete_folder_still_loads(tmp_path):
    folder = tiny_classifier_folder(tmp_path / "ok")
    scores = from_pretrained(folder).predict(toy_queries()).scores
    np.testing.assert_array_equal(scores, from_pretrained(folder).predict(toy_queries()).scores)  # no random part


@pytest.mark.parametrize("name", [None, "bert"])
def test_a_language_model_folder_is_refused_naming_the_ranker_that_reads_it(tmp_path, name):
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tiny_classifier_folder(tmp_path / "src")
    torch.manual_seed(0)
    out = tmp_path / "llama"
    LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1)).save_pretrained(out)
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / file, out / file)
    with pytest.raises(ValueError, match=r"holds a language model \(LlamaForCausalLM\), not a sequence classifier.*"
                                         r"from_pretrained\(.*'llm'|\"llm\""):
        from_pretrained(out, name).predict(toy_queries())
