"""The GP layer against dense references on tiny matrices, and its distance awareness on 2-D toy data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from uncertank_pgdrr.gp import (
    GaussianProcessHead,
    conditional_moments,
    gauss_hermite_sigmoid,
    gibbs_sample,
    marginal_nll,
    rbf_kernel,
    sample_latent,
)

JITTER = 1e-6


def tiny_problem(n: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    k = rbf_kernel(x, x, length_scale=1.0, output_scale=2.0)
    y = (torch.arange(n) % 2 == 0).long()
    omega = torch.rand(3, n, generator=g, dtype=torch.float64) + 0.1
    return x, k, y, omega


def dense_kernel(k: torch.Tensor) -> torch.Tensor:
    return k + JITTER * k.diagonal().mean() * torch.eye(k.shape[0], dtype=k.dtype)


def test_rbf_kernel_against_a_loop():
    x1 = torch.randn(4, 3, dtype=torch.float64)
    x2 = torch.randn(5, 3, dtype=torch.float64)
    k = rbf_kernel(x1, x2, length_scale=0.7, output_scale=3.0)
    for i in range(4):
        for j in range(5):
            ref = 3.0 * np.exp(-float(((x1[i] - x2[j]) ** 2).sum()) / (2 * 0.7**2))
            assert k[i, j].item() == pytest.approx(ref, rel=1e-12)


def test_conditional_moments_equal_the_dense_inverse():
    _, k, y, omega = tiny_problem()
    mean, cov = conditional_moments(k, omega, y, jitter=JITTER)
    kd = dense_kernel(k)
    for c in range(3):
        sigma = torch.linalg.inv(torch.linalg.inv(kd) + torch.diag(omega[c]))
        torch.testing.assert_close(cov[c], sigma, atol=1e-10, rtol=1e-9)
        torch.testing.assert_close(mean[c], sigma @ (y - 0.5).double(), atol=1e-10, rtol=1e-9)


def test_latent_draws_have_the_conditional_moments():
    _, k, y, omega = tiny_problem()
    n = 200_000
    draws = sample_latent(k, omega[1:2].expand(n, -1), y, generator=torch.Generator().manual_seed(1), jitter=JITTER)
    mean, cov = conditional_moments(k, omega[1:2], y, jitter=JITTER)
    se = (cov[0].diagonal() / n).sqrt()
    assert ((draws.mean(0) - mean[0]).abs() < 4 * se).all()
    # covariance entries: standard error of a sample covariance <= sqrt(var_i var_j * 2 / n)
    sd = cov[0].diagonal().sqrt()
    bound = 4 * torch.outer(sd, sd) * np.sqrt(2 / n)
    assert ((torch.cov(draws.T) - cov[0]).abs() < bound).all()


def test_marginal_nll_equals_the_dense_gaussian_log_density():
    _, k, y, omega = tiny_problem()
    nll = marginal_nll(k, omega, y, jitter=JITTER)
    kd = dense_kernel(k).numpy()
    for c in range(3):
        om = omega[c].numpy()
        z = (y.numpy() - 0.5) / om
        ref = -stats.multivariate_normal(np.zeros(5), kd + np.diag(1 / om)).logpdf(z)
        assert nll[c].item() == pytest.approx(ref, rel=1e-10)


def test_fisher_gradient_flows_to_the_kernel_inputs_not_to_omega():
    x, _, y, omega = tiny_problem()
    x = x.clone().requires_grad_(True)
    omega = omega.clone().requires_grad_(True)
    loss = marginal_nll(rbf_kernel(x, x), omega, y).sum()
    loss.backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert omega.grad is None
    # against central differences
    eps = 1e-6
    xd = x.detach()
    for i, j in [(0, 0), (3, 1)]:
        plus, minus = xd.clone(), xd.clone()
        plus[i, j] += eps
        minus[i, j] -= eps
        num = (marginal_nll(rbf_kernel(plus, plus), omega.detach(), y).sum()
               - marginal_nll(rbf_kernel(minus, minus), omega.detach(), y).sum()) / (2 * eps)
        assert x.grad[i, j].item() == pytest.approx(num.item(), rel=1e-5, abs=1e-8)


def test_gibbs_reaches_the_exact_posterior_of_two_latents():
    # Two correlated latents, labels (1, 0): the exact posterior by quadrature on a grid.
    x = torch.tensor([[0.0, 0.0], [0.8, 0.0]], dtype=torch.float64)
    k = rbf_kernel(x, x, length_scale=1.0, output_scale=3.0)
    y = torch.tensor([1, 0])
    _, latent = gibbs_sample(k, y, n_chains=40_000, n_steps=30, generator=torch.Generator().manual_seed(2))
    grid = np.linspace(-9, 9, 601)
    g1, g2 = np.meshgrid(grid, grid, indexing="ij")
    prior = stats.multivariate_normal(np.zeros(2), dense_kernel(k).numpy()).pdf(np.dstack([g1, g2]))
    dens = prior / (1 + np.exp(-g1)) / (1 + np.exp(g2))
    dens /= dens.sum()
    for g, draws in ((g1, latent[:, 0]), (g2, latent[:, 1])):
        mean = (g * dens).sum()
        var = ((g - mean) ** 2 * dens).sum()
        se = np.sqrt(var / draws.numel())
        assert abs(draws.mean().item() - mean) < 5 * se
        assert draws.var().item() == pytest.approx(var, rel=0.03)
    corr = np.corrcoef(latent.numpy().T)[0, 1]
    ref = ((g1 - (g1 * dens).sum()) * (g2 - (g2 * dens).sum()) * dens).sum() / np.sqrt(
        ((g1 - (g1 * dens).sum()) ** 2 * dens).sum() * ((g2 - (g2 * dens).sum()) ** 2 * dens).sum()
    )
    assert corr == pytest.approx(ref, abs=0.02)


def test_gauss_hermite_against_adaptive_quadrature():
    # Predictive variances never exceed the prior variance (output_scale, 8 by default).
    mean = torch.tensor([-3.0, 0.0, 0.7, 4.0, -1.0], dtype=torch.float64)
    var = torch.tensor([0.01, 8.0, 2.0, 8.0, 0.0], dtype=torch.float64)
    first, second = gauss_hermite_sigmoid(mean, var)
    for i in range(5):
        m, s = mean[i].item(), var[i].sqrt().item()
        if s == 0:
            assert first[i].item() == pytest.approx(1 / (1 + np.exp(-m)), rel=1e-12)
            continue

        def pdf(g, m=m, s=s):
            return stats.norm.pdf(g, m, s)

        ref1 = integrate.quad(lambda g: pdf(g) / (1 + np.exp(-g)), m - 12 * s, m + 12 * s, limit=200)[0]
        ref2 = integrate.quad(lambda g: pdf(g) / (1 + np.exp(-g)) ** 2, m - 12 * s, m + 12 * s, limit=200)[0]
        assert first[i].item() == pytest.approx(ref1, abs=1e-6)
        assert second[i].item() == pytest.approx(ref2, abs=1e-6)


def toy_head(**kw):
    """A GP layer on raw 2-D inputs (no projection) with a memory bank of two labelled blobs."""
    g = torch.Generator().manual_seed(3)
    pos = torch.randn(30, 2, generator=g, dtype=torch.float64) * 0.4 + torch.tensor([1.0, 0.0])
    neg = torch.randn(30, 2, generator=g, dtype=torch.float64) * 0.4 + torch.tensor([-1.0, 0.0])
    head = GaussianProcessHead(2, projection_dim=None, bank_size=64, n_chains=16, n_bank_steps=30, **kw)
    head.set_bank(torch.cat([pos, neg]), torch.cat([torch.ones(30), torch.zeros(30)]).long())
    return head


def test_predictive_equals_the_dense_formulas_per_chain():
    head = toy_head()
    z = torch.tensor([[0.5, 0.2], [3.0, -1.0], [-1.0, 0.1]], dtype=torch.float64)
    mean, var = head.predictive(z)
    x = head.bank_features[:60]
    k = dense_kernel(rbf_kernel(x, x, output_scale=8.0))
    ks = rbf_kernel(x, z, output_scale=8.0)
    kappa = head.bank_labels[:60].double() - 0.5
    for c in (0, 7):
        om = head.omega[c, :60]
        a = torch.linalg.inv(k + torch.diag(1 / om))
        torch.testing.assert_close(mean[c], ks.T @ a @ (kappa / om), rtol=1e-7, atol=1e-8)
        ref_var = 8.0 * (1 + 1e-6) - (ks.T @ a @ ks).diagonal()
        torch.testing.assert_close(var[c], ref_var, rtol=1e-6, atol=1e-7)
    jm, jc = head.joint_predictive(z[None])
    torch.testing.assert_close(jm[:, 0], mean)
    torch.testing.assert_close(jc[:, 0].diagonal(dim1=-2, dim2=-1), var, rtol=1e-9, atol=1e-9)


def test_distance_awareness_on_two_dimensional_toy_data():
    head = toy_head()
    near = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    far = torch.tensor([[8.0, 8.0], [-8.0, -8.0]], dtype=torch.float64)
    p_near, v_near = head.probabilities(near)
    p_far, v_far = head.probabilities(far)
    mean_far, var_far = head.predictive(far)
    mean_near, var_near = head.predictive(near)
    assert (var_far.mean(0) > 5 * var_near.mean(0)).all()
    assert mean_far.abs().max() < 1e-6 < mean_near.abs().min()  # far away: back to the prior mean
    torch.testing.assert_close(var_far, torch.full_like(var_far, 8.0 * (1 + 1e-6)), rtol=1e-6, atol=1e-6)
    assert p_near[0] > 0.75 and p_near[1] < 0.25
    assert ((p_far - 0.5).abs() < 1e-3).all()
    assert (v_far > v_near).all()
    # A deterministic logistic head on the same data is at least as confident far away as near.
    LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression

    x = head.bank_features[:60].numpy()
    linear = LogisticRegression().fit(x, head.bank_labels[:60].numpy())
    p_lin_near = linear.predict_proba(near.numpy())[:, 1]
    p_lin_far = linear.predict_proba(far.numpy())[:, 1]
    assert (np.abs(p_lin_far - 0.5) >= np.abs(p_lin_near - 0.5) - 1e-9).all()
    assert np.abs(p_lin_far - 0.5).min() > 0.45


def test_memory_bank_is_first_in_first_out_and_refits_lazily():
    head = GaussianProcessHead(2, projection_dim=None, bank_size=4, n_chains=2, n_bank_steps=2)
    assert head(torch.zeros(3, 2, dtype=torch.float64)).abs().max() < 1e-12  # empty bank: the prior, p = 1/2
    x = torch.arange(12, dtype=torch.float64).reshape(6, 2)
    head.push(x[:3], torch.tensor([1, 0, 1]))
    head.push(x[3:], torch.tensor([0, 1, 0]))
    assert int(head.bank_count) == 4 and int(head.bank_next) == 2
    torch.testing.assert_close(head.bank_features, torch.stack([x[4], x[5], x[2], x[3]]))
    assert head.bank_labels.tolist() == [1, 0, 1, 0]
    assert head.stale
    refits = int(head.n_refits)
    head.probabilities(x[:1])
    assert not head.stale and int(head.n_refits) == refits + 1
    with pytest.raises(ValueError, match="projected must have at most bank_size = 4 rows; got 6"):
        head.set_bank(x, torch.zeros(6, dtype=torch.long))


def test_state_dict_round_trip_predicts_bit_identically():
    head = toy_head()
    z = torch.randn(7, 2, dtype=torch.float64)
    p, v = head.probabilities(z)
    other = GaussianProcessHead(2, projection_dim=None, bank_size=64, n_chains=16, n_bank_steps=30)
    other.load_state_dict(head.state_dict())
    p2, v2 = other.probabilities(z)
    assert torch.equal(p, p2) and torch.equal(v, v2)


def test_cholesky_failure_is_reported():
    from uncertank_pgdrr.gp import _stable_cholesky

    with pytest.raises(ValueError, match="not even with a nugget"):
        _stable_cholesky(-torch.eye(3, dtype=torch.float64))
