"""Run under `accelerate launch --multi_gpu --num_processes 2` (gloo on the CPU).

Scores the toy queries and writes what each process did.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main() -> None:
    from uncertank_bert import BertRanker

    from uncertank.nn.testing import toy_queries

    ckpt, out = Path(sys.argv[1]), Path(sys.argv[2])
    ranker = BertRanker.load(ckpt, device="cpu", eval_batch_size=16, show_progress=False)
    rows = []
    ranker.build_model().register_forward_hook(lambda mod, args, output: rows.append(int(output.shape[0])))
    scores = ranker.predict(toy_queries()).scores
    from accelerate import PartialState

    state = PartialState()
    (out / f"rank{state.process_index}.json").write_text(
        json.dumps({"world": state.num_processes, "rows": sum(rows)})
    )
    if state.is_main_process:
        np.save(out / "scores.npy", scores)


if __name__ == "__main__":
    main()
