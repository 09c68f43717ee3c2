"""Markdown cells and tables of a study's report; its numbers are written by :mod:`uncertank.formatting`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from uncertank.formatting import format_number
from uncertank.validation import check_instance

__all__ = ["markdown_table"]


def names(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (names in code font)."""
    quoted = [f"`{x}`" for x in items]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def md_cell(text: str) -> str:
    """``text`` as one Markdown table cell (pipes escaped, one line)."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Mapping[str, object]]) -> str:
    """Rows of dicts as a Markdown table (columns: every key, first seen first); cells by :func:`format_number`.

    Examples
    --------
    >>> print(markdown_table([{"ranker": "bert", "R@1": 0.41234, "queries": 200}]), end="")
    | ranker | R@1 | queries |
    |---|---|---|
    | bert | 0.4123 | 200 |
    """
    check_instance(rows, "rows", (list, tuple), "a list of dicts")
    for row in rows:
        check_instance(row, "rows", dict, "a list of dicts")
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
