"""Shared machinery of the neural (cross-encoder) rankers; needs the ``torch`` extra.

- :mod:`~uncertank.nn.inputs`: (context, response) pairs as token sequences,
  with the ``[U]``/``[T]`` separators and truncation from the oldest turn.
- :mod:`~uncertank.nn.model`: the backbone (the packaged all-MiniLM-L6-v2, any
  local folder, or a random config) and the cross-encoder head.
- :mod:`~uncertank.nn.training`: balanced pairs of the given candidates, AdamW
  with warm-up, clipping, validation per epoch, best epoch kept, a pluggable
  loss and an end-of-training hook; under Hugging Face Accelerate.
- :mod:`~uncertank.nn.inference`: batched scoring for one model, T MC-dropout
  passes (every dropout site, attention included) or M ensemble members, and
  the length-sorted, sharded batch loop under them (:func:`score_batches`).
- :mod:`~uncertank.nn.dropout`: MC dropout's masks drawn and applied at about
  the cost of an evaluation pass (:func:`fast_mc_dropout`), the default of
  ``score_probabilities(mc=True)`` on the CPU.
- :mod:`~uncertank.nn.pretrained`: a user's trained Hugging Face or
  sentence-transformers classifier folder, its head kept, read in its own
  pair format (:func:`from_pretrained`); :mod:`~uncertank.nn.export` writes
  a fitted cross-encoder as such a folder (:func:`save_pretrained`).
- :mod:`~uncertank.nn.adapter`: any scoring function over a torch module as
  a stochastic ranker by MC dropout (:class:`TorchDropoutRanker`).
- :mod:`~uncertank.nn.checkpoint`: safetensors + JSON, written atomically.
- :mod:`~uncertank.nn.runtime`: seeding, ``device="auto"``, bf16 on CUDA, progress.
- :class:`NeuralRanker`: the base ranker the plugins build on (its public
  extension API is listed in :mod:`uncertank.nn.ranker`).
- :mod:`~uncertank.nn.sampling_ranker`: the ``predict_samples`` template of the
  rankers that draw joint samples (:class:`SamplingRanker`).

Importing this package raises ImportError naming ``pip install "uncertank[torch]"``
when torch, transformers, accelerate, safetensors or tqdm is missing.
"""

from __future__ import annotations

from uncertank._optional import require_torch

require_torch()

from uncertank.nn.adapter import TorchDropoutRanker  # noqa: E402
from uncertank.nn.checkpoint import (  # noqa: E402
    atomic_directory,
    load_model,
    read_manifest,
    save_model,
    write_manifest,
)
from uncertank.nn.dropout import DropoutMasks, fast_mc_dropout, fast_path_problem  # noqa: E402
from uncertank.nn.export import EXPORTABLE_ENCODERS, save_pretrained  # noqa: E402
from uncertank.nn.inference import (  # noqa: E402
    check_active_dropout,
    dropout_active,
    dropout_owners,
    dropout_rates,
    mc_implementation,
    mc_passes,
    model_device,
    output_probabilities,
    score_batches,
    score_probabilities,
)
from uncertank.nn.inputs import (  # noqa: E402
    TURN_TOKEN,
    UTTERANCE_TOKEN,
    EncodedPairs,
    add_separator_tokens,
    encode_pairs,
    encode_queries,
    turn_text,
)
from uncertank.nn.loading import from_pretrained, load_ranker  # noqa: E402
from uncertank.nn.model import (  # noqa: E402
    POOLINGS,
    CrossEncoderModel,
    build_backbone,
    check_pooling,
    default_backbone_path,
    head_dimensions,
    pool_encoder,
    quiet_transformers,
)
from uncertank.nn.pretrained import (  # noqa: E402
    ACTIVATIONS,
    PairFormat,
    PretrainedCrossEncoder,
    classifier_activation,
    encode_text_pairs,
    read_classifier,
)
from uncertank.nn.ranker import NeuralRanker, PostHocHeadWarning  # noqa: E402
from uncertank.nn.runtime import (  # noqa: E402
    autocast,
    get_accelerator,
    is_main_process,
    progress,
    resolve_device,
    seed_everything,
)
from uncertank.nn.sampling_ranker import SamplingRanker  # noqa: E402
from uncertank.nn.training import (  # noqa: E402
    TrainingConfig,
    TrainingHistory,
    average_precision,
    balanced_pairs,
    cross_entropy_loss,
    train_cross_encoder,
    training_pairs,
)

__all__ = [
    "ACTIVATIONS",
    "EXPORTABLE_ENCODERS",
    "POOLINGS",
    "TURN_TOKEN",
    "UTTERANCE_TOKEN",
    "CrossEncoderModel",
    "DropoutMasks",
    "EncodedPairs",
    "NeuralRanker",
    "PostHocHeadWarning",
    "PairFormat",
    "PretrainedCrossEncoder",
    "SamplingRanker",
    "TorchDropoutRanker",
    "TrainingConfig",
    "TrainingHistory",
    "add_separator_tokens",
    "atomic_directory",
    "autocast",
    "average_precision",
    "balanced_pairs",
    "build_backbone",
    "check_active_dropout",
    "check_pooling",
    "classifier_activation",
    "cross_entropy_loss",
    "default_backbone_path",
    "dropout_active",
    "dropout_owners",
    "dropout_rates",
    "encode_pairs",
    "encode_queries",
    "fast_mc_dropout",
    "fast_path_problem",
    "encode_text_pairs",
    "from_pretrained",
    "head_dimensions",
    "get_accelerator",
    "is_main_process",
    "load_model",
    "load_ranker",
    "mc_implementation",
    "mc_passes",
    "model_device",
    "output_probabilities",
    "pool_encoder",
    "progress",
    "quiet_transformers",
    "read_classifier",
    "save_pretrained",
    "read_manifest",
    "resolve_device",
    "save_model",
    "score_batches",
    "score_probabilities",
    "seed_everything",
    "train_cross_encoder",
    "training_pairs",
    "turn_text",
    "write_manifest",
]
