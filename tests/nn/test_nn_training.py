from __future__ import annotations

import numpy as np
import pytest
import torch

from uncertank import QuerySet
from uncertank.nn import (
    CrossEncoderModel,
    TrainingConfig,
    average_precision,
    balanced_pairs,
    build_backbone,
    encode_pairs,
    seed_everything,
    train_cross_encoder,
)
from uncertank.nn.testing import tiny_config, toy_queries


def test_average_precision_matches_sklearn():
    average_precision_score = pytest.importorskip("sklearn.metrics").average_precision_score
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 12, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    scores = rng.random(offsets[-1]).round(1)  # ties on purpose
    labels = (rng.random(offsets[-1]) < 0.3).astype(np.int64)
    ours = average_precision(scores, labels, offsets)
    for q in range(lengths.size):
        s, y = scores[offsets[q] : offsets[q + 1]], labels[offsets[q] : offsets[q + 1]]
        if y.sum() == 0:
            assert ours[q] == 0.0
            continue
        # sklearn averages over tied scores; compare against a loop with our tie order instead.
        order = np.lexsort((np.arange(s.size), -s))
        hits, total = 0, 0.0
        for rank, i in enumerate(order, start=1):
            if y[i]:
                hits += 1
                total += hits / rank
        assert ours[q] == pytest.approx(total / y.sum())
        if np.unique(s).size == s.size:
            assert ours[q] == pytest.approx(average_precision_score(y, s))


def test_balanced_pairs_given_negatives(queries):
    ctx, cands, qidx, labels = balanced_pairs(queries, seed=3)
    assert len(ctx) == 10 and labels.sum() == 10 and (labels == 0).sum() == 10
    for text, q, y in zip(cands, qidx, labels, strict=True):
        _, own, own_labels = queries.query(int(q))
        assert text in own
        assert own_labels[own.index(text)] == y
    _, cands2, _, _ = balanced_pairs(queries, seed=4)
    assert cands2[10:] != cands[10:]  # another seed, other negatives
    assert balanced_pairs(queries, seed=3)[1] == cands


def test_balanced_pairs_skip_queries_without_relevant_and_cap_negatives():
    qs = QuerySet.from_lists(
        [["a"], ["b"], ["c"]], [["x", "y"], ["p", "q", "r"], ["u", "v"]], [[0, 0], [1, 1, 0], [1, 0]]
    )
    ctx, cands, qidx, labels = balanced_pairs(qs, seed=0)
    assert ctx == [["b"], ["c"]]
    assert labels.tolist() == [1, 1, 1, 0, 0]  # query b has one negative for two positives
    assert sorted(cands[3:]) == ["r", "v"]
    assert qidx.tolist() == [0, 0, 1, 0, 1]


def test_balanced_pairs_errors(queries):
    with pytest.raises(TypeError, match="train must be a QuerySet"):
        balanced_pairs([1, 2])
    unlabelled = QuerySet.from_lists([["a"]], [["x", "y"]])
    with pytest.raises(ValueError, match="train must carry labels"):
        balanced_pairs(unlabelled)
    none_relevant = QuerySet.from_lists([["a"]], [["x", "y"]], [[0, 0]])
    with pytest.raises(ValueError, match="at least one query with a relevant"):
        balanced_pairs(none_relevant)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("epochs", 0, ValueError), ("batch_size", 1.5, TypeError), ("lr", 0.0, ValueError),
        ("lr", float("nan"), ValueError), ("weight_decay", -1.0, ValueError),
        ("warmup_ratio", 1.0, ValueError), ("seed", -1, ValueError),
    ],
)
def test_training_config_errors(field, value, error):
    with pytest.raises(error, match=field):
        TrainingConfig(**{field: value})


def _pair_loss(model, tokenizer, queries):
    ctx, cands, qidx, labels = balanced_pairs(queries, seed=0)
    enc = encode_pairs(tokenizer, ctx, cands, qidx, max_length=32)
    model.eval()
    with torch.no_grad():
        logits = model(**enc.batch(np.arange(enc.n_pairs)))
    return float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels)))


@pytest.mark.slow
def test_training_lowers_the_loss():
    queries = toy_queries()
    seed_everything(0)
    encoder, tok = build_backbone(tiny_config())
    model = CrossEncoderModel(encoder)
    before = _pair_loss(model, tok, queries)
    cfg = TrainingConfig(
        max_length=32, epochs=6, batch_size=4, lr=1e-2, warmup_ratio=0.0,
        show_progress=False,
    )
    history = train_cross_encoder(model, tok, queries, config=cfg)
    after = _pair_loss(model, tok, queries)
    assert len(history.loss) == 6 * 5  # 20 balanced pairs per epoch, batches of 4
    assert history.valid_map == [] and history.best_epoch == 5
    assert after < 0.25 * before, (before, after)
    assert np.mean(history.loss[-5:]) < np.mean(history.loss[:5])
    assert not model.training


def test_the_best_validation_epoch_is_kept():
    train, valid = toy_queries(), toy_queries(n_queries=6, seed=1)
    seed_everything(0)
    encoder, tok = build_backbone(tiny_config())
    model = CrossEncoderModel(encoder)
    cfg = TrainingConfig(max_length=32, epochs=3, batch_size=4, lr=3e-3, show_progress=False)
    history = train_cross_encoder(model, tok, train, valid, config=cfg)
    assert len(history.valid_map) == 3
    assert history.best_epoch == int(np.argmax(history.valid_map))  # first of the best on ties
    from uncertank.nn import encode_queries, score_probabilities

    probs = score_probabilities([model], encode_queries(tok, valid, max_length=32))[0]
    kept = average_precision(probs, valid.labels, valid.offsets).mean()
    assert kept == pytest.approx(history.valid_map[history.best_epoch])


def test_validation_must_be_labelled(queries):
    encoder, tok = build_backbone(tiny_config())
    model = CrossEncoderModel(encoder)
    cfg = TrainingConfig(epochs=1, show_progress=False)
    with pytest.raises(ValueError, match="valid must carry labels"):
        train_cross_encoder(model, tok, queries, QuerySet.from_lists([["a"]], [["x"]]), config=cfg)
    with pytest.raises(TypeError, match="valid must be a QuerySet"):
        train_cross_encoder(model, tok, queries, "valid", config=cfg)


def test_freeze_embeddings_keeps_the_embedding_layer_and_trains_the_rest(queries):
    from uncertank.nn import NeuralRanker

    ranker = NeuralRanker(tiny_config(), max_length=32, epochs=1, batch_size=8, lr=1e-3, show_progress=False,
                          freeze_embeddings=True)
    model = ranker.build_model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ranker.fit(queries)
    after = dict(model.named_parameters())
    emb = [n for n in before if ".embeddings." in n]
    assert emb and all(torch.equal(before[n].cpu(), after[n].detach().cpu()) for n in emb)  # any device
    assert any(not torch.equal(before[n].cpu(), after[n].detach().cpu()) for n in before if ".layer." in n)
    assert ranker.get_params()["freeze_embeddings"] is True
    with pytest.raises(TypeError, match="freeze_embeddings must be a bool"):
        NeuralRanker(tiny_config(), freeze_embeddings="yes")  # type: ignore[arg-type]


def test_freeze_embeddings_needs_an_encoder_with_embeddings(queries, tokenizer):
    class Bare(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Linear(2, 2)

        def forward(self, **batch):  # pragma: no cover - never reached
            return self.w(batch["x"])

    with pytest.raises(ValueError, match=r"freeze_embeddings needs a model with encoder\.embeddings"):
        train_cross_encoder(Bare(), tokenizer, queries, config=TrainingConfig(freeze_embeddings=True,
                                                                               show_progress=False))
