"""PG-DRR when the encoder scores in bf16 (CUDA's autocast, emulated on the CPU) and across devices."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uncertank_pgdrr import PGDRRRanker

from uncertank.nn import load_ranker, model_device, pool_encoder
from uncertank.nn.testing import bf16_scoring_on_cpu, probability_tolerance, test_devices, tiny_config, toy_queries

SMALL = dict(max_length=32, batch_size=8, lr=3e-3, show_progress=False, bank_size=16, n_chains=6, epochs=2)


@pytest.fixture(scope="module")
def fitted():
    queries = toy_queries()
    return PGDRRRanker(tiny_config(), device="cpu", **SMALL).fit(queries), queries


def test_under_bf16_the_kernel_input_is_projected_in_float32(fitted):
    ranker, queries = fitted
    model = ranker.model
    enc = ranker.encode(queries)
    batch = enc.batch(np.arange(enc.n_pairs), model_device(model))
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        z = model.features(**batch)
        pooled = pool_encoder(model.encoder, **batch, pooling=model.pooling)
    with torch.inference_mode():
        expected = model.head.project(pooled.float())
    # the encoder's output carries bf16 rounding; the projection after it adds none
    assert z.dtype == torch.float32
    torch.testing.assert_close(z, expected, rtol=0, atol=0)
    with bf16_scoring_on_cpu():
        assert ranker.features(queries).dtype == torch.float64


def test_predict_samples_draw_the_same_normals_whatever_the_device(fitted, tmp_path):
    ranker, queries = fitted
    draws = ranker.predict_samples(queries, n_samples=12).samples
    ranker.save(tmp_path / "ck")
    for device in test_devices():
        again = load_ranker(tmp_path / "ck", device=device)
        np.testing.assert_allclose(again.predict(queries).scores, ranker.predict(queries).scores, rtol=0,
                                   atol=probability_tolerance("cpu", device, feature_kernel=True))
        # same seed, normals drawn on the CPU: the draws differ by the device's rounding only
        np.testing.assert_allclose(again.predict_samples(queries, n_samples=12).samples, draws, rtol=0,
                                   atol=probability_tolerance("cpu", device, feature_kernel=True, draws=True))


def test_bf16_rounding_moves_the_draws_within_their_tolerance(fitted):
    """On an H100 a CPU checkpoint's draws moved by up to 2.7e-2 (its probabilities by 1.0e-2): the
    normals scale the covariance's rounding. The CPU's bf16 emulation shows the same."""
    ranker, queries = fitted
    draws = ranker.predict_samples(queries, n_samples=12).samples
    mean = ranker.predict(queries).scores
    with bf16_scoring_on_cpu():
        draws_bf16 = ranker.predict_samples(queries, n_samples=12).samples
        mean_bf16 = ranker.predict(queries).scores
    gap, mean_gap = np.abs(draws_bf16 - draws).max(), np.abs(mean_bf16 - mean).max()
    assert 0 < mean_gap <= probability_tolerance("cuda", "cpu", feature_kernel=True)
    assert 0 < gap <= probability_tolerance("cuda", "cpu", feature_kernel=True, draws=True)


def test_the_draws_do_not_depend_on_the_eigensolvers_choice_of_eigenvectors(fitted, monkeypatch):
    """On an H100 the joint draws of a CPU checkpoint differed wholesale from the CPU's: cuSOLVER returns
    eigenvectors of other signs than LAPACK. Flipping their signs here must leave the draws as they are."""
    import uncertank_pgdrr.ranker as module

    ranker, queries = fitted
    draws = ranker.predict_samples(queries, n_samples=12).samples
    eigh = torch.linalg.eigh

    def flipped(cov):
        evals, evecs = eigh(cov)
        signs = torch.where(torch.arange(evecs.shape[-1]) % 2 == 0, -1.0, 1.0).to(evecs)
        return evals, evecs * signs

    monkeypatch.setattr(module.torch.linalg, "eigh", flipped)
    np.testing.assert_allclose(ranker.predict_samples(queries, n_samples=12).samples, draws, rtol=0, atol=1e-12)


def test_the_covariance_root_is_the_principal_square_root():
    from scipy.linalg import sqrtm
    from uncertank_pgdrr.ranker import _covariance_root

    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    cov = (basis * np.array([2.0, 2.0, 0.5, 1e-12, 0.0])) @ basis.T  # a repeated and a zero eigenvalue
    root = _covariance_root(torch.from_numpy(cov)[None]).numpy()[0]
    np.testing.assert_allclose(root, root.T, atol=1e-12)
    np.testing.assert_allclose(root @ root, cov, atol=1e-10)
    np.testing.assert_allclose(root, np.real(sqrtm(cov)), atol=1e-6)
