"""Argument checks for plugin authors: the same checks uncertank runs on its own inputs.

Every check raises ``ValueError`` (or ``TypeError``) naming the argument, what
was expected and what arrived, so a plugin's errors read like the library's.

:func:`check_prediction` checks what a ranker returned, right after
``predict`` or ``predict_samples``: ``uncertank run`` calls it before it
caches anything, and :func:`uncertank.testing.check_ranker` builds on it.

Examples
--------
>>> from uncertank.validation import check_choice, check_positive_int
>>> check_positive_int(10, "n_passes")
10
>>> check_positive_int(0, "n_passes")
Traceback (most recent call last):
ValueError: n_passes must be an integer >= 1; got 0
>>> check_choice("exact", "cov_mode", ("exact", "momentum"))
'exact'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from uncertank._types import Predictions, PredictiveSamples, QuerySet
from uncertank._validation import (
    as_float_array,
    as_label_array,
    check_choice,
    check_offsets,
    check_positive_int,
    check_probabilities,
    check_same_length,
    check_seed,
)

__all__ = [
    "InvalidPredictionError",
    "as_float_array",
    "as_label_array",
    "check_choice",
    "check_offsets",
    "check_positive_int",
    "check_prediction",
    "check_probabilities",
    "check_same_length",
    "check_seed",
]


class InvalidPredictionError(ValueError):
    """A ranker returned something that breaks the :class:`uncertank.Ranker` contract.

    Raised by :func:`check_prediction`; the message names the ranker, the
    condition (where there is one) and what was wrong. A subclass of
    :class:`ValueError`.

    Attributes
    ----------
    ranker : str
        The ranker's name as the caller gave it.
    condition : str or None
        The condition (dataset, split) being scored, or None.
    problem : str
        What was wrong, without the ranker's name.
    """

    def __init__(self, ranker: str, condition: str | None, problem: str) -> None:
        where = f"ranker {ranker!r}" + ("" if condition is None else f" on {condition}")
        super().__init__(f"{where}: {problem}")
        self.ranker = ranker
        self.condition = condition
        self.problem = problem


def _describe(obj: Any) -> str:
    shape = getattr(obj, "shape", None)
    return f"{type(obj).__name__}" + ("" if shape is None else f" of shape {tuple(shape)}")


def _first_difference(got: np.ndarray, want: np.ndarray) -> str:
    """Where offsets ``got`` first differ from the QuerySet's ``want``."""
    if got.size != want.size:
        return f"offsets of {got.size - 1} queries, the QuerySet has {want.size - 1}"
    at = int(np.flatnonzero(got != want)[0])
    return f"offsets[{at}] = {int(got[at])}, the QuerySet's is {int(want[at])}"


def _outside(values: np.ndarray) -> str:
    bad = (values < 0.0) | (values > 1.0)
    return f"got {int(bad.sum())} values outside, e.g. {float(values[bad].ravel()[0])!r}"


def check_prediction(
    pred: Any,
    queries: QuerySet,
    *,
    ranker: str,
    condition: str | None = None,
    samples: bool = False,
    n_samples: int | None = None,
    probabilistic: bool | None = None,
) -> Predictions | PredictiveSamples:
    """Check what a ranker returned for ``queries``, right after ``predict`` or ``predict_samples``.

    With ``samples=False`` (the output of ``predict``): a
    :class:`~uncertank.Predictions` with one finite score per pair, shape
    (n_pairs,), the offsets of ``queries``, and, when it is probabilistic,
    every score in [0, 1]. With ``samples=True`` (the output of
    ``predict_samples``): a :class:`~uncertank.PredictiveSamples` of shape
    (n_samples, n_pairs) with at least one row (``n_samples`` rows when
    given), finite, with the offsets of ``queries``, and in [0, 1] when
    ``probabilistic`` is True.

    Parameters
    ----------
    pred : Predictions or PredictiveSamples
        What the ranker returned.
    queries : QuerySet
        The queries it scored.
    ranker : str
        The ranker's name, for the message.
    condition : str, optional
        Where it was scored (``"ubuntu-sample/test"``), for the message.
    samples : bool
        Whether ``pred`` comes from ``predict_samples``.
    n_samples : int, optional
        The number of draws asked for (``samples=True`` only).
    probabilistic : bool, optional
        Whether the values must lie in [0, 1]; by default the flag of the
        :class:`~uncertank.Predictions`, and no range check for samples
        (which carry no flag).

    Returns
    -------
    Predictions or PredictiveSamples
        ``pred`` itself.

    Raises
    ------
    InvalidPredictionError
        A :class:`ValueError` naming the ranker, the condition and what was
        wrong: the wrong type (a bare array), the wrong number of scores,
        other offsets, NaN or infinite values, values outside [0, 1] for a
        probabilistic ranker, samples of the wrong shape or count.
    TypeError
        When ``queries`` is not a QuerySet, or ``ranker`` not a str.

    Examples
    --------
    >>> import numpy as np
    >>> from uncertank import Predictions, QuerySet
    >>> qs = QuerySet.from_lists(["q"], [["a", "b", "c"]])
    >>> check_prediction(Predictions([0.2, 0.9, 0.1], qs.offsets), qs, ranker="mine").scores.tolist()
    [0.2, 0.9, 0.1]
    >>> try:
    ...     check_prediction(np.array([0.2, 0.9, 0.1]), qs, ranker="mine", condition="toy/test")
    ... except InvalidPredictionError as exc:
    ...     print(exc)
    ranker 'mine' on toy/test: predict must return uncertank.Predictions; got ndarray of shape (3,)
    """
    if not isinstance(queries, QuerySet):
        raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
    if not isinstance(ranker, str):
        raise TypeError(f"ranker must be a str (the ranker's name); got {type(ranker).__name__}")
    if condition is not None and not isinstance(condition, str):
        raise TypeError(f"condition must be a str or None; got {type(condition).__name__}")
    if n_samples is not None:
        check_positive_int(n_samples, "n_samples")

    def fail(problem: str) -> InvalidPredictionError:
        return InvalidPredictionError(ranker, condition, problem)

    n = queries.n_pairs
    if not samples:
        if not isinstance(pred, Predictions):
            raise fail(f"predict must return uncertank.Predictions; got {_describe(pred)}")
        scores = np.asarray(pred.scores)
        if scores.shape != (n,):
            raise fail(f"scores must have shape ({n},), one per pair; got {scores.shape}")
        if not np.array_equal(pred.offsets, queries.offsets):
            raise fail("predictions must carry the offsets of the QuerySet scored; got "
                       + _first_difference(np.asarray(pred.offsets), queries.offsets))
        bad = ~np.isfinite(scores)
        if bad.any():
            raise fail(f"scores must be finite; got {int(bad.sum())} NaN or infinite values, "
                       f"e.g. {float(scores[bad][0])!r}")
        if (pred.probabilistic if probabilistic is None else probabilistic) and (
                (scores < 0.0) | (scores > 1.0)).any():
            raise fail(f"probabilistic scores must lie in [0, 1]; {_outside(scores)}")
        return pred
    if not isinstance(pred, PredictiveSamples):
        raise fail(f"predict_samples must return uncertank.PredictiveSamples; got {_describe(pred)}")
    s = np.asarray(pred.samples)
    if s.ndim != 2 or s.shape[1] != n or s.shape[0] < 1:
        raise fail(f"samples must have shape (n_samples, {n}), one joint draw per row; got {s.shape}")
    if n_samples is not None and s.shape[0] != n_samples:
        raise fail(f"n_samples={n_samples} must give {n_samples} rows; got {s.shape[0]}")
    if not np.array_equal(pred.offsets, queries.offsets):
        raise fail("samples must carry the offsets of the QuerySet scored; got "
                   + _first_difference(np.asarray(pred.offsets), queries.offsets))
    bad = ~np.isfinite(s)
    if bad.any():
        raise fail(f"samples must be finite; got {int(bad.sum())} NaN or infinite values, e.g. {float(s[bad][0])!r}")
    if probabilistic and ((s < 0.0) | (s > 1.0)).any():
        raise fail(f"the ranker's scores are probabilities, so every sample must lie in [0, 1]; {_outside(s)}")
    return pred
