"""Number formatting and Markdown cells of a study's report."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["format_number", "format_pvalue", "markdown_table"]


def format_number(value: Any) -> str:
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
    if math.isnan(p):
        return "n/a"
    if p < 0.001:
        return f"{p:.1e}"
    return f"{p:.3f}"


def pct(change: float | None) -> str:
    """A relative change in percent with its sign (``n/a`` for None)."""
    return "n/a" if change is None else f"{change:+.1f}%"


def names(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (names in code font)."""
    quoted = [f"`{x}`" for x in items]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def md_cell(text: str) -> str:
    """``text`` as one Markdown table cell (pipes escaped, one line)."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as a Markdown table (columns: every key, first seen first); cells by :func:`format_number`.

    Examples
    --------
    >>> print(markdown_table([{"ranker": "bert", "R@1": 0.41234, "queries": 200}]), end="")
    | ranker | R@1 | queries |
    |---|---|---|
    | bert | 0.4123 | 200 |
    """
    if not rows:
        return "(none)\n"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return markdown_lines(cols, [[format_number(r[c]) if c in r else "" for c in cols] for r in rows])


def markdown_lines(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table of ready-made cells (the one table writer of the report)."""
    lines = ["| " + " | ".join(md_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: The mark of a significant difference in a table cell.
MARK = "†"


def cell(value: float | None, bold: bool = False, suffix: str = "") -> str:
    """A table cell: :func:`format_number`, then ``suffix``, in bold when ``bold`` (and there is a value)."""
    text = format_number(value) + suffix
    return f"**{text}**" if bold and value is not None else text
