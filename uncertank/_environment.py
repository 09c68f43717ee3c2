"""What a result depends on beyond its inputs: the library versions and the machine's floating-point kernels.

One epoch of fine-tuning on a CPU is deterministic on one machine, but the
kernels torch picks for the CPU's instruction set (AVX2, AVX-512, ...) and
the thread count change the arithmetic in the last digits, and a training
run carries that to another model (docs/study.md, "Reproduce"). A saved
model's training history and a study's ``results.json`` record this, so that
two runs that disagree can be told apart by their machines.
"""

from __future__ import annotations

import platform
import sys

__all__ = ["environment"]


def environment() -> dict[str, object]:
    """The versions and the machine this process computes with, as JSON values.

    Always: uncertank, Python, numpy, the platform and the processor. When
    torch is loaded (it is not imported here): its version, the CPU kernels
    it dispatches to (``torch.backends.cpu.get_cpu_capability()``), its
    thread count, and the CUDA device when one is visible.

    >>> env = environment()
    >>> sorted(k for k in env if not k.startswith("torch"))
    ['numpy', 'platform', 'processor', 'python', 'uncertank']
    """
    import numpy as np

    from uncertank import __version__

    out: dict[str, object] = {
        "uncertank": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch"] = str(torch.__version__)
        out["torch cpu capability"] = str(torch.backends.cpu.get_cpu_capability())
        out["torch threads"] = int(torch.get_num_threads())
        if torch.cuda.is_available():
            out["torch cuda device"] = str(torch.cuda.get_device_name())
    return out
