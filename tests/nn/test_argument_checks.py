"""uncertank.nn checks its arguments at the door: each bad argument is named, never a raw error from inside.

One test per rule the fuzz harness found missing (tests/fuzz): the type of an
object argument (:func:`uncertank.validation.check_instance`), a list of
models (:func:`~uncertank.validation.check_instances`), a tensor's rank
(:func:`~uncertank.validation.check_ndim`), a choice, a flag, a seed, and a
folder transformers cannot read (its error chained, the argument named).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch import nn

from uncertank.nn import (
    CrossEncoderModel,
    NeuralRanker,
    PretrainedCrossEncoder,
    autocast,
    build_backbone,
    cross_entropy_loss,
    encode_queries,
    encode_text_pairs,
    head_dimensions,
    load_model,
    mc_implementation,
    mc_passes,
    output_probabilities,
    pool_encoder,
    save_pretrained,
    score_batches,
    score_probabilities,
)
from uncertank.nn.testing import tiny_config, toy_queries


class _Encoder(nn.Module):
    """A stand-in encoder with a config, for the checks that read only its config."""

    def __init__(self) -> None:
        super().__init__()
        self.config = tiny_config()
        self.linear = nn.Linear(2, 2)


@pytest.fixture(scope="module")
def encoded(tokenizer):
    return encode_queries(tokenizer, toy_queries(2, 3), max_length=32)


# -- the type of an object argument (check_instance) ---------------------------------------------


@pytest.mark.parametrize(("call", "name"), [
    (lambda enc: score_probabilities([nn.Linear(2, 2)], 0.5), "encoded"),
    (lambda enc: score_batches(0.5, lambda b: b["input_ids"]), "encoded"),
    (lambda enc: score_batches(enc, "fn"), "fn"),
    (lambda enc: score_batches(enc, lambda b: b["input_ids"], device="cpu"), "device"),
    (lambda enc: score_batches(enc, lambda b: b["input_ids"], accelerator=object()), "accelerator"),
    (lambda enc: score_batches(enc, lambda b: [0.5]), "fn's output"),
    (lambda enc: output_probabilities([0.0, 1.0]), "output"),
    (lambda enc: autocast("cuda"), "device"),
    (lambda enc: mc_implementation([nn.Linear(2, 2)], "cpu"), "device"),
    (lambda enc: mc_passes("model", {"input_ids": torch.zeros(2, 3)}, 2), "model"),
    (lambda enc: mc_passes(nn.Linear(2, 2), [1, 2], 2), "batch"),
    (lambda enc: mc_passes(nn.Linear(2, 2), {"input_ids": [1, 2]}, 2), "batch['input_ids']"),
    (lambda enc: head_dimensions(0.5), "encoder"),
    (lambda enc: CrossEncoderModel(0.5), "encoder"),
    (lambda enc: pool_encoder(0.5, torch.zeros(1, 2), torch.ones(1, 2)), "encoder"),
    (lambda enc: pool_encoder(_Encoder(), [[1, 2]], torch.ones(1, 2)), "input_ids"),
    (lambda enc: cross_entropy_loss(torch.zeros(2, 2), [0, 1]), "labels"),
    (lambda enc: PretrainedCrossEncoder(0.5, "sigmoid"), "classifier"),
    (lambda enc: save_pretrained(0.5, "folder"), "ranker"),
])
def test_an_object_of_another_type_is_named(encoded, call, name):
    with pytest.raises(TypeError, match=f"^{re.escape(name)} must be "):
        call(encoded)


def test_the_encoder_config_needs_a_hidden_size():
    encoder = _Encoder()
    encoder.config = None
    with pytest.raises(TypeError, match=r"^encoder\.config\.hidden_size must be an integer"):
        head_dimensions(encoder)


def test_the_tokenizer_and_pair_format_are_named(tokenizer):
    with pytest.raises(TypeError, match=r"^tokenizer must be a transformers tokenizer"):
        encode_text_pairs(0.5, [["hi"]], ["a"], np.array([0]), max_length=16)
    with pytest.raises(TypeError, match=r"^pair_format must be a PairFormat or None"):
        encode_text_pairs(tokenizer, [["hi"]], ["a"], np.array([0]), max_length=16, pair_format=0.5)
    with pytest.raises(TypeError, match=r"^candidates must be a sequence"):
        encode_text_pairs(tokenizer, [["hi"]], 0.5, np.array([0]), max_length=16)
    with pytest.raises(TypeError, match=r"^query_index must be integers"):
        encode_text_pairs(tokenizer, [["hi"]], ["a"], ["x"], max_length=16)


# -- a list of models (check_instances) ----------------------------------------------------------


@pytest.mark.parametrize("models", ["bert", [nn.Linear(2, 2), "bert"], nn.Linear(2, 2)])
def test_models_must_be_a_list_of_modules(encoded, models):
    with pytest.raises(TypeError, match=r"^models must be a list of which each item is a torch.nn.Module"):
        score_probabilities(models, encoded)
    with pytest.raises(TypeError, match=r"^models must be a list"):
        mc_implementation(models, torch.device("cpu"))


def test_an_empty_list_of_models_is_still_refused_by_name():
    with pytest.raises(ValueError, match=r"models must hold at least one"):
        score_probabilities([], None)


# -- a tensor's rank (check_ndim) ----------------------------------------------------------------


def test_a_tensor_of_another_rank_is_named_with_its_shape():
    with pytest.raises(ValueError, match=r"^batch\['input_ids'\] must be 2-D; got shape \(3,\)"):
        mc_passes(nn.Linear(2, 2), {"input_ids": torch.zeros(3, dtype=torch.long)}, 2)
    with pytest.raises(ValueError, match=r"^input_ids must be 2-D; got shape \(2,\)"):
        pool_encoder(_Encoder(), torch.zeros(2, dtype=torch.long), torch.ones(1, 2))
    with pytest.raises(ValueError, match=r"^output must be 2-D; got shape \(2,\)"):
        cross_entropy_loss(torch.zeros(2), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^labels must hold one label per row of output \(2\)"):
        cross_entropy_loss(torch.zeros(2, 2), torch.zeros(3, dtype=torch.long))


def test_a_torch_error_of_the_loss_is_the_librarys_naming_labels():
    with pytest.raises(ValueError, match=r"^labels must be int64 class indices") as info:
        cross_entropy_loss(torch.zeros(2, 2), torch.tensor([0, 5]))
    assert info.value.__cause__ is not None


# -- a choice, a flag, a number, a seed ----------------------------------------------------------


def test_a_choice_given_an_array_is_named():
    with pytest.raises(ValueError, match=r"^activation must be one of 'sigmoid', 'softmax'"):
        PretrainedCrossEncoder(nn.Linear(2, 2), np.array(["sigmoid", "softmax"]))
    with pytest.raises(ValueError, match=r"^activation must be one of 'auto', 'sigmoid', 'softmax'"):
        NeuralRanker(tiny_config(), activation=np.array([0.5, 0.5]))


def test_flags_seeds_and_rates_are_named(encoded):
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"^mc must be a bool"):
        score_probabilities([model], encoded, mc="yes")
    with pytest.raises(TypeError, match=r"^stacked must be a bool"):
        mc_implementation([model], torch.device("cpu"), stacked=np.array([1, 0]))
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0"):
        score_probabilities([model], encoded, seed=-1)
    with pytest.raises(ValueError, match=r"^dropout must lie in"):
        head_dimensions(_Encoder(), 1.5)
    with pytest.raises(TypeError, match=r"^seed must be an integer"):
        toy_queries(seed="0")


# -- a folder transformers cannot read: the library's error, the argument named, the cause chained ----


def test_a_file_given_as_tokenizer_folder_is_named(tmp_path):
    bad = tmp_path / "edge.run"
    bad.write_text("q1 Q0 d1 1 0.5 a\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^tokenizer must be a local model folder") as info:
        build_backbone(tiny_config(), tokenizer=bad)
    assert str(bad) in str(info.value) and info.value.__cause__ is not None


def test_an_unreadable_backbone_config_is_named(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^(backbone|tokenizer) must be a local model folder") as info:
        build_backbone(folder)
    assert info.value.__cause__ is not None


def test_a_folder_that_is_no_checkpoint_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"^folder must be a checkpoint folder written by save_model") as info:
        load_model(tmp_path)
    assert info.value.__cause__ is not None
