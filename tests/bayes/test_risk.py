from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from uncertank.bayes import georisk, loss_weight, urisk, zrisk


def _plain_urisk(s, b, r, convention):
    total, n = 0.0, 0
    for x, y in zip(s, b, strict=True):
        if math.isnan(x) or math.isnan(y):
            continue
        d = x - y
        if convention == "benham":
            total += -(d if d > 0 else r * d)
        else:
            total += d if d > 0 else (1 + r) * d
        n += 1
    return total / n


def _plain_zrisk_georisk(x, w):
    n_s, n_t = len(x), len(x[0])
    rows = [sum(row) for row in x]
    cols = [sum(x[i][j] for i in range(n_s)) for j in range(n_t)]
    total = sum(rows)
    zr, gr = [], []
    for i in range(n_s):
        acc = 0.0
        for j in range(n_t):
            e = rows[i] * cols[j] / total
            z = 0.0 if e == 0 else (x[i][j] - e) / math.sqrt(e)
            acc += z if z > 0 else w * z
        zr.append(acc)
        gr.append(math.sqrt(rows[i] / n_t * norm.cdf(acc / n_t)))
    return zr, gr


@pytest.mark.parametrize("convention", ["benham", "trec"])
@pytest.mark.parametrize("r", [0.0, 1.0, 2.0, 5.0])
def test_urisk_matches_plain_loop(convention, r):
    rng = np.random.default_rng(int(r * 10) + len(convention))
    s = rng.uniform(size=(6, 25))
    b = rng.uniform(size=25)
    s[2, 3] = np.nan
    ours = urisk(s, b, r=r, convention=convention)
    ref = [_plain_urisk(row, b, r, convention) for row in s]
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_urisk_conventions_relate_and_vectorise_over_draws():
    rng = np.random.default_rng(0)
    rep = rng.uniform(size=(50, 4, 10))  # (draws, systems, topics)
    base = rep[:, [1], :]
    benham2 = urisk(rep, base, r=2)
    trec1 = urisk(rep, base, r=1, convention="trec")
    assert benham2.shape == (50, 4)
    np.testing.assert_allclose(benham2, -trec1)
    np.testing.assert_allclose(benham2[:, 1], 0.0)
    # r = 1 is minus the mean difference
    np.testing.assert_allclose(urisk(rep, base, r=1), -(rep - base).mean(axis=-1))


def test_urisk_no_shared_topic_is_nan():
    assert np.isnan(urisk([np.nan, 0.2], [0.1, np.nan]))


def test_zrisk_georisk_match_plain_loop():
    rng = np.random.default_rng(3)
    x = rng.uniform(size=(5, 12))
    x[:, 4] = 0.0  # a topic nobody scores on
    for r, conv, w in [(1.0, "benham", 1.0), (2.0, "benham", 2.0), (1.0, "trec", 2.0), (0.0, "trec", 1.0)]:
        zr, gr = _plain_zrisk_georisk(x.tolist(), w)
        np.testing.assert_allclose(zrisk(x, r=r, convention=conv), zr, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(georisk(x, r=r, convention=conv), gr, rtol=1e-12)


def test_zrisk_vectorises_over_draws():
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(7, 3, 6))
    np.testing.assert_allclose(zrisk(x, r=2), np.stack([zrisk(m, r=2) for m in x]))
    np.testing.assert_allclose(georisk(x, r=2), np.stack([georisk(m, r=2) for m in x]))


def test_zrisk_hand_checked():
    # One system doubling the other on every topic: e = S_i T_j / N.
    x = np.array([[0.2, 0.4], [0.1, 0.2]])
    # row sums 0.6, 0.3; col sums 0.3, 0.6; N = 0.9; e = x exactly, so z = 0.
    np.testing.assert_allclose(zrisk(x), [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(georisk(x), np.sqrt(np.array([0.3, 0.15]) * 0.5))


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: loss_weight(1.0, "ecir"), ValueError, "convention must be one of 'benham', 'trec'; got 'ecir'"),
        (lambda: loss_weight("2", "benham"), TypeError, "r must be a number; got str"),
        (lambda: loss_weight(-2.0, "trec"), ValueError, "loss weight >= 0"),
        (lambda: zrisk([0.1, 0.2]), ValueError, r"matrix must have shape \(\.\.\., n_systems, n_topics\)"),
        (lambda: zrisk([[0.1, np.nan], [0.2, 0.3]]), ValueError, "matrix must be complete"),
        (lambda: georisk([[0.1, -0.2], [0.2, 0.3]]), ValueError, "matrix must be non-negative"),
    ],
)
def test_risk_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
