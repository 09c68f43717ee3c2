"""Stage 5 of a study: what the uncertainty is worth, per ranker and condition (:func:`decide`).

Risk-aware reranking (Penha & Hauff 2021, eq. 7), NOTA prediction and
selective prediction, from the predictions of stage 3. :func:`decide`
returns a :class:`Decision` per ranker and condition and edits nothing;
:func:`with_decisions` builds new evaluations holding them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from uncertank.experiment.config import DecisionSettings, StudyConfig
from uncertank.experiment.result import Evaluation, NotaOutcome, RiskOutcome, SelectiveOutcome
from uncertank.experiment.stages import StudyData
from uncertank.validation import check_instance

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from uncertank import PredictiveSamples, QuerySet, RankedLists
    from uncertank.experiment.stages import RankerPrediction

__all__ = ["Decision", "decide", "with_decisions"]


@dataclass(frozen=True)
class Decision:
    """What one ranker's uncertainty is worth under one condition (stage 5, :func:`decide`).

    Attributes
    ----------
    risk : RiskOutcome or None
        Risk-aware reranking (stochastic rankers).
    selective : SelectiveOutcome
        Selective prediction.
    nota : NotaOutcome or None
        NOTA prediction (probabilistic rankers, first condition, when the study runs it).
    """

    risk: RiskOutcome | None
    selective: SelectiveOutcome
    nota: NotaOutcome | None = None


def decide(
    settings: DecisionSettings, data: StudyData, preds: dict[tuple[str, str], RankerPrediction]
) -> dict[tuple[str, str], Decision]:
    """Stage 5: risk-aware reranking, NOTA and selective prediction, per ranker and condition.

    Reads ``settings`` (the study's rankers, conditions, reference,
    ``risk_grid``, ``nota`` and seed), the query sets of stage 1 and the
    predictions of stage 3.

    - Risk-aware reranking (stochastic rankers): ``b`` chosen on validation
      R@1 over ``settings.risk_grid``; test R@1 at every ``b`` for the figure; a
      paired t-test over queries between the chosen ``b`` and the mean ranking;
      the oracle ``b`` (the best on the test condition: an upper bound, not a
      result); and, when the reference ranker is deterministic, the same on
      the reference's means with this ranker's (co)variances (RA-BERT).
    - NOTA (probabilistic rankers, first condition): means only, and means
      plus variances for stochastic rankers, with a paired t-test over folds.
    - Selective prediction (every ranker and condition): queries ordered by
      the top candidate's probability (its margin over the runner-up for
      scores that are not probabilities).

    Returns
    -------
    dict
        ``(ranker label, condition name)`` -> :class:`Decision`.
    """
    from uncertank import metrics as M
    from uncertank.stats import paired_ttest
    from uncertank.uncertainty import (
        compare_nota,
        evaluate_nota,
        make_nota_task,
        query_certainty,
        risk_aware_rerank,
        risk_coverage_curve,
        select_risk_aversion,
        top1_loss,
    )

    check_instance(settings, "settings", (DecisionSettings, StudyConfig), "a DecisionSettings or a StudyConfig")
    check_instance(data, "data", StudyData)
    check_instance(preds, "preds", dict, "a dict of RankerPrediction by (ranker, condition)")

    def r1(r: RankedLists) -> float:
        return float(M.recall_at_k(r, k=1))

    def per_query_r1(qs: QuerySet, scores: ArrayLike) -> np.ndarray:
        return np.asarray(M.recall_at_k(qs.ranked(scores), k=1, per_query=True), dtype=float)

    def p_between(x: np.ndarray, y: np.ndarray) -> float | None:
        return float(paired_ttest(x, y).pvalue) if np.any(x != y) else None

    first = settings.conditions[0].name
    ref_key = next((r.key for r in settings.rankers if r.key == settings.reference), None)
    ref_deterministic = ref_key is not None and preds[(ref_key, "valid")].samples is None
    out: dict[tuple[str, str], Decision] = {}
    for rc in settings.rankers:
        vpred = preds[(rc.key, "valid")]
        sel = mixed_sel = None
        if vpred.samples is not None and data.valid.labels is not None:
            sel = select_risk_aversion(vpred.samples, data.valid.labels, r1, grid=settings.risk_grid)
            if ref_deterministic and rc.key != ref_key:
                mixed_valid = _with_means(vpred.samples, preds[(str(ref_key), "valid")].mean)
                mixed_sel = select_risk_aversion(mixed_valid, data.valid.labels, r1, grid=settings.risk_grid)
        for cond in settings.conditions:
            qs = data.tests[cond.name]
            pred = preds[(rc.key, cond.name)]
            ranked = qs.ranked(pred.mean)
            risk = nota = None
            if sel is not None and pred.samples is not None:
                test_curve = {float(b): r1(qs.ranked(risk_aware_rerank(pred.samples, b=float(b))))
                              for b in settings.risk_grid}
                a = per_query_r1(qs, pred.mean)
                b_ = per_query_r1(qs, risk_aware_rerank(pred.samples, b=sel.b))
                # the oracle: the best b on the test condition itself (the smallest |b| on ties)
                oracle_b = max(test_curve, key=lambda g: (test_curve[g], -abs(g), -g))
                o = per_query_r1(qs, risk_aware_rerank(pred.samples, b=oracle_b))
                mixed: _Mixed = {}
                if mixed_sel is not None:
                    ref_mean = preds[(str(ref_key), cond.name)].mean
                    m0 = per_query_r1(qs, ref_mean)
                    m1 = per_query_r1(qs, risk_aware_rerank(_with_means(pred.samples, ref_mean), b=mixed_sel.b))
                    mixed = {"mixed_means_from": str(ref_key), "mixed_b": float(mixed_sel.b),
                             "r1_mixed_mean": float(m0.mean()), "r1_mixed": float(m1.mean()),
                             "p_value_mixed": p_between(m1, m0)}
                risk = RiskOutcome(
                    b=float(sel.b),
                    valid_curve={float(g): float(v) for g, v in zip(sel.grid, sel.scores, strict=True)},
                    test_curve=test_curve, r1_mean=float(a.mean()), r1_risk_aware=float(b_.mean()),
                    p_value=p_between(b_, a), oracle_b=float(oracle_b), r1_oracle=float(o.mean()),
                    p_value_oracle=p_between(o, a), **mixed,
                )
            kind: Literal["probability", "margin"] = "probability" if pred.probabilistic else "margin"
            rc_curve = risk_coverage_curve(query_certainty(ranked, certainty=kind), top1_loss(ranked))
            selective = SelectiveOutcome(kind, rc_curve.coverage.tolist(), rc_curve.risk.tolist(),
                                         rc_curve.aurc, rc_curve.oracle_aurc)
            if settings.nota and cond.name == first and pred.probabilistic:
                task = make_nota_task(ranked, None if pred.samples is None else pred.samples.var(), seed=settings.seed)
                if pred.samples is not None:
                    cmp = compare_nota(task, seed=settings.seed)
                    nota = NotaOutcome(cmp.means_only.f1_mean, cmp.means_only.f1_std,
                                       cmp.with_variance.f1_mean, cmp.with_variance.f1_std, float(cmp.p_value))
                else:
                    res = evaluate_nota(task, seed=settings.seed)
                    nota = NotaOutcome(res.f1_mean, res.f1_std)
            out[(rc.key, cond.name)] = Decision(risk, selective, nota)
    return out


def _with_means(samples: PredictiveSamples, means: ArrayLike) -> PredictiveSamples:
    """``samples`` moved so that their mean is ``means``: the same (co)variances around other means."""
    from uncertank import PredictiveSamples

    draws = np.asarray(samples.samples, dtype=float)
    moved = draws - draws.mean(axis=0) + np.asarray(means, dtype=float)
    return PredictiveSamples(moved, samples.offsets, ranker=samples.ranker)


class _Mixed(TypedDict, total=False):
    """The fields of :class:`RiskOutcome` that risk-aware reranking on the reference's means fills."""

    mixed_means_from: str
    mixed_b: float
    r1_mixed_mean: float
    r1_mixed: float
    p_value_mixed: float | None


def with_decisions(evaluations: list[Evaluation], decisions: dict[tuple[str, str], Decision]) -> list[Evaluation]:
    """New evaluations holding the outcomes of :func:`decide` (the ones given are left as they are)."""
    for ev in check_instance(evaluations, "evaluations", (list, tuple), "a list of Evaluation"):
        check_instance(ev, "evaluations", Evaluation, "a list of Evaluation")
    check_instance(decisions, "decisions", dict, "a dict of Decision by (ranker, condition)")
    out = []
    for e in evaluations:
        d = decisions.get((e.ranker, e.condition))
        out.append(e if d is None else replace(e, risk=d.risk, selective=d.selective, nota=d.nota))
    return out
