"""What the LLM rankers say a study's steps cost (uncertank.CostEstimating), warm-started or not."""

from __future__ import annotations

import pytest
from uncertank_llm import LLMRanker
from uncertank_llm.uncertainty import LoRADropoutRanker, LoRAEnsembleRanker, PromptEnsembleRanker


def test_a_warm_started_llm_trains_nothing_and_an_ensemble_trains_its_other_members():
    one = LLMRanker().cost_rates()
    assert one is not None and one.fit_per_query > 0
    assert LLMRanker().cost_rates(warm_start=True).fit_per_query == 0.0
    assert LLMRanker(zero_shot=True).cost_rates().fit_per_query == 0.0
    ens = LoRAEnsembleRanker(n_members=3)
    assert ens.cost_rates().fit_per_query == pytest.approx(3 * one.fit_per_query)
    assert ens.cost_rates(warm_start=True).fit_per_query == pytest.approx(2 * one.fit_per_query)
    assert ens.cost_rates(warm_start=True).predict_per_pair == pytest.approx(3 * one.predict_per_pair)
    passes = LoRADropoutRanker(n_passes=4).cost_rates(warm_start=True)
    assert passes.fit_per_query == 0.0 and passes.predict_per_pair == pytest.approx(4 * one.predict_per_pair)
    prompts = PromptEnsembleRanker(instructions=["a", "b"]).cost_rates(warm_start=True)
    assert prompts.fit_per_query == 0.0 and prompts.predict_per_pair == pytest.approx(2 * one.predict_per_pair)
