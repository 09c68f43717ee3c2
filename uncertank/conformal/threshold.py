"""A threshold to ship: calibrate any ranker's predictions for the risk the user names, then apply it.

:func:`calibrate_threshold` is the user's question from Python, as
``uncertank threshold`` is from the command line: given a ranker's
predictions on labelled calibration queries, a risk and its levels, it
returns a :class:`~uncertank.conformal.ConformalThreshold` (the threshold
or ``k``, the guarantee it carries, the calibration size). The risks:

=============  ==========================================  ======================  =================
``risk``       controls                                    procedure               guarantee
=============  ==========================================  ======================  =================
``coverage``   a relevant candidate in the set             split conformal         ``P >= 1 - alpha``
``miss``       the miss rate ``1 - recall`` of the set     conformal risk control  ``E <= alpha``
``fdr``        the false discovery rate of the set         Learn-then-Test         ``w.p. >= 1 - delta``
``abstain``    the error rate among the queries answered   Learn-then-Test         ``w.p. >= 1 - delta``
=============  ==========================================  ======================  =================

The threshold remembers the conformity score it was calibrated on
(:mod:`~uncertank.conformal.scores`), so :func:`apply_threshold` scores new
predictions the same way before building their sets or answers.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from numpy.typing import ArrayLike

from uncertank._types import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.conformal.abstention import abstention_data, answer, conformal_abstention
from uncertank.conformal.calibrated import Answers, CandidateSets, ConformalThreshold
from uncertank.conformal.fdr import fdr_control
from uncertank.conformal.risk_control import conformal_risk_control
from uncertank.conformal.scores import Score, conformity_scores, labelled_scores, resolve_score
from uncertank.conformal.sets import candidate_sets, split_conformal
from uncertank.validation import check_choice, check_unit_interval

__all__ = ["RISKS", "apply_threshold", "calibrate_threshold"]

#: The risks a threshold can control.
RISKS: tuple[str, ...] = ("coverage", "miss", "fdr", "abstain")
_METHODS = {"coverage": ("threshold", "topk", "aps"), "miss": ("threshold", "topk"), "fdr": ("threshold",),
            "abstain": ("threshold",)}


def calibrate_threshold(
    predictions: Predictions | PredictiveSamples | RankedLists | ArrayLike,
    labels: ArrayLike | QuerySet | None = None,
    *,
    risk: Literal["coverage", "miss", "fdr", "abstain"] = "miss",
    alpha: float = 0.1,
    delta: float = 0.1,
    method: Literal["threshold", "topk", "aps"] = "threshold",
    score: Score = "auto",
    quantile: float = 0.1,
    k_std: float = 1.0,
    mass: Literal["auto", "sum", "softmax"] = "auto",
    thresholds: ArrayLike | None = None,
) -> ConformalThreshold:
    """Calibrate a threshold (or ``k``) on labelled calibration queries, for the risk named.

    Parameters
    ----------
    predictions : Predictions, PredictiveSamples, RankedLists or array of shape (n_queries, n_candidates)
        The ranker's output on the calibration queries (held out from the
        test queries: :func:`~uncertank.conformal.split_queries`).
    labels : array of shape (n_pairs,), labelled QuerySet, or None
        Relevance labels; None when ``predictions`` is a RankedLists.
    risk : {"coverage", "miss", "fdr", "abstain"}
        See the module notes.
    alpha : float
        The risk level, in (0, 1).
    delta : float
        The failure probability of ``"fdr"`` and ``"abstain"``, in (0, 1)
        (ignored by the others, whose guarantee holds in expectation).
    method : {"threshold", "topk", "aps"}
        How sets are built: ``"topk"`` for ``"coverage"`` and ``"miss"``,
        ``"aps"`` for ``"coverage"`` only.
    score : {"auto", "score", "mean", "quantile", "lower"}
        The conformity score (:func:`~uncertank.conformal.conformity_scores`).
    quantile, k_std : float
        Options of ``score="quantile"`` and ``score="lower"``.
    mass : {"auto", "sum", "softmax"}
        How ``method="aps"`` normalises a query's scores.
    thresholds : array-like, optional
        The grid Learn-then-Test tests (``"fdr"``, ``"abstain"``).

    Returns
    -------
    ConformalThreshold

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.eye(10, dtype=int)[rng.integers(0, 10, 500)]
    >>> p = np.clip(0.5 * y + 0.6 * rng.random((500, 10)), 0, 1)
    >>> th = calibrate_threshold(p, y, risk="coverage", alpha=0.1)
    >>> th.n_calibration, round(th.threshold, 3)
    (500, 0.563)
    """
    check_choice(risk, "risk", RISKS)
    check_choice(method, "method", ("threshold", "topk", "aps"))
    if method not in _METHODS[risk]:
        raise ValueError(f"method {method!r} does not apply to risk {risk!r}; it takes "
                         f"{', '.join(repr(m) for m in _METHODS[risk])}")
    alpha = check_unit_interval(alpha, "alpha")
    delta = check_unit_interval(delta, "delta")
    name = resolve_score(predictions, score)
    lists = labelled_scores(predictions, labels, score=score, quantile=quantile, k_std=k_std)
    if risk == "coverage":
        out = split_conformal(lists, alpha=alpha, method=method, mass=mass)
    elif risk == "miss":
        out = conformal_risk_control(lists, alpha=alpha, method=method)  # type: ignore[arg-type]
    elif risk == "fdr":
        out = fdr_control(lists, alpha=alpha, delta=delta, thresholds=thresholds)
    else:
        confidence, errors = abstention_data(lists)
        out = conformal_abstention(confidence, errors, alpha=alpha, delta=delta, thresholds=thresholds)
    return dataclasses.replace(out, score=name, quantile=float(quantile), k_std=float(k_std))


def apply_threshold(
    calibrated: ConformalThreshold, predictions: Predictions | PredictiveSamples | RankedLists | ArrayLike
) -> CandidateSets | Answers:
    """The sets (or, for ``"abstain"``, the answers) of new queries under a calibrated threshold.

    Parameters
    ----------
    calibrated : ConformalThreshold
        From :func:`calibrate_threshold`.
    predictions : Predictions, PredictiveSamples, RankedLists or array of shape (n_queries, n_candidates)
        The ranker's output on the new queries; scored with the conformity
        score of the calibration.

    Returns
    -------
    CandidateSets or Answers
    """
    if not isinstance(calibrated, ConformalThreshold):
        raise TypeError(f"calibrated must be a ConformalThreshold; got {type(calibrated).__name__}")
    scored = conformity_scores(predictions, score=calibrated.score,  # type: ignore[arg-type]
                               quantile=calibrated.quantile, k_std=calibrated.k_std)
    if calibrated.risk == "abstain":
        return answer(scored, calibrated)
    return candidate_sets(scored, calibrated)
