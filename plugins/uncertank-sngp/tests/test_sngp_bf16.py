"""The GP layer stays in float32/float64 when the encoder scores in bf16, as on CUDA (emulated on the CPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from uncertank_sngp import SNGPRanker

from uncertank.nn.testing import bf16_scoring_on_cpu, tiny_config, toy_queries


@pytest.fixture(scope="module")
def fitted():
    queries = toy_queries()
    ranker = SNGPRanker(tiny_config(), max_length=32, epochs=1, batch_size=4, lr=3e-3, n_features=256,
                        show_progress=False, device="cpu").fit(queries)
    return ranker, queries


def test_under_bf16_the_mean_logit_is_float32_and_the_intercept_enters_exactly(fitted):
    ranker, queries = fitted
    gp = ranker.model.gp
    with bf16_scoring_on_cpu():
        mean0, _ = ranker.latent_mean_variance(queries)
        before = gp.bias.detach().clone()
        try:
            with torch.no_grad():
                gp.bias.add_(0.7)
            mean, _ = ranker.latent_mean_variance(queries)
        finally:
            with torch.no_grad():
                gp.bias.copy_(before)
    # a logit rounded to bf16 near 0.7 is off by up to 2e-3 (8 bits of mantissa); float32 is exact to 1e-6
    np.testing.assert_allclose(mean, mean0 + 0.7, rtol=0, atol=1e-6)


def test_under_bf16_predict_is_the_closed_form_of_the_same_moments(fitted):
    ranker, queries = fitted
    with bf16_scoring_on_cpu():
        scores = ranker.predict(queries).scores
        mean, var = ranker.latent_mean_variance(queries)
    expected = 1 / (1 + np.exp(-mean / np.sqrt(1 + math.pi / 8 * var)))
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)


def test_bf16_moves_the_probabilities_no_further_than_the_stated_tolerance(fitted):
    from uncertank.nn.testing import BF16_PROBABILITY_ATOL

    ranker, queries = fitted
    exact = ranker.predict(queries).scores
    with bf16_scoring_on_cpu():
        rounded = ranker.predict(queries).scores
    gap = np.abs(rounded - exact).max()
    assert 0 < gap <= BF16_PROBABILITY_ATOL  # the emulation is on (a gap) and within the tolerance
