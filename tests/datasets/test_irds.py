"""``irds:`` names: ir_datasets collections built from local files and registered here (nothing is downloaded)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

ir_datasets = pytest.importorskip("ir_datasets")

from ir_datasets.formats import TrecQrels, TrecScoredDocs, TsvDocs, TsvQueries  # noqa: E402
from ir_datasets.util import Download, LocalDownload, RequestsDownload  # noqa: E402

from uncertank.datasets import load  # noqa: E402
from uncertank.datasets.irds import (  # noqa: E402
    DatasetUnavailableError,
    IrdsName,
    irds_qrels,
)
from uncertank.plugins import UnknownNameError  # noqa: E402

DOCS = {
    "d1": "solar panels convert sunlight into electricity",
    "d2": "wind turbines generate electricity from wind",
    "d3": "the history of the roman empire",
    "d4": "sunlight and solar energy storage in batteries",
    "d5": "roman roads and aqueducts",
    "d6": "electric cars and battery range",
    "d7": "coffee brewing with a french press",
    "d8": "tea ceremonies in japan",
    "d9": "espresso machines and coffee beans",
    "d10": "the fall of rome in 476",
}
QUERIES = {
    "1": "solar electricity",
    "2": "roman empire",
    "3": "coffee",
    "4": "battery storage",
    "5": "unjudged question",
}
# graded judgements: query 1 has a relevant document (d4) that its first stage misses at depth 3
QRELS = [
    ("1", "d1", 2), ("1", "d2", 0), ("1", "d4", 1),
    ("2", "d3", 2), ("2", "d10", 1), ("2", "d5", 0),
    ("3", "d9", 1), ("3", "d7", 2),
    ("4", "d4", 1), ("4", "d6", -1),
]
# a first-stage run: per query (doc, score); query 3 has a tie (d9 and d7 at 5.0): trec_eval puts d9 first
SCORED = {
    "1": [("d1", 9.0), ("d2", 7.5), ("d6", 3.0), ("d4", 2.0), ("d3", 0.5)],
    "2": [("d5", 8.0), ("d3", 6.0), ("d10", 4.0), ("d1", 1.0)],
    "3": [("d7", 5.0), ("d9", 5.0), ("d8", 4.0), ("d2", 1.0)],
    "4": [("d6", 3.0), ("d4", 2.5), ("d1", 0.1)],
    "5": [("d2", 1.0)],
}


def _write(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {k: folder / k for k in ("docs.tsv", "queries.tsv", "qrels", "scoreddocs")}
    files["docs.tsv"].write_text("".join(f"{d}\t{t}\n" for d, t in DOCS.items()))
    files["queries.tsv"].write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    files["qrels"].write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in QRELS))
    files["scoreddocs"].write_text("".join(f"{q} Q0 {d} {r} {s} first\n" for q, lst in SCORED.items()
                                           for r, (d, s) in enumerate(lst, 1)))
    return files


@pytest.fixture
def register(tmp_path, monkeypatch):
    """Register a collection under a fresh name; every name registered is removed after the test."""
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds-home"))
    names: list[str] = []

    def make(*parts: str, docs=True, queries=True, qrels=True, scoreddocs=True, name=None, components=None):
        folder = tmp_path / uuid.uuid4().hex[:8]
        files = _write(folder)
        if components is None:
            components = [
                TsvDocs(LocalDownload(files["docs.tsv"])) if docs else None,
                TsvQueries(LocalDownload(files["queries.tsv"])) if queries else None,
                TrecQrels(LocalDownload(files["qrels"]), {}) if qrels else None,
                TrecScoredDocs(LocalDownload(files["scoreddocs"])) if scoreddocs else None,
            ]
        base = name or f"uncertank-test-{uuid.uuid4().hex[:8]}"
        full = "/".join([base, *parts])
        ir_datasets.registry.register(full, ir_datasets.Dataset(*components))
        names.append(full)
        return full

    yield make
    for n in names:
        ir_datasets.registry._registered.pop(n, None)


def _lists(qs):
    return {qs.query_ids[q]: list(qs.candidate_ids[qs.offsets[q]:qs.offsets[q + 1]]) for q in range(qs.n_queries)}


def _labels(qs):
    return {qs.query_ids[q]: qs.labels[qs.offsets[q]:qs.offsets[q + 1]].tolist() for q in range(qs.n_queries)}


# --------------------------------------------------------------------------- the query set


def test_load_gives_graded_labels_and_the_scoreddocs_cut_to_n_candidates(register):
    name = register()
    qs = load(f"irds:{name}", split="test", n_candidates=3, cache=False)
    assert list(qs.query_ids) == ["1", "2", "3", "4"]  # query 5 has no judgement
    assert _lists(qs) == {"1": ["d1", "d2", "d6"], "2": ["d5", "d3", "d10"], "3": ["d9", "d7", "d8"],
                          "4": ["d6", "d4", "d1"]}
    assert _labels(qs) == {"1": [2, 0, 0], "2": [0, 2, 1], "3": [1, 2, 0], "4": [0, 1, 0]}  # -1 counts 0
    assert qs.contexts[0] == ["solar electricity"]
    assert qs.candidates[0] == DOCS["d1"]
    assert all(qs.candidates[i] == DOCS[d] for i, d in enumerate(qs.candidate_ids))
    assert qs.name == f"{name}/test/scoreddocs"


def test_without_n_candidates_the_whole_first_stage_is_kept(register):
    qs = load(f"irds:{register()}", split="test", cache=False)
    assert _lists(qs)["1"] == ["d1", "d2", "d6", "d4", "d3"]  # d4, relevant, is in the list at depth 5
    assert qs.lengths.tolist() == [5, 4, 4, 3]


def test_a_run_file_gives_the_candidates(register, tmp_path):
    run = tmp_path / "my.run"
    run.write_text("1 Q0 d4 1 3.0 mine\n1 Q0 d1 2 2.0 mine\n2 Q0 d10 1 1.0 mine\n9 Q0 d1 1 1.0 mine\n")
    with pytest.warns(RuntimeWarning, match=r"2 of 4 judged queries have no candidate in the run file"):
        qs = load(f"irds:{register()}?run={run}", split="test", cache=False)
    assert _lists(qs) == {"1": ["d4", "d1"], "2": ["d10"]}  # queries 3 and 4 have no candidate in the run
    assert _labels(qs) == {"1": [1, 2], "2": [1]}
    assert qs.name.endswith("/test/run")


def test_a_run_naming_a_document_the_collection_lacks_is_refused(register, tmp_path):
    run = tmp_path / "bad.run"
    run.write_text("1 Q0 nope 1 3.0 mine\n")
    with pytest.raises(ValueError, match=r"1 documents of the run file .* are not in its documents, e\.g\. 'nope'"), \
            pytest.warns(RuntimeWarning, match=r"no candidate in the run file"):
        load(f"irds:{register()}?run={run}", split="test", cache=False)


def test_queries_the_first_stage_misses_are_left_out_with_a_warning(register, tmp_path):
    run = tmp_path / "one.run"
    run.write_text("2 Q0 d3 1 3.0 x\n")
    with pytest.warns(RuntimeWarning, match=r"3 of 4 judged queries have no candidate in the run file .* e\.g\. "
                                            r"query '1'"):
        qs = load(f"irds:{register()}?run={run}", split="test", cache=False)
    assert list(qs.query_ids) == ["2"]


def test_bm25_over_the_documents_when_the_collection_has_no_scoreddocs(register):
    bm25s = pytest.importorskip("bm25s")
    name = register(scoreddocs=False)
    qs = load(f"irds:{name}", split="test", n_candidates=2, cache=False)
    assert qs.name.endswith("/test/bm25")
    # an independent BM25: bm25s' own scores over the documents, best first, ties by document order
    ids = list(DOCS)
    model = bm25s.BM25()
    model.index(bm25s.tokenize(list(DOCS.values()), stopwords="en", show_progress=False), show_progress=False)
    for q, docs in _lists(qs).items():
        scores = model.get_scores(bm25s.tokenize([QUERIES[q]], stopwords="en", return_ids=False,
                                                 show_progress=False)[0])
        order = [ids[i] for i in np.lexsort((np.arange(len(ids)), -scores)) if scores[i] > 0]
        assert docs == order[:2], q


def test_first_stage_bm25_can_be_asked_for_where_scoreddocs_exist(register):
    pytest.importorskip("bm25s")
    qs = load(f"irds:{register()}?first_stage=bm25", split="test", n_candidates=1, cache=False)
    assert _lists(qs)["3"] in (["d7"], ["d9"])  # "coffee": a document that holds the word
    assert qs.name.endswith("/bm25")


def test_max_queries_keeps_a_seeded_subset(register):
    name = register()
    a = load(f"irds:{name}", split="test", n_candidates=2, max_queries=2, seed=3, cache=False)
    b = load(f"irds:{name}", split="test", n_candidates=2, max_queries=2, seed=3, cache=False)
    assert a.n_queries == 2 and list(a.query_ids) == list(b.query_ids)
    assert set(a.query_ids) <= {"1", "2", "3", "4"}
    assert list(a.query_ids) == sorted(a.query_ids)  # in collection order


def test_max_context_turns_changes_nothing_for_one_text_queries(register):
    name = register()
    a = load(f"irds:{name}", split="test", n_candidates=2, cache=False)
    b = load(f"irds:{name}", split="test", n_candidates=2, max_context_turns=1, cache=False)
    assert a.digest() == b.digest()


def test_a_sampler_keeps_the_best_graded_relevant_document_and_draws_negatives_from_the_first_stage(register):
    name = register()
    qs = load(f"irds:{name}", split="test", negatives="random", n_candidates=3, seed=1, cache=False)
    relevant = {d for _, d, g in QRELS if g > 0}
    best = {"1": "d1", "2": "d3", "3": "d7", "4": "d4"}
    pool = {d for q in ("1", "2", "3", "4") for d, _ in SCORED[q]} - relevant
    for q, docs in _lists(qs).items():
        labels = _labels(qs)[q]
        assert len(docs) == 3 and labels.count(1) == 1
        assert docs[labels.index(1)] == best[q]
        negatives = [d for d, lab in zip(docs, labels, strict=True) if lab == 0]
        assert set(negatives) <= pool
    assert qs.name == f"{name}/test/random"


def test_results_are_cached_and_a_changed_run_file_is_read_again(register, tmp_path):
    from uncertank.datasets import _cache

    run = tmp_path / "r.run"
    run.write_text("1 Q0 d1 1 2.0 x\n1 Q0 d2 2 1.0 x\n2 Q0 d3 1 1.0 x\n3 Q0 d7 1 1.0 x\n4 Q0 d4 1 1.0 x\n")
    name = f"irds:{register()}?run={run}"
    first = load(name, split="test")
    assert len(list(_cache.cache_dir().glob("*.json"))) == 1
    assert load(name, split="test").digest() == first.digest()
    run.write_text("1 Q0 d2 1 2.0 x\n1 Q0 d1 2 1.0 x\n2 Q0 d3 1 1.0 x\n3 Q0 d7 1 1.0 x\n4 Q0 d4 1 1.0 x\n")
    assert _lists(load(name, split="test"))["1"] == ["d2", "d1"]


# --------------------------------------------------------------------------- splits


def test_split_in_the_name_reads_the_collections_own_splits(register):
    base = f"uncertank-test-{uuid.uuid4().hex[:8]}"
    for part in ("train", "dev", "test"):
        register(part, name=base)
    for split in ("train", "valid", "test"):
        qs = load(f"irds:{base}/{{split}}", split=split, n_candidates=2, cache=False)
        assert qs.name.startswith(f"{base}/{dict(train='train', valid='dev', test='test')[split]}/")


def test_splits_option_says_what_split_becomes(register):
    base = f"uncertank-test-{uuid.uuid4().hex[:8]}"
    register("tr", name=base)
    register("te", name=base)
    qs = load(f"irds:{base}/{{split}}?splits=tr,tr,te", split="valid", n_candidates=2, cache=False)
    assert qs.name.startswith(f"{base}/tr/")


def test_query_split_cuts_the_judged_queries_by_the_documented_rule(register):
    name = register()
    parts = {s: load(f"irds:{name}?query_split=50/25/25&split_seed=7", split=s, n_candidates=2, cache=False)
             for s in ("train", "valid", "test")}
    ids = {s: list(qs.query_ids) for s, qs in parts.items()}
    # the rule of docs/datasets.md, written out: judged ids in numeric order, permuted by default_rng(split_seed),
    # cut at the rounded cumulative shares
    order = ["1", "2", "3", "4"]
    perm = np.random.default_rng(7).permutation(4)
    ends = [0, 2, 3, 4]  # 4 * 50% = 2, 4 * 75% = 3, 4 * 100% = 4
    for i, s in enumerate(("train", "valid", "test")):
        want = sorted(order[j] for j in perm[ends[i]:ends[i + 1]])
        assert ids[s] == want, s


def test_the_query_split_rounds_cumulative_shares_so_a_zero_share_is_empty(register):
    name = register()
    train = load(f"irds:{name}?query_split=70/30/0", split="train", n_candidates=2, cache=False)
    valid = load(f"irds:{name}?query_split=70/30/0", split="valid", n_candidates=2, cache=False)
    assert train.n_queries == 3 and valid.n_queries == 1  # 4 * 70% = 2.8 -> 3
    with pytest.raises(ValueError, match=r"query_split=70/30/0 leaves split 'test' no query \(of the 4 judged"):
        load(f"irds:{name}?query_split=70/30/0", split="test", cache=False)


# --------------------------------------------------------------------------- evaluate


def test_evaluate_takes_irds_qrels_as_it_takes_the_same_qrels_file(register, tmp_path):
    from uncertank.evaluate import evaluate_runs

    name = register()
    run = tmp_path / "sys.run"
    run.write_text("".join(f"{q} Q0 {d} {r} {s} sys\n" for q, lst in SCORED.items()
                           for r, (d, s) in enumerate(lst, 1)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in QRELS))
    from_irds = evaluate_runs([run], f"irds:{name}")
    from_file = evaluate_runs([run], qrels)
    assert from_irds.runs[0].summary == from_file.runs[0].summary
    assert from_irds.runs[0].query_ids == ["1", "2", "3", "4"]


def test_the_evaluate_command_takes_irds_qrels(register, tmp_path):
    from click.testing import CliRunner

    from uncertank.cli import cli

    name = register()
    run = tmp_path / "sys.run"
    run.write_text("1 Q0 d1 1 2.0 sys\n1 Q0 d2 2 1.0 sys\n2 Q0 d3 1 1.0 sys\n")
    result = CliRunner().invoke(cli, ["evaluate", "--run", str(run), "--qrels", f"irds:{name}", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"MAP"' in result.output


def test_irds_qrels_reads_every_judgement(register):
    frame = irds_qrels(f"irds:{register()}")
    assert sorted(zip(frame["query_id"], frame["doc_id"], frame["relevance"].tolist(), strict=True)) == sorted(QRELS)


@pytest.mark.parametrize(("qrels", "message"), [
    ("msmarco-passage", r"qrels must be 'irds:NAME' here"),
    ("irds:x?first_stage=bm25", r"without options \(\?\.\.\.\) or \{split\}"),
    ("irds:x/{split}", r"without options \(\?\.\.\.\) or \{split\}"),
])
def test_irds_qrels_refuses_a_name_it_cannot_read(qrels, message):
    with pytest.raises(ValueError, match=message):
        irds_qrels(qrels)


def test_irds_qrels_of_a_dataset_without_judgements_is_refused(register):
    name = register(qrels=False)
    with pytest.raises(ValueError, match=r"has no relevance judgements"):
        irds_qrels(f"irds:{name}")


# --------------------------------------------------------------------------- a study end to end


def test_a_study_file_runs_end_to_end_on_irds_names(register, tmp_path):
    pytest.importorskip("bm25s")
    from uncertank.experiment import load_config, run_study

    name = register()
    study = tmp_path / "irds.toml"
    study.write_text(f"""
[study]
name = "irds"
train_dataset = "irds:{name}?query_split=50/50/0"
train_negatives = "file"
n_candidates = 3
risk_grid = [0.0]
nota = false

[[conditions]]
name = "all-queries"
dataset = "irds:{name}"
negatives = "file"

[[rankers]]
name = "bm25"

[bayes]
enabled = false

[conformal]
enabled = false
""")
    config = load_config(study)
    assert config.conditions[0].dataset == f"irds:{name}"  # the name is kept as written, not made a path
    result = run_study(config, tmp_path / "out")
    assert result.sizes == {"train": 2, "valid": 2, "test": {"all-queries": 4}}
    # the graded labels reach the metrics: nDCG@10 per query against a plain loop over the same lists
    from uncertank import make_ranker

    test = load(f"irds:{name}", split="test", n_candidates=3, negatives="file")
    scores = make_ranker("bm25").predict(test).scores
    want = []
    for q in range(test.n_queries):
        lo, hi = test.offsets[q], test.offsets[q + 1]
        grades = test.labels[lo:hi].tolist()
        order = sorted(range(hi - lo), key=lambda i: (-scores[lo + i], i))  # ties by input position
        dcg = sum(grades[i] / np.log2(r + 2) for r, i in enumerate(order))
        ideal = sum(g / np.log2(r + 2) for r, g in enumerate(sorted(grades, reverse=True)))
        want.append(dcg / ideal if ideal > 0 else 0.0)
    got = result.evaluation("bm25", "all-queries").per_query["nDCG@10"]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert any(0 < v < 1 for v in got)  # grades 2 and 1 in one list: a graded nDCG, not a binary one


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("arg", "message"), [
    ("", r"an ir_datasets name must follow 'irds:'"),
    ("x?first_stage", r"options are key=value pairs joined by '&'; got 'first_stage'"),
    ("x?colour=red", r"unknown option 'colour'; the options are first_stage, run, query_split, split_seed, splits"),
    ("x?first_stage=bm25&first_stage=bm25", r"option 'first_stage' is given twice"),
    ("x?run=", r"option 'run' has no value"),
    ("x?first_stage=dense", r"first_stage must be one of 'auto', 'scoreddocs', 'run', 'bm25'; got 'dense'"),
    ("x?first_stage=bm25&run=a.run", r"run gives the candidates, so first_stage must be 'run' or left out"),
    ("x?first_stage=run", r"first_stage=run needs the run file: add &run=PATH"),
    ("x?query_split=60/20", r"query_split must be three whole percentages .* such as 60/20/20; got '60/20'"),
    ("x?query_split=60/20/10", r"add up to 100"),
    ("x/{split}?query_split=60/20/20", r"with \{split\} or query_split, not both"),
    ("x?split_seed=3", r"split_seed applies to query_split, which is not given"),
    ("x?query_split=60/20/20&split_seed=-1", r"split_seed must be an integer >= 0; got str '-1'"),
    ("x?splits=a,b,c", r"splits says what \{split\} becomes, and the name holds no \{split\}"),
    ("x/{split}?splits=a,b", r"splits must name three parts for train, valid and test"),
])
def test_a_malformed_name_is_refused_before_anything_is_read(arg, message):
    with pytest.raises(ValueError, match=message):
        IrdsName.parse(arg)
    with pytest.raises(ValueError, match=message):
        load(f"irds:{arg}", split="test", cache=False)


def test_an_unknown_name_lists_close_matches():
    with pytest.raises(UnknownNameError, match=r"ir_datasets knows no dataset 'msmarco-pasage/trec-dl-2019/judged'; "
                                               r"close matches: msmarco-passage/trec-dl-2019/judged"):
        load("irds:msmarco-pasage/trec-dl-2019/judged", split="test", cache=False)


def test_a_split_the_collection_lacks_is_named(register):
    base = f"uncertank-test-{uuid.uuid4().hex[:8]}"
    register("train", name=base)
    register("test", name=base)
    with pytest.raises(UnknownNameError, match=rf"irds:{base}/\{{split\}} for split='valid' \(\{{split\}} = 'dev'\): "
                                               rf"ir_datasets knows no dataset '{base}/dev'; close matches: .*; "
                                               rf"name the collection's own parts with \?splits=TRAIN,VALID,TEST"):
        load(f"irds:{base}/{{split}}", split="valid", cache=False)


def test_a_name_without_splits_is_the_test_split_only(register):
    base = f"uncertank-test-{uuid.uuid4().hex[:8]}"
    name = register("test", name=base)
    register("train", name=base)
    with pytest.raises(ValueError, match=rf"irds:{name} is one set of queries, which is the 'test' split; for "
                                         rf"split='train' name the collection's own splits with \{{split\}} .*"
                                         rf"\?query_split=60/20/20' \(ir_datasets also has {base}/train\)"):
        load(f"irds:{name}", split="train", cache=False)


def test_no_scoreddocs_when_asked_for_names_what_to_pass(register):
    name = register(scoreddocs=False)
    with pytest.raises(ValueError, match=r"has no scoreddocs .* add &first_stage=bm25 .* or &run=PATH"):
        load(f"irds:{name}?first_stage=scoreddocs", split="test", cache=False)


def test_neither_scoreddocs_nor_documents_nor_a_run_names_the_run_option(register):
    name = register(scoreddocs=False, docs=False)
    with pytest.raises(ValueError, match=r"has neither scoreddocs nor documents to retrieve with BM25; add "
                                         r"&run=PATH"):
        load(f"irds:{name}", split="test", cache=False)


def test_a_collection_without_documents_is_refused_even_with_a_run(register, tmp_path):
    run = tmp_path / "r.run"
    run.write_text("1 Q0 d1 1 1.0 x\n")
    name = register(docs=False)
    with pytest.raises(ValueError, match=r"has no documents, so its candidates would have no text"):
        load(f"irds:{name}?run={run}", split="test", cache=False)


@pytest.mark.parametrize(("missing", "message"), [
    ("queries", r"has no queries"),
    ("qrels", r"has no relevance judgements \(qrels\) to label candidates"),
])
def test_a_collection_without_queries_or_judgements_is_refused(register, missing, message):
    name = register(**{missing: False})
    with pytest.raises(ValueError, match=message):
        load(f"irds:{name}", split="test", cache=False)


def test_a_parent_name_lists_its_subsets_that_have_queries(register):
    base = f"uncertank-test-{uuid.uuid4().hex[:8]}"
    register(name=base, queries=False, qrels=False, scoreddocs=False)
    register("test", name=base)
    with pytest.raises(ValueError, match=rf"irds:{base} has no queries; its subsets with queries: {base}/test"):
        load(f"irds:{base}", split="test", cache=False)


def test_a_missing_run_file_is_named(register, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"run='nowhere.run' names no file \(a relative path is read"):
        load(f"irds:{register()}?run=nowhere.run", split="test", cache=False)


def test_file_mode_refuses_sampler_options_and_relevant_first(register):
    name = register()
    with pytest.raises(ValueError, match=r"relevant_first=True reorders sampled lists"):
        load(f"irds:{name}", split="test", relevant_first=True, cache=False)
    with pytest.raises(ValueError, match=r"sampler_options are a negative sampler's"):
        load(f"irds:{name}", split="test", sampler_options={"k1": 1.0}, cache=False)


def test_an_option_load_does_not_know_is_refused_naming_the_loaders_options(register):
    with pytest.raises(TypeError, match=r"does not take the option 'run'; its options: max_context_turns, "
                                        r"max_queries, relevant_first, sampler_options"):
        load(f"irds:{register()}", split="test", run="x.run", cache=False)


def test_a_download_without_the_network_names_the_dataset_and_the_cache_folder(register, tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    files = _write(tmp_path / "net")
    offline = Download([RequestsDownload("http://127.0.0.1:9/queries.tsv")])  # nothing listens on port 9
    name = register(components=[
        TsvDocs(LocalDownload(files["docs.tsv"])), TsvQueries(offline),
        TrecQrels(LocalDownload(files["qrels"]), {}), TrecScoredDocs(LocalDownload(files["scoreddocs"])),
    ])
    home = str(tmp_path / "irds-home")
    with pytest.raises(DatasetUnavailableError) as info:
        load(f"irds:{name}", split="test", cache=False)
    text = str(info.value)
    assert f"irds:{name}: ir_datasets could not get its queries (ConnectionError" in text
    assert f"needs the network once, and keeps the files in its cache folder {home} (IR_DATASETS_HOME)" in text
    assert info.value.__cause__ is not None and isinstance(info.value, OSError)


def test_every_mirror_failing_is_the_same_error(register, tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    files = _write(tmp_path / "net")
    mirrors = Download([RequestsDownload("http://127.0.0.1:9/a"), RequestsDownload("http://127.0.0.1:9/b"),
                        RequestsDownload("http://127.0.0.1:9/c")])
    name = register(components=[
        TsvDocs(LocalDownload(files["docs.tsv"])), TsvQueries(LocalDownload(files["queries.tsv"])),
        TrecQrels(mirrors, {}), TrecScoredDocs(LocalDownload(files["scoreddocs"])),
    ])
    with pytest.raises(DatasetUnavailableError, match=r"could not get its relevance judgements \(qrels\) "
                                                      r"\(RuntimeError: .*All download sources failed") as info:
        load(f"irds:{name}", split="test", cache=False)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_without_ir_datasets_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ir_datasets", None)
    with pytest.raises(ImportError, match=r'install it with pip install "uncertank\[irds\]"'):
        load("irds:beir/scifact/test", split="test", cache=False)
    with pytest.raises(ImportError, match=r'install it with pip install "uncertank\[irds\]"'):
        irds_qrels("irds:beir/scifact/test")


def test_evaluate_names_a_bad_irds_qrels_name():
    from uncertank.evaluate import evaluate_runs

    with pytest.raises(UnknownNameError, match=r"qrels 'irds:beir/scifactt/test': ir_datasets knows no dataset"):
        evaluate_runs([{"1": {"d1": 1.0}}], "irds:beir/scifactt/test")


def test_a_sampler_with_no_relevant_document_anywhere_is_refused(register, tmp_path):
    files = _write(tmp_path / "norel")
    files["qrels"].write_text("1 0 d1 0\n2 0 d3 0\n")
    name = register(components=[
        TsvDocs(LocalDownload(files["docs.tsv"])), TsvQueries(LocalDownload(files["queries.tsv"])),
        TrecQrels(LocalDownload(files["qrels"]), {}), TrecScoredDocs(LocalDownload(files["scoreddocs"])),
    ])
    with pytest.raises(ValueError, match=r"no query has a document judged relevant \(grade > 0\)"):
        load(f"irds:{name}", split="test", negatives="random", n_candidates=2, cache=False)


# --------------------------------------------------------------------------- the docs


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "datasets.md"


def _irds_section() -> str:
    text = DOCS_PAGE.read_text(encoding="utf-8")
    return text.split("## ir_datasets collections: `irds:NAME`", 1)[1].split("\n## ", 1)[0]


def test_the_docs_study_file_is_a_valid_study(tmp_path):
    import importlib.util
    import re

    from uncertank.experiment import load_config
    from uncertank.experiment.preflight import validate_config

    (block,) = [b for b in re.findall(r"```toml\n(.*?)```", _irds_section(), flags=re.S) if "[study]" in b]
    study = tmp_path / "irds.toml"
    study.write_text(block)
    config = load_config(study)  # nothing is downloaded: a study checks its names before it loads data
    assert config.train_dataset == "irds:beir/scifact/train?query_split=80/20/0"
    assert [c.dataset for c in config.conditions] == [
        "irds:beir/scifact/test", "irds:msmarco-passage/trec-dl-2019/judged", "irds:beir/trec-covid"]
    if all(r.name == "bm25" or importlib.util.find_spec(f"uncertank_{r.name}") for r in config.rankers):
        validate_config(config)


def test_the_docs_names_are_ir_datasets_names_with_the_first_stage_the_docs_say():
    # ir_datasets' registry answers these without downloading anything
    said = {"msmarco-passage/trec-dl-2019/judged": True, "beir/scifact/test": False, "beir/scifact/train": False,
            "beir/trec-covid": False}  # has scoreddocs (else BM25 over the documents)
    section = _irds_section()
    for name, scored in said.items():
        assert f"irds:{name}" in section
        ds = ir_datasets.registry[name]
        assert ds.has_queries() and ds.has_qrels() and ds.has_docs(), name
        assert ds.has_scoreddocs() is scored, name
    for arg in ("msmarco-passage/{split}?splits=train/judged,dev/judged,trec-dl-2019/judged", "beir/fiqa/{split}"):
        parsed = IrdsName.parse(arg)
        for split in ("train", "valid", "test"):
            assert parsed.dataset_id(split) in set(ir_datasets.registry), (arg, split)


# --------------------------------------------------------------------------- more errors


def _components(files, **swap):
    parts = {
        "docs": TsvDocs(LocalDownload(files["docs.tsv"])), "queries": TsvQueries(LocalDownload(files["queries.tsv"])),
        "qrels": TrecQrels(LocalDownload(files["qrels"]), {}), "scoreddocs": TrecScoredDocs(LocalDownload(
            files["scoreddocs"])),
    }
    parts.update(swap)
    return [v for v in parts.values() if v is not None]


def test_bm25_asked_for_without_documents_names_the_run_option(register, tmp_path):
    files = _write(tmp_path / "nodocs")
    name = register(components=_components(files, docs=None))
    with pytest.raises(ValueError, match=r"has no documents to retrieve with BM25; add &run=PATH"):
        load(f"irds:{name}?first_stage=bm25", split="test", cache=False)


def test_bm25_over_an_empty_collection_is_refused(register, tmp_path):
    pytest.importorskip("bm25s")
    files = _write(tmp_path / "empty")
    files["docs.tsv"].write_text("")
    name = register(components=_components(files, scoreddocs=None))
    with pytest.raises(ValueError, match=r"holds no document, so BM25 has nothing to retrieve; pass &run=PATH"):
        load(f"irds:{name}", split="test", cache=False)


def test_documents_without_a_text_are_refused(register, tmp_path):
    from typing import NamedTuple

    class Bare(NamedTuple):
        doc_id: str
        body: str

    files = _write(tmp_path / "bare")
    name = register(components=_components(files, docs=TsvDocs(LocalDownload(files["docs.tsv"]), doc_cls=Bare)))
    with pytest.raises(TypeError, match=r"its documents of type Bare have neither default_text\(\) nor a text field"):
        load(f"irds:{name}", split="test", n_candidates=2, cache=False)


def test_a_run_matching_no_judged_query_is_refused(register, tmp_path):
    run = tmp_path / "other.run"
    run.write_text("99 Q0 d1 1 1.0 x\n")
    with pytest.raises(ValueError, match=r"the run file .* retrieves no document for any of its 4 judged queries; "
                                         r"check that the query ids match"):
        load(f"irds:{register()}?run={run}", split="test", cache=False)


def test_judgements_of_no_known_query_are_refused(register, tmp_path):
    files = _write(tmp_path / "stray")
    files["qrels"].write_text("77 0 d1 1\n")
    name = register(components=_components(files))
    with pytest.raises(ValueError, match=r"no query has a relevance judgement; check its qrels"):
        load(f"irds:{name}", split="test", cache=False)


def test_irds_qrels_of_an_empty_qrels_file_is_refused(register, tmp_path):
    files = _write(tmp_path / "noqrels")
    files["qrels"].write_text("")
    name = register(components=_components(files))
    with pytest.raises(ValueError, match=rf"qrels 'irds:{name}': {name} holds no judgement"):
        irds_qrels(f"irds:{name}")


def test_a_name_that_is_not_a_str_is_refused():
    with pytest.raises(TypeError, match=r"the irds: name must be a str"):
        IrdsName.parse(3)  # type: ignore[arg-type]


def test_a_sampler_with_too_small_a_pool_says_how_large_it_is(register):
    with pytest.raises(ValueError, match=r"n_candidates=9 is larger than the response pool"):
        load(f"irds:{register()}", split="test", negatives="random", n_candidates=9, cache=False)


def test_the_evaluate_command_without_ir_datasets_says_which_extra_in_one_line(tmp_path, monkeypatch):
    """No traceback: the missing package is named with its extra, exit status 2."""
    import sys

    from click.testing import CliRunner

    from uncertank.cli import cli

    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d1 1 0.9 sys\n")
    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # as if it were not installed
    result = CliRunner().invoke(cli, ["evaluate", "--run", str(run), "--qrels", "irds:beir/scifact/test"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("uncertank evaluate: ") and "irds" in line and "ir_datasets" in line
