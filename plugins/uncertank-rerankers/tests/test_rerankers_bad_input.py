"""Bad arguments of the rerankers ranker get the library's errors, naming the argument, when it is built."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from uncertank_rerankers import RerankersRanker


@pytest.mark.parametrize(("params", "error", "match"), [
    ({"probabilities": np.array([0.1, 0.9])}, ValueError, "probabilities must be 'auto', True or False"),
    ({"probabilities": "yes"}, ValueError, "probabilities must be 'auto', True or False; got 'yes'"),
    ({"name": Path("edge.qrels")}, TypeError, "name must be a str; got PosixPath"),
    ({"model_type": 3}, TypeError, r"model_type must be a rerankers model type \(str\); got int"),
])
def test_each_parameter_is_checked_when_built(params, error, match):
    with pytest.raises(error, match=match):
        RerankersRanker(model="x", **params)


def test_model_must_be_a_name():
    with pytest.raises(TypeError, match=r"model must be a model name \(str\); got float"):
        RerankersRanker(model=0.5)
