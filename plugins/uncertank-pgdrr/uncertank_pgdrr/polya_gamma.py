"""Exact Pólya-Gamma draws in PyTorch, batched over lanes, on CPU and CUDA.

A Pólya-Gamma variable PG(h, z) (Polson, Scott & Windle, JASA 2013) is an
infinite convolution of gammas; for integer ``h`` it is the sum of ``h``
independent PG(1, z) draws. PG(1, z) is ``J*(1, |z|/2) / 4``, and ``J*`` is
drawn exactly by Devroye's method as laid out in Polson, Scott & Windle
(2013, section 4): a proposal that is a mixture of an exponential tail on
``[t, inf)`` and an inverse-Gaussian truncated to ``(0, t)``, with the
truncation point ``t = 0.64``, accepted or rejected by the alternating series
of the Jacobi density. The outer acceptance rate is at least 0.9992 for
every ``z``.

Here every lane of the batch runs that algorithm at once: each round draws
one proposal for every lane still pending, decides acceptance with tensor
operations, writes the accepted values out and keeps only the indices of the
lanes still pending (index compaction), so no Python loop runs per draw and
no value crosses to the host per draw (one synchronisation per round, to
read how many lanes remain). Arithmetic is float64 throughout:

- the mixture weight of the exponential piece is written with ``erfcx`` so
  that ``z`` from 0 to 1e4 neither overflows ``exp(z)`` nor underflows the
  normal tail (see ``_exponential_mass``);
- the alternating series is evaluated as ratios ``a_n(x) / a_0(x)``, which
  are ``(2n + 1) exp(-n (n + 1) c(x))`` with ``c = 2 / x`` left of ``t`` and
  ``pi^2 x / 2`` right of it, so a tiny ``x`` (large ``z``) cannot underflow
  ``a_0`` to zero; a lane stays in the series until its next term underflows
  to exactly zero, at which point the partial sum is the limit, so the
  decision is exact in float64 (in practice two terms settle all but about
  one lane in 10^7);
- the inverse-Gaussian proposal uses the cancellation-free form
  ``mu / (1 + a/2 + sqrt(a + a^2/4))`` of Michael, Schucany & Haas's root.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from uncertank.validation import check_choice, check_instance

__all__ = ["NORMAL_APPROX_MIN_H", "TRUNCATION", "polya_gamma_moments", "random_polya_gamma"]

#: Devroye's truncation point t between the two pieces of the proposal.
TRUNCATION = 0.64
#: The smallest h accepted by ``method="normal-approx"`` (a central-limit approximation).
NORMAL_APPROX_MIN_H = 50

_PI2 = math.pi**2
_BACKENDS = ("torch", "polyagamma")
_METHODS = ("devroye", "normal-approx")
#: Proposals drawn per pending lane in the inner rejection loops once few lanes remain, and on a GPU.
_SMALL_ROUND = 4096
_CANDIDATES = 4
_GPU_CANDIDATES = 8


def _candidates_per_lane(pending: int, device: torch.device) -> int:
    """Proposals per pending lane in one round of an inner rejection loop.

    On the CPU one while many lanes are pending (every proposal costs
    arithmetic), :data:`_CANDIDATES` once few are (rounds cost more than
    arithmetic). On a GPU a round's synchronisation and kernel launches cost
    more than the arithmetic of a million lanes: :data:`_GPU_CANDIDATES`
    always. At z = 0, where a Lévy proposal is kept with probability about
    0.72, PG(1, 0) for 10^6 lanes then takes 7 rounds of random numbers
    instead of 11.
    """
    if device.type != "cpu":
        return _GPU_CANDIDATES
    return _CANDIDATES if pending <= _SMALL_ROUND else 1


def random_polya_gamma(
    h: Any,
    z: Any,
    *,
    generator: torch.Generator | None = None,
    backend: Literal["torch", "polyagamma"] = "torch",
    method: Literal["devroye", "normal-approx"] = "devroye",
) -> Tensor:
    """Draw PG(h, z) for integer ``h``, one draw per element of ``broadcast(h, z)``.

    Parameters
    ----------
    h : int or tensor or array-like of ints
        Shape parameter; every value an integer >= 1. Broadcast against ``z``.
        PG(h, z) is drawn as the sum of ``h`` independent PG(1, z) draws.
    z : float or tensor or array-like of floats
        Tilting parameter (any finite real; the law depends on ``|z|``). A
        tensor decides the device and, when floating, the output dtype.
    generator : torch.Generator, optional
        Source of randomness, on the device of ``z``; the default generator
        of that device when omitted. The same seed gives the same draws.
    backend : {"torch", "polyagamma"}
        ``"torch"`` (default) runs the batched sampler described in the
        module docstring, on the device of ``z``. ``"polyagamma"`` delegates
        to the C package ``polyagamma`` with ``method="devroye"`` (CPU only;
        its seed is drawn from ``generator``, so results stay reproducible).
    method : {"devroye", "normal-approx"}
        ``"devroye"`` (default) is exact. ``"normal-approx"`` is an
        APPROXIMATION: a normal with the exact mean and variance of PG(h, z)
        (central limit theorem over the ``h`` summands), clamped to the
        smallest positive float64; it needs every ``h`` >= 50
        (``NORMAL_APPROX_MIN_H``) and backend ``"torch"``.

    Returns
    -------
    Tensor of shape ``broadcast(h, z).shape``
        Positive draws, in the dtype of ``z`` when it is a floating tensor
        (float64 inside), else in ``torch.get_default_dtype()``.

    Raises
    ------
    ValueError
        For a non-integer or < 1 ``h``, a NaN or infinite ``z``, an unknown
        ``backend`` or ``method``, a ``generator`` on another device than
        ``z``, backend ``"polyagamma"`` on a CUDA tensor, or ``"normal-approx"``
        with ``h`` below 50.
    TypeError
        For a ``generator`` that is not a ``torch.Generator``.

    Examples
    --------
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> w = random_polya_gamma(1, torch.zeros(100_000, dtype=torch.float64), generator=g)
    >>> round(w.mean().item(), 2)  # E[PG(1, 0)] = 1/4
    0.25
    """
    check_choice(backend, "backend", _BACKENDS)
    check_choice(method, "method", _METHODS)
    if generator is not None:
        check_instance(generator, "generator", torch.Generator, "a torch.Generator or None")
    device = _device_of(z, generator)
    if backend == "polyagamma" and device.type != "cpu":
        raise ValueError(f'backend="polyagamma" runs on the CPU only; z is on {device}; use backend="torch"')
    out_dtype = z.dtype if isinstance(z, Tensor) and z.is_floating_point() else torch.get_default_dtype()
    zt = _as_z(z, device)
    ht = _as_h(h, device)
    ht, zt = _broadcast(ht, zt)
    shape = zt.shape
    hf, zf = ht.reshape(-1), zt.reshape(-1)
    if zf.numel() == 0:
        return torch.empty(shape, dtype=out_dtype, device=device)
    if method == "devroye" and float(hf.sum()) > _MAX_DRAWS:
        raise ValueError(f"h must ask for at most {_MAX_DRAWS} PG(1, z) draws in all (PG(h, z) is a sum of h "
                         f"of them); got {int(hf.sum())}")

    if method == "normal-approx":
        if backend != "torch":
            raise ValueError('method="normal-approx" runs only with backend="torch"; got backend="polyagamma"')
        small = hf < NORMAL_APPROX_MIN_H
        if small.any():
            raise ValueError(
                f'method="normal-approx" needs every h >= {NORMAL_APPROX_MIN_H} (it is a central-limit '
                f'approximation); got h = {int(hf[small][0])}; use method="devroye" for exact draws'
            )
        mean, var = polya_gamma_moments(hf, zf)
        noise = torch.randn(zf.shape, generator=generator, dtype=torch.float64, device=device)
        draws = (mean + var.sqrt() * noise).clamp_min(torch.finfo(torch.float64).tiny)
        return draws.reshape(shape).to(out_dtype)

    if backend == "polyagamma":
        draws = _polyagamma_backend(hf, zf, generator)
        return draws.reshape(shape).to(out_dtype)

    if bool((hf == 1).all()):
        draws = _pg1(zf, generator)
    else:
        lanes = torch.repeat_interleave(torch.arange(hf.numel(), device=device), hf)
        draws = torch.zeros(hf.numel(), dtype=torch.float64, device=device)
        draws.index_add_(0, lanes, _pg1(zf[lanes], generator))
    return draws.reshape(shape).to(out_dtype)


def polya_gamma_moments(h: Any, z: Any) -> tuple[Tensor, Tensor]:
    """Mean and variance of PG(h, z), in float64, stable for any finite ``z``.

    ``E = h tanh(z/2) / (2z)`` and ``Var = h (sinh z - z) / (4 z^3 cosh^2(z/2))``
    (Polson, Scott & Windle 2013), written as
    ``Var = h (tanh z - z sech z) / (2 z^3 (1 + sech z))`` so that large ``z``
    does not overflow, and with their Taylor series to ``z^8`` for ``|z| < 0.1``
    (``h (1/4 - z^2/48 + ...)`` and ``h (1/24 - z^2/120 + ...)``, the limits
    ``h/4`` and ``h/24`` at 0), where the closed forms cancel.

    Parameters
    ----------
    h : float or tensor or array-like
        Shape parameter (any positive real here).
    z : float or tensor or array-like
        Tilting parameter.

    Returns
    -------
    mean, var : Tensor of shape ``broadcast(h, z).shape``, float64

    Raises
    ------
    TypeError
        For an ``h`` or ``z`` that is not a number, tensor or array of them.
    ValueError
        For a ``z`` that is not finite, an ``h`` that is not a finite number
        > 0, or shapes that do not broadcast.

    Examples
    --------
    >>> m, v = polya_gamma_moments(1, 0.0)
    >>> float(m), float(v)
    (0.25, 0.041666666666666664)
    """
    zt = _as_z(z, z.device if isinstance(z, Tensor) else torch.device("cpu"))
    ht = _as_real(h, "h", zt.device)
    if not bool((ht > 0).all()):
        raise ValueError(f"h must be positive; got {int((ht <= 0).sum())} values <= 0, e.g. {float(ht[ht <= 0][0])}")
    ht, zt = _broadcast(ht, zt)
    small = zt < 0.1
    zs = torch.where(small, torch.ones_like(zt), zt)  # keep the unused branch finite
    w = zt * zt
    mean_series = 1 / 4 + w * (-1 / 48 + w * (1 / 480 + w * (-17 / 80640 + w * 31 / 1451520)))
    var_series = 1 / 24 + w * (-1 / 120 + w * (17 / 13440 + w * (-31 / 181440 + w * 691 / 31933440)))
    mean = torch.where(small, mean_series, torch.tanh(zs / 2) / (2 * zs))
    sech = 2 * torch.exp(-zs) / (1 + torch.exp(-2 * zs))
    var_big = (torch.tanh(zs) - zs * sech) / (2 * zs**3 * (1 + sech))
    var = torch.where(small, var_series, var_big)
    return ht * mean, ht * var


# --------------------------------------------------------------------------- checks


def _device_of(z: Any, generator: torch.Generator | None) -> torch.device:
    if isinstance(z, Tensor):
        device = z.device
        if generator is not None and generator.device.type != device.type:
            raise ValueError(
                f"generator must live on the device of z ({device}); got a generator on {generator.device}"
            )
        return device
    return generator.device if generator is not None else torch.device("cpu")


#: The most PG(1, z) draws one call of :func:`random_polya_gamma` makes (the sum of ``h``).
_MAX_DRAWS = 2**31


def _broadcast(h: Tensor, z: Tensor) -> tuple[Tensor, Tensor]:
    """``h`` and ``z`` broadcast together; else the error naming both shapes."""
    try:
        shape = torch.broadcast_shapes(h.shape, z.shape)
    except RuntimeError as exc:
        raise ValueError(f"h and z must have shapes that broadcast; got {tuple(h.shape)} and {tuple(z.shape)}") from exc
    return h.expand(shape), z.expand(shape)


def _as_real(value: Any, name: str, device: torch.device) -> Tensor:
    """``value`` (a real number, tensor or array of them) as a finite float64 tensor on ``device``."""
    if isinstance(value, (str, bytes)) or isinstance(value, bool) or (
            isinstance(value, Tensor) and (value.dtype == torch.bool or value.dtype.is_complex)):
        raise TypeError(f"{name} must be a real number, tensor or array of them; got {type(value).__name__} "
                        f"{value!r:.80}")
    try:
        if isinstance(value, Tensor):
            out = value.detach().to(device=device, dtype=torch.float64)
        else:  # straight to float64: a Python float is not rounded to float32 first
            out = torch.as_tensor(value, dtype=torch.float64, device=device)
    except OverflowError as exc:  # a Python int past a float's range (10**400)
        raise ValueError(f"{name} must be finite real numbers; got an integer beyond the range of a float") from exc
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"{name} must be a real number, tensor or array of them; got {type(value).__name__} "
                        f"({exc})") from None
    bad = ~torch.isfinite(out)
    if bad.any():
        n_nan = int(torch.isnan(out).sum())
        raise ValueError(
            f"{name} must be finite; got {n_nan} NaN and {int(bad.sum()) - n_nan} infinite values, "
            f"e.g. {float(out[bad][0])}"
        )
    return out


def _as_z(z: Any, device: torch.device) -> Tensor:
    return _as_real(z, "z", device).abs()


def _as_h(h: Any, device: torch.device) -> Tensor:
    if isinstance(h, bool) or (isinstance(h, Tensor) and h.dtype == torch.bool):
        raise TypeError(f"h must be integers >= 1; got a boolean {h!r}")
    try:
        hd = torch.as_tensor(h).detach().to(device=device, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"h must be integers >= 1; got {type(h).__name__} ({exc})") from None
    bad = ~torch.isfinite(hd) | (hd != torch.round(hd))
    if bad.any():
        raise ValueError(
            f"h must be integers >= 1 (PG(h, z) is drawn as a sum of h PG(1, z) draws); "
            f"got {int(bad.sum())} non-integer values, e.g. {float(hd[bad][0])}"
        )
    low = hd < 1
    if low.any():
        raise ValueError(f"h must be integers >= 1; got {int(low.sum())} values below 1, e.g. {int(hd[low][0])}")
    high = hd > _MAX_DRAWS
    if high.any():
        raise ValueError(f"h must be integers <= {_MAX_DRAWS}; got {int(high.sum())} values above, e.g. "
                         f"{float(hd[high][0]):g}")
    return hd.to(torch.int64)


# --------------------------------------------------------------------------- backends


def _polyagamma_backend(h: Tensor, z: Tensor, generator: torch.Generator | None) -> Tensor:
    from polyagamma import random_polyagamma

    seed = int(torch.randint(0, 2**62, (1,), generator=generator).item())  # cpu: a seed
    rng = np.random.default_rng(seed)
    draws = random_polyagamma(h.numpy(), z.numpy(), method="devroye", random_state=rng)
    return torch.from_numpy(np.asarray(draws, dtype=np.float64).reshape(-1))  # cpu: the C sampler's draws


def _exponential_mass(zz: Tensor) -> Tensor:
    """Mass p / (p + q) of the exponential piece of the proposal for J*(1, zz).

    ``p = pi / (2K) exp(-K t)`` with ``K = pi^2/8 + zz^2/2``, and ``q = 2 exp(-zz) Phi(a)
    + 2 exp(zz) Phi(-b)`` with ``a = (t zz - 1)/sqrt(t)``, ``b = (t zz + 1)/sqrt(t)``
    (Polson, Scott & Windle 2013, section 4: ``q`` is twice the inverse-Gaussian
    CDF at ``t``). Both ratios are free of ``exp(zz)``: with ``erfcx(x) = exp(x^2)
    erfc(x)``, ``2 exp(zz) Phi(-b) / p = (2K/pi) erfcx(b/sqrt 2) exp(pi^2 t/8 - 1/(2t))``
    and ``2 exp(-zz) Phi(a) / p = (4K/pi) Phi(a) exp(pi^2 t/8 + t zz^2/2 - zz)``,
    which overflows to inf (mass 0, the right limit) only when ``zz`` is large.
    """
    t = TRUNCATION
    k = _PI2 / 8 + zz * zz / 2
    a = (t * zz - 1) / math.sqrt(t)
    b = (t * zz + 1) / math.sqrt(t)
    q_left = (4 / math.pi) * k * torch.special.ndtr(a) * torch.exp(_PI2 * t / 8 + t * zz * zz / 2 - zz)
    q_right = (2 / math.pi) * k * torch.special.erfcx(b / math.sqrt(2)) * math.exp(_PI2 * t / 8 - 1 / (2 * t))
    return 1 / (1 + q_left + q_right)


def _pg1(z: Tensor, generator: torch.Generator | None) -> Tensor:
    """PG(1, z) for every lane of the 1-D float64 tensor ``z >= 0``."""
    zz = z / 2
    n = zz.numel()
    dev = zz.device
    p_exp = _exponential_mass(zz)
    k = _PI2 / 8 + zz * zz / 2
    out = torch.empty(n, dtype=torch.float64, device=dev)
    pending = torch.arange(n, device=dev)
    while pending.numel():
        m = pending.numel()
        zp = zz[pending]
        u = torch.rand((2, m), generator=generator, dtype=torch.float64, device=dev)
        use_exp = u[0] < p_exp[pending]
        x = TRUNCATION + _exponential(u[1]) / k[pending]
        ig = (~use_exp).nonzero().squeeze(1)
        if ig.numel():
            x[ig] = _truncated_inverse_gaussian(zp[ig], generator)
        accepted = _series_accepts(x, generator)
        out[pending[accepted]] = x[accepted]
        pending = pending[~accepted]
    return out / 4


def _truncated_inverse_gaussian(zz: Tensor, generator: torch.Generator | None) -> Tensor:
    """IG(mu = 1/zz, lambda = 1) truncated to (0, t), for every lane of ``zz``.

    For ``zz < 1/t`` (``mu > t``): a Lévy draw ``x = t / (1 + t E1)^2`` (the
    normal tail beyond ``1/sqrt(t)`` by an exponential proposal, kept with
    probability ``exp(-t E1^2 / 2)``), then kept with ``exp(-zz^2 x / 2)``;
    the two tests are one, ``E2 >= t E1^2 / 2 + zz^2 x / 2`` with ``E2 ~
    Exp(1)``. Else Michael, Schucany & Haas's root of a chi-square(1) draw,
    rejected when above ``t``. Both loops draw for pending lanes only,
    :func:`_candidates_per_lane` proposals per lane (the first accepted one
    kept).
    """
    t = TRUNCATION
    dev = zz.device
    out = torch.empty_like(zz)
    levy = zz < 1 / t
    for lanes, use_levy in ((levy.nonzero().squeeze(1), True), ((~levy).nonzero().squeeze(1), False)):
        pending = lanes
        while pending.numel():
            m = pending.numel()
            c = _candidates_per_lane(m, dev)
            zp = zz[pending].unsqueeze(1)
            u = torch.rand((3, m, c), generator=generator, dtype=torch.float64, device=dev)
            if use_levy:
                e1 = _exponential(u[0])
                x = t / (1 + t * e1) ** 2
                ok = _exponential(u[1]) >= 0.5 * (t * e1 * e1 + zp * zp * x)
            else:
                mu = 1 / zp
                a = mu * _chi_square_1(u[0], u[1])
                x = mu / (1 + a / 2 + torch.sqrt(a + a * a / 4))
                x = torch.where(u[2] * (mu + x) > mu, mu * mu / x, x)
                ok = x <= t
            if c == 1:
                got, x = ok.squeeze(1), x.squeeze(1)
                done = got.nonzero().squeeze(1)
                out[pending[done]] = x[done]
            else:
                got = ok.any(1)
                first = ok.to(torch.uint8).argmax(1)
                done = got.nonzero().squeeze(1)
                out[pending[done]] = x[done, first[done]]
            pending = pending[~got]
    return out


def _exponential(u: Tensor) -> Tensor:
    """Exp(1) from uniforms on [0, 1) by inversion (several times faster than ``exponential_`` on CPU)."""
    return -torch.log1p(-u)


def _chi_square_1(u1: Tensor, u2: Tensor) -> Tensor:
    """Chi-square(1), the square of one Box-Muller normal, from two uniforms on [0, 1)."""
    return 2 * _exponential(u1) * torch.cos(2 * math.pi * u2).square()


def _series_accepts(x: Tensor, generator: torch.Generator | None) -> Tensor:
    """Devroye's alternating-series test, as ratios to ``a_0(x)``; a bool per lane.

    ``S_n = 1 + sum_{k<=n} (-1)^k r_k`` with ``r_k = (2k+1) exp(-k(k+1) c)``;
    a lane is accepted at the first odd ``n`` with ``U <= S_n`` and rejected
    at the first even ``n`` with ``U > S_n``. A lane whose next term is
    exactly zero in float64 is decided by the limit.
    """
    n = x.numel()
    dev = x.device
    u = torch.rand(n, generator=generator, dtype=torch.float64, device=dev)
    c = torch.where(x <= TRUNCATION, 2 / x, 0.5 * _PI2 * x)
    accepted = torch.zeros(n, dtype=torch.bool, device=dev)
    idx = torch.arange(n, device=dev)
    s = torch.ones(n, dtype=torch.float64, device=dev)
    term = 1
    while idx.numel():
        r = (2 * term + 1) * torch.exp(-term * (term + 1) * c)
        if term % 2:
            s = s - r
            yes = u <= s
            accepted[idx[yes]] = True
            keep = ~yes & (r > 0)  # with r = 0 the next upper bound equals s: rejected
        else:
            s = s + r
            no = u > s
            last = ~no & (r == 0)  # the next lower bound equals s: accepted
            accepted[idx[last]] = True
            keep = ~no & (r > 0)
        idx, u, c, s = idx[keep], u[keep], c[keep], s[keep]
        term += 1
    return accepted
