"""One name per measure: canonical identifiers, labels no two measures share, one home per measure.

The independent reference for the identifiers and for the values of
``Success@1`` and ``R@100`` is ir_measures (its pytrec_eval provider).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from uncertank.evaluate import evaluate_runs
from uncertank.metrics import (
    DEFAULT_STUDY_METRICS,
    MEASURES,
    Measure,
    MeasureRegistry,
    Metric,
    measure_id,
    precision_at_k,
    resolve_metrics,
)
from uncertank.metrics.ranking import mean_average_precision
from uncertank.plugins import registry

ROOT = Path(__file__).resolve().parents[2]

#: The options of each built-in measure, every combination of which is labelled and identified.
GRID: dict[str, dict[str, tuple[object, ...]]] = {
    "Success": {"k": (1, 2, 5, 10, 100), "n": (None, 2, 10), "rel": (1, 2)},
    "P": {"k": (1, 5, 10, 100), "rel": (1, 2)},
    "R": {"k": (1, 5, 10, 100), "rel": (1, 2)},
    "AP": {"k": (None, 1, 5, 10, 100), "rel": (1, 2)},
    "RR": {"k": (None, 1, 5, 10), "rel": (1, 2)},
    "nDCG": {"k": (None, 1, 5, 10, 100), "rel": (1, 2)},
    "RBP": {"p": (0.5, 0.8, 0.95), "depth": (None, 10), "max_grade": (None, 2)},
    "RBP_residual": {"p": (0.5, 0.8, 0.95), "depth": (None, 10), "max_grade": (None, 2)},
    "ECE": {"n_bins": (None, 10, 15, 50), "strategy": ("uniform", "quantile"), "norm": ("l1", "l2", "max"),
            "balanced": (False, True), "n_subsamples": (1, 5), "convention": ("naeini", "penha-hauff")},
    "MCE": {"n_bins": (None, 10, 15), "strategy": ("uniform", "quantile"), "balanced": (False, True)},
    "Brier": {},
    "NLL": {"eps": (None, 1e-6)},
}

#: ir_measures names as evaluate and a study take them, with the aliases.
IR_NAMES = ["nDCG@10", "NDCG@10", "nDCG", "AP", "MAP", "AP@5", "RR", "MRR", "RR@3", "P@5", "Precision@5",
            "P(rel=2)@10", "R@1", "R@100", "R@1000", "Recall@100", "R(rel=2)@20", "Success@1", "Success@100",
            "Success(rel=3)@5", "AP(rel=2)", "RR(rel=2)", "nDCG(rel=2)@10"]


def _combinations(grid: dict[str, tuple[object, ...]]) -> list[dict[str, object]]:
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def _every_labelled_measure() -> list[tuple[str, str, str]]:
    """(label, identifier, how it was asked for) of every option combination and every ir_measures name."""
    out = []
    for ident, grid in GRID.items():
        metric = registry("metrics")[MEASURES[ident].name].factory
        for options in _combinations(grid):
            try:
                m = metric.bind(**options)
            except ValueError:  # a combination the measure refuses (subsamples without balanced=True, ...)
                continue
            out.append((m.display_label, m.measure_id, f"{m.name} {options}"))
    for name in IR_NAMES:
        (m,) = resolve_metrics([name])
        out.append((m.display_label, m.measure_id, name))
    return out


# --------------------------------------------------------------------------- no label names two measures


def test_the_grid_covers_every_builtin_measure():
    assert set(GRID) == set(MEASURES)
    for ident, grid in GRID.items():
        assert set(grid) <= set(registry("metrics")[MEASURES[ident].name].factory.option_names), ident


def test_every_label_names_one_measure_and_belongs_to_it():
    labelled = _every_labelled_measure()
    assert len(labelled) > 200
    ids_of: dict[str, set[str]] = {}
    for label, ident, how in labelled:
        ids_of.setdefault(label, set()).add(ident)
        # the label's stem is claimed by the measure of its identifier, and by no other
        owner = MEASURES.of_label(label)
        assert owner is not None and owner is MEASURES.of_id(ident), (label, ident, how)
        assert [m.id for m in MEASURES.values() if m.claims(label)] == [owner.id], label
    shared = {label: ids for label, ids in ids_of.items() if len(ids) > 1}
    assert shared == {}


def test_two_option_sets_of_one_measure_differ_in_their_identifier_when_their_values_can():
    # n_bins=None and n_bins=10 are one ECE; n_bins=15 is another, and its label says so
    ece = registry("metrics")["ece"].factory
    assert ece.bind(n_bins=10).measure_id == ece.measure_id == "ECE"
    assert ece.bind(n_bins=15).measure_id == "ECE(n_bins=15)"
    assert ece.bind(n_bins=15).display_label == "ECE[n_bins=15]" != ece.display_label
    # the subsample's seed is a setting of the estimate, not of the measure
    assert ece.bind(balanced=True, seed=0).measure_id == ece.bind(balanced=True, seed=1).measure_id
    # ece with norm="max" is the MCE
    assert ece.bind(norm="max").measure_id == registry("metrics")["mce"].factory.measure_id == "MCE"
    assert ece.bind(norm="max").display_label == "MCE"


def test_the_registry_refuses_a_second_measure_with_an_existing_label():
    reg = MeasureRegistry()
    for m in MEASURES.values():
        reg.register(m)

    def another(ident: str, name: str, labels: tuple[str, ...]) -> Measure:
        return Measure(ident, name, mean_average_precision, "ranking", labels=labels, cutoff="k")

    for stem, owner in [("MAP", "AP"), ("R", "Success"), ("R_10", "Success"), ("Recall", "R"), ("nDCG", "nDCG"),
                        ("ECE", "ECE"), ("ECE quantile", "ECE"), ("NLL", "NLL")]:
        with pytest.raises(ValueError, match=rf"claims the label '{stem}', which is measure '{owner}'.*two measures "
                                             "cannot share a label"):
            reg.register(another("Mine", "mine", ("Hits", stem)))
    with pytest.raises(ValueError, match="identifier 'AP' is registered already"):
        reg.register(another("AP", "mine", ("Hits",)))
    with pytest.raises(ValueError, match="a measure named 'map' is registered already"):
        reg.register(another("Mine", "map", ("Hits",)))
    # a stem another begins with is refused as well: its labels (Hit@5, Hit_2@5) would be the other's
    reg.register(another("Hit", "hit", ("Hit",)))
    with pytest.raises(ValueError, match="claims the label 'Hit_2'"):
        reg.register(another("Hit2", "hit2", ("Hit_2",)))
    # a stem of its own is fine, and is then the measure of its labels
    reg.register(another("Hits", "hits", ("Hits",)))
    assert reg.of_label("Hits@5").id == "Hits" and reg.of_label("Hit@5").id == "Hit"
    assert reg.of_label("R@5").id == "Success" and reg.of_label("Recall@5").id == "R" and reg.of_label("RR").id == "RR"
    assert reg.of_label("RBP residual(0.8)").id == "RBP_residual" and reg.of_label("RBP(0.8)").id == "RBP"
    assert reg.of_label("hits five") is None
    assert len(MEASURES) == 12  # the test's registry is its own


def test_resolving_refuses_two_measures_under_one_label_and_one_measure_under_two():
    # a label given in an entry may not be another measure's
    with pytest.raises(ValueError, match=r"the label 'R@5' belongs to the measure Success \(recall_at_k\), not to "
                                         r"R@5 \(trec_recall_at_k\)"):
        resolve_metrics([{"name": "trec_recall_at_k", "k": 5, "label": "R@5"}])
    with pytest.raises(ValueError, match="the label 'MAP' belongs to the measure AP"):
        resolve_metrics([{"name": "ndcg", "label": "MAP"}])
    # a measure's label that is not this one's options is refused; its label or identifier is fine
    with pytest.raises(ValueError, match=r"the label 'MAP' is not AP@5's \(its label is 'MAP@5', its identifier "
                                         r"'AP@5'\)"):
        resolve_metrics([{"name": "map", "k": 5, "label": "MAP"}])
    with pytest.raises(ValueError, match=r"the label 'R_10@2' is not Success@1's"):
        resolve_metrics([{"name": "recall_at_k", "k": 1, "label": "R_10@2"}])
    # the papers' R_10@1 for R@1 on lists of ten candidates is fine; with n=2 it is not
    assert resolve_metrics([{"name": "recall_at_k", "k": 1, "label": "R_10@1"}])[0].display_label == "R_10@1"
    with pytest.raises(ValueError, match=r"the label 'R_10@1' is not Success\(n=2\)@1's"):
        resolve_metrics([{"name": "recall_at_k", "k": 1, "n": 2, "label": "R_10@1"}])
    for label in ("AP@5", "MAP@5", "MAP of the top 5", "average precision of the top five"):
        (own,) = resolve_metrics([{"name": "map", "k": 5, "label": label}])
        assert own.display_label == label
    # a plugin's metric under the label of a built-in measure, beside it
    mine = Metric(precision_at_k, name="precision_at_k", kind="ranking", label="P@{k}", options={"k": 2})
    with pytest.raises(ValueError, match=r"entries 0 and 1 share the label 'P@2' but are different measures "
                                         r"\(P@2 and precision_at_k\(k=2\)\)"):
        resolve_metrics([{"name": "precision", "k": 2}, mine])
    # one measure, two settings of its estimate, one label
    with pytest.raises(ValueError, match=r"share the label 'ECE balanced' but are one measure, ECE\(balanced=True\), "
                                         "with other settings"):
        resolve_metrics([{"name": "ece", "balanced": True, "seed": 0}, {"name": "ece", "balanced": True, "seed": 1}])
    # one measure under two labels
    with pytest.raises(ValueError, match=r"one measure, AP, under two labels \('MAP' and 'AP'\)"):
        resolve_metrics(["map", "AP"])
    # the same entry twice is one column (a study keeps it once; evaluate refuses it)
    assert [m.display_label for m in resolve_metrics(["map", "map"])] == ["MAP", "MAP"]


# --------------------------------------------------------------------------- identifiers and ir_measures


def test_identifiers_are_ir_measures_spelling_where_it_has_the_measure():
    ir_measures = pytest.importorskip("ir_measures")
    checked = 0
    for ident, grid in GRID.items():
        measure = MEASURES[ident]
        if not measure.ir_measures:
            continue
        for options in _combinations(grid):
            if options.get("n") is not None or (ident == "nDCG" and options.get("rel") != 1):
                continue  # R_n's n and nDCG's rel are not ir_measures parameters
            mid = measure.measure_id(options)
            assert str(ir_measures.parse_measure(mid)) == mid, (ident, options)
            checked += 1
    assert checked > 40
    for name in IR_NAMES:
        if not name.startswith("nDCG(rel="):
            assert resolve_metrics([name])[0].measure_id == str(ir_measures.parse_measure(name)), name


def _qrels_and_run(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Queries with several relevant documents, where a hit in the top 1 and recall at 100 part."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(30):
        docs = [f"d{i}" for i in range(150)]
        grades = rng.choice([0, 0, 0, 0, 1, 2], size=len(docs))
        qrels[f"q{q}"] = {d: int(g) for d, g in zip(docs, grades, strict=True) if rng.random() < 0.6 or g > 0}
        retrieved = rng.choice(docs, size=120, replace=False)
        run[f"q{q}"] = {str(d): float(s) for d, s in zip(retrieved, rng.random(retrieved.size), strict=True)}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1])
def test_success_at_1_and_r_at_100_in_one_evaluate_are_ir_measures_two_measures(tmp_path, seed):
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("pytrec_eval")
    qrels, run = _qrels_and_run(seed)
    qp, rp = tmp_path / "qrels", tmp_path / "run"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, per in qrels.items() for d, g in per.items()))
    rp.write_text("".join(f"{q} Q0 {d} 0 {s!r} sys\n" for q, per in run.items() for d, s in per.items()))

    report = evaluate_runs([rp], qp, metrics=["Success@1", "R@100", {"name": "recall_at_k", "k": 100}],
                           complete=True)
    assert report.ranking == ["Success@1", "Recall@100", "R@100"]
    assert report.measures == {"Success@1": "Success@1", "Recall@100": "R@100", "R@100": "Success@100"}
    assert report.to_dict()["measures"] == report.measures

    scores = report.runs[0]
    for label, name in [("Success@1", "Success@1"), ("Recall@100", "R@100"), ("R@100", "Success@100")]:
        ref = {m.query_id: m.value for m in ir_measures.pytrec_eval.iter_calc(
            [ir_measures.parse_measure(name)], qrels, run)}
        ours = dict(zip(scores.query_ids, scores.per_query[label].tolist(), strict=True))
        assert sorted(ours) == sorted(ref)
        for q, value in ref.items():
            assert ours[q] == pytest.approx(value, abs=1e-12), (label, q)
        assert scores.summary[label] == pytest.approx(np.mean(list(ref.values())), abs=1e-12)
    # two measures, two numbers: recall at 100 is no hit at 1
    assert abs(scores.summary["Success@1"] - scores.summary["Recall@100"]) > 0.05
    assert not np.array_equal(scores.per_query["R@100"], scores.per_query["Recall@100"])


# --------------------------------------------------------------------------- one home, and the study's labels


def test_measures_pickle_by_reference_and_by_value():
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(MEASURES["Success"])) is MEASURES["Success"]
    mine = Measure("Hits", "hits", precision_at_k, "ranking", labels=("Hits",), cutoff="k", options={"k": 3})
    twin = pickle.loads(pickle.dumps(mine))
    assert twin is not mine and twin.measure_id() == mine.measure_id() == "Hits@3" and twin.display() == "Hits@3"
    metric = Metric(precision_at_k, name="hits", kind="ranking", label=mine.display, options={"k": 3}, measure=mine)
    assert copy.deepcopy(metric).measure_id == "Hits@3"


def test_each_registered_builtin_metric_is_its_measure():
    reg = registry("metrics")
    rng = np.random.default_rng(0)
    p, y = rng.random((12, 9)), (rng.random((12, 9)) < 0.3).astype(int)
    y[:, 0] = 1
    for measure in MEASURES.values():
        metric = reg[measure.name].factory
        assert isinstance(metric, Metric) and metric.measure is measure
        assert metric.fn is measure.fn and dict(metric.options) == dict(measure.options)
        assert (metric.kind, metric.higher_is_better, metric.needs_probabilities) == (
            measure.kind, measure.higher_is_better, measure.needs_probabilities)
        assert metric.display_label == measure.display() and metric.measure_id == measure.measure_id()
        value = metric(p, y)
        lo, hi = measure.bounds
        assert lo <= value <= hi, measure.id
        acc = metric.accumulator()
        acc.update(p[:6], y[:6])
        acc.update(p[6:], y[6:])
        assert acc.compute() == pytest.approx(value, rel=1e-9, abs=1e-12), measure.id


def test_the_study_keeps_its_labels_and_each_maps_to_its_measure():
    ms = resolve_metrics(DEFAULT_STUDY_METRICS)
    assert {m.display_label: m.measure_id for m in ms} == {
        "R@1": "Success@1", "R@2": "Success@2", "R@5": "Success@5", "MAP": "AP", "MRR": "RR", "nDCG@10": "nDCG@10",
        "ECE": "ECE", "ECE quantile": "ECE(strategy=quantile)", "ECE balanced": "ECE(balanced=True)",
        "ECE Penha-Hauff": "ECE(convention=penha-hauff)", "MCE": "MCE", "Brier": "Brier", "NLL": "NLL",
    }
    # what results.json keeps about a column (metric_info: name and options) gives the same identifier
    for m in ms:
        assert measure_id(m.name, dict(m.options)) == m.measure_id
    assert measure_id("a plugin's metric") is None


def test_the_labels_of_existing_result_files_are_labels_of_their_measures():
    found: set[str] = set()
    labels = {m.display_label: m.measure_id for m in resolve_metrics(DEFAULT_STUDY_METRICS)}
    for path in sorted((ROOT / "docs" / "results").glob("*.json")):
        data = json.loads(path.read_text())
        cells = data.get("results") if isinstance(data, dict) else None
        if not isinstance(cells, dict):
            continue
        for per_ranker in cells.values():
            for values in per_ranker.values() if isinstance(per_ranker, dict) else ():
                for key in values if isinstance(values, dict) else ():
                    if key in labels:
                        found.add(key)
                        assert MEASURES.of_label(key) is MEASURES.of_id(labels[key]), (path.name, key)
    assert {"R@1", "MAP", "ECE", "ECE balanced", "Brier"} <= found
