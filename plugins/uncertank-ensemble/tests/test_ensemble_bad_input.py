"""Bad arguments of the ensemble get the library's errors, naming the argument, before any member is built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from uncertank_ensemble import DeepEnsembleRanker


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"n_members": Path("edge.qrels")}, TypeError, "n_members must be an integer >= 2; got PosixPath"),
    ({"n_members": np.array([2, 3])}, TypeError, "n_members must be an integer >= 2; got ndarray"),
    ({"n_members": 1}, ValueError, "n_members must be an integer >= 2; got 1"),
    ({"stacked": np.float64(np.nan)}, TypeError, "stacked must be a bool"),
    ({"show_progress": -np.inf}, TypeError, "show_progress must be a bool"),
    ({"seed": "1"}, TypeError, "seed must be an integer"),
])
def test_each_argument_is_checked_at_the_door(params, error, match):
    with pytest.raises(error, match=match):
        DeepEnsembleRanker(**params)


def test_n_members_is_checked_before_it_is_compared_with_the_folders():
    with pytest.raises(TypeError, match="n_members must be an integer >= 2; got ndarray"):
        DeepEnsembleRanker(pretrained=["a", "b"], n_members=np.array([2, 2]))
