"""The promises of the docstrings, as properties over random inputs.

- every built-in recalibrator maps into [0, 1] and never reverses the order
  of two distinct scores; temperature and Platt scaling (slope > 0) keep
  distinct scores in [0.01, 0.99] distinct;
- every ranking metric lies in [0, 1] and every calibration metric in its
  range (ECE and Brier in [0, 1], NLL >= 0);
- risk-aware reranking returns, per query, a permutation of the ranks
  ``1..L``;
- Platt and temperature scaling say whether their fit converged
  (``converged_``), and a fit that did not warns.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from uncertank import PredictiveSamples, RankedLists
from uncertank.metrics import (
    brier_score,
    expected_calibration_error,
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    negative_log_likelihood,
    precision_at_k,
    rank_biased_precision,
    recall_at_k,
    trec_recall_at_k,
)
from uncertank.recalibration import (
    DegenerateDataWarning,
    HistogramBinning,
    IsotonicCalibration,
    NotConvergedWarning,
    PlattScaling,
    TemperatureScaling,
)
from uncertank.uncertainty import risk_aware_rerank

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

probabilities = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def validation_data(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(2, 40))
    scores = draw(hnp.arrays(np.float64, n, elements=probabilities))
    labels = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 2)))
    return scores, labels


@st.composite
def lists(draw: st.DrawFn) -> RankedLists:
    lengths = draw(st.lists(st.integers(1, 8), min_size=1, max_size=6))
    n = sum(lengths)
    scores = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | probabilities))
    labels = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 3)))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return RankedLists(scores, labels, offsets)


RECALIBRATORS = {
    "platt": PlattScaling,
    "temperature": TemperatureScaling,
    "isotonic": IsotonicCalibration,
    "histogram": lambda: HistogramBinning(n_bins=5),
}


@pytest.mark.parametrize("name", sorted(RECALIBRATORS))
@SETTINGS
@given(data=validation_data(), new=hnp.arrays(np.float64, st.integers(2, 30), elements=probabilities))
def test_recalibrators_map_into_the_unit_interval_keeping_order(
    name: str, data: tuple[np.ndarray, np.ndarray], new: np.ndarray
) -> None:
    scores, labels = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        cal = RECALIBRATORS[name]().fit(scores, labels)
    out = cal.transform(new)
    assert out.shape == new.shape
    assert np.all((out >= 0.0) & (out <= 1.0)), out
    order = np.argsort(new, kind="stable")
    s, p = new[order], out[order]
    distinct = s[1:] > s[:-1]
    assert np.all(p[1:][distinct] >= p[:-1][distinct]), "a higher score got a lower probability"
    strict = name == "temperature" or (name == "platt" and (cal.a_ or 0) > 0) or cal.fallback_ is not None
    # below 1 - 1e-12: float64 can tie probabilities within about 1e-16 of 1 (the module notes)
    inside = distinct & (s[:-1] >= 0.01) & (s[1:] <= 0.99) & (s[1:] - s[:-1] > 1e-9) & (p[1:] < 1 - 1e-12)
    if strict:
        assert np.all(p[1:][inside] > p[:-1][inside]), "two distinct scores in [0.01, 0.99] got one probability"


@pytest.mark.parametrize("name", ["platt", "temperature"])
@SETTINGS
@given(data=validation_data())
def test_likelihood_fits_say_whether_they_converged(name: str, data: tuple[np.ndarray, np.ndarray]) -> None:
    scores, labels = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = RECALIBRATORS[name]().fit(scores, labels)
    if cal.fallback_ is not None:
        return
    assert isinstance(cal.converged_, bool)
    said = any(issubclass(w.category, NotConvergedWarning) for w in caught)
    assert said == (not cal.converged_)


RANKING = {
    "recall@1": lambda r: recall_at_k(r, k=1),
    "recall@3 of 5": lambda r: recall_at_k(r, k=3, n=5),
    "P@3": lambda r: precision_at_k(r, k=3),
    "trec recall@3": lambda r: trec_recall_at_k(r, k=3),
    "MRR": mean_reciprocal_rank,
    "MAP": mean_average_precision,
    "nDCG@5": lambda r: ndcg_at_k(r, k=5),
    "RBP": lambda r: rank_biased_precision(r)[0],
}


@pytest.mark.parametrize("name", sorted(RANKING))
@SETTINGS
@given(ranked=lists())
def test_ranking_metrics_lie_in_the_unit_interval(name: str, ranked: RankedLists) -> None:
    try:
        value = RANKING[name](ranked)
    except ValueError as exc:  # defined on no query (no relevant candidate): said, never a NaN
        assert "relevant" in str(exc) or "must" in str(exc), exc
        return
    assert np.isfinite(value) and 0.0 <= value <= 1.0, value


@SETTINGS
@given(ranked=lists())
def test_calibration_metrics_lie_in_their_ranges(ranked: RankedLists) -> None:
    ece = expected_calibration_error(ranked)
    brier = brier_score(ranked)
    nll = negative_log_likelihood(ranked)
    assert 0.0 <= ece <= 1.0
    assert 0.0 <= brier <= 1.0
    assert np.isfinite(nll) and nll >= 0.0


@SETTINGS
@given(
    lengths=st.lists(st.integers(1, 7), min_size=1, max_size=5),
    n_samples=st.integers(1, 6),
    b=st.sampled_from([-1.0, -0.1, 0.0, 0.1, 1.0, 1e6]),
    weights=st.sampled_from(["uniform", "dcg"]),
    seed=st.integers(0, 2**32 - 1),
    ties=st.booleans(),
)
def test_risk_aware_rerank_returns_a_permutation(
    lengths: list[int], n_samples: int, b: float, weights: str, seed: int, ties: bool
) -> None:
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    rng = np.random.default_rng(seed)
    draws = np.full((n_samples, offsets[-1]), 0.5) if ties else rng.random((n_samples, offsets[-1]))
    out = risk_aware_rerank(PredictiveSamples(draws, offsets), b=b, weights=weights)
    for lo, hi in itertools.pairwise(offsets):
        assert sorted(out[lo:hi].tolist()) == list(range(1, hi - lo + 1))
