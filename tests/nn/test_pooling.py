"""Pooling of the encoder's output: ``[CLS]`` or the masked mean, in every neural ranker."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from uncertank import QuerySet  # noqa: E402
from uncertank.nn import CrossEncoderModel, NeuralRanker, check_pooling, pool_encoder  # noqa: E402


def _encoder():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=60, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24
    )
    return transformers.BertModel(cfg, add_pooling_layer=False).eval()


def _batch():
    ids = torch.tensor([[2, 5, 7, 9, 0, 0], [2, 11, 3, 4, 8, 1]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    return ids, mask


def test_mean_pooling_is_the_mean_over_the_kept_tokens_and_cls_the_first_token():
    enc = _encoder()
    ids, mask = _batch()
    with torch.no_grad():
        hidden = enc(input_ids=ids, attention_mask=mask).last_hidden_state
        mean = pool_encoder(enc, ids, mask, pooling="mean")
        cls = pool_encoder(enc, ids, mask, pooling="cls")
    for i in range(ids.shape[0]):  # a loop over each pair's kept tokens, the reference
        kept = [hidden[i, j] for j in range(ids.shape[1]) if mask[i, j]]
        torch.testing.assert_close(mean[i], torch.stack(kept).mean(dim=0))
        torch.testing.assert_close(cls[i], hidden[i, 0])
    # padding does not move the mean: the first pair alone, unpadded
    with torch.no_grad():
        alone = pool_encoder(enc, ids[:1, :4], mask[:1, :4], pooling="mean")
    torch.testing.assert_close(alone[0], mean[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("bad", ["max", "CLS", None, 1])
def test_a_bad_pooling_is_named(bad):
    with pytest.raises(ValueError, match=r"pooling must be one of 'cls', 'mean'; got"):
        check_pooling(bad)
    with pytest.raises(ValueError, match="pooling must be one of"):
        CrossEncoderModel(_encoder(), pooling=bad)
    with pytest.raises(ValueError, match="pooling must be one of"):
        NeuralRanker(transformers.BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2), pooling=bad)


def _queries():
    return QuerySet.from_lists(
        [f"how do i mount drive {i}" for i in range(4)],
        [[f"use mount for drive {i}", "try a reboot", "no idea sorry"] for i in range(4)],
        [[1, 0, 0]] * 4,
    )


def test_a_mean_pooled_ranker_saves_and_loads_its_pooling(tmp_path):
    cfg = transformers.BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24, vocab_size=30530
    )
    qs = _queries()
    mean = NeuralRanker(cfg, pooling="mean", max_length=24, epochs=1, batch_size=4, device="cpu", show_progress=False)
    cls = NeuralRanker(cfg, pooling="cls", max_length=24, epochs=1, batch_size=4, device="cpu", show_progress=False)
    assert mean.get_params()["pooling"] == "mean"
    p_mean, p_cls = mean.fit(qs).predict(qs).scores, cls.fit(qs).predict(qs).scores
    assert not np.allclose(p_mean, p_cls)  # same seed, data and initial weights: only the pooling differs
    mean.save(tmp_path / "m")
    loaded = NeuralRanker.load(tmp_path / "m")
    assert loaded.pooling == "mean"
    np.testing.assert_array_equal(loaded.predict(qs).scores, p_mean)


@pytest.mark.parametrize("name", ["sngp", "gpf_bert", "pgdrr"])
def test_the_gp_rankers_pool_as_asked(name, tmp_path):
    import uncertank
    from uncertank.plugins import registry

    if name not in registry("rankers"):
        pytest.skip(f"the plugin that provides {name!r} is not installed")
    cfg = transformers.BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24, vocab_size=30530
    )
    qs = _queries()
    common = {"backbone": cfg, "max_length": 24, "device": "cpu", "show_progress": False}
    mean = uncertank.make_ranker(name, pooling="mean", **common)
    cls = uncertank.make_ranker(name, **common)
    assert mean.build_model().pooling == "mean" and cls.build_model().pooling == "cls"
    mean.fit(qs)
    cls.fit(qs)
    assert not np.allclose(mean.predict(qs).scores, cls.predict(qs).scores)
    mean.save(tmp_path / "m")
    assert type(mean).load(tmp_path / "m").build_model().pooling == "mean"


def test_head_dimensions_read_the_encoder_config():
    from uncertank.nn import head_dimensions

    enc = _encoder()
    assert head_dimensions(enc) == (16, enc.config.hidden_dropout_prob)
    assert head_dimensions(enc, 0.3) == (16, 0.3)
    enc.config.hidden_dropout_prob = 0.25
    assert head_dimensions(enc) == (16, 0.25)
