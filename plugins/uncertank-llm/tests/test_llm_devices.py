"""The LLM rankers on every device the machine has: fit, score and draw there, agree with the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from uncertank_llm import LLMRanker, LoRADropoutRanker
from uncertank_llm.testing import tiny_lm_folder

from uncertank.nn.testing import probability_tolerance, test_devices, toy_queries


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_lm_folder(tmp_path_factory.mktemp("lm") / "llama", "llama")


@pytest.mark.parametrize("device", test_devices())
def test_fit_score_save_and_load_on_the_device(folder, device, tmp_path):
    train, test = toy_queries(6, 4, seed=0), toy_queries(3, 4, seed=1)
    ranker = LLMRanker(folder, template="monot5", max_length=48, epochs=1, batch_size=4, lora_r=2, device=device,
                       show_progress=False).fit(train)
    assert next(ranker._lm.parameters()).device.type == device.split(":")[0]
    scores = ranker.predict(test).scores
    ranker.save(tmp_path / "ckpt")
    on_cpu = LLMRanker.load(tmp_path / "ckpt", device="cpu").predict(test).scores
    np.testing.assert_allclose(scores, on_cpu, atol=probability_tolerance(device, "cpu"))
    mc = LoRADropoutRanker.from_ranker(ranker, n_passes=2).predict_samples(test)
    assert mc.samples.shape == (2, test.n_pairs) and np.isfinite(mc.samples).all()
