"""Bad arguments of the SNGP head's public parts get the library's errors, naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from uncertank_sngp import SNGPModel, SNGPRanker, SoftSpectralNorm, focal_loss

from uncertank.nn.testing import tiny_config


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    ((0.5,), {}, TypeError, r"weight must be a 2-D torch tensor \(out, in\); got float"),
    ((np.zeros((2, 2)),), {}, TypeError, "weight must be a 2-D torch tensor"),
    ((torch.zeros(2, 2, dtype=torch.int64),), {}, TypeError, "weight must be a floating-point tensor"),
    ((torch.zeros(0, 2),), {}, ValueError, "weight must have no empty side"),
    ((torch.zeros(2, 2),), {"bound": 0.0}, ValueError, "bound must be a finite number > 0; got 0.0"),
    ((torch.zeros(2, 2),), {"n_power_iterations": 0}, ValueError, "n_power_iterations must be an integer >= 1"),
    ((torch.zeros(2, 2),), {"warmup_iterations": -1}, ValueError, "warmup_iterations must be an integer >= 0"),
])
def test_soft_spectral_norm_checks_each_argument(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        SoftSpectralNorm(*args, **kwargs)


@pytest.mark.parametrize(("logits", "labels", "kwargs", "error", "match"), [
    (np.array([0.9, 0.2]), np.array([1, 0]), {}, TypeError, "logits must be a torch tensor of floats; got ndarray"),
    (torch.tensor([0.9, 0.2]), np.array([1, 0]), {}, TypeError, "labels must be a torch tensor of 0s and 1s"),
    (torch.tensor([1, 0]), torch.tensor([1, 0]), {}, TypeError, "logits must be a floating-point tensor"),
    (torch.zeros(2, 2), torch.zeros(2, 2), {}, ValueError, "logits must be 1-D"),
    (torch.zeros(0), torch.zeros(0), {}, ValueError, "logits must hold at least one pair"),
    (torch.tensor([np.nan, 0.2]), torch.tensor([1, 0]), {}, ValueError, "logits must be finite"),
    (torch.tensor([0.9, 0.2]), torch.tensor([2, 0]), {}, ValueError, "labels must hold 0s and 1s only"),
    (torch.tensor([0.9, 0.2]), torch.tensor([1, 0]), {"gamma": np.ones(2)}, ValueError, "gamma must be"),
    (torch.tensor([0.9, 0.2]), torch.tensor([1, 0]), {"gamma": -1.0}, ValueError, "gamma must be a finite number >= 0"),
])
def test_focal_loss_checks_each_argument(logits, labels, kwargs, error, match):
    with pytest.raises(error, match=match):
        focal_loss(logits, labels, **kwargs)


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"spec_norm_encoder": np.zeros(6)}, TypeError, "spec_norm_encoder must be a bool"),
    ({"output_bias": "yes"}, TypeError, "output_bias must be a bool"),
    ({"lengthscale": 0}, ValueError, "lengthscale must be a finite number > 0"),
    ({"feature_scale": np.float64(np.nan)}, ValueError, "feature_scale must be a finite number > 0"),
    ({"spec_norm_bound": -1}, ValueError, "spec_norm_bound must be a finite number > 0"),
    ({"ridge": "x"}, ValueError, "ridge must be a finite number > 0"),
    ({"cov_momentum": "/tmp/huge.run"}, TypeError, "cov_momentum must be a number in"),
    ({"mean_field_factor": -1.0}, ValueError, "mean_field_factor must be a finite number >= 0"),
    ({"output_init_std": np.ones(3)}, ValueError, "output_init_std must be a finite number >= 0"),
])
def test_the_ranker_checks_the_head_settings_when_built(params, error, match):
    with pytest.raises(error, match=match):
        SNGPRanker(tiny_config(), **params)


def test_the_model_checks_its_own_arguments():
    with pytest.raises(TypeError, match="encoder must be a transformers encoder"):
        SNGPModel(0.5)
    with pytest.raises(TypeError, match="spec_norm_encoder must be a bool"):
        SNGPModel(nn.Linear(2, 2), spec_norm_encoder="yes")
    with pytest.raises(ValueError, match="spec_norm_bound must be a finite number > 0"):
        SNGPModel(nn.Linear(2, 2), spec_norm_bound=np.inf)
