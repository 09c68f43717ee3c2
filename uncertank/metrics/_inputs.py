"""The one input layer of every metric: any accepted input to validated ranked lists.

:func:`as_lists` accepts

- a :class:`~uncertank.RankedLists` (``labels`` None);
- a :class:`~uncertank.Predictions`, or any object with flat ``scores`` and
  ``offsets`` (not an array), with ``labels`` an array of shape (n_pairs,)
  or a labelled :class:`~uncertank.QuerySet`;
- dense ``scores`` and ``labels`` of shape (n_queries, n_candidates);
- with ``queries=False`` (the calibration metrics), also flat arrays of
  shape (n_pairs,), taken as one list without query structure;

checks them once (finite scores, integer labels ``>= 0``, probabilities in
[0, 1] where asked, matching shapes, valid offsets) and returns a
:class:`Lists`. Every error names the argument, what was expected and what
arrived. :func:`as_pairs` and :func:`as_structured` are the two views the
calibration metrics and their accumulators take of the same input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, TypeAlias, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import QuerySet, RankedLists
from uncertank.validation import as_float_array, as_label_array, check_offsets, check_probabilities

__all__ = ["LabelArray", "LabelsInput", "Lists", "ScoredPairs", "ScoresInput", "as_lists", "as_pairs", "as_structured"]


class ScoredPairs(Protocol):
    """Any object with flat ``scores`` and CSR ``offsets`` (a :class:`~uncertank.Predictions` is one)."""

    @property
    def scores(self) -> ArrayLike: ...

    @property
    def offsets(self) -> ArrayLike: ...


class Labelled(Protocol):
    """Any object with flat ``labels`` (a :class:`~uncertank.QuerySet` is one)."""

    @property
    def labels(self) -> ArrayLike | None: ...


#: What a metric's ``scores`` may be: ranked lists, a Predictions-like object or an array-like.
ScoresInput: TypeAlias = RankedLists | ScoredPairs | ArrayLike
#: What a metric's ``labels`` may be: an array-like, a labelled QuerySet (or any object with labels), or None.
LabelsInput: TypeAlias = ArrayLike | QuerySet | Labelled | None

#: Validated labels: bools or integers ``>= 0`` of any width (bool and unsigned are kept as they arrive).
LabelArray: TypeAlias = NDArray[np.bool_ | np.integer]

#: Pad ragged lists to a dense block when it costs at most this many cells per pair.
_PAD_FACTOR = 4


@dataclass(frozen=True, eq=False)
class Lists:
    """Validated ranked lists, as a dense (or padded) block or as flat CSR arrays.

    In block form ``s2`` and ``y2`` have shape (n_queries, width); padding
    cells (where ``valid`` is False) hold score -inf and label 0, so they rank
    after every real candidate and are never relevant. In flat form ``s2`` is
    None and ``scores``, ``labels``, ``offsets`` hold the CSR arrays.
    ``structured`` is False for flat pairs without query structure (one
    list holding every pair).
    """

    lengths: NDArray[np.int64]
    s2: NDArray[np.float64] | None = None
    y2: LabelArray | None = None
    valid: NDArray[np.bool_] | None = None
    scores: NDArray[np.float64] | None = None
    labels: LabelArray | None = None
    offsets: NDArray[np.int64] | None = None
    structured: bool = True

    @property
    def n_queries(self) -> int:
        return int(self.lengths.size)

    @property
    def n_pairs(self) -> int:
        return int(self.lengths.sum())

    def flat(self) -> tuple[NDArray[np.float64], LabelArray]:
        """Scores and labels of shape (n_pairs,), in input order."""
        if self.s2 is None:
            assert self.scores is not None and self.labels is not None  # flat form by construction
            return self.scores, self.labels
        assert self.y2 is not None  # block form by construction
        if self.valid is None:
            return self.s2.reshape(-1), self.y2.reshape(-1)
        return self.s2[self.valid], self.y2[self.valid]

    def relevance(self) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Scores and relevance (``label > 0``) of shape (n_pairs,), in input order."""
        s, y = self.flat()
        return s, (y.view(np.bool_) if y.dtype == bool else y > 0)

    def query_index(self) -> NDArray[np.int64]:
        """Query of every pair, shape (n_pairs,), in input order."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), self.lengths)

    def starts(self) -> NDArray[np.int64]:
        """Flat position of every query's first pair, shape (n_queries,)."""
        starts = np.zeros(self.n_queries, dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=starts[1:])
        return starts

    def as_block(self) -> Lists:
        """The block form when it is dense or cheap to pad, else this flat form."""
        if self.s2 is not None:
            return self
        assert self.scores is not None and self.labels is not None  # flat form by construction
        lengths = self.lengths
        n_q = lengths.size
        width = int(lengths.max())
        if bool((lengths == width).all()):
            return Lists(lengths, self.scores.reshape(n_q, width), self.labels.reshape(n_q, width),
                          structured=self.structured)
        if n_q * width <= _PAD_FACTOR * self.scores.size:
            valid = np.arange(width) < lengths[:, None]
            s2 = np.full((n_q, width), -np.inf)
            s2[valid] = self.scores
            y2 = np.zeros((n_q, width), dtype=self.labels.dtype)
            y2[valid] = self.labels
            return Lists(lengths, s2, y2, valid, structured=self.structured)
        return self

    def as_flat(self) -> Lists:
        """The flat (CSR) form."""
        if self.s2 is None:
            return self
        s, y = self.flat()
        offsets = np.zeros(self.n_queries + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        return Lists(self.lengths, scores=np.ascontiguousarray(s), labels=np.ascontiguousarray(y),
                      offsets=offsets, structured=self.structured)

    def at_least(self, rel: int) -> Lists:
        """The same lists with every label below ``rel`` set to 0 (relevant means ``label >= rel``).

        ``rel`` is ir_measures' ``rel`` (trec_eval's ``-l``): the lowest grade
        that counts as relevant. Labels ``>= rel`` keep their grade (nDCG's gain).
        """
        if rel <= 1:
            return self
        if self.s2 is not None:
            assert self.y2 is not None  # block form by construction
            y2 = np.where(self.y2 >= rel, self.y2, 0).astype(np.int64, copy=False)
            return Lists(self.lengths, self.s2, y2, self.valid, structured=self.structured)
        assert self.labels is not None  # flat form by construction
        y = np.where(self.labels >= rel, self.labels, 0).astype(np.int64, copy=False)
        return Lists(self.lengths, scores=self.scores, labels=y, offsets=self.offsets, structured=self.structured)

    def truncate(self, n: int) -> Lists:
        """Keep the first ``n`` candidates (in input order) of every list."""
        lengths = np.minimum(self.lengths, n)
        if self.s2 is not None:
            assert self.y2 is not None  # block form by construction
            valid = None if self.valid is None else self.valid[:, :n]
            return Lists(lengths, self.s2[:, :n], self.y2[:, :n], valid, structured=self.structured)
        flat = self.as_flat()
        assert flat.scores is not None and flat.labels is not None and flat.offsets is not None
        pos = np.arange(self.n_pairs) - np.repeat(flat.offsets[:-1], self.lengths)
        keep = pos < n
        offsets = np.zeros(lengths.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return Lists(lengths, scores=flat.scores[keep], labels=flat.labels[keep], offsets=offsets,
                      structured=self.structured)


# --------------------------------------------------------------------------- values


def _asarray(x: object, name: str) -> NDArray[np.generic]:
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested lists, unconvertible objects
        raise TypeError(f"{name} must be an array of numbers; got {type(x).__name__} ({exc})") from None


def _is_float64(arr: NDArray[np.generic]) -> TypeGuard[NDArray[np.float64]]:
    return arr.dtype == np.float64


def _is_integral(arr: NDArray[np.generic]) -> TypeGuard[LabelArray]:
    """Whether ``arr`` holds bools or integers (signed or unsigned), of any width."""
    return arr.dtype == bool or np.issubdtype(arr.dtype, np.integer)


def _check_scores(
    arr: NDArray[np.generic], name: str, ndim: tuple[int, ...], probabilities: bool
) -> NDArray[np.float64]:
    """Finite float64 scores (in [0, 1] with ``probabilities``) of one of the ranks ``ndim``."""
    if _is_float64(arr) and arr.ndim in ndim and arr.size:
        # min/max propagate NaN and expose inf: two fast passes cover every check.
        lo, hi = float(arr.min()), float(arr.max())
        if math.isfinite(lo) and math.isfinite(hi) and (not probabilities or (lo >= 0.0 and hi <= 1.0)):
            return arr
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"{name} must be numeric; got dtype {arr.dtype}")
    out = as_float_array(arr, name, ndim=ndim)
    if probabilities:
        check_probabilities(out, name)
    return out


def _check_labels(arr: NDArray[np.generic], name: str, ndim: tuple[int, ...]) -> LabelArray:
    """Integer labels >= 0 (bool and unsigned kept as they are)."""
    if arr.ndim in ndim and arr.size and _is_integral(arr):
        if arr.dtype == bool or np.issubdtype(arr.dtype, np.unsignedinteger):
            return arr
        if arr.min() >= 0:  # signed integers
            return arr
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"{name} must be integers >= 0; got dtype {arr.dtype}")
    return as_label_array(arr, name, ndim=ndim)


def _is_predictions_like(x: object) -> TypeGuard[ScoredPairs]:
    return (
        not isinstance(x, (np.ndarray, list, tuple))
        and hasattr(x, "scores")
        and hasattr(x, "offsets")
    )


# --------------------------------------------------------------------------- converter


def as_lists(
    scores: ScoresInput,
    labels: LabelsInput,
    *,
    name: str = "scores",
    queries: bool = True,
    probabilities: bool = False,
) -> Lists:
    """Validate any accepted input (see the module notes) into :class:`Lists`.

    Parameters
    ----------
    scores : RankedLists, Predictions-like, or array-like
        The scores (probabilities for the calibration metrics).
    labels : array-like or QuerySet, optional
        None with a RankedLists; required otherwise.
    name : str
        How ``scores`` is called in error messages (``"probs"``).
    queries : bool
        Require the query structure (ranking metrics, per-query values):
        1-D arrays are then an error. False accepts them as one list.
    probabilities : bool
        Require scores in [0, 1].

    Returns
    -------
    Lists
        In block form for dense arrays, in flat form otherwise (see
        :meth:`Lists.as_block`).
    """
    if isinstance(scores, RankedLists):
        if labels is not None:
            raise ValueError(
                f"labels must be None when {name} is a RankedLists (it carries its labels); "
                f"got {type(labels).__name__}"
            )
        if probabilities:
            s = scores.scores
            lo, hi = s.min(), s.max()
            if not (lo >= 0.0 and hi <= 1.0):
                check_probabilities(s, f"{name} (the RankedLists scores)")
        return Lists(scores.lengths, scores=scores.scores, labels=scores.labels, offsets=scores.offsets)
    if _is_predictions_like(scores):
        return _from_predictions(scores, labels, name, probabilities)
    if labels is None:
        shape = "(n_queries, n_candidates)" if queries else "(n_pairs,) or (n_queries, n_candidates)"
        raise ValueError(
            f"labels are required when {name} is an array; pass labels of shape {shape}, "
            f"or a RankedLists as {name}"
        )
    s_arr, y_arr = _asarray(scores, name), _asarray(labels, "labels")
    if queries:
        if s_arr.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D of shape (n_queries, n_candidates), or a RankedLists; "
                f"got an array of shape {s_arr.shape}"
            )
        if s_arr.shape[0] == 0:
            raise ValueError(f"{name} must hold at least one query; got shape {s_arr.shape}")
        if s_arr.shape[1] == 0:
            raise ValueError(f"every query needs at least one candidate; {name} has shape {s_arr.shape}")
    elif s_arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D; got an array of shape {s_arr.shape}")
    elif s_arr.size == 0:
        raise ValueError(f"{name} must not be empty; got an array of shape {s_arr.shape}")
    if y_arr.shape != s_arr.shape:
        raise ValueError(f"{name} and labels must have the same shape; got {s_arr.shape} and {y_arr.shape}")
    ndim = (2,) if queries else (1, 2)
    s = _check_scores(s_arr, name, ndim, probabilities)
    y = _check_labels(y_arr, "labels", ndim)
    if s.ndim == 1:
        return Lists(np.array([s.size], dtype=np.int64), s[None, :], y[None, :], structured=False)
    n_q, width = s.shape
    return Lists(np.full(n_q, width, dtype=np.int64), s, y)


def _from_predictions(pred: ScoredPairs, labels: LabelsInput, name: str, probabilities: bool) -> Lists:
    """Flat scores and offsets of a Predictions-like object, with labels (array or QuerySet)."""
    if labels is None:
        raise ValueError(
            f"labels are required when {name} is a {type(pred).__name__}; pass labels of shape "
            "(n_pairs,) or the labelled QuerySet it scored"
        )
    if not isinstance(labels, (np.ndarray, list, tuple)) and hasattr(labels, "labels"):
        if labels.labels is None:
            raise ValueError(f"labels is an unlabelled {type(labels).__name__}; it holds no labels")
        labels = labels.labels
    s = _check_scores(_asarray(pred.scores, f"{name}.scores"), f"{name}.scores", (1,), probabilities)
    y = _check_labels(_asarray(labels, "labels"), "labels", (1,))
    if y.shape != s.shape:
        raise ValueError(f"{name}.scores and labels must have the same shape; got {s.shape} and {y.shape}")
    offsets = check_offsets(pred.offsets, s.size, f"{name}.offsets")
    return Lists(np.diff(offsets), scores=s, labels=y, offsets=offsets)


def as_pairs(
    probs: ScoresInput, labels: LabelsInput, name: str = "probs"
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Flat probabilities and relevance, each of shape (n_pairs,), from any input of a calibration metric."""
    return as_lists(probs, labels, name=name, queries=False, probabilities=True).relevance()


def as_structured(
    probs: ScoresInput, labels: LabelsInput, name: str = "probs"
) -> tuple[Lists, NDArray[np.float64], NDArray[np.bool_]]:
    """The query structure plus flat probabilities and relevance, each of shape (n_pairs,)."""
    lists = as_lists(probs, labels, name=name, queries=True, probabilities=True)
    p, y = lists.relevance()
    return lists, p, y
