"""Bad arguments of the GP layer's and the Pólya-Gamma functions get the library's errors, naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from uncertank_pgdrr import PGDRRRanker, polya_gamma_moments, random_polya_gamma
from uncertank_pgdrr.gp import (
    GaussianProcessHead,
    conditional_moments,
    gauss_hermite_sigmoid,
    gibbs_sample,
    marginal_nll,
    rbf_kernel,
    sample_latent,
)
from uncertank_pgdrr.ranker import PGDRRModel

F64 = torch.float64


def _problem(n=4, chains=2):
    x = torch.randn(n, 2, dtype=F64, generator=torch.Generator().manual_seed(0))
    return rbf_kernel(x, x), torch.full((chains, n), 0.3, dtype=F64), torch.tensor([1, 0, 1, 0][:n])


def test_rbf_kernel_checks_each_argument():
    x = torch.zeros(3, 2)
    with pytest.raises(TypeError, match="x1 must be a torch tensor; got ndarray"):
        rbf_kernel(np.zeros((3, 2)), x)
    with pytest.raises(ValueError, match="x2 must be 2-D"):
        rbf_kernel(x, torch.zeros(3))
    with pytest.raises(ValueError, match=r"x2 must have the width of x1 \(2 columns\); got 3"):
        rbf_kernel(x, torch.zeros(3, 3))
    with pytest.raises(ValueError, match="x1 must be finite"):
        rbf_kernel(torch.full((3, 2), float("nan")), x)
    with pytest.raises(ValueError, match="length_scale must be a finite number > 0; got 0"):
        rbf_kernel(x, x, length_scale=0)
    with pytest.raises(ValueError, match="length_scale must be finite and > 0"):
        rbf_kernel(x, x, length_scale=torch.tensor(-1.0))
    with pytest.raises(TypeError, match="output_scale must be a finite number > 0"):
        rbf_kernel(x, x, output_scale="big")


@pytest.mark.parametrize("fn", [conditional_moments, marginal_nll, sample_latent])
def test_the_conditional_functions_check_kernel_omega_and_labels(fn):
    k, om, y = _problem()
    with pytest.raises(TypeError, match="kernel must be a torch tensor; got int"):
        fn(1, om, y)
    with pytest.raises(ValueError, match=r"kernel must be square"):
        fn(k[:3], om, y)
    with pytest.raises(TypeError, match="omega must be a torch tensor; got ndarray"):
        fn(k, om.numpy(), y)
    with pytest.raises(ValueError, match=r"omega must have one column per kernel row \(4\)"):
        fn(k, om[:, :3], y)
    with pytest.raises(ValueError, match="omega must hold positive Pólya-Gamma draws; got 2 values <= 0"):
        fn(k, torch.cat([om[:, :3], torch.zeros(2, 1, dtype=F64)], 1), y)
    with pytest.raises(TypeError, match="labels must be a torch tensor"):
        fn(k, om, [1, 0, 1, 0])
    with pytest.raises(ValueError, match="labels must hold 0s and 1s only"):
        fn(k, om, torch.tensor([1, 0, 2, 0]))
    with pytest.raises(ValueError, match=r"labels must have one entry per kernel row \(4\); got 3"):
        fn(k, om, y[:3])
    with pytest.raises(ValueError, match="jitter must be a finite number >= 0"):
        fn(k, om, y, jitter=-1.0)
    with pytest.raises(ValueError, match="kernel must be positive semi-definite"):
        fn(-10 * torch.eye(4, dtype=F64), torch.ones(2, 4, dtype=F64), y)


def test_sample_latent_checks_generator_and_kernel_chol():
    k, om, y = _problem()
    with pytest.raises(TypeError, match=r"generator must be a torch\.Generator or None; got bytes"):
        sample_latent(k, om, y, generator=b"x")
    with pytest.raises(ValueError, match=r"kernel_chol must have the kernel's shape \(4, 4\); got \(3, 3\)"):
        sample_latent(k, om, y, kernel_chol=torch.eye(3, dtype=F64))


def test_gibbs_sample_checks_each_argument():
    k, _, y = _problem()
    with pytest.raises(TypeError, match="kernel must be a torch tensor; got int"):
        gibbs_sample(1, y)
    with pytest.raises(ValueError, match="n_chains must be an integer >= 1; got 0"):
        gibbs_sample(k, y, n_chains=0)
    with pytest.raises(TypeError, match="n_steps must be an integer >= 1"):
        gibbs_sample(k, y, n_steps=2.5)
    with pytest.raises(TypeError, match=r"generator must be a torch\.Generator or None"):
        gibbs_sample(k, y, generator=0)
    with pytest.raises(ValueError, match="kernel must be positive definite: it is not even with a nugget"):
        gibbs_sample(-torch.eye(4, dtype=F64), y, n_steps=1)
    omega, latent = gibbs_sample(k, y, n_chains=3, n_steps=2, generator=torch.Generator().manual_seed(0))
    assert omega.shape == latent.shape == (3, 4)


def test_gauss_hermite_sigmoid_checks_each_argument():
    m = torch.zeros(3, dtype=F64)
    with pytest.raises(TypeError, match="mean must be a floating-point torch tensor; got ndarray"):
        gauss_hermite_sigmoid(np.zeros(3), m)
    with pytest.raises(TypeError, match=r"var must be a floating-point tensor; got a tensor of torch\.int64"):
        gauss_hermite_sigmoid(m, torch.zeros(3, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"var must have the shape of mean \(3,\); got \(2,\)"):
        gauss_hermite_sigmoid(m, m[:2])
    with pytest.raises(ValueError, match="mean must be finite"):
        gauss_hermite_sigmoid(m + float("inf"), m)
    with pytest.raises(ValueError, match="n_points must be an integer >= 1; got 0"):
        gauss_hermite_sigmoid(m, m, n_points=0)


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"in_features": 0.5}, TypeError, "in_features must be an integer >= 1; got float 0.5"),
    ({"projection_dim": 0}, ValueError, "projection_dim must be an integer >= 1; got 0"),
    ({"length_scale": "x"}, TypeError, "length_scale must be a finite number > 0"),
    ({"bank_size": np.ones(2)}, TypeError, "bank_size must be an integer >= 1"),
    ({"jitter": 0.0}, ValueError, "jitter must be a finite number > 0"),
    ({"seed": -1}, ValueError, "seed must be an integer >= 0"),
    ({"learn_length_scale": "yes"}, TypeError, "learn_length_scale must be a bool"),
])
def test_the_head_checks_each_argument(params, error, match):
    with pytest.raises(error, match=match):
        GaussianProcessHead(**{"in_features": 4, **params})


def test_the_model_and_the_ranker_check_their_arguments():
    with pytest.raises(TypeError, match="encoder must be a transformers encoder"):
        PGDRRModel(0.1)
    with pytest.raises(TypeError, match="encoder must be a transformers encoder whose config names its hidden_size"):
        PGDRRModel(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="output_scale must be a finite number > 0; got -9223372036854775809"):
        PGDRRRanker(output_scale=-(2**63) - 1)


def test_the_polya_gamma_functions_check_h_z_and_the_options():
    with pytest.raises(TypeError, match="h must be a real number, tensor or array of them; got str"):
        polya_gamma_moments("x", 0.5)
    with pytest.raises(ValueError, match="h must be positive"):
        polya_gamma_moments(0, 0.5)
    with pytest.raises(ValueError, match="z must be finite"):
        polya_gamma_moments(1, float("inf"))
    with pytest.raises(ValueError, match=r"h and z must have shapes that broadcast; got \(2,\) and \(3,\)"):
        polya_gamma_moments([1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"h and z must have shapes that broadcast"):
        random_polya_gamma(np.array([1, 2]), np.zeros(3))
    with pytest.raises(ValueError, match="backend must be one of 'torch', 'polyagamma'"):
        random_polya_gamma(1, 0.5, backend=np.zeros(3))
    with pytest.raises(ValueError, match="method must be one of 'devroye', 'normal-approx'"):
        random_polya_gamma(1, 0.5, method="/tmp/x")
    with pytest.raises(ValueError, match=r"h must be integers <= 2147483648"):
        random_polya_gamma(1e20, 0.5)


def test_polya_gamma_moments_reads_a_python_float_in_float64():
    # it was rounded to float32 first: 0.0999 read as 0.09989999979734421
    exact = polya_gamma_moments(1, torch.tensor(0.0999, dtype=F64))
    assert torch.equal(polya_gamma_moments(1, 0.0999)[0], exact[0])
