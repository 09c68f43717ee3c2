"""The modules of uncertank.bayes import one way."""

from __future__ import annotations

import ast
from pathlib import Path

import uncertank.bayes

BAYES = Path(uncertank.bayes.__file__).parent


def _graph() -> dict[str, set[str]]:
    """Every import between modules of uncertank.bayes, function-level and TYPE_CHECKING ones included."""
    mods = {f.stem for f in BAYES.glob("*.py") if f.stem != "__init__"}
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m in mods:
        for node in ast.walk(ast.parse((BAYES / f"{m}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for n in names:
                head, _, tail = n.rpartition(".")
                if head == "uncertank.bayes" and tail in mods and tail != m:
                    edges[m].add(tail)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    seen: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(u: str) -> None:
        seen[u] = 1
        stack.append(u)
        for v in sorted(edges[u]):
            if seen.get(v) == 1:
                found.append([*stack[stack.index(v):], v])
            elif v not in seen:
                visit(v)
        stack.pop()
        seen[u] = 2

    for m in sorted(edges):
        if m not in seen:
            visit(m)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def test_no_import_cycle_in_bayes():
    assert _cycles(_graph()) == []


def test_the_result_sits_between_its_readers_and_its_makers():
    edges = _graph()
    # the readers of a fit take its interface, never the class
    for reader in ("plots", "predictive", "risk_measures"):
        assert "comparison" not in edges[reader], reader
    assert "comparison" in edges["fit"]


def test_the_package_re_exports_the_objects_of_their_home_modules():
    from uncertank.bayes import comparison, fit

    assert comparison.SystemComparison is uncertank.bayes.SystemComparison
    assert comparison.Gate is uncertank.bayes.Gate
    assert fit.compare is uncertank.bayes.compare
    assert not hasattr(uncertank.bayes, "from_netcdf")  # one home: SystemComparison.from_netcdf


def test_no_module_of_bayes_shares_its_name_with_an_export():
    mods = {f.stem for f in BAYES.glob("*.py")}
    assert sorted(mods & set(uncertank.bayes.__all__)) == []
