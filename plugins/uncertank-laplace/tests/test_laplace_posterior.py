"""The last-layer Laplace posterior against independent references (numpy; laplace-torch where it imports)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from uncertank_laplace import LastLayerPosterior, fit_last_layer, log_marginal_likelihood, optimize_prior_precision
from uncertank_laplace import probit as probit_fn


def _logistic_data(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(n, d))
    w, b = rng.normal(size=(1, d)) * 0.7, rng.normal(size=1) * 0.3
    y = (rng.random(n) < 1 / (1 + np.exp(-(phi @ w[0] + b[0])))).astype(np.int64)
    return phi, y, w, b, rng.normal(size=(25, d))


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


# -- a logistic head (one logit) on fixed features: every quantity written out in numpy ----------------------------


def test_logistic_head_posterior_and_probit_equal_a_direct_computation():
    phi, y, w, b, test = _logistic_data()
    delta = 2.5
    post = fit_last_layer(phi, y, w, b, prior_precision=delta)
    assert post.structure == "full" and post.n_params == 7 and post.prior_precision == delta
    # the penalised negative log-likelihood  -sum log Bern(y | sigmoid(x theta)) + delta/2 |theta|^2, x = [phi, 1]
    x = np.c_[phi, np.ones(len(phi))]
    theta = np.r_[w[0], b]
    p = _sigmoid(x @ theta)
    hessian = x.T @ (x * (p * (1 - p))[:, None]) + delta * np.eye(7)  # its Hessian in theta
    sigma = np.linalg.inv(hessian)
    np.testing.assert_allclose(post.covariance().numpy(), sigma, rtol=0, atol=1e-6 * np.abs(sigma).max())
    np.testing.assert_allclose(post.precision().numpy(), hessian, rtol=1e-12, atol=1e-9)
    # the probit predictive of new pairs
    xt = np.c_[test, np.ones(len(test))]
    m = xt @ theta
    v = np.einsum("ni,ij,nj->n", xt, sigma, xt)
    want = _sigmoid(m / np.sqrt(1 + np.pi / 8 * v))
    u, s = post.contrast()
    got = probit_fn(xt @ u.numpy(), np.einsum("ni,ij,nj->n", xt, s.numpy(), xt))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(post.logit_covariance(test).numpy()[:, 0, 0], v, rtol=1e-9)
    # and the log marginal likelihood of that Laplace approximation, with slogdet
    loglik = float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))
    logz = loglik - 0.5 * delta * theta @ theta + 0.5 * 7 * np.log(delta) - 0.5 * np.linalg.slogdet(hessian)[1]
    assert post.log_likelihood == pytest.approx(loglik, rel=1e-12)
    assert post.log_marginal_likelihood == pytest.approx(logz, rel=1e-10)


def test_softmax_head_of_two_logits_equals_a_direct_computation():
    rng = np.random.default_rng(3)
    n, d, delta = 200, 5, 0.7
    phi = rng.normal(size=(n, d))
    w, b = rng.normal(size=(2, d)) * 0.5, rng.normal(size=2) * 0.2
    y = rng.integers(0, 2, n)
    post = fit_last_layer(phi, y, w, b, prior_precision=delta)
    x = np.c_[phi, np.ones(n)]
    logits = x @ np.c_[w, b].T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    # theta row-major over (logit, feature): H[(a,i),(c,j)] = sum_n (p_a [a=c] - p_a p_c) x_i x_j
    lam = np.einsum("na,ac->nac", p, np.eye(2)) - np.einsum("na,nc->nac", p, p)
    hessian = np.einsum("nac,ni,nj->aicj", lam, x, x).reshape(12, 12) + delta * np.eye(12)
    sigma = np.linalg.inv(hessian)
    np.testing.assert_allclose(post.covariance().numpy(), sigma, rtol=0, atol=1e-6 * np.abs(sigma).max())
    # P(relevant) = softmax[1] = sigmoid(l1 - l0): the contrast theta_1 - theta_0
    c = np.kron(np.array([-1.0, 1.0]), np.eye(d + 1))  # (d+1, 12)
    u, s = post.contrast()
    np.testing.assert_allclose(s.numpy(), c @ sigma @ c.T, rtol=0, atol=1e-9)
    np.testing.assert_allclose(u.numpy(), c @ np.r_[w[0], b[0], w[1], b[1]], rtol=1e-12)
    loglik = float(np.log(p[np.arange(n), y]).sum())
    assert post.log_likelihood == pytest.approx(loglik, rel=1e-12)


def test_kronecker_factors_equal_a_direct_computation():
    rng = np.random.default_rng(4)
    n, d, delta = 150, 4, 1.3
    phi = rng.normal(size=(n, d))
    w, b = rng.normal(size=(2, d)), rng.normal(size=2)
    y = rng.integers(0, 2, n)
    post = fit_last_layer(phi, y, w, b, structure="kron", prior_precision=delta)
    assert post.structure == "kron" and post.hessian is None
    x = np.c_[phi, np.ones(n)]
    logits = x @ np.c_[w, b].T
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    g = (np.einsum("na,ac->nac", p, np.eye(2)) - np.einsum("na,nc->nac", p, p)).mean(0)  # mean_n Lambda_n
    a = x.T @ x  # sum_n x x^T
    precision = np.kron(g, a) + delta * np.eye(10)
    np.testing.assert_allclose(post.precision().numpy(), precision, rtol=1e-10, atol=1e-10)
    sigma = np.linalg.inv(precision)
    np.testing.assert_allclose(post.covariance().numpy(), sigma, rtol=0, atol=1e-8)
    c = np.kron(np.array([-1.0, 1.0]), np.eye(d + 1))
    np.testing.assert_allclose(post.contrast()[1].numpy(), c @ sigma @ c.T, rtol=0, atol=1e-8)
    loglik = float(np.log(p[np.arange(n), y]).sum())
    theta = np.c_[w, b].reshape(-1)
    logz = loglik - 0.5 * delta * theta @ theta + 5 * np.log(delta) - 0.5 * np.linalg.slogdet(precision)[1]
    assert post.log_marginal_likelihood == pytest.approx(logz, rel=1e-10)


def test_auto_is_full_up_to_two_logits_and_kron_beyond():
    rng = np.random.default_rng(0)
    phi, y = rng.normal(size=(30, 3)), rng.integers(0, 2, 30)
    for k, structure in ((1, "full"), (2, "full"), (3, "kron")):
        post = fit_last_layer(phi, y, rng.normal(size=(k, 3)), rng.normal(size=k), prior_precision=1.0)
        assert post.structure == structure
    with pytest.raises(ValueError, match="P\\(relevant\\) needs one logit or two; the layer has 3"):
        post.contrast()


def test_a_layer_without_bias():
    phi, y, w, _, _ = _logistic_data(n=80, d=3)
    post = fit_last_layer(phi, y, w, None, prior_precision=1.0)
    p = _sigmoid(phi @ w[0])
    hessian = phi.T @ (phi * (p * (1 - p))[:, None]) + np.eye(3)
    np.testing.assert_allclose(post.covariance().numpy(), np.linalg.inv(hessian), rtol=1e-9)
    assert not post.has_bias and post.mean.shape == (1, 3)


# -- the prior precision by marginal likelihood ---------------------------------------------------------------------


def test_the_marglik_optimum_is_the_maximum_of_the_evidence():
    phi, y, w, b, _ = _logistic_data(n=400, d=8, seed=2)
    post = fit_last_layer(phi, y, w, b)  # "marglik"
    x = np.c_[phi, np.ones(400)]
    theta = np.r_[w[0], b]
    p = _sigmoid(x @ theta)
    h = x.T @ (x * (p * (1 - p))[:, None])

    def evidence(delta):  # written out with slogdet, independently of the eigenvalues the plugin uses
        return (-0.5 * delta * theta @ theta + 0.5 * 9 * np.log(delta)
                - 0.5 * np.linalg.slogdet(h + delta * np.eye(9))[1])

    grid = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 20001))
    best = grid[np.argmax([evidence(g) for g in grid])]
    assert post.prior_precision == pytest.approx(best, rel=1e-3)  # the grid's spacing is 7e-4 in log
    for other in (post.prior_precision * 0.9, post.prior_precision * 1.1):
        worse = fit_last_layer(phi, y, w, b, prior_precision=other)
        assert post.log_marginal_likelihood > worse.log_marginal_likelihood
    # MacKay's fixed point: gamma(delta) = delta |theta|^2
    lam = np.linalg.eigvalsh(h)
    gamma = np.sum(lam / (lam + post.prior_precision))
    assert gamma == pytest.approx(post.prior_precision * theta @ theta, rel=1e-9)


def _penalised_logistic_map(x, y, delta, w=None):
    """Newton's method on the penalised log-likelihood (a reference MAP, not the plugin's code)."""
    w = np.zeros(x.shape[1]) if w is None else w
    for _ in range(100):
        p = _sigmoid(x @ w)
        step = np.linalg.solve(x.T @ (x * (p * (1 - p))[:, None]) + delta * np.eye(x.shape[1]),
                               x.T @ (p - y) + delta * w)
        w = w - step
        if np.abs(step).max() < 1e-10:
            break
    return w


@pytest.mark.slow
@pytest.mark.parametrize("true_delta", [0.5, 4.0, 25.0])
def test_the_marglik_prior_precision_recovers_a_known_prior(true_delta):
    # Simulate theta ~ N(0, I / delta) over 40 features and a bias, y ~ Bern(sigmoid(x theta)) on 2,000 pairs;
    # empirical Bayes from delta = 1: MAP for delta, then delta by marginal likelihood, until it settles.
    # One draw of theta pins delta only to about sqrt(2 / P) = 22%, so eight seeds are pooled: their geometric
    # mean lies within 20% of the truth; each estimate within 35% of its own draw's precision, P / |theta|^2.
    # (Measured: geometric means 1.14, 1.07 and 1.00 of the truth for delta = 0.5, 4 and 25; the weakest
    # prior, whose large weights make the data nearly separable, is over-estimated most.)
    estimates, own = [], []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n, d = 2000, 40
        phi = rng.normal(size=(n, d))
        theta = rng.normal(scale=1 / math.sqrt(true_delta), size=d + 1)
        x = np.c_[phi, np.ones(n)]
        y = (rng.random(n) < _sigmoid(x @ theta)).astype(np.int64)
        delta, w = 1.0, None
        for _ in range(10):
            w = _penalised_logistic_map(x, y, delta, w)
            new = fit_last_layer(phi, y, w[None, :d], w[d:]).prior_precision
            settled = abs(math.log(new / delta)) < 1e-4
            delta = new
            if settled:
                break
        estimates.append(delta)
        own.append((d + 1) / float(theta @ theta))
    ratios = np.array(estimates) / true_delta
    assert np.exp(np.log(ratios).mean()) == pytest.approx(1.0, abs=0.2), ratios
    np.testing.assert_allclose(estimates, own, rtol=0.35)


def test_marglik_helpers():
    assert optimize_prior_precision(0.0, [1.0, 2.0]) == 1e6  # no weights: the prior may be as tight as allowed
    assert optimize_prior_precision(1e9, [0.0]) == 1e-6
    with pytest.raises(ValueError, match="bounds must be two finite numbers 0 < lo < hi"):
        optimize_prior_precision(1.0, [1.0], bounds=(1.0, 0.5))
    with pytest.raises(ValueError, match="prior_precision must be a finite number > 0"):
        log_marginal_likelihood(0.0, 1.0, [1.0], 0.0)
    assert float(probit_fn(torch.tensor(1.0), torch.tensor(0.0))) == pytest.approx(_sigmoid(1.0))


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"structure": "diag"}, ValueError, "structure must be one of 'auto', 'full', 'kron'"),
    ({"prior_precision": "grid"}, ValueError, "prior_precision must be 'marglik' or a number > 0"),
    ({"prior_precision": -1.0}, ValueError, "prior_precision must be 'marglik' or a number > 0"),
])
def test_fit_argument_errors(kwargs, error, match):
    phi, y, w, b, _ = _logistic_data(n=20, d=3)
    with pytest.raises(error, match=match):
        fit_last_layer(phi, y, w, b, **kwargs)


def test_fit_input_errors():
    phi, y, w, b, _ = _logistic_data(n=20, d=3)
    with pytest.raises(ValueError, match="features must have 3 columns"):
        fit_last_layer(phi[:, :2], y, w, b)
    with pytest.raises(ValueError, match="labels must have one entry per feature row \\(20\\); got 19"):
        fit_last_layer(phi, y[:-1], w, b)
    with pytest.raises(ValueError, match="features must be finite"):
        fit_last_layer(np.where(phi > 1, np.nan, phi), y, w, b)
    with pytest.raises(ValueError, match=r"features must (hold at least one row|not be empty)"):
        fit_last_layer(phi[:0], y[:0], w, b)
    with pytest.raises(ValueError, match="bias must have 1 entries"):
        fit_last_layer(phi, y, w, np.zeros(2))
    with pytest.raises(ValueError, match="weight must be 2-D"):
        fit_last_layer(phi, y, w[0], b)


def test_to_tensors_round_trip_is_exact():
    phi, y, w, b, _ = _logistic_data(n=50, d=4)
    for structure in ("full", "kron"):
        post = fit_last_layer(phi, y, w, b, structure=structure)
        again = LastLayerPosterior.from_tensors(*post.to_tensors())
        assert again.prior_precision == post.prior_precision and again.structure == structure
        assert again.log_marginal_likelihood == post.log_marginal_likelihood
        assert torch.equal(again.contrast()[1], post.contrast()[1])


# -- laplace-torch, a second reference (it needs torchvision, absent or broken beside a CPU-only torch) -----------


def _laplace_torch():
    try:
        import laplace
    except Exception as exc:  # ImportError, or torchvision's RuntimeError beside a CPU-only torch
        pytest.skip(f"laplace-torch does not import here ({type(exc).__name__}: {exc})")
    return laplace


class _OneLogit(torch.nn.Module):
    """A sigmoid head as laplace-torch's two-class softmax: logits [0, l], softmax[1] = sigmoid(l)."""

    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        out = self.linear(x)
        return torch.cat([torch.zeros_like(out), out], 1)


@pytest.mark.parametrize("k", [1, 2])
def test_full_posterior_equals_laplace_torchs(k):
    laplace = _laplace_torch()
    rng = np.random.default_rng(7)
    n, d, delta = 120, 5, 1.7
    phi = rng.normal(size=(n, d))
    w, b = rng.normal(size=(k, d)) * 0.6, rng.normal(size=k) * 0.2
    y = rng.integers(0, 2, n)
    linear = torch.nn.Linear(d, k).double()
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(w))
        linear.bias.copy_(torch.from_numpy(b))
    model = _OneLogit(linear) if k == 1 else linear
    la = laplace.Laplace(model, "classification", subset_of_weights="all", hessian_structure="full",
                         prior_precision=delta)
    data = torch.utils.data.TensorDataset(torch.from_numpy(phi), torch.from_numpy(y))
    la.fit(torch.utils.data.DataLoader(data, batch_size=32))
    ours = fit_last_layer(phi, y, w, b, prior_precision=delta)
    # laplace-torch orders theta as [W flattened, b]; ours row-major [W | b] per logit
    order = np.r_[[c * d + i if i < d else k * d + c for c in range(k) for i in range(d + 1)]]
    theirs = la.posterior_covariance.detach().numpy()[np.ix_(order, order)]
    np.testing.assert_allclose(ours.covariance().numpy(), theirs, rtol=0, atol=1e-6 * np.abs(theirs).max())
    assert ours.log_marginal_likelihood == pytest.approx(float(la.log_marginal_likelihood()), rel=1e-6)
    test = torch.from_numpy(rng.normal(size=(10, d)))
    f_mu, f_var = la._glm_predictive_distribution(test)  # the logits' mean and covariance
    cov = ours.logit_covariance(test.numpy()).numpy()
    if k == 1:
        np.testing.assert_allclose(cov[:, 0, 0], f_var[:, 1, 1].numpy(), rtol=1e-6)
        # laplace-torch's own probit on [0, l] is the binary probit of l
        np.testing.assert_allclose(probit_fn(f_mu[:, 1].numpy(), cov[:, 0, 0]),
                                   la(test, pred_type="glm", link_approx="probit")[:, 1].detach().numpy(), atol=1e-6)
    else:
        np.testing.assert_allclose(cov, f_var.detach().numpy(), rtol=1e-6, atol=1e-12)
