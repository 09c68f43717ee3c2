"""The data model: what rankers read (:class:`QuerySet`), what they output, and what evaluators read.

- :class:`QuerySet`: queries with their candidates (and labels, where
  known), what a ranker reads;
- :class:`Predictions`: a deterministic ranker's scores, one per pair;
- :class:`PredictiveSamples`: a stochastic ranker's joint draws of shape
  (n_samples, n_pairs), with their mean, variance and per-query covariance
  blocks;
- :class:`RankedLists`: scored candidate lists with labels, what the
  evaluators read.

All containers store one flat array per field plus CSR-style ``offsets`` of
shape ``(n_queries + 1,)``: the candidates of query ``q`` are the slice
``offsets[q]:offsets[q + 1]``. Lists may differ in length.

Every container owns its data (:func:`owned`): arrays are copied on
construction (unless already a private read-only array) and stored
read-only, and sequences of texts are copied into lists, so that changing
the caller's array or list afterwards changes nothing here, and nothing
validated can become invalid. Import the containers from :mod:`uncertank`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.validation import (
    as_float_array,
    as_label_array,
    check_name,
    check_offsets,
    check_probabilities,
    check_same_length,
)

__all__ = ["PredictiveSamples", "Predictions", "QuerySet", "RankedLists", "owned", "query_index"]

# --------------------------------------------------------------------------- ownership

_A = TypeVar("_A", bound=np.ndarray)


def owned(arr: _A, source: object) -> _A:
    """``arr`` as a read-only array that shares no memory with ``source`` (the caller's input).

    A converter that already made a fresh array (``astype``, a list input)
    is not copied again, nor is a read-only array that owns its memory (one
    a container made); an array that is, or views, the caller's writable
    memory is copied.
    """
    if not arr.flags.writeable and arr.flags.owndata:
        return arr
    fresh = arr is not source and not (
        isinstance(source, np.ndarray) and np.may_share_memory(arr, source)
    ) and arr.base is None
    if not fresh:
        arr = arr.copy()
    arr.setflags(write=False)
    return arr

# --------------------------------------------------------------------------- the lists rankers and evaluators read

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


def query_index(offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """The query of every flat position (pair) of lists cut by ``offsets``, shape (offsets[-1],)."""
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
        return query_index(self.offsets)


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

# --------------------------------------------------------------------------- what a ranker outputs

#: Draws (n_samples x queries x length) centred at a time by PredictiveSamples.covariance_stacks.
_COV_CHUNK = 1 << 20


def _first_difference(a: NDArray[np.int64], b: NDArray[np.int64]) -> int:
    n = min(a.size, b.size)
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) - 1 if diff.size else n - 1


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
        scores = owned(as_float_array(self.scores, "scores"), self.scores)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "offsets", owned(check_offsets(self.offsets, scores.size), self.offsets))
        check_name(self.ranker, "ranker")
        if not isinstance(self.probabilistic, (bool, np.bool_)):
            raise TypeError(f"probabilistic must be a bool; got {type(self.probabilistic).__name__}")
        if self.probabilistic:
            check_probabilities(scores, "scores")

    def ranked(self, labels: ArrayLike | QuerySet) -> RankedLists:
        """Pair these scores with ``labels`` (an array of shape (n_pairs,) or a labelled QuerySet).

        Raises
        ------
        ValueError
            When ``labels`` is a QuerySet whose lists (offsets) differ from
            the ones these predictions were made for, or an array of another
            length.
        """
        if isinstance(labels, QuerySet):
            if not np.array_equal(labels.offsets, self.offsets):
                raise ValueError(
                    f"labels is a QuerySet with other lists than these predictions: offsets of "
                    f"{labels.n_queries} queries / {labels.n_pairs} pairs against {self.offsets.size - 1} "
                    f"queries / {self.scores.size} pairs (first difference at query "
                    f"{_first_difference(labels.offsets, self.offsets)})"
                )
            return labels.ranked(self.scores)
        return RankedLists.from_flat(self.scores, labels, self.offsets)


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
    # the mean and the variance ("mean", "var"), and the covariance stacks ("cov_stacks"), once computed
    _cache: dict[str, NDArray[np.float64] | list[tuple[NDArray[np.int64], NDArray[np.float64]]]] = field(
        default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        samples = owned(as_float_array(self.samples, "samples", ndim=2), self.samples)
        object.__setattr__(self, "samples", samples)
        object.__setattr__(self, "offsets", owned(check_offsets(self.offsets, samples.shape[1]), self.offsets))
        check_name(self.ranker, "ranker")
        if isinstance(self.ddof, bool) or not isinstance(self.ddof, (int, np.integer)):
            raise TypeError(f"ddof must be an int; got {type(self.ddof).__name__} {self.ddof!r}")
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
        mean = self._cache.get("mean")
        if not isinstance(mean, np.ndarray):
            mean = self.samples.mean(axis=0)
            mean.setflags(write=False)
            self._cache["mean"] = mean
        return mean

    def var(self) -> NDArray[np.float64]:
        """Predictive variance per pair, shape (n_pairs,)."""
        var = self._cache.get("var")
        if not isinstance(var, np.ndarray):
            var = self.samples.var(axis=0, ddof=self.ddof)
            var.setflags(write=False)
            self._cache["var"] = var
        return var

    def std(self) -> NDArray[np.float64]:
        """Predictive standard deviation per pair, shape (n_pairs,)."""
        return np.sqrt(self.var())

    def covariance_blocks(self) -> list[NDArray[np.float64]]:
        """Per query, the covariance matrix of its candidates' scores.

        Returns
        -------
        list of n_queries ndarrays of shape (n_q, n_q)
            In query order: views into a writable copy of
            :meth:`covariance_stacks`, which vectorised code should use
            instead (no Python object per query).
        """
        blocks: list[NDArray[np.float64]] = [np.empty((0, 0))] * (self.offsets.size - 1)
        for queries, stack in self.covariance_stacks():
            cov = stack.copy()
            for k, q in enumerate(queries.tolist()):
                blocks[q] = cov[k]
        return blocks

    def covariance_stacks(self) -> list[tuple[NDArray[np.int64], NDArray[np.float64]]]:
        """The covariance blocks stacked by list length, as the vectorised consumers use them.

        For every distinct list length ``L`` (ascending), the queries of that
        length and their blocks in one array; nothing is built per query, so
        100,000 queries cost a few array operations. Computed once and kept
        (read-only) with this object.

        Returns
        -------
        list of (queries, blocks)
            ``queries`` : ndarray of shape (n_L,), the indices of the queries
            of length ``L``, ascending; ``blocks`` : ndarray of shape
            (n_L, L, L), ``blocks[k]`` the covariance of query ``queries[k]``'s
            candidates (divided by ``n_samples - ddof``).

        Examples
        --------
        >>> import numpy as np
        >>> ps = PredictiveSamples(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), np.array([0, 2, 3]))
        >>> [(q.tolist(), c.tolist()) for q, c in ps.covariance_stacks()]
        [([1], [[[1.0]]]), ([0], [[[1.0, 0.0], [0.0, 0.0]]])]
        """
        stacks = self._cache.get("cov_stacks")
        if not isinstance(stacks, list):
            mean = self.mean()
            lengths = np.diff(self.offsets)
            denom = self.n_samples - self.ddof
            stacks = []
            for length in np.unique(lengths).tolist():
                queries = np.flatnonzero(lengths == length)
                starts = self.offsets[queries]
                first, n = int(starts[0]), queries.size
                consecutive = int(starts[-1]) - first == length * (n - 1) and bool(np.all(np.diff(starts) == length))
                cov = np.empty((n, length, length))
                # Chunks of queries keep the centred draws in cache (and allocated once).
                chunk = max(1, _COV_CHUNK // (self.n_samples * length))
                buf = np.empty((self.n_samples, min(chunk, n), length))
                for lo in range(0, n, chunk):
                    hi = min(n, lo + chunk)
                    x = buf[:, : hi - lo]
                    if consecutive:  # a view of the draws, no gather
                        span = slice(first + lo * length, first + hi * length)
                        np.subtract(
                            self.samples[:, span].reshape(self.n_samples, hi - lo, length),
                            mean[span].reshape(hi - lo, length), out=x,
                        )
                    else:
                        cols = starts[lo:hi, None] + np.arange(length)[None, :]
                        np.subtract(self.samples[:, cols], mean[cols], out=x)
                    cov[lo:hi] = np.einsum("sqi,sqj->qij", x, x, optimize=True)
                cov /= denom
                cov.setflags(write=False)
                queries.setflags(write=False)
                stacks.append((queries, cov))
            self._cache["cov_stacks"] = stacks
        return list(stacks)

    def to_predictions(self) -> Predictions:
        """The predictive mean as :class:`Predictions`."""
        mean = self.mean()
        probabilistic = bool(((mean >= 0) & (mean <= 1)).all())
        return Predictions(mean, self.offsets, ranker=self.ranker, probabilistic=probabilistic)
