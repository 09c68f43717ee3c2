r"""The levels of a guarantee (``alpha``, ``delta``) and the order statistic split conformal takes.

For ``n`` exchangeable calibration queries with conformity scores
``c_1, ..., c_n`` (higher: easier to cover) and a new query's ``c``, the
rank of ``c`` among the ``n + 1`` is uniform, so

$$
P\bigl(c \ge c_{(k)}\bigr) \ge 1 - \alpha, \qquad k = \lfloor \alpha (n + 1) \rfloor,
$$

where ``c_(k)`` is the ``k``-th smallest calibration score (``-inf`` when
``k = 0``); with no ties the probability is also at most
``1 - alpha + 1 / (n + 1)`` (Vovk, Gammerman & Shafer 2005; Lei et al.
2018). :func:`conformal_rank` is that ``k``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["check_level", "conformal_rank", "min_certifiable"]


def check_level(value: Any, name: str) -> float:
    """Raise unless ``value`` is a number in (0, 1); return it as a float.

    Examples
    --------
    >>> check_level(0.1, "alpha")
    0.1
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{name} must be a number in (0, 1); got {type(value).__name__} {value!r}")
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1); got {value}")
    return float(value)


def conformal_rank(alpha: float, n: int) -> int:
    """``floor(alpha * (n + 1))``: which order statistic of ``n`` calibration scores is the threshold.

    Rounded at 9 decimals first, so that ``0.1 * 30`` is 3 and not
    2.9999999999999996 (the float product errs either way; an exact
    product is what the guarantee counts).

    Examples
    --------
    >>> conformal_rank(0.1, 29), conformal_rank(0.1, 8)
    (3, 0)
    """
    return math.floor(round(alpha * (n + 1), 9))


def min_certifiable(alpha: float, delta: float) -> int:
    """The fewest samples with which a risk ``<= alpha`` can be certified at level ``delta``.

    With ``m`` samples and no error at all, the Hoeffding-Bentkus p-value
    of a binary loss is ``(1 - alpha)^m``; it drops to ``delta`` at
    ``m = ceil(log(delta) / log(1 - alpha))``, and no fewer samples can
    reject the hypothesis that the risk exceeds ``alpha``.

    Examples
    --------
    >>> min_certifiable(0.1, 0.1)
    22
    """
    return math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-12)
