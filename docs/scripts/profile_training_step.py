"""CPU seconds per training step of the MiniLM cross-encoder, by phase (docs/experiments.md).

Usage::

    python docs/scripts/profile_training_step.py --layers 2 [--freeze-embeddings] [--batch-size 16]

Times, with ``resource.getrusage`` (CPU seconds of this process, so other
jobs on the machine inflate them less than wall time), the forward pass,
the backward pass and the AdamW step (with gradient clipping) of one
training step, and one eval-mode forward pass, on random token ids of
``--max-length`` tokens; the first two steps are warm-up and not counted.
"""

from __future__ import annotations

import argparse
import os
import resource
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--freeze-embeddings", action="store_true")
    args = ap.parse_args()

    import torch

    from uncertank.datasets import packaged_model_path
    from uncertank.nn import CrossEncoderModel, build_backbone

    torch.manual_seed(0)
    encoder, _ = build_backbone(packaged_model_path(), None, num_hidden_layers=args.layers)
    model = CrossEncoderModel(encoder)
    if args.freeze_embeddings:
        embeddings: Any = model.encoder.embeddings
        for p in embeddings.parameters():
            p.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    b, n = args.batch_size, args.max_length
    batch = {"input_ids": torch.randint(1000, 30000, (b, n)), "attention_mask": torch.ones(b, n, dtype=torch.long),
             "token_type_ids": torch.zeros(b, n, dtype=torch.long)}
    y = torch.randint(0, 2, (b,))
    cost = {"forward": 0.0, "backward": 0.0, "adamw": 0.0, "eval forward": 0.0}
    model.train()
    for i in range(args.steps + 2):
        c0 = _cpu()
        loss = torch.nn.functional.cross_entropy(model(**batch).float(), y)
        c1 = _cpu()
        loss.backward()
        c2 = _cpu()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        c3 = _cpu()
        if i >= 2:
            cost["forward"] += c1 - c0
            cost["backward"] += c2 - c1
            cost["adamw"] += c3 - c2
    model.eval()
    with torch.no_grad():
        for i in range(args.steps + 2):
            c0 = _cpu()
            model(**batch)
            if i >= 2:
                cost["eval forward"] += _cpu() - c0
    print(f"layers {args.layers}, batch {b}, {n} tokens, embeddings {'frozen' if args.freeze_embeddings else 'trained'}"
          f", load average {os.getloadavg()[0]:.1f}")
    for phase, seconds in cost.items():
        print(f"  {phase:13s} {seconds / args.steps:.3f} CPU s per step")


if __name__ == "__main__":
    main()
