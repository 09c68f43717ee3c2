"""The base class of the neural rankers: fit, predict, save, load.

:class:`NeuralRanker` is a complete deterministic cross-encoder ranker; the
plugins ``uncertank-bert``, ``uncertank-mcdropout`` and ``uncertank-ensemble``
build on it, and so can a third party's (see the user guide, "Write your own
neural ranker plugin").
"""

from __future__ import annotations

import importlib
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from typing_extensions import Self

from uncertank._types import Predictions, QuerySet
from uncertank.nn.checkpoint import atomic_directory, load_model, read_manifest, save_model
from uncertank.nn.inference import score_probabilities
from uncertank.nn.inputs import encode_queries
from uncertank.nn.model import CrossEncoderModel, build_backbone
from uncertank.nn.runtime import get_accelerator, is_main_process, resolve_device, seed_everything
from uncertank.nn.training import TrainingConfig, TrainingHistory, train_cross_encoder

__all__ = ["NeuralRanker", "load_ranker"]

_TRAIN_PARAMS = (
    "max_length", "epochs", "batch_size", "lr", "seed", "warmup_ratio", "weight_decay",
    "max_grad_norm", "eval_batch_size", "negatives", "show_progress",
)


class NeuralRanker:
    """A pointwise cross-encoder ranker (Penha & Hauff, EACL 2021, section 3.1).

    ``[CLS]`` -> feed-forward -> two logits -> softmax gives P(relevant);
    trained with cross-entropy on balanced pairs (:mod:`uncertank.nn.training`).

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        ``None``: the packaged all-MiniLM-L6-v2 (found offline); a local model
        folder; or a config for a randomly initialised encoder (tests,
        benchmarks).
    tokenizer : None, str, path or tokenizer
        Defaults to the backbone's own (the packaged MiniLM's for a config).
    num_hidden_layers : int, optional
        Keep only the backbone's first layers (a cheaper encoder for quick
        runs); all by default.
    max_length : int
        Tokens per (context, response) pair.
    epochs, batch_size, lr, seed
        Training length, pairs per step, peak AdamW rate, random seed.
    device : str
        ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda:0"``, ...
    negatives : str or sampler factory
        Where the training negatives come from (see
        :class:`~uncertank.nn.TrainingConfig`); ``"bm25"`` by default.
    warmup_ratio, weight_decay, max_grad_norm, eval_batch_size, show_progress
        See :class:`~uncertank.nn.TrainingConfig`.
    name : str, optional
        Report name; the class's ``name`` by default.

    Attributes
    ----------
    history_ : TrainingHistory or None
        Set by :meth:`fit`.
    """

    name = "cross-encoder"

    def __init__(
        self,
        backbone: Any = None,
        *,
        tokenizer: Any = None,
        num_hidden_layers: int | None = None,
        max_length: int = 128,
        epochs: int = 1,
        batch_size: int = 16,
        lr: float = 2e-5,
        seed: int = 0,
        device: str = "auto",
        negatives: Any = "bm25",
        warmup_ratio: float = 0.1,
        weight_decay: float = 0.01,
        max_grad_norm: float = 1.0,
        eval_batch_size: int = 64,
        show_progress: bool = True,
        name: str | None = None,
    ) -> None:
        self.training_config = TrainingConfig(
            max_length=max_length, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed,
            warmup_ratio=warmup_ratio, weight_decay=weight_decay, max_grad_norm=max_grad_norm,
            eval_batch_size=eval_batch_size, negatives=negatives, show_progress=show_progress,
        )
        self.device = device
        resolve_device(device)  # fail early on a bad device string
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.num_hidden_layers = num_hidden_layers
        if name is not None:
            self.name = name
        self.model: CrossEncoderModel | None = None
        self.history_: TrainingHistory | None = None

    # -- building ---------------------------------------------------------------

    def _build(self) -> CrossEncoderModel:
        if self.model is None:
            seed_everything(self.training_config.seed)
            encoder, tok = build_backbone(self.backbone, self.tokenizer, num_hidden_layers=self.num_hidden_layers)
            limit = getattr(encoder.config, "max_position_embeddings", None)
            if limit is not None and self.training_config.max_length > limit:
                raise ValueError(
                    f"max_length must be <= the backbone's max_position_embeddings ({limit}); "
                    f"got {self.training_config.max_length}"
                )
            self.tokenizer = tok
            self.model = CrossEncoderModel(encoder)
        return self.model

    def _params(self) -> dict[str, Any]:
        params = {k: getattr(self.training_config, k) for k in _TRAIN_PARAMS}
        if not isinstance(params["negatives"], str):
            params["negatives"] = "bm25"  # a sampler object cannot be stored
        params["device"] = self.device
        params["name"] = self.name
        return params

    # -- Ranker API -------------------------------------------------------------

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Fine-tune on ``train``; with ``valid``, keep the epoch of best validation MAP.

        Parameters
        ----------
        train : QuerySet
            Labelled training queries.
        valid : QuerySet, optional
            Labelled validation queries.

        Returns
        -------
        self
        """
        model = self._build()
        self.history_ = train_cross_encoder(
            model, self.tokenizer, train, valid,
            config=self.training_config, accelerator=get_accelerator(self.device),
        )
        return self

    def _check_queries(self, queries: Any) -> QuerySet:
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        return queries

    def _score(
        self, queries: QuerySet, *, n_passes: int = 1, mc: bool = False, seed: int | None = None
    ) -> NDArray[np.float64]:
        """Probabilities of shape (n_passes, n_pairs)."""
        model = self._build()
        enc = encode_queries(self.tokenizer, queries, max_length=self.training_config.max_length)
        return score_probabilities(
            [model], enc, n_passes=n_passes, mc=mc, batch_size=self.training_config.eval_batch_size,
            accelerator=get_accelerator(self.device), seed=seed,
            show_progress=self.training_config.show_progress, desc=f"{self.name}",
        )

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) of every pair, shape (n_pairs,), with dropout off.

        Before :meth:`fit` the head is randomly initialised.
        """
        queries = self._check_queries(queries)
        probs = self._score(queries)[0]
        return Predictions(probs, queries.offsets, ranker=self.name)

    # -- persistence ------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the ranker into the folder ``path`` (replaced atomically).

        Under several processes only the process of rank 0 writes.
        """
        model = self._build()
        if not is_main_process():
            return
        with atomic_directory(path) as tmp:
            self._save_into(tmp, model)

    def _save_into(self, folder: Path, model: CrossEncoderModel) -> None:
        manifest = {
            "class": f"{type(self).__module__}:{type(self).__qualname__}",
            "params": self._params(),
            "extra": self._extra_params(),
            "history": None if self.history_ is None else asdict(self.history_),
        }
        save_model(folder, model, self.tokenizer, manifest)

    def _extra_params(self) -> dict[str, Any]:
        return {}

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Self:
        """Rebuild a ranker written by :meth:`save`; predictions are bit-identical.

        Parameters
        ----------
        path : str or path
            The checkpoint folder.
        **overrides
            Parameters to change (``device``, ``eval_batch_size``, ``n_passes``...).
            A checkpoint of a plain cross-encoder loads into any subclass, so a
            fine-tuned ``bert`` becomes an ``mc_dropout`` ranker with
            ``MCDropoutRanker.load(path)``.
        """
        manifest = read_manifest(path)
        params = dict(manifest["params"])
        params.pop("name", None)
        extra = {k: v for k, v in manifest.get("extra", {}).items() if _accepts(cls, k)}
        ranker = cls(**{**params, **extra, **overrides})
        ranker.model, ranker.tokenizer = load_model(path)  # type: ignore[assignment]
        if manifest.get("history") is not None:
            ranker.history_ = TrainingHistory(**manifest["history"])
        return ranker

    def __repr__(self) -> str:
        state = "fitted" if self.history_ is not None else "unfitted"
        return f"{type(self).__name__}(name={self.name!r}, {state})"


def _accepts(cls: type, name: str) -> bool:
    import inspect

    return name in inspect.signature(cls).parameters


def load_ranker(path: str | os.PathLike[str], **overrides: Any) -> Any:
    """Load any checkpoint with the class recorded in it."""
    manifest = read_manifest(path)
    module, _, qualname = str(manifest["class"]).partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj.load(path, **overrides)
