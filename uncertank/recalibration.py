"""Post-hoc recalibration of scores into probabilities, fitted on validation data.

Built-in recalibrators (registered through ``uncertank_recalibrators``;
each a class with ``fit(scores, labels) -> self`` and ``transform(scores)
-> probs`` on flat arrays of shape (n_pairs,)):

- ``"temperature"``: temperature scaling, ``p = sigmoid(logit(s) / T)``
  with ``T > 0`` (Guo et al. 2017), for scores that are probabilities (or
  logits, with ``inputs="logits"``).
- ``"platt"``: Platt scaling, ``p = sigmoid(a * s + b)`` (Platt 1999), with
  the slope constrained to ``a >= 0``.
- ``"isotonic"``: isotonic regression (Zadrozny & Elkan 2002), through
  scikit-learn's ``IsotonicRegression``.
- ``"histogram"``: histogram binning (Zadrozny & Elkan 2001): equal-mass
  bins of the validation scores, each mapped to its fraction relevant, with
  adjacent bins pooled where that fraction would decrease.

Rank preservation
-----------------
A recalibrator reports calibrated probabilities *beside* the raw scores; it
must not change the ranking it calibrates. Every built-in map is
non-decreasing in the score, so it never reverses the order of two
candidates. Unconstrained Platt scaling can: on lists whose scores are
anticorrelated with relevance (BM25-sampled negatives that outscore the
positive) maximum likelihood picks a negative slope and turns the ranking
upside down. Here the slope is bounded below by 0; at ``a = 0`` every score
gets the base rate.

Ties
----
Temperature and Platt scaling (with ``a > 0``) are strictly increasing and
keep every order. Both work in logits and take the sigmoid in a form that
does not round to 0 below ``z = -36`` (``exp(z) / (1 + exp(z))``), so the
only ties float64 can force are among probabilities within about 1e-16 of 1.
Temperature scaling's search is bounded so that this never happens to the
validation scores or to any score in [0.01, 0.99] (see
:class:`TemperatureScaling`). Isotonic regression and histogram binning are step
functions: candidates whose scores fall on the same step get the same
probability, and the ranking metrics then order them by input position (the
tie rule of :mod:`uncertank.metrics.ranking`). Rank by the raw scores and
use the recalibrated probabilities for the calibration metrics, or break
their ties by the raw score.

Degenerate validation data
--------------------------
Validation scores that are all equal (to within 1e-12 of their magnitude),
or labels of one class only, say nothing about how probability should
change with the score: maximum likelihood then runs to a bound (Platt's
slope to 1e16 on the rounding noise of a constant score, the intercept to
minus infinity on negatives only) and the fitted map turns every score
into 0, 1 or one shared value. Every built-in detects these two cases,
warns with :class:`DegenerateDataWarning`, records the reason in
``fallback_`` and falls back to a strictly increasing map that keeps every
order:

- temperature scaling: ``T = 1``, the scores as they are (it has no shift);
- Platt scaling, isotonic regression and histogram binning: the base rate
  shifted in logit space, ``p = sigmoid((s - mean) / sd + logit(r))`` with
  ``r = (n_relevant + 1) / (n + 2)`` (Laplace's rule of succession, never 0
  or 1) and ``sd`` the standard deviation of the validation scores (1 when
  they are constant): the mean validation score gets the smoothed base
  rate, and a score one standard deviation higher has odds e times higher.

Examples
--------
>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", DegenerateDataWarning)
...     cal = PlattScaling().fit([0.3, 0.3, 0.3, 0.3], [0, 1, 0, 0])
>>> cal.fallback_
'the validation scores are all equal (0.3)'
>>> cal.transform([0.1, 0.2999, 0.3, 0.3001]).round(5).tolist()
[0.29046, 0.33331, 0.33333, 0.33336]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from typing_extensions import Self

from uncertank._optional import require
from uncertank.hookspecs import hookimpl
from uncertank.validation import (
    as_float_array,
    as_label_array,
    check_choice,
    check_positive_int,
    check_probabilities,
    check_same_length,
)

__all__ = [
    "DegenerateDataWarning",
    "NotConvergedWarning",
    "HistogramBinning",
    "IsotonicCalibration",
    "PlattScaling",
    "Recalibrator",
    "TemperatureScaling",
]

_EPS = 1e-12
#: logit(1 - 1e-12): the largest |logit| a fitted map may give a validation score.
_Z_MAX = float(np.log1p(-_EPS) - np.log(_EPS))
#: logit(0.99): scores in [0.01, 0.99] always keep distinct probabilities.
_Z_KEEP = float(np.log(0.99) - np.log(0.01))
#: Relative spread below which validation scores count as constant.
_CONSTANT_RTOL = 1e-12

Inputs = Literal["probabilities", "logits"]


class NotConvergedWarning(UserWarning):
    """A recalibrator's likelihood fit stopped before its optimiser converged; ``converged_`` is False."""


class DegenerateDataWarning(UserWarning):
    """A recalibrator was fitted on data that cannot identify it and fell back to an order-keeping map.

    Raised (as a warning) by ``fit`` when the validation scores are all
    equal or the labels are of one class only; see the module notes.
    """


def _logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """The exact logit, ``-inf`` at 0 and ``inf`` at 1: no clipping, so no two scores are tied by it."""
    with np.errstate(divide="ignore"):
        out: NDArray[np.float64] = np.log(p) - np.log1p(-p)
    return out


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``1 / (1 + exp(-z))`` without rounding to 0 for negative ``z`` (down to ``z = -745``)."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    e = np.exp(z[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _degenerate(x: NDArray[np.float64], y: NDArray[np.float64]) -> str | None:
    """Why ``(x, y)`` cannot identify a recalibrator, or None when it can."""
    spread = float(x.max() - x.min())
    if spread <= _CONSTANT_RTOL * max(1.0, float(np.abs(x).max())):
        return f"the validation scores are all equal ({float(x[0]):.6g})"
    n_rel = int(y.sum())
    if n_rel == 0:
        return f"the validation labels are all non-relevant (0 of {y.size} relevant)"
    if n_rel == y.size:
        return f"the validation labels are all relevant ({y.size} of {y.size})"
    return None


def _base_rate_shift(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """Slope and intercept of ``sigmoid((x - mean) / sd + logit(r))``, ``r = (n_rel + 1) / (n + 2)``."""
    r = (float(y.sum()) + 1.0) / (y.size + 2.0)
    spread = float(x.max() - x.min())
    sd = float(x.std()) if spread > _CONSTANT_RTOL * max(1.0, float(np.abs(x).max())) else 1.0
    a = 1.0 / sd
    return a, float(np.log(r) - np.log1p(-r)) - a * float(x.mean())


class Recalibrator:
    """Base class: validates inputs and fitted state, then calls ``_fit`` / ``_transform``.

    Subclasses implement ``_fit(x, y)`` on float64 scores of shape
    (n_pairs,) and 0/1 relevance of the same shape, and ``_transform(x)``
    returning probabilities of shape (n_pairs,). ``fitted_attributes`` names
    the attributes ``_fit`` sets.
    """

    #: Attributes that are None until ``fit`` has run.
    fitted_attributes: tuple[str, ...] = ()
    #: Whether ``fit`` and ``transform`` need scores in [0, 1].
    needs_probabilities: bool = False
    #: Why the last ``fit`` fell back to an order-keeping map (see the module notes), or None.
    fallback_: str | None = None
    #: Whether the last ``fit``'s optimiser converged (None for a map fitted without one, or after a fallback).
    converged_: bool | None = None
    #: Slope and intercept of the base-rate shift used after a fallback (subclasses may use their own).
    _shift: tuple[float, float] | None = None

    def fit(self, scores: ArrayLike, labels: ArrayLike) -> Self:
        """Fit on validation scores of shape (n_pairs,) and labels (``> 0`` is relevant).

        Scores that are all equal, or labels of one class only, cannot
        identify the map: the recalibrator then warns with
        :class:`DegenerateDataWarning`, sets ``fallback_`` to the reason and
        uses the order-keeping map of the module notes.

        Returns
        -------
        self
        """
        x = self._scores(scores)
        y = (as_label_array(labels, "labels") > 0).astype(np.float64)
        check_same_length(x, "scores", y, "labels")
        self._shift = None
        self.converged_ = None
        spread = float(np.max(x) - np.min(x))
        if not np.isfinite(spread) or not np.isfinite(float(np.mean(x))):
            raise ValueError(f"scores must span less than the largest float (their spread and mean must be "
                             f"finite); got scores from {float(np.min(x))!r} to {float(np.max(x))!r}")
        self.fallback_ = _degenerate(x, y)
        if self.fallback_ is None:
            self._fit(x, y)
            if self.converged_ is False:
                warnings.warn(f"{type(self).__name__}.fit did not converge; the fitted map is the optimiser's "
                              "last iterate (converged_ is False)", NotConvergedWarning, stacklevel=2)
            return self
        what = self._fit_fallback(x, y)
        warnings.warn(
            f"{type(self).__name__}.fit: {self.fallback_}, which cannot identify the map; "
            f"falling back to {what}, which keeps every order",
            DegenerateDataWarning,
            stacklevel=2,
        )
        return self

    def transform(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities of relevance, shape (n_pairs,), in [0, 1].

        The promise of every built-in map: each value lies in [0, 1], and the
        map is non-decreasing in the score, so a higher score never gets a
        lower probability (the order of two distinct scores is never
        reversed; see the module notes on ties). ``tests/properties`` holds
        every built-in to it on random data.
        """
        if self._shift is None and any(getattr(self, a) is None for a in self.fitted_attributes):
            raise RuntimeError(f"{type(self).__name__} must be fitted before transform(); call fit() first")
        x = self._scores(scores)
        if self._shift is not None:
            a, b = self._shift
            return _sigmoid(a * x + b)
        return self._transform(x)

    def fit_transform(self, scores: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
        """``fit(scores, labels).transform(scores)``."""
        self.fit(scores, labels)
        return self.transform(scores)

    def _scores(self, scores: ArrayLike) -> NDArray[np.float64]:
        x = as_float_array(scores, "scores")
        if self.needs_probabilities:
            check_probabilities(x, "scores")
        return x

    def _fit(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        raise NotImplementedError

    def _fit_fallback(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> str:
        """Fit the order-keeping fallback on degenerate data; return its description for the warning."""
        for name in self.fitted_attributes:
            setattr(self, name, None)
        self._shift = _base_rate_shift(x, y)
        return "the base rate shifted in logit space, sigmoid((s - mean) / sd + logit((n_relevant + 1) / (n + 2)))"

    def _transform(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        raise NotImplementedError


def _nll_affine(
    params: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]]:
    a, b = params
    z = a * x + b
    loss = np.logaddexp(0.0, z) - y * z  # log(1 + exp(z)) - y z, stable
    g = _sigmoid(z) - y
    return float(loss.sum()), np.array([float((g * x).sum()), float(g.sum())])


class PlattScaling(Recalibrator):
    r"""Platt scaling with a non-negative slope: ``p = sigmoid(a * score + b)``, ``a >= 0``.

    Maximum likelihood (L-BFGS-B, on standardised scores) under the bound
    ``a >= 0`` (Platt 1999). With the bound the map is non-decreasing, so it
    never reverses a ranking; where the unconstrained optimum has a negative
    slope, the constrained one is ``a = 0`` and every score gets the base
    rate $\bar y$ (``b = logit(mean(y))``). On constant scores or labels of
    one class only the fit falls back to the base-rate shift of the module
    notes (``a = 1 / sd``, ``b`` giving the smoothed base rate at the mean).

    Parameters
    ----------
    nonnegative_slope : bool
        Keep the bound (default). False gives ordinary Platt scaling, which
        can reverse rankings: for comparison only.

    Attributes
    ----------
    a_, b_ : float
        The fitted slope and intercept on the original score scale.
    converged_ : bool or None
        Whether L-BFGS-B converged, or stopped (its line search can, at
        tolerances finer than float64 resolves) where the projected gradient
        is about zero (at most 1e-6 per pair); None after a fallback. A fit
        that did not converge warns with :class:`NotConvergedWarning`.

    Examples
    --------
    Scores that rank the relevant pair last: unconstrained Platt learns a
    negative slope, the default keeps ``a = 0`` (the base rate, 1/3).

    >>> s, y = [3.0, 2.0, 1.0, 3.5, 2.5, 0.5], [0, 0, 1, 0, 0, 1]
    >>> round(PlattScaling(nonnegative_slope=False).fit(s, y).a_, 2) < 0
    True
    >>> cal = PlattScaling().fit(s, y)
    >>> cal.a_, cal.transform([0.0, 5.0]).round(4).tolist()
    (0.0, [0.3333, 0.3333])
    """

    fitted_attributes = ("a_", "b_")

    def __init__(self, *, nonnegative_slope: bool = True) -> None:
        if not isinstance(nonnegative_slope, (bool, np.bool_)):
            raise TypeError(f"nonnegative_slope must be a bool; got {type(nonnegative_slope).__name__}")
        self.nonnegative_slope = bool(nonnegative_slope)
        self.a_: float | None = None
        self.b_: float | None = None

    def _fit(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        from scipy.optimize import minimize

        mu, sd = float(x.mean()), float(x.std())
        sd = sd if sd > 0 else 1.0
        xs = (x - mu) / sd
        bounds = [(0.0, None), (None, None)] if self.nonnegative_slope else None
        res = minimize(_nll_affine, np.array([1.0, 0.0]), args=(xs, y), jac=True, method="L-BFGS-B",
                       bounds=bounds, options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-10})
        a_s, b_s = (float(v) for v in res.x)
        # L-BFGS-B can stop on its line search ("ABNORMAL") at the optimum itself, where the tolerances above
        # ask more than float64 gives; a projected gradient of about zero is the optimum all the same
        grad = np.asarray(res.jac, dtype=np.float64).copy()
        if bounds is not None and a_s <= 0.0:
            grad[0] = min(grad[0], 0.0)  # at the bound a = 0 only a push into a > 0 is a gradient
        at_optimum = bool(np.all(np.isfinite(grad))) and float(np.max(np.abs(grad))) <= 1e-6 * max(1.0, y.size)
        self.converged_ = bool(np.isfinite(res.x).all()) and (bool(res.success) or at_optimum)
        self.a_ = a_s / sd
        self.b_ = b_s - a_s * mu / sd

    def _fit_fallback(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> str:
        self.a_, self.b_ = _base_rate_shift(x, y)
        return (f"a = {self.a_:.6g} (one unit per standard deviation of the scores) and b = {self.b_:.6g} "
                "(the base rate (n_relevant + 1) / (n + 2) at their mean)")

    def _transform(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        assert self.a_ is not None and self.b_ is not None  # checked in transform()
        return _sigmoid(self.a_ * x + self.b_)


class TemperatureScaling(Recalibrator):
    """Temperature scaling: ``p = sigmoid(z / T)`` with ``T > 0`` fitted by likelihood (Guo et al. 2017).

    ``z`` is the logit of the score (``inputs="probabilities"``, the
    default: scores in [0, 1]; 0 and 1 map to 0 and 1) or the score itself
    (``inputs="logits"``). One positive scale, computed in logits with a
    sigmoid that does not round small probabilities to 0, so the order of
    the scores is kept.

    The temperature is searched in ``[T_min, exp(5)]`` with ``T_min =
    max(|z|_max, logit(0.99)) / logit(1 - 1e-12)``, ``|z|_max`` the largest
    absolute logit of the validation scores (those within 1e-12 of 0 or 1
    counted at 1e-12 in the fit): the sharpest temperature that keeps every
    validation score, and every score in [0.01, 0.99], at least 1e-12 from
    0 and 1, where float64 still tells neighbouring probabilities apart. A
    smaller temperature (the likelihood runs there on separable data) would
    round the largest scores to exactly 1.0, tying them; at either bound
    every such order is kept strictly. On constant scores or labels of one
    class only it falls back to ``T = 1`` (the scores as they are; see the
    module notes).

    Parameters
    ----------
    inputs : {"probabilities", "logits"}
        What the scores are.

    Attributes
    ----------
    temperature_ : float
        The fitted temperature.
    temperature_bounds_ : tuple of float
        ``(T_min, exp(5))``, the range searched.
    converged_ : bool or None
        Whether the bounded search converged (None after a fallback); a fit
        that did not warns with :class:`NotConvergedWarning`.

    Examples
    --------
    >>> cal = TemperatureScaling().fit([0.9, 0.8, 0.2, 0.7], [1, 0, 0, 1])
    >>> bool(cal.temperature_ > 0)
    True

    Separable validation data drive the temperature to its lower bound;
    the order of new scores is still kept:

    >>> cal = TemperatureScaling().fit([0.9, 0.1], [1, 0])
    >>> round(cal.temperature_, 4), [float(f"{p:.3g}") for p in cal.transform([0.62, 0.7, 0.1])]
    (0.1663, [0.95, 0.994, 1.83e-06])
    """

    fitted_attributes = ("temperature_",)

    def __init__(self, *, inputs: Inputs = "probabilities") -> None:
        self.inputs: Inputs = check_choice(inputs, "inputs", ("probabilities", "logits"))
        self.needs_probabilities = self.inputs == "probabilities"
        self.temperature_: float | None = None
        self.temperature_bounds_: tuple[float, float] | None = None

    def _logits(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        return _logit(x) if self.needs_probabilities else x

    def _fit(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        from scipy.optimize import minimize_scalar

        z = self._logits(np.clip(x, _EPS, 1 - _EPS) if self.needs_probabilities else x)
        t_max = float(np.exp(5.0))
        t_min = min(max(float(np.exp(-5.0)), max(float(np.abs(z).max()), _Z_KEEP) / _Z_MAX), t_max)
        self.temperature_bounds_ = (t_min, t_max)

        def nll(log_t: float) -> float:
            zt = z / np.exp(log_t)
            return float((np.logaddexp(0.0, zt) - y * zt).sum())

        res = minimize_scalar(nll, bounds=(np.log(t_min), np.log(t_max)), method="bounded",
                              options={"xatol": 1e-10})
        self.temperature_ = float(np.clip(np.exp(res.x), t_min, t_max))
        self.converged_ = bool(res.success) and bool(np.isfinite(res.x))

    def _fit_fallback(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> str:
        self.temperature_ = 1.0
        self.temperature_bounds_ = None
        return "T = 1 (the scores as they are)"

    def _transform(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        assert self.temperature_ is not None  # checked in transform()
        return _sigmoid(self._logits(x) / self.temperature_)


class IsotonicCalibration(Recalibrator):
    """Isotonic regression of relevance on the score (Zadrozny & Elkan 2002), by scikit-learn.

    The least-squares non-decreasing step function of the score, fitted by
    scikit-learn's ``IsotonicRegression(increasing=True, y_min=0, y_max=1,
    out_of_bounds="clip")``; between fitted points it interpolates linearly,
    outside them it clips. Non-decreasing, so no order is reversed; flat
    steps tie the scores they cover (see the module notes). On constant
    scores or labels of one class only (where the fit is one flat step) it
    falls back to the base-rate shift of the module notes.

    Attributes
    ----------
    model_ : sklearn.isotonic.IsotonicRegression or None
        The fitted regression; None after a fallback.

    Examples
    --------
    >>> cal = IsotonicCalibration().fit([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    >>> cal.transform([0.1, 0.25, 0.4]).tolist()
    [0.0, 0.5, 1.0]
    """

    fitted_attributes = ("model_",)

    def __init__(self) -> None:
        self.model_: Any = None  # scikit-learn's IsotonicRegression (scikit-learn is untyped here)

    def _fit(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        isotonic = require("sklearn.isotonic", "all", what="isotonic recalibration (scikit-learn)")
        self.model_ = isotonic.IsotonicRegression(increasing=True, y_min=0.0, y_max=1.0,
                                                  out_of_bounds="clip").fit(x, y)

    def _transform(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = np.asarray(self.model_.predict(x), dtype=np.float64)
        return out


def _pool_adjacent_violators(values: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """The weighted least-squares non-decreasing fit to ``values`` (shape (n,)), by pooling."""
    means: list[float] = []
    wts: list[float] = []
    sizes: list[int] = []
    for v, w in zip(values.tolist(), weights.tolist(), strict=True):
        means.append(v)
        wts.append(w)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            w2 = wts[-2] + wts[-1]
            m = (means[-2] * wts[-2] + means[-1] * wts[-1]) / w2 if w2 > 0 else means[-1]
            size = sizes[-2] + sizes[-1]
            del means[-1], wts[-1], sizes[-1]
            means[-1], wts[-1], sizes[-1] = m, w2, size
    return np.repeat(np.asarray(means, dtype=np.float64), sizes)


class HistogramBinning(Recalibrator):
    """Histogram binning (Zadrozny & Elkan 2001), made non-decreasing.

    The validation scores are split into ``n_bins`` equal-mass bins (edges
    at their quantiles; tied scores share a bin, so a bin may be empty);
    each bin maps to its fraction of relevant pairs. Plain binning can give
    a higher bin a lower fraction and so reverse rankings; here adjacent
    bins whose fractions decrease are pooled (pool-adjacent-violators,
    weighted by bin counts), which keeps the map non-decreasing. An empty
    bin takes the value of the bin below it (the lowest non-empty one for
    leading empties). A score maps to the bin its value falls in, with
    scores below the first or above the last edge in the first or last
    bin. Every score in a bin gets the same probability (ties; see the
    module notes). On constant scores or labels of one class only (one
    flat bin) it falls back to the base-rate shift of the module notes.

    Parameters
    ----------
    n_bins : int
        Number of bins, ``>= 1``; default 10.

    Attributes
    ----------
    edges_ : ndarray of shape (n_bins + 1,) or None
        The bin edges (quantiles of the validation scores); None after a fallback.
    values_ : ndarray of shape (n_bins,) or None
        The probability of each bin; None after a fallback.

    Examples
    --------
    >>> cal = HistogramBinning(n_bins=2).fit([0.1, 0.2, 0.7, 0.9], [0, 1, 1, 1])
    >>> cal.values_.tolist(), cal.transform([0.0, 0.15, 0.8]).tolist()
    ([0.5, 1.0], [0.5, 0.5, 1.0])
    """

    fitted_attributes = ("edges_", "values_")

    def __init__(self, *, n_bins: int = 10) -> None:
        self.n_bins = check_positive_int(n_bins, "n_bins")
        self.edges_: NDArray[np.float64] | None = None
        self.values_: NDArray[np.float64] | None = None

    def _bin(self, x: NDArray[np.float64]) -> NDArray[np.intp]:
        assert self.edges_ is not None  # set by _fit before use
        return np.searchsorted(self.edges_[1:-1], x, side="right")

    def _fit(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> None:
        self.edges_ = np.quantile(x, np.linspace(0.0, 1.0, self.n_bins + 1))
        idx = self._bin(x)
        counts = np.bincount(idx, minlength=self.n_bins).astype(np.float64)
        pos = np.bincount(idx, weights=y, minlength=self.n_bins)
        frac = np.divide(pos, counts, out=np.full(self.n_bins, np.nan), where=counts > 0)
        full = np.flatnonzero(counts > 0)
        pooled = _pool_adjacent_violators(frac[full], counts[full])
        values = np.empty(self.n_bins)
        # an empty bin takes the value of the nearest non-empty bin below (or the first one)
        src = np.maximum(np.searchsorted(full, np.arange(self.n_bins), side="right") - 1, 0)
        values[:] = pooled[src]
        values[full] = pooled
        self.values_ = values

    def _transform(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        assert self.values_ is not None  # checked in transform()
        out: NDArray[np.float64] = self.values_[self._bin(x)]
        return out


@hookimpl
def uncertank_recalibrators() -> dict[str, Callable[..., object]]:
    """Register the built-in recalibrators."""
    return {
        "temperature": TemperatureScaling,
        "platt": PlattScaling,
        "isotonic": IsotonicCalibration,
        "histogram": HistogramBinning,
    }
