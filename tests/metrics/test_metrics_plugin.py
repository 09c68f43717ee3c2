from __future__ import annotations

import subprocess
import sys

import numpy as np

from uncertank.metrics import (
    brier_score,
    expected_calibration_error,
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    negative_log_likelihood,
    rank_biased_precision,
    recall_at_k,
)
from uncertank.plugins import get_factory, registry


def test_builtin_metrics_are_registered_by_name(data):
    names = set(registry("metrics"))
    assert {"recall_at_k", "map", "mrr", "ndcg", "rbp", "rbp_residual", "ece", "mce", "brier", "nll"} <= names
    p, y = data
    assert get_factory("metrics", "recall_at_k")(p, y, k=2) == recall_at_k(p, y, k=2)
    assert get_factory("metrics", "map")(p, y) == mean_average_precision(p, y)
    assert get_factory("metrics", "mrr")(p, y) == mean_reciprocal_rank(p, y)
    assert get_factory("metrics", "ndcg")(p, y, k=3) == ndcg_at_k(p, y, k=3)
    value, residual = rank_biased_precision(p, y, p=0.5)
    assert get_factory("metrics", "rbp")(p, y, p=0.5) == value
    assert get_factory("metrics", "rbp_residual")(p, y, p=0.5) == residual
    np.testing.assert_array_equal(get_factory("metrics", "rbp")(p, y, per_query=True),
                                  rank_biased_precision(p, y, per_query=True)[0])
    assert get_factory("metrics", "ece")(p, y, n_bins=5) == expected_calibration_error(p, y, n_bins=5)
    assert get_factory("metrics", "mce")(p, y) == expected_calibration_error(p, y, norm="max")
    assert get_factory("metrics", "brier")(p, y) == brier_score(p, y)
    assert get_factory("metrics", "nll")(p, y) == negative_log_likelihood(p, y)


def test_evaluators_import_no_heavy_dependency():
    code = (
        "import sys, uncertank.metrics, uncertank.stats, uncertank.display\n"
        "heavy = [m for m in ('torch', 'transformers', 'pymc', 'matplotlib', 'sklearn') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
