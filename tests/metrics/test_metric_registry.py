from __future__ import annotations

import types

import pytest

from uncertank import hookimpl
from uncertank.metrics import (
    DEFAULT_STUDY_METRICS,
    Metric,
    as_metric,
    expected_calibration_error,
    mean_average_precision,
    recall_at_k,
    resolve_metrics,
)
from uncertank.plugins import get_factory, get_plugin_manager, registry

RANKING = {"recall_at_k", "map", "mrr", "ndcg", "rbp", "rbp_residual"}
CALIBRATION = {"ece", "mce", "brier", "nll"}


def test_every_builtin_metric_is_a_metric_with_metadata():
    reg = registry("metrics")
    assert RANKING | CALIBRATION <= set(reg)
    for name in RANKING | CALIBRATION:
        m = reg[name].factory
        assert isinstance(m, Metric) and m.name == name
        assert m.kind == ("ranking" if name in RANKING else "calibration")
        assert m.needs_probabilities is (name in CALIBRATION)
        assert m.higher_is_better is (name in RANKING and name != "rbp_residual")
        assert m.per_query is (name in RANKING or name in {"brier", "nll"})


def test_default_study_metrics_resolve_to_the_report_columns(data):
    ms = resolve_metrics(DEFAULT_STUDY_METRICS)
    assert [m.display_label for m in ms] == [
        "R@1", "R@2", "R@5", "MAP", "MRR", "nDCG@10", "ECE", "ECE quantile", "ECE balanced",
        "ECE Penha-Hauff", "MCE", "Brier", "NLL",
    ]
    p, y = data
    by_label = {m.display_label: m(p, y) for m in ms}
    assert by_label["R@2"] == recall_at_k(p, y, k=2)
    assert by_label["ECE quantile"] == expected_calibration_error(p, y, strategy="quantile")
    assert by_label["ECE balanced"] == expected_calibration_error(p, y, balanced=True, seed=0)
    assert by_label["ECE Penha-Hauff"] == expected_calibration_error(p, y, convention="penha-hauff")
    assert by_label["MCE"] == expected_calibration_error(p, y, norm="max")
    # averaged over balanced subsamples: its own column label and value
    (many,) = resolve_metrics([{"name": "ece", "balanced": True, "seed": 0, "n_subsamples": 20}])
    assert many.display_label == "ECE balanced x20"
    assert many(p, y) == expected_calibration_error(p, y, balanced=True, seed=0, n_subsamples=20)


def test_one_call_signature_for_every_metric(data):
    p, y = data
    from uncertank import RankedLists

    ranked = RankedLists.from_dense(p, y)
    for name, info in registry("metrics").items():
        m = as_metric(info.factory, name=name)
        dense = m(p, y)
        assert isinstance(dense, float), name
        assert m(ranked) == pytest.approx(dense, rel=1e-12, abs=1e-15), name
        if m.per_query:
            pq = m(ranked, per_query=True)
            assert pq.shape == (20,), name
            assert pq.mean() == pytest.approx(dense, rel=1e-12, abs=1e-15), name
        else:
            with pytest.raises(ValueError, match=f"metric {name!r} has no per-query value"):
                m(ranked, per_query=True)


def test_bind_and_labels(data):
    p, y = data
    r = get_factory("metrics", "recall_at_k")
    r5 = r.bind(k=5)
    assert r5.display_label == "R@5" and r.display_label == "R@1"
    assert r5(p, y) == recall_at_k(p, y, k=5)
    assert r5(p, y, k=2) == recall_at_k(p, y, k=2)  # a call overrides the bound options
    assert r5.options == {"k": 5}
    assert r.bind(n=2).display_label == "R_2@1"
    ece = get_factory("metrics", "ece")
    assert ece.bind(strategy="quantile", balanced=True, convention="naeini").display_label == "ECE quantile balanced"
    assert ece.bind(norm="l2").display_label == "ECE l2"
    assert ece.accepts("n_bins") and not ece.accepts("k")
    assert get_factory("metrics", "map").bind(k=10).display_label == "MAP@10"
    assert get_factory("metrics", "rbp").bind(p=0.5).display_label == "RBP(0.5)"
    assert ece.with_label("calibration error").display_label == "calibration error"
    fmt = Metric(mean_average_precision, name="m", kind="ranking", label="AP{missing}")
    assert fmt.display_label == "AP{missing}"  # a label naming no option is shown as written
    assert "label='R@5'" in repr(r5)


def test_builtin_metrics_pickle_and_copy(data):
    import copy
    import pickle

    p, y = data
    for m in resolve_metrics(DEFAULT_STUDY_METRICS):
        for twin in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
            assert twin.display_label == m.display_label and twin.options == m.options
            assert twin(p, y) == m(p, y)


def test_resolve_metrics_entries_and_errors(data):
    p, y = data
    ms = resolve_metrics(["map", {"name": "recall_at_k", "k": 2, "label": "hits@2"}, get_factory("metrics", "mrr")])
    assert [m.display_label for m in ms] == ["MAP", "hits@2", "MRR"]
    assert ms[1](p, y) == recall_at_k(p, y, k=2)
    with pytest.raises(ValueError, match=r"unknown metric 'mapp' \(entry 0\); known metrics: .*brier.*map"):
        resolve_metrics(["mapp"])
    with pytest.raises(ValueError, match=r"metric 'recall_at_k' has no option 'cutoff'.*its options are: k, n"):
        resolve_metrics([{"name": "recall_at_k", "cutoff": 1}])
    with pytest.raises(ValueError, match="metric entry 0 must have a 'name'"):
        resolve_metrics([{"k": 1}])
    with pytest.raises(TypeError, match="metric entry 1 must be a name, a mapping or a Metric; got int"):
        resolve_metrics(["map", 3])
    with pytest.raises(TypeError, match="entries must be a list of metric names or mappings; got a single str"):
        resolve_metrics("map")


def test_metric_errors(data):
    p, y = data
    with pytest.raises(TypeError, match="fn must be callable"):
        Metric(3, name="x", kind="ranking")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        Metric(recall_at_k, name="", kind="ranking")
    with pytest.raises(ValueError, match="kind must be one of 'ranking', 'calibration'; got 'other'"):
        Metric(recall_at_k, name="r", kind="other")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label must be a format string or a callable"):
        Metric(recall_at_k, name="r", kind="ranking", label=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no option 'bins'"):
        Metric(expected_calibration_error, name="e", kind="calibration", options={"bins": 3})
    m = get_factory("metrics", "ece")
    with pytest.raises(ValueError, match=r"metric 'ece' has no option 'k' \(in bind\(\)\)"):
        m.bind(k=1)
    with pytest.raises(ValueError, match=r"metric 'ece' has no option 'k' \(in the call\)"):
        m(p, y, k=1)
    with pytest.raises(TypeError, match="per_query must be a bool; got str"):
        m(p, y, per_query="yes")
    with pytest.raises(TypeError, match="metric 'x' must be a Metric or a callable; got int"):
        as_metric(3, name="x")


def third_party_hits(scores, labels=None, *, cutoff=3):
    """Hit rate at a cutoff, as a third party would write it (no per-query value)."""
    return recall_at_k(scores, labels, k=cutoff)


def test_a_bare_callable_from_a_plugin_is_wrapped_with_documented_metadata(data):
    p, y = data
    plugin = types.ModuleType("fake_metric_plugin")

    @hookimpl
    def uncertank_metrics():
        return {"hits": third_party_hits, "named": Metric(recall_at_k, name="other", kind="ranking")}

    plugin.uncertank_metrics = uncertank_metrics  # type: ignore[attr-defined]
    pm = get_plugin_manager(refresh=True)
    pm.register(plugin, name="fake_metric_plugin")
    try:
        hits, named = resolve_metrics([{"name": "hits", "cutoff": 2}, "named"])
        assert (hits.kind, hits.needs_probabilities, hits.higher_is_better, hits.display_label) == (
            "ranking", False, True, "hits")
        assert hits.option_names == ("cutoff",) and hits.per_query is False
        assert hits(p, y) == recall_at_k(p, y, k=2)
        assert named.name == "named"  # renamed to its registry name
        with pytest.raises(ValueError, match="metric 'hits' has no streaming accumulator"):
            hits.accumulator()
    finally:
        get_plugin_manager(refresh=True)


def test_a_callable_taking_any_option_accepts_every_name(data):
    p, y = data

    def loose(scores, labels=None, **options):
        return float(len(options))

    m = as_metric(loose, name="loose")
    assert m.accepts_any_option and m.option_names == ()
    assert m.bind(a=1, b=2)(p, y) == 2.0
