"""Pólya-Gamma Gibbs on a Bayesian logistic regression against a long PyMC NUTS run.

Simulated data (seeded): 120 observations, an intercept and two covariates,
true coefficients (-0.5, 1.2, -0.8), prior beta ~ N(0, 2^2 I). Gibbs
(Polson, Scott & Windle 2013): omega_i | beta ~ PG(1, x_i^T beta), then
beta | omega ~ N(V X^T kappa, V) with V = (X^T Omega X + I/4)^-1 and
kappa = y - 1/2, run as 16 chains at once. Tolerance: every posterior mean
within 0.1 posterior standard deviations of NUTS's, every variance within
10% (both several times the Monte Carlo error of the two runs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uncertank_pgdrr import random_polya_gamma

PRIOR_SD = 2.0


def simulated_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(120), rng.normal(size=(120, 2))])
    beta = np.array([-0.5, 1.2, -0.8])
    y = (rng.uniform(size=120) < 1 / (1 + np.exp(-x @ beta))).astype(np.float64)
    return x, y


def gibbs(x: np.ndarray, y: np.ndarray, *, n_chains: int, n_steps: int, burn: int, seed: int) -> np.ndarray:
    gen = torch.Generator().manual_seed(seed)
    xt = torch.as_tensor(x)
    kappa = torch.as_tensor(y) - 0.5
    prior_prec = torch.eye(x.shape[1], dtype=torch.float64) / PRIOR_SD**2
    beta = torch.zeros(n_chains, x.shape[1], dtype=torch.float64)
    draws = []
    for step in range(n_steps):
        omega = random_polya_gamma(1, beta @ xt.T, generator=gen)  # (chains, n)
        prec = torch.einsum("ni,cn,nj->cij", xt, omega, xt) + prior_prec
        chol = torch.linalg.cholesky(prec)
        mean = torch.cholesky_solve((xt.T @ kappa).expand(n_chains, -1).unsqueeze(-1), chol).squeeze(-1)
        eps = torch.randn(n_chains, x.shape[1], 1, generator=gen, dtype=torch.float64)
        # beta = mean + L^-T eps has covariance (L L^T)^-1 = prec^-1
        beta = mean + torch.linalg.solve_triangular(chol.mT, eps, upper=True).squeeze(-1)
        if step >= burn:
            draws.append(beta.clone())
    return torch.cat(draws).numpy()


def nuts(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    import pymc as pm

    with pm.Model():
        beta = pm.Normal("beta", 0.0, PRIOR_SD, shape=x.shape[1])
        pm.Bernoulli("y", logit_p=pm.math.dot(x, beta), observed=y)
        trace = pm.sample(draws=3000, tune=700, chains=4, cores=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    return trace.posterior["beta"].values.reshape(-1, x.shape[1])


@pytest.mark.slow
def test_gibbs_recovers_the_nuts_posterior():
    x, y = simulated_data()
    ref = nuts(x, y)
    ours = gibbs(x, y, n_chains=16, n_steps=1000, burn=150, seed=0)
    sd = ref.std(0)
    np.testing.assert_array_less(np.abs(ours.mean(0) - ref.mean(0)), 0.1 * sd)
    np.testing.assert_allclose(ours.var(0), ref.var(0), rtol=0.10)
    # the posterior is informative: NUTS's sd is well below the prior's
    assert (sd < PRIOR_SD / 4).all()
