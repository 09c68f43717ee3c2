"""Seeding, device selection, Accelerate set-up and progress bars."""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import torch

from uncertank.validation import check_bool, check_instance, check_name, check_positive_int

if TYPE_CHECKING:
    from accelerate import Accelerator
    from tqdm import tqdm

    from uncertank.progress import Tracker

__all__ = [
    "autocast",
    "get_accelerator",
    "is_main_process",
    "progress",
    "resolve_device",
    "seed_everything",
]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (all devices).

    Parameters
    ----------
    seed : int
        A non-negative integer.
    """
    seed = check_positive_int(seed, "seed", minimum=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 - seeding the legacy global generator is the point
    torch.manual_seed(seed)


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Turn ``device`` into a :class:`torch.device`.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` picks CUDA when present, else the CPU; otherwise any
        device torch accepts (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``).
    """
    if isinstance(device, torch.device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device must be a str or torch.device; got {type(device).__name__}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(
            f"device must be 'auto' or a torch device string such as 'cpu' or 'cuda:0'; got {device!r} ({exc})"
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was requested but CUDA is not available; use device='auto' or 'cpu'")
    return dev


def get_accelerator(device: str | torch.device = "auto") -> Accelerator:
    """An :class:`accelerate.Accelerator` for ``device``.

    Under ``torchrun`` (or ``accelerate launch`` with several GPUs) every
    process joins the process group: NCCL on CUDA, gloo on CPUs (``device``
    resolving to the CPU). bf16 mixed precision is used on CUDA only.

    accelerate's state is one per process, and it refuses a second
    configuration; in one process (not under ``torchrun``) a ranker on another
    device than the last one's, e.g. a model fitted on the GPU and then
    loaded with ``device="cpu"``, starts a fresh state instead.
    """
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    dev = resolve_device(device)
    cuda = dev.type == "cuda"
    mixed = "bf16" if cuda and torch.cuda.is_bf16_supported() else "no"
    try:
        return Accelerator(cpu=dev.type == "cpu", mixed_precision=mixed)
    except ValueError:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise
        AcceleratorState._reset_state(reset_partial_state=True)
        return Accelerator(cpu=dev.type == "cpu", mixed_precision=mixed)


def is_main_process() -> bool:
    """False in the processes of rank > 0 under ``torchrun`` or ``accelerate launch``."""
    return int(os.environ.get("RANK", "0")) == 0


def autocast(device: torch.device) -> contextlib.AbstractContextManager[None]:
    """bf16 autocast on CUDA; nothing elsewhere (CPU runs stay float32)."""
    check_instance(device, "device", torch.device, "a torch.device")
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


class _Progress:
    """A tqdm bar that also reports to :mod:`uncertank.progress` (a study's periodic log lines)."""

    def __init__(self, bar: tqdm[object], track: Tracker) -> None:
        self.bar, self.track = bar, track

    def set_postfix(self, **fields: object) -> None:
        self.bar.set_postfix(**fields)
        self.track.fields.update(fields)

    def update(self, n: int) -> None:
        self.bar.update(n)
        self.track.advance(n)


@contextlib.contextmanager
def progress(total: int, desc: str, *, enabled: bool = True, unit: str = "pairs") -> Iterator[_Progress]:
    """A tqdm bar (or a silent stand-in when ``enabled`` is False), reporting to :func:`uncertank.progress.tracker`.

    The bar shows on a terminal when ``enabled``; the tracker prints
    periodic lines whenever a reporter is installed
    (:func:`uncertank.progress.reporting`, as a study does), whatever
    ``enabled`` says.
    """
    from tqdm.auto import tqdm

    from uncertank.progress import tracker

    check_positive_int(total, "total", minimum=0)
    check_name(desc, "desc")
    check_bool(enabled, "enabled")
    check_name(unit, "unit")
    bar = tqdm(total=total, desc=desc, disable=not enabled, leave=False, dynamic_ncols=True)
    try:
        with tracker(desc, total=total, unit=unit) as track:
            yield _Progress(bar, track)
    finally:
        bar.close()
