"""The fuzz harness's settings: a few examples per callable by default, many more under ``-m fuzz``."""

from __future__ import annotations

import os

import pytest

#: Examples per callable in an ordinary run (the whole harness adds well under a minute on two cores).
QUICK_EXAMPLES = 6
#: Examples per callable when the ``fuzz`` marker is selected (``pytest -m fuzz tests/fuzz``).
DEEP_EXAMPLES = 150


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    expr = config.getoption("markexpr", "") or ""
    deep = "fuzz" in expr and "not fuzz" not in expr
    os.environ["UNCERTANK_FUZZ_EXAMPLES"] = str(DEEP_EXAMPLES if deep else QUICK_EXAMPLES)
    for item in items:
        if item.path.parent.name == "fuzz":
            item.add_marker(pytest.mark.fuzz)
