"""One sampling specification down the dataset chain: each default written once, checked where it is made."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from uncertank.datasets import load, redraw_negatives
from uncertank.datasets.assembly import assemble_query_set, build_query_set
from uncertank.datasets.conversation import load_ubuntu_sample, ubuntu_dialogues
from uncertank.datasets.dialogues import split_dialogues
from uncertank.datasets.formats import FileLoader
from uncertank.datasets.sampling import DEFAULT_N_CANDIDATES, DEFAULT_NEGATIVES, NegativeSampling


def test_defaults_are_the_specification_s():
    spec = NegativeSampling()
    assert (spec.negatives, spec.n_candidates, spec.seed, spec.relevant_first) == (DEFAULT_NEGATIVES, 10, 0, False)
    assert spec.sampler_options == {}
    assert NegativeSampling.of() == spec
    assert NegativeSampling.of(n_candidates=4).n_candidates == 4
    # No function down the chain writes a default of its own for a field of the specification.
    for fn in (build_query_set, assemble_query_set, redraw_negatives, load_ubuntu_sample.__call__,
               FileLoader.__call__):
        params = inspect.signature(fn).parameters
        for field in ("negatives", "n_candidates"):
            assert params[field].default is None, (fn, field)


def test_the_default_reaches_the_lists():
    qs = load("ubuntu-sample", split="valid", cache=False, max_queries=5)
    assert set(qs.lengths.tolist()) == {DEFAULT_N_CANDIDATES}
    assert qs.name.endswith(f"/{DEFAULT_NEGATIVES}")


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"n_candidates": 1}, ValueError, "n_candidates"),
    ({"n_candidates": "4"}, TypeError, "n_candidates"),
    ({"negatives": 3}, TypeError, r"negatives must be the name of a registered sampler .* got int 3"),
    ({"negatives": ""}, TypeError, "negatives must be the name"),
    ({"seed": 1.5}, TypeError, r"seed must be an integer >= 0; got float 1.5"),
    ({"seed": True}, TypeError, r"seed must be an integer >= 0; got bool"),
    ({"sampler_options": [("k1", 1.2)]}, TypeError, r"sampler_options must be a mapping; got list"),
])
def test_a_bad_field_is_named(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        NegativeSampling(**kwargs)


def test_sampling_or_its_fields_not_both():
    with pytest.raises(TypeError, match=r"pass either sampling or n_candidates, seed, not both"):
        NegativeSampling.resolve(NegativeSampling(), n_candidates=4, seed=1)
    with pytest.raises(TypeError, match=r"sampling must be a NegativeSampling; got dict"):
        NegativeSampling.resolve({"n_candidates": 4})  # type: ignore[arg-type]
    spec = NegativeSampling(n_candidates=3)
    assert NegativeSampling.resolve(spec, n_candidates=None) is spec


def test_a_specification_builds_what_its_fields_build():
    dialogues = split_dialogues(ubuntu_dialogues())["test"][:40]
    spec = NegativeSampling(n_candidates=4, seed=3, relevant_first=True)
    a = build_query_set(dialogues, sampling=spec, max_queries=12)
    b = build_query_set(dialogues, n_candidates=4, seed=3, relevant_first=True, max_queries=12)
    assert list(a.candidates) == list(b.candidates) and list(a.query_ids) == list(b.query_ids)
    assert set(a.lengths.tolist()) == {4}
    assert (a.labels.reshape(-1, 4)[:, 0] == 1).all()  # relevant first, as asked
    with pytest.raises(TypeError, match="not both"):
        build_query_set(dialogues, sampling=spec, seed=1)


def test_redraw_keeps_the_list_length_unless_told():
    qs = load("ubuntu-sample", split="valid", cache=False, n_candidates=5, max_queries=6)
    assert set(redraw_negatives(qs, seed=1).lengths.tolist()) == {5}
    assert set(redraw_negatives(qs, n_candidates=3).lengths.tolist()) == {3}
    assert set(redraw_negatives(qs, sampling=NegativeSampling(n_candidates=4)).lengths.tolist()) == {4}


def test_split_is_checked_once_by_load_and_named_on_a_direct_call(monkeypatch):
    import uncertank.validation as validation
    from uncertank.datasets import _load

    calls = []
    real = validation.check_choice

    def counting(value, name, allowed):
        if name == "split":
            calls.append(value)
        return real(value, name, allowed)

    monkeypatch.setattr(_load, "check_choice", counting)
    from uncertank.datasets import conversation
    monkeypatch.setattr(conversation, "check_choice", counting)
    load("ubuntu-sample", split="test", cache=False, max_queries=3)
    assert calls == ["test"]
    with pytest.raises(ValueError, match=r"split must be one of .*'train'.*; got 'dev'"):
        load_ubuntu_sample(split="dev")
    assert np.array_equal(
        load_ubuntu_sample(split="test", max_queries=3).labels,
        load("ubuntu-sample", split="test", cache=False, max_queries=3).labels,
    )
