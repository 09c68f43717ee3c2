"""False discovery rate control of sets by Learn-then-Test: the curve by a loop, the test by MAPIE, simulation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from uncertank import RankedLists
from uncertank.conformal import candidate_sets, fdr_control, fdr_curve, hoeffding_bentkus, threshold_grid


def _loop_fdr(lists: RankedLists, t: float) -> float:
    total = 0.0
    for q in range(lists.n_queries):
        lo, hi = lists.offsets[q], lists.offsets[q + 1]
        kept = [j for j in range(lo, hi) if lists.scores[j] >= t]
        if kept:
            total += sum(lists.labels[j] <= 0 for j in kept) / len(kept)
    return total / lists.n_queries


@pytest.mark.parametrize("ragged", [False, True], ids=["dense", "ragged"])
def test_curve_matches_a_loop(make_several_relevant, ragged):
    lists = make_several_relevant(70, n_candidates=6, seed=3, probabilities=True)
    lists = lists.with_scores(np.round(lists.scores, 1))  # ties, and scores right on grid points
    if ragged:
        keep = np.random.default_rng(0).random(lists.n_pairs) < 0.7
        keep[lists.offsets[:-1]] = True
        q = np.repeat(np.arange(lists.n_queries), lists.lengths)[keep]
        offsets = np.concatenate(([0], np.cumsum(np.bincount(q, minlength=lists.n_queries))))
        lists = RankedLists(lists.scores[keep], lists.labels[keep], offsets)
    grid = threshold_grid(lists.scores, probabilistic=True, size=41)
    np.testing.assert_allclose(fdr_curve(lists, grid), [_loop_fdr(lists, t) for t in grid], atol=1e-12)


def test_the_threshold_is_what_mapie_learn_then_test_accepts(make_several_relevant):
    """MAPIE's ltt_procedure with fixed-sequence testing, on our risks in our order: the same thresholds pass.

    Its p-values equal ours except where n R_hat, a float sum, lands a hair above a whole number,
    which its ceil (not ours, which rounds at 9 decimals first) makes one more: there its p-value is
    larger. None such lies in the sequence on this draw.
    """
    base = pytest.importorskip("mapie.risk_control._base_controller")
    lists = make_several_relevant(500, n_candidates=8, seed=5, probabilities=True)
    grid = threshold_grid(lists.scores, probabilistic=True)
    risk = fdr_curve(lists, grid)
    th = fdr_control(lists, alpha=0.25, delta=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        valid, pvalues = base.ltt_procedure(risk[None, :], np.array([[0.25]]), 0.1,
                                      np.full((1, grid.size), float(lists.n_queries)), binary=False,
                                      fwer_method="fixed_sequence")
    assert th.feasible and valid[0] == list(range(int(np.flatnonzero(grid == th.threshold)[0]) + 1))
    theirs = np.minimum(np.asarray(pvalues)[:, 0], 1.0)
    ours = hoeffding_bentkus(risk, lists.n_queries, 0.25)
    inflated = np.ceil(500 * risk) != np.ceil(np.round(500 * risk, 9))
    np.testing.assert_allclose(theirs[~inflated], ours[~inflated], rtol=1e-12)
    assert (theirs[inflated] >= ours[inflated]).all()
    assert th.calibration_risk == pytest.approx(_loop_fdr(lists, th.threshold))
    assert hoeffding_bentkus([th.calibration_risk], lists.n_queries, 0.25)[0] <= 0.1


def test_violation_frequency_is_at_most_delta(make_several_relevant):
    """Calibration queries drawn i.i.d. from a pool of 20,000, so the pool's FDR curve is the true one.

    300 draws of 400 calibration queries; a violation is a threshold whose true FDR exceeds alpha.
    Monte Carlo error: the frequency is compared with delta plus 3 binomial standard errors.
    """
    pool = make_several_relevant(20_000, n_candidates=8, seed=6, probabilities=True)
    grid = threshold_grid(pool.scores, probabilistic=True)
    truth = dict(zip(grid.tolist(), fdr_curve(pool, grid).tolist(), strict=True))
    alpha, delta, trials = 0.2, 0.1, 300
    rng = np.random.default_rng(0)
    violations, sizes = 0, []
    for _ in range(trials):
        cal = pool.subset(rng.integers(0, pool.n_queries, 400))
        th = fdr_control(cal, alpha=alpha, delta=delta)
        if th.feasible:
            violations += truth[th.threshold] > alpha
            sizes.append(candidate_sets(cal, th).sizes.mean())
    assert violations / trials <= delta + 3 * math.sqrt(delta * (1 - delta) / trials)
    assert len(sizes) > trials // 2 and np.mean(sizes) > 1  # not vacuous: most draws certify sets


def test_nothing_certified_gives_empty_sets(make_several_relevant):
    lists = make_several_relevant(15, seed=0, probabilities=True)  # too few queries for delta = 0.05
    th = fdr_control(lists, alpha=0.1, delta=0.05)
    assert not th.feasible and th.threshold == math.inf
    assert candidate_sets(lists, th).sizes.sum() == 0


def test_raw_scores_use_a_grid_of_their_quantiles(make_several_relevant):
    lists = make_several_relevant(400, seed=1)
    th = fdr_control(lists, alpha=0.3, delta=0.1, grid_size=201)
    assert th.feasible and th.threshold in set(lists.scores.tolist())
    assert fdr_control(lists, alpha=0.3, delta=0.1, thresholds=[5.0, 1.0, 0.5]).threshold in (5.0, 1.0, 0.5)
