"""Non-neural baseline rankers, registered through ``uncertank_rankers``.

- ``bm25`` (:class:`BM25Ranker`): each candidate scored by BM25 against its
  query's context, the zero-shot lexical baseline of conversation response
  ranking (Penha & Hauff 2021 report it on every negative-sampling condition).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from uncertank._types import Predictions, QuerySet
from uncertank.hookspecs import hookimpl
from uncertank.params import Parameters
from uncertank.protocols import CostRates

__all__ = ["BM25Ranker"]


class BM25Ranker(Parameters):
    """BM25 scores of each candidate against its query's context (raw, not probabilities).

    The documents are the distinct candidate texts of the :class:`~uncertank.QuerySet`
    scored (so IDF comes from the candidates of all its queries); the query
    is the context's utterances joined by spaces. Scores come from the
    ``bm25s`` index (Lucene variant by default), lower-cased words of two or
    more characters, English stopwords removed, no stemming. Predictions are
    marked ``probabilistic=False``: fine for ranking metrics, not for
    calibration without a recalibrator.

    Parameters
    ----------
    k1, b : float
        BM25 parameters (``bm25s`` defaults 1.5 and 0.75).
    method : {"lucene", "robertson", "atire"}
        The ``bm25s`` variant.
    stopwords : str or None
        ``bm25s`` stopword list, or None.

    Notes
    -----
    Needs the extra ``retrieval`` (``bm25s``).

    References
    ----------
    Robertson, S. & Zaragoza, H. (2009). The probabilistic relevance
    framework: BM25 and beyond. Foundations and Trends in IR 3(4).

    Examples
    --------
    >>> from uncertank import QuerySet, make_ranker
    >>> qs = QuerySet.from_lists([["my usb drive is not mounted"]],
    ...                          [["mount the usb drive", "hello there", "try a reboot"]])
    >>> scores = make_ranker("bm25").predict(qs).scores
    >>> int(scores.argmax()), float(scores[1])
    (0, 0.0)
    """

    name = "bm25"

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
    ) -> None:
        self.k1 = k1
        self.b = b
        self.method = method
        self.stopwords = stopwords
        self._check_params()

    def _check_params(self) -> None:
        """Raise for a bad parameter (called by the constructor and :meth:`set_params`); nothing is stored."""
        from uncertank.validation import check_choice, check_unit_interval

        for label, value in (("k1", self.k1), ("b", self.b)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{label} must be a number; got {type(value).__name__} {value!r}")
        if self.k1 < 0:
            raise ValueError(f"k1 must be >= 0; got {self.k1}")
        check_unit_interval(self.b, "b", closed="both")
        check_choice(self.method, "method", ("lucene", "robertson", "atire"))

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """Seconds per scored pair (it trains nothing): 0.3 s on 2,000 pairs (docs/results/real_run.json)."""
        return CostRates(0.0, 0.3 / 2000)

    def predict(self, queries: QuerySet) -> Predictions:
        """Score every pair of ``queries``: an array of shape (n_pairs,) of BM25 scores."""
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        from uncertank.datasets.retrieval import BM25Index

        doc_of: dict[str, int] = {}
        doc_index = np.fromiter(
            (doc_of.setdefault(t, len(doc_of)) for t in queries.candidates),
            dtype=np.int64, count=queries.n_pairs,
        )
        index = BM25Index(
            list(doc_of), k1=float(self.k1), b=float(self.b), method=self.method, stopwords=self.stopwords
        )
        texts = [" ".join(c) for c in queries.contexts]
        scores = index.pair_scores(texts, queries.query_index, doc_index)
        return Predictions(scores, queries.offsets, ranker=self.name, probabilistic=False)

    def __repr__(self) -> str:
        return f"BM25Ranker(k1={float(self.k1)}, b={float(self.b)}, method={self.method!r})"


@hookimpl
def uncertank_rankers() -> dict[str, Callable[..., object]]:
    """Register the built-in baseline rankers."""
    return {"bm25": BM25Ranker}
