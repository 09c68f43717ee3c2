"""None-of-the-above (NOTA) prediction from a ranker's scores and uncertainty.

The setting of Penha & Hauff (EACL 2021, section 6.3): in half of the queries
(chosen at random) the relevant candidate is removed, so that none of the
remaining candidates answers the query (label NOTA = 1); in the other half one
random non-relevant candidate is removed (label ANSW = 0), so that every list
keeps the same length. A classifier then predicts NOTA from the remaining
candidates' scores sorted in decreasing order, optionally followed by their
predictive variances in the same order. The classifier is a random forest,
evaluated by stratified 5-fold cross-validation with macro-F1; two feature
sets are compared with a paired t-test over the folds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._optional import require
from uncertank._types import RankedLists
from uncertank.validation import as_float_array, check_instance, check_positive_int, check_seed

__all__ = ["NotaComparison", "NotaResult", "NotaTask", "compare_nota", "evaluate_nota", "make_nota_task"]


def _label(v: float) -> str:
    return repr(int(v)) if float(v).is_integer() else repr(float(v))


@dataclass(frozen=True)
class NotaTask:
    """Features and labels of a NOTA task.

    Attributes
    ----------
    means : ndarray of shape (n_queries, n_candidates - 1)
        The remaining candidates' scores, sorted decreasingly per query.
    variances : ndarray of shape (n_queries, n_candidates - 1) or None
        Their predictive variances, in the same order as ``means``.
    y : ndarray of shape (n_queries,)
        1 for NOTA (the relevant candidate was removed), 0 for ANSW.

    Raises
    ------
    ValueError
        When ``means`` or ``variances`` hold NaN or inf (or are not 2-D),
        ``variances`` is not of the shape of ``means``, ``y`` holds a label
        other than 0 or 1, or ``y`` has not one label per row of ``means``;
        the message names which.
    TypeError
        When a feature or ``y`` is not numeric.
    """

    means: NDArray[np.float64]
    variances: NDArray[np.float64] | None
    y: NDArray[np.int64]

    def __post_init__(self) -> None:
        means = as_float_array(self.means, "means", ndim=2)
        variances = None if self.variances is None else as_float_array(self.variances, "variances", ndim=2)
        if variances is not None and variances.shape != means.shape:
            raise ValueError(f"variances must have the shape of means {means.shape}; got {variances.shape}")
        y = as_float_array(self.y, "y")
        if y.shape != (means.shape[0],):
            raise ValueError(f"y must have one label per row of means, shape ({means.shape[0]},); got {y.shape}")
        bad = (y != 0) & (y != 1)
        if bad.any():
            raise ValueError(f"y must hold 0 (ANSW) or 1 (NOTA) only; got {int(bad.sum())} other labels, "
                             f"e.g. {_label(y[bad][0])}")
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "variances", variances)
        object.__setattr__(self, "y", y.astype(np.int64))

    def features(self, *, use_variance: bool) -> NDArray[np.float64]:
        """The feature matrix: sorted means, plus variances when asked."""
        if not use_variance:
            return self.means
        if self.variances is None:
            raise ValueError("use_variance=True needs variances; make_nota_task got none")
        return np.hstack([self.means, self.variances])


def make_nota_task(
    ranked: RankedLists,
    variances: ArrayLike | None = None,
    *,
    seed: int | np.random.Generator | None = 0,
) -> NotaTask:
    """Build the NOTA task from scored lists with exactly one relevant candidate each.

    Parameters
    ----------
    ranked : RankedLists
        Mean scores and labels; every query has the same number (>= 3) of
        candidates and exactly one with label > 0.
    variances : array of shape (n_pairs,), optional
        Predictive variance of every pair.
    seed : int or Generator
        Chooses the NOTA half and the removed negatives; an integer must be
        ``>= 0``.

    Examples
    --------
    >>> from uncertank import RankedLists
    >>> r = RankedLists.from_dense([[0.9, 0.2, 0.1], [0.3, 0.8, 0.4]], [[1, 0, 0], [0, 1, 0]])
    >>> task = make_nota_task(r, seed=0)
    >>> task.means.shape, int(task.y.sum())
    ((2, 2), 1)
    """
    check_instance(ranked, "ranked", RankedLists, "a RankedLists (scores, labels, offsets)")
    check_seed(seed)
    if not ranked.is_dense:
        raise ValueError("ranked must have the same number of candidates in every query for NOTA")
    scores, labels = ranked.to_dense()
    n_q, length = scores.shape
    if length < 3:
        raise ValueError(f"ranked must have at least 3 candidates per query for NOTA; got {length}")
    if n_q < 2:
        raise ValueError(f"ranked must hold at least 2 queries for NOTA; got {n_q}")
    relevant = labels > 0
    n_rel = relevant.sum(axis=1)
    if (n_rel != 1).any():
        q = int(np.flatnonzero(n_rel != 1)[0])
        raise ValueError(
            f"ranked must have exactly one relevant candidate per query for NOTA; query {q} has {int(n_rel[q])}"
        )
    var = None
    if variances is not None:
        v = as_float_array(variances, "variances")
        if v.shape != (ranked.n_pairs,):
            raise ValueError(f"variances must have shape ({ranked.n_pairs},); got {v.shape}")
        var = v.reshape(n_q, length)
    rng = np.random.default_rng(seed)
    y = np.zeros(n_q, dtype=np.int64)
    y[rng.permutation(n_q)[: n_q // 2]] = 1
    rel_col = np.argmax(relevant, axis=1)
    # A random non-relevant column per query: rank random keys, skipping the relevant one.
    keys = rng.random((n_q, length))
    keys[relevant] = np.inf
    neg_col = np.argmin(keys, axis=1)
    drop = np.where(y == 1, rel_col, neg_col)
    keep = np.ones((n_q, length), dtype=bool)
    keep[np.arange(n_q), drop] = False
    kept_scores = scores[keep].reshape(n_q, length - 1)
    order = np.argsort(-kept_scores, axis=1, kind="stable")
    means = np.take_along_axis(kept_scores, order, axis=1)
    sorted_var = None
    if var is not None:
        sorted_var = np.take_along_axis(var[keep].reshape(n_q, length - 1), order, axis=1)
    return NotaTask(means, sorted_var, y)


@dataclass(frozen=True)
class NotaResult:
    """Cross-validated NOTA prediction.

    Attributes
    ----------
    f1_per_fold : ndarray of shape (n_splits,)
        Macro-F1 on each held-out fold.
    """

    f1_per_fold: NDArray[np.float64]

    @property
    def f1_mean(self) -> float:
        """Mean macro-F1 over the folds."""
        return float(self.f1_per_fold.mean())

    @property
    def f1_std(self) -> float:
        """Standard deviation of macro-F1 over the folds."""
        return float(self.f1_per_fold.std())


def evaluate_nota(
    task: NotaTask,
    *,
    use_variance: bool = False,
    n_splits: int = 5,
    n_estimators: int = 100,
    seed: int = 0,
) -> NotaResult:
    """Macro-F1 of a random forest under stratified k-fold cross-validation.

    Parameters
    ----------
    task : NotaTask
        From :func:`make_nota_task`.
    use_variance : bool
        Append the sorted variances to the sorted means.
    n_splits : int
        Folds (5 in Penha & Hauff).
    n_estimators : int
        Trees in the forest.
    seed : int
        Seeds the folds and the forest: an integer from 0 to ``2**32 - 1``
        (scikit-learn's ``random_state``).

    Raises
    ------
    ValueError
        ``n_splits < 2``, ``n_estimators < 1``, a seed out of range, or a
        class (NOTA or ANSW) with fewer queries than ``n_splits``.
    TypeError
        ``task`` not a :class:`NotaTask`, or a seed that is not an integer.
    """
    require("sklearn", "all", what="NOTA prediction")
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import f1_score
    from sklearn.model_selection import StratifiedKFold

    if not isinstance(task, NotaTask):
        raise TypeError(f"task must be a NotaTask (make_nota_task); got {type(task).__name__}")
    check_positive_int(n_splits, "n_splits", minimum=2)
    check_positive_int(n_estimators, "n_estimators")
    check_seed(seed, allow_none=False, generator=False, maximum=2**32 - 1)
    counts = np.bincount(task.y, minlength=2)
    if counts.min() < n_splits:
        raise ValueError(
            f"task.y must hold at least n_splits={n_splits} queries of each class for stratified folds; "
            f"got {int(counts[0])} ANSW (0) and {int(counts[1])} NOTA (1)"
        )
    x = task.features(use_variance=use_variance)
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    scores = []
    for train, test in folds.split(x, task.y):
        clf = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=1)
        clf.fit(x[train], task.y[train])
        scores.append(f1_score(task.y[test], clf.predict(x[test]), average="macro"))
    return NotaResult(np.asarray(scores, dtype=np.float64))


@dataclass(frozen=True)
class NotaComparison:
    """Means-only against means-plus-variances features, on the same folds.

    Attributes
    ----------
    means_only, with_variance : NotaResult
        The two cross-validated results.
    t_statistic, p_value : float
        Paired t-test over the folds (``scipy.stats.ttest_rel``).
    """

    means_only: NotaResult
    with_variance: NotaResult
    t_statistic: float
    p_value: float


def compare_nota(task: NotaTask, *, n_splits: int = 5, n_estimators: int = 100, seed: int = 0) -> NotaComparison:
    """Does uncertainty help predict NOTA? Both feature sets on the same folds, paired t-test."""
    check_instance(task, "task", NotaTask, "a NotaTask (uncertank.uncertainty.make_nota_task)")
    from scipy.stats import ttest_rel

    if task.variances is None:
        raise ValueError("compare_nota needs variances; make_nota_task got none")
    a = evaluate_nota(task, use_variance=False, n_splits=n_splits, n_estimators=n_estimators, seed=seed)
    b = evaluate_nota(task, use_variance=True, n_splits=n_splits, n_estimators=n_estimators, seed=seed)
    res = ttest_rel(b.f1_per_fold, a.f1_per_fold)
    return NotaComparison(a, b, float(res.statistic), float(res.pvalue))
