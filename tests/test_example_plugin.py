"""The worked external plugin of docs/plugins.md (docs/examples/uncertank-tfidf), installed as CI installs it.

It must be listed by ``uncertank plugins``, import cheaply, pass the
conformance checks, and each of its parts must agree with an independent
reference (scikit-learn for TF-IDF and logistic regression, pytrec_eval for
precision at k).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import uncertank
from uncertank.datasets import load
from uncertank.metrics import resolve_metrics
from uncertank.plugins import get_factory, registry
from uncertank.testing import check_metric, check_ranker, check_recalibrator, check_stochastic_ranker

# The package is a test dependency: .ci/run and the README's test command install it; without it, skip.
uncertank_tfidf = pytest.importorskip(
    "uncertank_tfidf", reason="the worked example plugin (docs/examples/uncertank-tfidf) is not installed"
)
from uncertank_tfidf.metric import PRECISION_AT_K, precision_at_k  # noqa: E402
from uncertank_tfidf.ranker import BootstrapTfidfRanker, TfidfRanker, tokenize  # noqa: E402
from uncertank_tfidf.recalibration import BetaCalibration  # noqa: E402

NAMES = {("rankers", "tfidf"), ("rankers", "tfidf-bootstrap"), ("metrics", "precision_at_k"),
         ("recalibrators", "beta"), ("datasets", "ubuntu-questions")}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Real data: the first queries of ubuntu-questions (train and test), cached in a temporary folder."""
    old = os.environ.get("UNCERTANK_CACHE")
    os.environ["UNCERTANK_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        train = load("ubuntu-questions", split="train").subset(np.arange(300))
        test = load("ubuntu-questions", split="test").subset(np.arange(40))
    finally:
        if old is None:
            os.environ.pop("UNCERTANK_CACHE")
        else:
            os.environ["UNCERTANK_CACHE"] = old
    return train, test


def test_uncertank_plugins_lists_it():
    out = subprocess.run([sys.executable, "-m", "uncertank.cli", "plugins", "--json"], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    payload = json.loads(out)
    mine = {(r["kind"], r["name"]) for r in payload["registered"] if r["distribution"] == "uncertank-tfidf"}
    assert mine == NAMES
    assert [f for f in payload["failed"] if f["distribution"] == "uncertank-tfidf"] == []
    table = subprocess.run([sys.executable, "-m", "uncertank.cli", "plugins", "--kind", "rankers"],
                           capture_output=True, text=True, check=True, timeout=120).stdout
    assert "tfidf-bootstrap" in table.split()


def test_importing_the_plugin_module_is_cheap():
    code = ("import sys, uncertank_tfidf.plugin, uncertank_tfidf; "
            "print(sorted(m for m in sys.modules if m.startswith(('uncertank_tfidf.', 'scipy.sparse', "
            "'scipy.optimize', 'uncertank.metrics', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout.strip().replace("'", '"')) == ["uncertank_tfidf.plugin"]


def test_lazy_package_attributes():
    assert uncertank_tfidf.TfidfRanker is TfidfRanker
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        uncertank_tfidf.Nope  # noqa: B018


# -- conformance ------------------------------------------------------------------------


def test_tfidf_conforms(data):
    train, test = data
    done = check_ranker(uncertank.make_ranker("tfidf"), test, train=train)
    assert done[:3] == ["protocol", "clone", "fit"] and done[-1] == "save/load"


def test_bootstrap_conforms(data):
    train, test = data
    done = check_stochastic_ranker(uncertank.make_ranker("tfidf-bootstrap", n_samples=4), test, n_samples=3,
                                   train=train)
    assert {"clone", "fit", "predict_samples", "n_samples", "save/load"} <= set(done)


def test_the_example_is_an_estimator_sklearn_clones():
    base = pytest.importorskip("sklearn.base")
    ranker = uncertank.make_ranker("tfidf-bootstrap", n_samples=4, seed=2, link=False, name="mine")
    twin = base.clone(ranker)
    assert type(twin) is type(ranker) and twin.get_params() == ranker.get_params()
    assert twin.get_params() == {"link": False, "n_samples": 4, "name": "mine", "seed": 2, "sublinear_tf": True}
    with pytest.raises(ValueError, match="n_samples must be a positive int; got 0"):
        ranker.set_params(n_samples=0)
    assert ranker.n_samples == 4  # refused, and left as it was


def test_the_example_imports_only_public_names():
    """A plugin built from the docs' contract table uses uncertank's public API only: no ``_`` in any name."""
    import ast

    package = Path(uncertank_tfidf.__file__).parent
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("uncertank"):
                names = [node.module or "", *(alias.name for alias in node.names)]
                assert not any(part.startswith("_") for n in names for part in n.split(".")), (path, names)


def test_metric_and_recalibrator_conform():
    assert check_metric(registry("metrics")["precision_at_k"].factory)[-1] == "label"
    assert check_recalibrator(registry("recalibrators")["beta"].factory) == ["fit", "transform", "order kept"]


# -- against references -------------------------------------------------------------------


def _docs(train):
    return [" ".join(c) for c in train.contexts] + list(train.candidates)


@pytest.mark.parametrize("sublinear", [True, False])
def test_tfidf_cosines_match_scikit_learn(data, sublinear):
    TfidfVectorizer = pytest.importorskip("sklearn.feature_extraction.text").TfidfVectorizer

    train, test = data
    ranker = TfidfRanker(sublinear_tf=sublinear, link=False).fit(train)
    ref = TfidfVectorizer(sublinear_tf=sublinear, smooth_idf=True, norm="l2").fit(_docs(train))
    q = ref.transform([" ".join(c) for c in test.contexts])
    c = ref.transform(list(test.candidates))
    expected = np.asarray(q[test.query_index].multiply(c).sum(axis=1)).ravel()
    np.testing.assert_allclose(ranker.predict(test).scores, expected, atol=1e-12)
    assert set(ranker.vocabulary_) == set(ref.vocabulary_)
    assert tokenize("A b-cd EF") == ["cd", "ef"]


def test_a_bootstrap_draw_is_tfidf_on_a_resample(data):
    TfidfVectorizer = pytest.importorskip("sklearn.feature_extraction.text").TfidfVectorizer

    train, test = data
    ranker = BootstrapTfidfRanker(n_samples=3, seed=7, link=False).fit(train)
    samples = ranker.predict_samples(test).samples
    docs = _docs(train)
    rng = np.random.default_rng(7)
    vocab = TfidfVectorizer().fit(docs).vocabulary_
    for s in range(3):
        idx = rng.integers(0, len(docs), size=len(docs))
        ref = TfidfVectorizer(vocabulary=vocab, sublinear_tf=True).fit([docs[i] for i in idx])
        q = ref.transform([" ".join(c) for c in test.contexts])
        c = ref.transform(list(test.candidates))
        expected = np.asarray(q[test.query_index].multiply(c).sum(axis=1)).ravel()
        np.testing.assert_allclose(samples[s], expected, atol=1e-12)
    assert samples.var(axis=0).max() > 0
    np.testing.assert_allclose(ranker.predict(test).scores, samples.mean(axis=0))
    # the first draws do not depend on how many are asked for
    np.testing.assert_array_equal(ranker.predict_samples(test, n_samples=2).samples, samples[:2])


def test_the_link_is_logistic_regression_on_the_training_cosines(data):
    LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression

    train, test = data
    raw = TfidfRanker(link=False).fit(train)
    linked = TfidfRanker().fit(train)
    assert linked.probabilistic and not raw.probabilistic
    x = raw.predict(train).scores[:, None]
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(x, train.labels)
    np.testing.assert_allclose(linked.link_, [ref.coef_[0, 0], ref.intercept_[0]], rtol=1e-3)
    expected = ref.predict_proba(raw.predict(test).scores[:, None])[:, 1]
    np.testing.assert_allclose(linked.predict(test).scores, expected, atol=1e-5)
    # the link is non-decreasing: the ranking of the raw cosines is kept
    r, p = raw.predict(test).scores, linked.predict(test).scores
    assert (np.diff(p[np.argsort(r, kind="stable")]) >= -1e-15).all()
    boot = BootstrapTfidfRanker(n_samples=3).fit(train)
    np.testing.assert_array_equal(boot.link_, linked.link_)
    assert ((boot.predict_samples(test).samples > 0) & (boot.predict_samples(test).samples < 1)).all()


def test_the_links_slope_is_never_negative():
    qs = uncertank.QuerySet.from_lists(
        ["wifi down", "sound broken"],
        [["wifi down again", "check the driver"], ["sound broken too", "reinstall alsa"]],
        [[0, 1], [0, 1]])  # the relevant candidates share no word with the context
    ranker = TfidfRanker().fit(qs)
    assert ranker.link_[0] == 0.0
    assert np.ptp(ranker.predict(qs).scores) == 0.0  # a constant: nothing reversed


def test_precision_at_k_matches_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")

    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 9, size=30)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    scores = rng.permutation(offsets[-1]).astype(float)  # distinct: trec_eval breaks ties differently
    labels = (rng.random(offsets[-1]) < 0.3).astype(int)
    ranked = uncertank.RankedLists.from_flat(scores, labels, offsets)
    qrels, run = {}, {}
    for q in range(30):
        lo, hi = offsets[q], offsets[q + 1]
        qrels[f"q{q}"] = {f"d{j}": int(labels[j]) for j in range(lo, hi)}
        run[f"q{q}"] = {f"d{j}": float(scores[j]) for j in range(lo, hi)}
    for k in (1, 5):
        per = pytrec_eval.RelevanceEvaluator(qrels, {f"P_{k}"}).evaluate(run)
        expected = np.array([per[f"q{q}"][f"P_{k}"] for q in range(30)])
        np.testing.assert_allclose(precision_at_k(ranked, k=k, per_query=True), expected)
        assert PRECISION_AT_K(ranked, k=k) == pytest.approx(expected.mean())


def test_precision_at_k_inputs_ties_and_registry():
    dense_s, dense_l = [[0.5, 0.5, 0.1]], [[0, 1, 0]]
    assert precision_at_k(dense_s, dense_l, k=1) == 0.0  # the tie goes to the earlier position
    pred = uncertank.Predictions(np.array([0.2, 0.9, 0.4]), np.array([0, 3]))
    assert precision_at_k(pred, np.array([0, 1, 0])) == 1.0
    qs = uncertank.QuerySet.from_lists(["q"], [["a", "b", "c"]], [[0, 1, 0]])
    assert precision_at_k([0.2, 0.9, 0.4], qs) == 1.0
    (metric,) = resolve_metrics([{"name": "precision_at_k", "k": 2}])
    assert (metric.display_label, metric.kind, metric.higher_is_better) == ("P@2", "ranking", True)
    assert metric(dense_s, dense_l) == 0.5
    assert registry("metrics")["precision_at_k"].distribution == "uncertank-tfidf"
    with pytest.raises(ValueError, match="k must be an int >= 1; got 0"):
        precision_at_k(dense_s, dense_l, k=0)
    with pytest.raises(ValueError, match="labels must be None when scores is a RankedLists"):
        precision_at_k(uncertank.RankedLists.from_dense(dense_s, dense_l), dense_l)
    with pytest.raises(ValueError, match="labels are required when scores is a list"):
        precision_at_k(dense_s)


def test_beta_calibration_matches_logistic_regression_when_unconstrained():
    LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression

    rng = np.random.default_rng(1)
    s = rng.uniform(0.01, 0.99, size=4000)
    z = 1.5 * np.log(s) + 0.7 * -np.log1p(-s) + 0.3
    y = (rng.random(s.size) < 1 / (1 + np.exp(-z))).astype(int)
    cal = get_factory("recalibrators", "beta")().fit(s, y)
    x = np.column_stack([np.log(s), -np.log1p(-s)])
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(x, y)
    np.testing.assert_allclose(cal.coef_, [*ref.coef_[0], ref.intercept_[0]], atol=2e-3)
    np.testing.assert_allclose(cal.transform(s), ref.predict_proba(x)[:, 1], atol=1e-4)


def test_beta_calibration_never_reverses_a_ranking():
    rng = np.random.default_rng(2)
    s = rng.uniform(0.01, 0.99, size=500)
    y = (rng.random(s.size) < 1 - s).astype(int)  # relevance falls with the score
    cal = BetaCalibration().fit(s, y)
    assert (cal.coef_[:2] >= 0).all()
    grid = np.linspace(0, 1, 101)
    assert (np.diff(cal.transform(grid)) >= 0).all()


def test_beta_calibration_errors():
    with pytest.raises(ValueError, match=r"eps must be a float in \(0, 0.5\); got 0"):
        BetaCalibration(eps=0)
    cal = BetaCalibration()
    with pytest.raises(RuntimeError, match="must be fitted before transform"):
        cal.transform([0.5])
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]; got 1 values outside, e.g. 1.5"):
        cal.fit([0.2, 1.5], [0, 1])
    with pytest.raises(ValueError, match=r"scores must have shape \(n_pairs,\); got \(1, 2\)"):
        cal.fit([[0.2, 0.5]], [0, 1])
    with pytest.raises(ValueError, match=r"labels must have the shape of scores \(2,\); got \(3,\)"):
        cal.fit([0.2, 0.5], [0, 1, 1])
    with pytest.raises(ValueError, match="labels must hold both relevant and non-relevant"):
        cal.fit([0.2, 0.5], [1, 1])
    assert cal.fit_transform([0.2, 0.5, 0.7], [0, 1, 1]).shape == (3,)
    assert "coef_=[" in repr(cal)


# -- the dataset ----------------------------------------------------------------------------


def test_dataset_is_the_question_turns_and_caches_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path))
    calls = []
    original = uncertank_tfidf.dataset.question_turns

    def counting(queries):
        calls.append(queries.name)
        return original(queries)

    monkeypatch.setattr(uncertank_tfidf.dataset, "question_turns", counting)
    first = load("ubuntu-questions", split="valid", seed=1)
    again = load("ubuntu-questions", split="valid", seed=1)
    assert len(calls) == 1  # the second load read the cache
    assert again.digest() == first.digest()
    assert first.name == "ubuntu-questions/valid/random"
    assert all(c[-1].rstrip().endswith("?") for c in first.contexts)
    full = load("ubuntu-sample", split="valid", seed=1)
    assert first.n_queries == sum(c[-1].rstrip().endswith("?") for c in full.contexts)
    load("ubuntu-questions", split="valid", seed=2)
    assert len(calls) == 2  # another parameter, another cache entry
    token = get_factory("datasets", "ubuntu-questions").cache_token(split="valid")
    assert token.startswith("ubuntu-questions-v1:ubuntu-sample:")
    some = load("ubuntu-questions", split="valid", seed=1, max_queries=20, cache=False)
    assert some.n_queries == 20 and set(some.query_ids) <= set(first.query_ids)
    with pytest.raises(ValueError, match="max_queries must be an integer >= 1; got 0"):
        load("ubuntu-questions", split="valid", max_queries=0, cache=False)


# -- the rankers' errors --------------------------------------------------------------------


def test_ranker_errors(tmp_path, data):
    train, test = data
    with pytest.raises(TypeError, match="sublinear_tf must be a bool; got str"):
        TfidfRanker(sublinear_tf="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="link must be a bool; got int"):
        TfidfRanker(link=1)  # type: ignore[arg-type]
    unlabelled = uncertank.QuerySet.from_lists(["wifi down"], [["restart wifi", "hello"]])
    with pytest.raises(ValueError, match="train must hold relevant and non-relevant labelled pairs"):
        TfidfRanker().fit(unlabelled)
    assert TfidfRanker(link=False).fit(unlabelled).link_ is None
    with pytest.raises(TypeError, match="name must be a non-empty str; got ''"):
        TfidfRanker(name="")
    with pytest.raises(RuntimeError, match=r"TfidfRanker must be fitted before predicting; call fit\(train\)"):
        TfidfRanker().predict(test)
    with pytest.raises(TypeError, match=r"train must be a uncertank\.QuerySet; got list"):
        TfidfRanker().fit([])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="train must contain at least one word"):
        TfidfRanker().fit(uncertank.QuerySet.from_lists(["a"], [["b", "?"]], [[1, 0]]))
    with pytest.raises(ValueError, match="n_samples must be a positive int; got 0"):
        BootstrapTfidfRanker(n_samples=0)
    with pytest.raises(TypeError, match="seed must be an int; got float"):
        BootstrapTfidfRanker(seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match=r"no tfidf\.json in"):
        TfidfRanker.load(tmp_path)
    TfidfRanker().fit(train).save(tmp_path / "plain")
    with pytest.raises(ValueError, match=r"path holds a TfidfRanker ranker; BootstrapTfidfRanker\.load cannot"):
        BootstrapTfidfRanker.load(tmp_path / "plain")
    assert "terms" in repr(TfidfRanker.load(tmp_path / "plain")) and "unfitted" in repr(TfidfRanker())


# -- the plugin author's guide is built on this package ------------------------------------------

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


def test_the_guides_excerpts_are_the_packages_code():
    text = GUIDE.read_text()
    excerpts = re.findall(r"<!-- file: (\S+) -->\n```py\n(.*?)```", text, flags=re.S)
    assert len(excerpts) >= 5
    root = GUIDE.parents[1]
    for path, code in excerpts:
        assert code in (root / path).read_text(), f"docs/plugins.md quotes {path} as it no longer is"


def test_the_guides_study_file_is_a_valid_study(tmp_path):
    from uncertank.experiment import load_config

    (block,) = re.findall(r"<!-- study: \S+ -->\n```toml\n(.*?)```", GUIDE.read_text(), flags=re.S)
    path = tmp_path / "tfidf-study.toml"
    path.write_text(block)
    config = load_config(path)
    assert [r.name for r in config.rankers] == ["tfidf", "tfidf-bootstrap"]
    assert "beta" in (config.recalibrators or ())
    assert [m.display_label for m in resolve_metrics(config.metrics or ())] == ["R@1", "MAP", "P@1", "ECE"]


def test_the_guides_code_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path))
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {"__name__": "guide"}
    for code in blocks:
        exec(compile(code, "docs/plugins.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "[0.8 0.2 0.6 0.2 0.1]" in out
    assert "P@1 " in out and "MAP " in out
    assert "'save/load'" in out and "'predict_samples'" in out
    assert "[('broken', 'SystemExit: 1')]" in out
