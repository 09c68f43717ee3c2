"""The optional dependencies: each import that fails names what needs it and the extra that installs it."""

from __future__ import annotations

import math
import sys

import pytest

from uncertank._optional import require, require_torch


def test_require_names_the_extra():
    assert require("math", "none") is math
    with pytest.raises(ImportError, match=r'BM25 needs the optional dependency no_such_mod_x; install it with '
                                          r'pip install "uncertank\[retrieval\]"'):
        require("no_such_mod_x", "retrieval", what="BM25")


def test_require_torch_imports_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "safetensors", raising=False)
    require_torch()
    assert "safetensors" not in sys.modules
