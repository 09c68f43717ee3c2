"""The public extension API of uncertank.nn: own head, own loss, end-of-training hook, safe loading."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

import uncertank
from uncertank import QuerySet
from uncertank.nn import (
    EncodedPairs,
    NeuralRanker,
    TrainingConfig,
    build_backbone,
    encode_queries,
    load_ranker,
    model_device,
    output_probabilities,
    score_batches,
    seed_everything,
    train_cross_encoder,
)
from uncertank.nn.testing import probability_tolerance, tiny_config, toy_queries

SMALL = dict(max_length=32, epochs=2, batch_size=4, lr=3e-3, show_progress=False)


class OneLogitModel(nn.Module):
    """A head with state: one logit, and a buffer counting the pairs seen after training."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.out = nn.Linear(int(encoder.config.hidden_size), 1)
        self.register_buffer("n_seen", torch.zeros((), dtype=torch.float64))

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        cls = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        return self.out(cls)[:, 0]


class OneLogitRanker(NeuralRanker):
    name = "one_logit"

    def __init__(self, backbone=None, *, margin: float = 0.0, **params):
        super().__init__(backbone, **params)
        self.margin = margin
        self.losses: list[float] = []
        self.seen: tuple[int, list[int]] | None = None

    def create_model(self, encoder):
        return OneLogitModel(encoder)

    def loss(self, output, labels):
        assert output.shape == labels.shape  # one logit per pair
        value = nn.functional.binary_cross_entropy_with_logits(output.float() - self.margin, labels.float())
        self.losses.append(float(value.detach()))
        return value

    def on_train_end(self, model, pairs, labels, accelerator):
        assert not model.training
        model.n_seen += pairs.n_pairs
        self.seen = (pairs.n_pairs, labels.tolist())

    def extra_params(self):
        return {"margin": self.margin}


def test_a_subclass_plugs_in_its_head_loss_and_end_of_training_hook(tmp_path, queries):
    ranker = OneLogitRanker(tiny_config(), margin=0.5, **SMALL).fit(queries)
    assert isinstance(ranker.model, OneLogitModel)
    assert len(ranker.losses) == 2 * 5 and ranker.losses == ranker.history_.loss
    n, labels = ranker.seen
    assert n == 20 and labels == [1] * 10 + [0] * 10
    assert float(ranker.model.n_seen) == 20
    scores = ranker.predict(queries).scores
    assert scores.shape == (100,) and ((scores > 0) & (scores < 1)).all()
    # sigmoid of the single logit, through the same batched path as every neural ranker
    with torch.no_grad():
        enc = ranker.encode(queries)
        logits = ranker.model(**enc.batch(np.arange(enc.n_pairs), model_device(ranker.model)))
    # the network called directly runs without the scoring path's bf16 autocast (on a GPU)
    np.testing.assert_allclose(scores, torch.sigmoid(logits.float()).cpu().numpy(),
                               atol=max(1e-6, probability_tolerance(str(model_device(ranker.model)))))
    ranker.save(tmp_path / "ck")
    manifest = json.loads((tmp_path / "ck" / "uncertank.json").read_text())
    assert manifest["ranker"] == "one_logit" and manifest["extra"] == {"margin": 0.5}
    again = OneLogitRanker.load(tmp_path / "ck")
    assert again.margin == 0.5 and float(again.model.n_seen) == 20  # buffers travel with the weights
    np.testing.assert_array_equal(again.predict(queries).scores, scores)


def test_public_methods_replace_the_private_ones(queries):
    ranker = NeuralRanker(tiny_config(), **SMALL).fit(queries)
    for old in ("_build", "_params", "_extra_params", "_save_into", "_score", "_check_queries"):
        assert not hasattr(ranker, old), old
    model = ranker.build_model()
    assert ranker.build_model() is model
    params = ranker.get_params()
    assert params["max_length"] == 32 and params["name"] is None and "negatives" not in params
    saved = ranker.saved_params()
    assert saved["max_length"] == 32 and saved["name"] == "cross-encoder" and "backbone" not in saved
    assert ranker.extra_params() == {}
    probs = ranker.score(queries, n_passes=3, mc=True, seed=0)
    assert probs.shape == (3, 100) and probs.var(axis=0).mean() > 0
    np.testing.assert_array_equal(ranker.score(queries, n_passes=3, mc=True, seed=0), probs)
    np.testing.assert_array_equal(ranker.score(queries)[0], ranker.predict(queries).scores)
    assert ranker.check_queries(queries) is queries
    with pytest.raises(TypeError, match="queries must be a QuerySet; got list"):
        ranker.check_queries([])
    assert isinstance(ranker.encode(queries), EncodedPairs) and ranker.encode(queries).n_pairs == 100


def test_train_cross_encoder_takes_a_loss_and_an_end_hook(queries):
    seed_everything(0)
    encoder, tok = build_backbone(tiny_config())
    model = uncertank.nn.CrossEncoderModel(encoder)
    calls: list[tuple[tuple[int, ...], list[int]]] = []
    ends: list[tuple[bool, int, int]] = []

    def loss_fn(output, labels):
        calls.append((tuple(output.shape), labels.tolist()))
        return nn.functional.cross_entropy(output.float(), labels)

    def on_end(net, pairs, labels, acc):
        ends.append((net.training, pairs.n_pairs, int(labels.sum())))

    cfg = TrainingConfig(**{k: v for k, v in SMALL.items() if k != "epochs"}, epochs=1)
    history = train_cross_encoder(model, tok, queries, config=cfg, loss_fn=loss_fn, on_train_end=on_end)
    assert len(calls) == 5 and all(shape[1] == 2 for shape, _ in calls)
    assert sorted(y for _, ys in calls for y in ys) == [0] * 10 + [1] * 10
    assert ends == [(False, 20, 10)] and len(history.loss) == 5
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        train_cross_encoder(model, tok, queries, config=cfg, loss_fn="mse")
    with pytest.raises(TypeError, match="on_train_end must be callable"):
        train_cross_encoder(model, tok, queries, config=cfg, on_train_end=3)


def _distinct_negatives_set() -> QuerySet:
    """Every negative text is unique to its query, and each query has one negative per positive."""
    contexts = [[f"my {t} is broken"] for t in ("wifi", "sound", "usb", "grub")]
    candidates = [[f"fixed {i}", f"given negative {i}"] for i in range(4)]
    labels = [[1, 0]] * 4
    return QuerySet.from_lists(contexts, candidates, labels, name="given")


def test_training_uses_exactly_the_given_negatives(monkeypatch):
    import uncertank.nn.ranker as ranker_module
    import uncertank.plugins

    seen: list[list[str]] = []
    real = ranker_module.encode_pairs

    def spy(tokenizer, contexts, candidates, query_index, **kw):
        seen.append(list(candidates))
        return real(tokenizer, contexts, candidates, query_index, **kw)

    def no_sampler(*args, **kwargs):
        raise AssertionError("training must not look up a negative sampler")

    monkeypatch.setattr(ranker_module, "encode_pairs", spy)
    monkeypatch.setattr(uncertank.plugins, "get_factory", no_sampler)
    train = _distinct_negatives_set()
    NeuralRanker(tiny_config(), **SMALL).fit(train)
    assert len(seen) == 2  # one set of pairs per epoch
    for cands in seen:
        assert sorted(cands) == sorted([f"fixed {i}" for i in range(4)] + [f"given negative {i}" for i in range(4)])


def test_training_draws_among_a_querys_own_negatives_only(queries):
    from uncertank.nn import balanced_pairs

    for seed in range(3):
        ctx, cands, qidx, labels = balanced_pairs(queries, seed=seed)
        for text, q, y in zip(cands, qidx, labels, strict=True):
            own_ctx, own, own_labels = queries.query(int(q))
            assert list(own_ctx) == ctx[int(q)] and own_labels[own.index(text)] == y


def test_output_probabilities_and_its_errors():
    two = torch.tensor([[0.0, 1.0], [2.0, -1.0]])
    np.testing.assert_allclose(output_probabilities(two).numpy(), torch.softmax(two, -1)[:, 1].numpy())
    one = torch.tensor([[0.3], [-2.0]])
    np.testing.assert_allclose(output_probabilities(one).numpy(), torch.sigmoid(one[:, 0]).numpy())
    np.testing.assert_allclose(output_probabilities(one[:, 0]).numpy(), torch.sigmoid(one[:, 0]).numpy())
    with pytest.raises(ValueError, match=r"output must have shape .*got \(2, 3\)"):
        output_probabilities(torch.zeros(2, 3))


def test_score_batches_restores_input_order_and_checks_shapes(tokenizer, queries):
    enc = encode_queries(tokenizer, queries, max_length=32)
    out = score_batches(enc, lambda b: b["attention_mask"].sum(1, keepdim=True).float(), batch_size=7)
    np.testing.assert_array_equal(out[:, 0], enc.lengths)
    with pytest.raises(ValueError, match=r"fn must return a tensor of shape \(7, k\)"):
        score_batches(enc, lambda b: b["attention_mask"].sum(1).float(), batch_size=7)


def _fake_registry(monkeypatch, rankers):
    import uncertank.plugins

    infos = {name: SimpleNamespace(name=name, factory=f) for name, f in rankers.items()}
    monkeypatch.setattr(uncertank.plugins, "registry", lambda kind: dict(infos) if kind == "rankers" else {})


def test_load_ranker_resolves_the_class_through_the_registry(tmp_path, monkeypatch, queries):
    ranker = OneLogitRanker(tiny_config(), margin=0.25, **SMALL).fit(queries)
    before = ranker.predict(queries).scores
    ranker.save(tmp_path / "ck")
    # A factory function (the usual lazy plugin factory) and a class both resolve.
    _fake_registry(monkeypatch, {"one_logit": lambda **p: OneLogitRanker(**p)})
    again = load_ranker(tmp_path / "ck")
    assert type(again) is OneLogitRanker and again.margin == 0.25
    np.testing.assert_array_equal(again.predict(queries).scores, before)
    _fake_registry(monkeypatch, {"one_logit": OneLogitRanker})
    assert type(load_ranker(tmp_path / "ck", eval_batch_size=8)) is OneLogitRanker
    _fake_registry(monkeypatch, {"bm25": object})
    with pytest.raises(ValueError, match=r"'one_logit', which no installed plugin registers; known rankers: bm25"):
        load_ranker(tmp_path / "ck")


def test_load_ranker_refuses_a_load_that_returns_no_ranker(tmp_path, monkeypatch, queries):
    OneLogitRanker(tiny_config(), margin=0.25, **SMALL).fit(queries).save(tmp_path / "ck")

    class NoLoad:
        pass

    class LoadsADict:
        @classmethod
        def load(cls, path, **kw):
            return {"scores": []}

    _fake_registry(monkeypatch, {"one_logit": NoLoad})
    with pytest.raises(TypeError, match=r"ranker 'one_logit' \(.*NoLoad\) has no load\(path\) classmethod"):
        load_ranker(tmp_path / "ck")
    _fake_registry(monkeypatch, {"one_logit": LoadsADict})
    with pytest.raises(TypeError, match=r"LoadsADict.load returned a dict, which is not an uncertank.Ranker"):
        load_ranker(tmp_path / "ck")


def test_a_manifest_naming_a_module_runs_nothing(tmp_path, monkeypatch):
    """A checkpoint is data: the module its manifest names is never imported."""
    ranker = NeuralRanker(tiny_config(), **SMALL).fit(toy_queries())
    ranker.save(tmp_path / "ck")
    marker = tmp_path / "ran.txt"
    (tmp_path / "evil_module.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n"
        "class Evil:\n    @classmethod\n    def load(cls, path, **kw):\n        return cls()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest_file = tmp_path / "ck" / "uncertank.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["class"] = "evil_module:Evil"
    manifest["ranker"] = "evil_module:Evil"
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"ranker 'evil_module:Evil', which no installed plugin registers"):
        load_ranker(tmp_path / "ck")
    del manifest["ranker"]
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="records no registered ranker name"):
        load_ranker(tmp_path / "ck")
    assert not marker.exists() and "evil_module" not in sys.modules


def test_old_checkpoints_with_a_negatives_setting_still_load(tmp_path, queries):
    ranker = NeuralRanker(tiny_config(), **SMALL).fit(queries)
    ranker.save(tmp_path / "ck")
    manifest_file = tmp_path / "ck" / "uncertank.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["params"]["negatives"] = "bm25"
    manifest_file.write_text(json.dumps(manifest))
    np.testing.assert_array_equal(
        NeuralRanker.load(tmp_path / "ck").predict(queries).scores, ranker.predict(queries).scores
    )
    with pytest.raises(TypeError, match="negatives"):
        NeuralRanker(tiny_config(), negatives="bm25")


def test_plugins_import_public_types_from_the_top_level():
    assert uncertank.QuerySet is QuerySet
    from uncertank import validation

    assert validation.check_positive_int(3, "n") == 3
    assert set(validation.__all__) >= {"check_positive_int", "check_choice", "as_float_array"}
    assert toy_queries(n_queries=2).n_queries == 2
