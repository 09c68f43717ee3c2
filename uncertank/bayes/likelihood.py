"""The zero-one-inflated beta (ZOiB) distribution: log-density, sampler, PyTensor graph.

A score ``y`` in [0, 1] is 0 or 1 with probability ``zoi`` (and then 1 with
probability ``coi``), and otherwise follows a Beta distribution with mean
``mu`` and precision ``phi`` (Ospina & Ferrari 2010; the ``zero_one_inflated_beta``
family of brms, used by Benham, Moffat & Culpepper, ECIR 2021)::

    p(y = 0)      = zoi * (1 - coi)
    p(y = 1)      = zoi * coi
    p(y), 0<y<1   = (1 - zoi) * Beta(y; mu * phi, (1 - mu) * phi)

Setting ``coi = 0`` gives the zero-inflated beta (brms's
``zero_inflated_beta``, the paper's per-rank model), where ``zoi`` is the
probability of a zero.

The NumPy functions are the reference (and what the posterior predictive
draws from); :func:`zoib_logp_graph` is the same density as a PyTensor graph
for the PyMC models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from uncertank.validation import as_float_array, check_broadcast, check_probabilities, check_seed

if TYPE_CHECKING:
    from typing import TypeAlias

    from pytensor.graph.basic import Apply
    from pytensor.tensor.type import TensorType
    from pytensor.tensor.variable import TensorVariable

    #: A tensor computed by a PyTensor graph: PyTensor's own constraint on a variable's owner is ``Apply[Any]``.
    TensorGraph: TypeAlias = TensorVariable[TensorType, Apply[Any]]

__all__ = ["zoib_logp_graph", "zoib_logpdf", "zoib_rvs"]


def _check_params(mu: ArrayLike, phi: ArrayLike, zoi: ArrayLike, coi: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    mu_a = as_float_array(mu, "mu", ndim=(0, 1, 2, 3))
    phi_a = as_float_array(phi, "phi", ndim=(0, 1, 2, 3))
    zoi_a = as_float_array(zoi, "zoi", ndim=(0, 1, 2, 3))
    coi_a = as_float_array(coi, "coi", ndim=(0, 1, 2, 3))
    check_probabilities(mu_a, "mu", closed="neither")
    if (phi_a <= 0).any():
        raise ValueError(f"phi must be > 0; got min {float(phi_a.min())!r}")
    check_probabilities(zoi_a, "zoi")
    check_probabilities(coi_a, "coi")
    return mu_a, phi_a, zoi_a, coi_a


def zoib_logpdf(
    y: ArrayLike, mu: ArrayLike, phi: ArrayLike, zoi: ArrayLike, coi: ArrayLike
) -> NDArray[np.float64]:
    """Log-density (log-mass at 0 and 1) of the zero-one-inflated beta.

    Parameters
    ----------
    y : array_like
        Scores in [0, 1]; any shape that broadcasts with the parameters.
    mu : array_like
        Beta mean in (0, 1).
    phi : array_like
        Beta precision, > 0 (shape parameters ``mu * phi`` and ``(1 - mu) * phi``).
    zoi : array_like
        Probability of an exact 0 or 1, in [0, 1].
    coi : array_like
        Probability that an exact 0-or-1 is a 1, in [0, 1].

    Returns
    -------
    ndarray
        ``log p(y)``, broadcast over the inputs; ``-inf`` where ``y`` has
        zero probability (a 1 when ``coi = 0``, say).

    Examples
    --------
    >>> float(zoib_logpdf(0.0, 0.5, 2.0, 0.2, 0.25))  # log(0.2 * 0.75)
    -1.8971199848858813
    """
    y_a = as_float_array(y, "y", ndim=(0, 1, 2, 3))
    check_probabilities(y_a, "y")
    mu_a, phi_a, zoi_a, coi_a = _check_params(mu, phi, zoi, coi)
    check_broadcast({"y": y_a.shape, "mu": mu_a.shape, "phi": phi_a.shape, "zoi": zoi_a.shape, "coi": coi_a.shape})
    y_b, mu_b, phi_b, zoi_b, coi_b = np.broadcast_arrays(y_a, mu_a, phi_a, zoi_a, coi_a)
    inner = (y_b > 0) & (y_b < 1)
    ys = np.where(inner, y_b, 0.5)
    a, b = mu_b * phi_b, (1 - mu_b) * phi_b
    log_beta = (special.gammaln(phi_b) - special.gammaln(a) - special.gammaln(b)
                + (a - 1) * np.log(ys) + (b - 1) * np.log1p(-ys))
    with np.errstate(divide="ignore"):
        out = np.where(
            y_b == 0, np.log(zoi_b) + np.log1p(-coi_b),
            np.where(y_b == 1, np.log(zoi_b) + np.log(coi_b), np.log1p(-zoi_b) + log_beta),
        )
    return np.asarray(out, dtype=np.float64)


def zoib_rvs(
    mu: ArrayLike,
    phi: ArrayLike,
    zoi: ArrayLike,
    coi: ArrayLike,
    *,
    rng: np.random.Generator | int | None = None,
    size: int | tuple[int, ...] | None = None,
) -> NDArray[np.float64]:
    """Draw from the zero-one-inflated beta.

    Each draw is 0 or 1 with probability ``zoi`` (1 with probability ``coi``
    given that), and otherwise a Beta(``mu * phi``, ``(1 - mu) * phi``) draw.
    Every draw lies in [0, 1].

    Parameters
    ----------
    mu, phi, zoi, coi : array_like
        As in :func:`zoib_logpdf`; broadcast against each other and ``size``.
    rng : numpy.random.Generator or int, optional
        Random state (a seed is turned into a Generator).
    size : int or tuple of int, optional
        Output shape; the broadcast shape of the parameters by default.

    Returns
    -------
    ndarray of the broadcast shape (or ``size``)
        The draws, in [0, 1].
    """
    mu_a, phi_a, zoi_a, coi_a = _check_params(mu, phi, zoi, coi)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(check_seed(rng, "rng"))
    if size is not None:
        sizes = (size,) if isinstance(size, (int, np.integer)) and not isinstance(size, bool) else size
        if not isinstance(sizes, tuple) or not all(
                isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0 for n in sizes):
            raise ValueError(f"size must be None, an integer >= 0 or a tuple of them; got {size!r}")
        try:
            np.broadcast_shapes(mu_a.shape, phi_a.shape, zoi_a.shape, coi_a.shape, sizes)
        except ValueError:
            raise ValueError(f"size must be a shape mu, phi, zoi and coi broadcast to; got {size!r}") from None
    shape = np.broadcast_shapes(mu_a.shape, phi_a.shape, zoi_a.shape, coi_a.shape) if size is None else size
    mu_b, phi_b, zoi_b, coi_b = (np.broadcast_to(p, shape) for p in (mu_a, phi_a, zoi_a, coi_a))
    inflated = gen.random(shape) < zoi_b
    one = gen.random(shape) < coi_b
    # Beta as a ratio of gammas, done in log space so that tiny shapes cannot give 0/0.
    a, b = mu_b * phi_b, (1 - mu_b) * phi_b
    log_ga = np.log(gen.gamma(a + 1.0)) + np.log(gen.random(shape)) / a
    log_gb = np.log(gen.gamma(b + 1.0)) + np.log(gen.random(shape)) / b
    beta = special.expit(log_ga - log_gb)
    return np.where(inflated, one.astype(np.float64), beta)


def zoib_logp_graph(
    value: TensorGraph, mu: TensorGraph, phi: TensorGraph, zoi: TensorGraph, coi: TensorGraph
) -> TensorGraph:
    """The ZOiB log-density as a PyTensor graph (for ``pm.CustomDist``).

    The Beta branch is evaluated at 0.5 where ``value`` is 0 or 1 and then
    discarded, so that neither its value nor its gradient can be NaN.
    With ``coi = 0`` (a constant) it is the zero-inflated beta.

    Parameters
    ----------
    value, mu, phi, zoi, coi : TensorVariable
        As in :func:`zoib_logpdf`.

    Returns
    -------
    TensorVariable
        The elementwise log-density.
    """
    for arg, label in ((value, "value"), (mu, "mu"), (phi, "phi"), (zoi, "zoi"), (coi, "coi")):
        if not hasattr(arg, "type") and np.asarray(arg).dtype.kind not in "biuf":
            raise TypeError(f"{label} must be a number, an array or a tensor; got {type(arg).__name__} {arg!r}")
    concrete = [(label, np.shape(arg)) for arg, label in ((value, "value"), (mu, "mu"), (phi, "phi"), (zoi, "zoi"),
                                                         (coi, "coi")) if not hasattr(arg, "type")]
    try:
        np.broadcast_shapes(*(shape for _, shape in concrete))
    except ValueError:
        raise ValueError("value, mu, phi, zoi and coi must have shapes that broadcast together; got "
                         + ", ".join(f"{label} {shape}" for label, shape in concrete)) from None
    import pytensor.tensor as pt

    value, mu, phi, zoi, coi = (a if hasattr(a, "type") else pt.as_tensor_variable(np.asarray(a, dtype=np.float64))
                                for a in (value, mu, phi, zoi, coi))
    is0 = pt.eq(value, 0.0)
    is1 = pt.eq(value, 1.0)
    inner = pt.and_(pt.gt(value, 0.0), pt.lt(value, 1.0))
    ys = pt.switch(inner, value, 0.5)
    a = mu * phi
    b = (1.0 - mu) * phi
    log_beta = (pt.gammaln(phi) - pt.gammaln(a) - pt.gammaln(b)
                + (a - 1.0) * pt.log(ys) + (b - 1.0) * pt.log1p(-ys))
    return pt.switch(  # type: ignore[no-any-return]
        is0, pt.log(zoi) + pt.log1p(-coi),
        pt.switch(is1, pt.log(zoi) + pt.log(coi), pt.log1p(-zoi) + log_beta),
    )
