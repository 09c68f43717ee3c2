"""The error every conformance check raises, and the guard that turns a plugin's own errors into it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["ConformanceError", "guard"]


class ConformanceError(AssertionError):
    """A ranker breaks the contract; the message names the ranker and the check."""


@contextmanager
def guard(fail: Callable[[str, str], ConformanceError], check: str) -> Iterator[None]:
    """Turn any exception raised inside ``check`` into the ConformanceError ``fail(check, ...)``, cause kept."""
    try:
        yield
    except ConformanceError:
        raise
    except Exception as exc:  # the plugin's own error: name it, keep it as the cause
        raise fail(check, f"raised {type(exc).__name__}: {exc}") from exc
