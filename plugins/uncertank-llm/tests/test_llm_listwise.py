"""The ranker ``llm_listwise``: P(ranked first) read in one pass, self-consistency over permutations, LoRA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uncertank_llm import ListwiseRanker
from uncertank_llm.listwise import LISTWISE_TEMPLATE, ListwiseFormat
from uncertank_llm.testing import tiny_lm_folder

from uncertank import QuerySet
from uncertank.nn.testing import toy_queries
from uncertank.testing import check_stochastic_ranker

FAST = dict(device="cpu", show_progress=False, eval_batch_size=4)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_lm_folder(tmp_path_factory.mktemp("lm") / "llama", "llama")


@pytest.fixture(scope="module")
def lists():
    return QuerySet.from_lists(
        ["how do I mount a usb drive?", "my wifi is down"],
        [["use the mount command", "reboot", "run python --version"], ["reboot the router", "the sound card"]],
        [[1, 0, 0], [1, 0]],
    )


def test_the_prompt_lists_the_passages_behind_their_labels():
    fmt = ListwiseFormat()
    assert fmt.prompt("usb", ["mount it", "reboot"]) == (
        "Rank the passages by their relevance to the query.\nQuery: usb\n[A] mount it\n[B] reboot\n"
        "The most relevant passage is [")
    with pytest.raises(ValueError, match=r"\{passages\} exactly once"):
        ListwiseFormat(template="Query: {query}")
    with pytest.raises(ValueError, match="more than the 2 labels"):
        ListwiseFormat(labels=("X", "Y")).prompt("q", ["a", "b", "c"])


def test_p_first_equals_each_permuted_prompt_scored_alone(folder, lists):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ranker = ListwiseRanker(folder, zero_shot=True, n_permutations=3, **FAST)
    s = ranker.predict_samples(lists)
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    perms = ranker._permutations(lists, 3)
    for q in range(lists.n_queries):
        context, candidates, _ = lists.query(q)
        lo = int(lists.offsets[q])
        for r, perm in enumerate(perms[q]):
            text = LISTWISE_TEMPLATE.replace("{query}", context[0]).replace(
                "{passages}", "\n".join(f"[{'ABC'[i]}] {candidates[j]}" for i, j in enumerate(perm)))
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([tok.encode(text, add_special_tokens=False)])).logits[0, -1]
            ids = [tok.convert_tokens_to_ids(c) for c in "ABC"[: perm.size]]
            p = torch.softmax(logits[ids].double(), 0).numpy()
            np.testing.assert_allclose(s.samples[r, lo + perm], p, atol=1e-6)
    sums = np.add.reduceat(s.samples, lists.offsets[:-1], axis=1)
    np.testing.assert_allclose(sums, 1.0)
    np.testing.assert_allclose(ranker.predict(lists).scores, s.samples.mean(0))
    assert s.samples.std(0).mean() > 0  # the orders disagree: position bias is what self-consistency averages


def test_fit_lowers_the_loss_and_keeps_the_conformance_kit(folder):
    train, test = toy_queries(8, 4, seed=0), toy_queries(3, 4, seed=1)
    ranker = ListwiseRanker(folder, epochs=4, batch_size=4, lr=5e-3, lora_r=4, train_permutations=2, max_length=256,
                            n_permutations=2, **FAST).fit(train)
    h = ranker.history_["adapters"][0]
    assert h["examples"] == 16 and h["epoch_loss"][-1] < h["epoch_loss"][0]
    check_stochastic_ranker(ranker, test, n_samples=2)


def test_lists_and_labels_that_do_not_fit_are_refused(folder, lists):
    with pytest.raises(ValueError, match="query 0 has 3 candidates, more than the 2 labels"):
        ListwiseRanker(folder, zero_shot=True, answers=["X", "Y"], **FAST).predict(lists)
    with pytest.raises(ValueError, match=r"passage label 'relevant' is .* tokens"):
        ListwiseRanker(folder, zero_shot=True, answers=["A", "relevant"], **FAST).build()
    with pytest.raises(ValueError, match="does not fit max_length 20"):
        ListwiseRanker(folder, zero_shot=True, max_length=20, **FAST).predict(lists)
