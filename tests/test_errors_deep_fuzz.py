"""Doors the deep fuzz run (``pytest -m fuzz tests/fuzz``) found open, each held by one case here.

Each call once let a raw error out (Python's OverflowError for an integer
past a float's range, numpy's or bm25s's own errors, a KeyError); each now
raises the library's error naming the argument.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

BIG = 10**400

CASES = [
    ("uncertank.formatting", "format_fixed", {"value": BIG, "digits": 1}, ValueError, "value must be a number"),
    ("uncertank.formatting", "format_signed", {"value": -BIG}, ValueError, "value must be a number or None"),
    ("uncertank.formatting", "format_pvalue", {"p": BIG}, ValueError, "p must be a number or None"),
    ("uncertank.formatting", "format_percent", {"change": BIG}, ValueError, "change must be a number or None"),
    ("uncertank.progress", "format_duration", {"seconds": -BIG}, ValueError, "seconds must be a number of seconds"),
    ("uncertank.experiment.analysis", "relative_change", {"value": 1, "reference": BIG}, ValueError,
     "reference must be a number"),
    ("uncertank.conformal", "conformal_quantile", {"conformity": [0.1, BIG], "alpha": 0.5}, ValueError,
     "conformity must be finite real numbers"),
    ("uncertank.conformal", "fixed_sequence", {"pvalues": [BIG], "delta": 0.5}, ValueError,
     "pvalues must be finite real numbers"),
    ("uncertank.validation", "as_label_array", {"x": [BIG], "name": "labels"}, ValueError,
     "labels must be integers >= 0 below 2**63"),
    ("uncertank.validation", "check_finite_result", {"value": BIG, "name": "mrr", "why": "w"}, ValueError,
     "mrr must be finite"),
    ("uncertank.conformal", "abstention_curve", {"confidence": [0.5, 0.7], "errors": [0, 1], "grid": {"a": 1}},
     TypeError, "grid must be numeric"),
    ("uncertank.bayes", "zoib_logpdf", {"y": [0.3, 0.6, 0.6], "mu": [[0.1, 0.2], [0.3, 0.4]], "phi": 2.0,
                                        "zoi": 0.1, "coi": 0.5}, ValueError, "y, mu, phi, zoi and coi must broadcast"),
    ("uncertank.bayes.plots", "plot_ppc_densities", {"densities": {"a": 1}, "family": "zoib"}, ValueError,
     "densities must hold the keys 'grid', 'observed', 'replicates' and 'outside'"),
    ("uncertank.stats", "paired_bootstrap_test", {"a": [0.1, 0.5], "b": [0.2, 0.4], "seed": np.array(["a"])},
     TypeError, "seed must be"),
    ("uncertank.stats", "significance_marks", {"results": [0.01], "mark": -np.inf}, TypeError,
     "mark must be a str"),
    ("uncertank", "CostRates", {"fit_per_query": np.nan, "predict_per_pair": 1.0}, ValueError,
     "fit_per_query must be a finite number >= 0"),
    ("uncertank.datasets", "BM25Sampler", {"pool": ["a", "b"]}, ValueError,
     "pool must hold at least one document with a word BM25 indexes"),
]


@pytest.mark.parametrize("module, name, kwargs, error, message", CASES, ids=[f"{m}.{n}" for m, n, *_ in CASES])
def test_the_door_names_the_argument(module, name, kwargs, error, message):
    import importlib

    fn = getattr(importlib.import_module(module), name)
    with pytest.raises(error, match="^" + re.escape(message)):
        fn(**kwargs)


def test_a_split_that_is_an_array_is_named_before_any_data_is_read():
    from uncertank.datasets.conversation import load_ubuntu_sample

    with pytest.raises(ValueError, match=r"^split must be one of"):
        load_ubuntu_sample(split=np.array([0.9, 0.2]))  # type: ignore[arg-type]


def test_an_empty_family_of_hypotheses_still_rejects_none():
    from uncertank.conformal import fixed_sequence

    assert fixed_sequence([], 0.1) == 0  # as before: the empty family is no error
