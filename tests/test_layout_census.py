"""docs/scripts/layout_census.py on a tiny package written here, each count checked against what was built."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "scripts" / "layout_census.py"


@pytest.fixture(scope="module")
def lc() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("layout_census", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


FILES = {
    # the package re-exports from its modules, one of them through ``__all__ += core.__all__``
    "__init__.py": '''
        """The package."""

        from __future__ import annotations

        from uncertank import core
        from uncertank.core import *  # noqa: F403
        from uncertank.shim import helper

        __all__ = ["helper"]
        __all__ += core.__all__
    ''',
    # defines two names; ``Any`` twice in annotations (once as a string), once outside
    "core.py": '''
        """Where things are defined."""

        from __future__ import annotations

        from typing import Any

        Alias = dict[str, Any]

        __all__ = ["Thing", "make"]


        class Thing:
            value: "Any" = None


        def make(x: Any) -> Thing:
            return Thing()
    ''',
    # not a package, yet lists ``make`` (imported) beside its own ``helper``: ``make`` is in three lists
    "shim.py": """
        from uncertank.core import make

        __all__ = ["helper", "make"]


        def helper() -> int:
            return 1
    """,
    # a subpackage whose __init__ only re-exports; its runner calls getattr three times
    "experiment/__init__.py": """
        from uncertank.experiment.runner import run

        __all__ = ["run"]
    """,
    "experiment/runner.py": "\n".join(
        ['"""A runner, padded past 60 lines."""', "", "", "def run(obj: object) -> object:"]
        + ["    a = getattr(obj, 'a', None)", "    b = getattr(obj, 'b', None)", "    return getattr(obj, 'c', a or b)"]
        + ["", "# padding"] * 30
    ),
}


def write_package(root: Path) -> None:
    for rel, text in FILES.items():
        path = root / "uncertank" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def test_census_counts_what_was_built(lc: ModuleType, tmp_path: Path) -> None:
    write_package(tmp_path)
    c = lc.census(tmp_path)
    lines = {rel: len(textwrap.dedent(t).lstrip("\n").splitlines()) for rel, t in FILES.items()}
    assert c["modules"] == 5
    assert c["lines"] == sum(lines.values())
    assert c["short_modules"]["count"] == 4 and "uncertank/experiment/runner.py" not in c["short_modules"]["modules"]
    assert c["short_modules"]["modules"]["uncertank/core.py"] == lines["core.py"]
    assert c["reexport_only_modules"]["modules"] == ["uncertank/__init__.py", "uncertank/experiment/__init__.py"]
    # __init__: helper, Thing, make (3, all imported); core: Thing, make (defined); shim: helper (defined),
    # make (imported); experiment: run (imported)
    assert c["all_entries"] == 3 + 2 + 2 + 1
    assert c["all_reexports"] == 3 + 1 + 1
    assert c["all_neither_imported_nor_defined"] == 0
    assert c["names_in_2_or_more_all"]["count"] == 3  # helper, Thing, make
    assert c["names_in_2_or_more_all"]["names"]["Thing"] == ["uncertank/__init__.py", "uncertank/core.py"]
    assert c["names_in_3_or_more_all"] == {"count": 1, "names": ["make"]}
    assert c["non_package_reexporters"] == {"count": 1, "modules": {"uncertank/shim.py": 1}}
    assert c["runner_getattr_calls"] == 3
    assert c["any_in_annotations"] == {"count": 2, "modules": 1}
    assert c["any_outside_annotations"] == 1
    assert c["commit"] is None  # tmp_path is no git checkout


def test_census_is_deterministic_and_renders(
    lc: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_package(tmp_path / "pkg")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    lc.main(["--root", str(tmp_path / "pkg"), "--out", str(first)])
    lc.main(["--root", str(tmp_path / "pkg"), "--out", str(second)])
    assert first.read_bytes() == second.read_bytes()
    assert "names in 3 or more `__all__` lists: 1" in capsys.readouterr().out
    now = json.loads(first.read_text(encoding="utf-8"))
    before = {**now, "modules": 7}
    page = lc.render(before, now, "before.json", "now.json")
    assert "| modules | 7 | 5 | -2 |" in page and "`make`" in page
    assert "| file names two or more modules bear | 0 | 0 | +0 |" in page
    # a census written before the duplication counts renders them as n/a
    older = {k: v for k, v in now.items() if k not in ("shared_basenames", "repeated_runs")}
    page = lc.render(older, now, "before.json", "now.json")
    assert "| file names two or more modules bear | n/a | 0 |  |" in page
    assert "counted before the duplication counts existed" in page


def test_census_refuses_a_root_without_the_package(lc: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="root must hold a package folder uncertank/"):
        lc.census(tmp_path)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / "uncertank" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def test_shared_basenames_leave_packages_aside(lc: ModuleType, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "__init__.py": "",
            "cli.py": "x = 1\n",
            "a/__init__.py": "",
            "a/cli.py": "x = 2\n",
            "a/only.py": "x = 3\n",
            "b/__init__.py": "",
            "b/cli.py": "x = 4\n",
            "b/io.py": "x = 5\n",
            "c/__init__.py": "",
            "c/io.py": "x = 6\n",
        },
    )
    c = lc.census(tmp_path)
    assert c["shared_basenames"] == {
        "count": 2,
        "modules": 5,
        "names": {
            "cli.py": ["uncertank/a/cli.py", "uncertank/b/cli.py", "uncertank/cli.py"],
            "io.py": ["uncertank/b/io.py", "uncertank/c/io.py"],
        },
    }


HELPERS = {
    "__init__.py": "",
    # the original of a helper, a recursive function and a method
    "one.py": '''
        def scaled(x, factor=2):
            """Scale x."""
            y = x + 1
            return y * factor


        def fact(n):
            return 1 if n < 2 else n * fact(n - 1)


        def _norm(v):
            return v / 2


        def _same(v):
            return [v]


        def __getattr__(name):
            return name


        class Box:
            def size(self):
                return len(self.items)

            def stub(self):
                """Nothing here."""
                ...
    ''',
    # a copy with every name changed and another docstring: the same helpers
    "two.py": '''
        def grown(value, k=2):
            """Another docstring."""
            tmp = value + 1
            return tmp * k


        def factorial(m):
            return 1 if m < 2 else m * factorial(m - 1)


        def _norm(v):
            return v / 3


        def _same(w):
            return [w]


        def __getattr__(name):
            return None


        class Crate:
            def count(self):
                return len(self.items)

            def stub(self):
                ...
    ''',
    # a third copy of ``scaled``; then one line changed (a constant, an attribute, a global): no copies
    "three.py": """
        def scaled_again(q, f=2):
            r = q + 1
            return r * f


        def almost(x, factor=2):
            y = x + 1
            return y * factor * 1


        def other_global(x, factor=2):
            y = x + one
            return y * factor


        class Bag:
            def size(self):
                return len(self.rows)

            def stub(self):
                raise NotImplementedError
    """,
    # two copies within one module make no group
    "four.py": """
        def first(a):
            b = [a, a]
            return sorted(b)


        def second(a):
            b = [a, a]
            return sorted(b)


        class Tin:
            def stub(self):
                raise NotImplementedError
    """,
}


def test_functions_defined_twice_are_grouped_by_normalised_body(lc: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, HELPERS)
    c = lc.census(tmp_path)
    assert c["helpers_defined_twice"] == {
        "count": 3,
        "functions": 7,
        "groups": [
            ["uncertank/one.py:_same", "uncertank/two.py:_same"],
            ["uncertank/one.py:fact", "uncertank/two.py:factorial"],
            ["uncertank/one.py:scaled", "uncertank/three.py:scaled_again", "uncertank/two.py:grown"],
        ],
    }
    # the stubs (``...`` twice, ``raise`` twice) are left out; ``Bag.size`` reads another attribute
    assert c["methods_defined_twice"] == {
        "count": 1,
        "functions": 2,
        "groups": [["uncertank/one.py:Box.size", "uncertank/two.py:Crate.count"]],
    }
    # ``_same`` is one body twice and ``__getattr__`` a dunder: only ``_norm`` differs
    assert c["private_names_differing"] == {"count": 1, "names": {"_norm": ["uncertank/one.py", "uncertank/two.py"]}}


BLOCK = '''
    def summarise(values, scale):
        """Say what the values are."""
        total = 0.0
        for value in values:
            total += value * scale
        mean = total / len(values)
        spread = max(values) - min(values)
        label = f"mean {mean:.2f}"
        return {"mean": mean, "spread": spread, "label": label}
'''
# the block with every identifier, string and number changed, and no docstring: the same shape
RENAMED = """
    def describe(xs, k):
        acc = 1
        for x in xs:  # a comment
            acc += x * k

        avg = acc / len(xs)
        width = max(xs) - min(xs)
        text = f"avg {avg:.3f} of {len(xs)}"
        return {"avg": avg, "width": width, "text": text}
"""
# one line in the middle changed: 4 lines before it, 3 after, neither a run
CHANGED = BLOCK.replace("total / len(values)", "total / values.size")
# imports and a dataclass's fields, the same in every module: boilerplate, no run
HEADER = """
    import json
    import math
    import os
    import re
    import sys
    from dataclasses import dataclass


    @dataclass
    class Row:
        a: int
        b: int
        c: int
        d: int
        e: int
        f: int
        g: int

"""
# 13 code lines but only 5 with an identifier: no run
CALLS = """
    def pack():
        first = make(
            1,
        )
        second = make(
            2,
        )
        third = make(
            3,
        )
        fourth = make(
            4,
        )
"""
# eleven lines of one shape: it matches the other module's at many offsets, counted once
SAME_SHAPE = "def setup():\n" + "".join(f"    a{i} = f({i})\n" for i in range(10))


def test_repeated_runs_match_shapes_and_leave_boilerplate_out(lc: ModuleType, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "__init__.py": "",
            "r1.py": HEADER + BLOCK,
            "r2.py": HEADER + RENAMED,
            "r3.py": HEADER + CHANGED,
            "p1.py": CALLS,
            "p2.py": CALLS,
            "q1.py": SAME_SHAPE,
            "q2.py": SAME_SHAPE,
        },
    )
    runs = lc.census(tmp_path)["repeated_runs"]
    assert runs["min_identifier_lines"] == 6
    assert runs["pairs_of_places"] == 2 and runs["pairs_of_files"] == 2
    assert runs["top"] == [
        {"lines": 11, "a": "uncertank/q1.py:1-11", "b": "uncertank/q2.py:1-11", "first_line": "def setup():"},
        {
            "lines": 8,
            "a": "uncertank/r1.py:20-28",
            "b": "uncertank/r2.py:20-28",
            "first_line": "def summarise(values, scale):",
        },
    ]


def test_a_run_repeated_in_one_module_counts(lc: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, {"__init__.py": "", "r.py": BLOCK + "\n\n" + RENAMED})
    runs = lc.census(tmp_path)["repeated_runs"]
    assert runs["pairs_of_places"] == 1 and runs["pairs_of_files"] == 1
    assert (runs["top"][0]["a"], runs["top"][0]["b"]) == ("uncertank/r.py:1-9", "uncertank/r.py:13-21")


def test_the_package_keeps_any_out_of_its_annotations(lc: ModuleType) -> None:
    """``Any`` in the annotations of ``uncertank/``: 564 when the house's third step began, 67 after it.

    The issue's target was under 300; the bound is kept near today's count so that a new ``Any`` is a choice
    (each one left is a value of an untyped library or a pass-through, docs/architecture.md).
    """
    c = lc.census(Path(__file__).resolve().parents[1])
    assert c["any_in_annotations"]["count"] <= 75, c["any_in_annotations"]
