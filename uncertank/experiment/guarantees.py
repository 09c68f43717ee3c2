r"""Stage 6 of a study: thresholds with a guarantee, per ranker and condition (:func:`guarantees`).

"Calibrate on your data, deploy where data shifts": for every ranker, the
procedures of :mod:`uncertank.conformal` are calibrated once on the
study's validation queries (the training domain, scored in stage 3) and
measured on every condition's test queries:

- split conformal candidate sets (the candidates scoring ``>=`` one
  threshold), whose coverage (a relevant candidate in the set) is
  ``>= 1 - alpha`` for queries exchangeable with the calibration queries;
  the test coverage with its Clopper-Pearson 95% interval
  (``scipy.stats.binomtest(...).proportion_ci(method="exact")``) and the
  mean set size;
- conformal abstention (answer with the top candidate only when its score
  clears a threshold): the error rate among answered queries is
  ``<= alpha`` with probability ``>= 1 - delta``; the test answer rate and
  error rate;
- the exchangeability check (:func:`~uncertank.conformal.exchangeability_test`,
  the queries' top scores, level 0.05) between calibration and test
  queries: where it rejects, the guarantees above do not hold;
- with ``[conformal] weighted``, under every condition but the first,
  weighted split conformal sets (Tibshirani et al. 2019) with likelihood
  ratios from :func:`~uncertank.conformal.domain_weights`: a logistic
  regression telling test from validation queries by a summary of the
  ranker's scores on each (top score, mean, standard deviation, the top
  two's gap), so the shift it corrects is the one the scores show;
- the coverage and mean set size at every level of ``[conformal] alphas``
  (coverage against ``1 - alpha``, for the report's figure);
- set sizes against the study's reference ranker at the same ``alpha``: a
  two-sided paired t-test over the test queries
  (:func:`uncertank.stats.paired_ttest`, as :func:`scipy.stats.ttest_rel`).

Non-probabilistic rankers are measured as the others: conformal needs only
scores. The conformity score of a stochastic ranker is its predictive mean,
a quantile of its draws or the mean minus ``k_std`` standard deviations
(``[conformal] score``); a deterministic ranker's scores are used as they
are. Everything is vectorised over the flat pairs with their offsets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

import numpy as np
from numpy.typing import NDArray

from uncertank import Predictions, RankedLists
from uncertank.experiment.config import ConformalConfig, GuaranteeSettings, StudyConfig
from uncertank.experiment.result import ConformalOutcome, Evaluation
from uncertank.experiment.stages import StudyData
from uncertank.validation import check_instance

if TYPE_CHECKING:
    from uncertank.experiment.stages import RankerPrediction

__all__ = ["EXCHANGEABILITY_LEVEL", "guarantees", "score_features", "with_guarantees"]

#: The level at which the exchangeability check rejects.
EXCHANGEABILITY_LEVEL = 0.05


def _conformity(pred: RankerPrediction, offsets: NDArray[np.int64], conf: ConformalConfig) -> tuple[Predictions, str]:
    """The conformity scores of one prediction and the name of the score used."""
    from uncertank.conformal import conformity_scores

    if pred.samples is None:
        return Predictions(np.asarray(pred.mean, dtype=np.float64), offsets, probabilistic=pred.probabilistic), "score"
    scores = conformity_scores(pred.samples, score=conf.score,
                               quantile=0.1 if conf.quantile is None else conf.quantile,
                               k_std=1.0 if conf.k_std is None else conf.k_std)
    return scores, conf.score


def score_features(scores: Predictions) -> NDArray[np.float64]:
    """Per query, a summary of its scores: top, mean, standard deviation, top minus runner-up.

    Parameters
    ----------
    scores : Predictions
        Scores of ``n_queries`` lists.

    Returns
    -------
    ndarray of shape (n_queries, 4)
        The gap is 0 for a list of one candidate.

    Examples
    --------
    >>> from uncertank import Predictions
    >>> score_features(Predictions(np.array([0.9, 0.5, 0.1, 0.4]), np.array([0, 3, 4]))).round(3).tolist()
    [[0.9, 0.5, 0.327, 0.4], [0.4, 0.4, 0.0, 0.0]]
    """
    from uncertank._types import query_index
    from uncertank.conformal.lists import query_max, top_candidates

    check_instance(scores, "scores", Predictions)

    s, off = scores.scores, scores.offsets
    q = query_index(off)
    n = np.diff(off).astype(np.float64)
    top = query_max(s, off)
    mean = np.bincount(q, weights=s, minlength=n.size) / n
    var = np.bincount(q, weights=(s - mean[q]) ** 2, minlength=n.size) / n
    rest = s.copy()
    rest[top_candidates(s, off)] = -np.inf
    second = query_max(rest, off)
    gap = np.where(np.isfinite(second), top - second, 0.0)
    return np.column_stack([top, mean, np.sqrt(var), gap])


class _DomainClassifier:
    """L2-regularised logistic regression on standardised features (``fit`` / ``predict_proba``).

    The penalty ``||w||^2 / 2`` (the intercept left out) is scikit-learn's
    ``LogisticRegression(C=1)``'s; fitted by L-BFGS.
    """

    def fit(self, x: NDArray[np.float64], y: NDArray[np.int64]) -> _DomainClassifier:
        from scipy.optimize import minimize
        from scipy.special import expit

        x = np.asarray(x, dtype=np.float64)
        self.centre = x.mean(axis=0)
        self.scale = np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
        z = np.column_stack([(x - self.centre) / self.scale, np.ones(x.shape[0])])
        t = np.asarray(y, dtype=np.float64)

        def loss(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            eta = z @ w
            nll = float(np.sum(np.logaddexp(0.0, eta) - t * eta)) + 0.5 * float(w[:-1] @ w[:-1])
            grad = z.T @ (expit(eta) - t)
            grad[:-1] += w[:-1]
            return nll, grad

        self.coef = minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B").x
        return self

    def predict_proba(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        from scipy.special import expit

        z = (np.asarray(x, dtype=np.float64) - self.centre) / self.scale
        p = expit(z @ self.coef[:-1] + self.coef[-1])
        return np.column_stack([1.0 - p, p])


class _Weighted(TypedDict, total=False):
    """The weighted split conformal fields of :class:`ConformalOutcome`, under a shifted condition."""

    weighted_coverage: float
    weighted_coverage_lower: float
    weighted_coverage_upper: float
    weighted_mean_size: float
    effective_size: float


def _interval(k: int, n: int) -> tuple[float, float]:
    """The Clopper-Pearson 95% interval of ``k`` successes in ``n``."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def guarantees(
    settings: GuaranteeSettings, data: StudyData, preds: dict[tuple[str, str], RankerPrediction]
) -> dict[tuple[str, str], ConformalOutcome]:
    """Stage 6: conformal sets, abstention, exchangeability and set sizes, per ranker and condition.

    Reads ``settings`` (``[conformal]``, the study's rankers, conditions
    and reference), the query sets of stage 1 and the predictions of
    stage 3. See the module notes. A ranker is calibrated only where the validation
    queries are labelled, and measured only on labelled test queries.

    Returns
    -------
    dict
        ``(ranker label, condition name)`` -> :class:`~uncertank.experiment.result.ConformalOutcome`;
        empty when ``[conformal] enabled`` is false.
    """
    from uncertank.conformal import (
        abstention_data,
        answer,
        candidate_sets,
        conformal_abstention,
        domain_weights,
        exchangeability_test,
        split_conformal,
        weighted_conformal,
    )

    check_instance(settings, "settings", (GuaranteeSettings, StudyConfig), "a GuaranteeSettings or a StudyConfig")
    check_instance(data, "data", StudyData)
    check_instance(preds, "preds", dict, "a dict of RankerPrediction by (ranker, condition)")

    conf = settings.conformal
    out: dict[tuple[str, str], ConformalOutcome] = {}
    if not conf.enabled or data.valid.labels is None:
        return out
    first = settings.conditions[0].name
    sizes: dict[tuple[str, str], NDArray[np.int64]] = {}
    for rc in settings.rankers:
        cal_scores, score = _conformity(preds[(rc.key, "valid")], data.valid.offsets, conf)
        cal = RankedLists(cal_scores.scores, data.valid.labels, data.valid.offsets)
        split = split_conformal(cal, alpha=conf.alpha)
        abstain = conformal_abstention(*abstention_data(cal), alpha=conf.alpha, delta=conf.delta)
        curve = [split_conformal(cal, alpha=a) for a in conf.alphas]
        cal_features = score_features(cal_scores) if conf.weighted else None
        for cond in settings.conditions:
            qs = data.tests[cond.name]
            if qs.labels is None:
                continue
            test, _ = _conformity(preds[(rc.key, cond.name)], qs.offsets, conf)
            sets = candidate_sets(test, split)
            covered = sets.covered(qs.labels)
            n = int(covered.size)
            sizes[(rc.key, cond.name)] = sets.sizes
            answers = answer(test, abstain)
            check = exchangeability_test(cal_scores, test, level=EXCHANGEABILITY_LEVEL)
            weighted: _Weighted = {}
            if cal_features is not None and cond.name != first:
                # dense features, and a classifier of dense features (weighted's _Classifier takes sparse ones too)
                weights = domain_weights(cal_features, score_features(test),
                                         classifier=_DomainClassifier())  # type: ignore[arg-type]
                ws = weighted_conformal(cal, test, weights, alpha=conf.alpha)
                k = int(ws.sets.covered(qs.labels).sum())
                low, high = _interval(k, n)
                weighted = {"weighted_coverage": k / n, "weighted_coverage_lower": low,
                            "weighted_coverage_upper": high, "weighted_mean_size": float(ws.sets.sizes.mean()),
                            "effective_size": float(ws.effective_size)}
            curve_sets = [candidate_sets(test, c) for c in curve]
            k = int(covered.sum())
            low, high = _interval(k, n)
            answered = int(answers.answered.sum())
            out[(rc.key, cond.name)] = ConformalOutcome(
                score=score, alpha=conf.alpha, delta=conf.delta, n_calibration=cal.n_queries, n_test=n,
                threshold=_finite(split.threshold), feasible=split.feasible, coverage=k / n, coverage_lower=low,
                coverage_upper=high, mean_size=float(sets.sizes.mean()),
                abstain_threshold=_finite(abstain.threshold), answer_rate=answered / n,
                error_rate=answers.error_rate(qs.labels) if answered else None,
                exchangeable=check.exchangeable, exchangeability_statistic=check.statistic,
                exchangeability_p=check.p_value, **weighted,
                curve_alpha=[float(a) for a in conf.alphas],
                curve_coverage=[float(s.covered(qs.labels).mean()) for s in curve_sets],
                curve_size=[float(s.sizes.mean()) for s in curve_sets],
            )
    return _against_reference(out, sizes, settings.reference)


def _against_reference(
    out: dict[tuple[str, str], ConformalOutcome], sizes: dict[tuple[str, str], NDArray[np.int64]],
    reference: str | None,
) -> dict[tuple[str, str], ConformalOutcome]:
    """The outcomes with the paired t-test of each ranker's set sizes against the reference's, per condition."""
    from uncertank.stats import paired_ttest

    done: dict[tuple[str, str], ConformalOutcome] = {}
    for (ranker, cond), outcome in out.items():
        ref = sizes.get((str(reference), cond))
        if ranker == reference or ref is None:
            done[(ranker, cond)] = outcome
            continue
        own = sizes[(ranker, cond)]
        differ = bool(np.any(own != ref)) and own.size >= 2
        done[(ranker, cond)] = replace(
            outcome, reference=reference, reference_mean_size=float(ref.mean()),
            size_p_value=float(paired_ttest(own.astype(float), ref.astype(float)).pvalue) if differ else None,
        )
    return done


def with_guarantees(
    evaluations: list[Evaluation], outcomes: dict[tuple[str, str], ConformalOutcome]
) -> list[Evaluation]:
    """New evaluations holding the outcomes of :func:`guarantees` (the ones given are left as they are)."""
    for ev in check_instance(evaluations, "evaluations", (list, tuple), "a list of Evaluation"):
        check_instance(ev, "evaluations", Evaluation, "a list of Evaluation")
    check_instance(outcomes, "outcomes", dict, "a dict of ConformalOutcome by (ranker, condition)")
    return [e if (e.ranker, e.condition) not in outcomes else replace(e, conformal=outcomes[(e.ranker, e.condition)])
            for e in evaluations]
