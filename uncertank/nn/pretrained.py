"""A user's own trained cross-encoder, as it is: a Hugging Face or sentence-transformers folder.

A local folder holding ``AutoModelForSequenceClassification`` weights (BERT,
RoBERTa/XLM-R, ELECTRA, DistilBERT, ... classifiers, or a folder saved by
sentence-transformers' ``CrossEncoder``) becomes the network of a
:class:`~uncertank.nn.NeuralRanker` with its own classification head:

- :func:`read_classifier` loads the model and its tokenizer offline and
  decides how its logits become P(relevant) (:func:`classifier_activation`);
- :class:`PretrainedCrossEncoder` is the network (the classifier, its
  ``encoder`` the classifier's base model, which a post-hoc head reuses);
- :class:`PairFormat` and :func:`encode_text_pairs` turn (context, response)
  pairs into the token sequences the model was trained on, with its own
  tokenizer (no ``[U]``/``[T]`` tokens are added to a user's vocabulary).

Nothing is downloaded: every folder is read with ``local_files_only=True``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from uncertank.nn.inputs import EncodedPairs, check_pairs
from uncertank.validation import (
    check_bool,
    check_choice,
    check_instance,
    check_path,
    check_positive_int,
    check_tokenizer,
)

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "ACTIVATIONS",
    "PairFormat",
    "PretrainedCrossEncoder",
    "classifier_activation",
    "encode_text_pairs",
    "read_classifier",
    "recorded_pair_format",
]

#: How a classifier's logits become P(relevant): ``"sigmoid"`` of one logit, ``"softmax"`` of two (column 1).
ACTIVATIONS = ("sigmoid", "softmax")

_TRUNCATION_SIDES = ("left", "right")
_TRUNCATIONS = ("longest_first", "only_first", "only_second")
# sentence-transformers' recorded activation (a dotted class path) -> ours
_ST_ACTIVATIONS = {"Sigmoid": "sigmoid", "Identity": "sigmoid", "Softmax": "softmax"}


@dataclass(frozen=True)
class PairFormat:
    r"""How a (context, response) pair becomes the two texts a pretrained cross-encoder reads.

    The default is what sentence-transformers' ``CrossEncoder`` and
    Hugging Face's text-pair classifiers do: the query (here the context)
    first, the response second, one call of the model's tokenizer on the two
    texts with its special tokens (``[CLS] a [SEP] b [SEP]`` for BERT,
    ``<s> a </s></s> b </s>`` for RoBERTa), truncated ``longest_first`` on the
    side the tokenizer was saved with. Change it to match how *your* model
    was trained.

    Parameters
    ----------
    context_first : bool
        The context is the first text (True) or the second.
    turn_separator : str
        Joins the context's turns (and the utterances inside a turn) into one
        text; a space by default. Use e.g. ``" [SEP] "`` if the model was
        trained so.
    max_turns : int, optional
        Keep only the newest ``max_turns`` turns; all by default.
    truncation : {"longest_first", "only_first", "only_second"}
        The tokenizer's truncation strategy when a pair exceeds ``max_length``.
    truncation_side : {"left", "right"}, optional
        Which end of a text is cut; the tokenizer's own (as saved) by default.
        ``"left"`` keeps the newest part of a long context.
    turn_markers : bool
        Read pairs as uncertank's own cross-encoders are trained
        (:func:`uncertank.nn.encode_pairs`): each utterance followed by
        ``[U]`` and each turn by ``[T]`` (Penha & Hauff's markers), whole
        turns dropped from the oldest when a pair is too long. The tokenizer
        must know ``[U]`` and ``[T]``; the other fields keep their defaults.
        A folder written by :meth:`uncertank.nn.NeuralRanker.save_pretrained`
        records it, and :func:`from_pretrained` reads it from there.

    Examples
    --------
    >>> PairFormat().texts([["hi there", "my wifi\nis down"]], ["reboot"], np.array([0]))
    (['hi there my wifi is down'], ['reboot'])
    """

    context_first: bool = True
    turn_separator: str = " "
    max_turns: int | None = None
    truncation: str = "longest_first"
    truncation_side: str | None = None
    turn_markers: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.context_first, bool):
            raise TypeError(f"context_first must be a bool; got {type(self.context_first).__name__}")
        if not isinstance(self.turn_separator, str):
            raise TypeError(f"turn_separator must be a str; got {type(self.turn_separator).__name__}")
        if self.max_turns is not None:
            check_positive_int(self.max_turns, "max_turns")
        check_choice(self.truncation, "truncation", _TRUNCATIONS)
        side = self.truncation_side
        if side is not None and (not isinstance(side, str) or side not in _TRUNCATION_SIDES):
            raise ValueError(f"truncation_side must be None, 'left' or 'right'; got {self.truncation_side!r}")
        if not isinstance(self.turn_markers, bool):
            raise TypeError(f"turn_markers must be a bool; got {type(self.turn_markers).__name__}")
        if self.turn_markers:
            changed = [
                f.name for f in fields(self)
                if f.name != "turn_markers" and getattr(self, f.name) != f.default
            ]
            if changed:
                raise ValueError(
                    f"turn_markers=True reads pairs as uncertank.nn.encode_pairs does; leave "
                    f"{', '.join(changed)} at the default(s)"
                )

    @classmethod
    def coerce(cls, value: object) -> PairFormat:
        """``value`` as a PairFormat: one already, None (the default) or a dict of its fields."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(cls.__dataclass_fields__))
            if unknown:
                raise ValueError(
                    f"pair_format has unknown key(s) {', '.join(map(repr, unknown))}; "
                    f"known: {', '.join(cls.__dataclass_fields__)}"
                )
            return cls(**value)
        raise TypeError(f"pair_format must be None, a PairFormat or a dict; got {type(value).__name__}")

    def to_dict(self) -> dict[str, object]:
        """The fields as JSON values (what a checkpoint stores)."""
        return asdict(self)

    def context_text(self, turns: Sequence[str]) -> str:
        """One context (its turns, oldest first) as one text."""
        kept = list(turns)[-self.max_turns :] if self.max_turns is not None else list(turns)
        parts = [u.strip() for t in kept for u in str(t).split("\n") if u.strip()]
        return self.turn_separator.join(parts)

    def texts(
        self, contexts: Sequence[Sequence[str]], candidates: Sequence[str], query_index: NDArray[np.int64]
    ) -> tuple[list[str], list[str]]:
        """The first and second texts of every pair (each context is joined once)."""
        joined = [self.context_text(c) for c in contexts]
        ctx = [joined[i] for i in np.asarray(query_index, dtype=np.int64).tolist()]
        resp = [str(c) for c in candidates]
        return (ctx, resp) if self.context_first else (resp, ctx)


def encode_text_pairs(
    tokenizer: PreTrainedTokenizerBase,
    contexts: Sequence[Sequence[str]],
    candidates: Sequence[str],
    query_index: NDArray[np.int64],
    *,
    max_length: int,
    pair_format: PairFormat | None = None,
) -> EncodedPairs:
    """Encode (context, candidate) pairs with the model's own tokenizer and pair format.

    One batched call of the (fast) tokenizer on all pairs; the sequences are
    stored ragged (:class:`~uncertank.nn.EncodedPairs`), so scoring pads each
    length-sorted batch once.

    Parameters
    ----------
    tokenizer : transformers tokenizer
        The model's own; it is not modified (its truncation side is set for
        the call only).
    contexts : sequence of n_queries sequences of str
    candidates : sequence of n_pairs str
    query_index : ndarray of shape (n_pairs,)
    max_length : int
        The longest sequence, special tokens included.
    pair_format : PairFormat, optional
        The default :class:`PairFormat` when omitted.

    Returns
    -------
    EncodedPairs
    """
    import itertools

    check_tokenizer(tokenizer)
    if pair_format is not None:
        check_instance(pair_format, "pair_format", PairFormat, "a PairFormat or None")
    fmt = pair_format or PairFormat()
    if fmt.turn_markers:
        from uncertank.nn.inputs import encode_pairs

        return encode_pairs(tokenizer, contexts, candidates, query_index, max_length=max_length)
    max_length = check_positive_int(max_length, "max_length", minimum=4)
    qidx = check_pairs(contexts, candidates, query_index)
    first, second = fmt.texts(contexts, candidates, qidx)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    offsets = np.zeros(len(first) + 1, dtype=np.int64)
    if not first:
        empty = np.zeros(0, dtype=np.int64)
        return EncodedPairs(empty, empty, offsets, int(pad))
    side = tokenizer.truncation_side
    if fmt.truncation_side is not None:
        tokenizer.truncation_side = fmt.truncation_side
    try:
        enc = tokenizer(
            first, second, truncation=fmt.truncation, max_length=max_length, padding=False,
            return_attention_mask=False, return_token_type_ids=True, verbose=False,
        )
    finally:
        tokenizer.truncation_side = side
    ids = enc["input_ids"]
    np.cumsum([len(s) for s in ids], out=offsets[1:])
    total = int(offsets[-1])
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64, count=total)
    types_in = enc.get("token_type_ids")
    if types_in is None:
        types = np.zeros(total, dtype=np.int64)
    else:
        types = np.fromiter(itertools.chain.from_iterable(types_in), dtype=np.int64, count=total)
    return EncodedPairs(flat, types, offsets, int(pad))


def recorded_pair_format(folder: str | os.PathLike[str]) -> dict[str, object] | None:
    """The pair format a folder's ``config.json`` records (``uncertank_pair_format``), or None.

    :func:`uncertank.nn.save_pretrained` records it; a folder from elsewhere has none.
    """
    check_path(folder, "folder")
    path = Path(folder) / "config.json"
    if not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            value = json.load(fh).get("uncertank_pair_format")
    except (OSError, ValueError):
        return None
    return dict(value) if isinstance(value, dict) else None


def _sentence_transformers_activation(folder: Path, config: object) -> str | None:
    """The activation a sentence-transformers ``CrossEncoder`` folder records, as a dotted path, or None."""
    st_file = folder / "config_sentence_transformers.json"
    if st_file.is_file():  # sentence-transformers >= 5
        with open(st_file, encoding="utf-8") as fh:
            value = json.load(fh).get("activation_fn")
        if value:
            return str(value)
    st = getattr(config, "sentence_transformers", None)  # 4.x: inside config.json
    if isinstance(st, dict) and st.get("activation_fn"):
        return str(st["activation_fn"])
    old = getattr(config, "sbert_ce_default_activation_function", None)  # < 4
    return str(old) if old else None


def classifier_activation(folder: str | os.PathLike[str], config: PretrainedConfig, activation: str = "auto") -> str:
    """How the classifier in ``folder`` turns logits into P(relevant).

    ``"auto"`` reads it from the folder: the activation a sentence-transformers
    ``CrossEncoder`` recorded (``Sigmoid``, or ``Identity`` on one logit,
    whose sigmoid is then taken: P(relevant) must lie in [0, 1]; ``Softmax``),
    else the number of labels: one logit -> sigmoid, two -> softmax, column 1.

    Parameters
    ----------
    folder : str or path
    config : transformers.PretrainedConfig
        The classifier's config (``num_labels``).
    activation : {"auto", "sigmoid", "softmax"}

    Returns
    -------
    {"sigmoid", "softmax"}

    Raises
    ------
    ValueError
        When the classifier has more than two labels, or ``activation`` does
        not fit its number of logits.
    """
    check_path(folder, "folder")
    check_choice(activation, "activation", ("auto", *ACTIVATIONS))
    n = int(getattr(config, "num_labels", 2))
    if n not in (1, 2):
        raise ValueError(
            f"pretrained must be a classifier with one logit (P = sigmoid) or two (P = softmax[:, 1]); "
            f"{str(folder)!r} has num_labels={n}"
        )
    if activation == "auto":
        recorded = _sentence_transformers_activation(Path(folder), config)
        if recorded is not None:
            short = recorded.rsplit(".", 1)[-1]
            if short not in _ST_ACTIVATIONS:
                raise ValueError(
                    f"pretrained folder {str(folder)!r} records the activation {recorded!r}; uncertank knows "
                    f"{', '.join(_ST_ACTIVATIONS)}: pass activation='sigmoid' or 'softmax'"
                )
            activation = _ST_ACTIVATIONS[short]
            if activation == "sigmoid" and n == 2:
                activation = "softmax"
        else:
            activation = "sigmoid" if n == 1 else "softmax"
    if activation == "softmax" and n != 2:
        raise ValueError(f"activation='softmax' needs two logits; {str(folder)!r} has num_labels={n}")
    return activation


class PretrainedCrossEncoder(nn.Module):
    """A Hugging Face sequence classifier as an uncertank network, its own head kept.

    ``forward`` returns the classifier's logits, shape (batch, 1) or
    (batch, 2), which :func:`uncertank.nn.output_probabilities` turns into
    P(relevant) (the sigmoid of one logit, the softmax of two). A classifier
    whose recorded activation is a softmax over one logit cannot be, and is
    refused by :func:`classifier_activation`.

    Parameters
    ----------
    classifier : transformers.PreTrainedModel
        An ``AutoModelForSequenceClassification`` model.
    activation : {"sigmoid", "softmax"}

    Attributes
    ----------
    encoder : transformers.PreTrainedModel
        The classifier's base model (``classifier.base_model``): what
        :func:`uncertank.nn.dropout_owners`, ``mc_layers`` and a post-hoc head
        see.
    head_trained : bool
        False when the folder's weights lacked parameters of the classifier
        (an encoder without a trained head, read for a post-hoc head only).
    """

    def __init__(self, classifier: PreTrainedModel, activation: str) -> None:
        super().__init__()
        check_instance(classifier, "classifier", nn.Module, "a transformers sequence classifier (a torch.nn.Module)")
        check_choice(activation, "activation", ACTIVATIONS)
        self.classifier = classifier
        self.activation = activation
        self.head_trained = True
        self._types = int(getattr(getattr(classifier, "config", None), "type_vocab_size", 0) or 0) > 1

    @property
    def encoder(self) -> nn.Module:
        """The classifier's base model."""
        return self.classifier.base_model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits of shape (batch, 1) (sigmoid) or (batch, 2) (softmax, column 1 is relevant)."""
        kwargs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and self._types:
            kwargs["token_type_ids"] = token_type_ids
        logits: torch.Tensor = self.classifier(**kwargs).logits
        if self.activation == "sigmoid" and logits.shape[-1] == 2:
            raise ValueError("activation 'sigmoid' needs one logit; the classifier returns two")
        return logits


#: Files of which a Hugging Face tokenizer folder holds at least one.
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "spiece.model",
    "sentencepiece.bpe.model", "tokenizer.model",
)


def read_classifier(
    folder: str | os.PathLike[str],
    *,
    weights: bool = True,
    tokenizer: str | os.PathLike[str] | PreTrainedTokenizerBase | None = None,
    activation: str = "auto",
    require_head: bool = True,
) -> tuple[PretrainedCrossEncoder, PreTrainedTokenizerBase]:
    """Load a local sequence-classification folder as a :class:`PretrainedCrossEncoder` and its tokenizer.

    Parameters
    ----------
    folder : str or path
        Holds ``config.json`` (an ``AutoModelForSequenceClassification``
        architecture), the weights and the tokenizer, as ``save_pretrained``
        or sentence-transformers' ``CrossEncoder.save`` write them.
    weights : bool
        Load the weights (True), or build the architecture from the config
        only (False: a checkpoint loads its own weights afterwards).
    tokenizer : None, str, path or tokenizer
        The folder's own tokenizer by default.
    activation : {"auto", "sigmoid", "softmax"}
        See :func:`classifier_activation`.
    require_head : bool
        With ``weights``, refuse a folder whose weights lack any of the
        classifier's parameters (its classification head, typically):
        transformers would initialise them at random, and the scores would
        be noise that changes at every load. False when only the encoder is
        used (a post-hoc head trained on it).

    Returns
    -------
    model : PretrainedCrossEncoder
        In eval mode.
    tokenizer : transformers tokenizer

    Raises
    ------
    ValueError
        When ``folder`` holds no ``config.json``, its architecture is not a
        sequence classifier, it has more than two labels, it holds no
        tokenizer files (and no ``tokenizer`` is given), or (with
        ``require_head``) its weights lack parameters of the classifier.
    """
    check_path(folder, "folder")
    weights = check_bool(weights, "weights")
    require_head = check_bool(require_head, "require_head")
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    from uncertank.nn.model import load_error, quiet_transformers

    path = Path(folder)
    if not (path / "config.json").is_file():
        raise ValueError(
            f"pretrained must be a local model folder holding config.json (models are never downloaded); "
            f"got {str(folder)!r}"
        )
    if tokenizer is None and not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise ValueError(
            f"pretrained folder {str(folder)!r} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
            "save the tokenizer beside the model (tokenizer.save_pretrained(folder)) or pass tokenizer="
        )
    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # transformers' OSError or ValueError for a config.json it cannot read
        raise load_error("pretrained", folder, exc) from exc
    archs = [str(a) for a in (getattr(config, "architectures", None) or [])]
    generative = [a for a in archs if a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration"))]
    if generative:
        raise ValueError(
            f"pretrained folder {str(folder)!r} holds a language model ({generative[0]}), not a sequence "
            "classifier: its relevance head is the LM head's rows for two answer words. Read it as a yes/no "
            f"reranker with a ranker for language models, e.g. from_pretrained({str(folder)!r}, \"llm\", "
            "template=\"qwen3-reranker\") with the plugin uncertank-llm (docs/llm.md)"
        )
    act = classifier_activation(path, config, activation)
    try:
        with quiet_transformers():
            if weights:
                classifier, info = AutoModelForSequenceClassification.from_pretrained(
                    str(path), local_files_only=True, output_loading_info=True
                )
            else:
                classifier, info = AutoModelForSequenceClassification.from_config(config), {}  # type: ignore[no-untyped-call]
    except ValueError as err:  # an architecture without a sequence-classification model
        raise ValueError(
            f"pretrained folder {str(folder)!r} ({config.model_type}) cannot be loaded as "
            f"AutoModelForSequenceClassification: {err}"
        ) from err
    except Exception as err:  # unreadable weights (safetensors has its own error type), or a shape mismatch
        detail = " ".join(str(err).split())
        raise ValueError(
            f"pretrained folder {str(folder)!r}: its weights could not be loaded into the network config.json "
            f"describes ({type(err).__name__}: {detail}); the weights file is corrupt or belongs to another "
            "configuration"
        ) from None
    missing = sorted(info.get("missing_keys") or ())
    if missing and require_head:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise ValueError(
            f"pretrained folder {str(folder)!r} has no trained weights for {shown}: they would be "
            "initialised at random and every score would be noise. It holds an encoder without a "
            "trained classification head (a sentence-embedding model, for example); train a head "
            f"on it first: NeuralRanker(backbone={str(folder)!r}).fit(train), or fit a post-hoc head on "
            f"its encoder with an installed ranker that brings its own (`uncertank plugins` lists them): "
            f"from_pretrained({str(folder)!r}, name).fit(train)"
        )
    if tokenizer is None or isinstance(tokenizer, (str, os.PathLike)):
        source = path if tokenizer is None else check_path(tokenizer, "tokenizer")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        except Exception as exc:  # transformers' OSError, ValueError or KeyError for a folder that is no tokenizer
            raise load_error("tokenizer" if source is not path else "pretrained", source, exc) from exc
    check_tokenizer(tokenizer)
    if getattr(tokenizer, "pad_token", None) is None:
        # Pairs are scored in padded batches. A decoder-style classifier (GPT-2) names its pad token in
        # config.json when it was fine-tuned with one; the tokenizer then takes it.
        pad_id = getattr(classifier.config, "pad_token_id", None)
        if pad_id is None:
            raise ValueError(
                f"pretrained folder {str(folder)!r}: its tokenizer has no padding token and its config.json no "
                "pad_token_id, so pairs cannot be scored in batches. Set one as the model was fine-tuned, e.g. "
                "tokenizer.pad_token = tokenizer.eos_token and model.config.pad_token_id = "
                "tokenizer.eos_token_id, and save both again"
            )
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(int(pad_id))
    classifier.eval()
    model = PretrainedCrossEncoder(classifier, act)
    model.head_trained = not missing
    return model, tokenizer


def default_max_length(model: PretrainedCrossEncoder, tokenizer: object, fallback: int = 512) -> int:
    """The longest pair the model reads: the tokenizer's ``model_max_length`` within the position embeddings.

    sentence-transformers records a ``CrossEncoder``'s ``max_length`` as the
    tokenizer's ``model_max_length``; a tokenizer without one (a huge
    sentinel) gets ``fallback``, and the model's ``max_position_embeddings``
    (less RoBERTa's two reserved positions) bounds both.
    """
    cfg = model.classifier.config
    limit = getattr(cfg, "max_position_embeddings", None)
    if limit is not None and getattr(cfg, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limit -= 2
    tok = getattr(tokenizer, "model_max_length", None)
    value = int(tok) if isinstance(tok, int) and 0 < tok < 100_000 else fallback
    return int(min(value, limit)) if limit is not None else value


def check_pretrained_args(
    pretrained: object, *, backbone: object, num_hidden_layers: object, activation: object
) -> None:
    """Raise unless ``pretrained`` is None or a local model folder given alone, and ``activation`` is known."""
    if pretrained is not None:
        if not isinstance(pretrained, (str, os.PathLike)):
            raise TypeError(f"pretrained must be a local model folder (a path); got {type(pretrained).__name__}")
        if not (Path(pretrained) / "config.json").is_file():
            raise ValueError(
                f"pretrained must be a local model folder holding config.json (models are never "
                f"downloaded); got {str(pretrained)!r}"
            )
        for other, value in (("backbone", backbone), ("num_hidden_layers", num_hidden_layers)):
            if value is not None:
                raise ValueError(f"give pretrained or {other}, not both (got {other}={value!r})")
    check_choice(activation, "activation", ("auto", *ACTIVATIONS))
