"""Every first-party ranker is an estimator in scikit-learn's sense: ``sklearn.base.clone`` rebuilds it.

The rankers are those the plugin registry lists from this repository's own
distributions (``uncertank`` and every ``plugins/uncertank-*``), so that a
new plugin is checked as soon as it registers a ranker. Each is built with
parameters other than its defaults, read off its own signature; the clone
must report the same parameters, be of the same type and be unfitted, and
nothing may be loaded by building either (no network, no weights).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from transformers import BertConfig

from uncertank.nn import NeuralRanker
from uncertank.plugins import registry

sklearn_base = pytest.importorskip("sklearn.base")

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = {"uncertank", *(p.name for p in (ROOT / "plugins").iterdir() if p.name.startswith("uncertank-"))}

TINY = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=37, vocab_size=128)

#: Values other than the defaults, used for every parameter of these names that a ranker takes.
OTHER_VALUES: dict[str, Any] = {
    "backbone": TINY, "max_length": 48, "epochs": 2, "batch_size": 4, "lr": 3e-4, "seed": 3, "device": "cpu",
    "show_progress": False, "eval_batch_size": 8, "train_ratio": 9, "max_train_queries": 7, "name": "renamed",
    "pooling": "mean", "head_lr": 1e-3, "n_passes": 3, "n_samples": 4, "n_members": 2, "n_chains": 5,
    "n_features": 64, "focal_gamma": 1.5, "k1": 1.2, "b": 0.5, "lora_r": 4, "mc_layers": 1,
}
#: What a ranker needs to be built at all, where its defaults do not do.
REQUIRED: dict[str, dict[str, Any]] = {"rerankers": {"model": "cross-encoder"}}


def _first_party() -> list[str]:
    return sorted(name for name, info in registry("rankers").items() if info.distribution in FIRST_PARTY)


def _build(name: str) -> Any:
    factory = registry("rankers")[name].factory
    base = REQUIRED.get(name, {})
    plain = factory(**base)
    names = set(plain.get_params())
    return factory(**base, **{k: v for k, v in OTHER_VALUES.items() if k in names})


def _nothing_loaded(ranker: Any) -> bool:
    members = getattr(ranker, "members", [ranker])
    return all(m.model is None for m in members if isinstance(m, NeuralRanker))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, BertConfig):
        return isinstance(b, BertConfig) and a.to_dict() == b.to_dict()
    return bool(a == b)


def test_every_first_party_plugin_registers_a_ranker_that_is_checked():
    dists = {info.distribution for info in registry("rankers").values()}
    assert FIRST_PARTY - {"uncertank-tfidf"} <= dists | {"uncertank"}
    assert {"bm25", "bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr", "laplace"} <= set(_first_party())


@pytest.mark.parametrize("name", _first_party())
def test_clone_rebuilds_the_ranker_from_its_parameters(name):
    ranker = _build(name)
    params = ranker.get_params()
    changed = {k for k in params if k in OTHER_VALUES}
    assert changed, f"{name}: no parameter took another value than its default"
    assert _nothing_loaded(ranker)
    copy = sklearn_base.clone(ranker)
    assert type(copy) is type(ranker)
    again = copy.get_params()
    assert again.keys() == params.keys()
    for key in params:
        assert _same(again[key], params[key]), (name, key, again[key], params[key])
    assert _nothing_loaded(copy)
    assert not getattr(copy, "is_fitted", False)
    assert copy.name == ranker.name


@pytest.mark.parametrize("name", _first_party())
def test_get_params_reports_every_constructor_parameter_as_given(name):
    ranker = _build(name)
    params = ranker.get_params()
    for klass in type(ranker).__mro__:
        init = vars(klass).get("__init__")
        if init is None or klass is object:
            continue
        named = [p.name for p in inspect.signature(init).parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
        assert set(named) <= set(params), (name, klass.__qualname__)
    for key, value in OTHER_VALUES.items():
        if key in params:
            assert params[key] is value, (name, key)  # stored unchanged, not converted


def test_a_fitted_ranker_clones_unfitted(tmp_path):
    import uncertank
    from uncertank.nn.testing import toy_queries

    ranker = uncertank.make_ranker("bert", **{k: OTHER_VALUES[k] for k in ("backbone", "max_length", "seed",
                                                                           "show_progress", "device")},
                                   epochs=1, batch_size=4, lr=3e-3).fit(toy_queries(4, 4))
    copy = sklearn_base.clone(ranker)
    assert ranker.is_fitted and not copy.is_fitted and copy.model is None and copy.history_ is None


def test_set_params_checks_as_the_constructor_and_leaves_the_ranker_as_it_was_on_error():
    ranker = NeuralRanker(TINY, max_length=32, show_progress=False)
    with pytest.raises(TypeError, match="epochs must be an integer >= 1"):
        NeuralRanker(TINY, epochs=1.5)
    with pytest.raises(TypeError, match="epochs must be an integer >= 1"):
        ranker.set_params(epochs=1.5, seed=4)
    assert ranker.epochs == 1 and ranker.seed == 0
    with pytest.raises(ValueError, match="has no parameter 'colour'; its parameters: activation, backbone"):
        ranker.set_params(colour="red")
    ranker.set_params(epochs=3, name="mine")
    assert ranker.training_config.epochs == 3 and ranker.name == "mine"
    ranker.set_params(name=None)
    assert ranker.name == "cross-encoder" and ranker.get_params()["name"] is None


def test_the_training_config_is_built_from_the_parameters():
    ranker = NeuralRanker(TINY, max_length=None, lr=1e-4, show_progress=False)
    assert ranker.max_length is None and ranker.training_config.max_length == 128
    assert ranker.get_params()["max_length"] is None
    assert ranker.saved_params()["max_length"] == 128  # a checkpoint keeps the length the network used
