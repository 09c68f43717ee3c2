r"""Weighted split conformal under covariate shift (Tibshirani, Barber, Candès & Ramdas, NeurIPS 2019).

When the test queries are drawn differently from the calibration queries
(another domain, another time) but a query's relevance given the query is
the same (covariate shift), split conformal loses its guarantee.
Reweighting restores it: with ``w(x) = dP_test / dP_cal (x)``, the
likelihood ratio of a query's features, the threshold for a test query
``x`` is a quantile of the calibration conformity scores weighted by
``p_i(x) = w(X_i) / (sum_j w(X_j) + w(x))``, with the remaining mass
``w(x) / (sum_j w(X_j) + w(x))`` put on ``-inf`` (a score no set can beat):

$$
\hat t(x) = \sup\Bigl\{t : \sum_{i : c_i < t} p_i(x) \le \alpha - p_{n+1}(x)\Bigr\},
\qquad P\bigl(c_{n+1} \ge \hat t(X_{n+1})\bigr) \ge 1 - \alpha,
$$

for a test query drawn from the shifted distribution (their Corollary 1).
With ``w = 1`` it is the split conformal threshold. Each test query gets
its own threshold; a query whose weight is large compared with the
calibration weights gets ``-inf``, its whole list.

The likelihood ratio is rarely known. :func:`domain_weights` estimates it
with a probabilistic classifier that tells test queries from calibration
queries by their features (TF-IDF of the contexts, embeddings, anything):
``w(x) = P(test | x) / P(cal | x) * n_cal / n_test``. Few calibration
queries that look like the test queries show as a small effective size
``(sum w)^2 / sum w^2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._optional import require
from uncertank._types import Predictions, RankedLists
from uncertank.conformal.calibrated import WeightedSets
from uncertank.conformal.lists import best_relevant
from uncertank.conformal.sets import sets_from_thresholds
from uncertank.validation import as_float_array, check_real, check_unit_interval

__all__ = ["LikelihoodRatioWeights", "domain_weights", "weighted_conformal", "weighted_thresholds"]


@dataclass(frozen=True, eq=False)
class LikelihoodRatioWeights:
    """Estimated likelihood ratios ``dP_test / dP_cal`` of the calibration and the test queries.

    Attributes
    ----------
    calibration : ndarray of shape (n_calibration,)
    test : ndarray of shape (n_test,)
    """

    calibration: NDArray[np.float64]
    test: NDArray[np.float64]

    @property
    def effective_size(self) -> float:
        """``(sum w)^2 / sum w^2`` over the calibration queries."""
        w = self.calibration
        return float(w.sum() ** 2 / (w**2).sum()) if (w > 0).any() else 0.0


class _Sparse(Protocol):
    """A scipy.sparse matrix, as far as it is read here (scipy is untyped here)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def tocsr(self) -> _Sparse: ...


class _Classifier(Protocol):
    """A probabilistic classifier as scikit-learn's: ``fit(x, y)`` then ``predict_proba(x)``."""

    def fit(self, x: NDArray[np.float64] | _Sparse, y: NDArray[np.int64]) -> object: ...

    def predict_proba(self, x: NDArray[np.float64] | _Sparse) -> ArrayLike: ...


def _n_rows(x: object, name: str) -> int:
    shape = getattr(x, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"{name} must be 2-D, one row of features per query; got shape {shape}")
    if shape[0] == 0:
        raise ValueError(f"{name} must hold at least one query")
    return int(shape[0])


def domain_weights(
    calibration_features: ArrayLike | _Sparse, test_features: ArrayLike | _Sparse, *,
    classifier: _Classifier | None = None, clip: float = 1e-6,
) -> LikelihoodRatioWeights:
    """Likelihood-ratio weights from a probabilistic classifier of test against calibration queries.

    Parameters
    ----------
    calibration_features, test_features : array or sparse matrix of shape (n, n_features)
        One row per query (dense or scipy.sparse, e.g. from scikit-learn's
        ``TfidfVectorizer`` over the contexts).
    classifier : object with ``fit`` and ``predict_proba``, optional
        scikit-learn's ``LogisticRegression(max_iter=1000)`` by default
        (needs scikit-learn: ``pip install "uncertank[all]"``).
    clip : float
        ``P(test | x)`` is clipped to ``[clip, 1 - clip]``, so that no weight
        is 0 or infinite.

    Returns
    -------
    LikelihoodRatioWeights
        ``w(x) = p / (1 - p) * n_cal / n_test`` with ``p = P(test | x)``,
        fitted on both sets of features, evaluated on each.
    """
    n_cal = _n_rows(calibration_features, "calibration_features")
    n_test = _n_rows(test_features, "test_features")
    check_real(clip, "clip", minimum=0, maximum=0.5, exclusive_minimum=True, exclusive_maximum=True)
    if classifier is None:
        require("sklearn", "all", what="domain_weights' default classifier")
        from sklearn.linear_model import LogisticRegression

        classifier = LogisticRegression(max_iter=1000)
    if not (hasattr(classifier, "fit") and hasattr(classifier, "predict_proba")):
        raise TypeError(f"classifier must have fit and predict_proba; got {type(classifier).__name__}")
    if hasattr(calibration_features, "tocsr"):
        from scipy import sparse

        x = sparse.vstack([calibration_features, test_features]).tocsr()
    else:
        x = np.vstack([np.asarray(calibration_features), np.asarray(test_features)])
    y = np.concatenate([np.zeros(n_cal, dtype=np.int64), np.ones(n_test, dtype=np.int64)])
    classifier.fit(x, y)
    p = np.clip(np.asarray(classifier.predict_proba(x), dtype=np.float64)[:, 1], clip, 1.0 - clip)
    w = p / (1.0 - p) * (n_cal / n_test)
    return LikelihoodRatioWeights(w[:n_cal], w[n_cal:])


def weighted_thresholds(
    conformity: ArrayLike, calibration_weights: ArrayLike, test_weights: ArrayLike, *, alpha: float = 0.1
) -> NDArray[np.float64]:
    """The weighted split conformal threshold of every test query.

    Parameters
    ----------
    conformity : array-like of shape (n_calibration,)
        Per calibration query, its conformity score (``-inf`` allowed).
    calibration_weights : array-like of shape (n_calibration,)
        Likelihood ratios of the calibration queries, ``>= 0``.
    test_weights : array-like of shape (n_test,)
        Likelihood ratios of the test queries, ``>= 0``.
    alpha : float
        Miscoverage level in (0, 1).

    Returns
    -------
    ndarray of shape (n_test,)
        ``-inf`` where no finite threshold is valid. With equal weights,
        every entry is :func:`~uncertank.conformal.sets.conformal_quantile`.

    Examples
    --------
    >>> weighted_thresholds([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], [1.0] * 9, [1.0, 4.0], alpha=0.2).tolist()
    [0.2, -inf]
    """
    alpha = check_unit_interval(alpha, "alpha")
    c = np.asarray(conformity)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"conformity must be numeric (real numbers); got dtype {c.dtype}")
    c = c.astype(np.float64)
    wc = as_float_array(calibration_weights, "calibration_weights")
    wt = as_float_array(test_weights, "test_weights")
    if c.ndim != 1 or c.size == 0 or wc.shape != c.shape:
        raise ValueError(f"conformity and calibration_weights must be 1-D of one length; got {c.shape}, {wc.shape}")
    if wt.ndim != 1:
        raise ValueError(f"test_weights must be 1-D; got shape {wt.shape}")
    for w, name in ((wc, "calibration_weights"), (wt, "test_weights")):
        if w.size and (not np.isfinite(w).all() or float(w.min()) < 0.0):
            raise ValueError(f"{name} must be finite and >= 0")
    if np.isnan(c).any():
        raise ValueError("conformity must not hold NaN")
    if not float(wc.sum()) > 0.0:
        raise ValueError("calibration_weights must not all be 0")
    order = np.argsort(c, kind="stable")
    cs, cum = c[order], np.cumsum(wc[order])
    total = cum[-1]
    budget = alpha * (total + wt) - wt  # the calibration mass below the threshold may not exceed this
    k = np.searchsorted(cum, budget * (1 + 1e-12), side="right")  # queries wholly below the threshold
    return np.where(budget < 0, -np.inf, cs[np.minimum(k, cs.size - 1)])


def weighted_conformal(
    calibration: RankedLists,
    test: Predictions | RankedLists,
    weights: LikelihoodRatioWeights,
    *,
    alpha: float = 0.1,
) -> WeightedSets:
    """Weighted split conformal candidate sets for test queries under covariate shift.

    Parameters
    ----------
    calibration : RankedLists
        Conformity scores and labels of the calibration queries.
    test : Predictions or RankedLists
        Conformity scores of the test queries.
    weights : LikelihoodRatioWeights
        One weight per calibration and per test query (:func:`domain_weights`).
    alpha : float
        Miscoverage level in (0, 1).

    Returns
    -------
    WeightedSets
    """
    if not isinstance(weights, LikelihoodRatioWeights):
        raise TypeError(f"weights must be LikelihoodRatioWeights (domain_weights); got {type(weights).__name__}")
    if weights.calibration.size != calibration.n_queries:
        raise ValueError(f"weights.calibration must hold one weight per calibration query "
                         f"({calibration.n_queries}); got {weights.calibration.size}")
    n_test = int(test.offsets.size - 1)
    if weights.test.size != n_test:
        raise ValueError(f"weights.test must hold one weight per test query ({n_test}); got {weights.test.size}")
    c = best_relevant(calibration.scores, calibration.labels, calibration.offsets)
    t = weighted_thresholds(c, weights.calibration, weights.test, alpha=alpha)
    return WeightedSets(sets_from_thresholds(test, t), t, float(alpha), calibration.n_queries,
                        weights.effective_size)
