"""Every tensor the neural code builds takes its device from somewhere: a check the CPU can run for the GPU.

On an H100 the library failed where a tensor was built on the CPU beside a
model on CUDA. Here every call of a torch factory (``torch.zeros``,
``torch.randn``, ``torch.from_numpy``, ...) in ``uncertank/nn`` and the
first-party plugins must pass ``device=``, be moved at once (``.to(...)``),
sit in a module's ``__init__`` (registered state moves with ``.to``), or
say on its line, in a ``# cpu:`` comment, why the CPU is meant.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FACTORIES = {
    "zeros", "ones", "empty", "full", "eye", "arange", "randn", "rand", "randint", "randperm",
    "tensor", "linspace", "from_numpy", "normal",
}


def placement_problems(source: str, name: str) -> list[str]:
    tree = ast.parse(source)
    lines = source.splitlines()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    problems = []
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        if not (isinstance(node, ast.Call) and isinstance(func, ast.Attribute) and func.attr in FACTORIES
                and isinstance(func.value, ast.Name) and func.value.id == "torch"):
            continue
        if any(k.arg == "device" for k in node.keywords):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr == "to":
            continue
        scope = parent
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = parents.get(scope)
        if scope is not None and scope.name == "__init__":
            continue
        if "# cpu:" in lines[node.lineno - 1]:
            continue
        problems.append(f"{name}:{node.lineno}: torch.{func.attr}(...) without device=")
    return problems


def test_every_tensor_built_in_the_neural_code_has_a_device():
    files = sorted((ROOT / "uncertank" / "nn").glob("*.py")) + sorted(ROOT.glob("plugins/*/uncertank_*/*.py"))
    assert len(files) > 20
    problems = [p for f in files for p in placement_problems(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert problems == []


def test_the_check_finds_a_tensor_built_on_the_cpu_beside_a_model():
    bad = "import torch\ndef f(x):\n    idx = torch.arange(3)\n    return x[idx]\n"
    assert placement_problems(bad, "m.py") == ["m.py:3: torch.arange(...) without device="]
    good = (
        "import torch\n"
        "def f(x):\n"
        "    a = torch.arange(3, device=x.device)\n"
        "    b = torch.from_numpy(x).to(x.device)\n"
        "    c = torch.zeros(1)  # cpu: a validation\n"
        "    return a, b, c\n"
        "class M:\n"
        "    def __init__(self):\n"
        "        self.w = torch.zeros(3)\n"
    )
    assert placement_problems(good, "m.py") == []
