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
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypeVar, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "InvalidPredictionError",
    "NonFiniteResultError",
    "as_float_array",
    "as_label_array",
    "check_bool",
    "check_broadcast",
    "check_callable",
    "check_choice",
    "check_count",
    "check_finite_result",
    "check_fits",
    "check_instance",
    "check_instances",
    "check_keys",
    "check_name",
    "check_names",
    "check_ndarray",
    "check_ndim",
    "check_path_messages",
    "check_nonnegative",
    "check_number",
    "check_offsets",
    "check_path",
    "check_positive_int",
    "check_prediction",
    "check_probabilities",
    "check_real",
    "check_same_length",
    "check_scale",
    "check_seed",
    "check_tensor",
    "check_tokenizer",
    "check_unique",
    "check_unit_interval",
    "unique_keys",
]

E = TypeVar("E", bound=str)
T = TypeVar("T")
T1 = TypeVar("T1")
T2 = TypeVar("T2")
T3 = TypeVar("T3")
K = TypeVar("K", bound=str)

#: Which ends of the unit interval belong to it: ``"neither"`` is (0, 1), ``"both"`` is [0, 1].
Closed = Literal["neither", "left", "right", "both"]


def _unit_interval(closed: Closed) -> str:
    """The unit interval as written in a message: ``"(0, 1)"``, ``"[0, 1)"``, ``"(0, 1]"`` or ``"[0, 1]"``."""
    check_choice(closed, "closed", ("neither", "left", "right", "both"))
    left = "[" if closed in ("left", "both") else "("
    right = "]" if closed in ("right", "both") else ")"
    return f"{left}0, 1{right}"


def _outside_unit(values: NDArray[np.float64], closed: Closed) -> NDArray[np.bool_]:
    """Where ``values`` fall outside the unit interval (NaN included)."""
    low = values >= 0.0 if closed in ("left", "both") else values > 0.0
    high = values <= 1.0 if closed in ("right", "both") else values < 1.0
    return ~(low & high)


def _example(values: NDArray[np.generic]) -> str:
    """Format the first offending value for an error message."""
    v = values.ravel()[0]
    return repr(float(v)) if np.issubdtype(values.dtype, np.floating) else repr(v.item())


def _check_rank(arr: NDArray[np.generic], name: str, ndim: int | tuple[int, ...], *, allow_empty: bool = False
                ) -> None:
    """Raise unless ``arr`` has one of the ranks ``ndim`` and at least one value (unless ``allow_empty``)."""
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if not isinstance(ndims, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) for d in ndims):
        raise TypeError(f"ndim must be an int or a tuple of ints; got {type(ndim).__name__} {ndim!r}")
    if arr.ndim not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"{name} must be {want}; got an array of shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty; got an array of shape {arr.shape}")


def as_float_array(
    x: ArrayLike, name: str, *, ndim: int | tuple[int, ...] = 1, allow_infinite: bool = False,
    allow_nan: bool = False, allow_empty: bool = False,
) -> NDArray[np.float64]:
    """Convert ``x`` to a float64 array, rejecting NaN, inf, empties, wrong ranks and non-numbers.

    Strings, bytes, complex numbers and dates are rejected with a
    TypeError (``np.asarray(["0.5"], dtype=float)`` would parse the string);
    Python integers past a float's range (``10**400``) with a ValueError.
    ``allow_infinite`` and ``allow_nan`` let the infinities, or NaN, pass
    where a function gives them a meaning (a conformity score of ``-inf``),
    and ``allow_empty`` an empty array (an empty family of hypotheses).
    """
    allow_infinite = check_bool(allow_infinite, "allow_infinite")
    allow_nan = check_bool(allow_nan, "allow_nan")
    allow_empty = check_bool(allow_empty, "allow_empty")
    try:
        raw = np.asarray(x)
        if raw.dtype.kind in "USVcMm":
            raise TypeError(f"dtype {raw.dtype}")
        if raw.dtype == object:
            odd = next((v for v in raw.ravel() if isinstance(v, (str, bytes, complex))), None)
            if odd is not None:
                raise TypeError(f"values of dtype object such as {odd!r}")
        arr = np.asarray(raw, dtype=np.float64)
    except OverflowError as exc:  # Python ints past a float's range (10**400)
        raise ValueError(f"{name} must be finite real numbers; got an integer beyond the range of a float") from exc
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric (real numbers); got {type(x).__name__} ({exc})") from None
    _check_rank(arr, name, ndim, allow_empty=allow_empty)
    if allow_infinite and allow_nan:
        return arr
    # one pass over the values on the common path (every metric's input): neither is allowed
    bad = np.isnan(arr) if allow_infinite else np.isinf(arr) if allow_nan else ~np.isfinite(arr)
    if bad.any():
        allowed = " (infinities allowed)" if allow_infinite and not allow_nan else \
            " (NaN allowed)" if allow_nan and not allow_infinite else ""
        raise ValueError(
            f"{name} must be finite{allowed}; got {int(bad.sum())} NaN or inf values, "
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
        except OverflowError as exc:  # Python ints past a float's range (10**400)
            raise ValueError(f"{name} must be integers >= 0 below 2**63; got an integer beyond the range of a "
                             "float") from exc
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
    probs = np.asarray(probs)
    if probs.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric (real numbers); got dtype {probs.dtype}")
    bad = _outside_unit(probs.astype(np.float64, copy=False), closed)
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
    n_pairs = check_positive_int(n_pairs, "n_pairs", minimum=0)
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(
            f"{name} must be 1-D of shape (n_queries + 1,) with n_queries >= 1; "
            f"got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            if (np.abs(arr) >= 2.0**63).any():
                raise ValueError(f"{name} must fit in int64 (below 2**63); got {_example(arr[np.abs(arr) >= 2.0**63])}")
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


def check_same_length(a: ArrayLike, a_name: str, b: ArrayLike, b_name: str) -> None:
    """Raise unless ``a`` and ``b`` have the same shape."""
    if np.shape(a) != np.shape(b):
        raise ValueError(
            f"{a_name} and {b_name} must have the same shape; got {np.shape(a)} and {np.shape(b)}"
        )


def check_choice(value: object, name: str, allowed: Iterable[E]) -> E:
    """Raise unless ``value`` is one of ``allowed``; the error lists them."""
    if isinstance(allowed, (str, bytes)) or not isinstance(allowed, Iterable):
        raise TypeError(f"allowed must be a collection of names; got {type(allowed).__name__} {allowed!r}")
    allowed = tuple(allowed)
    try:
        known = bool(value in allowed)
    except (TypeError, ValueError, OverflowError):  # an array, or a value that does not compare to a name
        known = False
    if not known:
        raise ValueError(
            f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}"
        )
    return value  # type: ignore[return-value]


def check_positive_int(value: object, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Raise unless ``value`` is an integer >= ``minimum`` (and <= ``maximum`` when given)."""
    for bound, label in ((minimum, "minimum"), (maximum, "maximum")):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (int, np.integer))):
            raise TypeError(f"{label} must be an integer; got {type(bound).__name__} {bound!r}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer from {minimum} to {maximum}; got {value}")
    check_fits(value, name)
    return int(value)


def _float_of(value: int | float | np.integer | np.floating, name: str, want: str) -> float:
    """``float(value)``; an integer past a float's range (about 1.8e308) is refused, never an OverflowError."""
    try:
        return float(value)
    except OverflowError as exc:
        digits = len(str(abs(int(value))))
        raise ValueError(f"{name} must be {want}; got an integer of {digits} digits, beyond the range of a float"
                         ) from exc


def check_number(value: object, name: str, what: str = "a number") -> float:
    """Raise unless ``value`` is a real number (not a bool); return it as a float, NaN and infinities included.

    It returns NaN when ``value`` is NaN, and ``inf`` or ``-inf`` for the infinities.

    The rule for a number a function handles at every value, the non-finite
    ones too (a formatter writes NaN as ``n/a``): only its type is checked,
    and an integer past a float's range (``10**400``) is refused by name
    rather than left to ``float()``'s OverflowError. :func:`check_real` is
    the rule for a number that must be finite.

    Examples
    --------
    >>> check_number(3, "value"), check_number(float("nan"), "p")
    (3.0, nan)
    >>> check_number("0.5", "p", "a number or None")
    Traceback (most recent call last):
    ...
    TypeError: p must be a number or None; got str '0.5'
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {what}; got {type(value).__name__} {value!r}")
    return _float_of(value, name, what)


def check_tensor(value: object, name: str, *, ndim: int | tuple[int, ...] | None = None, finite: bool = True) -> Any:
    """Raise unless ``value`` is a torch tensor of real numbers (of rank ``ndim``, finite when ``finite``); return it.

    The rule for a tensor argument, as :func:`as_float_array` is for an
    array: a bool or complex tensor is a TypeError; a NaN or an infinity
    in a floating tensor a ValueError, counted. torch is read off the loaded
    modules, so this module does not import it (a tensor exists only once
    torch is imported); the return is typed ``Any`` for that reason, and is
    the ``torch.Tensor`` given.

    Examples
    --------
    >>> import torch
    >>> check_tensor(torch.ones(2, 3), "features", ndim=2).shape
    torch.Size([2, 3])
    >>> check_tensor(torch.tensor([1.0, float("nan")]), "scores")
    Traceback (most recent call last):
    ...
    ValueError: scores must be finite; got 1 NaN or infinite values
    """
    finite = check_bool(finite, "finite")
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor; got {type(value).__name__}")
    if value.dtype.is_complex or value.dtype == torch.bool:
        raise TypeError(f"{name} must hold real numbers; got a tensor of {value.dtype}")
    if ndim is not None:
        check_ndim(value, name, ndim)
    if finite and value.is_floating_point():
        bad = ~torch.isfinite(value)
        if bool(bad.any()):
            raise ValueError(f"{name} must be finite; got {int(bad.sum())} NaN or infinite values")
    return value


def check_broadcast(shapes: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Raise unless arrays of ``shapes`` (argument name -> shape) broadcast together; return the common shape.

    Examples
    --------
    >>> check_broadcast({"y": (3,), "mu": (2, 1)})
    (2, 3)
    >>> check_broadcast({"y": (3,), "mu": (2, 2)})
    Traceback (most recent call last):
    ...
    ValueError: y and mu must broadcast together (numpy's rules); got shapes y (3,), mu (2, 2)
    """
    if not isinstance(shapes, Mapping) or not shapes or not all(
            isinstance(k, str) and isinstance(v, tuple) and all(isinstance(d, (int, np.integer)) and d >= 0 for d in v)
            for k, v in shapes.items()):
        raise TypeError(f"shapes must be a non-empty mapping of argument names to shapes (tuples of ints >= 0); "
                        f"got {type(shapes).__name__} {shapes!r:.80}")
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        names = list(shapes)
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        got = ", ".join(f"{k} {tuple(v)}" for k, v in shapes.items())
        raise ValueError(f"{listed} must broadcast together (numpy's rules); got shapes {got}") from None


def check_keys(value: Mapping[str, object], name: str, required: Iterable[str]) -> None:
    """Raise a ValueError unless the mapping ``value`` holds every key of ``required``; the error lists the missing.

    Examples
    --------
    >>> check_keys({"grid": 1}, "densities", ("grid", "observed"))
    Traceback (most recent call last):
    ...
    ValueError: densities must hold the keys 'grid' and 'observed'; it lacks 'observed'
    """
    check_instance(value, name, Mapping, "a mapping")
    want = check_names(required, "required")
    if not want:
        raise ValueError("required must name at least one key; got none")
    missing = [k for k in want if k not in value]
    if missing:
        listed = ", ".join(map(repr, want[:-1])) + f" and {want[-1]!r}" if len(want) > 1 else repr(want[0])
        raise ValueError(f"{name} must hold the keys {listed}; it lacks {', '.join(map(repr, missing))}")


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
    check_bool(exclusive_minimum, "exclusive_minimum")
    check_bool(exclusive_maximum, "exclusive_maximum")
    for bound, label in ((minimum, "minimum"), (maximum, "maximum")):
        real = isinstance(bound, (int, float, np.integer, np.floating)) and not isinstance(bound, bool)
        if bound is not None and (not real or float(bound) != float(bound)):
            raise TypeError(f"{label} must be a number or None; got {type(bound).__name__} {bound!r}")
    low = "" if minimum is None else f"{'>' if exclusive_minimum else '>='} {minimum:g}"
    high = "" if maximum is None else f"{'<' if exclusive_maximum else '<='} {maximum:g}"
    want = "a finite number" + (" " + " and ".join(b for b in (low, high) if b) if low or high else "")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {want}; got {type(value).__name__} {value!r}")
    x = _float_of(value, name, want)
    below = minimum is not None and (x <= minimum if exclusive_minimum else x < minimum)
    above = maximum is not None and (x >= maximum if exclusive_maximum else x > maximum)
    if not np.isfinite(x) or below or above:
        raise ValueError(f"{name} must be {want}; got {value!r}")
    return x


def check_bool(value: object, name: str) -> bool:
    """Raise a TypeError unless ``value`` is a bool (``numpy.bool_`` too); return it as a bool.

    A flag given an array, a string or a number is named, never "the truth
    value of an array is ambiguous".

    Examples
    --------
    >>> check_bool(True, "per_query")
    True
    >>> check_bool("yes", "per_query")
    Traceback (most recent call last):
    ...
    TypeError: per_query must be a bool (True or False); got str 'yes'
    """
    if not isinstance(value, (bool, np.bool_)):
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{name} must be a bool (True or False); got {type(value).__name__} {shown}")
    return bool(value)


def check_fits(value: object, name: str, *, dtype: str = "int64") -> int:
    """Raise unless the integer ``value`` fits the integer type ``dtype`` it is stored in (int64 by default).

    The overflow rule: a count, a seed or a cutoff read from a file, an
    option or an argument is stored in a numpy integer; above ``2**63 - 1``
    (or below ``-2**63``) numpy would raise an ``OverflowError`` of its own,
    or wrap around silently.

    Examples
    --------
    >>> check_fits(2**63 - 1, "depth")
    9223372036854775807
    >>> check_fits(2**63, "depth")
    Traceback (most recent call last):
    ...
    ValueError: depth must fit in int64 (from -9223372036854775808 to 9223372036854775807); got 9223372036854775808
    """
    try:
        info = np.iinfo(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must name an integer type (int64, uint64); got {dtype!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    if not int(info.min) <= int(value) <= int(info.max):
        raise ValueError(f"{name} must fit in {dtype} (from {info.min} to {info.max}); got {value}")
    return int(value)


def check_count(value: object, name: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    """Raise unless ``value`` is a count: an integer >= ``minimum`` (0 by default) that fits in int64.

    A float holding a whole number (``5.0``, as JSON and TOML write it) is
    taken; ``5.5``, NaN, infinities and bools are not.

    Examples
    --------
    >>> check_count(5.0, "n_resamples", minimum=1)
    5
    >>> check_count(-1, "n_draws")
    Traceback (most recent call last):
    ...
    ValueError: n_draws must be an integer >= 0; got -1
    """
    if isinstance(value, (float, np.floating)) and not isinstance(value, bool):
        if not np.isfinite(value) or value != np.round(value):
            raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
        if abs(float(value)) >= 2.0**63:
            raise ValueError(f"{name} must fit in int64 (below 2**63); got {value!r}")
        value = int(value)
    return check_positive_int(value, name, minimum=minimum, maximum=maximum)


def check_nonnegative(value: object, name: str, *, maximum: float | None = None) -> float:
    """Raise unless ``value`` is a finite number >= 0: the domain of a variance, a weight or a duration.

    Examples
    --------
    >>> check_nonnegative(0, "variance")
    0.0
    >>> check_nonnegative(-0.1, "variance")
    Traceback (most recent call last):
    ...
    ValueError: variance must be a finite number >= 0; got -0.1
    """
    return check_real(value, name, minimum=0, maximum=maximum)


def check_scale(value: object, name: str, *, maximum: float | None = None) -> float:
    """Raise unless ``value`` is a finite number > 0: the domain of a scale, a temperature or a standard deviation.

    Examples
    --------
    >>> check_scale(0.5, "temperature")
    0.5
    >>> check_scale(0.0, "temperature")
    Traceback (most recent call last):
    ...
    ValueError: temperature must be a finite number > 0; got 0.0
    """
    return check_real(value, name, minimum=0, exclusive_minimum=True, maximum=maximum)


def check_unique(labels: Iterable[T], name: str) -> list[T]:
    """Raise unless every label in ``labels`` (runs, systems, rankers, metrics shown in a report) is unique.

    Two inputs shown under one label could not be told apart in a table,
    and a dict keyed by label would keep only the last. Returns the labels
    as a list.

    Examples
    --------
    >>> check_unique(["bm25", "dense"], "rankers")
    ['bm25', 'dense']
    >>> check_unique(["bm25", "dense", "bm25"], "rankers")
    Traceback (most recent call last):
    ...
    ValueError: rankers must be unique; got 'bm25' twice
    """
    seen: dict[object, int] = {}
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise TypeError(f"{name} must be a collection of labels; got {type(labels).__name__} {labels!r}")
    out = list(labels)
    for label in out:
        if isinstance(label, (float, np.floating)) and not np.isfinite(label):
            raise ValueError(f"{name} must be labels that equal themselves; got {label!r}")
        try:
            seen[label] = seen.get(label, 0) + 1
        except TypeError:
            raise TypeError(f"{name} must be labels (str); got {type(label).__name__} {label!r}") from None
    twice = [k for k, n in seen.items() if n > 1]
    if twice:
        times = {2: "twice"}.get(seen[twice[0]], f"{seen[twice[0]]} times")
        more = f" (and {len(twice) - 1} more)" if len(twice) > 1 else ""
        raise ValueError(f"{name} must be unique; got {twice[0]!r} {times}{more}")
    return out


def unique_keys(pairs: Iterable[tuple[K, T]], name: str = "keys") -> dict[K, T]:
    """A dict of ``pairs``, raising when a key is given twice (an option, a JSON key, a ``key=value``).

    Usable as ``json.loads(text, object_pairs_hook=unique_keys)``: the
    standard library keeps the last of two equal keys silently.

    Examples
    --------
    >>> unique_keys([("k", 1), ("n", 2)], "metric options")
    {'k': 1, 'n': 2}
    >>> unique_keys([("k", 1), ("k", 2)], "metric options")
    Traceback (most recent call last):
    ...
    ValueError: metric options must not give a key twice; got 'k' twice
    """
    out: dict[K, T] = {}
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Iterable):
        raise TypeError(f"{name} must be (key, value) pairs; got {type(pairs).__name__} {pairs!r}")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"{name} must be (key, value) pairs; got {pair!r}")
        key, value = pair
        try:
            hash(key)
        except TypeError:
            raise TypeError(f"{name} must have hashable keys; got {type(key).__name__} {key!r}") from None
        if key in out:
            raise ValueError(f"{name} must not give a key twice; got {key!r} twice")
        out[key] = value
    return out


class NonFiniteResultError(ValueError):
    """A public computation would return NaN or an infinity; the message says which result and why.

    A subclass of :class:`ValueError`, raised by :func:`check_finite_result`.
    """


def check_finite_result(value: T, name: str, why: str) -> T:
    """Return ``value`` (a number or an array) when it is finite; raise :class:`NonFiniteResultError` otherwise.

    The rule for results: a public function returns finite numbers or
    raises, saying which result and ``why`` it is undefined (``"every
    query has one candidate"``), never a NaN the caller finds later.

    Examples
    --------
    >>> check_finite_result(0.5, "ECE", "no pairs")
    0.5
    >>> try:
    ...     check_finite_result(float("nan"), "ECE", "no pair has a label")
    ... except ValueError as exc:
    ...     print(exc)
    ECE must be finite; got nan: no pair has a label
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except OverflowError as exc:  # an integer past a float's range is no finite float
        raise NonFiniteResultError(f"{name} must be finite; got an integer beyond the range of a float: {why}"
                                   ) from exc
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of numbers; got {type(value).__name__}") from None
    bad = ~np.isfinite(arr)
    if bad.any():
        raise NonFiniteResultError(f"{name} must be finite; got {float(arr[bad].ravel()[0])!r}: {why}")
    return value


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
    x = _float_of(value, name, f"a number in {where}")
    if _outside_unit(np.asarray(x, dtype=np.float64), closed):
        raise ValueError(f"{name} must lie in {where}; got {value!r}")
    return x


#: What numpy's ``default_rng`` takes besides an integer: a generator, a bit generator or a seed sequence.
_RANDOM_STATES = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)


#: What :func:`check_seed` returns: an integer seed, one of numpy's random states, or None.
Seed = int | np.random.Generator | np.random.BitGenerator | np.random.SeedSequence | None


@overload
def check_seed(
    value: object, name: str = ..., *, allow_none: Literal[False], generator: Literal[False], maximum: int | None = ...
) -> int: ...


@overload
def check_seed(
    value: object, name: str = ..., *, allow_none: bool = ..., generator: Literal[False], maximum: int | None = ...
) -> int | None: ...


@overload
def check_seed(
    value: object, name: str = ..., *, allow_none: bool = ..., generator: bool = ..., maximum: int | None = ...
) -> Seed: ...


def check_seed(
    value: object, name: str = "seed", *, allow_none: bool = True, generator: bool = True, maximum: int | None = None
) -> Seed:
    """Raise unless ``value`` is a seed: an integer >= 0 (<= ``maximum`` when given), or None.

    With ``generator`` (the default) a :class:`numpy.random.Generator` (or a
    bit generator or seed sequence) passes as it is; without it only an
    integer does (scikit-learn's ``random_state`` takes integers below
    ``2**32``: pass ``maximum=2**32 - 1``). Booleans, floats, strings and
    negative integers are refused here, before numpy would refuse them in
    its own words.
    """
    allow_none = check_bool(allow_none, "allow_none")
    generator = check_bool(generator, "generator")
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
    return int(value)  # numpy's default_rng takes any integer >= 0: no type to overflow


def check_instance(
    value: object, name: str, types: type | tuple[type, ...], what: str | None = None
) -> Any:  # ``value`` as one of ``types``, which no signature can say when a type is abstract (Iterable)
    """Raise a TypeError unless ``value`` is an instance of ``types``; ``what`` says it in words.

    The rule for an argument that must be one of the library's objects (a
    :class:`~uncertank.RankedLists`, a fitted comparison, a data frame):
    a float or a string passed there is named, never an ``AttributeError``
    from deep inside.

    Examples
    --------
    >>> check_instance([1], "runs", (list, tuple), "a list of runs")
    [1]
    >>> check_instance(0.5, "runs", (list, tuple), "a list of runs")
    Traceback (most recent call last):
    ...
    TypeError: runs must be a list of runs; got float 0.5
    """
    names = types if isinstance(types, tuple) else (types,)
    if not all(isinstance(t, type) for t in names):
        raise TypeError(f"types must be a type or a tuple of types; got {types!r}")
    if not isinstance(value, types):
        if what is None:
            what = "a " + " or ".join(t.__name__ for t in names)
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{name} must be {what}; got {type(value).__name__} {shown}")
    return value


def check_callable(value: T, name: str, what: str = "a function") -> T:
    """Raise a TypeError unless ``value`` can be called (a function, a class, a bound method); ``what`` says which.

    Examples
    --------
    >>> check_callable(len, "log").__name__
    'len'
    >>> check_callable("print", "log", "a function of one str")
    Traceback (most recent call last):
    ...
    TypeError: log must be a function of one str; got str 'print'
    """
    if not callable(value):
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{name} must be {what}; got {type(value).__name__} {shown}")
    return value


def check_path(value: object, name: str = "path") -> Path:
    """Raise a TypeError unless ``value`` is a path: a str or an ``os.PathLike``, never empty.

    Returns it as a :class:`pathlib.Path`.

    Examples
    --------
    >>> check_path("runs/a.run", "run").name
    'a.run'
    >>> check_path(0.5, "run")
    Traceback (most recent call last):
    ...
    TypeError: run must be a path (a str or os.PathLike); got float 0.5
    """
    import os

    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (a str or os.PathLike); got {type(value).__name__} {value!r}")
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"{name} must be a path, not empty; got {value!r}")
    if "\x00" in str(value):
        raise ValueError(f"{name} must be a path without NUL characters; got {str(value)!r}")
    return Path(value)


def check_name(name: object, what: str = "name") -> str:
    """Raise unless ``name`` (a container's ``name`` or ``ranker``, named ``what``) is a str."""
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str; got {type(name).__name__} {name!r}")
    return name


def check_names(values: object, what: str = "names") -> list[str]:
    """Raise unless ``values`` is a collection of str (a list, a tuple, a set), not a str itself; return a list.

    The rule for an argument that lists names: conditions, metric labels,
    rankers. An array, a number or a single str passed there is named,
    never "'float' object is not iterable" or a test of each character.

    Examples
    --------
    >>> check_names(("in-domain", "shifted"), "conditions")
    ['in-domain', 'shifted']
    >>> check_names("in-domain", "conditions")
    Traceback (most recent call last):
    ...
    TypeError: conditions must be a list of str; got str 'in-domain'
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Collection):
        shown = repr(values)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{what} must be a list of str; got {type(values).__name__} {shown}")
    out = list(values)
    for value in out:
        if not isinstance(value, str):  # numpy's str_ is a str
            raise TypeError(f"{what} must be a list of str; got {type(value).__name__} {value!r} among them")
    return out


#: What a dtype kind letter holds, for :func:`check_ndarray`'s message.
_KINDS = {"f": "float", "i": "int", "u": "unsigned int", "b": "bool"}


def check_ndarray(value: object, name: str, *, ndim: int = 1, kinds: str = "f") -> NDArray[np.generic]:
    """Raise a TypeError unless ``value`` is an ndarray of rank ``ndim`` whose dtype is of one of ``kinds``.

    The check for the internal passes of a computation (binning, radix
    selection), whose arrays were converted and checked once at the public
    door (:func:`as_float_array`): it takes constant time and copies
    nothing, so it does not slow the pass; a list or an array of another
    rank or dtype is named, never numpy's error from deep inside. ``kinds``
    holds numpy's dtype kind letters (``"f"`` float, ``"iu"`` integers).
    Returns ``value`` itself, NaN where it holds NaN: the values are not read.

    Examples
    --------
    >>> check_ndarray(np.array([0.2, 0.9]), "p").tolist()
    [0.2, 0.9]
    >>> check_ndarray([0.2, 0.9], "p")
    Traceback (most recent call last):
    ...
    TypeError: p must be a 1-D ndarray of float; got list [0.2, 0.9]
    """
    ndim = check_positive_int(ndim, "ndim", minimum=0, maximum=64)
    if not isinstance(kinds, str) or not kinds or set(kinds) - set("biufcmMOSUV"):
        raise TypeError(f"kinds must be numpy dtype kind letters such as 'f' or 'iu'; got {kinds!r}")
    want = f"a {ndim}-D ndarray of " + " or ".join(_KINDS.get(k, k) for k in kinds)
    if not isinstance(value, np.ndarray):
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{name} must be {want}; got {type(value).__name__} {shown}")
    if value.ndim != ndim or value.dtype.kind not in kinds:
        raise TypeError(f"{name} must be {want}; got an array of shape {value.shape} and dtype {value.dtype}")
    return value


def check_path_messages(errors: object, name: str = "errors") -> list[tuple[str, str]]:
    """Raise unless ``errors`` is a list of ``(path, message)`` pairs of str; return it as a list of tuples.

    The errors an exception of a file's checks carries, one per key at
    fault (``("rankers[2].params.mc_layers", "must be <= 6; got 100")``);
    the path is ``""`` for the document as a whole.

    Examples
    --------
    >>> check_path_messages([("study.seed", "must be an integer; got 'a'")])
    [('study.seed', "must be an integer; got 'a'")]
    >>> check_path_messages([("study.seed",)])
    Traceback (most recent call last):
    ...
    TypeError: errors must be a list of (path, message) pairs of str; got ('study.seed',)
    """
    if isinstance(errors, (str, bytes)) or not isinstance(errors, (list, tuple)):
        raise TypeError(
            f"{name} must be a list of (path, message) pairs of str; got {type(errors).__name__} {errors!r}")
    out: list[tuple[str, str]] = []
    for pair in errors:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            shown = repr(pair)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise TypeError(f"{name} must be a list of (path, message) pairs of str; got {shown}")
        out.append((pair[0], pair[1]))
    return out


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


def _type_and_shape(obj: object) -> str:
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


def _containers() -> ModuleType | None:
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
) -> Any:  # Predictions or PredictiveSamples: the data model builds on this module, which cannot import it
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
    if containers is None:
        raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
    query_set = containers.QuerySet  # the classes, read off the loaded module (no import: a circle)
    predictions = containers.Predictions
    predictive_samples = containers.PredictiveSamples
    if not isinstance(queries, query_set):
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
        if not isinstance(pred, predictions):
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
    if not isinstance(pred, predictive_samples):
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


def check_tokenizer(tokenizer: T, name: str = "tokenizer") -> T:
    """Raise a TypeError unless ``tokenizer`` is a tokenizer (callable, with ``get_vocab``); return it.

    Any transformers tokenizer is; the check is by what is used, so a
    tokenizer of one's own with those two passes too.

    Examples
    --------
    >>> check_tokenizer(0.5)
    Traceback (most recent call last):
    ...
    TypeError: tokenizer must be a transformers tokenizer (callable, with get_vocab); got float 0.5
    """
    if not callable(tokenizer) or not callable(getattr(tokenizer, "get_vocab", None)):
        raise TypeError(f"{name} must be a transformers tokenizer (callable, with get_vocab); "
                        f"got {type(tokenizer).__name__} {tokenizer!r}"[:300])
    return tokenizer


def check_instances(values: Iterable[T], name: str, types: type | tuple[type, ...], what: str) -> list[T]:
    """Raise a TypeError unless ``values`` is a collection (a list, a tuple) whose every item is one of ``types``.

    The rule for an argument that lists the library's objects (the models of
    an ensemble, the members of a study): a single object, a str or a number
    passed there is named, and so is the first item of another type, never an
    ``AttributeError`` from the loop over them. ``what`` names one item in
    words. Returns the items as a list (which may be empty).

    Examples
    --------
    >>> check_instances([1, 2], "sizes", int, "an int")
    [1, 2]
    >>> check_instances([1, "2"], "sizes", int, "an int")
    Traceback (most recent call last):
    ...
    TypeError: sizes must be a list of which each item is an int; got str '2' at index 1
    """
    names = types if isinstance(types, tuple) else (types,)
    if not all(isinstance(t, type) for t in names):
        raise TypeError(f"types must be a type or a tuple of types; got {types!r}")
    want = f"a list of which each item is {what}"
    if isinstance(values, (str, bytes, Mapping, np.ndarray)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be {want}; got {type(values).__name__} {_shown(values)}")
    out = list(values)
    for i, value in enumerate(out):
        if not isinstance(value, types):
            raise TypeError(f"{name} must be {want}; got {type(value).__name__} {_shown(value)} at index {i}")
    return out


def _shown(value: object) -> str:
    """``repr(value)``, cut to 60 characters for a message."""
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def check_ndim(value: object, name: str, ndim: int | tuple[int, ...]) -> None:
    """Raise a ValueError unless ``value`` (an ndarray, a torch tensor: anything with ``ndim``) has rank ``ndim``.

    ``ndim`` is one rank or a tuple of the ranks allowed. The check for a
    tensor passed to a function that indexes its axes: a tensor of another
    rank is named with its shape, never torch's ``IndexError`` from inside.
    It reads the rank only, in constant time. A value without an integer
    ``ndim`` is a TypeError.

    Examples
    --------
    >>> check_ndim(np.zeros((2, 3)), "input_ids", 2)
    >>> check_ndim(np.zeros(3), "input_ids", 2)
    Traceback (most recent call last):
    ...
    ValueError: input_ids must be 2-D; got shape (3,)
    """
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if not isinstance(ndims, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) for d in ndims):
        raise TypeError(f"ndim must be an int or a tuple of ints; got {type(ndim).__name__} {ndim!r}")
    rank = getattr(value, "ndim", None)
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise TypeError(f"{name} must be an array or a tensor (with ndim); got {type(value).__name__} {_shown(value)}")
    if rank not in ndims:
        want = " or ".join(f"{d}-D" for d in ndims)
        raise ValueError(f"{name} must be {want}; got shape {tuple(getattr(value, 'shape', ()))}")
