"""External runs (``[[bayes.runs]]``): another system's TREC run file compared beside the study's rankers."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from uncertank import QuerySet
from uncertank.experiment import StudyConfigError, load_config, run_study
from uncertank.experiment.external import match_runs
from uncertank.experiment.preflight import validate_config
from uncertank.experiment.runner import load_data
from uncertank.experiment.systems import compare_systems
from uncertank.formatting import format_number

pytest.importorskip("pymc")

STUDY = """
[study]
name = "runs beside the rankers"
train_dataset = "ubuntu-sample"
train_negatives = "random"
n_candidates = 5
max_train_queries = 10
max_valid_queries = 6
max_test_queries = 12
nota = false
risk_grid = [0.0]
metrics = ["map", {{ name = "recall_at_k", k = 1 }}]
recalibrators = ["platt"]

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"
{more_conditions}
[[rankers]]
name = "bm25"

[[rankers]]
name = "bm25"
label = "bm25_flat"
params = {{ k1 = 0.5, b = 0.0 }}

[conformal]
enabled = false

[bayes]
families = ["gaussian"]
retries = 0
{bayes}
"""

RUN = """
[[bayes.runs]]
name = "{name}"
condition = "{condition}"
path = "{path}"
"""


def _study(tmp_path: Path, bayes: str = "", more_conditions: str = "") -> Path:
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(bayes=bayes, more_conditions=more_conditions))
    return path


def _run(name: str = "other", condition: str = "in-domain", path: str = "runs/other.trec") -> str:
    return RUN.format(name=name, condition=condition, path=path)


def _scores(qs: QuerySet) -> dict[tuple[str, str], float]:
    """A run on ``qs``'s own candidates: scores with ties, and the last candidate of every odd query unscored."""
    assert qs.query_ids is not None and qs.candidate_ids is not None
    out = {}
    for q in range(qs.n_queries):
        lo, hi = int(qs.offsets[q]), int(qs.offsets[q + 1])
        for j in range(lo, hi - (q % 2)):
            out[str(qs.query_ids[q]), str(qs.candidate_ids[j])] = float((7 * q + 3 * j) % 4)  # 4 values: ties
    return out


def _write(path: Path, scores: dict[tuple[str, str], float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{q} Q0 {d} {i + 1} {s} other" for i, ((q, d), s) in enumerate(scores.items())]
    path.write_text("\n".join(lines) + "\n")


def _average_precision_loop(qs: QuerySet, scores: dict[tuple[str, str], float]) -> list[float]:
    """MAP per query by hand: scored candidates first by descending score, ties and the unscored by descending id."""
    assert qs.query_ids is not None and qs.candidate_ids is not None and qs.labels is not None
    out = []
    for q in range(qs.n_queries):
        lo, hi = int(qs.offsets[q]), int(qs.offsets[q + 1])
        qid = str(qs.query_ids[q])
        docs = [(str(qs.candidate_ids[j]), int(qs.labels[j])) for j in range(lo, hi)]
        # descending id within equal keys: sort by id descending first, then (stable) by the key
        docs.sort(key=lambda d: d[0], reverse=True)
        docs.sort(key=lambda d: (0, -scores[qid, d[0]]) if (qid, d[0]) in scores else (1, 0.0))
        hits, total = 0, 0.0
        for rank, (_, label) in enumerate(docs, start=1):
            if label > 0:
                hits += 1
                total += hits / rank
        n_rel = sum(1 for _, label in docs if label > 0)
        out.append(total / n_rel if n_rel else 0.0)
    return out


@pytest.fixture
def fake_fit(monkeypatch):
    """The Bayesian fit replaced by a posterior drawn directly (tests/bayes/test_cli.py): the frames fitted, kept."""
    import uncertank.bayes
    from tests.bayes.test_cli import _fitted

    frames = []

    def record(df, **options):
        frames.append(df.copy())
        return _fitted(df)

    monkeypatch.setattr(uncertank.bayes, "compare", record)
    return frames


def test_an_external_run_is_measured_compared_and_reported(tmp_path, fake_fit):
    study = _study(tmp_path, _run())
    config = load_config(study)
    assert config.bayes.runs[0].path == str((tmp_path / "runs" / "other.trec").resolve())  # from the file's folder
    qs = load_data(config).tests["in-domain"]
    scores = _scores(qs)
    _write(tmp_path / "runs" / "other.trec", scores)
    result = run_study(config, tmp_path / "out")

    (run,) = result.external_runs
    expected = _average_precision_loop(qs, scores)
    assert (run.name, run.condition, run.metric) == ("other", "in-domain", "MAP")
    assert run.per_query == pytest.approx(expected, abs=1e-12)
    assert run.mean == pytest.approx(float(np.mean(expected)), abs=1e-12)
    assert run.n_pairs == qs.n_pairs == 60 and run.n_unscored == 6  # the last candidate of 6 odd queries
    assert 0.0 < run.mean < 1.0 and len(set(run.per_query)) > 1  # a run that ranks, not a constant

    # pytrec_eval on the same run, the unscored candidates added below every score: the same values
    pytrec_eval = pytest.importorskip("pytrec_eval")
    assert qs.query_ids is not None and qs.candidate_ids is not None and qs.labels is not None
    qids = np.asarray(qs.query_ids)[qs.query_index]
    qrels: dict[str, dict[str, int]] = {}
    full: dict[str, dict[str, float]] = {}
    for q, d, label in zip(qids.tolist(), qs.candidate_ids, qs.labels.tolist(), strict=True):
        qrels.setdefault(q, {})[d] = int(label)
        full.setdefault(q, {})[d] = scores.get((q, d), -1.0)
    ap = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(full)
    assert run.per_query == pytest.approx([ap[str(q)]["map"] for q in qs.query_ids], abs=1e-12)

    # the fitted frame: the run is a system of the condition's fit, its topics those of the rankers
    (frame,) = fake_fit
    assert sorted(frame["system"].unique()) == ["bm25", "bm25_flat", "other"]
    mine = frame[frame["system"] == "other"]
    assert mine["topic"].tolist() == list(range(12))
    assert mine["score"].tolist() == pytest.approx(expected, abs=1e-12)
    bm25 = frame[frame["system"] == "bm25"]["score"].tolist()
    assert bm25 == result.evaluation("bm25", "in-domain").per_query["MAP"]

    b = result.bayes["gaussian in-domain"]
    assert b.baseline == "bm25" and b.n_systems == 3
    assert {e["system"] for e in b.effects} == {"bm25", "bm25_flat", "other"}
    row = next(r for r in b.against_baseline if r["system"] == "other")
    assert row["diff_lower"] <= row["diff_mean"] <= row["diff_upper"] and "urisk_r1" in row

    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    (saved,) = doc["external_runs"]
    assert saved["name"] == "other" and saved["per_query"] == pytest.approx(expected, abs=1e-12)
    assert saved["sha256"] == hashlib.sha256((tmp_path / "runs" / "other.trec").read_bytes()).hexdigest()
    assert "other" in {e["system"] for e in doc["bayes"]["gaussian in-domain"]["effects"]}

    report = (tmp_path / "out" / "report.md").read_text()
    section = report.split("## Bayesian comparison of the rankers")[1]
    assert f"| `other` | `in-domain` | `other.trec` | 12 | 6 of 60 | {format_number(run.mean)} |" in section
    assert f"| `in-domain` | `gaussian` | `other` (run) | {format_number(row['diff_mean'])} [" in section


def test_the_bayes_fit_needs_the_runs_it_names(tmp_path):
    config = load_config(_study(tmp_path, _run()))
    from uncertank.experiment.result import Evaluation

    evs = [
        Evaluation(
            ranker=r,
            condition="in-domain",
            probabilistic=False,
            stochastic=False,
            metrics={"MAP": 0.5},
            per_query={"MAP": [0.5, 1.0]},
        )
        for r in ("bm25", "bm25_flat")
    ]
    with pytest.raises(
        ValueError,
        match=r"runs: run 'other' of \[\[bayes.runs\]\] needs its per-query 'MAP' "
        r"under 'in-domain', one per query \(2\); got none",
    ):
        compare_systems(config, tmp_path, evs, resume=False)


# -- refused at the door, each error naming its path in the study file -------------------------------------------------


def test_an_unknown_condition_is_named(tmp_path):
    with pytest.raises(
        StudyConfigError,
        match=r"bayes.runs\[0\].condition: must name a condition of the study "
        r"\('in-domain'\); got 'cross'",
    ):
        load_config(_study(tmp_path, _run(condition="cross")))


def test_a_name_that_is_a_rankers_label_is_refused(tmp_path):
    with pytest.raises(StudyConfigError, match=r"bayes.runs\[0\].name: 'bm25_flat' is the label of rankers\[1\]"):
        load_config(_study(tmp_path, _run(name="bm25_flat")))


def test_one_name_twice_under_one_condition_is_refused(tmp_path):
    with pytest.raises(
        StudyConfigError,
        match=r"bayes.runs\[1\].name: 'other' is already the name of runs\[0\] "
        r"under 'in-domain'",
    ):
        load_config(_study(tmp_path, _run() + _run(path="runs/again.trec")))


def test_a_run_outside_the_conditions_compared_is_refused(tmp_path):
    more = '[[conditions]]\nname = "random"\ndataset = "ubuntu-sample"\nnegatives = "random"\n'
    with pytest.raises(
        StudyConfigError,
        match=r"bayes.runs\[0\].condition: 'random' is not among the conditions "
        r"compared",
    ):
        load_config(_study(tmp_path, 'conditions = ["in-domain"]\n' + _run(condition="random"), more))


def test_runs_apply_to_the_studys_rankers_only(tmp_path):
    with pytest.raises(StudyConfigError, match=r'bayes.runs: applies to systems = "study"'):
        load_config(_study(tmp_path, 'systems = "trec_covid"\n' + _run()))


def test_an_unknown_key_of_a_run_lists_the_known_ones(tmp_path):
    with pytest.raises(StudyConfigError, match=r"bayes.runs\[0\].file: unknown key; known: name, condition, path"):
        load_config(_study(tmp_path, _run() + 'file = "x"\n'))


def test_one_ranker_and_a_run_are_compared_but_not_a_condition_without_a_run(tmp_path):
    one = tmp_path / "one.toml"
    text = STUDY.format(bayes=_run(), more_conditions="").replace(
        '[[rankers]]\nname = "bm25"\nlabel = "bm25_flat"\nparams = { k1 = 0.5, b = 0.0 }\n', ""
    )
    one.write_text(text)
    config = load_config(one)
    assert config.bayes.enabled and [r.key for r in config.rankers] == ["bm25"]
    more = '[[conditions]]\nname = "random"\ndataset = "ubuntu-sample"\nnegatives = "random"\n'
    one.write_text(text.replace('negatives = "random"\n\n[[rankers]]', f'negatives = "random"\n{more}\n[[rankers]]'))
    with pytest.raises(
        StudyConfigError,
        match=r"bayes.runs: a comparison needs two systems or more under each "
        r"condition compared; 'random' would have only the study's one ranker",
    ):
        load_config(one)


def test_a_missing_file_is_named_before_any_work(tmp_path):
    config = load_config(_study(tmp_path, _run(path="runs/none.trec")))
    with pytest.raises(
        StudyConfigError,
        match=r"bayes.runs\[0\].path: must name a TREC run file; got '.*none.trec', "
        r"which does not exist",
    ):
        validate_config(config)


def test_a_malformed_file_is_named_with_its_line(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "other.trec").write_text("q1 Q0 d1 1 0.5 other\nq1 Q0 d2 two 0.4 other\n")
    with pytest.raises(StudyConfigError, match=r"bayes.runs\[0\].path: must be a TREC run file .*line 2"):
        validate_config(load_config(_study(tmp_path, _run())))


def test_query_ids_that_do_not_match_are_counted_and_shown_before_any_ranker_runs(tmp_path):
    config = load_config(_study(tmp_path, _run()))
    qs = load_data(config).tests["in-domain"]
    assert qs.query_ids is not None
    scores = {k: v for k, v in _scores(qs).items() if k[0] != qs.query_ids[0]}
    scores["no-such-query", "d"] = 1.0
    _write(tmp_path / "runs" / "other.trec", scores)
    with pytest.raises(StudyConfigError) as err:
        run_study(config, tmp_path / "out")
    msg = str(err.value)
    assert msg.startswith("bayes.runs[0].path: ") and "does not match the test queries of 'in-domain'" in msg
    assert "1 of its 12 queries are not test queries of 'in-domain' (e.g. 'no-such-query'" in msg
    assert f"it misses 1 of the 12 test queries of 'in-domain' (e.g. {qs.query_ids[0]!r})" in msg
    assert not (tmp_path / "out" / "predictions").exists() and not (tmp_path / "out" / "models").exists()


def test_documents_that_are_not_candidates_are_counted_and_shown(tmp_path):
    config = load_config(_study(tmp_path, _run()))
    qs = load_data(config).tests["in-domain"]
    assert qs.query_ids is not None
    scores = _scores(qs)
    q0, q1 = str(qs.query_ids[0]), str(qs.query_ids[1])
    scores[q0, "not-a-candidate"] = 2.0
    scores[q1, "nor-this"] = 2.0
    _write(tmp_path / "runs" / "other.trec", scores)
    with pytest.raises(StudyConfigError) as err:
        run_study(config, tmp_path / "out")
    msg = str(err.value)
    assert msg.startswith("bayes.runs[0].path: ")
    assert (
        f"2 of its {len(scores)} (query, document) pairs of those queries are not candidates of their query under "
        f"'in-domain' (e.g. {q0!r} 'not-a-candidate', {q1!r} 'nor-this')" in msg
    )
    # the dry run makes the same check
    from uncertank.experiment.runner import plan_study

    with pytest.raises(StudyConfigError, match=r"bayes.runs\[0\].path: .* 2 of its"):
        plan_study(config, tmp_path / "dry")


def test_a_condition_without_ids_is_refused(tmp_path):
    data = tmp_path / "plain_test.jsonl"
    lines = [
        {"context": [f"question {i} about disks"], "candidates": [f"answer {i}", f"other {i}"], "labels": [1, 0]}
        for i in range(4)
    ]
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    more = '[[conditions]]\nname = "plain"\ndataset = "jsonl:plain_{split}.jsonl"\nnegatives = "file"\n'
    text = STUDY.format(bayes=_run(condition="plain"), more_conditions=more)
    text = text.replace("n_candidates = 5", "n_candidates = 2")
    (tmp_path / "study.toml").write_text(text)
    _write(tmp_path / "runs" / "other.trec", {("L1", "a"): 1.0})
    config = load_config(tmp_path / "study.toml")
    with pytest.raises(
        StudyConfigError,
        match=r"bayes.runs\[0\].condition: condition 'plain' cannot be compared "
        r"with a run: its test queries carry no candidate ids",
    ):
        run_study(config, tmp_path / "out")


@pytest.mark.parametrize(
    ("query_ids", "candidate_ids", "said"),
    [
        (["a", "a"], ["x", "y", "x", "y"], "do not have distinct ids"),
        (["a", "b"], ["x", "x", "x", "y"], "1 of its candidates repeat the id of another candidate of the same query"),
        (
            ["a", "b"],
            ["x", "y y", "x", "y"],
            "1 of its query or candidate ids are empty or hold white space (e.g. 'y y')",
        ),
    ],
)
def test_ids_a_run_cannot_name_are_refused(tmp_path, query_ids, candidate_ids, said):
    config = load_config(_study(tmp_path, _run()))
    _write(tmp_path / "runs" / "other.trec", {("a", "x"): 1.0})
    qs = QuerySet(
        [["q"], ["r"]],
        ["c1", "c2", "c3", "c4"],
        np.array([0, 2, 4]),
        np.array([1, 0, 0, 1]),
        query_ids=query_ids,
        candidate_ids=candidate_ids,
    )
    with pytest.raises(StudyConfigError) as err:
        match_runs(config, {"in-domain": qs})
    assert str(err.value).startswith("bayes.runs[0].condition: condition 'in-domain' cannot be compared with a run: ")
    assert said in str(err.value)


@pytest.mark.slow
def test_a_real_fit_reads_the_run_against_the_reference(tmp_path):
    """With PyMC's sampler: a run that ranks every relevant candidate first is credibly better than bm25."""
    study = _study(tmp_path, "draws = 1000\ntune = 1000\n" + _run())
    study.write_text(study.read_text().replace("retries = 0", "retries = 1"))
    config = load_config(study)
    qs = load_data(config).tests["in-domain"]
    assert qs.query_ids is not None and qs.candidate_ids is not None and qs.labels is not None
    perfect = {}
    for q in range(qs.n_queries):
        for j in range(int(qs.offsets[q]), int(qs.offsets[q + 1])):
            perfect[str(qs.query_ids[q]), str(qs.candidate_ids[j])] = float(qs.labels[j]) + 0.01 * j
    _write(tmp_path / "runs" / "other.trec", perfect)
    result = run_study(config, tmp_path / "out")
    assert result.external_runs[0].per_query == [1.0] * 12
    b = result.bayes["gaussian in-domain"]
    assert b.converged, b.diagnostics
    row = next(r for r in b.against_baseline if r["system"] == "other")
    bm25_map = result.evaluation("bm25", "in-domain").metrics["MAP"]
    assert bm25_map < 0.8 and row["diff_mean"] > 0 and math.isfinite(row["p_better"])
    assert row["verdict"] == "better" and row["p_better"] > 0.95
