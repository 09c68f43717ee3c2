"""hypothesis's decorators for the property tests, or stand-ins that skip them when it is not installed.

hypothesis comes with the test extras (``pip install "uncertank[test]"``);
without it the property tests are skipped with that reason and every other
test of their modules still runs.
"""

from __future__ import annotations

from typing import Any

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - exercised only without the test extras
    import pytest

    class _Stand:
        """Any strategy, health check or settings object: every attribute and call gives itself."""

        def __getattr__(self, name: str) -> Any:
            return self

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return self

    st = HealthCheck = _Stand()  # type: ignore[assignment]

    def given(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]
        return pytest.mark.skip(reason='hypothesis is not installed (pip install "uncertank[test]")')

    def settings(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]
        return lambda fn: fn

__all__ = ["HealthCheck", "given", "settings", "st"]
