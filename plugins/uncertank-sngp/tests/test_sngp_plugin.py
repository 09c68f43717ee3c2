from __future__ import annotations

import json
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn
from uncertank_sngp import GPFBertRanker, RandomFeatureGP, SNGPModel, SNGPRanker, SoftSpectralNorm, focal_loss
from uncertank_sngp.head import apply_spectral_norm

import uncertank
from uncertank import PredictiveSamples
from uncertank.nn import load_ranker, model_device, resolve_device
from uncertank.nn.testing import probability_tolerance, test_devices, tiny_config, toy_queries

SMALL = dict(max_length=32, epochs=2, batch_size=4, lr=3e-3, n_features=256, show_progress=False)


# -- the random features and the Laplace posterior -------------------------------------------


def test_random_features_approximate_the_rbf_kernel():
    torch.manual_seed(0)
    gp = RandomFeatureGP(8, n_features=4096, lengthscale=1.5)
    x = torch.randn(12, 8) * 0.6
    phi = gp.random_features(x)
    approx = (phi @ phi.T).numpy()
    exact = torch.exp(-torch.cdist(x, x) ** 2 / (2 * 1.5**2)).numpy()
    # Monte Carlo error about 1/sqrt(D) = 0.016 per entry
    assert np.abs(approx - exact).max() < 0.08 and np.abs(approx - exact).mean() < 0.02
    assert exact.min() < 0.5  # the check covers far pairs too


def test_default_lengthscale_and_scale():
    gp = RandomFeatureGP(32, n_features=64)
    assert gp.lengthscale == pytest.approx(4.0) and gp.feature_scale == pytest.approx(math.sqrt(2 / 64))
    assert gp.feature_weight.shape == (64, 32) and ((gp.feature_bias >= 0) & (gp.feature_bias < 2 * math.pi)).all()


def test_output_weights_start_small_and_random_or_at_the_prior_mean():
    torch.manual_seed(0)
    gp = RandomFeatureGP(8, n_features=4096)
    w = gp.beta.weight.detach()
    assert float(w.mean()) == pytest.approx(0.0, abs=1e-3) and float(w.std()) == pytest.approx(0.01, rel=0.05)
    assert torch.count_nonzero(RandomFeatureGP(8, n_features=64, output_init_std=0).beta.weight) == 0
    assert float(RandomFeatureGP(8, n_features=4096, output_init_std=0.3).beta.weight.detach().std()) == pytest.approx(
        0.3, rel=0.05
    )


def _fit_head(gp: RandomFeatureGP, x: torch.Tensor, y: torch.Tensor, steps: int = 300) -> None:
    opt = torch.optim.Adam([p for p in gp.parameters() if p.requires_grad], lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.binary_cross_entropy_with_logits(gp(x), y).backward()
        opt.step()


def test_the_intercept_is_learned_or_held_at_zero():
    # Inputs that say nothing about the label, 10% relevant: the best logit is logit(0.1) everywhere.
    torch.manual_seed(0)
    x, y = torch.randn(4000, 8), (torch.rand(4000) < 0.1).float()
    with_c, without = RandomFeatureGP(8, n_features=16), RandomFeatureGP(8, n_features=16, output_bias=False)
    assert "bias" in dict(with_c.named_parameters()) and "bias" not in dict(without.named_parameters())
    assert "bias" in without.state_dict()  # held at 0 as a buffer
    for gp in (with_c, without):
        _fit_head(gp, x, y)
    assert float(without.bias) == 0.0
    assert float(with_c.bias.detach()) < -0.3  # part of logit(0.1) = -2.2 moved into the intercept
    with torch.no_grad():
        p = torch.sigmoid(with_c.mean_logit(with_c.features(x)))
    assert float(p.mean()) == pytest.approx(float(y.mean()), abs=0.01)


def test_a_checkpoint_from_before_the_intercept_loads_with_it_at_zero():
    torch.manual_seed(0)
    old = RandomFeatureGP(8, n_features=32)
    state = {k: v for k, v in old.state_dict().items() if k != "bias"}
    new = RandomFeatureGP(8, n_features=32)
    with torch.no_grad():
        new.bias.fill_(3.0)
    new.load_state_dict(state)  # strict: the missing intercept is 0, nothing else differs
    x = torch.randn(5, 8)
    assert float(new.bias.detach()) == 0.0
    torch.testing.assert_close(new.mean_logit(new.features(x)), old.mean_logit(old.features(x)))


@pytest.mark.parametrize("likelihood", ["logistic", "gaussian"])
def test_minibatch_precision_equals_the_full_batch_one(likelihood):
    torch.manual_seed(0)
    gp = RandomFeatureGP(6, n_features=40, cov_likelihood=likelihood)
    nn.init.normal_(gp.beta.weight)
    x = torch.randn(50, 6)
    gp.eval()
    with torch.no_grad(), gp.accumulating():
        for chunk in x.split(7):
            gp(chunk)
    chunked = gp.precision.clone()
    assert int(gp.n_seen) == 50 and chunked.dtype == torch.float64
    gp.reset_precision()
    with torch.no_grad(), gp.accumulating():
        gp(x)  # the full batch at once
    # equal up to the float32 rounding of the features (batch shapes change the matmul's blocking)
    torch.testing.assert_close(chunked, gp.precision, rtol=1e-5, atol=1e-7)
    with torch.no_grad():
        phi = gp.features(x)
        p = torch.sigmoid(gp.beta(phi)[:, 0]).double()
    w = p * (1 - p) if likelihood == "logistic" else torch.ones(50, dtype=torch.float64)
    reference = (phi.double() * w[:, None]).T @ phi.double()
    torch.testing.assert_close(chunked, reference, rtol=1e-5, atol=1e-7)


def test_no_update_in_eval_mode_or_outside_the_exact_pass():
    torch.manual_seed(0)
    gp = RandomFeatureGP(6, n_features=40)
    x = torch.randn(20, 6)
    gp.eval()
    gp(x)
    gp.train()
    out = gp(x)  # exact mode: training passes do not accumulate either
    out.sum().backward()
    assert gp.precision.abs().sum() == 0 and int(gp.n_seen) == 0
    momentum = RandomFeatureGP(6, n_features=40, cov_mode="momentum", cov_momentum=0.5)
    momentum.eval()
    momentum(x)
    assert momentum.precision.abs().sum() == 0
    momentum.train()
    momentum(x)
    assert momentum.precision.abs().sum() > 0 and not momentum.precision.requires_grad
    before = momentum.precision.clone()
    momentum(x)
    phi = momentum.features(x).double()
    torch.testing.assert_close(momentum.precision, 0.5 * before + 0.5 * (phi.T @ phi * 0.25) / 20)


def test_precision_update_does_not_grow_an_autograd_graph():
    gp = RandomFeatureGP(4, n_features=16, cov_mode="momentum")
    gp.train()
    for _ in range(3):
        gp(torch.randn(5, 4, requires_grad=True)).sum().backward()
    assert gp.precision.grad_fn is None and not gp.precision.requires_grad


@pytest.mark.parametrize("likelihood", ["gaussian", "logistic"])
def test_posterior_variance_equals_an_exact_bayesian_linear_model(likelihood):
    torch.manual_seed(1)
    gp = RandomFeatureGP(5, n_features=30, ridge=2.0, cov_likelihood=likelihood)
    nn.init.normal_(gp.beta.weight, std=0.3)
    train, test = torch.randn(25, 5), torch.randn(9, 5)
    gp.eval()
    with torch.no_grad(), gp.accumulating():
        gp(train)
    gp.update_covariance()
    with torch.no_grad():
        phi = gp.features(train).double().numpy()
        phi_star = gp.features(test).double().numpy()
        logit = gp.beta(gp.features(train))[:, 0].double().numpy()
    if likelihood == "logistic":
        p = 1 / (1 + np.exp(-logit))
        w = p * (1 - p)
    else:
        w = np.ones(25)
    # Weight space: Sigma = (ridge I + Phi^T W Phi)^-1, v = phi*^T Sigma phi*.
    sigma = np.linalg.inv(2.0 * np.eye(30) + phi.T @ (w[:, None] * phi))
    weight_space = np.einsum("nd,de,ne->n", phi_star, sigma, phi_star)
    # Function space (the GP on the same features): k** - k*^T (K + W^-1)^-1 k*, K = Phi Phi^T / ridge.
    k = phi @ phi.T / 2.0
    ks = phi_star @ phi.T / 2.0
    kss = np.sum(phi_star**2, 1) / 2.0
    function_space = kss - np.einsum("nk,kl,nl->n", ks, np.linalg.inv(k + np.diag(1 / w)), ks)
    with torch.no_grad():
        ours = gp.variance(gp.features(test)).numpy()
    np.testing.assert_allclose(ours, weight_space, rtol=1e-8)
    np.testing.assert_allclose(ours, function_space, rtol=1e-6)
    assert (ours > 0).all() and (ours < np.sum(phi_star**2, 1) / 2.0).all()  # below the prior variance
    # The mean-field logit uses that variance, lambda = pi / 8.
    with torch.no_grad():
        m = gp.beta(gp.features(test))[:, 0].double().numpy()
        np.testing.assert_allclose(gp(test).numpy(), m / np.sqrt(1 + math.pi / 8 * ours), rtol=1e-5)


def test_cholesky_escalates_jitter_and_samples_follow_the_posterior():
    gp = RandomFeatureGP(3, n_features=8, ridge=1e-12)
    v = torch.randn(8, 1, dtype=torch.float64)
    gp.precision.copy_(-(v @ v.T))  # not positive definite: needs jitter
    with pytest.raises(RuntimeError, match="not positive definite"):
        gp.update_covariance(max_tries=0)
    gp.precision.copy_(v @ v.T)  # singular up to the tiny ridge: jitter may be needed, then it works
    gp.update_covariance()
    assert bool(gp.covariance_ready)
    gp2 = RandomFeatureGP(3, n_features=6)
    gp2.precision.copy_(torch.diag(torch.arange(1.0, 7.0, dtype=torch.float64)))
    gp2.update_covariance()
    draws = gp2.sample_weights(40000, generator=torch.Generator().manual_seed(0))
    np.testing.assert_allclose(draws.var(1).numpy(), 1 / np.arange(2.0, 8.0), rtol=0.05)
    again = gp2.sample_weights(3, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(again, gp2.sample_weights(3, generator=torch.Generator().manual_seed(5)))


def test_soft_spectral_norm_only_shrinks_layers_above_the_bound():
    torch.manual_seed(0)
    big, small = nn.Linear(6, 5), nn.Linear(6, 5)
    with torch.no_grad():
        big.weight.mul_(10)
        small.weight.copy_(small.weight / torch.linalg.matrix_norm(small.weight, ord=2) * 0.5)
    raw_small = small.weight.detach().clone()
    apply_spectral_norm(big, bound=0.95)
    apply_spectral_norm(small, bound=0.95)
    assert float(torch.linalg.matrix_norm(big.weight.detach(), ord=2)) == pytest.approx(0.95, rel=1e-3)
    torch.testing.assert_close(small.weight.detach(), raw_small)  # soft: left alone below the bound
    import copy

    clone = copy.deepcopy(big)  # parametrisations survive deepcopy (the hook-based spectral_norm does not)
    torch.testing.assert_close(clone.weight, big.weight)
    with pytest.raises(ValueError, match="weight must be 2-D"):
        SoftSpectralNorm(torch.zeros(3))
    with pytest.raises(TypeError, match=r"module must be an nn\.Linear"):
        apply_spectral_norm(nn.Conv1d(1, 1, 1))


def test_focal_loss():
    x = torch.tensor([3.0, -1.0, 0.5, -4.0])
    y = torch.tensor([1, 1, 0, 0])
    bce = nn.functional.binary_cross_entropy_with_logits(x, y.float())
    assert torch.isclose(focal_loss(x, y, gamma=0.0), bce)
    p_t = torch.where(y == 1, torch.sigmoid(x), 1 - torch.sigmoid(x))
    ref = (-(1 - p_t) ** 2 * torch.log(p_t)).mean()
    assert torch.isclose(focal_loss(x, y, gamma=2.0), ref)
    assert focal_loss(x, y, gamma=2.0) < bce
    with pytest.raises(ValueError, match="gamma must be a finite number >= 0"):
        focal_loss(x, y, gamma=-1.0)
    with pytest.raises(ValueError, match="same shape"):
        focal_loss(x, y[:2])


# -- distance awareness on 2-D toy data --------------------------------------------------------


class PointEncoder(nn.Module):
    """A tiny encoder for 2-D points: ``input_ids`` carries the points (float), one "token"."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.config = SimpleNamespace(hidden_size=hidden, hidden_dropout_prob=0.0, type_vocab_size=1)
        self.lift = apply_spectral_norm(nn.Linear(2, hidden), bound=0.95)

    def forward(self, input_ids, attention_mask):
        return SimpleNamespace(last_hidden_state=self.lift(input_ids.float())[:, None, :])


def _toy_data(n=200, seed=0):
    """Two Gaussian clusters on the diagonal, one per class."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    centres = torch.tensor([[-1.5, -1.5], [1.5, 1.5]])
    x = centres[y] + 0.5 * torch.randn(n, 2, generator=g)
    return x, y


def _fit_toy(ranker, steps=150):
    """Train ``ranker``'s own network and loss on the toy data; then its covariance as on_train_end does."""
    torch.manual_seed(0)
    model = ranker.create_model(PointEncoder())
    x, y = _toy_data()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        idx = torch.randperm(x.shape[0])[:32]
        loss = ranker.loss(model(x[idx], None), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    if hasattr(model, "gp"):  # what SNGPRanker.on_train_end does: reset, one eval pass, factor
        model.gp.reset_precision()
        with torch.no_grad(), model.gp.accumulating():
            model(x, None)
        model.gp.update_covariance()
    return model


NEAR = torch.tensor([[-1.5, -1.5], [1.5, 1.5], [-1.2, -1.8], [1.8, 1.2]])
FAR = torch.tensor([[-5.0, 5.0], [5.0, -5.0], [-3.0, 6.0], [6.0, -3.0]])  # off the data's diagonal


@pytest.mark.slow
@pytest.mark.parametrize("ranker_cls", [SNGPRanker, GPFBertRanker])
def test_distance_awareness_on_2d_toy_data(ranker_cls):
    # lengthscale 1 suits the 32-wide toy features (the default sqrt(hidden / 2) is for BERT's width)
    model = _fit_toy(ranker_cls(n_features=256, lengthscale=1.0, show_progress=False))
    with torch.no_grad():
        v_near = model.gp.variance(model.features(NEAR, None))
        v_far = model.gp.variance(model.features(FAR, None))
        d_near = (torch.sigmoid(model(NEAR, None)) - 0.5).abs()
        d_far = (torch.sigmoid(model(FAR, None)) - 0.5).abs()
    assert v_far.min() > v_near.max() and v_far.mean() > 1.2 * v_near.mean(), (v_near, v_far)
    assert d_near.min() > 0.4  # confident on the training clusters
    assert d_far.mean() < d_near.mean() - 0.15, (d_near, d_far)  # pulled toward 1/2 away from them


@pytest.mark.slow
def test_a_plain_bert_head_is_not_distance_aware():
    class PlainRanker(SNGPRanker):  # same encoder and training, the two-logit cross-encoder head
        def create_model(self, encoder):
            from uncertank.nn import CrossEncoderModel

            return CrossEncoderModel(encoder, dropout=0.0)

        def loss(self, output, labels):
            return nn.functional.cross_entropy(output, labels)

    model = _fit_toy(PlainRanker(show_progress=False))
    with torch.no_grad():
        d_near = (torch.softmax(model(NEAR, None), -1)[:, 1] - 0.5).abs()
        d_far = (torch.softmax(model(FAR, None), -1)[:, 1] - 0.5).abs()
    assert d_near.min() > 0.4
    assert d_far.mean() > 0.4, d_far  # as confident far from the data as on it


# -- the rankers --------------------------------------------------------------------------


def test_registered_through_the_entry_point_and_listed():
    infos = {i.name: i for i in uncertank.list_plugins("rankers")}
    assert infos["sngp"].distribution == infos["gpf_bert"].distribution == "uncertank-sngp"
    assert isinstance(uncertank.make_ranker("sngp", backbone=tiny_config()), SNGPRanker)
    gpf = uncertank.make_ranker("gpf_bert", backbone=tiny_config())
    assert isinstance(gpf, GPFBertRanker) and gpf.focal_gamma == 2.0
    assert gpf.training_config.lr == 5e-6 and gpf.training_config.weight_decay == 0.0
    assert gpf.training_config.batch_size == 16 and gpf.training_config.epochs == 1
    out = subprocess.run([sys.executable, "-m", "uncertank.cli", "plugins"], capture_output=True, text=True, check=True)
    listed = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines() if line.startswith("  ")}
    assert listed["sngp"] == listed["gpf_bert"] == "uncertank-sngp"


@pytest.fixture(scope="module")
def fitted():
    queries = toy_queries()
    return SNGPRanker(tiny_config(), **SMALL).fit(queries), queries


def test_fit_predict_and_closed_form(fitted):
    ranker, queries = fitted
    gp = ranker.model.gp
    assert bool(gp.covariance_ready) and int(gp.n_seen) == 20  # one pass over the 20 training pairs
    pred = ranker.predict(queries)
    assert pred.scores.shape == (100,) and ((pred.scores > 0) & (pred.scores < 1)).all()
    mean, var = ranker.latent_mean_variance(queries)
    assert mean.shape == var.shape == (100,) and (var > 0).all()
    np.testing.assert_allclose(pred.scores, 1 / (1 + np.exp(-mean / np.sqrt(1 + math.pi / 8 * var))), atol=1e-5)
    assert ranker.history_ is not None and len(ranker.history_.loss) == 10
    assert isinstance(ranker, uncertank.TrainableRanker)


def test_predict_samples_are_joint_weight_draws(fitted):
    ranker, queries = fitted
    samples = ranker.predict_samples(queries)
    assert isinstance(samples, PredictiveSamples) and samples.samples.shape == (10, 100)
    np.testing.assert_array_equal(ranker.predict_samples(queries).samples, samples.samples)  # seeded
    many = ranker.predict_samples(queries, n_samples=4000).samples
    mean, var = ranker.latent_mean_variance(queries)
    logits = np.log(many) - np.log1p(-many)
    np.testing.assert_allclose(logits.mean(0), mean, atol=4 * np.sqrt(var.max() / 4000) + 1e-6)
    np.testing.assert_allclose(logits.var(0), var, rtol=0.15)
    # One draw of the weights for every pair: the logits of two pairs covary as phi_i^T Sigma phi_j.
    model = ranker.model
    enc = ranker.encode(queries)
    with torch.no_grad():
        phi = model.features(**enc.batch(np.arange(4), model_device(model))).double()
        L = model.gp.cholesky
        s = torch.linalg.solve_triangular(L, phi.T, upper=False)
        cov01 = float((s[:, 0] * s[:, 1]).sum())
    emp = np.cov(logits[:, 0], logits[:, 1])[0, 1]
    assert emp == pytest.approx(cov01, abs=0.15 * np.sqrt(var[0] * var[1]))
    with pytest.raises(ValueError, match="n_samples"):
        ranker.predict_samples(queries, n_samples=0)


def test_the_intercept_enters_every_prediction(fitted):
    ranker, queries = fitted
    gp = ranker.model.gp
    mean0, var0 = ranker.latent_mean_variance(queries)
    draws0 = ranker.predict_samples(queries, n_samples=50).samples
    before = gp.bias.detach().clone()
    try:
        with torch.no_grad():
            gp.bias.add_(0.7)
        mean, var = ranker.latent_mean_variance(queries)
        np.testing.assert_allclose(mean, mean0 + 0.7, atol=1e-6)
        np.testing.assert_array_equal(var, var0)
        expected = 1 / (1 + np.exp(-mean / np.sqrt(1 + math.pi / 8 * var)))
        np.testing.assert_allclose(ranker.predict(queries).scores, expected, atol=1e-5)
        draws = ranker.predict_samples(queries, n_samples=50).samples
        logit = lambda p: np.log(p) - np.log1p(-p)  # noqa: E731
        np.testing.assert_allclose(logit(draws), logit(draws0) + 0.7, atol=1e-4)
    finally:
        with torch.no_grad():
            gp.bias.copy_(before)


def test_prior_log_odds_of_the_training_pairs():
    queries = toy_queries(n_queries=4, n_candidates=10)  # one relevant of ten per query
    assert SNGPRanker(tiny_config(), train_ratio=9).prior_log_odds(queries) == pytest.approx(-math.log(9))
    assert SNGPRanker(tiny_config()).prior_log_odds(queries) == 0.0  # balanced pairs, the default
    assert SNGPRanker(tiny_config(), train_ratio=None).prior_log_odds(queries) == pytest.approx(math.log(4 / 36))


@pytest.mark.parametrize(("params", "start"), [
    ({"train_ratio": 9}, -math.log(9)),  # a new head starts at the prior log-odds
    ({"train_ratio": 9, "output_bias_init": 0.5}, 0.5),
    ({"train_ratio": 9, "output_bias": False}, 0.0),
])
def test_a_new_heads_intercept_starts_where_asked(params, start):
    queries = toy_queries(n_queries=4, n_candidates=10)
    ranker = SNGPRanker(tiny_config(), **{**SMALL, "epochs": 1, "lr": 1e-12, "n_features": 32}, **params)
    ranker.fit(queries)  # a rate too small to move it
    assert float(ranker.model.gp.bias.detach()) == pytest.approx(start, abs=1e-6)
    assert ranker.extra_params()["output_bias"] is params.get("output_bias", True)
    with pytest.raises(ValueError, match="output_bias_init must be None or a finite number; got 'x'"):
        SNGPRanker(tiny_config(), output_bias_init="x")


def test_save_load_is_bit_identical(tmp_path, fitted):
    ranker, queries = fitted
    before = ranker.predict(queries).scores
    samples = ranker.predict_samples(queries).samples
    ranker.save(tmp_path / "ck")
    manifest = json.loads((tmp_path / "ck" / "uncertank.json").read_text())
    assert manifest["ranker"] == "sngp" and manifest["extra"]["n_features"] == 256
    from safetensors.torch import load_file

    state = load_file(str(tmp_path / "ck" / "model.safetensors"))
    for key in ("gp.cholesky", "gp.precision", "gp.feature_weight", "gp.feature_bias", "gp.n_seen", "gp.bias"):
        torch.testing.assert_close(state[key], ranker.model.state_dict()[key].cpu(), rtol=0, atol=0)
    fitted_on = resolve_device(ranker.device).type
    for again in (SNGPRanker.load(tmp_path / "ck"), load_ranker(tmp_path / "ck")):
        assert type(again) is SNGPRanker
        np.testing.assert_array_equal(again.predict(queries).scores, before)
        np.testing.assert_array_equal(again.predict_samples(queries).samples, samples)
    for device in test_devices():  # a checkpoint loads on every device and scores within bf16's tolerance
        again = load_ranker(tmp_path / "ck", device=device)
        atol = probability_tolerance(fitted_on, device)
        np.testing.assert_allclose(again.predict(queries).scores, before, rtol=0, atol=atol)
        np.testing.assert_allclose(again.predict_samples(queries).samples, samples, rtol=0, atol=atol)


def test_gpf_bert_trains_with_focal_loss_and_round_trips(tmp_path):
    queries = toy_queries()
    ranker = GPFBertRanker(tiny_config(), max_length=32, epochs=1, batch_size=4, lr=3e-3, n_features=128,
                           spec_norm_encoder=True, cov_mode="momentum", cov_likelihood="gaussian",
                           show_progress=False).fit(queries)
    gp = ranker.model.gp
    assert bool(gp.covariance_ready) and int(gp.n_seen) == 20  # accumulated during training
    sn = [m for m in ranker.model.encoder.modules() if hasattr(m, "parametrizations")]
    assert len(sn) == 2 * 6  # q, k, v, attention output, intermediate, output in each of 2 layers
    ranker.save(tmp_path / "ck")
    again = load_ranker(tmp_path / "ck")
    assert type(again) is GPFBertRanker and again.focal_gamma == 2.0 and again.head_params["cov_mode"] == "momentum"
    np.testing.assert_array_equal(again.predict(queries).scores, ranker.predict(queries).scores)


def test_validation_never_updates_the_precision():
    train, valid = toy_queries(), toy_queries(n_queries=4, seed=1)
    ranker = SNGPRanker(tiny_config(), **{**SMALL, "epochs": 2})
    seen = []
    real = ranker.on_train_end

    def spy(model, pairs, labels, acc):
        seen.append(int(model.gp.n_seen))  # nothing accumulated by training or validation
        real(model, pairs, labels, acc)

    ranker.on_train_end = spy
    ranker.fit(train, valid)
    assert seen == [0] and int(ranker.model.gp.n_seen) == 20 and len(ranker.history_.valid_map) == 2


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"cov_mode": "online"}, ValueError, "cov_mode must be one of 'exact', 'momentum'"),
        ({"cov_likelihood": "probit"}, ValueError, "cov_likelihood must be one of"),
        ({"n_features": 0}, ValueError, "n_features must be an integer >= 1"),
        ({"focal_gamma": -0.5}, ValueError, "focal_gamma"),
        ({"n_samples": 1.5}, TypeError, "n_samples"),
    ],
)
def test_argument_errors(params, error, match):
    with pytest.raises(error, match=match):
        SNGPRanker(tiny_config(), **params)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"lengthscale": 0.0}, "lengthscale must be a finite number > 0"),
        ({"cov_momentum": 1.0}, r"cov_momentum must lie in \[0, 1\)"),
        ({"ridge": -1.0}, "ridge"),
        ({"mean_field_factor": float("nan")}, "mean_field_factor"),
        ({"output_init_std": -0.1}, "output_init_std must be a finite number >= 0"),
    ],
)
def test_head_argument_errors(params, match):
    with pytest.raises(ValueError, match=match):
        RandomFeatureGP(4, n_features=8, **params)
    with pytest.raises(TypeError, match="output_bias must be True or False; got 'yes'"):
        RandomFeatureGP(4, n_features=8, output_bias="yes")  # type: ignore[arg-type]


def test_spectral_norm_options_errors():
    from uncertank.nn import build_backbone

    encoder, _ = build_backbone(tiny_config())
    with pytest.raises(ValueError, match="spec_norm_encoder=True needs spec_norm_bound"):
        SNGPModel(encoder, spec_norm_bound=None, spec_norm_encoder=True, n_features=8)
    with pytest.raises(ValueError, match="BERT-style encoder"):
        SNGPModel(PointEncoder(), spec_norm_encoder=True, n_features=8)
    with pytest.raises(ValueError, match="spec_norm_bound must be a finite number > 0"):
        SNGPModel(encoder, spec_norm_bound=0.0, n_features=8)


def test_from_ranker_puts_the_gp_head_on_a_trained_encoder():
    from uncertank_bert import BertRanker

    queries = toy_queries()
    bert = BertRanker(tiny_config(), **{k: v for k, v in SMALL.items() if k != "n_features"}).fit(queries)
    sngp = GPFBertRanker.from_ranker(bert, **SMALL)
    assert isinstance(sngp, GPFBertRanker) and not sngp.is_fitted and sngp.focal_gamma == 2.0
    for k, v in bert.model.encoder.state_dict().items():  # the copy, tensor by tensor
        assert torch.equal(sngp.model.encoder.state_dict()[k], v), k
    sngp.fit(queries)
    assert bool(sngp.model.gp.covariance_ready)  # the covariance of the trained network
    p = sngp.predict(queries).scores
    assert p.shape == (queries.n_pairs,) and np.all((p > 0) & (p < 1))
