"""The ranker ``laplace``: conformance, a user's folder, a fitted bert, checkpoints and a study."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from uncertank_laplace import LaplaceRanker
from uncertank_laplace.ranker import POSTERIOR_FILE, output_layer

import uncertank
from uncertank import NotFittedError, PredictiveSamples
from uncertank.nn import from_pretrained, load_ranker
from uncertank.nn.testing import tiny_classifier_folder, tiny_config, toy_queries
from uncertank.testing import check_stochastic_ranker

SMALL = dict(max_length=32, epochs=2, batch_size=4, lr=3e-3, show_progress=False, device="cpu")


def _logit(p):
    return np.log(p) - np.log1p(-p)


@pytest.fixture(scope="module")
def queries():
    return toy_queries()


@pytest.fixture(scope="module")
def bert(queries):
    from uncertank_bert import BertRanker

    return BertRanker(tiny_config(), **SMALL).fit(queries)


@pytest.fixture(scope="module")
def exported(bert, tmp_path_factory):
    """The fitted bert as a user's Hugging Face folder (one logit, uncertank's pair format recorded)."""
    return bert.save_pretrained(tmp_path_factory.mktemp("hf") / "my-cross-encoder")


@pytest.fixture(scope="module")
def on_folder(exported, queries):
    return from_pretrained(exported, "laplace", show_progress=False, device="cpu").fit(queries)


def test_registered_through_the_entry_point_and_listed():
    infos = {i.name: i for i in uncertank.list_plugins("rankers")}
    assert infos["laplace"].distribution == "uncertank-laplace"
    ranker = uncertank.make_ranker("laplace", backbone=tiny_config(), n_samples=7)
    assert isinstance(ranker, LaplaceRanker) and ranker.n_samples == 7 and not ranker.is_fitted


def test_conformance_kit_from_a_backbone(queries):
    params = {**SMALL, "n_samples": 5}
    ranker = LaplaceRanker(tiny_config(), **params)
    done = check_stochastic_ranker(ranker, queries, train=queries, n_samples=4, params=params)
    assert "save/load" in " ".join(done) and ranker.posterior_ is not None
    assert ranker.weights_source_ == "fit" and ranker.history_ is not None  # fine-tuned first, as bert


def test_conformance_kit_on_a_users_folder(exported, queries):
    params = {"show_progress": False, "device": "cpu", "n_samples": 5}
    ranker = from_pretrained(exported, "laplace", **params)
    check_stochastic_ranker(ranker, queries, train=queries, n_samples=4, params={**params, "pretrained": exported})


def test_on_a_users_folder_the_mean_is_the_model_and_the_network_is_untouched(on_folder, exported, queries):
    model = from_pretrained(exported, show_progress=False, device="cpu")  # the folder as it is (NeuralRanker)
    before = {k: v.clone() for k, v in from_pretrained(exported, "laplace").build_model().state_dict().items()}
    for k, v in on_folder.model.state_dict().items():  # fit changed no weight of the network
        assert torch.equal(v, before[k]), k
    layer = output_layer(on_folder.model)
    post = on_folder.posterior_
    assert post.structure == "full" and post.mean.shape == (1, 33)  # one logit on 32 features, and the bias
    np.testing.assert_array_equal(post.mean[0, :32].numpy(), layer.weight.detach().double().numpy()[0])
    assert post.n_data == 20 and 0 < post.prior_precision < 1e6  # balanced pairs of ten queries
    m, v = on_folder.latent_mean_variance(queries)
    np.testing.assert_allclose(m, _logit(model.predict(queries).scores), atol=1e-4)
    assert (v > 0).all()
    p = on_folder.predict(queries).scores
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-m / np.sqrt(1 + math.pi / 8 * v))), atol=1e-6)
    # the probit pulls toward 1/2: never past it, never further from it than the model
    mine, theirs = p - 0.5, model.predict(queries).scores - 0.5
    assert (np.sign(mine) == np.sign(theirs)).all() and (np.abs(mine) <= np.abs(theirs) + 1e-7).all()


def test_the_variance_is_the_posterior_of_the_captured_features(on_folder, queries):
    post = on_folder.posterior_
    feats = on_folder._feature_batches(
        on_folder.model, on_folder.encode(queries), lambda phi, logits: phi.float(), None, "features"
    )
    x = np.c_[feats, np.ones(len(feats))]
    _, s = post.contrast()
    _, v = on_folder.latent_mean_variance(queries)
    np.testing.assert_allclose(v, np.einsum("ni,ij,nj->n", x, s.numpy(), x), rtol=1e-5)
    np.testing.assert_allclose(v, post.logit_covariance(feats).numpy()[:, 0, 0], rtol=1e-5)


def test_predict_samples_are_joint_draws_of_the_output_layer(on_folder, queries):
    samples = on_folder.predict_samples(queries)
    assert isinstance(samples, PredictiveSamples) and samples.samples.shape == (100, 100)
    np.testing.assert_array_equal(on_folder.predict_samples(queries).samples, samples.samples)  # seeded
    many = _logit(on_folder.predict_samples(queries, n_samples=4000).samples)
    m, v = on_folder.latent_mean_variance(queries)
    np.testing.assert_allclose(many.mean(0), m, atol=4 * np.sqrt(v.max() / 4000))
    np.testing.assert_allclose(many.var(0), v, rtol=0.1)
    # one draw for every pair: two pairs' logits covary as x_i^T S x_j
    feats = on_folder._feature_batches(
        on_folder.model, on_folder.encode(queries), lambda phi, logits: phi.float(), None, "features"
    )
    x = np.c_[feats[:2], np.ones(2)]
    cov01 = x[0] @ on_folder.posterior_.contrast()[1].numpy() @ x[1]
    assert np.cov(many[:, 0], many[:, 1])[0, 1] == pytest.approx(cov01, abs=0.1 * np.sqrt(v[0] * v[1]))
    with pytest.raises(ValueError, match="n_samples"):
        on_folder.predict_samples(queries, n_samples=0)


def test_from_a_fitted_bert_the_whole_network_is_copied(bert, queries):
    ranker = LaplaceRanker.from_ranker(bert, show_progress=False, device="cpu", hessian_structure="kron")
    assert not ranker.is_fitted and ranker.training_config.max_length == 32
    for k, v in bert.model.state_dict().items():
        assert torch.equal(ranker.model.state_dict()[k], v), k
    assert ranker.model is not bert.model
    ranker.fit(queries)
    assert ranker.posterior_.structure == "kron" and ranker.posterior_.mean.shape == (2, 33)  # bert's two logits
    m, _ = ranker.latent_mean_variance(queries)
    np.testing.assert_allclose(m, _logit(bert.predict(queries).scores), atol=1e-4)  # l1 - l0
    for k, v in bert.model.state_dict().items():  # bert itself is not changed
        assert torch.equal(ranker.model.state_dict()[k], v), k


def test_a_two_logit_folder(tmp_path, queries):
    folder = tiny_classifier_folder(tmp_path / "two", num_labels=2)
    ranker = from_pretrained(folder, "laplace", show_progress=False, device="cpu").fit(queries)
    assert ranker.posterior_.mean.shape == (2, 17)
    m, _ = ranker.latent_mean_variance(queries)
    plain = from_pretrained(folder, show_progress=False, device="cpu").predict(queries).scores
    np.testing.assert_allclose(m, _logit(plain), atol=1e-4)


def test_save_load_is_bit_identical(on_folder, queries, tmp_path):
    p = on_folder.predict(queries).scores
    s = on_folder.predict_samples(queries).samples
    on_folder.save(tmp_path / "ck")
    manifest = json.loads((tmp_path / "ck" / "uncertank.json").read_text())
    assert manifest["ranker"] == "laplace" and manifest["extra"]["prior_precision"] == "marglik"
    assert (tmp_path / "ck" / POSTERIOR_FILE).is_file()
    for again in (LaplaceRanker.load(tmp_path / "ck"), load_ranker(tmp_path / "ck"),
                  LaplaceRanker.load(tmp_path / "ck", n_samples=100, show_progress=False)):
        assert type(again) is LaplaceRanker and again.is_fitted
        assert again.posterior_.prior_precision == on_folder.posterior_.prior_precision
        np.testing.assert_array_equal(again.predict(queries).scores, p)
        np.testing.assert_array_equal(again.predict_samples(queries).samples, s)
    with pytest.raises(ValueError, match="hessian_structure='kron' contradicts the checkpoint's 'full'"):
        LaplaceRanker.load(tmp_path / "ck", hessian_structure="kron")
    with pytest.raises(ValueError, match=r"prior_precision=3\.0 contradicts"):
        LaplaceRanker.load(tmp_path / "ck", prior_precision=3.0)
    (tmp_path / "ck" / POSTERIOR_FILE).write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match="is not a readable safetensors file"):
        LaplaceRanker.load(tmp_path / "ck")
    (tmp_path / "ck" / POSTERIOR_FILE).unlink()
    with pytest.raises(ValueError, match="holds no Laplace posterior"):
        LaplaceRanker.load(tmp_path / "ck")


def test_a_fixed_prior_precision(exported, queries):
    ranker = from_pretrained(exported, "laplace", prior_precision=2.0, show_progress=False).fit(queries)
    assert ranker.posterior_.prior_precision == 2.0


def test_unfitted_refuses_to_predict_and_to_save(exported, queries, tmp_path):
    ranker = from_pretrained(exported, "laplace", show_progress=False)
    assert not ranker.is_fitted  # a kept head is not a posterior
    for call in (ranker.predict, ranker.predict_samples, ranker.latent_mean_variance):
        with pytest.raises(NotFittedError, match="has no Laplace posterior yet: call fit"):
            call(queries)
    with pytest.raises(NotFittedError):
        ranker.save(tmp_path / "x")


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"hessian_structure": "diag"}, ValueError, "hessian_structure must be one of 'auto', 'full', 'kron'"),
    ({"prior_precision": "grid"}, ValueError, "prior_precision must be 'marglik' or a number > 0; got 'grid'"),
    ({"prior_precision": 0.0}, ValueError, "prior_precision must be 'marglik' or a number > 0; got 0.0"),
    ({"prior_precision": True}, ValueError, "prior_precision must be 'marglik' or a number > 0; got True"),
    ({"n_samples": 0}, ValueError, "n_samples"),
])
def test_argument_errors(params, error, match):
    with pytest.raises(error, match=match):
        LaplaceRanker(tiny_config(), **params)


def test_warm_start_errors(bert):
    from uncertank_sngp import SNGPRanker

    with pytest.raises(TypeError, match="other must be a NeuralRanker; got str"):
        LaplaceRanker().warm_start("bert")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"other must be fitted or loaded"):
        LaplaceRanker.from_ranker(SNGPRanker(tiny_config()))
    sngp = SNGPRanker(tiny_config(), n_features=16, **SMALL).fit(toy_queries(n_queries=3))
    with pytest.raises(ValueError, match=r"laplace starts from a plain cross-encoder .* has a SNGPModel"):
        LaplaceRanker.from_ranker(sngp)
    ranker = LaplaceRanker.from_ranker(bert, show_progress=False)
    with pytest.raises(ValueError, match="warm_start needs a ranker whose network is not built yet"):
        ranker.warm_start(bert)


def test_output_layer_errors():
    with pytest.raises(ValueError, match=r"has none"):
        output_layer(torch.nn.Sequential(torch.nn.ReLU()))
    with pytest.raises(ValueError, match=r"one logit or two; the last nn\.Linear of Sequential has 3 outputs"):
        output_layer(torch.nn.Sequential(torch.nn.Linear(4, 3)))


def test_a_network_whose_logits_do_not_come_from_its_last_linear(exported, queries):
    ranker = from_pretrained(exported, "laplace", show_progress=False, device="cpu")
    network = ranker.build_model()
    network.register_forward_hook(lambda module, args, out: out * 2.0)  # a step after the output layer
    with pytest.raises(ValueError, match=r"logits are not the output of its last nn\.Linear"):
        ranker.fit(queries)


@pytest.mark.slow
def test_in_a_study_file(exported, tmp_path):
    from uncertank.experiment import run_study
    from uncertank.experiment.config import load_config

    study = tmp_path / "laplace.toml"
    study.write_text(f"""
[study]
name = "laplace"
train_dataset = "ubuntu-sample"
max_train_queries = 12
max_valid_queries = 6
max_test_queries = 8
nota = false
risk_grid = [0.0]
reference = "bert"

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"

[[rankers]]
name = "bert"
pretrained = "{exported}"
params = {{ device = "cpu" }}

[[rankers]]
name = "laplace"
pretrained = "{exported}"
params = {{ device = "cpu", n_samples = 20 }}

[[rankers]]
name = "laplace"
label = "laplace after bert"
init_from = "bert"
params = {{ device = "cpu", hessian_structure = "kron" }}

[bayes]
enabled = false
""")
    result = run_study(load_config(study), tmp_path / "report")
    assert result.rankers == ["bert", "laplace", "laplace after bert"]
    for label in ("laplace", "laplace after bert"):
        ev = result.evaluation(label, "in-domain")
        assert ev is not None and ev.probabilistic and ev.stochastic and "ECE" in ev.metrics
    again = run_study(load_config(study), tmp_path / "report")  # resumed: the saved posteriors are reused
    assert again.steps["fit laplace"].resumed


def test_a_missing_dependency_names_the_extra(monkeypatch):
    import importlib.util

    from uncertank_laplace import plugin

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(ImportError, match=r'needs the optional dependency torch; install it with pip install '
                                          r'"uncertank\[laplace\]"'):
        plugin.laplace()


def test_importing_the_plugin_module_is_light():
    import subprocess
    import sys

    code = ("import sys, uncertank_laplace.plugin; "
            "print(sorted(m for m in ('torch', 'uncertank.nn', 'uncertank_laplace.ranker') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_on_a_sentence_transformers_folder(tmp_path, queries):
    st = pytest.importorskip("sentence_transformers")
    base = tiny_classifier_folder(tmp_path / "hf")
    folder = tmp_path / "st-cross-encoder"
    ce = st.CrossEncoder(str(base), max_length=48, device="cpu")
    ce.save(str(folder))
    ranker = from_pretrained(folder, "laplace", show_progress=False, device="cpu").fit(queries)
    assert ranker.training_config.max_length == 48  # the length sentence-transformers recorded
    m, v = ranker.latent_mean_variance(queries)
    index = queries.query_index.tolist()
    pairs = [(" ".join(queries.contexts[q]), c) for q, c in zip(index, queries.candidates, strict=True)]
    np.testing.assert_allclose(1 / (1 + np.exp(-m)), ce.predict(pairs, batch_size=32), atol=1e-5)
    assert (v > 0).all()


def test_fit_runs_the_network_once_per_training_pair(exported, queries):
    ranker = from_pretrained(exported, "laplace", show_progress=False, device="cpu")
    seen = []
    ranker.build_model().register_forward_hook(lambda module, args, out: seen.append(int(out.shape[0])))
    ranker.fit(queries)
    assert sum(seen) == ranker.posterior_.n_data == 20  # the features are computed once, in one pass
