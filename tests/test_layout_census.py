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


def test_census_refuses_a_root_without_the_package(lc: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="root must hold a package folder uncertank/"):
        lc.census(tmp_path)
