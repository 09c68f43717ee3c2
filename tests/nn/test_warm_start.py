"""``NeuralRanker.warm_start`` / ``from_ranker``: a new head on a copy of a trained encoder."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from uncertank import QuerySet  # noqa: E402
from uncertank.nn import NeuralRanker  # noqa: E402


def _queries() -> QuerySet:
    return QuerySet.from_lists(
        [f"how do i mount drive {i}" for i in range(6)],
        [[f"use mount for drive {i}", "try a reboot", "no idea sorry"] for i in range(6)],
        [[1, 0, 0]] * 6,
    )


def _config():
    return transformers.BertConfig(
        hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24, vocab_size=30530
    )


def _kw(seed: int = 0):
    return {"max_length": 24, "batch_size": 4, "lr": 1e-3, "device": "cpu", "show_progress": False, "seed": seed}


def _encoder_state(ranker: NeuralRanker) -> dict:
    return {k: v.detach().clone() for k, v in ranker.model.encoder.state_dict().items()}


@pytest.fixture(scope="module")
def trained() -> NeuralRanker:
    return NeuralRanker(_config(), **_kw()).fit(_queries())


def test_the_encoder_is_a_copy_and_the_head_is_new(trained):
    source = _encoder_state(trained)
    new = NeuralRanker.from_ranker(trained, **_kw(seed=5))
    assert not new.is_fitted  # a study fits it next
    copied = _encoder_state(new)
    assert copied.keys() == source.keys()
    for k in source:  # a loop over every tensor, the reference
        assert torch.equal(copied[k], source[k]), k
    assert new.model.encoder is not trained.model.encoder
    assert new.tokenizer_ is trained.tokenizer_
    again = NeuralRanker.from_ranker(trained, **_kw(seed=5))
    other = NeuralRanker.from_ranker(trained, **_kw(seed=6))
    assert torch.equal(new.model.head[-1].weight, again.model.head[-1].weight)  # seeded
    assert not torch.equal(new.model.head[-1].weight, other.model.head[-1].weight)
    assert not torch.equal(new.model.head[-1].weight, trained.model.head[-1].weight)


def test_training_the_copy_leaves_the_source_alone(trained, tmp_path):
    source = _encoder_state(trained)
    new = NeuralRanker.from_ranker(trained, **_kw(seed=1)).fit(_queries())
    after = _encoder_state(new)
    assert any(not torch.equal(after[k], source[k]) for k in source)  # it trained
    assert all(torch.equal(v, source[k]) for k, v in _encoder_state(trained).items())
    new.save(tmp_path / "m")
    back = NeuralRanker.load(tmp_path / "m")
    assert all(torch.equal(v, after[k]) for k, v in _encoder_state(back).items())


def test_bad_sources_and_targets_are_named(trained):
    with pytest.raises(TypeError, match="other must be a NeuralRanker; got str"):
        NeuralRanker(_config(), **_kw()).warm_start("bert")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="other must be fitted or loaded"):
        NeuralRanker(_config(), **_kw()).warm_start(NeuralRanker(_config(), **_kw()))
    built = NeuralRanker(_config(), **_kw())
    built.build_model()
    with pytest.raises(ValueError, match="network is not built yet"):
        built.warm_start(trained)


def test_a_parametrised_encoder_is_copied_with_its_effective_weights(trained):
    from torch.nn.utils import parametrize

    class Half(torch.nn.Module):
        def forward(self, w):
            return w * 0.5

    source = NeuralRanker.from_ranker(trained, **_kw())
    layer = source.model.encoder.encoder.layer[0].output.dense
    parametrize.register_parametrization(layer, "weight", Half())
    source.history_ = trained.history_
    effective = layer.weight.detach().clone()
    new = NeuralRanker.from_ranker(source, **_kw())
    copied = new.model.encoder.encoder.layer[0].output.dense
    assert not parametrize.is_parametrized(copied)
    assert torch.equal(copied.weight, effective)
    assert parametrize.is_parametrized(layer)  # the source keeps its own
