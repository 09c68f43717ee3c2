"""LoRA fine-tuning, checkpoints of adapters alone, and the uncertainty methods of the LLM rankers."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from uncertank_llm import (
    LLMLaplaceRanker,
    LLMRanker,
    LoRADropoutRanker,
    LoRAEnsembleRanker,
    PromptEnsembleRanker,
    lora_dropout_active,
)
from uncertank_llm.testing import tiny_lm_folder

from uncertank import NotFittedError, PredictiveSamples
from uncertank.nn.testing import toy_queries
from uncertank.testing import check_ranker, check_stochastic_ranker

TRAIN = dict(template="monot5", max_length=48, epochs=3, batch_size=8, lr=5e-3, lora_r=4, lora_dropout=0.1,
             eval_batch_size=8, device="cpu", show_progress=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_lm_folder(tmp_path_factory.mktemp("lm") / "llama", "llama")


@pytest.fixture(scope="module")
def data():
    return toy_queries(8, 4, seed=0), toy_queries(3, 4, seed=1)


@pytest.fixture(scope="module")
def fitted(folder, data):
    return LLMRanker(folder, **TRAIN).fit(data[0])


def test_lora_fine_tuning_lowers_the_loss_and_trains_the_adapters_only(fitted, folder, data):
    h = fitted.history_["adapters"][0]
    assert h["epoch_loss"][-1] < h["epoch_loss"][0] - 0.01
    assert h["trainable_parameters"] == sum(p.numel() for n, p in fitted._lm.named_parameters() if "lora_" in n)
    base = LLMRanker(folder, template="monot5", zero_shot=True, device="cpu", show_progress=False)
    assert not np.allclose(fitted.predict(data[1]).scores, base.predict(data[1]).scores)


def test_unfitted_is_refused_and_zero_shot_is_fitted(folder, data):
    with pytest.raises(NotFittedError, match="call fit"):
        LLMRanker(folder, **TRAIN).predict(data[1])
    assert LLMRanker(folder, zero_shot=True, device="cpu").is_fitted


def test_a_checkpoint_holds_the_adapters_and_references_the_base(fitted, folder, data, tmp_path):
    fitted.save(tmp_path / "ckpt")
    files = {p.relative_to(tmp_path / "ckpt").as_posix() for p in (tmp_path / "ckpt").rglob("*") if p.is_file()}
    assert "adapters/adapter_model.safetensors" in files and "uncertank.json" in files
    assert not any(f.endswith("model.safetensors") and not f.startswith("adapters/") for f in files)
    manifest = json.loads((tmp_path / "ckpt" / "uncertank.json").read_text())
    assert manifest["base"]["source"] == str(folder) and manifest["ranker"] == "llm"
    size = sum((tmp_path / "ckpt" / f).stat().st_size for f in files)
    assert size < (folder / "model.safetensors").stat().st_size  # the base is never copied
    loaded = LLMRanker.load(tmp_path / "ckpt")
    np.testing.assert_array_equal(loaded.predict(data[1]).scores, fitted.predict(data[1]).scores)


def test_adapters_are_not_loaded_onto_another_base(fitted, tmp_path):
    fitted.save(tmp_path / "ckpt")
    other = tiny_lm_folder(tmp_path / "other", "llama", seed=1)
    with pytest.raises(ValueError, match="whose files differ"):
        LLMRanker.load(tmp_path / "ckpt", pretrained=str(other))


def test_the_llm_ranker_keeps_the_conformance_kit(fitted, folder, data):
    assert "save/load" in check_ranker(fitted, data[1])
    zero = LLMRanker(folder, template="monot5", zero_shot=True, device="cpu", show_progress=False)
    assert "save/load" in check_ranker(zero, data[1], params={"eval_batch_size": 2})


def _spread(samples: PredictiveSamples) -> float:
    return float(samples.samples.std(0).mean())


def test_the_prompt_ensemble_draws_one_row_per_wording(folder, data):
    ranker = PromptEnsembleRanker(folder, template="qwen3-reranker", zero_shot=True, instructions=[
        "Find answers", "Judge relevance", "Is it relevant?"], device="cpu", show_progress=False)
    s = ranker.predict_samples(data[1])
    assert s.samples.shape == (3, data[1].n_pairs) and _spread(s) > 0
    np.testing.assert_allclose(ranker.predict(data[1]).scores, s.samples.mean(0))
    check_stochastic_ranker(ranker, data[1], n_samples=2)
    with pytest.raises(ValueError, match="at most 3, the number of instruction wordings"):
        ranker.predict_samples(data[1], n_samples=4)
    with pytest.raises(ValueError, match=r"no \{instruction\} field"):
        PromptEnsembleRanker(folder, template="monot5", zero_shot=True)


def test_the_lora_ensemble_holds_the_base_once_and_draws_one_row_per_member(folder, data, tmp_path):
    ranker = LoRAEnsembleRanker(folder, n_members=3, **TRAIN).fit(data[0])
    s = ranker.predict_samples(data[1])
    assert s.samples.shape == (3, data[1].n_pairs) and _spread(s) > 1e-4
    mem = ranker.memory()
    base_bytes = sum(p.numel() * p.element_size() for n, p in ranker._lm.named_parameters() if "lora_" not in n)
    adapter_bytes = sum(p.numel() * p.element_size() for n, p in ranker._lm.named_parameters()
                        if "lora_" in n and ".member0." in n)
    assert mem["base"] == base_bytes and mem["adapter:member1"] == adapter_bytes
    assert sum(mem.values()) == base_bytes + 3 * adapter_bytes
    check_stochastic_ranker(ranker, data[1], n_samples=2)
    ranker.save(tmp_path / "ens")
    again = LoRAEnsembleRanker.load(tmp_path / "ens")
    np.testing.assert_array_equal(again.predict_samples(data[1]).samples, s.samples)
    with pytest.raises(ValueError, match="zero_shot=True leaves none to train"):
        LoRAEnsembleRanker(folder, zero_shot=True)


def test_mc_dropout_on_the_adapters_varies_only_with_dropout_on(fitted, data):
    ranker = LoRADropoutRanker.from_ranker(fitted, n_passes=4)
    s = ranker.predict_samples(data[1])
    assert s.samples.shape == (4, data[1].n_pairs) and _spread(s) > 0
    np.testing.assert_array_equal(s.samples, ranker.predict_samples(data[1]).samples)  # seeded masks
    with lora_dropout_active(ranker._lm) as sites:
        assert sites == sum(1 for n, m in ranker._lm.named_modules() if n.endswith("lora_dropout.default"))
    assert not any(m.training for m in ranker._lm.modules())  # everything back in eval mode
    check_stochastic_ranker(ranker, data[1], n_samples=2)
    with pytest.raises(ValueError, match="lora_dropout=0 leaves nothing random"):
        LoRADropoutRanker(fitted.pretrained, lora_dropout=0.0)
    with pytest.raises(ValueError, match="zero_shot=True has no adapters"):
        LoRADropoutRanker(fitted.pretrained, zero_shot=True)


def test_laplace_on_the_answer_logits_is_the_probit_of_its_draws(fitted, data, tmp_path):
    ranker = LLMLaplaceRanker.from_ranker(fitted, n_samples=2000)
    assert not ranker.is_fitted
    ranker.fit(data[0])
    m, v = ranker.latent_mean_variance(data[1])
    diff = fitted.logit_differences(data[1])
    np.testing.assert_allclose(m, diff, atol=1e-5)  # the posterior's mean is the fine-tuned head
    assert (v > 0).all()
    s = ranker.predict_samples(data[1])
    # the probit approximation is close to the Monte Carlo mean of sigmoid(u^T h)
    np.testing.assert_allclose(ranker.predict(data[1]).scores, s.samples.mean(0), atol=0.03)
    check_stochastic_ranker(ranker, data[1], n_samples=2)
    ranker.save(tmp_path / "lap")
    again = LLMLaplaceRanker.load(tmp_path / "lap")
    np.testing.assert_array_equal(again.predict_samples(data[1], n_samples=3).samples,
                                  ranker.predict_samples(data[1], n_samples=3).samples)


def test_warm_started_rankers_share_the_model_and_score_with_their_own_adapter(fitted, data):
    before = fitted.predict(data[1]).scores
    ens = LoRAEnsembleRanker.from_ranker(fitted, n_members=2)
    assert ens._lm is fitted._lm and not ens.is_fitted
    ens.fit(data[0])
    assert ens.adapters_ == ["default", "member1"]
    np.testing.assert_array_equal(ens.predict_samples(data[1]).samples[0], before)
    np.testing.assert_array_equal(fitted.predict(data[1]).scores, before)  # not the ensemble's last member
    with pytest.raises(TypeError, match="starts from an LLM ranker"):
        LoRAEnsembleRanker.from_ranker(object())


def test_the_adapters_are_built_with_the_ranker_s_settings(fitted):
    cfg = fitted._lm.peft_config["default"]
    assert (cfg.r, cfg.lora_alpha, cfg.lora_dropout) == (4, 16.0, 0.1)
    drops = [m for n, m in fitted._lm.named_modules() if n.endswith("lora_dropout.default")]
    assert drops and all(isinstance(m, torch.nn.Dropout) and m.p == 0.1 for m in drops)
