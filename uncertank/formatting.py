"""How uncertank writes numbers for people: report cells, p-values, changes, and fixed-decimal columns.

One place for both outputs that show numbers, the study report
(:mod:`uncertank.experiment.report`) and ``uncertank evaluate``'s tables.
"""

from __future__ import annotations

import math

import numpy as np

from uncertank.validation import check_number, check_positive_int

__all__ = ["format_fixed", "format_interval", "format_number", "format_percent", "format_pvalue", "format_signed"]


def format_number(value: object) -> str:
    """A table cell: integers as integers, floats with 3-4 significant decimals.

    Examples
    --------
    >>> [format_number(v) for v in (12, 0.41234, 0.0031234, 3.14159, 1234.56, 0.0, None, True)]
    ['12', '0.4123', '0.00312', '3.142', '1234.6', '0', '–', 'yes']
    """
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if not isinstance(value, (float, np.floating)):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.3f}"
    if a >= 0.01:
        return f"{v:.4f}"
    return f"{v:.3g}"


def format_signed(value: float | None) -> str:
    """A signed difference as :func:`format_number` writes it, with its sign.

    Examples
    --------
    >>> format_signed(0.08312), format_signed(-0.0021), format_signed(None)
    ('+0.0831', '-0.0021', '–')
    """
    if value is None:
        return "–"
    check_number(value, "value", "a number or None")
    text = format_number(value)
    return "+" + text if math.isfinite(value) and value > 0 else text


def format_pvalue(p: float | None) -> str:
    """A p-value: three decimals, scientific notation below 0.001.

    Examples
    --------
    >>> format_pvalue(0.04321), format_pvalue(3.2e-7), format_pvalue(None)
    ('0.043', '3.2e-07', '–')
    """
    if p is None:
        return "–"
    p = check_number(p, "p", "a number or None")
    if math.isnan(p):
        return "n/a"
    if p < 0.001:
        return f"{p:.1e}"
    return f"{p:.3f}"


def format_interval(value: object, low: object, high: object) -> str:
    """A point estimate with its interval, ``0.9120 [0.8710, 0.9432]``; a dash when there is no estimate.

    Examples
    --------
    >>> format_interval(0.912, 0.871, 0.9432), format_interval(None, None, None)
    ('0.9120 [0.8710, 0.9432]', '–')
    """
    if value is None:
        return "–"
    return f"{format_number(value)} [{format_number(low)}, {format_number(high)}]"


def format_percent(change: float | None) -> str:
    """A relative change in percent with its sign (``n/a`` for None).

    Examples
    --------
    >>> format_percent(12.345), format_percent(-0.04), format_percent(None)
    ('+12.3%', '-0.0%', 'n/a')
    """
    if change is None:
        return "n/a"
    change = check_number(change, "change", "a number or None")
    return f"{change:+.1f}%"


def format_fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, as trec_eval writes a column; ``nan`` when it is not finite.

    Examples
    --------
    >>> format_fixed(0.123456, 4), format_fixed(float("nan"), 4), format_fixed(float("inf"), 2)
    ('0.1235', 'nan', 'nan')
    """
    value = check_number(value, "value")
    digits = check_positive_int(digits, "digits", minimum=0, maximum=100)
    return "nan" if not math.isfinite(value) else f"{value:.{digits}f}"
