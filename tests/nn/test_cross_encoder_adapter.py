from __future__ import annotations

import numpy as np
import pytest
import torch

from uncertank import QuerySet, Ranker
from uncertank.adapters import CrossEncoderRanker
from uncertank.nn.testing import toy_queries


def _tiny_cross_encoder(tmp_path, num_labels):
    CrossEncoder = pytest.importorskip("sentence_transformers").CrossEncoder
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from uncertank.nn import default_backbone_path

    cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=37,
                     vocab_size=30522, num_labels=num_labels)
    torch.manual_seed(0)
    folder = tmp_path / f"ce{num_labels}"
    BertForSequenceClassification(cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(default_backbone_path(), local_files_only=True).save_pretrained(folder)
    return CrossEncoder(str(folder), device="cpu")


@pytest.mark.parametrize("num_labels", [1, 2])
def test_scores_match_a_plain_loop_over_queries(tmp_path, num_labels):
    model = _tiny_cross_encoder(tmp_path, num_labels)
    queries = toy_queries(n_queries=4, n_candidates=5)
    ranker = CrossEncoderRanker(model, batch_size=7, context_sep=" | ")
    assert isinstance(ranker, Ranker)
    pred = ranker.predict(queries)
    assert pred.probabilistic and pred.scores.shape == (20,)
    expected = []
    for context, candidates, _ in queries:
        for cand in candidates:
            out = model.predict([(" | ".join(context), cand)], show_progress_bar=False)
            if num_labels == 2:
                expected.append(float(torch.softmax(torch.as_tensor(out[0]), -1)[1]))
            else:
                expected.append(float(out[0]))
    np.testing.assert_allclose(pred.scores, expected, rtol=0, atol=1e-6)


def test_errors(tmp_path):
    with pytest.raises(TypeError, match="model must be a sentence-transformers CrossEncoder"):
        CrossEncoderRanker(object())
    model = _tiny_cross_encoder(tmp_path, 1)
    with pytest.raises(ValueError, match="batch_size"):
        CrossEncoderRanker(model, batch_size=0)
    with pytest.raises(TypeError, match="context_sep"):
        CrossEncoderRanker(model, context_sep=1)
    with pytest.raises(TypeError, match="queries must be a QuerySet"):
        CrossEncoderRanker(model).predict([("a", "b")])

    class Wrong:
        num_labels = 1

        def predict(self, pairs, **kw):
            return np.zeros(len(pairs) + 1)

    with pytest.raises(ValueError, match="one score"):
        CrossEncoderRanker(Wrong()).predict(QuerySet.from_lists([["a"]], [["x", "y"]]))
