"""The data model: what rankers read (:class:`QuerySet`) and what evaluators read.

All containers store one flat array per field plus CSR-style ``offsets`` of
shape ``(n_queries + 1,)``: the candidates of query ``q`` are the slice
``offsets[q]:offsets[q + 1]``. Lists may differ in length.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._validation import (
    as_float_array,
    as_label_array,
    check_offsets,
    check_same_length,
)

__all__ = ["PredictiveSamples", "Predictions", "QuerySet", "RankedLists"]


def _query_index(offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """Map every flat position to the index of its query."""
    return np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))


def _subset_flat(offsets: NDArray[np.int64], indices: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Flat positions and new offsets that select ``indices`` (in that order)."""
    lengths = np.diff(offsets)[indices]
    new_offsets = np.zeros(indices.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    starts = offsets[:-1][indices]
    pos = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return pos, new_offsets


def _check_indices(indices: ArrayLike, n: int) -> NDArray[np.int64]:
    idx = np.asarray(indices)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise ValueError(f"indices as a mask must have shape ({n},); got {idx.shape}")
        return np.flatnonzero(idx).astype(np.int64)
    idx = idx.astype(np.int64).ravel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"indices must lie in [-{n}, {n}); got min {idx.min()}, max {idx.max()}")
    return np.where(idx < 0, idx + n, idx)


@dataclass(frozen=True, eq=False)
class QuerySet:
    """Queries with their candidates: what a :class:`~uncertank.Ranker` reads.

    Parameters
    ----------
    contexts : sequence of n_queries sequences of str
        Per query, the conversation context as a list of utterances (oldest
        first), or a one-element list holding an ad hoc query string.
    candidates : sequence of n_pairs str
        The candidate texts of all queries, flattened.
    offsets : ndarray of shape (n_queries + 1,)
        CSR offsets into ``candidates``.
    labels : ndarray of shape (n_pairs,), optional
        Integer relevance labels (``> 0`` is relevant), where known.
    query_ids : sequence of n_queries str, optional
        Identifiers of the queries; ``"0"``, ``"1"``, ... when omitted.
    candidate_ids : sequence of n_pairs str, optional
        Identifiers of the candidates (document ids for TREC data).
    name : str
        A label for reports, such as ``"ubuntu-sample/test/bm25"``.

    Examples
    --------
    >>> qs = QuerySet.from_lists(["how do I mount a usb drive?"],
    ...                          [["use mount", "try rebooting"]], [[1, 0]])
    >>> qs.n_queries, qs.n_pairs
    (1, 2)
    """

    contexts: Sequence[Sequence[str]]
    candidates: Sequence[str]
    offsets: NDArray[np.int64]
    labels: NDArray[np.int64] | None = None
    query_ids: Sequence[str] | None = None
    candidate_ids: Sequence[str] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        offsets = check_offsets(self.offsets, len(self.candidates))
        object.__setattr__(self, "offsets", offsets)
        n_queries = offsets.size - 1
        if len(self.contexts) != n_queries:
            raise ValueError(
                f"contexts must hold one entry per query ({n_queries}); got {len(self.contexts)}"
            )
        contexts = [[c] if isinstance(c, str) else list(c) for c in self.contexts]
        object.__setattr__(self, "contexts", contexts)
        if self.labels is not None:
            labels = as_label_array(self.labels, "labels")
            if labels.shape != (len(self.candidates),):
                raise ValueError(
                    f"labels must have shape ({len(self.candidates)},), one per candidate; "
                    f"got {labels.shape}"
                )
            object.__setattr__(self, "labels", labels)
        if self.query_ids is not None and len(self.query_ids) != n_queries:
            raise ValueError(
                f"query_ids must hold one id per query ({n_queries}); got {len(self.query_ids)}"
            )
        if self.candidate_ids is not None and len(self.candidate_ids) != len(self.candidates):
            raise ValueError(
                f"candidate_ids must hold one id per candidate ({len(self.candidates)}); "
                f"got {len(self.candidate_ids)}"
            )

    @classmethod
    def from_lists(
        cls,
        contexts: Sequence[str | Sequence[str]],
        candidates: Sequence[Sequence[str]],
        labels: Sequence[Sequence[int]] | None = None,
        *,
        query_ids: Sequence[str] | None = None,
        name: str = "",
    ) -> QuerySet:
        """Build from nested lists: one list of candidates (and labels) per query."""
        if len(candidates) != len(contexts):
            raise ValueError(
                f"candidates must hold one list per context ({len(contexts)}); got {len(candidates)}"
            )
        lengths = np.array([len(c) for c in candidates], dtype=np.int64)
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = [str(t) for cand in candidates for t in cand]
        flat_labels = None
        if labels is not None:
            if len(labels) != len(candidates) or any(
                len(lab) != len(c) for lab, c in zip(labels, candidates, strict=False)
            ):
                raise ValueError("labels must match candidates list by list, one label per candidate")
            flat_labels = np.array([int(v) for lab in labels for v in lab], dtype=np.int64)
        ctx = [[c] if isinstance(c, str) else list(c) for c in contexts]
        return cls(ctx, flat, offsets, flat_labels, query_ids=query_ids, name=name)

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.offsets.size - 1)

    @property
    def n_pairs(self) -> int:
        """Number of (query, candidate) pairs."""
        return int(self.offsets[-1])

    @property
    def lengths(self) -> NDArray[np.int64]:
        """Number of candidates per query, shape (n_queries,)."""
        return np.diff(self.offsets)

    @property
    def query_index(self) -> NDArray[np.int64]:
        """Query index of every pair, shape (n_pairs,)."""
        return _query_index(self.offsets)

    def __len__(self) -> int:
        return self.n_queries

    def query(self, q: int) -> tuple[list[str], list[str], NDArray[np.int64] | None]:
        """Context, candidates and labels (or None) of query ``q``."""
        lo, hi = int(self.offsets[q]), int(self.offsets[q + 1])
        labels = None if self.labels is None else self.labels[lo:hi]
        return list(self.contexts[q]), list(self.candidates[lo:hi]), labels

    def __iter__(self) -> Iterator[tuple[list[str], list[str], NDArray[np.int64] | None]]:
        for q in range(self.n_queries):
            yield self.query(q)

    def pairs(self) -> Iterator[tuple[list[str], str]]:
        """Yield ``(context, candidate)`` for every pair in flat order."""
        for q in range(self.n_queries):
            ctx = list(self.contexts[q])
            for j in range(int(self.offsets[q]), int(self.offsets[q + 1])):
                yield ctx, self.candidates[j]

    def subset(self, indices: ArrayLike) -> QuerySet:
        """The queries at ``indices`` (ints or a boolean mask), in that order."""
        idx = _check_indices(indices, self.n_queries)
        pos, offsets = _subset_flat(self.offsets, idx)
        return QuerySet(
            [self.contexts[i] for i in idx],
            [self.candidates[p] for p in pos],
            offsets,
            None if self.labels is None else self.labels[pos],
            query_ids=None if self.query_ids is None else [self.query_ids[i] for i in idx],
            candidate_ids=None if self.candidate_ids is None else [self.candidate_ids[p] for p in pos],
            name=self.name,
        )

    def ranked(self, scores: ArrayLike) -> RankedLists:
        """Pair ``scores`` of shape (n_pairs,) with this set's labels."""
        if self.labels is None:
            raise ValueError(f"QuerySet {self.name or '(unnamed)'} has no labels to evaluate against")
        return RankedLists.from_flat(
            scores, self.labels, self.offsets, query_ids=self.query_ids, candidate_ids=self.candidate_ids
        )


@dataclass(frozen=True, eq=False)
class RankedLists:
    """Scored candidate lists with labels: what the evaluators read.

    Parameters
    ----------
    scores : ndarray of shape (n_pairs,)
        One score per pair, float64. Higher ranks first.
    labels : ndarray of shape (n_pairs,)
        Integer relevance labels ``>= 0``.
    offsets : ndarray of shape (n_queries + 1,)
        CSR offsets.
    query_ids, candidate_ids : sequence of str, optional
        Identifiers, kept for reports and TREC output.

    Notes
    -----
    Use :meth:`from_dense` for the common fixed-size case and :meth:`from_flat`
    otherwise; both validate their input.
    """

    scores: NDArray[np.float64]
    labels: NDArray[np.int64]
    offsets: NDArray[np.int64]
    query_ids: Sequence[str] | None = None
    candidate_ids: Sequence[str] | None = None

    def __post_init__(self) -> None:
        scores = as_float_array(self.scores, "scores")
        labels = as_label_array(self.labels, "labels")
        check_same_length(scores, "scores", labels, "labels")
        offsets = check_offsets(self.offsets, scores.size)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "offsets", offsets)
        n_queries = offsets.size - 1
        if self.query_ids is not None and len(self.query_ids) != n_queries:
            raise ValueError(
                f"query_ids must hold one id per query ({n_queries}); got {len(self.query_ids)}"
            )
        if self.candidate_ids is not None and len(self.candidate_ids) != scores.size:
            raise ValueError(
                f"candidate_ids must hold one id per pair ({scores.size}); got {len(self.candidate_ids)}"
            )

    @classmethod
    def from_dense(cls, scores: ArrayLike, labels: ArrayLike) -> RankedLists:
        """Build from two arrays of shape (n_queries, n_candidates)."""
        s = as_float_array(scores, "scores", ndim=2)
        lab = as_label_array(labels, "labels", ndim=2)
        check_same_length(s, "scores", lab, "labels")
        n_q, n_c = s.shape
        offsets = np.arange(0, n_q * n_c + 1, n_c, dtype=np.int64)
        return cls(s.ravel(), lab.ravel(), offsets)

    @classmethod
    def from_flat(
        cls,
        scores: ArrayLike,
        labels: ArrayLike,
        offsets: ArrayLike,
        *,
        query_ids: Sequence[str] | None = None,
        candidate_ids: Sequence[str] | None = None,
    ) -> RankedLists:
        """Build from flat arrays of shape (n_pairs,) and offsets of shape (n_queries + 1,)."""
        return cls(
            np.asarray(scores), np.asarray(labels), np.asarray(offsets),
            query_ids=query_ids, candidate_ids=candidate_ids,
        )

    @property
    def n_queries(self) -> int:
        """Number of queries."""
        return int(self.offsets.size - 1)

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.scores.size)

    @property
    def lengths(self) -> NDArray[np.int64]:
        """Number of candidates per query, shape (n_queries,)."""
        return np.diff(self.offsets)

    @property
    def query_index(self) -> NDArray[np.int64]:
        """Query index of every pair, shape (n_pairs,)."""
        return _query_index(self.offsets)

    @property
    def is_dense(self) -> bool:
        """True when every query has the same number of candidates."""
        lengths = self.lengths
        return bool((lengths == lengths[0]).all())

    def to_dense(self) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Scores and labels as (n_queries, n_candidates) arrays; needs equal lengths."""
        if not self.is_dense:
            raise ValueError("to_dense needs every query to have the same number of candidates")
        shape = (self.n_queries, int(self.lengths[0]))
        return self.scores.reshape(shape), self.labels.reshape(shape)

    def subset(self, indices: ArrayLike) -> RankedLists:
        """The queries at ``indices`` (ints or a boolean mask), in that order."""
        idx = _check_indices(indices, self.n_queries)
        pos, offsets = _subset_flat(self.offsets, idx)
        return RankedLists(
            self.scores[pos], self.labels[pos], offsets,
            query_ids=None if self.query_ids is None else [self.query_ids[i] for i in idx],
            candidate_ids=None if self.candidate_ids is None else [self.candidate_ids[p] for p in pos],
        )

    def with_scores(self, scores: ArrayLike) -> RankedLists:
        """The same lists and labels with new ``scores`` of shape (n_pairs,)."""
        return RankedLists(
            np.asarray(scores), self.labels, self.offsets,
            query_ids=self.query_ids, candidate_ids=self.candidate_ids,
        )


def as_ranked_lists(
    scores: ArrayLike | RankedLists, labels: ArrayLike | None = None, *, name: str = "scores"
) -> RankedLists:
    """Accept a :class:`RankedLists` or a dense 2-D pair ``(scores, labels)``."""
    if isinstance(scores, RankedLists):
        if labels is not None:
            raise ValueError(f"labels must be None when {name} is a RankedLists (it carries its labels)")
        return scores
    if labels is None:
        raise ValueError(f"labels are required when {name} is an array")
    return RankedLists.from_dense(scores, labels)


@dataclass(frozen=True, eq=False)
class Predictions:
    """A deterministic ranker's output: one score per pair.

    Parameters
    ----------
    scores : ndarray of shape (n_pairs,)
        The mean predicted probability of relevance (or a raw score when
        ``probabilistic`` is False, for example for BM25 or a TREC run).
    offsets : ndarray of shape (n_queries + 1,)
        The offsets of the :class:`QuerySet` scored.
    ranker : str
        Name of the ranker that produced them.
    probabilistic : bool
        Whether ``scores`` are probabilities in [0, 1].
    """

    scores: NDArray[np.float64]
    offsets: NDArray[np.int64]
    ranker: str = ""
    probabilistic: bool = True

    def __post_init__(self) -> None:
        scores = as_float_array(self.scores, "scores")
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "offsets", check_offsets(self.offsets, scores.size))
        if self.probabilistic:
            from uncertank._validation import check_probabilities

            check_probabilities(scores, "scores")

    def ranked(self, labels: ArrayLike | QuerySet) -> RankedLists:
        """Pair these scores with ``labels`` (an array or a labelled QuerySet)."""
        if isinstance(labels, QuerySet):
            return labels.ranked(self.scores)
        return RankedLists.from_flat(self.scores, np.asarray(labels), self.offsets)


@dataclass(frozen=True, eq=False)
class PredictiveSamples:
    """Joint draws from a stochastic ranker's predictive distribution.

    Parameters
    ----------
    samples : ndarray of shape (n_samples, n_pairs)
        Row ``s`` is one joint draw over every pair (one dropout mask, one
        ensemble member, one posterior draw), so that covariances between the
        candidates of a query are meaningful.
    offsets : ndarray of shape (n_queries + 1,)
        The offsets of the :class:`QuerySet` scored.
    ranker : str
        Name of the ranker that produced them.
    ddof : int
        Delta degrees of freedom of :meth:`var` and :meth:`covariance_blocks`;
        0 (the default) divides by ``n_samples`` as ``numpy.var`` does.
    """

    samples: NDArray[np.float64]
    offsets: NDArray[np.int64]
    ranker: str = ""
    ddof: int = 0
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        samples = as_float_array(self.samples, "samples", ndim=2)
        object.__setattr__(self, "samples", samples)
        object.__setattr__(self, "offsets", check_offsets(self.offsets, samples.shape[1]))
        if self.ddof < 0 or self.ddof >= samples.shape[0]:
            raise ValueError(
                f"ddof must lie in [0, n_samples); got {self.ddof} with {samples.shape[0]} samples"
            )

    @property
    def n_samples(self) -> int:
        """Number of joint draws."""
        return int(self.samples.shape[0])

    @property
    def n_pairs(self) -> int:
        """Number of pairs."""
        return int(self.samples.shape[1])

    def mean(self) -> NDArray[np.float64]:
        """Predictive mean per pair, shape (n_pairs,)."""
        if "mean" not in self._cache:
            self._cache["mean"] = self.samples.mean(axis=0)
        return self._cache["mean"]  # type: ignore[no-any-return]

    def var(self) -> NDArray[np.float64]:
        """Predictive variance per pair, shape (n_pairs,)."""
        return self.samples.var(axis=0, ddof=self.ddof)

    def std(self) -> NDArray[np.float64]:
        """Predictive standard deviation per pair, shape (n_pairs,)."""
        return np.sqrt(self.var())

    def covariance_blocks(self) -> list[NDArray[np.float64]]:
        """Per query, the covariance matrix of its candidates' scores.

        Returns
        -------
        list of n_queries ndarrays of shape (n_q, n_q)
            Computed vectorised: queries of equal length are stacked and
            their blocks formed by one ``einsum``.
        """
        centred = self.samples - self.mean()
        lengths = np.diff(self.offsets)
        blocks: list[NDArray[np.float64]] = [np.empty((0, 0))] * lengths.size
        denom = self.n_samples - self.ddof
        for length in np.unique(lengths):
            qs = np.flatnonzero(lengths == length)
            cols = self.offsets[qs][:, None] + np.arange(length)[None, :]
            x = centred[:, cols]  # (S, n_q, L)
            cov = np.einsum("sqi,sqj->qij", x, x) / denom
            for k, q in enumerate(qs):
                blocks[q] = cov[k]
        return blocks

    def to_predictions(self) -> Predictions:
        """The predictive mean as :class:`Predictions`."""
        mean = self.mean()
        probabilistic = bool(((mean >= 0) & (mean <= 1)).all())
        return Predictions(mean, self.offsets, ranker=self.ranker, probabilistic=probabilistic)
