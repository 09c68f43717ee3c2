"""Every first-party ranker passes the conformance checks of ``uncertank.testing``.

The neural rankers are built on a tiny random BERT (2 layers, hidden 32)
and fitted for one epoch on ten toy queries, so that ``fit`` and the
save/load round trip are exercised too. Rankers of plugins that are being
added (``sngp``, ``gpf_bert``, ``pgdrr``) join the list as soon as their
plugin registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import uncertank
from uncertank.plugins import registry
from uncertank.testing import ConformanceError, check_ranker, check_stochastic_ranker

NEURAL = dict(max_length=32, epochs=1, batch_size=4, lr=3e-3, show_progress=False, device="cpu")
FIRST_PARTY_NEURAL = {
    "bert": {},
    "mc_dropout": {"n_passes": 3},
    "ensemble": {"n_members": 2},
    "sngp": {},
    "gpf_bert": {},
    "pgdrr": {},
}
STOCHASTIC = {"mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"}
#: First-party rankers known to break the checkpoint contract, load(folder, **params), and how; the test
#: requires exactly that failure, so that a fix shows (then remove the entry). None today.
LOAD_REFUSES_PARAMS: dict[str, str] = {}


TOPICS = ("wifi network driver", "sound card audio", "mount usb drive", "install package apt")


def ragged_queries() -> uncertank.QuerySet:
    """Four queries of 5, 2, 4 and 3 candidates (lists of different lengths), one relevant each."""
    contexts, candidates, labels = [], [], []
    for q, n in enumerate((5, 2, 4, 3)):
        topic = TOPICS[q]
        contexts.append([f"hello my {topic} is broken", "what did you try"])
        pos = (2 * q + 1) % n
        candidates.append([f"thanks that fixed my {topic}" if j == pos else
                           f"no idea about {TOPICS[(q + j + 1) % len(TOPICS)]} sorry" for j in range(n)])
        labels.append([int(j == pos) for j in range(n)])
    return uncertank.QuerySet.from_lists(contexts, candidates, labels, name="ragged")


def _neural(name: str) -> Callable[[Any], Any]:
    def build(tiny: Any) -> Any:
        return uncertank.make_ranker(name, backbone=tiny, **NEURAL, **FIRST_PARTY_NEURAL[name])

    return build


def _cases() -> list[Any]:
    installed = set(registry("rankers"))
    cases = [pytest.param("bm25", id="bm25")]
    for name in FIRST_PARTY_NEURAL:
        if name in installed:
            # fitting a tiny model and scoring it several times takes seconds: slow, still run in CI
            cases.append(pytest.param(name, id=name, marks=[pytest.mark.slow]))
    return cases


def test_the_always_present_first_party_rankers_are_checked():
    names = {p.values[0] for p in _cases()}
    assert {"bm25", "bert", "mc_dropout", "ensemble"} <= names


def test_bm25_conforms():
    ranker = uncertank.make_ranker("bm25")
    done = check_ranker(ranker, ragged_queries())
    assert done == ["protocol", "clone", "predict", "same output twice", "labels unused", "input unchanged"]


@pytest.mark.parametrize("name", [p for p in _cases() if p.values[0] != "bm25"])
def test_neural_first_party_ranker_conforms(name, tiny):
    from uncertank.nn.testing import toy_queries

    ranker = _neural(name)(tiny)
    queries = ragged_queries()
    # the parameters a study would give it: a checkpoint with params is loaded with load(folder, **params)
    params = {**NEURAL, **FIRST_PARTY_NEURAL[name]}

    def check(params: dict[str, Any] | None) -> list[str]:
        if name in STOCHASTIC:
            done = check_stochastic_ranker(ranker, queries, n_samples=2, train=toy_queries(), params=params)
            assert {"predict_samples", "n_samples"} <= set(done)
            return done
        return check_ranker(ranker, queries, train=toy_queries(), params=params)

    if name in LOAD_REFUSES_PARAMS:
        with pytest.raises(ConformanceError, match=r"fails check 'load with params'.*unexpected keyword argument"):
            check(params)
        done = check(None)
        assert done[1:3] == ["clone", "fit"] and done[-1] == "save/load"
        return
    done = check(params)
    # clone and fit ran, and the save/load round trips the runner relies on were exercised
    assert done[1:3] == ["clone", "fit"] and done[-2:] == ["save/load", "load with params"]
