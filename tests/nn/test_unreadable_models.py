"""Models that cannot be read as they are get the library's error, naming the folder or file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from uncertank.nn import NeuralRanker, from_pretrained
from uncertank.nn.testing import tiny_classifier_folder, tiny_config, toy_queries

SMALL = dict(max_length=32, epochs=1, batch_size=8, show_progress=False, device="cpu")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ck") / "ck"
    NeuralRanker(tiny_config(), **SMALL).fit(toy_queries()).save(folder)
    return folder


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_a_corrupt_checkpoint_weights_file_is_named(checkpoint, tmp_path):
    folder = _copy(checkpoint, tmp_path / "ck")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # truncated
    with pytest.raises(ValueError, match=r"model\.safetensors' are not a readable safetensors file"):
        NeuralRanker.load(folder)


def test_a_checkpoint_whose_shapes_do_not_fit_its_config_is_named(checkpoint, tmp_path):
    folder = _copy(checkpoint, tmp_path / "ck")
    config = json.loads((folder / "backbone" / "config.json").read_text())
    config["intermediate_size"] = 41
    (folder / "backbone" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"do not fit the network its configuration describes: .*size mismatch"):
        NeuralRanker.load(folder)


def test_a_corrupt_hugging_face_weights_file_is_named(tmp_path):
    folder = tiny_classifier_folder(tmp_path / "m")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ValueError, match=r"pretrained folder .*m': its weights could not be loaded"):
        from_pretrained(folder).predict(toy_queries())


def _gpt2_folder(tmp_path, *, pad_token_id):
    from transformers import AutoTokenizer, GPT2Config, GPT2ForSequenceClassification

    from uncertank.nn import default_backbone_path

    tok = AutoTokenizer.from_pretrained(default_backbone_path(), local_files_only=True)
    folder = tmp_path / "gpt2"
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=16, n_layer=1, n_head=2, num_labels=1,
                     pad_token_id=pad_token_id)
    GPT2ForSequenceClassification(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    tok_config["pad_token"] = None  # as GPT-2's own tokenizer: no padding token
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config))
    return folder, tok


def test_a_classifier_without_a_pad_token_is_refused(tmp_path):
    folder, _ = _gpt2_folder(tmp_path, pad_token_id=None)
    with pytest.raises(ValueError, match=r"its tokenizer has no padding token and its config\.json no pad_token_id"):
        from_pretrained(folder).predict(toy_queries())


def test_a_classifier_whose_config_names_its_pad_token_gets_it(tmp_path):
    folder, _ = _gpt2_folder(tmp_path, pad_token_id=0)
    ranker = from_pretrained(folder)
    scores = ranker.predict(toy_queries()).scores
    assert scores.shape == (100,) and np.isfinite(scores).all()
    assert ranker.tokenizer_.pad_token_id == 0
