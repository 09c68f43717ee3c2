from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tests.optional import given, settings, st
from uncertank import RankedLists
from uncertank.metrics import (
    ImbalanceSweep,
    brier_score,
    calibration_by_rank,
    expected_calibration_error,
    imbalance_sweep,
    negative_log_likelihood,
    reliability_curve,
)

# --------------------------------------------------------------------------- references


def ref_uniform_bin(p, c):
    """Bin of p under the documented rule, by explicit interval tests."""
    for b in range(c):
        if b / c <= p < (b + 1) / c:
            return b
    return c - 1  # p == 1.0


def ref_quantile_edges(p, c):
    """Quantile edges by hand: linear interpolation between order statistics."""
    srt = sorted(p)
    n = len(srt)
    edges = []
    for b in range(c + 1):
        pos = b / c * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        edges.append(srt[lo] + (pos - lo) * (srt[hi] - srt[lo]))
    return edges


def ref_quantile_bin(p, edges):
    c = len(edges) - 1
    b = 0
    for e in edges[1:-1]:
        if p >= e:
            b += 1
    return min(b, c - 1)


def ref_ece(p, y, c=10, strategy="uniform", norm="l1"):
    """ECE with a plain loop over pairs, then over bins."""
    p = [float(v) for v in p]
    y = [1.0 if v > 0 else 0.0 for v in y]
    if strategy == "uniform":
        bins = [ref_uniform_bin(v, c) for v in p]
    else:
        edges = ref_quantile_edges(p, c)
        bins = [ref_quantile_bin(v, edges) for v in p]
    n = len(p)
    total, worst, sq = 0.0, 0.0, 0.0
    for b in range(c):
        members = [i for i in range(n) if bins[i] == b]
        if not members:
            continue
        conf = sum(p[i] for i in members) / len(members)
        acc = sum(y[i] for i in members) / len(members)
        total += len(members) / n * abs(conf - acc)
        sq += len(members) / n * (conf - acc) ** 2
        worst = max(worst, abs(conf - acc))
    return {"l1": total, "l2": math.sqrt(sq), "max": worst}[norm]


def ref_penha_hauff(p, y, m=50):
    """The ECE of Penha & Hauff's released code, rewritten as a loop: 50 bins
    [start, start + 1/M) with start advanced by repeated addition, the gap
    weighted by bin size over all pairs, and the sum divided by M again."""
    n = len(p)
    width = 1.0 / m
    start, ece = 0.0, 0.0
    for _ in range(m):
        end = start + width
        members = [i for i in range(n) if start <= p[i] < end]
        if members:
            conf = sum(p[i] for i in members) / len(members)
            acc = sum(float(y[i] > 0) for i in members) / len(members)
            ece += abs(acc - conf) * len(members) / n
        start += width
    return ece / m


def calibrated_data(seed, n):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.int64)
    return p, y


def miscalibrated_data(seed, n):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, n)
    y = (rng.random(n) < p**2).astype(np.int64) * rng.integers(1, 3, n)  # graded labels
    return p, y


# --------------------------------------------------------------------------- ECE


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [1, 7, 10])
def test_ece_matches_plain_loop(norm, strategy, n_bins):
    p, y = miscalibrated_data(0, 600)
    got = expected_calibration_error(p, y, n_bins=n_bins, strategy=strategy, norm=norm)
    assert got == pytest.approx(ref_ece(p, y, n_bins, strategy, norm), rel=1e-12, abs=1e-15)


def test_ece_quantile_with_ties_matches_plain_loop():
    rng = np.random.default_rng(1)
    p = rng.choice([0.0, 0.1, 0.5, 0.5, 0.9, 1.0], 300)
    y = rng.integers(0, 2, 300)
    for c in (3, 10):
        got = expected_calibration_error(p, y, n_bins=c, strategy="quantile")
        assert got == pytest.approx(ref_ece(p, y, c, "quantile"), abs=1e-14)


def test_ece_bin_edges_are_left_closed_and_one_in_last_bin():
    # 0.5 goes to the upper bin of two; 1.0 to the last bin.
    curve = reliability_curve([0.0, 0.5, 1.0], [0, 1, 1], n_bins=2)
    assert curve.counts.tolist() == [1, 2]
    assert reliability_curve([0.2, 0.3, 0.7], [0, 0, 1], n_bins=10).counts.tolist() == [
        0, 0, 1, 1, 0, 0, 0, 1, 0, 0]


@pytest.mark.slow  # importing torch and torchmetrics takes several seconds
def test_ece_matches_torchmetrics_float64():
    torch = pytest.importorskip("torch")
    binary_calibration_error = pytest.importorskip("torchmetrics.functional.classification").binary_calibration_error

    p, y = miscalibrated_data(2, 5000)
    y = (y > 0).astype(np.int64)
    for norm in ("l1", "l2", "max"):
        ref = binary_calibration_error(torch.from_numpy(p), torch.from_numpy(y), n_bins=15, norm=norm)
        assert expected_calibration_error(p, y, n_bins=15, norm=norm) == pytest.approx(float(ref), rel=1e-9)


def test_ece_penha_hauff_convention_matches_their_loop():
    p, y = miscalibrated_data(3, 800)
    p[:5] = 1.0  # their float edges: 1.0 lands in the last of 50 bins, in none of 10
    got = expected_calibration_error(p, y, convention="penha-hauff")
    assert got == pytest.approx(ref_penha_hauff(p, y), rel=1e-12)
    ten = expected_calibration_error(p, y, n_bins=10, convention="penha-hauff")
    assert ten == pytest.approx(ref_penha_hauff(p, y, m=10), rel=1e-12)
    rest = expected_calibration_error(p[5:], y[5:], n_bins=10, convention="penha-hauff")
    assert ten == pytest.approx(rest * 795 / 800, rel=1e-12)  # excluded from bins, counted in n
    p[5] = 0.02  # on an inner edge (0.02 exactly): goes to the upper bin, as theirs
    assert expected_calibration_error(p, y, convention="penha-hauff") == pytest.approx(
        ref_penha_hauff(p, y), rel=1e-12)
    # ... and it is the Naeini ECE over 50 bins divided by 50 (away from the edges)
    q = p[(p < 1.0) & (p != 0.02)]
    yq = y[(p < 1.0) & (p != 0.02)]
    naeini = expected_calibration_error(q, yq, n_bins=50)
    ph = expected_calibration_error(q, yq, convention="penha-hauff")
    assert ph == pytest.approx(naeini / 50, rel=1e-12)


def test_ece_penha_hauff_custom_bins():
    p, y = miscalibrated_data(4, 300)
    got = expected_calibration_error(p, y, n_bins=20, convention="penha-hauff")
    assert got == pytest.approx(ref_penha_hauff(p, y, m=20), rel=1e-12)


def test_ece_accepts_2d_and_ranked_lists():
    p, y = miscalibrated_data(5, 60)
    flat = expected_calibration_error(p, y)
    assert expected_calibration_error(p.reshape(6, 10), y.reshape(6, 10)) == flat
    rl = RankedLists.from_flat(p, y, [0, 7, 60])
    assert expected_calibration_error(rl) == flat
    assert expected_calibration_error(p.astype(np.float32), y) == pytest.approx(
        ref_ece(p.astype(np.float32), y), rel=1e-12)
    assert expected_calibration_error(p, y > 0) == flat


def test_ece_accumulates_in_float64():
    # 3M float32 copies of 0.7 with exactly 70% relevant: a float32 running sum
    # drifts by percents; float64 keeps the gap at the float32 rounding of 0.7.
    n = 3_000_000
    p = np.full(n, 0.7, dtype=np.float32)
    y = np.zeros(n, dtype=np.int8)
    y[: n * 7 // 10] = 1
    got = expected_calibration_error(p, y)
    assert got == pytest.approx(abs(float(np.float32(0.7)) - 0.7), abs=1e-12)


# --------------------------------------------------------------------------- balanced


def test_balanced_subsamples_the_larger_class():
    p, y = miscalibrated_data(6, 2000)
    n_pos = int((y > 0).sum())
    n_neg = y.size - n_pos
    curve = reliability_curve(p, y, balanced=True, seed=0)
    assert curve.counts.sum() == 2 * min(n_pos, n_neg)
    frac = (curve.fraction_relevant[curve.counts > 0] * curve.counts[curve.counts > 0]).sum()
    assert round(frac) == min(n_pos, n_neg)
    a = expected_calibration_error(p, y, balanced=True, seed=0)
    assert a == expected_calibration_error(p, y, balanced=True, seed=0)
    assert a != expected_calibration_error(p, y, balanced=True, seed=1)
    assert a != expected_calibration_error(p, y)


def test_balanced_result_does_not_depend_on_which_copies():
    # Every negative is identical, so any subsample gives the same ECE: relevant
    # pairs plus as many negatives at 0.3.
    rng = np.random.default_rng(0)
    p_pos = rng.random(50)
    p = np.concatenate([p_pos, np.full(400, 0.3)])
    y = np.concatenate([np.ones(50, int), np.zeros(400, int)])
    want = ref_ece(np.concatenate([p_pos, np.full(50, 0.3)]), [1] * 50 + [0] * 50)
    for seed in (0, 1, 2):
        assert expected_calibration_error(p, y, balanced=True, seed=seed) == pytest.approx(want, rel=1e-12)


def test_n_subsamples_is_the_mean_over_subsamples_drawn_from_one_generator():
    """Against a loop: subsample j keeps the non-relevant pairs the j-th draw of default_rng(seed) picks."""
    p, y = miscalibrated_data(8, 3000)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y == 0)
    m = min(pos.size, neg.size)
    rng, want = np.random.default_rng(5), []
    for _ in range(7):
        keep_pos = pos if pos.size == m else rng.choice(pos, m, replace=False)
        keep_neg = neg if neg.size == m else rng.choice(neg, m, replace=False)
        keep = np.sort(np.concatenate([keep_pos, keep_neg]))
        want.append(ref_ece(p[keep], y[keep]))
    got = expected_calibration_error(p, y, balanced=True, seed=5, n_subsamples=7)
    assert got == pytest.approx(np.mean(want), rel=1e-12)
    # one subsample is the balanced ECE of before; norm and a Generator seed pass through
    assert expected_calibration_error(p, y, balanced=True, seed=5, n_subsamples=1) == pytest.approx(want[0], rel=1e-12)
    assert expected_calibration_error(p, y, balanced=True, seed=np.random.default_rng(5), n_subsamples=7) == got
    mce = expected_calibration_error(p, y, balanced=True, seed=5, n_subsamples=3, norm="max")
    assert 0 < mce <= 1 and mce != expected_calibration_error(p, y, balanced=True, seed=5, norm="max")


def test_n_subsamples_errors_name_the_argument():
    p, y = miscalibrated_data(9, 200)
    with pytest.raises(ValueError, match=r"n_subsamples applies only with balanced=True; got n_subsamples=3"):
        expected_calibration_error(p, y, n_subsamples=3)
    with pytest.raises(ValueError, match=r"n_subsamples must be an integer >= 1; got 0"):
        expected_calibration_error(p, y, balanced=True, n_subsamples=0)
    with pytest.raises(TypeError, match=r"n_subsamples must be an integer >= 1; got float 2.0"):
        expected_calibration_error(p, y, balanced=True, n_subsamples=2.0)


# --------------------------------------------------------------------------- reliability


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_matches_sklearn(strategy):
    calibration_curve = pytest.importorskip("sklearn.calibration").calibration_curve

    p, y = miscalibrated_data(7, 1000)  # n - 1 = 999: no quantile edge lands on a data point
    frac_ref, conf_ref = calibration_curve(y > 0, p, n_bins=10, strategy=strategy)
    curve = reliability_curve(p, y, n_bins=10, strategy=strategy).nonempty()
    np.testing.assert_allclose(curve.mean_confidence, conf_ref, rtol=1e-12)
    np.testing.assert_allclose(curve.fraction_relevant, frac_ref, rtol=1e-12)
    assert curve.counts.sum() == 1000
    if strategy == "quantile":
        assert curve.counts.tolist() == [100] * 10  # equal mass


def test_reliability_empty_bins_and_unpacking():
    conf, frac, count = reliability_curve([0.05, 0.06, 0.95], [0, 1, 1], n_bins=4)
    assert count.tolist() == [2, 0, 0, 1]
    assert np.isnan(conf[1]) and np.isnan(frac[2])
    curve = reliability_curve([0.05, 0.06, 0.95], [0, 1, 1], n_bins=4)
    assert curve.n_bins == 4 and curve.edges.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert curve.nonempty().counts.tolist() == [2, 1]
    assert curve.ece() == pytest.approx(expected_calibration_error([0.05, 0.06, 0.95], [0, 1, 1], n_bins=4))


# --------------------------------------------------------------------------- Brier, NLL


def test_brier_and_nll_match_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    brier_score_loss, log_loss = sk.brier_score_loss, sk.log_loss

    p, y = miscalibrated_data(8, 5000)
    assert brier_score(p, y) == pytest.approx(brier_score_loss(y > 0, p), rel=1e-12)
    assert negative_log_likelihood(p, y) == pytest.approx(log_loss(y > 0, p), rel=1e-9)
    # clipping: a confident mistake costs -log(eps), not inf
    assert negative_log_likelihood([0.0], [1], eps=1e-6) == pytest.approx(-math.log(1e-6))
    assert negative_log_likelihood([1.0, 0.0], [1, 0]) == pytest.approx(0.0, abs=1e-12)


# --------------------------------------------------------------------------- structure


def test_calibration_by_rank_matches_loop():
    rng = np.random.default_rng(9)
    lengths = rng.integers(2, 8, 40)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    p = np.round(rng.random(offsets[-1]), 1)  # ties
    y = (rng.random(offsets[-1]) < p).astype(int)
    by_rank: dict[int, list[int]] = {}
    for a, b in itertools.pairwise(offsets):
        order = sorted(range(a, b), key=lambda i: (-p[i], i))
        for r, i in enumerate(order):
            by_rank.setdefault(r, []).append(i)
    rl = RankedLists.from_flat(p, y, offsets)
    got = calibration_by_rank(rl, n_bins=5)
    assert got.shape == (7,)
    for r in range(7):
        idx = by_rank[r]
        assert got[r] == pytest.approx(ref_ece(p[idx], y[idx], 5), abs=1e-14)
    short = calibration_by_rank(rl, n_bins=5, max_rank=3)
    np.testing.assert_array_equal(short, got[:3])
    long = calibration_by_rank(rl, n_bins=5, max_rank=9)
    assert np.isnan(long[7:]).all()
    dense = calibration_by_rank(p[:20].reshape(4, 5), y[:20].reshape(4, 5), strategy="quantile", n_bins=2)
    assert dense.shape == (5,)


def test_imbalance_sweep_matches_loop():
    rng = np.random.default_rng(10)
    n_q, n_c = 50, 6
    p = rng.random((n_q, n_c))
    y = np.zeros((n_q, n_c), int)
    y[np.arange(n_q), rng.integers(0, n_c, n_q)] = 1
    sweep = imbalance_sweep(p, y, n_bins=5)
    assert isinstance(sweep, ImbalanceSweep)
    assert sweep.n_negatives.tolist() == [1, 2, 3, 4, 5]
    for i, m in enumerate(sweep.n_negatives):
        keep_p, keep_y = [], []
        for q in range(n_q):
            negs = 0
            for j in range(n_c):
                if y[q, j] > 0 or negs < m:
                    keep_p.append(p[q, j])
                    keep_y.append(y[q, j])
                negs += y[q, j] == 0
        assert sweep.n_pairs[i] == len(keep_p) == n_q * (m + 1)
        assert sweep.ece[i] == pytest.approx(ref_ece(keep_p, keep_y, 5), abs=1e-14)


def test_imbalance_sweep_random_order_and_steps():
    rng = np.random.default_rng(11)
    p = rng.random((30, 5))
    y = (rng.random((30, 5)) < 0.3).astype(int)
    a = imbalance_sweep(p, y, seed=0, n_negatives=[1, 3])
    b = imbalance_sweep(p, y, seed=0, n_negatives=[1, 3])
    np.testing.assert_array_equal(a.ece, b.ece)
    full = imbalance_sweep(p, y, n_negatives=[5])
    assert full.ece[0] == pytest.approx(expected_calibration_error(p, y))  # all kept
    n_neg = (y == 0).sum(1)
    assert a.n_pairs.tolist() == [int(((y > 0).sum(1) + np.minimum(n_neg, m)).sum()) for m in (1, 3)]
    # PH convention passes through
    c = imbalance_sweep(p, y, n_negatives=[5], convention="penha-hauff")
    assert c.ece[0] == pytest.approx(expected_calibration_error(p, y, convention="penha-hauff"))


# --------------------------------------------------------------------------- properties


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.77, 0.9, 1.0]), st.integers(0, 2)),
             min_size=1, max_size=60),
    st.integers(1, 12),
    st.sampled_from(["uniform", "quantile"]),
    st.sampled_from(["l1", "l2", "max"]),
    st.randoms(use_true_random=False),
)
def test_ece_bounds_and_permutation_invariance(pairs, n_bins, strategy, norm, rnd):
    p = np.array([a for a, _ in pairs])
    y = np.array([b for _, b in pairs])
    ece = expected_calibration_error(p, y, n_bins=n_bins, strategy=strategy, norm=norm)
    assert 0.0 <= ece <= 1.0
    perm = list(range(len(pairs)))
    rnd.shuffle(perm)
    again = expected_calibration_error(p[perm], y[perm], n_bins=n_bins, strategy=strategy, norm=norm)
    assert again == pytest.approx(ece, abs=1e-12)
    if norm == "l1":
        assert ece <= expected_calibration_error(p, y, n_bins=n_bins, strategy=strategy, norm="max") + 1e-12


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=10), st.randoms(use_true_random=False))
def test_permuting_queries_changes_nothing_for_structured(lengths, rnd):
    rng = np.random.default_rng(len(lengths))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    p = np.round(rng.random(offsets[-1]), 1)
    y = (rng.random(offsets[-1]) < 0.4).astype(int)
    rl = RankedLists.from_flat(p, y, offsets)
    perm = list(range(len(lengths)))
    rnd.shuffle(perm)
    sh = rl.subset(perm)
    np.testing.assert_allclose(calibration_by_rank(rl, n_bins=4), calibration_by_rank(sh, n_bins=4))
    if (y == 0).any():
        np.testing.assert_allclose(imbalance_sweep(rl, n_bins=4).ece, imbalance_sweep(sh, n_bins=4).ece)
    assert expected_calibration_error(rl) == pytest.approx(expected_calibration_error(sh))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_ece_of_calibrated_data_tends_to_zero(seed):
    small = expected_calibration_error(*calibrated_data(seed, 1_000))
    large = expected_calibration_error(*calibrated_data(seed, 200_000))
    assert large < 0.01
    assert large < small + 1e-3
    assert expected_calibration_error(*calibrated_data(seed, 200_000), strategy="quantile") < 0.01


def test_ece_of_miscalibrated_data_does_not_vanish():
    assert expected_calibration_error(*miscalibrated_data(0, 200_000)) > 0.1


# --------------------------------------------------------------------------- errors


def test_error_nan_inf_and_range():
    with pytest.raises(ValueError, match="probs must be finite; got 1 NaN or inf values"):
        expected_calibration_error([0.1, np.nan], [0, 1])
    with pytest.raises(ValueError, match="probs must be finite"):
        brier_score([0.1, np.inf], [0, 1])
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]; got 1 values outside, e.g. 1.5"):
        reliability_curve([0.1, 1.5], [0, 1])
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        negative_log_likelihood([-0.1, 0.5], [0, 1])
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        expected_calibration_error(RankedLists.from_dense([[2.0, 0.1]], [[1, 0]]))
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        calibration_by_rank([[2.0, 0.1]], [[1, 0]])


def test_error_shapes_and_empty():
    with pytest.raises(ValueError, match=r"probs and labels must have the same shape; got \(2,\) and \(3,\)"):
        expected_calibration_error([0.1, 0.2], [0, 1, 1])
    with pytest.raises(ValueError, match="probs must not be empty"):
        expected_calibration_error([], [])
    with pytest.raises(ValueError, match="probs must be 1-D or 2-D"):
        brier_score(np.zeros((2, 2, 2)), np.zeros((2, 2, 2), int))
    with pytest.raises(ValueError, match=r"probs must be 2-D .* got an array of shape \(3,\)"):
        calibration_by_rank([0.1, 0.2, 0.3], [0, 1, 0])
    with pytest.raises(ValueError, match="every query needs at least one candidate"):
        imbalance_sweep(np.zeros((2, 0)), np.zeros((2, 0), int))
    with pytest.raises(ValueError, match="offsets must end at the number of pairs"):
        expected_calibration_error(RankedLists.from_flat([0.1, 0.2], [0, 1], [0, 1]))


def test_error_labels():
    with pytest.raises(ValueError, match="labels must be integers >= 0; got 1 negative values"):
        expected_calibration_error([0.1, 0.2], [0, -1])
    with pytest.raises(ValueError, match="labels are required when probs is an array"):
        brier_score([0.1, 0.2])
    with pytest.raises(ValueError, match="labels must be None when probs is a RankedLists"):
        brier_score(RankedLists.from_dense([[0.1, 0.2]], [[0, 1]]), [0, 1])


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n_bins": 0}, ValueError, "n_bins must be an integer >= 1; got 0"),
        ({"n_bins": 2.5}, TypeError, "n_bins must be an integer >= 1"),
        ({"strategy": "equal"}, ValueError, "strategy must be one of 'uniform', 'quantile'; got 'equal'"),
        ({"norm": "l3"}, ValueError, "norm must be one of 'l1', 'l2', 'max'; got 'l3'"),
        ({"convention": "guo"}, ValueError, "convention must be one of 'naeini', 'penha-hauff'"),
        ({"convention": "penha-hauff", "strategy": "quantile"}, ValueError, "equal width only"),
        ({"convention": "penha-hauff", "norm": "max"}, ValueError, "l1 ECE only"),
    ],
)
def test_error_options(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        expected_calibration_error([0.1, 0.9], [0, 1], **kwargs)


def test_error_other_options():
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        reliability_curve([0.1, 0.9], [0, 1], n_bins=0)
    with pytest.raises(ValueError, match="strategy must be one of"):
        reliability_curve([0.1, 0.9], [0, 1], strategy="kmeans")
    with pytest.raises(ValueError, match="balanced=True needs both relevant and non-relevant pairs; got 2"):
        expected_calibration_error([0.1, 0.9], [1, 1], balanced=True)
    with pytest.raises(ValueError, match=r"eps must be a finite number > 0 and < 0.5; got 0.7"):
        negative_log_likelihood([0.1, 0.9], [0, 1], eps=0.7)
    with pytest.raises(ValueError, match="max_rank must be an integer >= 1; got 0"):
        calibration_by_rank([[0.1, 0.9]], [[0, 1]], max_rank=0)
    with pytest.raises(ValueError, match="imbalance_sweep needs non-relevant candidates"):
        imbalance_sweep([[0.1, 0.9]], [[1, 1]])
    with pytest.raises(ValueError, match="n_negatives must hold at least one step"):
        imbalance_sweep([[0.1, 0.9]], [[0, 1]], n_negatives=[])
    with pytest.raises(ValueError, match="n_negatives must be an integer >= 1; got 0"):
        imbalance_sweep([[0.1, 0.9]], [[0, 1]], n_negatives=[0])
    with pytest.raises(ValueError, match="norm must be one of"):
        calibration_by_rank([[0.1, 0.9]], [[0, 1]], norm="l0")


@pytest.mark.parametrize("metric", ["brier_score", "negative_log_likelihood"])
def test_per_query_must_be_a_flag(metric):
    import uncertank.metrics as M

    with pytest.raises(TypeError, match=r"^per_query must be a bool \(True or False\); got ndarray"):
        getattr(M, metric)(np.array([0.2, 0.8]), np.array([0, 1]), per_query=np.array([True, False]))
