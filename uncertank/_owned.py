"""Ownership of a container's arrays: a read-only copy that no caller can change.

Every container of the data model owns its data: an array is copied on
construction unless it is already a private read-only array, and stored
read-only, so that changing the caller's array afterwards changes nothing,
and nothing validated can become invalid. :func:`owned` is that rule,
shared by the lists (:mod:`uncertank._lists`) and the predictions
(:mod:`uncertank._predictions`).
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

__all__ = ["owned"]

_A = TypeVar("_A", bound=np.ndarray)


def owned(arr: _A, source: object) -> _A:
    """``arr`` as a read-only array that shares no memory with ``source`` (the caller's input).

    A converter that already made a fresh array (``astype``, a list input)
    is not copied again, nor is a read-only array that owns its memory (one
    a container made); an array that is, or views, the caller's writable
    memory is copied.
    """
    if not arr.flags.writeable and arr.flags.owndata:
        return arr
    fresh = arr is not source and not (
        isinstance(source, np.ndarray) and np.may_share_memory(arr, source)
    ) and arr.base is None
    if not fresh:
        arr = arr.copy()
    arr.setflags(write=False)
    return arr
