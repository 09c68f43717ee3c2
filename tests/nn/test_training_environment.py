"""A trained model records the versions and CPU kernels that trained it, and keeps the record through a checkpoint."""

from __future__ import annotations

import json

import torch

from uncertank.nn import NeuralRanker
from uncertank.nn.testing import tiny_config


def test_training_records_the_machine_and_a_checkpoint_keeps_it(tmp_path, queries):
    ranker = NeuralRanker(tiny_config(), max_length=32, epochs=1, batch_size=8, lr=3e-3, show_progress=False)
    ranker.fit(queries)
    env = ranker.history_.environment
    assert env["torch"] == str(torch.__version__)
    assert env["torch cpu capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["torch threads"] == torch.get_num_threads()
    assert {"uncertank", "python", "numpy", "platform", "processor"} <= set(env)

    ranker.save(tmp_path / "ck")
    manifest = json.loads((tmp_path / "ck" / "uncertank.json").read_text())
    assert manifest["history"]["environment"] == env
    assert NeuralRanker.load(tmp_path / "ck").history_.environment == env

    # a checkpoint saved before the record existed loads with an empty one
    del manifest["history"]["environment"]
    (tmp_path / "ck" / "uncertank.json").write_text(json.dumps(manifest))
    old = NeuralRanker.load(tmp_path / "ck")
    assert old.history_.environment == {} and old.history_.loss == ranker.history_.loss
