"""What a ranker outputs: one score per pair, or joint draws from its predictive distribution.

- :class:`Predictions`: a deterministic ranker's scores, one per pair;
- :class:`PredictiveSamples`: a stochastic ranker's joint draws of shape
  (n_samples, n_pairs), with their mean, variance and per-query covariance
  blocks.

Both are laid out by the ``offsets`` of the :class:`~uncertank.QuerySet`
scored, own their data (:func:`~uncertank._owned.owned`), and pair with
labels as :class:`~uncertank.RankedLists`. Import them from
:mod:`uncertank` (or :mod:`uncertank._types`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._lists import QuerySet, RankedLists
from uncertank._owned import owned
from uncertank._validation import as_float_array, check_name, check_offsets, check_probabilities

__all__ = ["PredictiveSamples", "Predictions"]

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
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

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
        if "mean" not in self._cache:
            mean = self.samples.mean(axis=0)
            mean.setflags(write=False)
            self._cache["mean"] = mean
        return self._cache["mean"]  # type: ignore[no-any-return]

    def var(self) -> NDArray[np.float64]:
        """Predictive variance per pair, shape (n_pairs,)."""
        if "var" not in self._cache:
            var = self.samples.var(axis=0, ddof=self.ddof)
            var.setflags(write=False)
            self._cache["var"] = var
        return self._cache["var"]  # type: ignore[no-any-return]

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
        if "cov_stacks" not in self._cache:
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
        return list(self._cache["cov_stacks"])

    def to_predictions(self) -> Predictions:
        """The predictive mean as :class:`Predictions`."""
        mean = self.mean()
        probabilistic = bool(((mean >= 0) & (mean <= 1)).all())
        return Predictions(mean, self.offsets, ranker=self.ranker, probabilistic=probabilistic)
