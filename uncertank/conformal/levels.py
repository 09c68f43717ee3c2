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

from uncertank.validation import check_count, check_unit_interval

__all__ = ["conformal_rank", "min_certifiable"]


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
    alpha = check_unit_interval(alpha, "alpha")
    n = check_count(n, "n")
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
    alpha = check_unit_interval(alpha, "alpha")
    delta = check_unit_interval(delta, "delta")
    return math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-12)
