"""Every neural path on every device the machine has, and what the CPU can check for the GPU."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from uncertank.nn import NeuralRanker, encode_queries, model_device, score_probabilities
from uncertank.nn.testing import (
    BF16_PROBABILITY_ATOL,
    bf16_scoring_on_cpu,
    probability_tolerance,
    test_devices,
    tiny_config,
    toy_queries,
)

SMALL = dict(max_length=32, epochs=1, batch_size=8, lr=1e-3, show_progress=False)


def test_the_devices_are_the_cpu_and_cuda_when_present():
    assert test_devices() == (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    assert probability_tolerance("cpu") == 0.0
    assert probability_tolerance("cuda:0", "cpu") == BF16_PROBABILITY_ATOL


@pytest.mark.parametrize(("fit_on", "load_on"), list(itertools.product(test_devices(), test_devices())))
def test_fit_save_and_load_across_devices(tmp_path, fit_on, load_on):
    queries = toy_queries()
    ranker = NeuralRanker(tiny_config(), device=fit_on, **SMALL).fit(queries)
    assert model_device(ranker.model).type == fit_on
    ranker.save(tmp_path / "ck")
    again = NeuralRanker.load(tmp_path / "ck", device=load_on)
    assert again.device == load_on
    scores = again.predict(queries).scores
    assert model_device(again.model).type == load_on
    np.testing.assert_allclose(scores, ranker.predict(queries).scores, rtol=0,
                               atol=probability_tolerance(fit_on, load_on))


def test_model_device_is_where_the_weights_are():
    assert model_device(nn.Linear(2, 1)) == torch.device("cpu")
    assert model_device(nn.Linear(2, 1, device="meta")) == torch.device("meta")
    assert model_device(nn.ReLU()) == torch.device("cpu")  # no weights: the CPU


def test_score_probabilities_runs_where_the_model_is(tokenizer, device):
    """Without device=, a model stays on its own device (it used to be moved to the CPU)."""
    from uncertank.nn import CrossEncoderModel, build_backbone

    encoder, tok = build_backbone(tiny_config(vocab_size=len(tokenizer)), tokenizer)
    model = CrossEncoderModel(encoder).to(device)
    enc = encode_queries(tok, toy_queries(), max_length=32)
    probs = score_probabilities([model], enc)
    assert probs.shape == (1, enc.n_pairs) and model_device(model).type == device


def test_bf16_scoring_on_cpu_rounds_the_scoring_path_only(tokenizer):
    ranker = NeuralRanker(tiny_config(), device="cpu", **SMALL).fit(toy_queries())
    exact = ranker.predict(toy_queries()).scores
    with bf16_scoring_on_cpu():
        rounded = ranker.predict(toy_queries()).scores
    gap = np.abs(rounded - exact).max()
    assert 0 < gap <= BF16_PROBABILITY_ATOL
    np.testing.assert_array_equal(ranker.predict(toy_queries()).scores, exact)  # restored on exit
