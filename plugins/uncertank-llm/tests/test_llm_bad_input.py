"""Bad arguments of the plugin's public functions get the library's errors, naming the argument."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from uncertank_llm import (
    FORMATS,
    AnswerModel,
    LLMLaplaceRanker,
    LLMRanker,
    PromptEnsembleRanker,
    answer_token_ids,
    base_fingerprint,
    encode_prompts,
    pad_batch,
    score_prompts,
    single_token_ids,
)
from uncertank_llm.listwise import ListwiseFormat
from uncertank_llm.testing import tiny_lm_folder, tiny_tokenizer


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


class _Stub(nn.Module):
    """A language model of ten tokens, enough for the checks that read its vocabulary."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)

    def get_input_embeddings(self) -> nn.Module:
        return self.embed


@pytest.mark.parametrize(("args", "error", "match"), [
    (("mrr", "causal", [1, 2]), TypeError, "model must be a torch language model"),
    ((nn.Linear(2, 2), np.array([-1, 2, 3]), [1, 2]), ValueError, "kind must be one of 'causal', 'seq2seq'"),
    ((nn.Linear(2, 2), "causal", np.array([0.9, 0.2])), TypeError, "answer_ids must be a list of token ids"),
    ((nn.Linear(2, 2), "causal", "ab"), TypeError, "answer_ids must be a list of token ids"),
    ((nn.Linear(2, 2), "causal", [1, -2]), ValueError, "answer_ids must hold token ids >= 0"),
    ((nn.Linear(2, 2), "causal", [1, 1]), ValueError, "answer_ids must be two or more distinct token ids"),
    ((nn.Linear(2, 2), "seq2seq", [1, 2]), ValueError, "names no decoder_start_token_id"),
])
def test_answer_model_checks_each_argument(args, error, match):
    with pytest.raises(error, match=match):
        AnswerModel(*args)


@pytest.mark.parametrize(("ids", "kwargs", "error", "match"), [
    (0.5, {}, TypeError, "ids must be a list of prompts"),
    ([], {}, ValueError, "ids must hold at least one prompt"),
    ([[1, "a"]], {}, TypeError, r"ids\[0\] must be a list of token ids \(int\); got str 'a' at index 1"),
    ([[1, 2.5]], {}, TypeError, r"ids\[0\] must be a list of token ids"),
    ([[1, -2]], {}, ValueError, r"ids\[0\] must hold token ids >= 0"),
    ([[1, 2]], {"left": 0.5}, TypeError, "left must be a bool"),
    ([[1, 2]], {"pad_id": -1}, ValueError, "pad_id must be an integer >= 0"),
    ([[1, 2]], {"pad_id": 0.1}, TypeError, "pad_id must be an integer >= 0"),
    ([[1, 2]], {"device": "x"}, ValueError, "device must name a torch device"),
    ([[1, 2]], {"device": 3.5}, TypeError, "device must be a torch.device or its name"),
])
def test_pad_batch_checks_each_argument(ids, kwargs, error, match):
    with pytest.raises(error, match=match):
        pad_batch(ids, **{"left": True, "pad_id": 0, "device": torch.device("cpu"), **kwargs})


def test_pad_batch_still_pads():
    out, mask = pad_batch([[1, 2], (3,), np.array([4, 5, 6])], left=True, pad_id=0, device="cpu")
    assert out.tolist() == [[0, 1, 2], [0, 0, 3], [4, 5, 6]]
    assert mask.tolist() == [[0, 1, 1], [0, 0, 1], [1, 1, 1]]


@pytest.mark.parametrize(("model", "ids", "kwargs", "error", "match"), [
    ("map", [[1]], {}, TypeError, "model must be an AnswerModel"),
    (None, 0.5, {}, TypeError, "ids must be a list of prompts"),
    (None, [[1]], {"batch_size": np.ones(3)}, TypeError, "batch_size must be an integer >= 1"),
    (None, [[1]], {"features": "yes"}, TypeError, "features must be a bool"),
    (None, [[1]], {"around": 5}, TypeError, "around must be a function"),
    (None, [[1]], {"desc": 5}, TypeError, "desc must be a str"),
    (None, [[1, 20]], {}, ValueError, "ids must hold token ids below the model's vocabulary of 10; got 20"),
    (None, [[1, 2]], {"pad_id": 12}, ValueError, "pad_id must hold token ids below the model's vocabulary of 10"),
])
def test_score_prompts_checks_each_argument(model, ids, kwargs, error, match):
    model = AnswerModel(_Stub(), "causal", [1, 2]) if model is None else model
    with pytest.raises(error, match=match):
        score_prompts(model, ids, **{"batch_size": 2, "pad_id": 0, "device": "cpu", **kwargs})


def test_the_token_functions_check_tokenizer_words_and_format(tok):
    with pytest.raises(TypeError, match="tokenizer must be a transformers tokenizer"):
        single_token_ids(0.1, ["yes"])
    with pytest.raises(TypeError, match="words must be a list of words"):
        single_token_ids(tok, 0.5)
    with pytest.raises(TypeError, match="words must be a list of words"):
        single_token_ids(tok, "yes")
    with pytest.raises(TypeError, match=r"words must be a list of words \(str\) or token ids \(int\); got float"):
        single_token_ids(tok, ["yes", 1.5])
    with pytest.raises(ValueError, match="words must hold token ids >= 0; got -1 at index 0"):
        single_token_ids(tok, [-1])
    with pytest.raises(ValueError, match="words must hold non-empty words"):
        single_token_ids(tok, [""])
    assert single_token_ids(tok, [np.int64(3), "yes"])[0] == 3
    with pytest.raises(TypeError, match="fmt must be a PromptFormat"):
        answer_token_ids(tok, 0.5)
    with pytest.raises(TypeError, match="tokenizer must be a transformers tokenizer"):
        answer_token_ids(0.1, FORMATS["monot5"])


def test_encode_prompts_checks_each_argument(tok):
    fmt = FORMATS["monot5"]
    with pytest.raises(TypeError, match="queries must be a list of str"):
        encode_prompts(tok, fmt, "q", ["d"], max_length=64, add_special_tokens=False)
    with pytest.raises(TypeError, match="documents must be a list of str"):
        encode_prompts(tok, fmt, ["q"], [1], max_length=64, add_special_tokens=False)
    with pytest.raises(ValueError, match=r"documents must hold one document per query \(1\); got 2"):
        encode_prompts(tok, fmt, ["q"], ["d", "e"], max_length=64, add_special_tokens=False)
    with pytest.raises(TypeError, match="add_special_tokens must be a bool"):
        encode_prompts(tok, fmt, ["q"], ["d"], max_length=64, add_special_tokens=Path("x"))
    with pytest.raises(TypeError, match="fmt must be a PromptFormat"):
        encode_prompts(tok, "monot5", ["q"], ["d"], max_length=64, add_special_tokens=False)


def test_base_fingerprint_checks_its_path(tmp_path):
    with pytest.raises(TypeError, match="source must be a path"):
        base_fingerprint(np.array([0.5]))
    with pytest.raises(FileNotFoundError, match="source must be an existing model file or folder"):
        base_fingerprint(tmp_path / "missing")
    (tmp_path / "w.bin").write_bytes(b"abc")
    assert base_fingerprint(tmp_path) == base_fingerprint(str(tmp_path))


def test_tiny_lm_folder_checks_each_argument(tmp_path):
    with pytest.raises(TypeError, match="folder must be a path"):
        tiny_lm_folder(0.1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="folder must be a folder to write the model into"):
        tiny_lm_folder(tmp_path / "file")
    with pytest.raises(ValueError, match="architecture must be one of 'llama', 'qwen3', 't5'"):
        tiny_lm_folder(tmp_path / "m", np.array([1]))
    with pytest.raises(ValueError, match=r"dropout must lie in \[0, 1\)"):
        tiny_lm_folder(tmp_path / "m", dropout=1.5)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        tiny_lm_folder(tmp_path / "m", seed=-1)


@pytest.mark.parametrize(("fields", "error", "match"), [
    ({"labels": Path("edge.qrels")}, TypeError, "labels must be a list of str"),
    ({"labels": "ABC"}, TypeError, "labels must be a list of str"),
    ({"labels": ("A", 1)}, TypeError, "labels must be a list of str"),
    ({"line": np.nan}, TypeError, "line must be a str"),
    ({"instruction": 3}, TypeError, "instruction must be a str"),
])
def test_listwise_format_checks_each_field(fields, error, match):
    with pytest.raises(error, match=match):
        ListwiseFormat(**fields)


@pytest.mark.parametrize(("cls", "params", "error", "match"), [
    (PromptEnsembleRanker, {"instructions": 0.5}, TypeError, "instructions must be a list of str"),
    (PromptEnsembleRanker, {"instructions": "one wording"}, TypeError, "instructions must be a list of str"),
    (PromptEnsembleRanker, {"instructions": []}, ValueError, "instructions must be at least two non-empty wordings"),
    (LLMLaplaceRanker, {"prior_precision": np.zeros(6)}, TypeError, "prior_precision"),
    (LLMRanker, {"answers": Path("read-only")}, TypeError, "answers must be a list of answer words"),
])
def test_the_rankers_check_their_own_parameters_first(cls, params, error, match):
    with pytest.raises(error, match=match):
        cls(**params)


def test_prompt_format_names_a_dict_without_its_template():
    from uncertank_llm import prompt_format

    with pytest.raises(ValueError, match="template, a dict of PromptFormat's fields, must hold the key 'template'"):
        prompt_format({})
    with pytest.raises(ValueError, match="must hold the key 'template'"):
        prompt_format({"yes": "true", "no": "false"})
