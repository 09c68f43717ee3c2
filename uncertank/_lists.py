"""The lists of the data model: queries with their candidates, and scored lists with labels.

- :class:`QuerySet`: queries with their candidates (and labels, where
  known), what a ranker reads;
- :class:`RankedLists`: scored candidate lists with labels, what the
  evaluators read.

Both store one flat array per field plus CSR-style ``offsets`` of shape
``(n_queries + 1,)``: the candidates of query ``q`` are the slice
``offsets[q]:offsets[q + 1]``. Lists may differ in length. Both own their
data (:func:`~uncertank._owned.owned`), and copy sequences of texts into
lists. Import them from :mod:`uncertank` (or :mod:`uncertank._types`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._owned import owned
from uncertank._validation import (
    as_float_array,
    as_label_array,
    check_name,
    check_offsets,
    check_same_length,
)

__all__ = ["QuerySet", "RankedLists"]


def _str_list(values: object, name: str, n: int | None = None, what: str = "per pair") -> list[str]:
    """Copy ``values`` into a list of str, or raise naming ``name``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of str; got {type(values).__name__}")
    out = list(values)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise TypeError(f"{name} must hold str; {name}[{i}] is {type(v).__name__} {v!r}")
    if n is not None and len(out) != n:
        raise ValueError(f"{name} must hold one id {what} ({n}); got {len(out)}")
    return out


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


class _Offsets:
    """The counts of a container with CSR ``offsets``: queries, pairs, lengths and the query of every pair."""

    offsets: NDArray[np.int64]

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


@dataclass(frozen=True, eq=False)
class QuerySet(_Offsets):
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
        candidates = _str_list(self.candidates, "candidates")
        object.__setattr__(self, "candidates", candidates)
        offsets = owned(check_offsets(self.offsets, len(candidates)), self.offsets)
        object.__setattr__(self, "offsets", offsets)
        n_queries = offsets.size - 1
        if isinstance(self.contexts, (str, bytes)) or not isinstance(self.contexts, Sequence):
            raise TypeError(f"contexts must be a sequence of contexts; got {type(self.contexts).__name__}")
        if len(self.contexts) != n_queries:
            raise ValueError(
                f"contexts must hold one entry per query ({n_queries}); got {len(self.contexts)}"
            )
        contexts = [
            [c] if isinstance(c, str) else _str_list(c, f"contexts[{q}]") for q, c in enumerate(self.contexts)
        ]
        object.__setattr__(self, "contexts", contexts)
        if self.labels is not None:
            labels = owned(as_label_array(self.labels, "labels"), self.labels)
            if labels.shape != (len(candidates),):
                raise ValueError(
                    f"labels must have shape ({len(candidates)},), one per candidate; "
                    f"got {labels.shape}"
                )
            object.__setattr__(self, "labels", labels)
        if self.query_ids is not None:
            object.__setattr__(self, "query_ids", _str_list(self.query_ids, "query_ids", n_queries, "per query"))
        if self.candidate_ids is not None:
            object.__setattr__(
                self, "candidate_ids",
                _str_list(self.candidate_ids, "candidate_ids", len(candidates), "per candidate"),
            )
        check_name(self.name)

    def __repr__(self) -> str:
        labelled = "labelled" if self.labels is not None else "unlabelled"
        return f"QuerySet({self.name!r}, {self.n_queries} queries, {self.n_pairs} pairs, {labelled})"

    def digest(self) -> str:
        """Hex SHA-256 of the content: contexts, candidates, labels and offsets.

        Two sets with the same texts, lists and labels have the same digest
        whatever their ``name`` or ids; any change of a text, a label or a
        list boundary changes it. Every text is hashed with its length, so
        no two different sets of texts hash the same stream.

        Returns
        -------
        str
            64 hex digits.

        Examples
        --------
        >>> a = QuerySet.from_lists(["q"], [["x", "y"]], [[1, 0]], name="a")
        >>> b = QuerySet.from_lists(["q"], [["x", "y"]], [[1, 0]], name="b")
        >>> a.digest() == b.digest(), a.digest() == QuerySet.from_lists(["q"], [["x", "y"]], [[0, 1]]).digest()
        (True, False)
        """
        h = hashlib.sha256(b"uncertank.QuerySet/1\0")

        def put(text: str) -> None:
            data = text.encode("utf-8")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)

        h.update(np.ascontiguousarray(self.offsets, dtype="<i8").tobytes())
        for ctx in self.contexts:
            h.update(len(ctx).to_bytes(8, "little"))
            for u in ctx:
                put(u)
        for c in self.candidates:
            put(c)
        if self.labels is None:
            h.update(b"no labels")
        else:
            h.update(b"labels")
            h.update(np.ascontiguousarray(self.labels, dtype="<i8").tobytes())
        return h.hexdigest()

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
            flat_labels = as_label_array(np.asarray([v for lab in labels for v in lab]), "labels")
        ctx = [[c] if isinstance(c, str) else list(c) for c in contexts]
        return cls(ctx, flat, offsets, flat_labels, query_ids=query_ids, name=name)

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
class RankedLists(_Offsets):
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
        scores = owned(as_float_array(self.scores, "scores"), self.scores)
        labels = owned(as_label_array(self.labels, "labels"), self.labels)
        check_same_length(scores, "scores", labels, "labels")
        offsets = owned(check_offsets(self.offsets, scores.size), self.offsets)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "offsets", offsets)
        n_queries = offsets.size - 1
        if self.query_ids is not None:
            object.__setattr__(self, "query_ids", _str_list(self.query_ids, "query_ids", n_queries, "per query"))
        if self.candidate_ids is not None:
            object.__setattr__(
                self, "candidate_ids", _str_list(self.candidate_ids, "candidate_ids", scores.size, "per pair")
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
        return cls(scores, labels, offsets, query_ids=query_ids, candidate_ids=candidate_ids)  # type: ignore[arg-type]

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
            scores, self.labels, self.offsets,  # type: ignore[arg-type]
            query_ids=self.query_ids, candidate_ids=self.candidate_ids,
        )
