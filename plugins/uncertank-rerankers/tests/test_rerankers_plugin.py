"""The ranker ``rerankers``: rerankers' own scores, as probabilities where they are, in every evaluator."""

from __future__ import annotations

import importlib
import subprocess
import sys

import numpy as np
import pytest

import uncertank
from uncertank import QuerySet
from uncertank.nn.testing import tiny_classifier_folder, tiny_config, toy_queries
from uncertank.testing import check_ranker

rerankers = pytest.importorskip("rerankers")
from uncertank_rerankers import RerankersRanker, score_kind  # noqa: E402


@pytest.fixture(scope="module")
def queries():
    return toy_queries()


@pytest.fixture(scope="module")
def trained_folder(queries, tmp_path_factory):
    """A cross-encoder with a trained head (a tiny bert fitted on the toy queries), as a Hugging Face folder."""
    from uncertank_bert import BertRanker

    bert = BertRanker(tiny_config(), max_length=32, epochs=2, batch_size=4, lr=3e-3, show_progress=False,
                      device="cpu").fit(queries)
    return bert.save_pretrained(tmp_path_factory.mktemp("hf") / "cross-encoder")


@pytest.fixture(scope="module")
def reranker(trained_folder):
    return rerankers.Reranker(str(trained_folder), model_type="cross-encoder", device="cpu", verbose=0)


def _text(queries: QuerySet, q: int) -> str:
    return " ".join(queries.query(q)[0])


def test_registered_through_the_entry_point(trained_folder):
    infos = {i.name: i for i in uncertank.list_plugins("rankers")}
    assert infos["rerankers"].distribution == "uncertank-rerankers"
    ranker = uncertank.make_ranker("rerankers", pretrained=trained_folder, device="cpu")
    assert isinstance(ranker, RerankersRanker) and ranker._built is None  # nothing loaded until it is used


def test_scores_equal_rerankers_own_on_the_same_pairs(reranker, queries):
    raw = RerankersRanker(reranker, probabilities=False).predict(queries)
    assert not raw.probabilistic
    for q in range(queries.n_queries):
        _, candidates, _ = queries.query(q)
        lo, hi = queries.offsets[q], queries.offsets[q + 1]
        own = reranker.rank(_text(queries, q), list(candidates), doc_ids=list(range(len(candidates))))
        by_id = {r.document.doc_id: r.score for r in own}
        np.testing.assert_array_equal(raw.scores[lo:hi], [by_id[i] for i in range(len(candidates))])
    # (rerankers' one-pair score(query, doc) is not compared: TransformerRanker tokenizes the tuple as two
    # texts, not as a pair, in rerankers 0.10; the model itself is checked in the next test)
    probs = RerankersRanker(reranker).predict(queries)
    assert probs.probabilistic
    np.testing.assert_allclose(probs.scores, 1 / (1 + np.exp(-raw.scores)), rtol=1e-12)


def test_the_cross_encoders_probability_is_its_heads(reranker, trained_folder, queries):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    ranker = RerankersRanker(reranker)
    assert ranker.kind == "sigmoid" and "sigmoid of the cross-encoder's one logit" in ranker.statement
    model = AutoModelForSequenceClassification.from_pretrained(str(trained_folder)).eval()
    tok = AutoTokenizer.from_pretrained(str(trained_folder))
    text = _text(queries, 0)
    cands = list(queries.query(0)[1])
    with torch.no_grad():
        logits = model(**tok([text] * len(cands), cands, padding=True, truncation=True, return_tensors="pt")).logits
    np.testing.assert_allclose(ranker.predict(queries).scores[: len(cands)], torch.sigmoid(logits[:, 0]).numpy(),
                               atol=1e-5)


def test_two_logits_give_the_softmax_column_one(tmp_path, queries):
    folder = tiny_classifier_folder(tmp_path / "two", num_labels=2)
    reranker = rerankers.Reranker(str(folder), model_type="cross-encoder", device="cpu", verbose=0)
    ranker = RerankersRanker(reranker)
    assert ranker.kind == "softmax"
    raw = RerankersRanker(reranker, probabilities=False).predict(queries).scores
    text, cands = _text(queries, 1), list(queries.query(1)[1])
    own = reranker.rank(text, cands, doc_ids=list(range(len(cands))))
    pairs = {r.document.doc_id: r.score for r in own}
    lo = queries.offsets[1]
    for i in range(len(cands)):
        l0, l1 = pairs[i]
        assert raw[lo + i] == pytest.approx(l1 - l0, abs=1e-6)
        assert ranker.predict(queries).scores[lo + i] == pytest.approx(np.exp(l1) / (np.exp(l0) + np.exp(l1)),
                                                                       abs=1e-6)


class ColBERTRanker:
    """A stand-in for a backend whose scores are not probabilities (named as rerankers names ColBERT's)."""

    def __init__(self, ranks_only=False):
        self.ranks_only = ranks_only

    def rank(self, query, docs, doc_ids=None):
        from rerankers.documents import Document
        from rerankers.results import RankedResults, Result

        scores = [float(len(set(query.split()) & set(d.split()))) * 3.0 for d in docs]
        order = sorted(range(len(docs)), key=lambda i: -scores[i])
        results = [Result(Document(docs[i], doc_id=doc_ids[i]), score=None if self.ranks_only else scores[i],
                          rank=r + 1) for r, i in enumerate(order)]
        return RankedResults(results, query, has_scores=not self.ranks_only)


def test_a_backend_of_scores_says_so_and_gets_ranking_metrics_only(queries):
    ranker = RerankersRanker(ColBERTRanker())
    assert ranker.kind == "scores" and not ranker.probabilistic
    assert "gives scores, not probabilities of relevance: ranking metrics only" in ranker.statement
    pred = ranker.predict(queries)
    assert not pred.probabilistic and pred.scores.max() > 1
    with pytest.raises(ValueError, match=r"probabilities=True, but rerankers' ColBERTRanker gives scores outside"):
        RerankersRanker(ColBERTRanker(), probabilities=True).predict(queries)
    ranks = RerankersRanker(ColBERTRanker(ranks_only=True)).predict(queries)
    assert not ranks.probabilistic and (ranks.scores < 0).all()  # minus the rank: the order is kept
    for q in range(queries.n_queries):
        lo, hi = queries.offsets[q], queries.offsets[q + 1]
        np.testing.assert_array_equal(np.argsort(-ranks.scores[lo:hi], kind="stable"),
                                      np.argsort(-pred.scores[lo:hi], kind="stable"))
    with pytest.raises(ValueError, match="gives ranks only"):
        RerankersRanker(ColBERTRanker(ranks_only=True), probabilities=True).predict(queries)


def test_conformance_kit(reranker, queries):
    check_ranker(RerankersRanker(reranker), queries)
    check_ranker(RerankersRanker(ColBERTRanker()), queries)


def test_evaluate_calibration_metrics_and_recalibration(reranker, queries):
    from uncertank.evaluate import evaluate_runs
    from uncertank.metrics import expected_calibration_error, mean_average_precision
    from uncertank.recalibration import PlattScaling

    pred = RerankersRanker(reranker).predict(queries)
    ranked = pred.ranked(queries)
    ece = expected_calibration_error(ranked)
    assert 0 <= ece <= 1 and 0 < mean_average_precision(ranked) <= 1
    platt = PlattScaling().fit(pred.scores, queries.labels)
    assert expected_calibration_error(queries.ranked(platt.transform(pred.scores))) <= ece + 1e-9
    run = {f"q{q}": {f"d{i}": float(s) for i, s in enumerate(pred.scores[queries.offsets[q]:queries.offsets[q + 1]])}
           for q in range(queries.n_queries)}
    qrels = {f"q{q}": {f"d{i}": int(y) for i, y in enumerate(queries.labels[queries.offsets[q]:queries.offsets[q + 1]])}
             for q in range(queries.n_queries)}
    report = evaluate_runs([run], qrels, probabilities=True)
    assert any("ECE" in m for m in report.metrics), report.metrics
    assert len(report.runs) == 1


@pytest.mark.slow
def test_a_rerankers_model_in_a_tiny_study(trained_folder, tmp_path):
    from uncertank.experiment import run_study
    from uncertank.experiment.config import load_config

    study = tmp_path / "rerankers.toml"
    study.write_text(f"""
[study]
name = "rerankers"
train_dataset = "ubuntu-sample"
max_train_queries = 12
max_valid_queries = 8
max_test_queries = 8
nota = false
risk_grid = [0.0]
reference = "rerankers"
recalibrators = ["platt"]

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"

[[rankers]]
name = "rerankers"
pretrained = "{trained_folder}"
params = {{ device = "cpu" }}

[[rankers]]
name = "bm25"

[bayes]
enabled = false
""")
    result = run_study(load_config(study), tmp_path / "report")
    assert result.rankers == ["rerankers", "bm25"]
    ev = result.evaluation("rerankers", "in-domain")
    assert ev is not None and ev.probabilistic and "ECE" in ev.metrics and "R@1" in ev.metrics


def test_argument_errors(trained_folder):
    with pytest.raises(ValueError, match="give one of reranker, pretrained or model; got none"):
        RerankersRanker()
    with pytest.raises(ValueError, match="give one of reranker, pretrained or model; got reranker, model"):
        RerankersRanker(ColBERTRanker(), model="colbert")
    with pytest.raises(TypeError, match="reranker must be a rerankers reranker"):
        RerankersRanker(object())
    with pytest.raises(ValueError, match="probabilities must be 'auto', True or False; got 'yes'"):
        RerankersRanker(ColBERTRanker(), probabilities="yes")
    with pytest.raises(TypeError, match="pretrained must be a local model folder"):
        RerankersRanker(pretrained=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="queries must be a QuerySet"):
        RerankersRanker(ColBERTRanker()).predict([["q"]])  # type: ignore[arg-type]
    assert score_kind(ColBERTRanker())[0] == "scores"


def test_a_missing_extra_names_the_install(monkeypatch, trained_folder):
    real = importlib.import_module

    def fake(name, *args):
        if name == "rerankers":
            raise ImportError("No module named 'rerankers'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", fake)
    ranker = RerankersRanker(pretrained=trained_folder)
    with pytest.raises(ImportError, match=r'needs the optional dependency rerankers; install it with pip install '
                                          r'"uncertank\[rerankers\]"'):
        ranker.predict(toy_queries(n_queries=1))


def test_importing_the_plugin_module_is_light():
    code = ("import sys, uncertank_rerankers.plugin; "
            "print(sorted(m for m in ('torch', 'rerankers', 'uncertank_rerankers.ranker') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_own_ranker_rerankers_script_runs(trained_folder, capsys):
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "own-ranker.md").read_text()
    section = page.split("## Your rerankers model", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    code = code.replace('"my-cross-encoder"', repr(str(trained_folder))).replace("max_queries=200", "max_queries=12")
    exec(compile(code, "docs/own-ranker.md", "exec"), {"__name__": "rerankers_docs"})
    out = capsys.readouterr().out
    assert "P(relevant) = sigmoid of the cross-encoder's one logit" in out and "R_10@1" in out and "ECE" in out
