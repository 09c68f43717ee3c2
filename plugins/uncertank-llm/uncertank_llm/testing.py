"""Tiny random language models for tests: a byte-level BPE tokenizer and Llama, Qwen3 and T5 folders.

Built offline in about a second; the plugin's tests use them, and so can a
third party's tests of a prompt format or an uncertainty method.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["ARCHITECTURES", "tiny_lm_folder", "tiny_tokenizer"]

#: The tiny architectures :func:`tiny_lm_folder` builds.
ARCHITECTURES = ("llama", "qwen3", "t5")

_CORPUS = (
    "how do I mount a usb drive? use the mount command. my wifi is down after the update, reboot the router. "
    "which python version is installed? run python --version. the sound card has no audio since the kernel update. "
    "Query Document Relevant Instruct Judge whether the Document meets the requirements based on the Query "
    "Given a web search query, retrieve relevant passages that answer the query. assistant user system think"
)


def tiny_tokenizer() -> Any:
    """A byte-level BPE tokenizer (about 500 tokens) with ChatML's special tokens and one-token answer words.

    ``yes``, ``no``, ``true``, ``false`` (and the same with a leading space)
    are one token each; ``<pad>`` pads, ``</s>`` ends a sequence.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500, special_tokens=["<pad>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train_from_iterator([_CORPUS] * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    fast.add_tokens(["yes", "no", "true", "false", " yes", " no", " true", " false"])
    return fast


def tiny_lm_folder(folder: str | os.PathLike[str], architecture: str = "llama", *, seed: int = 0,
                   dropout: float = 0.0) -> Path:
    """Save a random 2-layer language model of ``architecture`` and :func:`tiny_tokenizer` to ``folder``.

    Parameters
    ----------
    folder : str or path
    architecture : {"llama", "qwen3", "t5"}
        ``LlamaForCausalLM``, ``Qwen3ForCausalLM`` (hidden 32, 4 heads, 2 key-value heads) or
        ``T5ForConditionalGeneration`` (d_model 32).
    seed : int
        Seeds the weights.
    dropout : float
        The attention dropout (causal) or dropout rate (T5).

    Returns
    -------
    Path
        ``folder``.

    Raises
    ------
    TypeError
        When ``folder`` is not a path or ``seed`` not an int.
    ValueError
        For an unknown ``architecture``, a ``seed`` < 0, a ``dropout`` outside
        [0, 1), or a ``folder`` that is a file.
    OSError
        When ``folder`` cannot be written (the message names it).
    """
    from uncertank.validation import check_choice, check_path, check_positive_int, check_unit_interval

    path = check_path(folder, "folder")
    architecture = check_choice(architecture, "architecture", ARCHITECTURES)
    seed = check_positive_int(seed, "seed", minimum=0)
    dropout = check_unit_interval(dropout, "dropout", closed="left")
    if path.exists() and not path.is_dir():
        raise ValueError(f"folder must be a folder to write the model into (or a path to create one); got the "
                         f"file {str(path)!r}")
    import torch
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        Qwen3Config,
        Qwen3ForCausalLM,
        T5Config,
        T5ForConditionalGeneration,
    )

    tok = tiny_tokenizer()
    vocab = len(tok)
    torch.manual_seed(seed)
    model: Any
    if architecture == "t5":
        model = T5ForConditionalGeneration(T5Config(  # type: ignore[call-arg]
            vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, dropout_rate=dropout,
            decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        ))
    else:
        common = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      attention_dropout=dropout, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        if architecture == "llama":
            model = LlamaForCausalLM(LlamaConfig(**common))
        else:
            model = Qwen3ForCausalLM(Qwen3Config(head_dim=8, **common))
    try:
        model.save_pretrained(str(path))
        tok.save_pretrained(str(path))
    except OSError as exc:
        raise OSError(f"folder {str(path)!r} cannot be written: {exc.strerror or exc}") from exc
    return path
