"""Negative samplers: which non-relevant responses a query's candidate list holds.

The three strategies of Penha & Hauff (2021, section 4.3), after which a
ranker's calibration is measured under a shift of negative sampling:

- ``random``: responses drawn uniformly from the pool;
- ``bm25``: the responses BM25 ranks highest with the context as the query
  (``bm25s``, Lucene variant, English stopwords);
- ``embedding``: the responses nearest to the context in a sentence-embedding
  space (all-MiniLM-L6-v2, mean pooling, unit length; exact inner-product
  search with faiss).

Every sampler is built as ``factory(pool, seed=...)`` over a pool of response
texts and called as ``sampler.sample(contexts, positives, k)``; it returns an
integer array of shape (n_queries, k) of indices into ``pool``.

The samplers are one template, :class:`NegativeSampler` (in
:mod:`uncertank.datasets.negative_sampler`, with the exclusion rules): a
strategy only implements :meth:`NegativeSampler.retrieve`, its ranked
candidates (none for ``random``). BM25 and the sentence encoder come from
:mod:`uncertank.datasets.retrieval`, which the BM25 baseline ranker uses
too. Texts are compared after whitespace normalisation
(:func:`normalize_text`, in :mod:`uncertank.datasets.duplicates`). Every
name keeps its import path here.

References
----------
Penha, G. & Hauff, C. (2021). On the calibration and uncertainty of neural
learning to rank models for conversational search. EACL 2021.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from uncertank._optional import require
from uncertank.datasets.negative_sampler import NegativeSampler

__all__ = [
    "BM25Sampler",
    "EmbeddingSampler",
    "RandomSampler",
]


class RandomSampler(NegativeSampler):
    """Negatives drawn uniformly, without replacement, from the distinct pool texts.

    Examples
    --------
    >>> s = RandomSampler(["a", "b", "c", "d", "b"], seed=0)
    >>> neg = s.sample([["hi"], ["yo"]], ["a", "b"], 2)
    >>> neg.shape
    (2, 2)
    >>> [s.pool[i] for i in neg[1]].count("b")
    0
    """

    name = "random"

    def retrieve(self, contexts: Sequence[Sequence[str]], depth: int) -> None:
        """No ranking: every negative is drawn uniformly (see :meth:`NegativeSampler.retrieve`)."""
        return None


class BM25Sampler(NegativeSampler):
    """Negatives that BM25 ranks highest for the context (Penha & Hauff 2021).

    The context utterances are joined by spaces into the query; the pool's
    distinct texts are the documents. The best-ranked texts that are allowed
    (see :class:`NegativeSampler`) become the negatives, in rank order. Where
    fewer than ``k`` allowed texts share a term with the context, the rest
    are drawn at random (as :class:`RandomSampler`); :attr:`last_n_random`
    counts them.

    Parameters
    ----------
    pool : sequence of str
    seed : int
    groups : sequence of str, optional
    k1, b, method, stopwords
        Passed to :class:`~uncertank.datasets.retrieval.BM25Index` (``bm25s``).

    Examples
    --------
    >>> pool = ["mount the usb drive", "reboot", "usb drive not found", "hello", "lol"]
    >>> s = BM25Sampler(pool, seed=0)
    >>> [pool[i] for i in s.sample([["my usb drive"]], ["mount the usb drive"], 1)[0]]
    ['usb drive not found']
    """

    name = "bm25"

    def __init__(
        self,
        pool: Sequence[str],
        *,
        seed: int = 0,
        groups: Sequence[str] | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
    ) -> None:
        super().__init__(pool, seed=seed, groups=groups)
        from uncertank.datasets.retrieval import BM25Index

        try:
            self.index = BM25Index(self.unique_texts, k1=k1, b=b, method=method, stopwords=stopwords)
        except ValueError as exc:  # the index's corpus is the pool's distinct texts: name the user's argument
            if not str(exc).startswith("corpus "):
                raise
            raise ValueError("pool" + str(exc)[len("corpus"):]) from exc

    def retrieve(self, contexts: Sequence[Sequence[str]], depth: int) -> NDArray[np.int64]:
        """The ``depth`` distinct texts BM25 ranks highest for each context (-1 past the matching ones)."""
        ids, _ = self.index.top_k(self.query_texts(contexts), depth)
        return ids


class EmbeddingSampler(NegativeSampler):
    """Negatives nearest to the context in a sentence-embedding space.

    Texts are encoded by a BERT-style encoder with mean pooling over the
    non-padding tokens and scaled to unit length (Reimers & Gurevych 2019);
    the pool texts of largest inner product (cosine) with the context are
    found by exact search (``faiss.IndexFlatIP``), and the best-ranked
    allowed ones (see :class:`NegativeSampler`) become the negatives. The
    context utterances are joined by spaces and truncated from the left (the
    most recent words are kept).

    Parameters
    ----------
    pool : sequence of str
    seed : int
        Seeds only the random fill used when too few neighbours are allowed.
    groups : sequence of str, optional
    model, batch_size, max_length, progress
        Passed to :class:`~uncertank.datasets.retrieval.SentenceEncoder`: a
        local encoder folder (by default the packaged all-MiniLM-L6-v2;
        nothing is downloaded), texts per forward pass, token limit per text,
        and whether to show a progress bar (by default only when standard
        error is a terminal).

    Notes
    -----
    Needs the extras ``torch`` and ``retrieval`` (torch, transformers, faiss).

    References
    ----------
    Reimers, N. & Gurevych, I. (2019). Sentence-BERT: sentence embeddings
    using siamese BERT-networks. EMNLP 2019.
    """

    name = "embedding"

    def __init__(
        self,
        pool: Sequence[str],
        *,
        seed: int = 0,
        groups: Sequence[str] | None = None,
        model: str | None = None,
        batch_size: int = 64,
        max_length: int = 128,
        progress: bool | None = None,
    ) -> None:
        super().__init__(pool, seed=seed, groups=groups)
        from uncertank.datasets.retrieval import SentenceEncoder

        faiss = require("faiss", "torch,retrieval", what="the embedding sampler")
        self.encoder = SentenceEncoder(model, batch_size=batch_size, max_length=max_length, progress=progress)
        self.model_path = self.encoder.model_path
        self.pool_embeddings = self.encode(self.unique_texts, desc="embedding the response pool")
        self.index = faiss.IndexFlatIP(self.pool_embeddings.shape[1])
        self.index.add(self.pool_embeddings)

    def encode(
        self, texts: Sequence[str], *, desc: str = "encoding", left_truncate: bool = False
    ) -> NDArray[np.float32]:
        """Embeddings of ``texts``, shape (n_texts, dim); see :meth:`SentenceEncoder.encode`."""
        return self.encoder.encode(texts, desc=desc, left_truncate=left_truncate)

    def retrieve(self, contexts: Sequence[Sequence[str]], depth: int) -> NDArray[np.int64]:
        """The ``depth`` distinct texts nearest to each context (exact inner-product search)."""
        q = self.encode(self.query_texts(contexts), desc="embedding the contexts", left_truncate=True)
        _, ids = self.index.search(q, depth)
        return np.asarray(ids, dtype=np.int64)
