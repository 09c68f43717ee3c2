r"""Abstention with a guarantee (conformal NOTA): answer only when the top candidate clears a threshold.

A ranker answers a query with its top candidate when that candidate's
confidence (its conformity score, by default) is ``>= lambda``, and
abstains otherwise. The risk is the error rate among the answered queries,

$$
R(\lambda) = P\bigl(\text{top candidate not relevant} \mid \text{confidence} \ge \lambda\bigr),
$$

a conditional risk that is not monotone in ``lambda``. Learn-then-Test
(:mod:`~uncertank.conformal.ltt`) certifies it: for each threshold of the
grid, from the highest down, the errors among the ``n(lambda)`` calibration
queries answered are binomial given ``n(lambda)``, so the binary
Hoeffding-Bentkus p-value on ``n(lambda)`` samples is valid; fixed-sequence
testing stops at the first threshold not rejected, and the lowest rejected
one is shipped, so that

$$
P\bigl(R(\hat\lambda) \le \alpha\bigr) \ge 1 - \delta.
$$

Thresholds at which fewer than :func:`~uncertank.conformal.levels.min_certifiable`
calibration queries are answered cannot be rejected at all (a p-value is at
least ``(1 - alpha)^n``); as in Angelopoulos & Bates' *Gentle Introduction
to Conformal Prediction* (section on selective classification), they are
left out of the sequence rather than stopping it at once. Which thresholds
are left out depends on the calibration scores, not on their labels.

The none-of-the-above task of Penha & Hauff (:func:`uncertank.uncertainty.make_nota_task`)
is the same decision: :func:`nota_abstention_data` takes its queries'
top scores as the confidence and "the answer was removed" (NOTA) as the
error, so the calibrated threshold answers with an error rate ``<= alpha``
among answered queries.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import Predictions, RankedLists
from uncertank.conformal.calibrated import Answers, ConformalThreshold
from uncertank.conformal.levels import min_certifiable
from uncertank.conformal.lists import top_candidates
from uncertank.conformal.ltt import learn_then_test, threshold_grid
from uncertank.uncertainty.nota import NotaTask
from uncertank.validation import as_float_array, as_label_array, check_instance, check_unit_interval

__all__ = ["abstention_curve", "abstention_data", "answer", "conformal_abstention", "nota_abstention_data"]


def abstention_data(lists: RankedLists) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per query, the top candidate's score (the confidence) and whether it is not relevant (the error).

    Ties break to the earlier position, as in every ranking metric.

    Returns
    -------
    confidence : ndarray of shape (n_queries,)
    errors : ndarray of shape (n_queries,), 0 or 1
    """
    check_instance(lists, "lists", RankedLists, "a RankedLists (scores, labels, offsets)")
    top = top_candidates(lists.scores, lists.offsets)
    return lists.scores[top].astype(np.float64), (lists.labels[top] <= 0).astype(np.int64)


def nota_abstention_data(task: NotaTask) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The NOTA task as abstention data: the top remaining score, and 1 where the answer was removed.

    Answering a NOTA query (``y = 1``) is the error; a query that keeps its
    answer (``y = 0``) is answered correctly in this task, which asks
    whether an answer is there.
    """
    if not isinstance(task, NotaTask):
        raise TypeError(f"task must be a NotaTask (uncertank.uncertainty.make_nota_task); got {type(task).__name__}")
    return task.means[:, 0].astype(np.float64), task.y.astype(np.int64)


def _check_data(confidence: ArrayLike, errors: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    c = as_float_array(confidence, "confidence")
    e = as_label_array(errors, "errors")
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"confidence must be 1-D with at least one query; got shape {c.shape}")
    if e.shape != c.shape:
        raise ValueError(f"errors must have the shape of confidence {c.shape}; got {e.shape}")
    if not np.isfinite(c).all():
        raise ValueError("confidence must be finite")
    if not np.isin(e, (0, 1)).all():
        raise ValueError("errors must be 0 or 1 (1: answering the query is wrong)")
    return c, e.astype(np.int64)


def abstention_curve(
    confidence: ArrayLike, errors: ArrayLike, grid: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per threshold, the queries answered (confidence ``>=`` it) and the errors among them.

    Returns
    -------
    answered, wrong : ndarrays of shape (m,)
    """
    c, e = _check_data(confidence, errors)
    grid = as_float_array(grid, "grid", allow_infinite=True, allow_empty=True)
    order = np.argsort(-c, kind="stable")
    cum = np.concatenate(([0], np.cumsum(e[order])))
    answered = c.size - np.searchsorted(np.sort(c), grid, side="left")
    return answered.astype(np.int64), cum[answered].astype(np.int64)


def conformal_abstention(
    confidence: ArrayLike,
    errors: ArrayLike,
    *,
    alpha: float = 0.1,
    delta: float = 0.1,
    thresholds: ArrayLike | None = None,
    grid_size: int = 1001,
    min_answered: int | None = None,
) -> ConformalThreshold:
    """Calibrate when to answer: the error rate among answered queries ``<= alpha`` with probability ``>= 1 - delta``.

    Parameters
    ----------
    confidence : array-like of shape (n_queries,)
        Per calibration query, the confidence in its top candidate (higher:
        answer first).
    errors : array-like of shape (n_queries,)
        1 where answering the query with its top candidate is wrong.
    alpha : float
        The error rate allowed among answered queries, in (0, 1).
    delta : float
        The probability that the calibration draw breaks the guarantee.
    thresholds : array-like, optional
        The grid to test; by default fixed for confidences in [0, 1] and
        quantiles of the confidences otherwise
        (:func:`~uncertank.conformal.ltt.threshold_grid`).
    grid_size : int
        Points of the default grid.
    min_answered : int, optional
        Leave out the thresholds answering fewer calibration queries (see
        the module notes); :func:`~uncertank.conformal.levels.min_certifiable`
        by default, below which none can be rejected.

    Returns
    -------
    ConformalThreshold
        ``risk="abstain"``; ``threshold`` is ``+inf`` (never answer) with
        ``feasible=False`` when no threshold is certified.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.random(2000)
    >>> wrong = (rng.random(2000) > conf).astype(int)  # a confident answer is more often right
    >>> round(conformal_abstention(conf, wrong, alpha=0.1, delta=0.1).threshold, 3)
    0.801
    """
    alpha = check_unit_interval(alpha, "alpha")
    delta = check_unit_interval(delta, "delta")
    c, e = _check_data(confidence, errors)
    floor = min_certifiable(alpha, delta) if min_answered is None else int(min_answered)
    probabilistic = bool(float(c.min()) >= 0.0 and float(c.max()) <= 1.0)
    grid = threshold_grid(c, probabilistic=probabilistic, thresholds=thresholds, size=grid_size)
    answered, wrong = abstention_curve(c, e, grid)
    keep = answered >= max(floor, 1)
    grid, answered, wrong = grid[keep], answered[keep], wrong[keep]
    risk = np.divide(wrong, answered, out=np.zeros(grid.size), where=answered > 0)
    n_rej, _ = learn_then_test(risk, answered, alpha=alpha, delta=delta, binary=True)
    n = c.size
    if n_rej == 0:
        return ConformalThreshold(
            risk="abstain", method="threshold", alpha=alpha, delta=delta, threshold=np.inf, k=None, n_calibration=n,
            calibration_risk=0.0, feasible=False,
            guarantee=(
                f"no threshold is certified to keep the error rate among answered queries <= {alpha:g} with "
                f"probability >= {1 - delta:g} on {n} calibration queries ({int(e.sum())} of whose top candidates "
                f"are wrong); abstain on every query, or calibrate on more queries"
            ),
        )
    j = n_rej - 1
    return ConformalThreshold(
        risk="abstain", method="threshold", alpha=alpha, delta=delta, threshold=float(grid[j]), k=None,
        n_calibration=n, calibration_risk=float(risk[j]), feasible=True,
        guarantee=(
            f"P(error rate among answered queries <= {alpha:g}) >= {1 - delta:g} over the draw of the {n} "
            f"calibration queries, for new queries exchangeable with them, answering a query only when its top "
            f"candidate's score is >= the threshold (Learn-then-Test: binary Hoeffding-Bentkus p-values, "
            f"fixed-sequence testing from the highest threshold)"
        ),
    )


def answer(scores: Predictions | RankedLists, calibrated: ConformalThreshold) -> Answers:
    """Which queries to answer, with their top candidate, under a calibrated abstention threshold.

    Parameters
    ----------
    scores : Predictions or RankedLists
        Conformity scores of the (test) queries, computed as they were for
        calibration.
    calibrated : ConformalThreshold
        From :func:`conformal_abstention`.
    """
    if not isinstance(calibrated, ConformalThreshold) or calibrated.risk != "abstain":
        raise ValueError("calibrated must be a ConformalThreshold of risk 'abstain' (conformal_abstention)")
    if not isinstance(scores, (Predictions, RankedLists)):
        raise TypeError(f"scores must be Predictions or RankedLists; got {type(scores).__name__}")
    top = top_candidates(scores.scores, scores.offsets)
    t = np.inf if calibrated.threshold is None else float(calibrated.threshold)
    return Answers(scores.scores[top] >= t, top, scores.offsets)
