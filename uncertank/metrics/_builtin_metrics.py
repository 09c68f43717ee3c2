"""Built-in metrics, registered through the ``uncertank_metrics`` hook as :class:`Metric` objects.

Every registered metric is called as ``metric(scores, labels=None, *,
per_query=False, **options)``; see :mod:`uncertank.metrics.metric`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.hookspecs import hookimpl
from uncertank.metrics._inputs import ScoresInput
from uncertank.metrics.accumulators import BrierAccumulator, ECEAccumulator, NLLAccumulator
from uncertank.metrics.calibration import (
    Convention,
    Norm,
    Strategy,
    brier_score,
    check_ece_options,
    check_eps,
    expected_calibration_error,
    negative_log_likelihood,
)
from uncertank.metrics.metric import Metric
from uncertank.metrics.ranking import (
    check_cutoff,
    check_optional_cutoff,
    check_persistence,
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    rank_biased_precision,
    recall_at_k,
    trec_recall_at_k,
)


def rbp(
    scores: ScoresInput, labels: ArrayLike | None = None, *, p: float = 0.8, depth: int | None = None,
    max_grade: int | None = None, judged: ArrayLike | None = None, per_query: bool = False,
) -> float | NDArray[np.float64]:
    """Rank-biased precision without its residual; see :func:`rank_biased_precision`."""
    return rank_biased_precision(scores, labels, p=p, depth=depth, max_grade=max_grade, judged=judged,
                                 per_query=per_query)[0]


def rbp_residual(
    scores: ScoresInput, labels: ArrayLike | None = None, *, p: float = 0.8, depth: int | None = None,
    max_grade: int | None = None, judged: ArrayLike | None = None, per_query: bool = False,
) -> float | NDArray[np.float64]:
    """The residual of rank-biased precision: unjudged weight plus tail; see :func:`rank_biased_precision`."""
    return rank_biased_precision(scores, labels, p=p, depth=depth, max_grade=max_grade, judged=judged,
                                 per_query=per_query)[1]


def mce(
    probs: ScoresInput, labels: ArrayLike | None = None, *, n_bins: int | None = None, strategy: Strategy = "uniform",
    balanced: bool = False, seed: int | np.random.Generator | None = None,
) -> float:
    """Maximum calibration error: :func:`expected_calibration_error` with ``norm="max"``."""
    return expected_calibration_error(probs, labels, n_bins=n_bins, strategy=strategy, norm="max",
                                      balanced=balanced, seed=seed)


def _with_rel(base: str, options: Mapping[str, Any]) -> str:
    """``base`` with ir_measures' ``(rel=N)`` when the relevance level is not the default 1."""
    rel = options.get("rel", 1)
    return base if rel == 1 else f"{base}(rel={rel})"


def _cutoff_label(base: str, options: Mapping[str, Any]) -> str:
    k = options.get("k")
    base = _with_rel(base, options)
    return base if k is None else f"{base}@{k}"


def _cutoff(base: str) -> Any:
    return partial(_cutoff_label, base)


def _recall_label(options: Mapping[str, Any]) -> str:
    # R_n@k of response ranking (ir_measures' Success@k), labelled as the literature does
    n = options.get("n")
    base = _with_rel("R" if n is None else f"R_{n}", options)
    return f"{base}@{options.get('k', 1)}"


def _ece_label(options: Mapping[str, Any]) -> str:
    norm: Norm = options.get("norm", "l1")
    parts = [{"l1": "ECE", "l2": "ECE l2", "max": "MCE"}.get(norm, f"ECE {norm}")]
    strategy: Strategy = options.get("strategy", "uniform")
    if strategy != "uniform":
        parts.append(strategy)
    if options.get("balanced"):
        n = options.get("n_subsamples", 1)
        parts.append("balanced" if n == 1 else f"balanced x{n}")
    convention: Convention = options.get("convention", "naeini")
    if convention == "penha-hauff":
        parts.append("Penha-Hauff")
    return " ".join(parts)


def _mce_label(options: Mapping[str, Any]) -> str:
    return _ece_label({**options, "norm": "max"})


def _rbp_label_for(base: str, options: Mapping[str, Any]) -> str:
    out = f"{base}({options.get('p', 0.8)})"
    return out if options.get("depth") is None else f"{out}@{options['depth']}"


def _rbp_label(base: str) -> Any:
    return partial(_rbp_label_for, base)


def _make_ece_accumulator(fixed_norm: Norm | None, **options: Any) -> Any:
    if fixed_norm is not None:
        options["norm"] = fixed_norm
    return ECEAccumulator(**options)


def _calibration_accumulator(norm: Norm | None) -> Any:
    return partial(_make_ece_accumulator, norm)


def _make_pairs_accumulator(which: str, **options: Any) -> Any:
    return BrierAccumulator(**options) if which == "brier" else NLLAccumulator(**options)


def _pairs_accumulator(which: str) -> Any:
    return partial(_make_pairs_accumulator, which)


# --------------------------------------------------------------------------- option checks
# Each runs on a metric's bound options when it is resolved (Metric's ``check``), before any
# scoring, with the same checks (and messages) as the metric function itself.


def _check_cutoffs(options: Mapping[str, Any], *, k_required: bool) -> None:
    if "k" in options:
        (check_cutoff if k_required else check_optional_cutoff)(options["k"])
    if "n" in options:
        check_optional_cutoff(options["n"], "n")
    if "rel" in options:
        check_cutoff(options["rel"], "rel")


def _cutoff_check(*, k_required: bool) -> Any:
    return partial(_check_cutoffs, k_required=k_required)


def _check_rbp(options: Mapping[str, Any]) -> None:
    if "p" in options:
        check_persistence(options["p"])
    for name in ("depth", "max_grade"):
        if name in options:
            check_optional_cutoff(options[name], name)


def _check_ece(norm: Norm | None, options: Mapping[str, Any]) -> None:
    check_ece_options(options.get("n_bins"), options.get("strategy", "uniform"),
                      options.get("norm", "l1") if norm is None else norm, options.get("convention", "naeini"),
                      balanced=options.get("balanced", False), seed=options.get("seed"),
                      n_subsamples=options.get("n_subsamples", 1))


def _ece_check(norm: Norm | None) -> Any:
    return partial(_check_ece, norm)


def _check_nll(options: Mapping[str, Any]) -> None:
    if "eps" in options:
        check_eps(options["eps"])


BUILTIN_METRICS: dict[str, Metric] = {
    "recall_at_k": Metric(recall_at_k, name="recall_at_k", kind="ranking", label=_recall_label,
                          options={"k": 1}, check=_cutoff_check(k_required=True)),
    "precision": Metric(precision_at_k, name="precision", kind="ranking", label=_cutoff("P"),
                        options={"k": 10}, check=_cutoff_check(k_required=True)),
    "trec_recall_at_k": Metric(trec_recall_at_k, name="trec_recall_at_k", kind="ranking", label=_cutoff("Recall"),
                               options={"k": 10}, check=_cutoff_check(k_required=True)),
    "map": Metric(mean_average_precision, name="map", kind="ranking", label=_cutoff("MAP"),
                  check=_cutoff_check(k_required=False)),
    "mrr": Metric(mean_reciprocal_rank, name="mrr", kind="ranking", label=_cutoff("MRR"),
                  check=_cutoff_check(k_required=False)),
    "ndcg": Metric(ndcg_at_k, name="ndcg", kind="ranking", label=_cutoff("nDCG"), options={"k": 10},
                   check=_cutoff_check(k_required=False)),
    "rbp": Metric(rbp, name="rbp", kind="ranking", label=_rbp_label("RBP"), check=_check_rbp),
    "rbp_residual": Metric(rbp_residual, name="rbp_residual", kind="ranking", higher_is_better=False,
                           label=_rbp_label("RBP residual"), check=_check_rbp),
    "ece": Metric(expected_calibration_error, name="ece", kind="calibration", needs_probabilities=True,
                  higher_is_better=False, label=_ece_label, accumulator=_calibration_accumulator(None),
                  check=_ece_check(None)),
    "mce": Metric(mce, name="mce", kind="calibration", needs_probabilities=True, higher_is_better=False,
                  label=_mce_label, accumulator=_calibration_accumulator("max"), check=_ece_check("max")),
    "brier": Metric(brier_score, name="brier", kind="calibration", needs_probabilities=True,
                    higher_is_better=False, label="Brier", accumulator=_pairs_accumulator("brier")),
    "nll": Metric(negative_log_likelihood, name="nll", kind="calibration", needs_probabilities=True,
                  higher_is_better=False, label="NLL", accumulator=_pairs_accumulator("nll"), check=_check_nll),
}


@hookimpl
def uncertank_metrics() -> dict[str, Metric]:
    """Register the built-in ranking and calibration metrics."""
    return dict(BUILTIN_METRICS)
