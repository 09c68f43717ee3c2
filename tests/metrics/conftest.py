"""Fixtures shared by the metric tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def data():
    """Seeded probabilities of shape (20, 6) and labels drawn from them."""
    rng = np.random.default_rng(0)
    p = rng.random((20, 6))
    y = (rng.random((20, 6)) < p).astype(int)
    return p, y
