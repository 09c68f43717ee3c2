"""Bad arguments of the posterior's functions get the library's errors, naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from uncertank_laplace import fit_last_layer, log_marginal_likelihood, optimize_prior_precision, probit


def _data():
    rng = np.random.default_rng(0)
    phi = rng.normal(size=(20, 3))
    return phi, (phi[:, 0] > 0).astype(np.int64), rng.normal(size=(1, 3)), np.zeros(1)


@pytest.mark.parametrize(("change", "error", "match"), [
    ({"features": "x"}, TypeError, "features must be numeric"),
    ({"features": np.zeros(3)}, ValueError, "features must be 2-D"),
    ({"labels": [np.nan] * 20}, ValueError, "labels must be finite"),
    ({"labels": np.zeros((20, 1))}, ValueError, "labels must be 1-D"),
    ({"weight": "x"}, TypeError, "weight must be numeric"),
    ({"weight": torch.ones(1, 3, dtype=torch.complex64)}, TypeError, "weight must hold real numbers"),
    ({"bias": "/tmp/edge-a.run"}, TypeError, "bias must be numeric"),
    ({"structure": np.array([-1, 2, 3])}, ValueError, "structure must be one of 'auto', 'full', 'kron'"),
    ({"bounds": [0.3, 0.6, 0.6]}, ValueError, "bounds must be two finite numbers 0 < lo < hi; got 3 values"),
    ({"bounds": 0.5}, TypeError, "bounds must be a pair"),
    ({"bounds": (np.nan, 1.0)}, ValueError, r"bounds\[0\] must be a finite number"),
    ({"prior_precision": np.array([1.0])}, TypeError, "prior_precision must be 'marglik' or a number > 0; got ndarray"),
    ({"weight": np.full((1, 3), 1e308)}, ValueError, "features and weight are too large"),
    ({"weight": np.full((1, 3), 1e300), "features": np.zeros((20, 3))}, ValueError, "weight and bias are too large"),
])
def test_fit_last_layer_checks_each_argument(change, error, match):
    phi, y, w, b = _data()
    args = {"features": phi, "labels": y, "weight": w, "bias": b, **change}
    with pytest.raises(error, match=match):
        fit_last_layer(args.pop("features"), args.pop("labels"), args.pop("weight"), args.pop("bias"), **args)


def test_fit_last_layer_refuses_an_overflowing_hessian():
    phi, y, _, b = _data()
    with pytest.raises(ValueError, match="features are too large: the Hessian"):
        fit_last_layer(phi * 1e160, y, np.zeros((1, 3)), b)


@pytest.mark.parametrize(("args", "error", "match"), [
    (("x", 1.0, [1.0], 1.0), TypeError, "log_likelihood must be a finite number"),
    ((0.5, "map", [1.0], 1.0), TypeError, "sq_norm must be a finite number >= 0"),
    ((0.5, -1.0, [1.0], 1.0), ValueError, "sq_norm must be a finite number >= 0"),
    ((0.5, 1.0, [np.nan], 1.0), ValueError, "eigenvalues must be finite"),
    ((0.5, 1.0, "map", 1.0), TypeError, "eigenvalues must be numeric"),
    ((0.5, 1.0, [1.0], np.array([1.0, 2.0])), TypeError, "prior_precision must be a finite number > 0"),
])
def test_log_marginal_likelihood_checks_each_argument(args, error, match):
    with pytest.raises(error, match=match):
        log_marginal_likelihood(*args)


def test_optimize_prior_precision_checks_each_argument():
    with pytest.raises(TypeError, match="sq_norm must be a finite number >= 0"):
        optimize_prior_precision("map", [1.0])
    with pytest.raises(ValueError, match="eigenvalues must be finite"):
        optimize_prior_precision(1.0, [np.inf])
    with pytest.raises(TypeError, match=r"bounds\[1\] must be a finite number"):
        optimize_prior_precision(1.0, [1.0], bounds=(1e-3, "x"))


@pytest.mark.parametrize(("mean", "variance", "error", "match"), [
    (np.array([0.1, 0.9]), None, ValueError, "variance must be"),
    (np.array([0.1, 0.9]), "x", TypeError, "variance must be numeric"),
    (np.array([0.1, np.nan]), np.ones(2), ValueError, "mean must be finite"),
    (np.array([0.1, 0.9]), np.array([1.0, -1.0]), ValueError, "variance must be >= 0"),
    (np.ones(2), np.ones(3), ValueError, "mean and variance must have shapes that broadcast"),
    (torch.ones(2), np.ones(2), TypeError, "variance must be a torch tensor, as mean is"),
    (np.ones(2), torch.ones(2), TypeError, "mean must be a torch tensor, as variance is"),
    (torch.ones(2), torch.tensor([1.0, -1.0]), ValueError, "variance must be >= 0"),
    (torch.tensor([np.inf, 1.0]), torch.ones(2), ValueError, "mean must be finite"),
])
def test_probit_checks_both_arguments(mean, variance, error, match):
    with pytest.raises(error, match=match):
        probit(mean, variance)


def test_probit_still_takes_numbers_arrays_and_tensors():
    assert float(probit(0.0, 5.0)) == 0.5
    assert probit(np.zeros((2, 3)), np.ones(3)).shape == (2, 3)
    assert float(probit(np.array(-1e308), np.array(0.0))) == 0.0  # the limit, not a NaN
    assert isinstance(probit(torch.zeros(2), torch.ones(2)), torch.Tensor)
