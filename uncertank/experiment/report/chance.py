"""Which rankers the report may call well calibrated: calibration is read together with discrimination.

A ranker that scores every pair with the base rate (or any constant) has an
ECE near 0 and ranks no better than chance. The report never marks such a
ranker best calibrated, in bold, in a sentence or in the recalibration
table. It is set aside under a condition, by the numbers of the result
alone, when

1. its ranking is no better than chance: its value of the study's chance
   metric is not above the chance rate. The chance metric is the ``R@k``
   with the smallest ``k`` (registry name ``recall_at_k``; chance ``k / L``
   with one relevant among ``L`` candidates, ``L`` the study's
   ``n_candidates`` or the metric's ``n``), else ``MRR`` (chance
   ``H_L / L``, the mean of ``1/r`` over the ``L`` ranks). Lists with more
   than one relevant candidate have a higher chance rate, so the rule then
   sets aside fewer rankers than it could;
2. or every pair it scored falls in one bin of its reliability diagram
   (``CalibrationDetail.filled_bins == 1``): its ECE is then the gap between
   its mean score and the fraction of relevant pairs, whatever the scores
   say about which pair is relevant.

Without a chance metric or a list length only the second rule applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from uncertank.experiment.result import Evaluation, StudyResult, json_object
from uncertank.formatting import format_number, format_signed
from uncertank.validation import check_instance, check_name

__all__ = ["ChanceLevel", "base_rate_sentence", "chance_level", "set_aside"]


@dataclass(frozen=True)
class ChanceLevel:
    """The metric a ranker must beat to count as ranking, and its value for random scores.

    Attributes
    ----------
    label : str
        The metric's column label (``R@1``).
    value : float
        Its expected value under a random order of the candidates.
    how : str
        How ``value`` follows from the list length (``1/10 with one relevant among 10 candidates``).
    """

    label: str
    value: float
    how: str


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def chance_level(result: StudyResult) -> ChanceLevel | None:
    """The study's chance metric and rate (see the module docstring); None without one or without a list length."""
    check_instance(result, "result", StudyResult)
    n_cand = _int(result.config.get("n_candidates"))
    recalls: list[tuple[int, str, int]] = []
    mrr: str | None = None
    for label, info in result.metric_info.items():
        if info.get("kind") != "ranking":
            continue
        name = info.get("name")
        opts = json_object(info.get("options"))
        if name is None:  # results written before metric_info kept names: read the label
            if label.startswith("R@") and label[2:].isdigit():
                name, opts = "recall_at_k", {"k": int(label[2:])}
            elif label == "MRR":
                name = "mrr"
        if opts.get("rel", 1) != 1:
            continue
        length = _int(opts.get("n")) or n_cand
        if name == "recall_at_k" and length is not None:
            recalls.append((_int(opts.get("k", 1)) or 1, label, length))
        elif name == "mrr" and opts.get("k") is None and mrr is None:
            mrr = label
    if recalls:
        k, label, length = min(recalls)
        k = min(k, length)
        return ChanceLevel(label, k / length, f"{k}/{length} with one relevant among {length} candidates")
    if mrr is not None and n_cand is not None:
        value = sum(1.0 / r for r in range(1, n_cand + 1)) / n_cand
        return ChanceLevel(mrr, value, f"the mean of 1/r over the {n_cand} ranks of a list with one relevant")
    return None


def _one_bin(ev: Evaluation) -> bool:
    if ev.calibration is not None:
        return ev.calibration.filled_bins == 1
    return ev.reliability is not None and sum(c > 0 for c in ev.reliability.count) == 1


def set_aside(result: StudyResult, condition: str) -> dict[str, str]:
    """The rankers under ``condition`` that may not be called well calibrated, each with the reason why.

    Only rankers with a calibration value are considered. The reason is a
    clause to follow the ranker's name: ``ranks no better than chance
    (`R@1` 0.1000, chance 1/10 ...)``.
    """
    check_instance(result, "result", StudyResult)
    check_name(condition, "condition")
    level = chance_level(result)
    calib = {m for m, info in result.metric_info.items() if info.get("kind") == "calibration"}
    out: dict[str, str] = {}
    for ev in result.evaluations:
        if ev.condition != condition or not calib & set(ev.metrics):
            continue
        reasons = []
        if level is not None and level.label in ev.metrics and math.isfinite(ev.metrics[level.label]) \
                and ev.metrics[level.label] <= level.value + 1e-12:
            reasons.append(f"ranks no better than chance (`{level.label}` {format_number(ev.metrics[level.label])}, "
                           f"chance {format_number(level.value)}: {level.how})")
        if _one_bin(ev):
            reasons.append("scores every pair in one bin of its reliability diagram, so its ECE only compares its "
                           "mean score with the fraction of relevant pairs")
        if reasons:
            out[ev.ranker] = " and ".join(reasons)
    return out


def base_rate_sentence(result: StudyResult, condition: str, label: str, *, verb: str = "is not named") -> str:
    """Why the rankers set aside under ``condition`` are not named best by ``label``; empty when none is.

    Each ranker's clause reads ```ranker` (its value) {verb}: it {reason}``.

    A set-aside ranker whose mean score lies within 0.05 of the fraction of
    relevant pairs (its signed bias, ``CalibrationDetail.bias``, or the gap
    of its one reliability bin) predicts the base rate: the sentence says
    that its low ``label`` comes from there.
    """
    check_instance(result, "result", StudyResult)
    check_name(condition, "condition")
    check_name(label, "label")
    check_name(verb, "verb")
    parts = []
    for ranker, why in set_aside(result, condition).items():
        ev = result.evaluation(ranker, condition)
        if ev is None or label not in ev.metrics:
            continue
        text = f"`{ranker}` (`{label}` {format_number(ev.metrics[label])}) {verb}: it {why}"
        bias = ev.calibration.bias if ev.calibration is not None else None
        curve = ev.reliability
        if bias is None and _one_bin(ev) and curve is not None:
            i = max(range(len(curve.count)), key=curve.count.__getitem__)
            bias = curve.mean_confidence[i] - curve.fraction_relevant[i]
        if bias is not None and abs(bias) <= 0.05:
            text += (f"; its `{label}` is low because it predicts about the base rate (mean score minus fraction "
                     f"relevant: {format_signed(bias)}), not because it tells relevant from non-relevant candidates")
        parts.append(text)
    return ("; ".join(parts) + ".") if parts else ""
