from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own empty dataset cache."""
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
