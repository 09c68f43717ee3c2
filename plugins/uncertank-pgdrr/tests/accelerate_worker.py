"""Run under `accelerate launch --multi_gpu --num_processes 2` (gloo on the CPU).

``fit``: trains a tiny PG-DRR ranker and writes each process's memory bank and
omega; ``predict``: loads a checkpoint and writes the predictions and joint draws.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def main() -> None:
    import torch
    from accelerate import PartialState
    from uncertank_pgdrr import PGDRRRanker

    from uncertank.nn.testing import tiny_config, toy_queries

    mode, out = sys.argv[1], Path(sys.argv[2])
    torch.set_num_threads(1)
    if mode == "fit":
        ranker = PGDRRRanker(tiny_config(), max_length=32, epochs=1, batch_size=4, lr=3e-3, bank_size=16,
                             n_chains=4, n_bank_steps=5, device="cpu", show_progress=False)
        ranker.fit(toy_queries())
        head = ranker.head()
        state = PartialState()  # after the ranker's Accelerator joined the process group
        np.savez(out / f"bank{state.process_index}.npz", x=head.bank_features.numpy(), omega=head.omega.numpy(),
                 scores=ranker.predict(toy_queries()).scores)
    else:
        ranker = PGDRRRanker.load(out / "ck", device="cpu", eval_batch_size=16, show_progress=False)
        q = toy_queries()
        scores, samples = ranker.predict(q).scores, ranker.predict_samples(q).samples
        state = PartialState()
        np.savez(out / f"pred{state.process_index}.npz", scores=scores, samples=samples)


if __name__ == "__main__":
    main()
