"""What a study uses of a ranker is what uncertank.protocols declares, capability by capability."""

from __future__ import annotations

import types
from typing import ClassVar

import numpy as np
import pytest

from uncertank import (
    Predictions,
    PredictiveSamples,
    Probabilistic,
    Ranker,
    Saveable,
    StochasticRanker,
    Trainable,
    WarmStartable,
    hookimpl,
)
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig, StudyConfigError
from uncertank.experiment.runner import fit_rankers, load_data
from uncertank.plugins import get_plugin_manager
from uncertank.protocols import check_capabilities, takes_show_progress


def _scores(queries, shift: float = 0.0) -> np.ndarray:
    """A score per pair in (0, 1): word overlap of the candidate with the last turn."""
    out = []
    for context, candidates, _ in queries:
        last = set(context[-1].lower().split())
        out += [(len(last & set(c.lower().split())) + shift) / (2.0 + len(c.split()) + shift) for c in candidates]
    return np.clip(np.asarray(out, dtype=np.float64), 0.01, 0.99)


class PredictOnly:
    """No fit, no save, no __init__ of its own: only ``name`` and ``predict``."""

    name = "predict-only"

    def predict(self, queries):
        return Predictions(_scores(queries), queries.offsets, ranker=self.name)


class FitNoSave:
    """Trainable (``fit``, ``is_fitted``), not saveable: trained again by every run."""

    name = "fit-no-save"
    fits = 0

    def __init__(self, *, shift: float = 0.0) -> None:
        self.shift, self.learned = shift, None

    @property
    def is_fitted(self) -> bool:
        return self.learned is not None

    def fit(self, train, valid=None):
        type(self).fits += 1
        self.learned = float(np.mean(train.labels))
        return self

    def predict(self, queries):
        return Predictions(_scores(queries, self.shift + (self.learned or 0.0)), queries.offsets, ranker=self.name)


class NotProbabilities:
    """Stochastic, its draws in [0, 1] but, as its flag says, not probabilities."""

    name = "stochastic"
    probabilistic = False

    def predict(self, queries):
        return Predictions(_scores(queries), queries.offsets, ranker=self.name, probabilistic=False)

    def predict_samples(self, queries, *, n_samples=None):
        n = 4 if n_samples is None else n_samples
        rng = np.random.default_rng(0)
        base = _scores(queries)
        draws = np.clip(base + rng.normal(0.0, 0.02, size=(n, base.size)), 0.0, 1.0)
        return PredictiveSamples(draws, queries.offsets, ranker=self.name)


class QuietBase:
    """A base class whose constructor declares ``show_progress``."""

    name = "inherited-init"
    built_with: ClassVar[list[bool]] = []

    def __init__(self, *, show_progress: bool = True) -> None:
        type(self).built_with.append(show_progress)

    def predict(self, queries):
        return Predictions(_scores(queries), queries.offsets, ranker=self.name)


class InheritsInit(QuietBase):
    """No __init__ of its own: it takes its base's, ``show_progress`` included."""


class FitWithoutIsFitted:
    name = "half-trainable"

    def fit(self, train, valid=None):
        return self

    def predict(self, queries):
        return Predictions(_scores(queries), queries.offsets, ranker=self.name)


class SaveWithoutLoad(PredictOnly):
    def save(self, path):
        pass


@hookimpl
def uncertank_rankers():
    return {"predict-only": PredictOnly, "fit-no-save": FitNoSave, "stochastic": NotProbabilities,
            "inherited-init": InheritsInit, "half-trainable": FitWithoutIsFitted}


@pytest.fixture
def contract_rankers():
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("contract_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="contract-rankers")
    yield
    get_plugin_manager(refresh=True)


def _config(*rankers: RankerConfig) -> StudyConfig:
    return StudyConfig(
        name="contract", train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),),
        rankers=rankers, max_train_queries=20, max_valid_queries=20, max_test_queries=20,
        risk_grid=(0.0, 0.5), nota=False, bayes=BayesConfig(enabled=False),
    )


def test_the_protocols_tell_the_capabilities_apart():
    plain, trainable, stochastic = PredictOnly(), FitNoSave(), NotProbabilities()
    assert isinstance(plain, Ranker) and not isinstance(plain, Trainable | Saveable | StochasticRanker)
    assert isinstance(trainable, Trainable) and not isinstance(trainable, Saveable)
    assert isinstance(stochastic, StochasticRanker) and isinstance(stochastic, Probabilistic)
    assert not isinstance(trainable, Probabilistic) and not isinstance(plain, WarmStartable)
    assert not isinstance(FitWithoutIsFitted(), Trainable)


@pytest.mark.slow
def test_a_study_uses_of_each_ranker_what_it_declares(tmp_path, contract_rankers):
    QuietBase.built_with.clear()
    FitNoSave.fits = 0
    config = _config(RankerConfig("predict-only"), RankerConfig("fit-no-save"), RankerConfig("stochastic"),
                     RankerConfig("inherited-init"))
    result = run_study(config, tmp_path)
    assert result.rankers == ["predict-only", "fit-no-save", "stochastic", "inherited-init"]
    # only the trainable one has a fit step; nothing is saved for a ranker without save
    assert {k for k in result.steps if k.startswith("fit")} == {"fit fit-no-save"}
    assert FitNoSave.fits == 1
    assert not list((tmp_path / "models").glob("fit-no-save-*/step.json"))
    # the stochastic ranker's flag, not the range of its draws, says its scores are not probabilities
    stochastic = result.evaluation("stochastic", "in-domain")
    assert stochastic is not None and stochastic.stochastic and not stochastic.probabilistic
    plain = result.evaluation("predict-only", "in-domain")
    assert plain is not None and plain.probabilistic and not plain.stochastic
    # a class without its own __init__ is built quietly through its base's show_progress (the check at the
    # door builds it first, as the study file says)
    assert QuietBase.built_with[-1] is False
    # resumed: the ranker without save is trained again (nothing to load it from), predictions are reused
    again = run_study(config, tmp_path)
    assert FitNoSave.fits == 2 and not again.steps["fit fit-no-save"].resumed
    assert again.steps["predict predict-only in-domain"].resumed


def test_fit_without_is_fitted_is_refused_at_the_door(tmp_path, contract_rankers):
    with pytest.raises(StudyConfigError, match=r"offers fit but not is_fitted"):
        run_study(_config(RankerConfig("half-trainable")), tmp_path)


def test_fit_rankers_refuses_a_partial_capability(tmp_path, contract_rankers):
    config = _config(RankerConfig("half-trainable"))
    with pytest.raises(TypeError, match=r"FitWithoutIsFitted offers fit but not is_fitted; uncertank.Trainable"):
        fit_rankers(config, load_data(config), tmp_path)


def test_fit_rankers_refuses_a_checkpoint_without_load_or_an_init_from_without_from_ranker(
        tmp_path, contract_rankers):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "x").write_text("x")
    config = _config(RankerConfig("predict-only", checkpoint=str(folder)))
    with pytest.raises(TypeError, match=r"offers no load\(folder\).*uncertank.Saveable"):
        fit_rankers(config, load_data(config), tmp_path)
    config = _config(RankerConfig("fit-no-save"), RankerConfig("fit-no-save", init_from="fit-no-save", label="b"))
    with pytest.raises(TypeError, match=r"offers no from_ranker.*uncertank.WarmStartable"):
        fit_rankers(config, load_data(config), tmp_path)


def test_check_capabilities_names_what_is_missing():
    check_capabilities(PredictOnly())
    check_capabilities(FitNoSave())
    with pytest.raises(TypeError, match=r"offers save but not load; uncertank.Saveable needs save and load"):
        check_capabilities(SaveWithoutLoad())


class _Kwargs(QuietBase):
    def __init__(self, *, extra: int = 0, **params) -> None:
        super().__init__(**params)


class _KwargsToObject:
    def __init__(self, **params) -> None:
        pass


class _Loads:
    def __init__(self, *, show_progress: bool = True) -> None:
        pass

    @classmethod
    def load(cls, path, **params):
        return cls(**params)

    @classmethod
    def from_ranker(cls, ranker, *, n: int = 1):
        return cls()


def test_show_progress_is_read_from_signatures_only():
    assert takes_show_progress(QuietBase) and takes_show_progress(InheritsInit)
    assert takes_show_progress(_Kwargs)  # **params passed on to a base that names it
    assert not takes_show_progress(_KwargsToObject) and not takes_show_progress(PredictOnly)
    assert not takes_show_progress(lambda: PredictOnly()) and takes_show_progress(lambda show_progress: None)
    # load's **params are the constructor's; from_ranker here takes none of them
    assert takes_show_progress(_Loads.load, constructor=_Loads) and not takes_show_progress(_Loads.load)
    assert not takes_show_progress(_Loads.from_ranker, constructor=_Loads)
    assert not takes_show_progress(len)  # no signature to read: it declares nothing


def test_the_first_party_neural_factories_declare_show_progress():
    from uncertank.plugins import get_factory, registry

    names = [n for n in ("bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr", "laplace")
             if n in registry("rankers")]
    assert names, "no first-party neural ranker is installed"
    assert [n for n in names if not takes_show_progress(get_factory("rankers", n))] == []
