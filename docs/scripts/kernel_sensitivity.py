"""How the CPU's floating-point kernels move one training run of the real run's ``bert`` (docs/study.md, "Reproduce").

    python docs/scripts/kernel_sensitivity.py            # writes docs/results/kernel_sensitivity.json

Runs the first ``--steps`` training steps of ``docs/studies/real_run.toml``'s
``bert`` recipe (the Ubuntu sample's 9,539 training queries, balanced pairs
from their BM25 candidates, all-MiniLM-L6-v2 with ``[CLS]`` pooling, 64
tokens, batch 16, lr 1e-4, seed 0) once per setting, each in a fresh
process: as the machine gives it, with torch, MKL and oneDNN held to AVX2
kernels, and on one thread. It records each step's training loss and their
mean over the first ten, the number a model's training history keeps. The
data, the pairs, their order and the initial weights are the same in every
setting, so a difference is the arithmetic's alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: setting -> the environment variables it sets (read by torch, MKL and oneDNN when they load)
SETTINGS: dict[str, dict[str, str]] = {
    "as the machine gives it": {},
    "AVX2 kernels": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "one thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
}


class _Stop(Exception):
    pass


def first_steps(n_steps: int) -> dict[str, Any]:
    """Train the recipe for ``n_steps`` optimiser steps in this process; the losses and the kernels used."""
    import numpy as np
    import torch

    import uncertank
    from uncertank.datasets import load

    train = load("ubuntu-sample", split="train", negatives="bm25", n_candidates=10, seed=0)
    losses: list[float] = []
    backward, step = torch.Tensor.backward, torch.optim.AdamW.step

    def recording_backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        losses.append(float(self.detach()))
        return backward(self, *args, **kwargs)

    def counting_step(self: torch.optim.AdamW, *args: Any, **kwargs: Any) -> Any:
        out = step(self, *args, **kwargs)
        if len(losses) >= n_steps:
            raise _Stop
        return out

    torch.Tensor.backward = recording_backward  # type: ignore[method-assign]
    torch.optim.AdamW.step = counting_step  # type: ignore[method-assign,assignment]
    from uncertank.nn import NeuralRanker

    ranker = uncertank.make_ranker("bert", pooling="cls", max_length=64, batch_size=16, lr=1e-4, epochs=1, seed=0,
                                   show_progress=False)
    assert isinstance(ranker, NeuralRanker)  # the bert plugin's ranker is one
    try:
        ranker.fit(train)
    except _Stop:
        pass
    finally:
        torch.Tensor.backward, torch.optim.AdamW.step = backward, step  # type: ignore[method-assign]
    return {
        "losses": losses,
        "mean loss first 10": float(np.mean(losses[:10])),
        "torch cpu capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10, help="optimiser steps per setting (at least 10)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "kernel_sensitivity.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.steps < 10:
        raise SystemExit(f"--steps: expected at least 10 (a history keeps the mean of the first ten); got {args.steps}")
    if args.worker:
        print(json.dumps(first_steps(args.steps)))
        return
    from uncertank.files import atomic_write_text

    runs: dict[str, Any] = {}
    for name, env in SETTINGS.items():
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", "--steps", str(args.steps)],
            env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"the run '{name}' failed:\n{proc.stderr[-2000:]}")
        runs[name] = {"environment": env, **json.loads(proc.stdout.strip().splitlines()[-1])}
        print(f"{name}: mean loss of the first ten steps {runs[name]['mean loss first 10']!r}")
    payload = {"command": "python docs/scripts/kernel_sensitivity.py" + (f" --steps {args.steps}" if args.steps != 10
                                                                          else ""),
               "steps": args.steps, "runs": runs}
    atomic_write_text(args.out, json.dumps(payload, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
