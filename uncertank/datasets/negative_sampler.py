"""The base of every negative sampler: a deduplicated pool, the exclusion rules, the template.

:class:`NegativeSampler` is built as ``factory(pool, seed=...)`` over a pool
of response texts and called as ``sampler.sample(contexts, positives, k)``;
it returns an integer array of shape (n_queries, k) of indices into
``pool``. :meth:`NegativeSampler.sample` applies the rules and fills what is
missing at random; a strategy (:mod:`uncertank.datasets.samplers`) only
implements :meth:`NegativeSampler.retrieve`, its ranked candidates.

The ``k`` negatives of a query are pairwise distinct texts and none equals
the query's positive, where texts are compared after whitespace
normalisation (:func:`~uncertank.datasets.duplicates.normalize_text`). The
pool is deduplicated first, so a frequent short turn ("yes", "thanks") is
one candidate however often it occurs; an index returned is the first
occurrence of its text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from uncertank.datasets.duplicates import normalize_text
from uncertank.validation import check_positive_int, check_seed

__all__ = ["NegativeSampler"]

#: Extra hits retrieved per query beyond ``k``, at most, to make up for excluded ones.
_MAX_MARGIN = 64


def _sorted_unique(a: NDArray[np.int64]) -> NDArray[np.int64]:
    """Sorted distinct values (a plain sort: faster than ``np.unique`` on large key arrays)."""
    a = np.sort(a, kind="stable")
    if a.size == 0:
        return a
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _in_sorted(values: NDArray[np.int64], keys: NDArray[np.int64]) -> NDArray[np.bool_]:
    """``np.isin(values, keys)`` for sorted distinct ``keys``, by binary search."""
    if keys.size == 0:
        return np.zeros(values.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(keys, values), keys.size - 1)
    found: NDArray[np.bool_] = keys[pos] == values
    return found


def _later_duplicates(ids: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Mark, per row, every entry equal to an entry to its left."""
    order = np.argsort(ids, axis=1, kind="stable")
    srt = np.take_along_axis(ids, order, axis=1)
    dup = np.zeros(ids.shape, dtype=bool)
    np.put_along_axis(dup, order[:, 1:], srt[:, 1:] == srt[:, :-1], axis=1)
    return dup


class NegativeSampler:
    """Base class: a deduplicated response pool, the exclusion rules, and the sampling template.

    A strategy subclasses it and implements :meth:`retrieve` only (its
    ranked candidates per query); :meth:`sample` applies the rules below to
    them and fills the rest at random.

    A negative of a query is never (after :func:`normalize_text`) its positive,
    another negative of the same list, or one of its context utterances. When
    the pool's texts carry ``groups`` (the dialogue each comes from) and
    :meth:`sample` receives the queries' ``groups``, a negative is also never a
    text that occurs in the query's own dialogue: those are repeated context
    or plausible later replies (false negatives).

    Parameters
    ----------
    pool : sequence of str
        Candidate responses (duplicates allowed; they are merged).
    seed : int
        Seed of the sampler's random generator.
    groups : sequence of str, optional
        One group (dialogue id) per pool text.

    Attributes
    ----------
    pool : list of str
        The pool as given.
    last_n_random : int
        Negatives of the last :meth:`sample` call drawn uniformly at random
        (all of them for ``random``).
    unique_index : ndarray of shape (n_unique,)
        For each distinct normalised text, the index of its first occurrence
        in ``pool``.
    n_unique : int
        Number of distinct texts.
    name : str
        The registered name of the strategy.
    """

    name = "base"

    def __init__(self, pool: Sequence[str], *, seed: int = 0, groups: Sequence[str] | None = None) -> None:
        if isinstance(pool, (str, bytes)) or not isinstance(pool, Sequence):
            raise TypeError(f"pool must be a sequence of str; got {type(pool).__name__}")
        if groups is not None and (isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence)):
            raise TypeError(f"groups must be a sequence of str, one per pool text; got {type(groups).__name__}")
        seed = check_seed(seed, allow_none=False, generator=False)
        if groups is not None and len(groups) != len(pool):
            raise ValueError(f"groups must hold one group per pool text ({len(pool)}); got {len(groups)}")
        self.pool = list(pool)
        first: dict[str, int] = {}
        uid_of = np.empty(len(self.pool), dtype=np.int64)
        for i, text in enumerate(self.pool):
            if not isinstance(text, str):
                raise TypeError(f"pool must hold str; pool[{i}] is {type(text).__name__}")
            key = normalize_text(text)
            uid_of[i] = first.setdefault(key, i)
        first.pop("", None)
        if not first:
            raise ValueError("pool must hold at least one non-empty text; got none")
        self._key_to_uid = {key: u for u, key in enumerate(first)}
        # raw pool text -> unique id, a fast path before normalising a lookup text
        self._raw_to_uid = {self.pool[i]: self._key_to_uid[k] for k, i in first.items()}
        self.unique_index = np.fromiter(first.values(), dtype=np.int64, count=len(first))
        self.unique_texts = [self.pool[i] for i in self.unique_index]
        self.n_unique = len(first)
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self.last_n_random = 0
        self._group_uids: dict[str, NDArray[np.int64]] = {}
        if groups is not None:
            # pool position -> unique id (-1 for empty texts), then unique ids per group
            first_to_uid = np.full(len(self.pool), -1, dtype=np.int64)
            first_to_uid[self.unique_index] = np.arange(self.n_unique)
            pos_uid = first_to_uid[uid_of]
            empty = np.fromiter((not normalize_text(t) for t in self.pool), dtype=bool, count=len(self.pool))
            pos_uid[empty] = -1
            by_group: dict[str, list[int]] = {}
            for g, u in zip(groups, pos_uid.tolist(), strict=True):
                if u >= 0:
                    by_group.setdefault(str(g), []).append(u)
            self._group_uids = {g: _sorted_unique(np.asarray(v, dtype=np.int64)) for g, v in by_group.items()}

    # -- helpers shared by the strategies -------------------------------------------------

    def _uid(self, text: str) -> int:
        uid = self._raw_to_uid.get(text)
        return self._key_to_uid.get(normalize_text(text), -1) if uid is None else uid

    def positive_ids(self, positives: Sequence[str]) -> NDArray[np.int64]:
        """Unique-pool id of each positive's text, or -1 where it is not in the pool."""
        return np.fromiter((self._uid(p) for p in positives), dtype=np.int64, count=len(positives))

    def check_request(
        self,
        contexts: Sequence[Sequence[str]],
        positives: Sequence[str],
        k: int,
        groups: Sequence[str] | None,
    ) -> int:
        """Validate a :meth:`sample` request and return ``k`` as an int.

        Raises
        ------
        ValueError
            When lengths disagree or the pool has fewer than ``k + 1`` distinct texts.
        """
        k = check_positive_int(k, "k")
        if len(contexts) != len(positives):
            raise ValueError(
                f"contexts and positives must have the same length; got {len(contexts)} and {len(positives)}"
            )
        if groups is not None and len(groups) != len(positives):
            raise ValueError(f"groups must hold one group per query ({len(positives)}); got {len(groups)}")
        if k > self.n_unique - 1:
            raise ValueError(
                f"k={k} negatives per query need a pool of at least {k + 1} distinct texts "
                f"(one may be the positive); this pool holds {self.n_unique} "
                f"({len(self.pool)} texts before removing duplicates)"
            )
        return k

    def forbidden(
        self,
        contexts: Sequence[Sequence[str]],
        positives: Sequence[str],
        groups: Sequence[str] | None,
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """What each query may not use: its positive, its context utterances, its own dialogue.

        Returns
        -------
        keys : ndarray of shape (n_forbidden,)
            Sorted distinct keys ``row * n_unique + uid`` of the forbidden
            (query, distinct text) pairs.
        counts : ndarray of shape (n_queries,)
            Number of forbidden distinct texts per query.
        """
        rows: list[NDArray[np.int64]] = []
        uids: list[NDArray[np.int64]] = []
        n = len(positives)
        pos = self.positive_ids(positives)
        rows.append(np.arange(n, dtype=np.int64))
        uids.append(pos)
        ctx_lists = [[c] if isinstance(c, str) else c for c in contexts]
        lengths = np.fromiter((len(c) for c in ctx_lists), dtype=np.int64, count=n)
        rows.append(np.repeat(np.arange(n, dtype=np.int64), lengths))
        uids.append(
            np.fromiter(
                (self._uid(u) for c in ctx_lists for u in c), dtype=np.int64,
                count=int(lengths.sum()),
            )
        )
        if groups is not None and self._group_uids:
            empty = np.empty(0, dtype=np.int64)
            per_row = [self._group_uids.get(str(g), empty) for g in groups]
            glen = np.fromiter((a.size for a in per_row), dtype=np.int64, count=n)
            rows.append(np.repeat(np.arange(n, dtype=np.int64), glen))
            uids.append(np.concatenate(per_row) if per_row else empty)
        r = np.concatenate(rows)
        u = np.concatenate(uids)
        keep = u >= 0
        keys = _sorted_unique(r[keep] * self.n_unique + u[keep])
        counts = np.bincount(keys // self.n_unique, minlength=n).astype(np.int64)
        return keys, counts

    def _invalid(self, ids: NDArray[np.int64], keys: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Entries that are -1, forbidden for their row, or repeat an entry to their left."""
        rows = np.arange(ids.shape[0], dtype=np.int64)[:, None]
        bad = ids < 0
        bad |= _in_sorted(rows * self.n_unique + ids, keys)
        bad |= _later_duplicates(ids)
        return bad

    def fill(self, ids: NDArray[np.int64], keys: NDArray[np.int64]) -> NDArray[np.int64]:
        """Replace every invalid entry of ``ids`` by a uniform draw from the distinct texts.

        Invalid entries (-1, forbidden for the row by ``keys``, or repeating an
        entry to their left) are redrawn, vectorised, until none is left
        (rows with barely enough allowed texts are completed by an explicit
        choice); valid entries are kept.

        Parameters
        ----------
        ids : ndarray of shape (n_queries, k)
            Distinct-text ids, -1 where still to be drawn.
        keys : ndarray
            From :meth:`forbidden`.

        Returns
        -------
        ndarray of shape (n_queries, k)
        """
        ids = ids.copy()
        ids[self._invalid(ids, keys)] = -1
        for _ in range(50):
            missing = ids < 0
            n_missing = int(missing.sum())
            if n_missing == 0:
                return ids
            ids[missing] = self._rng.integers(0, self.n_unique, size=n_missing)
            ids[self._invalid(ids, keys)] = -1
        # rows that almost exhaust their allowed texts: choose among those explicitly
        for r in np.flatnonzero((ids < 0).any(axis=1)):
            row_keys = keys[(keys >= r * self.n_unique) & (keys < (r + 1) * self.n_unique)] - r * self.n_unique
            taken = ids[r][ids[r] >= 0]
            allowed = np.setdiff1d(np.arange(self.n_unique), np.concatenate([row_keys, taken]))
            holes = np.flatnonzero(ids[r] < 0)
            ids[r, holes] = self._rng.choice(allowed, size=holes.size, replace=False)
        return ids

    def check_room(self, counts: NDArray[np.int64], k: int) -> None:
        """Raise unless every query has at least ``k`` allowed distinct texts (``counts`` from :meth:`forbidden`)."""
        room = self.n_unique - counts
        if (room < k).any():
            q = int(np.argmin(room))
            raise ValueError(
                f"query {q} can use only {int(room[q])} of the pool's {self.n_unique} distinct texts "
                f"(the rest are its positive, its context or its own dialogue); it needs k={k}"
            )

    def compact(self, ids: NDArray[np.int64], keys: NDArray[np.int64], k: int) -> NDArray[np.int64]:
        """Keep the first ``k`` allowed entries of each row of ranked ``ids``, in order (-1 pads)."""
        ids = np.where(self._invalid(ids, keys), -1, ids)
        order = np.argsort(ids < 0, axis=1, kind="stable")
        return np.take_along_axis(ids, order, axis=1)[:, :k]

    def to_pool_index(self, uids: NDArray[np.int64]) -> NDArray[np.int64]:
        """Map distinct-text ids to indices into ``pool`` (first occurrences)."""
        return self.unique_index[uids]

    def query_texts(self, contexts: Sequence[Sequence[str]]) -> list[str]:
        """Each context's utterances joined by spaces (the query of BM25 and embeddings)."""
        return [c if isinstance(c, str) else " ".join(c) for c in contexts]

    def retrieve(self, contexts: Sequence[Sequence[str]], depth: int) -> NDArray[np.int64] | None:
        """The strategy's candidates: per query, distinct-text ids best first.

        This is all a strategy implements; :meth:`sample` applies the rules
        to what it returns (dropping the forbidden and repeated ids, keeping
        the first ``k`` allowed ones in order) and fills what is missing with
        uniform draws.

        Parameters
        ----------
        contexts : sequence of n_queries sequences of str
        depth : int
            How many candidates per query to return, at most (enough to
            leave ``k`` after the forbidden ones are dropped).

        Returns
        -------
        ndarray of shape (n_queries, d) with d <= depth, or None
            Ids into the distinct pool texts (``unique_texts``), -1 where a
            query has fewer candidates; None to draw every negative
            uniformly at random.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement retrieve(contexts, depth)")

    def sample(
        self,
        contexts: Sequence[Sequence[str]],
        positives: Sequence[str],
        k: int,
        *,
        groups: Sequence[str] | None = None,
    ) -> NDArray[np.int64]:
        """Draw ``k`` negatives per query: the first ``k`` allowed of :meth:`retrieve`, the rest at random.

        Parameters
        ----------
        contexts : sequence of n_queries sequences of str
            Each query's context utterances, oldest first.
        positives : sequence of n_queries str
            Each query's relevant response.
        k : int
            Negatives per query; at most the number of distinct pool texts
            minus one.
        groups : sequence of n_queries str, optional
            The dialogue of each query; with pool ``groups``, texts of the
            query's own dialogue are excluded.

        Returns
        -------
        ndarray of shape (n_queries, k)
            Indices into ``pool``. :attr:`last_n_random` counts the negatives
            drawn at random because :meth:`retrieve` offered too few allowed ones.
        """
        k = self.check_request(contexts, positives, k, groups)
        keys, counts = self.forbidden(contexts, positives, groups)
        self.check_room(counts, k)
        depth = min(k + min(int(counts.max()), _MAX_MARGIN), self.n_unique)
        ranked = self.retrieve(contexts, depth)
        n = len(positives)
        if ranked is None:
            ids = np.full((n, k), -1, dtype=np.int64)
            self.last_n_random = n * k
        else:
            ranked = np.asarray(ranked, dtype=np.int64)
            if ranked.ndim != 2 or ranked.shape[0] != n:
                raise ValueError(
                    f"{type(self).__name__}.retrieve must return shape ({n}, depth); got {ranked.shape}"
                )
            if ranked.shape[1] < k:
                ranked = np.pad(ranked, ((0, 0), (0, k - ranked.shape[1])), constant_values=-1)
            ids = self.compact(np.where((ranked >= 0) & (ranked < self.n_unique), ranked, -1), keys, k)
            self.last_n_random = int((ids < 0).sum())
        return self.to_pool_index(self.fill(ids, keys))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_unique={self.n_unique}, seed={self.seed})"
