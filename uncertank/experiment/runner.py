"""Run a study: train, predict under every condition, evaluate, report.

Each finished step leaves a file in the output folder (a saved model, the
predictions of one ranker under one condition, the Bayesian comparison), so a
rerun with the same configuration resumes rather than repeats. Every file is
written atomically (a temporary file, then a rename).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from uncertank._io import atomic_path, atomic_write_text
from uncertank._types import PredictiveSamples, QuerySet
from uncertank.experiment.config import RankerConfig, StudyConfig

__all__ = ["StudyResult", "run_study"]

StudyResult = dict[str, Any]
Log = Callable[[str], None]


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _atomic_save_npz(path: Path, **arrays: Any) -> None:
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        np.savez(fh, **arrays)


def _load(name: str, split: str, negatives: str, cap: int | None, config: StudyConfig) -> QuerySet:
    from uncertank.datasets import load

    options: dict[str, Any] = {}
    if cap is not None:
        options["max_queries"] = cap  # a seeded subset, drawn before the negatives are sampled
    if config.max_context_turns is not None:
        options["max_context_turns"] = config.max_context_turns
    return load(name, split=split, negatives=negatives, n_candidates=config.n_candidates, seed=config.seed, **options)


def _load_data(config: StudyConfig, log: Log) -> tuple[QuerySet, QuerySet, dict[str, QuerySet]]:
    log(f"data: {config.train_dataset} train/valid with {config.train_negatives} negatives")
    train = _load(config.train_dataset, "train", config.train_negatives, config.max_train_queries, config)
    valid = _load(config.train_dataset, "valid", config.train_negatives, config.max_valid_queries, config)
    tests: dict[str, QuerySet] = {}
    for cond in config.conditions:
        log(f"data: condition {cond.name!r} = {cond.dataset} test with {cond.negatives} negatives")
        tests[cond.name] = _load(cond.dataset, "test", cond.negatives, config.max_test_queries, config)
    return train, valid, tests


def _ranker_dir(out: Path, rc: RankerConfig, data_key: str) -> Path:
    return out / "models" / f"{rc.key}-{_digest([rc.name, rc.params, data_key])}"


def _train_or_load(rc: RankerConfig, train: QuerySet, valid: QuerySet, out: Path, data_key: str,
                   resume: bool, log: Log) -> Any:
    from uncertank.plugins import make_ranker

    ranker = make_ranker(rc.name, **rc.params)
    if not callable(getattr(ranker, "fit", None)):
        return ranker
    model_dir = _ranker_dir(out, rc, data_key)
    if resume and (model_dir / ".complete").exists() and callable(getattr(type(ranker), "load", None)):
        log(f"{rc.key}: loading the trained model from {model_dir}")
        return type(ranker).load(model_dir)
    log(f"{rc.key}: training on {train.n_queries} queries")
    t0 = time.perf_counter()
    ranker.fit(train, valid)
    log(f"{rc.key}: trained in {time.perf_counter() - t0:.1f} s")
    if callable(getattr(ranker, "save", None)):
        tmp = model_dir.with_name(model_dir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        ranker.save(tmp)
        (tmp / ".complete").write_text("ok\n")
        shutil.rmtree(model_dir, ignore_errors=True)
        os.replace(tmp, model_dir)
    return ranker


def _predict(ranker: Any, rc: RankerConfig, qs: QuerySet, split_key: str, out: Path, resume: bool,
             log: Log) -> tuple[PredictiveSamples | None, np.ndarray, bool]:
    """Return (samples or None, mean scores, probabilistic)."""
    path = out / "predictions" / f"{rc.key}-{split_key}.npz"
    if resume and path.exists():
        with np.load(path) as z:
            samples = z["samples"] if z["stochastic"] else None
            mean, prob = z["mean"], bool(z["probabilistic"])
        ps = PredictiveSamples(samples, qs.offsets, ranker=rc.key) if samples is not None else None
        return ps, mean, prob
    t0 = time.perf_counter()
    if callable(getattr(ranker, "predict_samples", None)):
        ps = ranker.predict_samples(qs)
        mean, prob = ps.mean(), bool(((ps.samples >= 0) & (ps.samples <= 1)).all())
        arrays: dict[str, Any] = {"samples": ps.samples, "mean": mean, "stochastic": True, "probabilistic": prob}
    else:
        pred = ranker.predict(qs)
        ps, mean, prob = None, pred.scores, pred.probabilistic
        arrays = {"mean": mean, "stochastic": False, "probabilistic": prob}
    log(f"{rc.key}: scored {qs.n_pairs} pairs ({split_key}) in {time.perf_counter() - t0:.1f} s")
    _atomic_save_npz(path, **arrays)
    return ps, mean, prob


def _effectiveness(qs: QuerySet, scores: np.ndarray) -> dict[str, float]:
    from uncertank import metrics

    ranked = qs.ranked(scores)
    return {
        "R@1": float(metrics.recall_at_k(ranked, k=1)),
        "R@2": float(metrics.recall_at_k(ranked, k=2)),
        "R@5": float(metrics.recall_at_k(ranked, k=5)),
        "MAP": float(metrics.mean_average_precision(ranked)),
        "MRR": float(metrics.mean_reciprocal_rank(ranked)),
        "nDCG@10": float(metrics.ndcg_at_k(ranked, k=10)),
    }


def _calibration(qs: QuerySet, probs: np.ndarray, n_bins: int, seed: int) -> dict[str, float]:
    from uncertank import metrics

    labels = qs.labels
    assert labels is not None  # checked when the data are loaded
    return {
        "ECE": float(metrics.expected_calibration_error(probs, labels, n_bins=n_bins)),
        "ECE quantile": float(metrics.expected_calibration_error(probs, labels, n_bins=n_bins, strategy="quantile")),
        "ECE balanced": float(metrics.expected_calibration_error(probs, labels, n_bins=n_bins, balanced=True,
                                                                 seed=seed)),
        "ECE Penha-Hauff": float(metrics.expected_calibration_error(probs, labels, convention="penha-hauff")),
        "MCE": float(metrics.expected_calibration_error(probs, labels, n_bins=n_bins, norm="max")),
        "Brier": float(metrics.brier_score(probs, labels)),
        "NLL": float(metrics.negative_log_likelihood(probs, labels)),
    }


def run_study(
    config: StudyConfig,
    out_dir: str | os.PathLike[str],
    *,
    resume: bool = True,
    log: Log | None = None,
) -> StudyResult:
    """Run ``config`` and write its report into ``out_dir``.

    Parameters
    ----------
    config : StudyConfig
        What to run (see :func:`uncertank.experiment.demo_config`).
    out_dir : path
        The report folder: ``results.json``, ``report.md``, ``report.html``,
        ``figures/*.png``, plus ``models/`` and ``predictions/`` for resuming.
    resume : bool
        Reuse finished steps found in ``out_dir``.
    log : callable, optional
        Receives one line per step (progress); silent when None.

    Returns
    -------
    dict
        The content of ``results.json``.
    """
    from uncertank.experiment.report import write_report
    from uncertank.uncertainty import compare_nota, evaluate_nota, make_nota_task, risk_aware_rerank
    from uncertank.uncertainty import select_risk_aversion as select_b

    say: Log = log or (lambda msg: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    train, valid, tests = _load_data(config, say)
    data_key = _digest([config.train_dataset, config.train_negatives, config.n_candidates,
                        config.max_train_queries, config.max_context_turns, config.seed])
    result: StudyResult = {
        "config": asdict(config),
        "data": {"train": train.n_queries, "valid": valid.n_queries,
                 "test": {name: qs.n_queries for name, qs in tests.items()}},
        "effectiveness": [], "calibration": [], "risk": [], "nota": [], "reliability": {}, "timings": {},
    }
    from uncertank import metrics

    for rc in config.rankers:
        t0 = time.perf_counter()
        ranker = _train_or_load(rc, train, valid, out, data_key, resume, say)
        v_samples, _, _ = _predict(ranker, rc, valid, f"valid-{data_key}", out, resume, say)
        b = None
        if v_samples is not None:
            assert valid.labels is not None  # the datasets are labelled
            sel = select_b(v_samples, valid.labels, lambda r: metrics.recall_at_k(r, k=1), grid=config.risk_grid)
            b = sel.b
            say(f"{rc.key}: risk aversion b = {b} chosen on validation R@1")
        for cond in config.conditions:
            qs = tests[cond.name]
            cond_key = _digest([cond.dataset, cond.negatives, config.n_candidates, config.max_test_queries,
                                config.max_context_turns, config.seed])
            samples, mean, prob = _predict(ranker, rc, qs, f"{cond.name}-{cond_key}", out, resume, say)
            row = {"ranker": rc.key, "condition": cond.name, **_effectiveness(qs, mean)}
            result["effectiveness"].append(row)
            if prob:
                result["calibration"].append({"ranker": rc.key, "condition": cond.name,
                                              **_calibration(qs, mean, config.n_bins, config.seed)})
                curve = metrics.reliability_curve(mean, qs.labels, n_bins=config.n_bins)
                filled = curve.counts > 0
                result["reliability"].setdefault(cond.name, {})[rc.key] = {
                    "mean_confidence": curve.mean_confidence[filled].tolist(),
                    "fraction_relevant": curve.fraction_relevant[filled].tolist(),
                    "count": curve.counts[filled].tolist(),
                }
            if samples is not None and b is not None:
                reranked = risk_aware_rerank(samples, b=b)
                result["risk"].append({
                    "ranker": rc.key, "condition": cond.name, "b": b,
                    "R@1 mean": float(metrics.recall_at_k(qs.ranked(mean), k=1)),
                    "R@1 risk-aware": float(metrics.recall_at_k(qs.ranked(reranked), k=1)),
                })
            if config.nota and cond is config.conditions[0] and prob:
                task = make_nota_task(qs.ranked(mean), None if samples is None else samples.var(), seed=config.seed)
                if samples is not None:
                    cmp = compare_nota(task, seed=config.seed)
                    result["nota"].append({
                        "ranker": rc.key, "condition": cond.name,
                        "F1 means": cmp.means_only.f1_mean, "F1 means sd": cmp.means_only.f1_std,
                        "F1 means+var": cmp.with_variance.f1_mean, "F1 means+var sd": cmp.with_variance.f1_std,
                        "p (paired t)": cmp.p_value,
                    })
                else:
                    res = evaluate_nota(task, seed=config.seed)
                    result["nota"].append({"ranker": rc.key, "condition": cond.name,
                                           "F1 means": res.f1_mean, "F1 means sd": res.f1_std})
        result["timings"][rc.key] = round(time.perf_counter() - t0, 2)
    if config.bayes.enabled:
        result["bayes"] = _bayes(config, out, resume, say)
    result["timings"]["total"] = round(time.perf_counter() - started, 2)
    write_report(result, out)
    say(f"report written to {out}")
    return result


def _bayes(config: StudyConfig, out: Path, resume: bool, log: Log) -> dict[str, Any]:
    path = out / "bayes" / f"comparison-{_digest(asdict(config.bayes))}.json"
    if resume and path.exists():
        log("bayes: reusing the finished comparison")
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    from uncertank.bayes import compare, frame_from_trec_covid

    out_rows: dict[str, Any] = {}
    for family in config.bayes.families:
        frame = frame_from_trec_covid(family)
        log(f"bayes: fitting the {family} model on TREC-COVID round 1 ({frame['system'].nunique()} pooled runs)")
        t0 = time.perf_counter()
        cmp = compare(frame, family=family, draws=config.bayes.draws, tune=config.bayes.tune,  # type: ignore[arg-type]
                      chains=config.bayes.chains, seed=config.seed, sampler=config.bayes.sampler,  # type: ignore[arg-type]
                      drop_bottom=config.bayes.drop_bottom)
        best = cmp.distinguishable(reference="best")
        worst = cmp.distinguishable(reference="worst")
        out_rows[family] = {
            "seconds": round(time.perf_counter() - t0, 1),
            "best distinguishable from": len(best),
            "worst distinguishable from": len(worst),
            "converged": bool(cmp.diagnostics().ok),
            "diagnostics": _jsonable(cmp.diagnostics()),
        }
        baseline = config.bayes.baseline or "bm25_baseline"
        if baseline in {str(x) for x in cmp.systems}:
            for r in (1, 2):
                ur = cmp.urisk(baseline, r=r)
                # Benham convention: URisk > 0 is riskier than the baseline.
                out_rows[family][f"credibly riskier than {baseline} (r={r})"] = int((ur["urisk_lower"] > 0).sum())
                out_rows[family][f"credibly less risky than {baseline} (r={r})"] = int((ur["urisk_upper"] < 0).sum())
    atomic_write_text(path, json.dumps(out_rows, indent=2))
    return out_rows


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return _jsonable(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    return obj
