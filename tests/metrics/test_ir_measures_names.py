"""ir_measures' names (nDCG@10, AP, RR, P@5, R@1000, Success@1, nDCG(rel=2)@10) against ir_measures itself.

The reference is ir_measures' pytrec_eval provider on generated runs with
tied scores, graded and unjudged documents, queries without a relevant
document, and queries missing from the run or from the qrels. Ties need no
care: ``evaluate_runs`` orders a run as trec_eval does (descending score,
ties by descending document id), so the values agree exactly.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.evaluate import evaluate_runs
from uncertank.metrics import (
    IR_MEASURES,
    parse_ir_measure,
    precision_at_k,
    recall_at_k,
    resolve_metrics,
    trec_recall_at_k,
)

ir_measures = pytest.importorskip("ir_measures")
pytrec_eval = pytest.importorskip("pytrec_eval")

#: the names of the issue, and a few more spellings and options
NAMES = ["nDCG@10", "AP", "RR", "P@5", "R@1000", "Success@1", "nDCG(rel=2)@10", "nDCG", "AP@5", "RR@3",
         "P(rel=2)@10", "R(rel=2)@20", "Success(rel=3)@5", "AP(rel=2)", "RR(rel=2)"]


def _generate(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels and a run: ties, grades 0-3 (and -1), unjudged documents, queries missing either side."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i:02d}" for i in range(40)]
    qrels: dict[str, dict[str, int]] = {}
    for q in range(28):  # q25-q27 are judged but not retrieved
        judged = rng.choice(docs, size=int(rng.integers(3, 25)), replace=False)
        grades = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], size=judged.size)
        if q % 7 == 0:
            grades[:] = 0  # no relevant document
        elif q % 7 == 1:
            grades = np.minimum(grades, 1)  # relevant only at grade 1: none with rel=2
        qrels[f"q{q}"] = {str(d): int(g) for d, g in zip(judged, grades, strict=True)}
    run: dict[str, dict[str, float]] = {}
    for q in [*range(25), 28, 29]:  # q28 and q29 are not judged
        retrieved = rng.choice(docs, size=int(rng.integers(1, 35)), replace=False)
        scores = np.round(rng.random(retrieved.size) * 4) / 4  # few values: many ties
        run[f"q{q}"] = {str(d): float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


def _write(
    tmp_path: Path, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], tag: str
) -> tuple[Path, Path]:
    qp, rp = tmp_path / "qrels.txt", tmp_path / f"{tag}.run"
    qp.write_text("".join(f"{q} 0 {d} {g}\n" for q, per in qrels.items() for d, g in per.items()))
    lines = []
    for q, per in run.items():
        for rank, (d, s) in enumerate(sorted(per.items(), key=lambda x: -x[1]), start=1):
            lines.append(f"{q} Q0 {d} {rank} {s} {tag}\n")
    rp.write_text("".join(lines))
    return qp, rp


def _label(name: str) -> str:
    """The column of an ir_measures name: its spelling, but Recall@k for R@k (R@k labels R_n@k, Success@k)."""
    return resolve_metrics([name])[0].display_label


def _reference(name: str, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    """ir_measures' per-query values (pytrec_eval provider).

    nDCG(rel=N) is nDCG on qrels with the grades below N set to 0. The
    provider has no RR@k (it would silently compute RR): RR@k is RR of the
    run cut to its top k in trec_eval's order (score, then document id,
    descending).
    """
    measure_name = name
    if name.startswith("RR@"):
        k = int(name[3:])
        run = {q: dict(sorted(per.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]) for q, per in run.items()}
        measure_name = "RR"
    if name.startswith("nDCG(rel="):
        level = int(name[len("nDCG(rel="):name.index(")")])
        qrels = {q: {d: (g if g >= level else 0) for d, g in per.items()} for q, per in qrels.items()}
        measure_name = "nDCG" + name[name.index(")") + 1:]
    measure = ir_measures.parse_measure(measure_name)
    return {m.query_id: m.value for m in ir_measures.pytrec_eval.iter_calc([measure], qrels, run)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_name_equals_ir_measures_per_query_and_mean(tmp_path, seed):
    # ir_measures averages over every query of the qrels, a missing one counting 0: trec_eval -c
    qrels, run = _generate(seed)
    qp, rp = _write(tmp_path, qrels, run, "sys")
    report = evaluate_runs([rp], qp, metrics=NAMES, complete=True)
    scores = report.runs[0]
    assert report.ranking == [_label(n) for n in NAMES]
    # every column's canonical identifier is ir_measures' own spelling of the measure (which has no nDCG(rel=N))
    for name in NAMES:
        if not name.startswith("nDCG(rel="):
            assert report.measures[_label(name)] == str(ir_measures.parse_measure(name)), name
    for name in NAMES:
        label = _label(name)
        ref = _reference(name, qrels, run)
        assert sorted(scores.query_ids) == sorted(ref) == sorted(qrels), name
        ours = dict(zip(scores.query_ids, scores.per_query[label].tolist(), strict=True))
        for qid, value in ref.items():
            assert ours[qid] == pytest.approx(value, abs=1e-12), (name, qid)
        assert scores.summary[label] == pytest.approx(np.mean(list(ref.values())), abs=1e-12), name


@pytest.mark.parametrize("seed", [0, 1])
def test_by_default_the_queries_of_both_files_as_trec_eval(tmp_path, seed):
    qrels, run = _generate(seed)
    qp, rp = _write(tmp_path, qrels, run, "sys")
    report = evaluate_runs([rp], qp, metrics=NAMES)
    scores = report.runs[0]
    shared = sorted(set(qrels) & set(run))
    assert sorted(scores.query_ids) == shared
    for name in NAMES:
        label = _label(name)
        ref = _reference(name, qrels, run)
        ours = dict(zip(scores.query_ids, scores.per_query[label].tolist(), strict=True))
        assert [ours[q] for q in shared] == pytest.approx([ref[q] for q in shared], abs=1e-12), name
        assert scores.summary[label] == pytest.approx(np.mean([ref[q] for q in shared]), abs=1e-12), name


def test_the_generated_data_hold_what_the_reference_needs(tmp_path):
    qrels, run = _generate(0)
    assert {"q25", "q26", "q27"}.isdisjoint(run) and {"q25", "q26", "q27"} <= set(qrels)  # not retrieved
    assert {"q28", "q29"} <= set(run) and {"q28", "q29"}.isdisjoint(qrels)  # not judged
    assert "q0" in run and all(g <= 0 for g in qrels["q0"].values())  # judged, nothing relevant
    assert "q1" in run and max(qrels["q1"].values()) == 1  # nothing relevant with rel=2
    assert any(len(set(per.values())) < len(per) for per in run.values())  # ties
    assert any(d not in qrels.get(q, {}) for q, per in run.items() for d in per)  # unjudged retrieved
    assert any(g >= 2 for per in qrels.values() for g in per.values())  # graded


def test_the_command_of_the_issue_prints_ir_measures_names(tmp_path):
    qrels, run = _generate(3)
    qp, rp = _write(tmp_path, qrels, run, "sys")
    names = ["nDCG@10", "AP", "RR", "P@5", "R@1000", "Success@1", "nDCG(rel=2)@10"]
    args = ["evaluate", "--run", str(rp), "--qrels", str(qp), "-c"]
    for n in names:
        args += ["-m", n]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    header, _, row = res.output.splitlines()[:3]
    assert header.split() == ["run", "queries", *[_label(n) for n in names]]
    assert _label("R@1000") == "Recall@1000"
    for name, cell in zip(names, row.split()[2:], strict=True):
        ref = _reference(name, qrels, run)
        assert float(cell) == pytest.approx(np.mean(list(ref.values())), abs=5e-5), name


# --------------------------------------------------------------------------- the two new metrics


def _ragged(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 15, size=30)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    scores = rng.random(int(offsets[-1]))  # continuous: no ties
    labels = rng.choice([0, 0, 0, 1, 2, 3], size=scores.size)
    return scores, labels, offsets


@pytest.mark.parametrize("seed", [0, 1])
def test_precision_and_trec_recall_equal_pytrec_eval_on_lists(seed):
    from uncertank import RankedLists

    scores, labels, offsets = _ragged(seed)
    lists = RankedLists.from_flat(scores, labels, offsets)
    qrel, run = {}, {}
    for q in range(offsets.size - 1):
        lo, hi = offsets[q], offsets[q + 1]
        qrel[str(q)] = {f"d{i}": int(labels[i]) for i in range(lo, hi)}
        run[str(q)] = {f"d{i}": float(scores[i]) for i in range(lo, hi)}
    for rel in (1, 2):
        ev = pytrec_eval.RelevanceEvaluator(qrel, {"P.1,5,10", "recall.1,5,10", "success.1,5"}, relevance_level=rel)
        ref = ev.evaluate(run)
        for k in (1, 5, 10):
            p = precision_at_k(lists, k=k, rel=rel, per_query=True)
            r = trec_recall_at_k(lists, k=k, rel=rel, per_query=True)
            for q in range(offsets.size - 1):
                assert p[q] == pytest.approx(ref[str(q)][f"P_{k}"], abs=1e-12)
                assert r[q] == pytest.approx(ref[str(q)][f"recall_{k}"], abs=1e-12)
        for k in (1, 5):
            s = recall_at_k(lists, k=k, rel=rel, per_query=True)
            assert s.tolist() == [ref[str(q)][f"success_{k}"] for q in range(offsets.size - 1)]


def test_precision_and_trec_recall_match_a_loop_with_ties_by_input_position():
    scores = np.array([[0.5, 0.5, 0.9, 0.1], [0.2, 0.2, 0.2, 0.2]])
    labels = np.array([[0, 2, 1, 0], [1, 0, 0, 1]])
    for k in (1, 2, 3, 5):
        for rel in (1, 2):
            p_loop, r_loop = [], []
            for s, y in zip(scores, labels, strict=True):
                order = sorted(range(len(s)), key=lambda i: (-s[i], i))  # the tie rule
                hits = sum(y[i] >= rel for i in order[:k])
                n_rel = sum(v >= rel for v in y)
                p_loop.append(hits / k)
                r_loop.append(hits / n_rel if n_rel else 0.0)
            assert precision_at_k(scores, labels, k=k, rel=rel, per_query=True).tolist() == pytest.approx(p_loop)
            assert trec_recall_at_k(scores, labels, k=k, rel=rel, per_query=True).tolist() == pytest.approx(r_loop)


def test_recall_at_k_is_success_not_trec_recall():
    scores, labels = [[0.9, 0.8, 0.7]], [[1, 0, 1]]
    assert recall_at_k(scores, labels, k=1) == 1.0  # a hit: Success@1
    assert trec_recall_at_k(scores, labels, k=1) == 0.5  # one of two relevant: R@1
    assert "Success@k" in (recall_at_k.__doc__ or "") and "trec_recall_at_k" in (recall_at_k.__doc__ or "")


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("nDCG@10", {"name": "ndcg", "k": 10, "label": "nDCG@10"}),
        ("NDCG@10", {"name": "ndcg", "k": 10, "label": "nDCG@10"}),
        ("nDCG", {"name": "ndcg", "k": None, "label": "nDCG"}),
        ("AP", {"name": "map", "k": None, "label": "AP"}),
        ("MAP@100", {"name": "map", "k": 100, "label": "AP@100"}),
        ("RR", {"name": "mrr", "k": None, "label": "RR"}),
        ("MRR@10", {"name": "mrr", "k": 10, "label": "RR@10"}),
        ("P@5", {"name": "precision", "k": 5, "label": "P@5"}),
        ("Precision(rel=1)@5", {"name": "precision", "k": 5, "label": "P@5"}),
        ("R@1000", {"name": "trec_recall_at_k", "k": 1000, "label": "R@1000"}),
        ("Recall(rel=2)@10", {"name": "trec_recall_at_k", "k": 10, "rel": 2, "label": "R(rel=2)@10"}),
        ("Success@1", {"name": "recall_at_k", "k": 1, "label": "Success@1"}),
        ("nDCG(rel=2)@10", {"name": "ndcg", "k": 10, "rel": 2, "label": "nDCG(rel=2)@10"}),
        (" nDCG( rel = 2 , judged_only=False, dcg=log2 ) @10 ", {"name": "ndcg", "k": 10, "rel": 2,
                                                                 "label": "nDCG(rel=2)@10"}),
    ],
)
def test_parse_ir_measure(text, entry):
    assert parse_ir_measure(text) == entry
    # the label is ir_measures' own spelling of the measure (which has no nDCG(rel=N))
    if "nDCG(rel=" not in entry["label"]:
        assert entry["label"] == str(ir_measures.parse_measure(text.replace(" ", "")))


def test_names_that_are_not_ir_measures_are_left_to_the_registry():
    for text in ("bleu", "Rprec", "map:k=5", "", "nDCG(rel=2"):
        assert parse_ir_measure(text) is None
    assert set(IR_MEASURES) == {"nDCG", "AP", "RR", "P", "R", "Success"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("P", "P needs a cutoff, e.g. P@10"),
        ("R", "R needs a cutoff"),
        ("Success", "Success needs a cutoff"),
        ("P@0", "the cutoff after '@' must be an integer >= 1; got '0'"),
        ("P@five", "the cutoff after '@' must be an integer >= 1; got 'five'"),
        ("P(rel=0)@5", "rel must be an integer >= 1"),
        ("AP(rel=two)", "rel must be an integer >= 1"),
        ("AP(judged_only=True)", "judged_only=True is not supported"),
        ("AP(judged_only=maybe)", "judged_only must be True or False"),
        ("nDCG(dcg=exp-log2)@10", "only dcg=log2 is supported"),
        ("AP(dcg=log2)", "AP has no parameter 'dcg'; supported: rel, judged_only"),
        ("AP(rel)", "parameters are key=value pairs"),
        ("AP(rel=2, rel=3)", "parameter 'rel' is given twice"),
    ],
)
def test_bad_ir_measures_names_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_ir_measure(text)
    with pytest.raises(ValueError, match="metric"):
        resolve_metrics([text])


def test_resolve_metrics_understands_the_names_for_every_caller():
    # what a study's metrics = [...] and evaluate_stream go through
    metrics = resolve_metrics(["nDCG@10", {"name": "P@5", "label": "precision five"}, "map", "Success@2"])
    assert [m.name for m in metrics] == ["ndcg", "precision", "map", "recall_at_k"]
    assert [m.display_label for m in metrics] == ["nDCG@10", "precision five", "MAP", "Success@2"]
    assert metrics[1].options["k"] == 5 and metrics[3].options["k"] == 2
    (m,) = resolve_metrics([{"name": "nDCG(rel=2)@10", "rel": 2}])  # the same option twice is fine
    assert m.options == {"k": 10, "rel": 2}
    with pytest.raises(ValueError, match=r"'P@5' sets k=5 but the entry gives k=10"):
        resolve_metrics([{"name": "P@5", "k": 10}])
    with pytest.raises(ValueError, match=r"unknown metric 'bleu' \(entry 0\); known metrics: .*ir_measures name"):
        resolve_metrics(["bleu"])


def test_evaluate_stream_and_a_study_entry_take_the_names():
    from uncertank.metrics import evaluate_stream

    rng = np.random.default_rng(0)
    s, y = rng.random((20, 8)), rng.integers(0, 3, (20, 8))
    out = evaluate_stream([(s[:10], y[:10]), (s[10:], y[10:])], ["P@3", "R@3", "nDCG(rel=2)@5"])
    assert out["P@3"] == pytest.approx(precision_at_k(s, y, k=3))
    assert "R@3" not in out  # R@3 labels R_n@3 (Success@3); ir_measures' R@3 is trec recall, labelled Recall@3
    assert out["Recall@3"] == pytest.approx(trec_recall_at_k(s, y, k=3))
    from uncertank.metrics import ndcg_at_k

    assert out["nDCG(rel=2)@5"] == pytest.approx(ndcg_at_k(np.asarray(s), np.where(y >= 2, y, 0), k=5))


def test_labels_of_the_registered_names_show_rel():
    ndcg, p, r, succ = resolve_metrics([{"name": "ndcg", "k": 10, "rel": 2}, {"name": "precision", "k": 5},
                                        {"name": "trec_recall_at_k", "k": 100}, {"name": "recall_at_k", "rel": 2}])
    assert [m.display_label for m in (ndcg, p, r, succ)] == ["nDCG(rel=2)@10", "P@5", "Recall@100", "R(rel=2)@1"]


def test_two_meanings_of_r_at_k_are_two_columns_of_one_report(tmp_path):
    qrels, run = _generate(0)
    qp, rp = _write(tmp_path, qrels, run, "sys")
    report = evaluate_runs([rp], qp, metrics=["R@5", {"name": "recall_at_k", "k": 5}])
    assert report.ranking == ["Recall@5", "R@5"]
    assert report.measures == {"Recall@5": "R@5", "R@5": "Success@5"}
    summary = report.runs[0].summary
    assert summary["Recall@5"] != summary["R@5"]
    report = evaluate_runs([rp], qp, metrics=["R@5", "Success@5"])
    assert report.ranking == ["Recall@5", "Success@5"]
    # one measure under two labels is refused
    with pytest.raises(ValueError, match=r"one measure, Success@5, under two labels \('R@5' and 'Success@5'\)"):
        evaluate_runs([rp], qp, metrics=[{"name": "recall_at_k", "k": 5}, "Success@5"])


def test_rel_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="rel must be"):
        precision_at_k([[0.5]], [[1]], k=1, rel=0)
    assert math.isclose(precision_at_k([[0.5, 0.4]], [[2, 1]], k=2, rel=2), 0.5)


def test_a_name_whose_metric_is_not_registered_says_so(monkeypatch):
    import uncertank.plugins

    real = uncertank.plugins.registry

    def without_precision(kind):
        reg = dict(real(kind))
        reg.pop("precision", None)
        return reg

    monkeypatch.setattr(uncertank.plugins, "registry", without_precision)
    with pytest.raises(ValueError, match=r"metric 'P@5' \(entry 0\) is ir_measures' name of 'precision', which is not"):
        resolve_metrics(["P@5"])


def test_complete_must_be_a_bool(tmp_path):
    qrels, run = _generate(0)
    qp, rp = _write(tmp_path, qrels, run, "sys")
    with pytest.raises(TypeError, match="complete must be a bool; got str"):
        evaluate_runs([rp], qp, complete="yes")  # type: ignore[arg-type]
