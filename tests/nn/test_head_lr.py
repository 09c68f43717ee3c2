"""``head_lr``: the head (everything outside the encoder) trains at its own rate."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from uncertank import QuerySet  # noqa: E402
from uncertank.nn import CrossEncoderModel, NeuralRanker, TrainingConfig, train_cross_encoder  # noqa: E402
from uncertank.nn.training import _param_groups  # noqa: E402


def _model():
    cfg = transformers.BertConfig(
        vocab_size=60, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24
    )
    return CrossEncoderModel(transformers.BertModel(cfg, add_pooling_layer=False))


def test_groups_give_the_head_its_rate_and_keep_decay_apart():
    model = _model()
    groups = _param_groups(model, 0.01, 1e-4, 3e-3)
    rate = {id(p): g["lr"] for g in groups for p in g["params"]}
    decay = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
    for name, p in model.named_parameters():  # a loop over every parameter, the reference
        assert rate[id(p)] == (1e-4 if name.startswith("encoder.") else 3e-3), name
        no_decay = p.ndim < 2 or "norm" in name.lower()
        assert decay[id(p)] == (0.0 if no_decay else 0.01), name
    same = _param_groups(model, 0.01, 1e-4, None)
    assert {g["lr"] for g in same} == {1e-4}
    assert sum(len(g["params"]) for g in same) == len(list(model.parameters()))


def test_a_higher_head_rate_moves_the_head_further_and_is_saved():
    qs = QuerySet.from_lists(
        [f"how do i mount drive {i}" for i in range(8)],
        [[f"use mount for drive {i}", "try a reboot", "no idea sorry"] for i in range(8)],
        [[1, 0, 0]] * 8,
    )
    cfg = transformers.BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24, vocab_size=30530
    )
    moved = {}
    for head_lr in (None, 1e-2):
        r = NeuralRanker(cfg, max_length=24, batch_size=4, lr=1e-4, head_lr=head_lr, device="cpu", show_progress=False)
        before = r.build_model().head[-1].weight.detach().clone()
        r.fit(qs)
        moved[head_lr] = float((r.model.head[-1].weight.detach() - before).abs().max())
        assert r.get_params()["head_lr"] == head_lr
    assert moved[1e-2] > 10 * moved[None]


@pytest.mark.parametrize("bad", [0, -1e-3, float("nan"), True, "fast"])
def test_a_bad_head_lr_is_named(bad):
    with pytest.raises(ValueError, match="head_lr must be None or a finite number > 0"):
        TrainingConfig(head_lr=bad)


def test_train_cross_encoder_uses_the_config_rates(monkeypatch):
    seen = {}
    real = torch.optim.AdamW

    def spy(groups, **kw):
        seen["rates"] = sorted({g["lr"] for g in groups})
        return real(groups, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", spy)
    qs = QuerySet.from_lists(["q a", "q b"], [["x", "y"], ["z", "w"]], [[1, 0], [0, 1]])
    from uncertank.nn import build_backbone

    enc, tok = build_backbone(transformers.BertConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=24, vocab_size=30530
    ))
    train_cross_encoder(CrossEncoderModel(enc), tok, qs, config=TrainingConfig(
        max_length=16, batch_size=2, lr=1e-4, head_lr=2e-3, show_progress=False))
    assert seen["rates"] == [1e-4, 2e-3]
