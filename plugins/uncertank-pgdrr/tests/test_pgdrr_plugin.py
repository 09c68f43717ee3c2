"""The ranker ``pgdrr`` on a tiny random BERT (2 layers, hidden 32) and toy queries."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.special import logit
from uncertank_pgdrr import PGDRRRanker
from uncertank_pgdrr.ranker import _bank_indices, _subset_pairs

import uncertank
from uncertank import PredictiveSamples, QuerySet
from uncertank.nn import balanced_pairs, encode_pairs, get_accelerator, load_ranker
from uncertank.nn.testing import tiny_config, toy_queries
from uncertank.testing import check_stochastic_ranker

SMALL = dict(max_length=32, batch_size=8, lr=3e-3, show_progress=False, bank_size=16, n_chains=6,
             n_bank_steps=20, device="cpu")


def ragged_queries() -> QuerySet:
    q = toy_queries(6, 5, seed=1)
    keep = [i for i in range(q.n_pairs) if not (q.query_index[i] == 2 and i % 5 == 4)]
    contexts, cands, labels = [], [], []
    for qi in range(q.n_queries):
        idx = [i for i in keep if q.query_index[i] == qi]
        contexts.append(list(q.contexts[qi]))
        cands.append([q.candidates[i] for i in idx])
        labels.append([int(q.labels[i]) for i in idx])
    return QuerySet.from_lists(contexts, cands, labels, name="ragged")


@pytest.fixture(scope="module")
def fitted() -> PGDRRRanker:
    torch.set_num_threads(1)
    return PGDRRRanker(tiny_config(), epochs=3, **SMALL).fit(toy_queries())


def test_entry_point_builds_the_ranker_with_the_neural_ranker_parameters():
    ranker = uncertank.make_ranker(
        "pgdrr", backbone=tiny_config(), max_length=32, epochs=1, batch_size=4, lr=1e-4, seed=3,
        num_hidden_layers=1, n_chains=5,
    )
    assert isinstance(ranker, PGDRRRanker)
    assert isinstance(ranker, uncertank.StochasticRanker)
    assert ranker.n_chains == 5 and ranker.n_gibbs_steps == 10 and ranker.output_scale == 8.0
    assert ranker.length_scale == 1.0 and ranker.training_config.seed == 3
    names = {p.name for p in uncertank.list_plugins() if p.kind == "rankers"}
    assert "pgdrr" in names


def test_loss_is_differentiable_through_the_kernel_only():
    ranker = PGDRRRanker(tiny_config(), **SMALL)
    model = ranker.build_model()
    model.train()
    enc = ranker.encode(toy_queries(2, 4))
    batch = enc.batch(np.arange(8))
    out = model(**batch)
    assert out.shape == (8, 64)
    loss = ranker.loss(out, torch.tensor([1, 0, 0, 0, 1, 0, 0, 0]))
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    assert model.head.projection.weight.grad.abs().sum() > 0
    assert next(model.encoder.parameters()).grad is not None
    assert int(model.head.bank_count) == 8 and model.head.stale


@pytest.mark.slow
def test_conformance(fitted):
    done = check_stochastic_ranker(fitted, ragged_queries(), n_samples=4)
    assert done[-1] == "save/load"


@pytest.mark.slow
def test_predictions_are_consistent(fitted):
    q = toy_queries()
    pred = fitted.predict(q).scores
    mean, var = fitted.predict_moments(q)
    np.testing.assert_array_equal(pred, mean)
    assert ((pred > 0) & (pred < 1)).all() and (var > 0).all()
    # the model's eval-mode forward (the batched scoring path of every neural ranker) agrees
    np.testing.assert_allclose(fitted.score(q)[0], pred, atol=1e-6)
    # it learned something: the relevant candidates score higher on average
    assert pred[q.labels == 1].mean() > pred[q.labels == 0].mean() + 0.1
    lat_mean, lat_var = fitted.predict_latent(q)
    assert lat_mean.shape == lat_var.shape == (100,)
    assert (lat_var <= fitted.output_scale * (1 + 1e-5)).all()


@pytest.mark.slow
def test_predict_samples_are_joint_draws(fitted):
    q = toy_queries(4, 5, seed=2)
    n = 6000
    ps = fitted.predict_samples(q, n_samples=n)
    assert isinstance(ps, PredictiveSamples) and ps.samples.shape == (n, 20)
    assert fitted.predict_samples(q).samples.shape == (fitted.n_chains, 20)
    np.testing.assert_allclose(ps.samples.mean(0), fitted.predict(q).scores, atol=0.02)
    # the latent draws' covariance: within a query the chain-mixture of full Gaussian blocks,
    # across queries only what the chains share (their means)
    draws = logit(ps.samples)
    head = fitted.head()
    z = fitted.features(q).reshape(4, 5, -1)
    mean, cov = head.joint_predictive(z)  # (C, 4, 5), (C, 4, 5, 5)
    flat_mean = mean.reshape(fitted.n_chains, 20).numpy()
    within = np.zeros((20, 20))
    for qi in range(4):
        sl = slice(5 * qi, 5 * qi + 5)
        within[sl, sl] = cov[:, qi].mean(0).numpy()
    mix = within + (flat_mean.T @ flat_mean) / fitted.n_chains - np.outer(flat_mean.mean(0), flat_mean.mean(0))
    emp = np.cov(draws.T)
    d = np.diag(mix)
    se = np.sqrt((np.outer(d, d) + mix**2) / n)  # of a sample covariance (Gaussian fourth moments)
    assert (np.abs(emp - mix) < 5 * se).all()
    # power: the within-query blocks are far from what independent candidates would give
    blocks = np.kron(np.eye(4), np.ones((5, 5))) - np.eye(20)
    assert (np.abs(within) * blocks).max() > 10 * se.max()


@pytest.mark.slow
def test_memory_bank_holds_training_pairs_scored_with_the_final_weights(fitted):
    q = toy_queries()
    cfg = fitted.training_config
    ctx, cands, qidx, labels = balanced_pairs(q, seed=cfg.seed + cfg.epochs - 1)
    enc = encode_pairs(fitted.tokenizer_, ctx, cands, qidx, max_length=cfg.max_length)
    idx = _bank_indices(labels, fitted.bank_size, seed=cfg.seed)
    assert idx.size == 16 and labels[idx].sum() == 8
    feats = fitted._features(fitted.model, _subset_pairs(enc, idx), get_accelerator("cpu"))
    head = fitted.head()
    assert int(head.bank_count) == 16
    torch.testing.assert_close(head.bank_features[:16], feats, rtol=0, atol=1e-6)
    assert head.bank_labels[:16].tolist() == labels[idx].tolist()


@pytest.mark.slow
def test_save_and_load_are_bit_identical(fitted, tmp_path):
    q = ragged_queries()
    fitted.save(tmp_path / "pgdrr")
    for loaded in (PGDRRRanker.load(tmp_path / "pgdrr"), load_ranker(tmp_path / "pgdrr")):
        assert isinstance(loaded, PGDRRRanker)
        assert loaded.extra_params() == fitted.extra_params()
        for name, value in fitted.model.state_dict().items():
            assert torch.equal(loaded.model.state_dict()[name], value), name
        np.testing.assert_array_equal(loaded.predict(q).scores, fitted.predict(q).scores)
        np.testing.assert_array_equal(loaded.predict_samples(q).samples, fitted.predict_samples(q).samples)
        for a, b in zip(loaded.predict_latent(q), fitted.predict_latent(q), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_projection_starts_at_the_length_scale():
    q = toy_queries()
    ranker = PGDRRRanker(tiny_config(), epochs=1, **{**SMALL, "lr": 1e-12}, length_scale=2.0)
    ranker.fit(q)
    cfg = ranker.training_config
    ctx, cands, qidx, _ = balanced_pairs(q, seed=cfg.seed)
    enc = encode_pairs(ranker.tokenizer_, ctx, cands, qidx, max_length=cfg.max_length)
    z = ranker._features(ranker.model, enc, get_accelerator("cpu"))
    assert float(torch.pdist(z).median()) == pytest.approx(2.0, rel=1e-3)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _launch_two(mode: str, folder: Path) -> None:
    worker = Path(__file__).with_name("accelerate_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        "--main_process_port", str(_free_port()), str(worker), mode, str(folder),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_two_processes_train_and_predict_like_one(fitted, tmp_path):
    # Training under two processes: every process ends with the same bank and chains.
    _launch_two("fit", tmp_path)
    a, b = (np.load(tmp_path / f"bank{r}.npz") for r in (0, 1))
    for key in ("x", "omega", "scores"):
        np.testing.assert_array_equal(a[key], b[key])
    assert np.abs(a["x"]).sum() > 0
    # Prediction under two processes (each scores half of the pairs) equals one process's, up to
    # the float32 features of differently padded batches (about 1e-7), which the GP amplifies.
    fitted.save(tmp_path / "ck")
    _launch_two("predict", tmp_path)
    q = toy_queries()
    a, b = (np.load(tmp_path / f"pred{r}.npz") for r in (0, 1))
    np.testing.assert_array_equal(a["scores"], b["scores"])
    np.testing.assert_array_equal(a["samples"], b["samples"])
    np.testing.assert_allclose(a["scores"], fitted.predict(q).scores, rtol=0, atol=1e-4)
    np.testing.assert_allclose(a["samples"], fitted.predict_samples(q).samples, rtol=0, atol=1e-4)


def test_errors():
    with pytest.raises(ValueError, match="length_scale must be a finite number > 0; got 0"):
        PGDRRRanker(tiny_config(), length_scale=0)
    with pytest.raises(ValueError, match="output_scale must be a finite number > 0; got 'big'"):
        PGDRRRanker(tiny_config(), output_scale="big")
    with pytest.raises(ValueError, match="jitter must be a finite number > 0; got nan"):
        PGDRRRanker(tiny_config(), jitter=float("nan"))
    with pytest.raises(ValueError, match="n_chains must be an integer >= 1; got 0"):
        PGDRRRanker(tiny_config(), n_chains=0)
    with pytest.raises(ValueError, match="n_gibbs_steps"):
        PGDRRRanker(tiny_config(), n_gibbs_steps=-1)
    with pytest.raises(ValueError, match="bank_size must be an integer >= 2; got 1"):
        PGDRRRanker(tiny_config(), bank_size=1)
    with pytest.raises(ValueError, match="n_bank_steps"):
        PGDRRRanker(tiny_config(), n_bank_steps=0)
    with pytest.raises(ValueError, match="projection_dim"):
        PGDRRRanker(tiny_config(), projection_dim=0)
    with pytest.raises(ValueError, match="n_quadrature"):
        PGDRRRanker(tiny_config(), n_quadrature=0)
    ranker = PGDRRRanker(tiny_config(), **SMALL)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1; got 0"):
        ranker.predict_samples(toy_queries(2, 3), n_samples=0)
    with pytest.raises(TypeError, match="queries must be a QuerySet; got str"):
        ranker.predict_samples("queries")
    with pytest.raises(TypeError, match="model must be a PGDRRModel"):
        ranker.on_train_end(torch.nn.Linear(2, 2), None, np.zeros(2, dtype=np.int64), None)


def test_from_ranker_puts_the_gp_layer_on_a_trained_encoder():
    from uncertank_bert import BertRanker

    queries = toy_queries()
    bert = BertRanker(tiny_config(), max_length=32, batch_size=8, lr=3e-3, show_progress=False, device="cpu")
    bert.fit(queries)
    ranker = PGDRRRanker.from_ranker(bert, epochs=1, **SMALL)
    assert isinstance(ranker, PGDRRRanker) and not ranker.is_fitted
    for k, v in bert.model.encoder.state_dict().items():  # the copy, tensor by tensor
        assert torch.equal(ranker.model.encoder.state_dict()[k], v), k
    ranker.fit(queries)
    p = ranker.predict(queries).scores
    assert p.shape == (queries.n_pairs,) and np.all((p > 0) & (p < 1))


def test_median_length_scale_without_projection_is_the_median_cls_distance(tmp_path):
    queries = toy_queries()
    ranker = PGDRRRanker(tiny_config(), epochs=1, projection_dim="none", length_scale="median", **SMALL)
    assert ranker.projection_dim == "none" and ranker.projection_dim_ is None and ranker.kernel_length_scale == 1.0
    model = ranker.build_model()
    ctx, cands, qidx, _ = balanced_pairs(queries, seed=0)
    enc = ranker.encode_texts(ctx, cands, qidx)
    idx = np.sort(np.random.default_rng(0).permutation(enc.n_pairs)[:256])
    z = ranker._features(model, _subset_pairs(enc, idx), get_accelerator("cpu")).cpu().numpy()
    # the median over every pair of distinct rows, by a loop (the lower middle value, as torch's median)
    d = sorted(np.linalg.norm(z[i] - z[j]) for i in range(len(z)) for j in range(i + 1, len(z)))
    ranker.fit(queries)
    assert ranker.length_scale_ == pytest.approx(float(d[(len(d) - 1) // 2]), rel=1e-5)
    assert ranker.head().length_scale == ranker.length_scale_ != 1.0
    assert ranker.extra_params()["length_scale"] == ranker.length_scale_
    p = ranker.predict(queries).scores
    ranker.save(tmp_path / "ck")
    again = load_ranker(tmp_path / "ck")
    assert again.head().length_scale == ranker.length_scale_
    np.testing.assert_allclose(again.predict(queries).scores, p, rtol=1e-6, atol=1e-9)


def test_the_length_scale_gradient_is_the_marginal_likelihood_s():
    """A learned length scale's gradient is d/d log(l) of -log N(kappa/omega | 0, K + Omega^-1), by differences."""
    from uncertank_pgdrr.gp import GaussianProcessHead, marginal_nll, rbf_kernel

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(12, 3, dtype=torch.float64, generator=gen)
    y = torch.tensor([1, 0] * 6)
    head = GaussianProcessHead(3, projection_dim=None, length_scale=1.7, bank_size=4, n_chains=3,
                               learn_length_scale=True)
    assert [n for n, _ in head.named_parameters()] == ["log_length_scale"]
    omega = 0.2 + torch.rand(3, 12, dtype=torch.float64, generator=gen)
    loss = marginal_nll(head.kernel(x, x), omega, y).mean()
    loss.backward()

    def at(log_l: float) -> float:
        k = rbf_kernel(x, x, length_scale=float(np.exp(log_l)), output_scale=head.output_scale)
        return float(marginal_nll(k, omega, y).mean())

    h, log_l = 1e-5, float(np.log(1.7))
    numeric = (at(log_l + h) - at(log_l - h)) / (2 * h)
    assert head.log_length_scale is not None and head.log_length_scale.grad is not None
    assert float(head.log_length_scale.grad) == pytest.approx(numeric, rel=1e-6)
    head.length_scale = 0.5  # the setter writes the parameter
    assert float(torch.as_tensor(head.length_scale).detach()) == pytest.approx(0.5)
    assert float(head.log_length_scale.detach()) == pytest.approx(np.log(0.5))


def test_a_learned_length_scale_moves_from_the_median_and_is_saved(tmp_path):
    queries = toy_queries()
    ranker = PGDRRRanker(tiny_config(), epochs=2, projection_dim="none", length_scale="learned",
                         freeze_encoder=True, head_lr=0.05, **SMALL)
    ranker.fit(queries)
    start = ranker.length_scale_  # the median heuristic's value, where training started
    learned = ranker.kernel_length_scale
    assert start is not None and start > 0 and learned > 0
    assert abs(np.log(learned / start)) > 0.01  # the training loss moved it
    assert ranker.extra_params()["length_scale"] == "learned"
    p = ranker.predict(queries).scores
    ranker.save(tmp_path / "ck")
    again = load_ranker(tmp_path / "ck")
    assert again.kernel_length_scale == pytest.approx(learned, rel=1e-12)
    np.testing.assert_allclose(again.predict(queries).scores, p, rtol=1e-6, atol=1e-9)


def test_median_length_scale_errors():
    with pytest.raises(ValueError, match="length_scale must be a finite number > 0, 'median' or 'learned'; got 'mean'"):
        PGDRRRanker(tiny_config(), length_scale="mean")
    with pytest.raises(TypeError, match="projection_dim must be an integer >= 1; got str 'nothing'"):
        PGDRRRanker(tiny_config(), projection_dim="nothing")


def test_a_bank_drawn_at_the_training_ratio():
    labels = np.array([1] * 10 + [0] * 90)
    balanced = _bank_indices(labels, 20, seed=0)
    assert labels[balanced].sum() == 10  # half relevant
    as_trained = _bank_indices(labels, 20, seed=0, balanced=False)
    assert as_trained.size == 20 and np.all(np.diff(as_trained) > 0)
    # uniform over the pairs: over many seeds the share of relevant is the pairs' own (10%), by a loop
    shares = [labels[_bank_indices(labels, 20, seed=s, balanced=False)].mean() for s in range(400)]
    assert abs(np.mean(shares) - 0.1) < 4 * np.std(shares) / np.sqrt(len(shares))
    with pytest.raises(TypeError, match="balanced_bank must be a bool; got str"):
        PGDRRRanker(tiny_config(), balanced_bank="no")
    assert PGDRRRanker(tiny_config(), balanced_bank=False).extra_params()["balanced_bank"] is False
