"""TF-IDF rankers: cosine similarity of a candidate to its query's context.

:class:`TfidfRanker` learns its vocabulary and document frequencies with
``fit`` (from the contexts and candidates of the training queries) and
scores a pair by the cosine of the two TF-IDF vectors, the weighting of
Salton & Buckley (1988) with scikit-learn's conventions: lower-cased words of
two or more word characters, ``tf`` or ``1 + ln tf`` (``sublinear_tf``),
``idf = ln((1 + n) / (1 + df)) + 1`` and L2-normalised rows. Words not seen
in training are ignored. By default (``link=True``) ``fit`` also learns a
logistic link ``P(relevant) = sigmoid(a * cosine + b)`` with ``a >= 0`` on the
training pairs (Platt 1999, with the slope bounded so that the link never
reverses the ranking), so the ranker's scores are probabilities and its
calibration can be measured; ``link=False`` keeps the raw cosines.

:class:`BootstrapTfidfRanker` is a stochastic ranker: draw ``s`` recomputes
the document frequencies on a bootstrap resample of the training documents
(Efron 1979) and scores every pair with that one IDF vector (through the
link fitted on all the training documents), so each row of its
:class:`~uncertank.PredictiveSamples` is a joint draw over every candidate
of every query. The spread says how much a score owes to which
documents happened to be in the training set.

Both use only uncertank's public API, numpy and scipy.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from typing_extensions import Self

from uncertank import FolderInUseError, Predictions, PredictiveSamples, QuerySet
from uncertank.params import Parameters

__all__ = ["BootstrapTfidfRanker", "TfidfRanker", "tokenize"]

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STATE = "tfidf.json"
_MATRIX = "doc_terms.npz"


def tokenize(text: str) -> list[str]:
    """Lower-cased words of two or more word characters (scikit-learn's default pattern).

    Examples
    --------
    >>> tokenize("Mount the USB-drive, a 2nd time")
    ['mount', 'the', 'usb', 'drive', '2nd', 'time']
    """
    return _TOKEN.findall(text.lower())


def _context_text(context: Sequence[str]) -> str:
    return " ".join(context)


class TfidfRanker(Parameters):
    """Cosine similarity of TF-IDF vectors of context and candidate, through a logistic link.

    It is an estimator in scikit-learn's sense (:class:`uncertank.Cloneable`):
    :class:`uncertank.params.Parameters` reads ``get_params`` off the
    constructor, which stores each argument as given, so ``sklearn.base.clone``
    rebuilds it and the conformance kit's ``clone`` check passes.

    Parameters
    ----------
    sublinear_tf : bool
        Use ``1 + ln(tf)`` instead of raw term counts.
    link : bool
        Map cosines to probabilities of relevance with the logistic link
        fitted on the training pairs (True, predictions are probabilities);
        or keep the raw cosines (False, marked ``probabilistic=False``:
        ranking metrics apply, calibration metrics do not).
    name : str, optional
        The name in reports; ``"tfidf"`` by default.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Set by :meth:`fit`: term to column.
    doc_terms_ : scipy.sparse.csr_matrix of shape (n_docs, n_terms)
        Set by :meth:`fit`: which terms each training document holds (0/1).
    link_ : ndarray of shape (2,) or None
        Set by :meth:`fit` when ``link``: the slope ``a >= 0`` and intercept ``b``.

    Examples
    --------
    >>> train = QuerySet.from_lists(["my wifi is down", "no sound"],
    ...                             [["restart the wifi driver", "hello"], ["check the sound mixer", "bye"]],
    ...                             [[1, 0], [1, 0]])
    >>> ranker = TfidfRanker(link=False).fit(train)
    >>> scores = ranker.predict(QuerySet.from_lists(["wifi broken"], [["reload wifi", "hi"]])).scores
    >>> bool(scores[0] > scores[1] == 0.0)
    True
    """

    name = "tfidf"

    def __init__(self, *, sublinear_tf: bool = True, link: bool = True, name: str | None = None) -> None:
        # scikit-learn's rule (uncertank.Cloneable): each argument stored as given, under its own name, and
        # checked by _check_params, which set_params runs too
        self.sublinear_tf = sublinear_tf
        self.link = link
        if name is not None:
            self.name = name
        self._check_params()
        self.vocabulary_: dict[str, int] | None = None
        self.doc_terms_: sparse.csr_matrix | None = None
        self.link_: NDArray[np.float64] | None = None

    def _check_params(self) -> None:
        for label in ("sublinear_tf", "link"):
            value = getattr(self, label)
            if not isinstance(value, bool):
                raise TypeError(f"{label} must be a bool; got {type(value).__name__} {value!r}")
        name = vars(self).get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name must be a non-empty str; got {name!r}")

    @property
    def probabilistic(self) -> bool:
        """Whether the scores are probabilities of relevance (``link``); ``uncertank run`` reads it."""
        return self.link

    @property
    def is_fitted(self) -> bool:
        """True once :meth:`fit` ran or :meth:`load` read a fitted ranker; ``uncertank run`` fits it otherwise."""
        return self.vocabulary_ is not None and self.doc_terms_ is not None

    # -- fitting ---------------------------------------------------------------------

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Learn the vocabulary and document frequencies from ``train``.

        The documents are every context (its utterances joined by spaces)
        and every candidate of ``train``. With ``link``, the logistic link
        is then fitted by maximum likelihood on the cosines and labels of the
        training pairs (L-BFGS-B, slope bounded below by 0). ``valid`` is
        accepted for the protocol and ignored.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            When ``train`` has no word to learn, or (with ``link``) no labels
            or labels of one class only.
        """
        _check_queries(train, "train")
        labels = train.labels
        if self.link and (labels is None or np.unique(labels > 0).size < 2):
            raise ValueError("train must hold relevant and non-relevant labelled pairs to fit the link; "
                             "pass link=False for raw cosines")
        docs = [_context_text(c) for c in train.contexts] + list(train.candidates)
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for i, doc in enumerate(docs):
            for term in set(tokenize(doc)):
                rows.append(i)
                cols.append(vocab.setdefault(term, len(vocab)))
        if not vocab:
            raise ValueError("train must contain at least one word of two or more characters; got none")
        data = np.ones(len(rows), dtype=np.float64)
        self.doc_terms_ = sparse.csr_matrix((data, (rows, cols)), shape=(len(docs), len(vocab)))
        self.vocabulary_ = vocab
        self.link_ = None
        if self.link and labels is not None:
            self.link_ = _fit_link(self._raw_cosines(train), (labels > 0).astype(np.float64))
        return self

    def _check_fitted(self) -> tuple[dict[str, int], sparse.csr_matrix]:
        if self.vocabulary_ is None or self.doc_terms_ is None:
            raise RuntimeError(f"{type(self).__name__} must be fitted before predicting; call fit(train) first")
        return self.vocabulary_, self.doc_terms_

    # -- scoring ---------------------------------------------------------------------

    def _term_counts(self, texts: list[str]) -> sparse.csr_matrix:
        vocab, _ = self._check_fitted()
        rows: list[int] = []
        cols: list[int] = []
        for i, text in enumerate(texts):
            for term in tokenize(text):
                j = vocab.get(term)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
        data = np.ones(len(rows), dtype=np.float64)
        tf = sparse.csr_matrix((data, (rows, cols)), shape=(len(texts), len(vocab)))
        tf.sum_duplicates()
        if self.sublinear_tf:
            tf.data = 1.0 + np.log(tf.data)
        return tf

    @staticmethod
    def _idf(df: NDArray[np.float64], n_docs: float) -> NDArray[np.float64]:
        out: NDArray[np.float64] = np.log((1.0 + n_docs) / (1.0 + df)) + 1.0
        return out

    @staticmethod
    def _cosines(
        tf_q: sparse.csr_matrix, tf_c: sparse.csr_matrix, idf: NDArray[np.float64], query_index: NDArray[np.int64]
    ) -> NDArray[np.float64]:
        weights = sparse.diags(idf)
        q = _l2_rows(tf_q @ weights)
        c = _l2_rows(tf_c @ weights)
        return np.asarray(q[query_index].multiply(c).sum(axis=1), dtype=np.float64).ravel()

    def _inputs(self, queries: QuerySet) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
        return (self._term_counts([_context_text(c) for c in queries.contexts]),
                self._term_counts(list(queries.candidates)))

    def _raw_cosines(self, queries: QuerySet) -> NDArray[np.float64]:
        _, doc_terms = self._check_fitted()
        tf_q, tf_c = self._inputs(queries)
        df = np.asarray(doc_terms.sum(axis=0), dtype=np.float64).ravel()
        return self._cosines(tf_q, tf_c, self._idf(df, doc_terms.shape[0]), queries.query_index)

    def _to_scores(self, cosines: NDArray[np.float64]) -> NDArray[np.float64]:
        """The link applied to cosines of any shape (the identity without ``link``), clipped to [0, 1]."""
        if self.link_ is None:
            return np.clip(cosines, 0.0, 1.0)
        out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-(self.link_[0] * cosines + self.link_[1])))
        return out

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) of every pair (or the raw cosine without ``link``), shape (n_pairs,).

        Raises
        ------
        RuntimeError
            Before :meth:`fit`.
        """
        _check_queries(queries, "queries")
        scores = self._to_scores(self._raw_cosines(queries))
        return Predictions(scores, queries.offsets, ranker=self.name, probabilistic=self.probabilistic)

    # -- persistence -----------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {"sublinear_tf": self.sublinear_tf, "link": self.link, "name": self.name}

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the fitted ranker into the folder ``path``: two files, each replaced atomically.

        ``path`` may be new, empty, or hold an earlier save of this ranker.
        A folder holding anything else is refused before anything is written
        (:class:`uncertank.FolderInUseError`), unless ``overwrite`` is true;
        even then only this ranker's two files are replaced and every other
        file is left as it is. Each file is written under a temporary name in
        the folder and renamed over its earlier version, so a reader never
        sees half a file, and a failure leaves no temporary file behind.
        """
        vocab, doc_terms = self._check_fitted()
        target = Path(path)
        if target.exists() and not target.is_dir():
            raise ValueError(f"path must be a folder (new or existing); {str(path)!r} is a file")
        if target.is_dir() and not overwrite:
            foreign = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir()
                             if p.name not in (_STATE, _MATRIX))
            if foreign:
                raise FolderInUseError(target, foreign)
        target.mkdir(parents=True, exist_ok=True)
        terms = sorted(vocab, key=vocab.__getitem__)
        link = None if self.link_ is None else self.link_.tolist()
        state = {"class": type(self).__name__, "params": self._params(), "terms": terms, "link": link}
        written: list[Path] = []
        try:
            matrix = target / f".{_MATRIX}.tmp"
            written.append(matrix)
            with open(matrix, "wb") as fh:
                sparse.save_npz(fh, doc_terms.tocsr())
            state_tmp = target / f".{_STATE}.tmp"
            written.append(state_tmp)
            state_tmp.write_text(json.dumps(state), encoding="utf-8")
            os.replace(matrix, target / _MATRIX)
            os.replace(state_tmp, target / _STATE)  # the state last: it is what load looks for
        except BaseException:
            for tmp in written:
                tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """Rebuild a ranker written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            When ``path`` holds no saved ranker.
        ValueError
            When it holds a ranker of another class.
        """
        folder = Path(path)
        if not (folder / _STATE).is_file():
            raise FileNotFoundError(f"path must be a folder written by {cls.__name__}.save; no {_STATE} in {folder}")
        state = json.loads((folder / _STATE).read_text(encoding="utf-8"))
        if state.get("class") != cls.__name__:
            raise ValueError(f"path holds a {state.get('class')} ranker; {cls.__name__}.load cannot read it")
        ranker = cls(**state["params"])
        ranker.vocabulary_ = {t: i for i, t in enumerate(state["terms"])}
        ranker.doc_terms_ = sparse.load_npz(folder / _MATRIX).tocsr()
        ranker.link_ = None if state.get("link") is None else np.asarray(state["link"], dtype=np.float64)
        return ranker

    def __repr__(self) -> str:
        state = "unfitted" if self.vocabulary_ is None else f"{len(self.vocabulary_)} terms"
        return f"{type(self).__name__}(name={self.name!r}, {state})"


class BootstrapTfidfRanker(TfidfRanker):
    """TF-IDF whose document frequencies come from bootstrap resamples of the training documents.

    Draw ``s`` resamples the ``n_docs`` training documents with replacement
    (seeded by ``seed``), recomputes every term's document frequency on the
    resample and scores all pairs with that IDF; :meth:`predict` is the mean
    over the ``n_samples`` draws. The draws depend on ``seed`` and the
    training data only, not on the queries scored.

    Parameters
    ----------
    n_samples : int
        Default number of draws (20).
    seed : int
        Seeds the resamples.
    sublinear_tf, link, name
        As in :class:`TfidfRanker` (name ``"tfidf-bootstrap"``).
    """

    name = "tfidf-bootstrap"

    def __init__(self, *, n_samples: int = 20, seed: int = 0, sublinear_tf: bool = True, link: bool = True,
                 name: str | None = None) -> None:
        self.n_samples = n_samples
        self.seed = seed
        super().__init__(sublinear_tf=sublinear_tf, link=link, name=name)

    def _check_params(self) -> None:
        super()._check_params()
        _positive_int(self.n_samples, "n_samples")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an int; got {type(self.seed).__name__} {self.seed!r}")

    def _params(self) -> dict[str, Any]:
        return {**super()._params(), "n_samples": int(self.n_samples), "seed": self.seed}

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Joint draws of P(relevant) (of the cosines without ``link``), shape (n_samples, n_pairs).

        Parameters
        ----------
        queries : QuerySet
            The queries to score.
        n_samples : int, optional
            Number of draws; ``self.n_samples`` by default. The first ``k``
            draws are the same whatever ``n_samples`` is.

        Raises
        ------
        RuntimeError
            Before :meth:`fit`.
        """
        _check_queries(queries, "queries")
        n = self.n_samples if n_samples is None else _positive_int(n_samples, "n_samples")
        _, doc_terms = self._check_fitted()
        n_docs = doc_terms.shape[0]
        tf_q, tf_c = self._inputs(queries)
        rng = np.random.default_rng(self.seed)
        by_term = doc_terms.T.tocsr()
        out = np.empty((n, queries.n_pairs), dtype=np.float64)
        for s in range(n):
            counts = np.bincount(rng.integers(0, n_docs, size=n_docs), minlength=n_docs).astype(np.float64)
            df = by_term @ counts
            out[s] = self._cosines(tf_q, tf_c, self._idf(df, n_docs), queries.query_index)
        return PredictiveSamples(self._to_scores(out), queries.offsets, ranker=self.name)

    def predict(self, queries: QuerySet) -> Predictions:
        """The mean over ``n_samples`` draws, shape (n_pairs,)."""
        mean = self.predict_samples(queries).mean()
        return Predictions(mean, queries.offsets, ranker=self.name, probabilistic=self.probabilistic)


def _fit_link(cosines: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """Maximum-likelihood ``(a, b)`` of ``P(y = 1) = sigmoid(a * cosine + b)`` with ``a >= 0``."""
    from scipy.optimize import minimize

    x = np.column_stack([cosines, np.ones_like(cosines)])

    def nll(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        z = x @ w
        return float(np.sum(np.logaddexp(0.0, z) - y * z)), x.T @ (1.0 / (1.0 + np.exp(-z)) - y)

    res = minimize(nll, np.zeros(2), jac=True, method="L-BFGS-B", bounds=[(0.0, None), (None, None)])
    return np.asarray(res.x, dtype=np.float64)


def _l2_rows(m: sparse.csr_matrix) -> sparse.csr_matrix:
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1), dtype=np.float64).ravel())
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sparse.csr_matrix(sparse.diags(inv) @ m)


def _check_queries(queries: Any, name: str) -> None:
    if not isinstance(queries, QuerySet):
        raise TypeError(f"{name} must be a uncertank.QuerySet; got {type(queries).__name__}")


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
    return int(value)
