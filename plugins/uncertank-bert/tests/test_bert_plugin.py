from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from uncertank_bert import BertRanker

import uncertank
from uncertank.nn.testing import tiny_config, toy_queries


def test_registered_through_the_entry_point():
    infos = {i.name: i for i in uncertank.list_plugins("rankers")}
    assert infos["bert"].distribution == "uncertank-bert"
    ranker = uncertank.make_ranker("bert", backbone=tiny_config(), show_progress=False)
    assert isinstance(ranker, BertRanker) and ranker.name == "bert"
    assert isinstance(ranker, uncertank.TrainableRanker)


def test_fit_predict_probabilities():
    queries = toy_queries()
    ranker = BertRanker(tiny_config(), max_length=32, epochs=2, batch_size=4, lr=3e-3,
                        show_progress=False).fit(queries)
    scores = ranker.predict(queries).scores
    assert scores.shape == (100,) and ((scores >= 0) & (scores <= 1)).all()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_processes_score_like_one(tmp_path):
    queries = toy_queries()
    ranker = BertRanker(tiny_config(), max_length=32, epochs=1, batch_size=4, lr=3e-3,
                        eval_batch_size=16, show_progress=False).fit(queries)
    ranker.save(tmp_path / "ck")
    one = BertRanker.load(tmp_path / "ck", device="cpu").predict(queries).scores
    worker = Path(__file__).with_name("accelerate_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    # Accelerate's own launcher: `--multi_gpu` with no GPU present starts two processes that
    # join a gloo group on the CPU (`--cpu` alone would start one process unless MPI is set up).
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        "--main_process_port", str(_free_port()), str(worker), str(tmp_path / "ck"), str(tmp_path),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert [r["rows"] for r in ranks] == [50, 50]  # each process scored half of the 100 pairs
    two = np.load(tmp_path / "scores.npy")
    np.testing.assert_allclose(two, one, rtol=0, atol=1e-6)


def test_load_ranker_finds_bert_through_the_registry(tmp_path, device):
    from uncertank.nn import load_ranker
    from uncertank.nn.testing import probability_tolerance

    queries = toy_queries()
    ranker = BertRanker(tiny_config(), max_length=32, show_progress=False, device=device).fit(queries)
    ranker.save(tmp_path / "ck")
    assert json.loads((tmp_path / "ck" / "uncertank.json").read_text())["ranker"] == "bert"
    again = load_ranker(tmp_path / "ck", device="cpu")  # fitted on `device`, scored on the CPU
    assert type(again) is BertRanker and again.device == "cpu"
    np.testing.assert_allclose(again.predict(queries).scores, ranker.predict(queries).scores, rtol=0,
                               atol=probability_tolerance(device, "cpu"))
