"""The conformance check of recalibrators: :func:`check_recalibrator`."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from uncertank.testing._errors import ConformanceError, guard

__all__ = ["check_recalibrator"]


def check_recalibrator(
    recalibrator: object,
    scores: ArrayLike | None = None,
    labels: ArrayLike | None = None,
    *,
    seed: int = 0,
) -> list[str]:
    """Check a recalibrator (what the ``uncertank_recalibrators`` hook registers).

    The checks, on ``scores`` and ``labels`` (by default 2,000 seeded scores
    in (0, 1) with labels drawn at those rates) and again on a set where
    relevance *falls* with the score (where unconstrained Platt scaling
    would reverse the ranking):

    ``fit``
        A fresh object from the factory; ``fit(scores, labels)`` returns it.
    ``transform``
        ``transform(scores)`` gives finite probabilities in [0, 1], shape (n_pairs,),
        the same on a second call.
    ``order kept``
        The map is non-decreasing: on a grid over the scores' range, a higher
        score never gets a lower probability, so recalibrating never reorders
        a ranking (ties are allowed).

    Parameters
    ----------
    recalibrator : class or callable
        The registered factory, called with no argument.
    scores, labels : array-like of shape (n_pairs,), optional
        Validation data of your own (scores in [0, 1] when the recalibrator
        needs probabilities).
    seed : int
        Seeds the default data.

    Returns
    -------
    list of str
        The checks that ran and passed.

    Raises
    ------
    ConformanceError
        When a check fails, or the recalibrator raises inside one (the
        original kept as ``__cause__``).
    TypeError, ValueError
        When ``recalibrator`` is not callable, or only one of ``scores`` and
        ``labels`` is given.

    Examples
    --------
    >>> from uncertank.plugins import get_factory
    >>> check_recalibrator(get_factory("recalibrators", "platt"))
    ['fit', 'transform', 'order kept']
    """
    if not callable(recalibrator):
        raise TypeError(f"recalibrator must be a class or factory; got {type(recalibrator).__name__}")
    if (scores is None) != (labels is None):
        raise ValueError("scores and labels go together: give both or neither")
    who = getattr(recalibrator, "__name__", type(recalibrator).__name__)
    rng = np.random.default_rng(seed)
    if scores is None:
        x = rng.uniform(0.01, 0.99, size=2000)
        y = (rng.random(x.size) < x).astype(np.int64)
    else:
        x = np.asarray(scores, dtype=np.float64)
        y = np.asarray(labels)
    reverse = rng.uniform(0.01, 0.99, size=2000)
    cases = [("the given data" if scores is not None else "seeded data", x, y),
             ("relevance falling with the score", reverse, (rng.random(reverse.size) < 1 - reverse).astype(np.int64))]

    def fail(check: str, message: str) -> ConformanceError:
        return ConformanceError(f"recalibrator {who!r} fails check {check!r}: {message}")

    for what, xs, ys in cases:
        with guard(fail, "fit"):
            obj = recalibrator()
            fitted = obj.fit(xs, ys)
        if fitted is not obj:
            raise fail("fit", f"fit must return the recalibrator itself (self); got {type(fitted).__name__}")
        with guard(fail, "transform"):
            out = np.asarray(obj.transform(xs), dtype=np.float64)
            if out.shape != xs.shape or not np.isfinite(out).all() or ((out < 0) | (out > 1)).any():
                raise fail("transform", f"transform must give finite probabilities in [0, 1] of shape {xs.shape} "
                           f"({what})")
            if not np.array_equal(out, np.asarray(obj.transform(xs), dtype=np.float64)):
                raise fail("transform", f"transform must give the same output twice ({what})")
        grid = np.linspace(float(xs.min()), float(xs.max()), 201)
        with guard(fail, "order kept"):
            mapped = np.asarray(obj.transform(grid), dtype=np.float64)
        drops = np.flatnonzero(np.diff(mapped) < -1e-12)
        if drops.size:
            i = int(drops[0])
            raise fail("order kept", f"the map must be non-decreasing, or it reorders the ranking it calibrates; "
                       f"{grid[i]:.4g} -> {mapped[i]:.4g} but {grid[i + 1]:.4g} -> {mapped[i + 1]:.4g} ({what})")
    return ["fit", "transform", "order kept"]
