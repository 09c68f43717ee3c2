"""Hold calibration queries out from test queries: a seeded split at the query level.

A conformal guarantee is over exchangeable *queries*: the unit that is
drawn, split and counted is a query with its whole candidate list, never a
pair. :func:`split_queries` draws which queries calibrate and which are
tested; :meth:`QuerySplit.take` cuts any container of the data model (or a
per-pair or per-query array) along it, so that predictions, labels and
query sets stay aligned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from uncertank._types import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.validation import as_label_array, check_offsets, check_positive_int, check_seed, check_unit_interval

__all__ = ["QuerySplit", "query_positions", "split_queries"]

T = TypeVar("T")
_G = TypeVar("_G", bound=np.generic)


def query_positions(
    offsets: NDArray[np.int64], queries: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Flat positions of the pairs of ``queries`` (in that order) and the offsets of the lists they form.

    Parameters
    ----------
    offsets : ndarray of shape (n_queries + 1,)
        CSR offsets.
    queries : ndarray of int
        Query indices.

    Returns
    -------
    positions : ndarray of shape (n_selected_pairs,)
    new_offsets : ndarray of shape (len(queries) + 1,)

    Examples
    --------
    >>> import numpy as np
    >>> pos, off = query_positions(np.array([0, 2, 3, 6]), np.array([2, 0]))
    >>> pos.tolist(), off.tolist()
    ([3, 4, 5, 0, 1], [0, 3, 5])
    """
    offsets = np.asarray(offsets)
    offsets = check_offsets(offsets, int(offsets[-1]) if offsets.ndim == 1 and offsets.size
                            and offsets.dtype.kind in "iu" else -1)
    queries = as_label_array(queries, "queries")
    if queries.size and int(queries.max()) >= offsets.size - 1:
        raise ValueError(f"queries must be query numbers below {offsets.size - 1}; got {int(queries.max())}")
    lengths = np.diff(offsets)[queries]
    new_offsets = np.zeros(queries.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    starts = offsets[:-1][queries]
    pos = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return pos.astype(np.int64, copy=False), new_offsets


@dataclass(frozen=True, eq=False)
class QuerySplit:
    """Which queries calibrate and which are tested.

    Attributes
    ----------
    calibration : ndarray of int
        Indices of the calibration queries, ascending.
    test : ndarray of int
        Indices of the test queries, ascending.
    n_queries : int
        Queries split.
    """

    calibration: NDArray[np.int64]
    test: NDArray[np.int64]
    n_queries: int

    @overload
    def take(self, obj: RankedLists, part: str = "calibration") -> RankedLists: ...

    @overload
    def take(self, obj: QuerySet, part: str = "calibration") -> QuerySet: ...

    @overload
    def take(self, obj: Predictions, part: str = "calibration") -> Predictions: ...

    @overload
    def take(self, obj: PredictiveSamples, part: str = "calibration") -> PredictiveSamples: ...

    @overload
    def take(self, obj: NDArray[_G], part: str = "calibration") -> NDArray[_G]: ...

    def take(self, obj: object, part: str = "calibration") -> object:
        """The ``part`` (``"calibration"`` or ``"test"``) of ``obj``.

        ``obj`` is a :class:`~uncertank.RankedLists`,
        :class:`~uncertank.QuerySet`, :class:`~uncertank.Predictions`,
        :class:`~uncertank.PredictiveSamples`, or an array with one row per
        query (shape (n_queries, ...)), over the split's ``n_queries``.
        """
        if part not in ("calibration", "test"):
            raise ValueError(f"part must be 'calibration' or 'test'; got {part!r}")
        idx = self.calibration if part == "calibration" else self.test
        out: object
        if isinstance(obj, (RankedLists, QuerySet)):
            self._check(obj.n_queries, type(obj).__name__)
            out = obj.subset(idx)
        elif isinstance(obj, (Predictions, PredictiveSamples)):
            self._check(obj.offsets.size - 1, type(obj).__name__)
            pos, offsets = query_positions(obj.offsets, idx)
            if isinstance(obj, Predictions):
                out = Predictions(obj.scores[pos], offsets, ranker=obj.ranker, probabilistic=obj.probabilistic)
            else:
                out = PredictiveSamples(obj.samples[:, pos], offsets, ranker=obj.ranker, ddof=obj.ddof)
        elif isinstance(obj, np.ndarray):
            self._check(obj.shape[0] if obj.ndim else 0, "array (rows)")
            out = obj[idx]
        else:
            raise TypeError(
                "obj must be RankedLists, QuerySet, Predictions, PredictiveSamples or an ndarray with one row "
                f"per query; got {type(obj).__name__}"
            )
        return out

    def _check(self, n: int, what: str) -> None:
        if n != self.n_queries:
            raise ValueError(f"the split is over {self.n_queries} queries; the {what} given holds {n}")


def split_queries(
    queries: int | RankedLists | QuerySet | Predictions | PredictiveSamples,
    *,
    calibration: float | int = 0.5,
    seed: int | np.random.Generator | None = 0,
) -> QuerySplit:
    """Draw calibration queries and test queries, seeded.

    Parameters
    ----------
    queries : int or a container of the data model
        The number of queries, or anything with queries to split.
    calibration : float or int
        The share of queries that calibrate (a float in (0, 1)) or their
        number (an int in [1, n_queries - 1]). A fraction rounds to the
        nearest number, at least 1 and at most n_queries - 1.
    seed : int or Generator
        Seeds the draw.

    Returns
    -------
    QuerySplit

    Examples
    --------
    >>> s = split_queries(10, calibration=0.3, seed=1)
    >>> s.calibration.size, s.test.size, sorted([*s.calibration, *s.test]) == list(range(10))
    (3, 7, True)
    """
    if isinstance(queries, (RankedLists, QuerySet)):
        n = queries.n_queries
    elif isinstance(queries, (Predictions, PredictiveSamples)):
        n = int(check_offsets(queries.offsets, int(queries.offsets[-1])).size - 1)
    else:
        n = check_positive_int(queries, "queries", minimum=2)
    if n < 2:
        raise ValueError(f"queries must hold at least 2 queries to split; got {n}")
    if isinstance(calibration, bool) or not isinstance(calibration, (int, float, np.integer, np.floating)):
        raise TypeError(f"calibration must be a fraction or a number of queries; got {type(calibration).__name__}")
    if isinstance(calibration, (float, np.floating)):
        check_unit_interval(calibration, "calibration as a fraction")
        n_cal = min(n - 1, max(1, round(float(calibration) * n)))
    else:
        n_cal = int(calibration)
        if not 1 <= n_cal <= n - 1:
            raise ValueError(f"calibration as a number of queries must lie in [1, {n - 1}]; got {n_cal}")
    perm = np.random.default_rng(check_seed(seed)).permutation(n)
    return QuerySplit(np.sort(perm[:n_cal]).astype(np.int64), np.sort(perm[n_cal:]).astype(np.int64), n)
