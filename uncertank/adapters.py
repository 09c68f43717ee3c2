"""Adapters that make arbitrary rankers first-class.

- :class:`CallableRanker` wraps any ``fn(context, candidates) -> scores``.
- :class:`EnsembleRanker` turns any list of rankers into a stochastic ranker
  whose joint draws are the members' predictions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from uncertank._types import Predictions, PredictiveSamples, QuerySet
from uncertank.protocols import Ranker
from uncertank.validation import as_float_array, check_instance, check_name, check_positive_int

__all__ = ["CallableRanker", "CrossEncoderRanker", "EnsembleRanker"]


class CallableRanker:
    """Any function ``fn(context, candidates) -> scores`` as a :class:`~uncertank.Ranker`.

    Parameters
    ----------
    fn : callable
        Called once per query with the context (a list of utterances) and the
        candidate texts (a list of str); returns one score per candidate.
    name : str, optional
        Report name; the function's ``__name__`` by default.
    probabilistic : bool
        Whether ``fn`` returns probabilities in [0, 1]. When False the
        scores are kept as they are (fine for ranking metrics, not for
        calibration).

    Examples
    --------
    >>> from uncertank import QuerySet
    >>> def overlap(context, candidates):
    ...     words = set(" ".join(context).split())
    ...     return [len(words & set(c.split())) / (1 + len(c.split())) for c in candidates]
    >>> qs = QuerySet.from_lists(["my wifi is down"], [["restart the wifi", "hello"]], [[1, 0]])
    >>> CallableRanker(overlap).predict(qs).scores.round(3)
    array([0.25, 0.  ])
    """

    def __init__(
        self,
        fn: Callable[[list[str], list[str]], ArrayLike],
        *,
        name: str | None = None,
        probabilistic: bool = True,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable; got {type(fn).__name__}")
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", type(fn).__name__))
        self.probabilistic = probabilistic

    def predict(self, queries: QuerySet) -> Predictions:
        """Score every query with one call of ``fn`` each."""
        out = np.empty(queries.n_pairs, dtype=np.float64)
        for q in range(queries.n_queries):
            context, candidates, _ = queries.query(q)
            scores = as_float_array(self.fn(context, candidates), f"scores returned by {self.name}")
            if scores.shape != (len(candidates),):
                raise ValueError(
                    f"{self.name} must return one score per candidate ({len(candidates)}) for "
                    f"query {q}; got shape {scores.shape}"
                )
            out[queries.offsets[q] : queries.offsets[q + 1]] = scores
        return Predictions(out, queries.offsets, ranker=self.name, probabilistic=self.probabilistic)

    def __repr__(self) -> str:
        return f"CallableRanker({self.name!r})"


class EnsembleRanker:
    """Any list of rankers as one stochastic ranker (a deep ensemble in general form).

    Member ``m``'s predictions are joint draw ``m``; the mean and variance over
    members are the ensemble's predictive mean and uncertainty (Lakshminarayanan
    et al. 2017; Penha & Hauff 2021, section 3.2).

    Parameters
    ----------
    rankers : sequence of Ranker
        At least two members.
    name : str
        Report name.
    """

    def __init__(self, rankers: Sequence[Ranker], *, name: str = "ensemble") -> None:
        members = list(check_instance(rankers, "rankers", Iterable, "a list of rankers"))
        check_name(name, "name")
        if len(members) < 2:
            raise ValueError(f"rankers must hold at least 2 members; got {len(members)}")
        for i, r in enumerate(members):
            if not callable(getattr(r, "predict", None)):
                raise TypeError(f"rankers[{i}] must have a predict(queries) method; got {type(r).__name__}")
        self.rankers = members
        self.name = name

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Stack the members' predictions: shape (n_members, n_pairs).

        ``n_samples`` may select the first ``n_samples`` members.
        """
        members = self.rankers
        if n_samples is not None:
            check_positive_int(n_samples, "n_samples")
            if n_samples > len(members):
                raise ValueError(
                    f"n_samples must be <= the number of members ({len(members)}); got {n_samples}"
                )
            members = members[:n_samples]
        rows = np.stack([r.predict(queries).scores for r in members])
        return PredictiveSamples(rows, queries.offsets, ranker=self.name)

    def predict(self, queries: QuerySet) -> Predictions:
        """The members' mean prediction."""
        return self.predict_samples(queries).to_predictions()

    def __repr__(self) -> str:
        return f"EnsembleRanker({[getattr(r, 'name', type(r).__name__) for r in self.rankers]})"


class _CrossEncoder(Protocol):
    """What is used of a sentence-transformers ``CrossEncoder``: its batched ``predict``."""

    def predict(
        self, pairs: list[tuple[str, str]], /, *, batch_size: int, show_progress_bar: bool, apply_softmax: bool,
        convert_to_numpy: bool,
    ) -> object: ...


class CrossEncoderRanker:
    """Any sentence-transformers ``CrossEncoder`` as a :class:`~uncertank.Ranker`.

    Each pair is scored as ``(context text, candidate)``, where the context
    text is the query's utterances joined by ``context_sep``; all pairs go to
    one ``model.predict`` call, which batches them.

    Parameters
    ----------
    model : sentence_transformers.CrossEncoder
        With one output (its activation, a sigmoid by default, gives the
        score) or two (the softmax's second column is P(relevant), as for
        the models of Penha & Hauff 2021).
    batch_size : int
        Pairs per forward pass.
    context_sep : str
        Joins the context utterances into one text.
    name : str, optional
        Report name; the model's class name by default.

    Notes
    -----
    The scores count as probabilities (``Predictions.probabilistic``) when
    they all lie in [0, 1]: true for a sigmoid or softmax output, not for a
    model returning raw logits.
    """

    def __init__(
        self, model: _CrossEncoder, *, batch_size: int = 32, context_sep: str = " ", name: str | None = None
    ) -> None:
        if not callable(getattr(model, "predict", None)):
            raise TypeError(
                f"model must be a sentence-transformers CrossEncoder (with predict(pairs)); got {type(model).__name__}"
            )
        self.model = model
        self.batch_size = check_positive_int(batch_size, "batch_size")
        if not isinstance(context_sep, str):
            raise TypeError(f"context_sep must be a str; got {type(context_sep).__name__}")
        self.context_sep = context_sep
        self.name = name or type(model).__name__

    def predict(self, queries: QuerySet) -> Predictions:
        """Score all pairs of ``queries`` in one batched call; shape (n_pairs,)."""
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        texts = [self.context_sep.join(c) for c in queries.contexts]
        qidx = queries.query_index
        pairs = [(texts[q], c) for q, c in zip(qidx.tolist(), queries.candidates, strict=True)]
        n_labels = int(getattr(self.model, "num_labels", 1))
        raw = self.model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False,
            apply_softmax=n_labels > 1, convert_to_numpy=True,
        )
        out = np.asarray(raw, dtype=np.float64)
        if out.ndim == 2 and out.shape[1] == 2:
            out = out[:, 1]
        if out.shape != (queries.n_pairs,):
            raise ValueError(
                f"model.predict must return one score (or two class probabilities) per pair; "
                f"got shape {np.asarray(raw).shape} for {queries.n_pairs} pairs"
            )
        scores = as_float_array(out, f"scores returned by {self.name}")
        probabilistic = bool(((scores >= 0) & (scores <= 1)).all())
        return Predictions(scores, queries.offsets, ranker=self.name, probabilistic=probabilistic)

    def __repr__(self) -> str:
        return f"CrossEncoderRanker({self.name!r})"
