"""PG-DRR when the encoder scores in bf16 (CUDA's autocast, emulated on the CPU) and across devices."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uncertank_pgdrr import PGDRRRanker

from uncertank.nn import load_ranker, model_device, pool_encoder
from uncertank.nn.testing import bf16_scoring_on_cpu, probability_tolerance, test_devices, tiny_config, toy_queries

SMALL = dict(max_length=32, batch_size=8, lr=3e-3, show_progress=False, bank_size=16, n_chains=6, epochs=2)


@pytest.fixture(scope="module")
def fitted():
    queries = toy_queries()
    return PGDRRRanker(tiny_config(), device="cpu", **SMALL).fit(queries), queries


def test_under_bf16_the_kernel_input_is_projected_in_float32(fitted):
    ranker, queries = fitted
    model = ranker.model
    enc = ranker.encode(queries)
    batch = enc.batch(np.arange(enc.n_pairs), model_device(model))
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        z = model.features(**batch)
        pooled = pool_encoder(model.encoder, **batch, pooling=model.pooling)
    with torch.inference_mode():
        expected = model.head.project(pooled.float())
    # the encoder's output carries bf16 rounding; the projection after it adds none
    assert z.dtype == torch.float32
    torch.testing.assert_close(z, expected, rtol=0, atol=0)
    with bf16_scoring_on_cpu():
        assert ranker.features(queries).dtype == torch.float64


def test_predict_samples_draw_the_same_normals_whatever_the_device(fitted, tmp_path):
    ranker, queries = fitted
    draws = ranker.predict_samples(queries, n_samples=12).samples
    ranker.save(tmp_path / "ck")
    for device in test_devices():
        again = load_ranker(tmp_path / "ck", device=device)
        np.testing.assert_allclose(again.predict(queries).scores, ranker.predict(queries).scores, rtol=0,
                                   atol=probability_tolerance("cpu", device))
        # same seed, normals drawn on the CPU: the draws differ by the device's rounding only
        np.testing.assert_allclose(again.predict_samples(queries, n_samples=12).samples, draws, rtol=0,
                                   atol=probability_tolerance("cpu", device))
