"""One home for argument checks: unit-interval, level, probability, seed and positive-integer messages.

Such a message is written in ``uncertank/validation.py`` only; every other
module (the package's and the first-party plugins') calls
``check_unit_interval``, ``check_probabilities``, ``check_seed``,
``check_positive_int`` or ``check_real`` from there. The walk below reads
every string constant (the literal parts of f-strings included) of every
module and fails on one that writes such a message itself.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The messages of the checks that live in validation.py, as a module would write them inline.
PATTERNS = {
    "unit interval": re.compile(r"must (lie |be (a (number|float) )?)in [(\[]0, (1|0\.5)[)\]]"),
    "probability": re.compile(r"must be a probability|must (lie|be) between 0 and 1"),
    "level": re.compile(r"\b(alpha|delta|level|quantile) must\b"),
    "seed": re.compile(r"\bseed must\b"),
    "positive integer": re.compile(r"must be a positive int"),
}

#: Checks not moved yet, by file and count: they go with the rewrite of their package. Only shrinks.
NOT_YET: dict[str, int] = {}


def sources(root: Path) -> list[Path]:
    """The modules of the package and of the first-party plugins under ``root``, validation.py aside."""
    files = [*root.glob("uncertank/**/*.py"), *root.glob("plugins/*/uncertank_*/**/*.py")]
    return sorted(p for p in files if p.relative_to(root).as_posix() != "uncertank/validation.py")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every str constant of ``tree`` but the docstrings, with its line; an f-string's literal parts joined."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    out: list[tuple[int, str]] = []
    inside_fstring: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inside_fstring.add(id(value))
                parts.append(value.value if isinstance(value, ast.Constant) else "{}")
            out.append((node.lineno, "".join(parts)))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and id(node) not in inside_fstring):
            out.append((node.lineno, node.value))
    return out


def inline_checks(root: Path) -> list[str]:
    """``path:line: kind: text`` for every message of the kinds of PATTERNS written outside validation.py."""
    found = []
    for path in sources(root):
        rel = path.relative_to(root).as_posix()
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            for kind, pattern in PATTERNS.items():
                if pattern.search(text):
                    found.append(f"{rel}:{line}: {kind}: {text}")
                    break
    return sorted(found)


def test_no_check_message_outside_validation():
    found = inline_checks(ROOT)
    counts: dict[str, int] = {}
    for entry in found:
        counts[entry.split(":", 1)[0]] = counts.get(entry.split(":", 1)[0], 0) + 1
    rest = [e for e in found if e.split(":", 1)[0] not in NOT_YET]
    assert rest == [], "call uncertank.validation's checks instead:\n" + "\n".join(rest)
    assert {p: counts.get(p, 0) for p in NOT_YET} == NOT_YET, "one moved: shrink NOT_YET"


@pytest.mark.parametrize(("source", "kind"), [
    ('raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}")', "unit interval"),
    ('raise ValueError("risk must lie in [0, 1]")', "unit interval"),
    ('raise ValueError(f"eps must be a float in (0, 0.5); got {eps!r}")', "unit interval"),
    ('raise TypeError(f"seed must be an int; got {seed!r}")', "seed"),
    ('raise ValueError(f"n must be a positive int; got {n!r}")', "positive integer"),
    ('msg = "p " + "must be a probability"', "probability"),
])
def test_the_walk_finds_an_inline_check(tmp_path, source, kind):
    module = tmp_path / "uncertank" / "mod.py"
    module.parent.mkdir()
    module.write_text(f'"""A module; its docstring may say alpha must lie in (0, 1)."""\n{source}\n', encoding="utf-8")
    (tmp_path / "uncertank" / "validation.py").write_text(source + "\n", encoding="utf-8")
    assert [e.split(": ")[1] for e in inline_checks(tmp_path)] == [kind]
