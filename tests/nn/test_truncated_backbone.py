from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from uncertank.nn.model import build_backbone, default_backbone_path  # noqa: E402


def _tiny(layers: int = 3):
    return transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=37
    )


def test_config_backbone_keeps_the_first_layers_and_does_not_touch_the_callers_config():
    cfg = _tiny(3)
    encoder, _ = build_backbone(cfg, num_hidden_layers=1)
    assert len(encoder.encoder.layer) == 1
    assert cfg.num_hidden_layers == 3


def test_pretrained_backbone_keeps_the_pretrained_weights_of_the_first_layers():
    path = default_backbone_path()
    full, _ = build_backbone(path)
    short, _ = build_backbone(path, num_hidden_layers=2)
    assert len(short.encoder.layer) == 2 and len(full.encoder.layer) == 6
    for name, p in short.encoder.layer.state_dict().items():
        torch.testing.assert_close(p, full.encoder.layer.state_dict()[name])


def test_bad_layer_counts():
    with pytest.raises(ValueError, match="num_hidden_layers must be <= the backbone's 3 layers; got 4"):
        build_backbone(_tiny(3), num_hidden_layers=4)
    with pytest.raises(ValueError, match="num_hidden_layers must be an integer >= 1"):
        build_backbone(_tiny(3), num_hidden_layers=0)
