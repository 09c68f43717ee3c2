"""The ranker ``llm``: prompts, answer tokens, and P(yes) against a loop that scores each prompt alone."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from uncertank_llm import FORMATS, LLMRanker, PromptFormat, answer_token_ids, prompt_format
from uncertank_llm.testing import tiny_lm_folder, tiny_tokenizer

import uncertank
from uncertank import QuerySet

FAST = dict(device="cpu", show_progress=False)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    return {arch: tiny_lm_folder(root / arch, arch) for arch in ("llama", "qwen3", "t5")}


@pytest.fixture(scope="module")
def mixed():
    """Queries whose prompts differ in length (a batch is padded), one a multi-turn context."""
    return QuerySet.from_lists(
        [["my wifi is down", "since the update"], "how do I mount a usb drive?", "which python version?"],
        [["reboot the router", "use the mount command on the usb drive after the kernel update", "no"],
         ["use the mount command", "run python --version"],
         ["run python --version and see", "the sound card", "yes", "mount it"]],
        [[1, 0, 0], [1, 0], [1, 0, 0, 0]],
    )


def _reference(folder, fmt: PromptFormat, queries: QuerySet, *, seq2seq: bool, turn_separator=" ") -> np.ndarray:
    """P(yes) of every pair: its prompt string built here, tokenized alone, the model run on it alone."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM).from_pretrained(
        str(folder), dtype=torch.float32).eval()
    yes = tok.convert_tokens_to_ids(tok.tokenize(fmt.yes))[0] if isinstance(fmt.yes, str) else fmt.yes
    no = tok.convert_tokens_to_ids(tok.tokenize(fmt.no))[0] if isinstance(fmt.no, str) else fmt.no
    out = []
    for q in range(queries.n_queries):
        context, candidates, _ = queries.query(q)
        query = turn_separator.join(u.strip() for u in context)
        for doc in candidates:
            text = fmt.template.replace("{instruction}", fmt.instruction)
            text = text.replace("{query}", query).replace("{document}", doc)
            ids = torch.tensor([tok.encode(text, add_special_tokens=seq2seq)])
            with torch.no_grad():
                if seq2seq:
                    start = torch.tensor([[model.config.decoder_start_token_id]])
                    logits = model(input_ids=ids, decoder_input_ids=start).logits[0, 0]
                else:
                    logits = model(input_ids=ids).logits[0, -1]
            out.append(torch.softmax(logits[[yes, no]].double(), 0)[0].item())
    return np.array(out)


def test_the_named_formats_are_the_model_cards_prompts():
    qwen = FORMATS["qwen3-reranker"].prompt("what is a usb drive", "a storage device")
    assert qwen == (
        "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
        'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
        "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
        "<Query>: what is a usb drive\n<Document>: a storage device"
        "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert (FORMATS["qwen3-reranker"].yes, FORMATS["qwen3-reranker"].no) == ("yes", "no")
    mono = FORMATS["monot5"]
    assert mono.prompt("what is a usb drive", "a storage device") == (
        "Query: what is a usb drive Document: a storage device Relevant:")
    assert (mono.yes, mono.no) == ("true", "false")


def test_a_template_is_filled_in_one_pass_and_other_braces_stay():
    fmt = prompt_format('{"q": "{query}"} -> {document}?')
    assert fmt.prompt("{document}", "d {x}") == '{"q": "{document}"} -> d {x}?'
    assert (fmt.yes, fmt.no, fmt.name) == ("yes", "no", "custom")
    assert prompt_format("monot5", answers=(" yes", " no")).yes == " yes"
    assert prompt_format("qwen3-reranker", instruction="Find answers").instruction == "Find answers"


@pytest.mark.parametrize(("template", "message"), [
    ("Query: {query} Relevant:", r"\{document\} exactly once"),
    ("Document: {document}", r"\{query\} exactly once"),
    ("{query} {query} {document}", r"\{query\} exactly once .* 2 times"),
    ("no fields at all", "or a prompt holding"),
])
def test_a_template_without_its_fields_is_refused(template, message):
    with pytest.raises(ValueError, match=message):
        prompt_format(template) if "{" not in template else PromptFormat(template)


def test_bad_answers_and_keys_are_refused():
    with pytest.raises(ValueError, match="must differ"):
        PromptFormat("{query} {document}", yes="a", no="a")
    with pytest.raises(TypeError, match="token id"):
        PromptFormat("{query} {document}", yes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two words or token ids"):
        prompt_format("monot5", answers=("yes",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown key"):
        prompt_format({"template": "{query}{document}", "answer": "y"})


def test_answer_ids_come_from_the_tokenizer_and_a_word_of_two_tokens_is_named():
    tok = tiny_tokenizer()
    assert answer_token_ids(tok, FORMATS["monot5"]) == (tok.convert_tokens_to_ids("true"),
                                                       tok.convert_tokens_to_ids("false"))
    two_tokens = r"'relevant' is \d+ tokens of this tokenizer, \[.*\].*answers=\(yes_id, no_id\)"
    with pytest.raises(ValueError, match=two_tokens):
        answer_token_ids(tok, PromptFormat("{query} {document}", yes="relevant", no="no"))
    assert answer_token_ids(tok, PromptFormat("{query} {document}", yes=7, no=8)) == (7, 8)
    with pytest.raises(ValueError, match="outside the tokenizer's vocabulary"):
        answer_token_ids(tok, PromptFormat("{query} {document}", yes=10**6, no=8))


@pytest.mark.parametrize(("arch", "template"), [("llama", "qwen3-reranker"), ("qwen3", "qwen3-reranker"),
                                                 ("llama", "monot5"), ("t5", "monot5")])
def test_p_yes_equals_each_prompt_scored_alone(folders, mixed, arch, template):
    ranker = LLMRanker(folders[arch], template=template, zero_shot=True, eval_batch_size=3, **FAST)
    got = ranker.predict(mixed).scores
    want = _reference(folders[arch], ranker.format, mixed, seq2seq=arch == "t5")
    assert ranker.kind == ("seq2seq" if arch == "t5" else "causal")
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    diff = ranker.logit_differences(mixed)
    np.testing.assert_allclose(1 / (1 + np.exp(-diff)), want, atol=1e-6, rtol=0)
    assert np.ptp(got) > 0  # the pairs are told apart: no constant score from a missing prompt


def test_batch_size_does_not_change_the_scores(folders, mixed):
    one = LLMRanker(folders["llama"], zero_shot=True, eval_batch_size=1, **FAST).predict(mixed).scores
    many = LLMRanker(folders["llama"], zero_shot=True, eval_batch_size=16, **FAST).predict(mixed).scores
    np.testing.assert_allclose(one, many, atol=1e-6, rtol=0)


#: How far P(yes) under bf16 autocast may be from float32 on the tiny models (measured on the CPU's bf16:
#: 1.4e-4 for the Llama, 1.1e-3 for the T5); uncertank.nn.testing's BF16_PROBABILITY_ATOL is 5e-3 for bert.
BF16_ATOL = 1e-2


@pytest.mark.parametrize("arch", ["llama", "t5"])
def test_bf16_autocast_stays_within_its_tolerance(folders, mixed, arch):
    ranker = LLMRanker(folders[arch], template="monot5", zero_shot=True, **FAST)
    fp32 = ranker.predict(mixed).scores
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = ranker.predict(mixed).scores
    assert np.abs(bf16 - fp32).max() < BF16_ATOL
    assert not np.array_equal(bf16, fp32)  # autocast did act


def test_a_long_prompt_is_cut_in_the_document_then_the_query_and_keeps_its_answer_position(folders):
    ranker = LLMRanker(folders["llama"], template="monot5", zero_shot=True, max_length=40, **FAST)
    long_doc = " ".join(["mount the usb drive"] * 50)
    long_query = " ".join(["my wifi is down"] * 40) + " since the update"
    qs = QuerySet.from_lists([long_query, "usb"], [["short"], [long_doc]], [[1], [1]])
    ids = ranker.encode(qs)
    tok = ranker._tok
    assert all(len(s) <= 40 for s in ids)
    texts = [tok.decode(s) for s in ids]
    assert all(t.endswith("Relevant:") for t in texts)
    assert texts[0].rstrip().endswith("since the update Document: short Relevant:")  # the newest turn kept
    assert texts[1].startswith("Query: usb Document: mount the usb drive")
    with pytest.raises(ValueError, match="shorter than the prompt template alone"):
        LLMRanker(folders["llama"], template="qwen3-reranker", zero_shot=True, max_length=8, **FAST).encode(qs)


def test_empty_documents_and_queries_are_refused_naming_them(folders):
    ranker = LLMRanker(folders["llama"], zero_shot=True, **FAST)
    qs = QuerySet.from_lists(["usb", "wifi"], [["a", "b"], ["c", "  "]], [[1, 0], [1, 0]])
    with pytest.raises(ValueError, match="candidate 1 of query '1' is an empty document"):
        ranker.predict(qs)
    qs = QuerySet.from_lists([["", " "], "wifi"], [["a"], ["c"]], [[1], [1]])
    with pytest.raises(ValueError, match="query '0' has an empty context"):
        ranker.predict(qs)


def test_a_folder_without_a_language_model_head_is_refused(tmp_path):
    from uncertank.nn.testing import tiny_classifier_folder

    folder = tiny_classifier_folder(tmp_path / "cls")
    with pytest.raises(ValueError, match=r"no causal or seq2seq language-model head.*uncertank\.nn\.from_pretrained"):
        LLMRanker(folder, zero_shot=True, **FAST).build()
    with pytest.raises(ValueError, match="never downloaded"):
        LLMRanker(tmp_path / "missing", **FAST)


def test_a_gguf_of_an_architecture_transformers_cannot_read_is_refused(tmp_path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), arch="notamodel")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match=r"cannot read this GGUF file.*It reads the GGUF architectures .*llama"):
        LLMRanker(path, zero_shot=True, **FAST).build()


def test_a_study_and_make_ranker_build_it_through_the_entry_point(folders):
    from uncertank.plugins import make_ranker, registry

    names = set(registry("rankers"))
    assert {"llm", "llm_prompts", "llm_lora_ensemble", "llm_mc_dropout", "llm_laplace", "llm_listwise"} <= names
    ranker = make_ranker("llm", pretrained=str(folders["t5"]), template="monot5", zero_shot=True, **FAST)
    assert isinstance(ranker, uncertank.Ranker) and isinstance(ranker, LLMRanker)
    with pytest.raises(TypeError, match="the ranker llm has no parameter 'pretrianed'; its parameters: pretrained"):
        make_ranker("llm", pretrianed=str(folders["t5"]))


def test_from_pretrained_reads_a_causal_lm_folder_with_the_llm_ranker(folders, mixed):
    from uncertank.nn import from_pretrained

    ranker = from_pretrained(folders["qwen3"], "llm", template="qwen3-reranker", zero_shot=True, **FAST)
    want = _reference(folders["qwen3"], FORMATS["qwen3-reranker"], mixed, seq2seq=False)
    np.testing.assert_allclose(ranker.predict(mixed).scores, want, atol=1e-6, rtol=0)


@pytest.mark.parametrize(("param", "value", "message"), [
    ("lr", 0, "lr must be a finite number > 0; got 0"),
    ("lora_dropout", 1.0, "lora_dropout must be a finite number >= 0 and < 1; got 1.0"),
    ("lora_alpha", float("nan"), "lora_alpha must be a finite number > 0; got nan"),
    ("max_length", 4, "max_length must be an integer >= 8; got 4"),
    ("target_modules", "q_proj", "target_modules must be None, 'all-linear' or a list"),
    ("zero_shot", "yes", "zero_shot must be a bool"),
])
def test_bad_parameters_are_refused_at_construction(folders, param, value, message):
    with pytest.raises((TypeError, ValueError), match=re.escape(message)):
        LLMRanker(folders["llama"], **{param: value})
