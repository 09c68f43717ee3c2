"""Argument checks for plugin authors: the same checks uncertank runs on its own inputs.

Every check raises ``ValueError`` (or ``TypeError``) naming the argument, what
was expected and what arrived, so a plugin's errors read like the library's.
They are the checks uncertank runs on its own inputs: the data model, the
evaluators and the plugins all import them from here. None uses ``assert``.

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

import sys
from collections.abc import Iterable
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "InvalidPredictionError",
    "as_float_array",
    "as_label_array",
    "check_choice",
    "check_name",
    "check_offsets",
    "check_positive_int",
    "check_prediction",
    "check_probabilities",
    "check_real",
    "check_same_length",
    "check_seed",
    "check_unit_interval",
]

E = TypeVar("E", bound=str)

#: Which ends of the unit interval belong to it: ``"neither"`` is (0, 1), ``"both"`` is [0, 1].
Closed = Literal["neither", "left", "right", "both"]


def _unit_interval(closed: Closed) -> str:
    """The unit interval as written in a message: ``"(0, 1)"``, ``"[0, 1)"``, ``"(0, 1]"`` or ``"[0, 1]"``."""
    check_choice(closed, "closed", ("neither", "left", "right", "both"))
    left = "[" if closed in ("left", "both") else "("
    right = "]" if closed in ("right", "both") else ")"
    return f"{left}0, 1{right}"


def _outside_unit(values: NDArray[Any], closed: Closed) -> NDArray[np.bool_]:
    """Where ``values`` fall outside the unit interval (NaN included)."""
    low = values >= 0.0 if closed in ("left", "both") else values > 0.0
    high = values <= 1.0 if closed in ("right", "both") else values < 1.0
    return ~(low & high)


def _example(values: NDArray[Any]) -> str:
    """Format the first offending value for an error message."""
    v = values.ravel()[0]
    return repr(float(v)) if np.issubdtype(values.dtype, np.floating) else repr(v.item())


def _check_rank(arr: NDArray[Any], name: str, ndim: int | tuple[int, ...]) -> None:
    """Raise unless ``arr`` has one of the ranks ``ndim`` and at least one value."""
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"{name} must be {want}; got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty; got an array of shape {arr.shape}")


def as_float_array(x: ArrayLike, name: str, *, ndim: int | tuple[int, ...] = 1) -> NDArray[np.float64]:
    """Convert ``x`` to a float64 array, rejecting NaN, inf, empties, wrong ranks and non-numbers.

    Strings, bytes, complex numbers and dates are rejected with a
    TypeError (``np.asarray(["0.5"], dtype=float)`` would parse the string).
    """
    try:
        raw = np.asarray(x)
        if raw.dtype.kind in "USVcMm":
            raise TypeError(f"dtype {raw.dtype}")
        if raw.dtype == object:
            odd = next((v for v in raw.ravel() if isinstance(v, (str, bytes, complex))), None)
            if odd is not None:
                raise TypeError(f"values of dtype object such as {odd!r}")
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric (real numbers); got {type(x).__name__} ({exc})") from None
    _check_rank(arr, name, ndim)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name} must be finite; got {int(bad.sum())} NaN or inf values, "
            f"e.g. {_example(arr[bad])}"
        )
    return arr


def as_label_array(x: ArrayLike, name: str = "labels", *, ndim: int | tuple[int, ...] = 1) -> NDArray[np.int64]:
    """Convert ``x`` to an int64 array of non-negative integer labels.

    Integer and boolean arrays pass; a float array passes only when every
    value is a whole number (``1.0``), never truncated (``0.5`` is an error);
    strings, complex numbers and objects are a TypeError.
    """
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be integers >= 0; got {type(x).__name__} ({exc})") from None
    if arr.dtype == object:
        try:
            arr = np.asarray(arr.tolist(), dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be integers >= 0; got values of dtype object") from None
    _check_rank(arr, name, ndim)
    if arr.dtype == bool:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be integers >= 0; got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"{name} must be finite integers; got {int(bad.sum())} NaN or inf values")
        huge = np.abs(arr) >= 2.0**63
        if huge.any():
            raise ValueError(f"{name} must be integers >= 0 below 2**63; got {_example(arr[huge])}")
        frac = arr != np.round(arr)
        if frac.any():
            raise ValueError(
                f"{name} must be integers >= 0; got {int(frac.sum())} non-integer values, "
                f"e.g. {_example(arr[frac])}"
            )
    out = arr.astype(np.int64, copy=False)
    neg = out < 0
    if neg.any():
        raise ValueError(
            f"{name} must be integers >= 0; got {int(neg.sum())} negative values, "
            f"e.g. {_example(out[neg])}"
        )
    return out


def check_probabilities(probs: NDArray[np.float64], name: str = "probs", *, closed: Closed = "both") -> None:
    """Raise unless every value lies in the unit interval, [0, 1] by default (NaN never does).

    ``closed`` says which ends belong to it, as in :func:`check_unit_interval`.

    Examples
    --------
    >>> check_probabilities(np.array([0.2, 1.0]), "probs")
    >>> check_probabilities(np.array([0.2, 1.0]), "mu", closed="neither")
    Traceback (most recent call last):
    ...
    ValueError: mu must lie in (0, 1); got 1 values outside, e.g. 1.0
    """
    where = _unit_interval(closed)
    bad = _outside_unit(probs, closed)
    if bad.any():
        raise ValueError(
            f"{name} must lie in {where}; got {int(bad.sum())} values outside, "
            f"e.g. {_example(probs[bad])}"
        )


def check_offsets(offsets: ArrayLike, n_pairs: int, name: str = "offsets") -> NDArray[np.int64]:
    """Validate CSR-style ``offsets`` for ``n_pairs`` flat items.

    ``offsets`` must be 1-D integers of length ``n_queries + 1`` (at least 2),
    start at 0, end at ``n_pairs`` and increase strictly (no empty query).
    """
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(
            f"{name} must be 1-D of shape (n_queries + 1,) with n_queries >= 1; "
            f"got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must be integers; got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr[0] != 0:
        raise ValueError(f"{name} must start at 0; got {int(arr[0])}")
    if arr[-1] != n_pairs:
        raise ValueError(
            f"{name} must end at the number of pairs ({n_pairs}); got {int(arr[-1])}"
        )
    lengths = np.diff(arr)
    if (lengths <= 0).any():
        q = int(np.flatnonzero(lengths <= 0)[0])
        if (lengths < 0).any():
            raise ValueError(f"{name} must be non-decreasing; it decreases at query {q}")
        raise ValueError(f"every query needs at least one candidate; query {q} has none")
    return arr


def check_same_length(a: NDArray[Any], a_name: str, b: NDArray[Any], b_name: str) -> None:
    """Raise unless ``a`` and ``b`` have the same shape."""
    if a.shape != b.shape:
        raise ValueError(
            f"{a_name} and {b_name} must have the same shape; got {a.shape} and {b.shape}"
        )


def check_choice(value: object, name: str, allowed: Iterable[E]) -> E:
    """Raise unless ``value`` is one of ``allowed``; the error lists them."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}"
        )
    return value  # type: ignore[return-value]


def check_positive_int(value: object, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Raise unless ``value`` is an integer >= ``minimum`` (and <= ``maximum`` when given)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer from {minimum} to {maximum}; got {value}")
    return int(value)


def check_real(
    value: object, name: str, *, minimum: float | None = None, maximum: float | None = None,
    exclusive_minimum: bool = False, exclusive_maximum: bool = False,
) -> float:
    """Raise unless ``value`` is a finite real number (not a bool) within the bounds given; return it as a float.

    Examples
    --------
    >>> check_real(0.05, "lora_dropout", minimum=0, maximum=1, exclusive_maximum=True)
    0.05
    >>> check_real(0, "lr", minimum=0, exclusive_minimum=True)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a finite number > 0; got 0
    """
    low = "" if minimum is None else f"{'>' if exclusive_minimum else '>='} {minimum:g}"
    high = "" if maximum is None else f"{'<' if exclusive_maximum else '<='} {maximum:g}"
    want = "a finite number" + (" " + " and ".join(b for b in (low, high) if b) if low or high else "")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {want}; got {type(value).__name__} {value!r}")
    x = float(value)
    below = minimum is not None and (x <= minimum if exclusive_minimum else x < minimum)
    above = maximum is not None and (x >= maximum if exclusive_maximum else x > maximum)
    if not np.isfinite(x) or below or above:
        raise ValueError(f"{name} must be {want}; got {value!r}")
    return x


def check_unit_interval(value: object, name: str, *, closed: Closed = "neither") -> float:
    """Raise unless ``value`` is a real number (not a bool) in the unit interval; return it as a float.

    The check for a level (``alpha``, ``delta``, a coverage), a probability,
    a quantile or a fraction. ``closed`` says which ends belong to the
    interval: ``"neither"`` (the default) is (0, 1), ``"left"`` is [0, 1),
    ``"right"`` is (0, 1] and ``"both"`` is [0, 1]. A value that is not a
    real number is a TypeError; NaN, infinities and numbers outside are a
    ValueError.

    Examples
    --------
    >>> check_unit_interval(0.1, "alpha")
    0.1
    >>> check_unit_interval(0, "warmup_ratio", closed="left")
    0.0
    >>> check_unit_interval(1, "alpha")
    Traceback (most recent call last):
    ...
    ValueError: alpha must lie in (0, 1); got 1
    >>> check_unit_interval("0.1", "alpha")
    Traceback (most recent call last):
    ...
    TypeError: alpha must be a number in (0, 1); got str '0.1'
    """
    where = _unit_interval(closed)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number in {where}; got {type(value).__name__} {value!r}")
    if _outside_unit(np.asarray(value, dtype=np.float64), closed):
        raise ValueError(f"{name} must lie in {where}; got {value!r}")
    return float(value)


#: What numpy's ``default_rng`` takes besides an integer: a generator, a bit generator or a seed sequence.
_RANDOM_STATES = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)


def check_seed(
    value: object, name: str = "seed", *, allow_none: bool = True, generator: bool = True, maximum: int | None = None
) -> Any:
    """Raise unless ``value`` is a seed: an integer >= 0 (<= ``maximum`` when given), or None.

    With ``generator`` (the default) a :class:`numpy.random.Generator` (or a
    bit generator or seed sequence) passes as it is; without it only an
    integer does (scikit-learn's ``random_state`` takes integers below
    ``2**32``: pass ``maximum=2**32 - 1``). Booleans, floats, strings and
    negative integers are refused here, before numpy would refuse them in
    its own words.
    """
    if value is None and allow_none:
        return None
    if generator and isinstance(value, _RANDOM_STATES):
        return value
    want = "an integer >= 0" + (f" and <= {maximum}" if maximum is not None else "")
    if generator:
        want += ", a numpy Generator"
    if allow_none:
        want += " or None"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {want}; got {type(value).__name__} {value!r}")
    if value < 0 or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {want}; got {value}")
    return int(value)


def check_name(name: object, what: str = "name") -> str:
    """Raise unless ``name`` (a container's ``name`` or ``ranker``, named ``what``) is a str."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str; got {type(name).__name__} {name!r}")
    return name


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


def _type_and_shape(obj: Any) -> str:
    shape = getattr(obj, "shape", None)
    return f"{type(obj).__name__}" + ("" if shape is None else f" of shape {tuple(shape)}")


def _where_offsets_differ(got: np.ndarray, want: np.ndarray) -> str:
    """Where offsets ``got`` first differ from the QuerySet's ``want``."""
    if got.size != want.size:
        return f"offsets of {got.size - 1} queries, the QuerySet has {want.size - 1}"
    at = int(np.flatnonzero(got != want)[0])
    return f"offsets[{at}] = {int(got[at])}, the QuerySet's is {int(want[at])}"


def _outside(values: np.ndarray) -> str:
    bad = (values < 0.0) | (values > 1.0)
    return f"got {int(bad.sum())} values outside, e.g. {float(values[bad].ravel()[0])!r}"


def _containers() -> Any:
    """The data model's module, where it is loaded (None otherwise: then nothing is one of its containers).

    The data model (:mod:`uncertank._types`) builds on the checks above, so
    this module does not import it, not even inside a function: that would
    be an import circle. An object can only be a QuerySet or a Predictions
    once that module is loaded, so it is looked up in ``sys.modules``.
    """
    return sys.modules.get("uncertank._types")


def check_prediction(
    pred: object,
    queries: object,
    *,
    ranker: str,
    condition: str | None = None,
    samples: bool = False,
    n_samples: int | None = None,
    probabilistic: bool | None = None,
) -> Any:
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
    containers = _containers()
    if containers is None or not isinstance(queries, containers.QuerySet):
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
        if not isinstance(pred, containers.Predictions):
            raise fail(f"predict must return uncertank.Predictions; got {_type_and_shape(pred)}")
        scores = np.asarray(pred.scores)
        if scores.shape != (n,):
            raise fail(f"scores must have shape ({n},), one per pair; got {scores.shape}")
        if not np.array_equal(pred.offsets, queries.offsets):
            raise fail("predictions must carry the offsets of the QuerySet scored; got "
                       + _where_offsets_differ(np.asarray(pred.offsets), queries.offsets))
        bad = ~np.isfinite(scores)
        if bad.any():
            raise fail(f"scores must be finite; got {int(bad.sum())} NaN or infinite values, "
                       f"e.g. {float(scores[bad][0])!r}")
        if (pred.probabilistic if probabilistic is None else probabilistic) and (
                (scores < 0.0) | (scores > 1.0)).any():
            raise fail(f"probabilistic scores must lie in [0, 1]; {_outside(scores)}")
        return pred
    if not isinstance(pred, containers.PredictiveSamples):
        raise fail(f"predict_samples must return uncertank.PredictiveSamples; got {_type_and_shape(pred)}")
    s = np.asarray(pred.samples)
    if s.ndim != 2 or s.shape[1] != n or s.shape[0] < 1:
        raise fail(f"samples must have shape (n_samples, {n}), one joint draw per row; got {s.shape}")
    if n_samples is not None and s.shape[0] != n_samples:
        raise fail(f"n_samples={n_samples} must give {n_samples} rows; got {s.shape[0]}")
    if not np.array_equal(pred.offsets, queries.offsets):
        raise fail("samples must carry the offsets of the QuerySet scored; got "
                   + _where_offsets_differ(np.asarray(pred.offsets), queries.offsets))
    bad = ~np.isfinite(s)
    if bad.any():
        raise fail(f"samples must be finite; got {int(bad.sum())} NaN or infinite values, e.g. {float(s[bad][0])!r}")
    if probabilistic and ((s < 0.0) | (s > 1.0)).any():
        raise fail(f"the ranker's scores are probabilities, so every sample must lie in [0, 1]; {_outside(s)}")
    return pred
