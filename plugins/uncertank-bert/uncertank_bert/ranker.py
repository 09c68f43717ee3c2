"""The deterministic BERT cross-encoder ranker."""

from __future__ import annotations

from uncertank.nn import NeuralRanker

__all__ = ["BertRanker"]


class BertRanker(NeuralRanker):
    """Pointwise BERT cross-encoder: ``[CLS]`` -> feed-forward -> softmax over two logits.

    The ranker of Penha & Hauff (EACL 2021, section 3.1; after Nogueira & Cho
    2019): P(relevant) of each (context, response) pair with dropout off,
    fine-tuned with cross-entropy on as many non-relevant as relevant pairs
    (BM25 negatives by default). All parameters are those of
    :class:`uncertank.nn.NeuralRanker`.

    Examples
    --------
    >>> from transformers import BertConfig
    >>> tiny = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2,
    ...                   intermediate_size=37)
    >>> BertRanker(tiny, show_progress=False).name
    'bert'
    """

    name = "bert"
