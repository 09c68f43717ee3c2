"""A few seconds' probe of the machine's speed on the backbone: one small batch trained, one scored.

:func:`probe_backbone` builds the packaged all-MiniLM-L6-v2 with the
cross-encoder head, and times one batch of forward and backward passes (as
a training step, without the optimiser's update) and one forward-only
batch (as scoring), after one untimed warm-up of each. A study's plan
(:func:`uncertank.experiment.speed.probe_machine`) divides the medians by
the same probe's on the machine the rankers' rates were measured on, and
scales the rates by the quotient.
"""

from __future__ import annotations

import time

import torch

from uncertank.nn.model import CrossEncoderModel, build_backbone, quiet_transformers
from uncertank.nn.runtime import resolve_device
from uncertank.validation import check_positive_int

__all__ = ["PROBE_BATCH_SIZE", "PROBE_MAX_LENGTH", "probe_backbone"]

#: Pairs in the probe's batch (half the real run's training batch, to keep the probe to a few seconds).
PROBE_BATCH_SIZE = 8
#: Tokens per pair in the probe (half the real run's ``max_length``, for the same reason).
PROBE_MAX_LENGTH = 32


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def probe_backbone(*, repeats: int = 3, device: str | torch.device = "cpu", seed: int = 0,
                   max_seconds: float = 4.0) -> tuple[list[float], list[float]]:
    """Time the packaged backbone's training and scoring of one batch, ``repeats`` times each.

    The batch is :data:`PROBE_BATCH_SIZE` pairs of :data:`PROBE_MAX_LENGTH`
    random token ids (seeded; the cost does not depend on the tokens). One
    untimed warm-up precedes each kind. On the reference machine (two CPU
    cores, busy when measured) the whole probe, the backbone's loading
    included, took 3.2 s at best and up to a minute as the load grew
    (docs/results/probe_reference.json); on a slow or busy machine
    ``max_seconds`` stops the repeats early.

    Parameters
    ----------
    repeats : int
        Timed batches of each kind (>= 1).
    device : str or torch.device
        Where to run it (:func:`uncertank.nn.resolve_device`).
    seed : int
        Seeds the token ids and the head's initialisation.
    max_seconds : float
        No further repeat starts once the batches have taken this long
        (the backbone's loading not counted); each kind still gets its
        warm-up and one timed batch.

    Returns
    -------
    train : list of float, 1 to ``repeats`` values
        Seconds of each forward and backward pass of the batch.
    predict : list of float, 1 to ``repeats`` values
        Seconds of each forward-only pass of the batch (``torch.inference_mode``).
    """
    repeats = check_positive_int(repeats, "repeats")
    if not max_seconds > 0:
        raise ValueError(f"max_seconds must be > 0; got {max_seconds!r}")
    dev = resolve_device(device)
    torch.manual_seed(seed)
    with quiet_transformers():
        encoder, tokenizer = build_backbone(None)
    model = CrossEncoderModel(encoder).to(dev)
    generator = torch.Generator().manual_seed(seed)  # drawn on the CPU, the same ids on every device
    ids = torch.randint(1000, int(tokenizer.vocab_size), (PROBE_BATCH_SIZE, PROBE_MAX_LENGTH), generator=generator,
                        device="cpu")
    ids[:, 0] = int(tokenizer.cls_token_id)
    ids = ids.to(dev)
    mask = torch.ones_like(ids)
    labels = torch.arange(PROBE_BATCH_SIZE, device=dev) % 2

    def train_step() -> None:
        loss = torch.nn.functional.cross_entropy(model(ids, mask), labels)
        loss.backward()  # type: ignore[no-untyped-call]
        model.zero_grad(set_to_none=True)

    def predict_step() -> None:
        with torch.inference_mode():
            model(ids, mask)

    times: dict[str, list[float]] = {"train": [], "predict": []}
    start = time.perf_counter()
    for kind, step in (("train", train_step), ("predict", predict_step)):
        model.train(kind == "train")
        for i in range(repeats + 1):
            if i > 1 and time.perf_counter() - start > max_seconds:
                break
            _synchronize(dev)
            t0 = time.perf_counter()
            step()
            _synchronize(dev)
            if i:  # the first is the warm-up
                times[kind].append(time.perf_counter() - t0)
    return times["train"], times["predict"]
