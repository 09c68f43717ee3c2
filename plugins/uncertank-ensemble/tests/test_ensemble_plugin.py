from __future__ import annotations

import numpy as np
import pytest
from uncertank_ensemble import DeepEnsembleRanker

import uncertank
from uncertank import PredictiveSamples
from uncertank.nn import NeuralRanker, load_ranker, resolve_device
from uncertank.nn.testing import BF16_PROBABILITY_ATOL, tiny_config, toy_queries

pytestmark = pytest.mark.slow  # the module fixture fine-tunes three members

PARAMS = dict(max_length=32, epochs=1, batch_size=4, lr=3e-3, show_progress=False)


@pytest.fixture(scope="module")
def fitted():
    ranker = uncertank.make_ranker("ensemble", backbone=tiny_config(), n_members=3, **PARAMS)
    return ranker.fit(toy_queries())


def test_entry_point_and_members_from_different_seeds(fitted):
    assert isinstance(fitted, DeepEnsembleRanker)
    assert isinstance(fitted, uncertank.StochasticRanker)
    assert [m.training_config.seed for m in fitted.members] == [0, 1, 2]
    assert all(m.history_ is not None for m in fitted.members)


def test_ensemble_variance_and_rows_are_members(fitted):
    queries = toy_queries()
    samples = fitted.predict_samples(queries)
    assert isinstance(samples, PredictiveSamples)
    assert samples.samples.shape == (3, 100)
    assert samples.var().mean() > 1e-8
    for m, member in enumerate(fitted.members):
        np.testing.assert_allclose(samples.samples[m], member.predict(queries).scores, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(fitted.predict(queries).scores, samples.mean())
    assert fitted.predict_samples(queries, n_samples=2).samples.shape == (2, 100)


def test_a_member_equals_the_same_seed_trained_alone(fitted):
    queries = toy_queries()
    alone = NeuralRanker(tiny_config(), seed=1, **PARAMS).fit(queries)
    np.testing.assert_array_equal(alone.predict(queries).scores, fitted.members[1].predict(queries).scores)


def test_stacked_vmap_inference_matches_member_by_member(fitted):
    queries = toy_queries()
    loop = DeepEnsembleRanker.from_members(fitted.members, stacked=False).predict_samples(queries)
    vmapped = DeepEnsembleRanker.from_members(fitted.members, stacked=True).predict_samples(queries)
    # on CUDA both run in bf16, the stacked call with the math attention kernel, the loop with a fused one
    atol = 1e-5 if resolve_device(fitted.members[0].device).type == "cpu" else BF16_PROBABILITY_ATOL
    np.testing.assert_allclose(vmapped.samples, loop.samples, rtol=0, atol=atol)


def test_save_load_round_trip(tmp_path, fitted):
    queries = toy_queries()
    fitted.save(tmp_path / "ens")
    assert sorted(p.name for p in (tmp_path / "ens").iterdir()) == [
        "member_0", "member_1", "member_2", "uncertank.json",
    ]
    again = DeepEnsembleRanker.load(tmp_path / "ens")
    np.testing.assert_array_equal(again.predict_samples(queries).samples, fitted.predict_samples(queries).samples)
    assert isinstance(load_ranker(tmp_path / "ens"), DeepEnsembleRanker)
    # the checkpoint contract: load(folder, **params), the constructor's parameters
    same = DeepEnsembleRanker.load(tmp_path / "ens", n_members=3, show_progress=False, name="ens")
    assert same.name == "ens" and same.n_members == 3
    np.testing.assert_array_equal(same.predict_samples(queries).samples, fitted.predict_samples(queries).samples)
    with pytest.raises(ValueError, match="n_members must equal the checkpoint's 3 members"):
        DeepEnsembleRanker.load(tmp_path / "ens", n_members=2)


def test_errors(fitted):
    with pytest.raises(ValueError, match="n_members"):
        DeepEnsembleRanker(tiny_config(), n_members=1)
    with pytest.raises(TypeError, match="stacked"):
        DeepEnsembleRanker(tiny_config(), stacked="yes")
    with pytest.raises(ValueError, match="members must hold at least 2"):
        DeepEnsembleRanker.from_members(fitted.members[:1])
    with pytest.raises(TypeError, match=r"members\[1\] must be a NeuralRanker"):
        DeepEnsembleRanker.from_members([fitted.members[0], "x"])
    with pytest.raises(ValueError, match="n_samples must be <= n_members"):
        fitted.predict_samples(toy_queries(), n_samples=4)
    with pytest.raises(TypeError, match="queries must be a QuerySet"):
        fitted.predict_samples([1])


def test_from_ranker_keeps_member_0_and_trains_the_others_like_from_scratch(fitted):
    queries = toy_queries()
    bert = NeuralRanker(tiny_config(), seed=0, **PARAMS)
    assert not bert.is_fitted
    with pytest.raises(ValueError, match="must be fitted"):
        DeepEnsembleRanker.from_ranker(bert, n_members=3)
    bert.fit(queries)
    assert bert.is_fitted
    ens = DeepEnsembleRanker.from_ranker(bert, n_members=3)
    assert ens.members[0] is bert and not ens.is_fitted
    # every setting of bert's, its quiet progress included (a study's log, not a progress bar)
    assert all(m.show_progress is False for m in ens.members) and ens.show_progress is False
    before = bert.predict(queries).scores
    ens.fit(queries)
    assert ens.is_fitted
    np.testing.assert_array_equal(bert.predict(queries).scores, before)  # member 0 was not trained again
    # the same seeds as an ensemble trained from scratch: the same members
    np.testing.assert_array_equal(ens.predict_samples(queries).samples, fitted.predict_samples(queries).samples)
    with pytest.raises(TypeError, match="must be a NeuralRanker"):
        DeepEnsembleRanker.from_ranker(object(), n_members=2)  # type: ignore[arg-type]


def test_the_members_run_one_after_another_unless_stacked_is_asked_for(fitted, monkeypatch):
    """On CUDA the fused attention kernels refuse the stacked vmap call: by default, no device stacks."""
    import uncertank_ensemble.ranker as module

    seen: list[bool] = []
    real = module.score_probabilities

    def spy(*args, **kwargs):
        seen.append(kwargs["stacked"])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "score_probabilities", spy)
    queries = toy_queries()
    DeepEnsembleRanker.from_members(fitted.members).predict_samples(queries)
    DeepEnsembleRanker.from_members(fitted.members, stacked=True).predict_samples(queries)
    assert seen == [False, True]


def test_the_stacked_call_with_the_math_attention_kernel_matches_the_loop(fitted):
    """The kernel the stacked call uses off the CPU, forced on the CPU: vmap accepts it, results unchanged."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    queries = toy_queries()
    loop = DeepEnsembleRanker.from_members(fitted.members, stacked=False).predict_samples(queries)
    with sdpa_kernel([SDPBackend.MATH]):
        vmapped = DeepEnsembleRanker.from_members(fitted.members, stacked=True).predict_samples(queries)
    atol = 1e-5 if resolve_device(fitted.members[0].device).type == "cpu" else BF16_PROBABILITY_ATOL
    np.testing.assert_allclose(vmapped.samples, loop.samples, rtol=0, atol=atol)
