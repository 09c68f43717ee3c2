"""What the benchmark scripts share: their sections of RESULTS.md and Markdown tables.

Each script runs as ``python benchmarks/bench_*.py``, so this folder is on
``sys.path`` and the scripts import this module as ``_results``.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from uncertank.files import atomic_write_text

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace the section ``name`` of ``path`` (between its begin and end markers) or append it, atomically."""
    begin, end = f"<!-- begin: {name} -->", f"<!-- end: {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.S)
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old.rstrip() + "\n\n" + block + "\n"
    atomic_write_text(path, new)


Row = Mapping[str, Any]


def markdown_table(columns: Mapping[str, Callable[[Row], str]], rows: Iterable[Row]) -> str:
    """A Markdown table: one column per ``header -> cell(row)`` of ``columns``, one line per row."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r) for cell in columns.values()) + " |" for r in rows]
    return "\n".join(lines)


def clock(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call of ``fn``."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def paired(fa: Callable[[], Any], fb: Callable[[], Any], repeats: int) -> tuple[float, float, float, Any, Any]:
    """Median CPU seconds of ``fa`` and ``fb`` run alternately, the median paired ratio ta / tb, and the results."""
    ta, tb, ratios = [], [], []
    a = b = None
    for _ in range(repeats):
        t0 = time.process_time()
        a = fa()
        t1 = time.process_time()
        b = fb()
        t2 = time.process_time()
        ta.append(t1 - t0)
        tb.append(t2 - t1)
        ratios.append((t1 - t0) / max(t2 - t1, 1e-9))
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios), a, b
