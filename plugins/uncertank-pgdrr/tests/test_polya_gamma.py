from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from uncertank_pgdrr import polya_gamma_moments, random_polya_gamma

mpmath = pytest.importorskip("mpmath")
random_polyagamma = pytest.importorskip("polyagamma").random_polyagamma

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
KS_ZS = [0.0, 1e-8, 0.5, 2.76, 10.0, 50.0]


def gen(seed: int, device: str = "cpu") -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def reference_moments(h: float, z: float) -> tuple[float, float]:
    """E and Var of PG(h, z) from the closed forms, in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    if z == 0:
        return h / 4, h / 24
    z = mpmath.mpf(z)
    mean = h * mpmath.tanh(z / 2) / (2 * z)
    var = h * (mpmath.sinh(z) - z) / (4 * z**3 * mpmath.cosh(z / 2) ** 2)
    return float(mean), float(var)


def reference_laplace(h: float, z: float, t: float) -> float:
    """E[exp(-t w)] = cosh^h(z/2) / cosh^h(sqrt(z^2/4 + t/2)), in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    z, t = mpmath.mpf(z), mpmath.mpf(t)
    return float((mpmath.cosh(z / 2) / mpmath.cosh(mpmath.sqrt(z**2 / 4 + t / 2))) ** h)


@pytest.mark.parametrize("z", [0.0, 1e-9, 1e-4, 1e-3, 0.0999, 0.1, 0.5, 2.76, 30.0, 700.0, 800.0, 1e4])
@pytest.mark.parametrize("h", [1, 3])
def test_moments_match_the_closed_forms(h, z):
    mean, var = polya_gamma_moments(h, z)
    ref_mean, ref_var = reference_moments(h, z)
    assert mean.dtype == torch.float64
    np.testing.assert_allclose(mean.item(), ref_mean, rtol=1e-12)
    np.testing.assert_allclose(var.item(), ref_var, rtol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("h", "z"), [(1, 0.0), (1, 1e-8), (1, 0.5), (1, 2.76), (1, 10.0), (1, 50.0),
                                      (1, 1e3), (1, 1e4), (4, 1.3), (2, -7.0)])
def test_mean_and_variance_within_four_standard_errors(device, h, z):
    n = 200_000
    w = random_polya_gamma(h, torch.full((n,), z, dtype=torch.float64, device=device), generator=gen(1, device))
    w = w.cpu().numpy()
    assert np.isfinite(w).all() and (w > 0).all()
    ref_mean, ref_var = reference_moments(h, abs(z))
    mean_se = np.sqrt(ref_var / n)
    assert abs(w.mean() - ref_mean) < 4 * mean_se
    sq = (w - w.mean()) ** 2
    var_se = sq.std() / np.sqrt(n)
    assert abs(w.var() - ref_var) < 4 * var_se


@pytest.mark.parametrize(("h", "z"), [(1, 0.0), (1, 2.76), (3, 0.7), (1, 40.0)])
def test_laplace_transform(h, z):
    n = 100_000
    w = random_polya_gamma(h, torch.full((n,), z, dtype=torch.float64), generator=gen(2)).numpy()
    for t in (0.3, 2.0, 10.0, 80.0):
        e = np.exp(-t * w)
        assert abs(e.mean() - reference_laplace(h, z, t)) < 4 * e.std() / np.sqrt(n), t


@pytest.mark.parametrize("z", KS_ZS)
def test_two_sample_ks_against_polyagamma_devroye(z):
    n = 20_000
    ours = random_polya_gamma(1, torch.full((n,), z, dtype=torch.float64), generator=gen(3)).numpy()
    theirs = random_polyagamma(1, z, size=n, method="devroye", random_state=np.random.default_rng(3))
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-3


def test_ks_for_a_sum_of_several():
    n = 20_000
    ours = random_polya_gamma(5, torch.full((n,), 1.7, dtype=torch.float64), generator=gen(4)).numpy()
    theirs = random_polyagamma(5, 1.7, size=n, method="devroye", random_state=np.random.default_rng(4))
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-3


def test_ks_detects_a_wrong_z():
    # The KS comparison above has power: a 10% change of z is rejected.
    n = 20_000
    ours = random_polya_gamma(1, torch.full((n,), 2.76, dtype=torch.float64), generator=gen(3)).numpy()
    theirs = random_polyagamma(1, 2.76 * 1.1, size=n, method="devroye", random_state=np.random.default_rng(3))
    assert stats.ks_2samp(ours, theirs).pvalue < 1e-3


def test_symmetric_in_z():
    z = torch.linspace(0, 20, 1000, dtype=torch.float64)
    assert torch.equal(random_polya_gamma(1, z, generator=gen(5)), random_polya_gamma(1, -z, generator=gen(5)))
    n = 20_000
    pos = random_polya_gamma(1, torch.full((n,), 3.0, dtype=torch.float64), generator=gen(6)).numpy()
    neg = random_polya_gamma(1, torch.full((n,), -3.0, dtype=torch.float64), generator=gen(7)).numpy()
    assert stats.ks_2samp(pos, neg).pvalue > 1e-3


@pytest.mark.parametrize("device", DEVICES)
def test_seeded_generators_reproduce(device):
    z = torch.linspace(-5, 5, 5000, dtype=torch.float64, device=device)
    a = random_polya_gamma(2, z, generator=gen(8, device))
    b = random_polya_gamma(2, z, generator=gen(8, device))
    c = random_polya_gamma(2, z, generator=gen(9, device))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    torch.manual_seed(10)
    d = random_polya_gamma(1, z)
    torch.manual_seed(10)
    assert torch.equal(d, random_polya_gamma(1, z))


def test_shapes_dtypes_and_broadcasting():
    z32 = torch.zeros(4, dtype=torch.float32)
    assert random_polya_gamma(1, z32, generator=gen(0)).dtype == torch.float32
    assert random_polya_gamma(1, 0.5, generator=gen(0)).dtype == torch.get_default_dtype()
    assert random_polya_gamma(1, 0.5, generator=gen(0)).shape == ()
    h = torch.tensor([[1], [2], [3]])
    w = random_polya_gamma(h, torch.zeros(4, dtype=torch.float64), generator=gen(0))
    assert w.shape == (3, 4)
    assert random_polya_gamma(1, torch.zeros((0, 3)), generator=gen(0)).shape == (0, 3)
    assert random_polya_gamma(np.int64(2), np.array([0.1, 0.2]), generator=gen(0)).shape == (2,)
    assert random_polya_gamma(2.0, [0.3], generator=gen(0)).shape == (1,)
    z = torch.ones(3, requires_grad=True)
    assert not random_polya_gamma(1, z, generator=gen(0)).requires_grad


def test_per_lane_h_sums_the_right_number_of_draws():
    n = 50_000
    h = torch.tensor([1, 2, 7]).repeat(n)
    z = torch.tensor([0.3, 4.0, 1.0], dtype=torch.float64).repeat(n)
    w = random_polya_gamma(h, z, generator=gen(11)).reshape(n, 3).numpy()
    for j, (hj, zj) in enumerate([(1, 0.3), (2, 4.0), (7, 1.0)]):
        m, v = reference_moments(hj, zj)
        assert abs(w[:, j].mean() - m) < 4 * np.sqrt(v / n)


def test_polyagamma_backend():
    n = 100_000
    z = torch.full((n,), 2.0, dtype=torch.float64)
    a = random_polya_gamma(3, z, generator=gen(12), backend="polyagamma")
    assert torch.equal(a, random_polya_gamma(3, z, generator=gen(12), backend="polyagamma"))
    m, v = reference_moments(3, 2.0)
    assert abs(a.mean().item() - m) < 4 * np.sqrt(v / n)
    assert random_polya_gamma(1, z.float()[:3], generator=gen(0), backend="polyagamma").dtype == torch.float32


@pytest.mark.slow
def test_normal_approximation_is_opt_in_and_close_for_large_h():
    n = 100_000
    z = torch.full((n,), 1.5, dtype=torch.float64)
    approx = random_polya_gamma(200, z, generator=gen(13), method="normal-approx").numpy()
    m, v = reference_moments(200, 1.5)
    assert abs(approx.mean() - m) < 4 * np.sqrt(v / n)
    assert abs(approx.var() / v - 1) < 0.02
    exact = random_polya_gamma(200, z[:2_000], generator=gen(14)).numpy()
    assert stats.ks_2samp(approx, exact).pvalue > 1e-3
    # It is only an approximation: at h = 50 and z = 0 the exact law's skewness shows.
    zeros = torch.zeros(20_000, dtype=torch.float64)
    exact50 = random_polya_gamma(50, zeros, generator=gen(15)).numpy()
    approx50 = random_polya_gamma(50, zeros, generator=gen(15), method="normal-approx").numpy()
    assert stats.skew(exact50) > 0.15 > abs(stats.skew(approx50))


def test_errors():
    z = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"h must be integers >= 1.*non-integer values, e.g. 2.5"):
        random_polya_gamma(2.5, z)
    with pytest.raises(ValueError, match=r"h must be integers >= 1.*non-integer values, e.g. nan"):
        random_polya_gamma(torch.tensor([1.0, float("nan"), 1.0]), z)
    with pytest.raises(ValueError, match=r"h must be integers >= 1; got 1 values below 1, e.g. 0"):
        random_polya_gamma(torch.tensor([1, 0, 2]), z)
    with pytest.raises(TypeError, match="h must be integers >= 1; got a boolean"):
        random_polya_gamma(True, z)
    with pytest.raises(TypeError, match="h must be integers >= 1; got str"):
        random_polya_gamma("one", z)
    with pytest.raises(ValueError, match=r"z must be finite; got 1 NaN and 0 infinite values, e.g. nan"):
        random_polya_gamma(1, torch.tensor([0.0, float("nan")]))
    with pytest.raises(ValueError, match=r"z must be finite; got 0 NaN and 1 infinite values, e.g. inf"):
        random_polya_gamma(1, [float("inf")])
    with pytest.raises(TypeError, match="z must be a real number"):
        random_polya_gamma(1, "zero")
    with pytest.raises(ValueError, match=r"backend must be one of 'torch', 'polyagamma'; got 'numpy'"):
        random_polya_gamma(1, z, backend="numpy")
    with pytest.raises(ValueError, match=r"method must be one of 'devroye', 'normal-approx'; got 'saddle'"):
        random_polya_gamma(1, z, method="saddle")
    with pytest.raises(TypeError, match=r"generator must be a torch\.Generator or None; got int"):
        random_polya_gamma(1, z, generator=0)
    meta = torch.zeros(3, device="meta")
    with pytest.raises(ValueError, match=r"generator must live on the device of z \(meta\); got a generator on cpu"):
        random_polya_gamma(1, meta, generator=gen(0))
    with pytest.raises(ValueError, match=r'backend="polyagamma" runs on the CPU only; z is on meta'):
        random_polya_gamma(1, meta, backend="polyagamma")
    with pytest.raises(ValueError, match=r"needs every h >= 50.*got h = 49"):
        random_polya_gamma(49, z, method="normal-approx")
    with pytest.raises(ValueError, match='runs only with backend="torch"'):
        random_polya_gamma(60, z, method="normal-approx", backend="polyagamma")


def test_proposal_mixture_weight_is_stable_for_any_z():
    from uncertank_pgdrr.polya_gamma import TRUNCATION, _exponential_mass

    mpmath.mp.dps = 60

    def reference(zz):
        zz, t = mpmath.mpf(zz), mpmath.mpf(TRUNCATION)
        k = mpmath.pi**2 / 8 + zz**2 / 2
        p = mpmath.pi / (2 * k) * mpmath.exp(-k * t)
        a, b = (t * zz - 1) / mpmath.sqrt(t), (t * zz + 1) / mpmath.sqrt(t)
        q = 2 * mpmath.exp(-zz) * mpmath.ncdf(a) + 2 * mpmath.exp(zz) * mpmath.ncdf(-b)
        return float(p / (p + q))

    zz = [0.0, 1e-9, 0.3, 1 / TRUNCATION, 2.0, 5.0, 20.0, 40.0, 100.0, 5000.0]
    ours = _exponential_mass(torch.tensor(zz, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(ours, [reference(v) for v in zz], rtol=1e-12, atol=0)


@pytest.mark.parametrize("z", [0.0, 0.5, 2.76, 50.0])
def test_several_proposals_per_lane_from_the_first_round_draw_the_same_law(z, monkeypatch):
    """A GPU draws several proposals per lane in every round of the inner loops (fewer rounds): the same
    law, checked on the CPU by forcing that rule, against the C sampler and the exact moments."""
    import uncertank_pgdrr.polya_gamma as module

    calls = []
    monkeypatch.setattr(module, "_candidates_per_lane",
                        lambda pending, device: calls.append(pending) or module._GPU_CANDIDATES)
    n = 100_000
    ours = random_polya_gamma(1, torch.full((n,), z, dtype=torch.float64), generator=gen(5)).numpy()
    assert calls and calls[0] > module._SMALL_ROUND  # the rule was asked while many lanes were pending
    theirs = random_polyagamma(1, z, size=n, method="devroye", random_state=np.random.default_rng(5))
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-3
    ref_mean, ref_var = reference_moments(1, z)
    assert abs(ours.mean() - ref_mean) < 4 * np.sqrt(ref_var / n)


def test_the_gpu_rule_takes_fewer_rounds():
    from uncertank_pgdrr.polya_gamma import _CANDIDATES, _GPU_CANDIDATES, _SMALL_ROUND, _candidates_per_lane

    assert _candidates_per_lane(10**6, torch.device("cpu")) == 1
    assert _candidates_per_lane(_SMALL_ROUND, torch.device("cpu")) == _CANDIDATES
    assert _candidates_per_lane(10**6, torch.device("cuda")) == _GPU_CANDIDATES > _CANDIDATES  # nothing runs there
