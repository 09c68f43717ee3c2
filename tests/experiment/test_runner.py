from __future__ import annotations

import json
import types

import numpy as np
import pytest

from uncertank import CallableRanker, EnsembleRanker, hookimpl
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.experiment.preflight import validate_config
from uncertank.experiment.result import StudyResult
from uncertank.experiment.runner import _training_queries
from uncertank.plugins import get_plugin_manager

CALLS: dict[str, int] = {}


def _overlap(context, candidates, weight=1.0):
    CALLS[f"overlap {weight}"] = CALLS.get(f"overlap {weight}", 0) + 1
    last = set(context[-1].lower().split())
    return [weight * len(last & set(c.lower().split())) / (2 + len(set(c.lower().split()))) for c in candidates]


def _make_noisy_ensemble(n_members: int = 3) -> EnsembleRanker:
    weights = np.linspace(0.6, 1.0, n_members)
    members = [CallableRanker(lambda c, x, w=w: _overlap(c, x, w), name=f"m{w}") for w in weights]
    return EnsembleRanker(members, name="overlap-ensemble")


class Trained:
    """A trainable ranker: learns one weight (the mean label), counts its fits."""

    name = "trained"
    fits = 0

    def __init__(self, *, weight: float = 1.0, seed: int = 0) -> None:
        self.weight, self.seed, self.learned = weight, seed, None

    @property
    def is_fitted(self) -> bool:
        return self.learned is not None

    def fit(self, train, valid=None):
        type(self).fits += 1
        self.learned = float(np.mean(train.labels)) * self.weight
        return self

    def predict(self, queries):
        from uncertank import Predictions

        scores = np.concatenate([_overlap(c, x, self.weight) for c, x, _ in queries])
        return Predictions(np.clip(scores + self.learned, 0, 1), queries.offsets, ranker=self.name)

    def save(self, path):
        path.mkdir(parents=True, exist_ok=True)
        (path / "w.json").write_text(json.dumps({"weight": self.weight, "learned": self.learned}))

    @classmethod
    def load(cls, path):
        d = json.loads((path / "w.json").read_text())
        new = cls(weight=d["weight"])
        new.learned = d["learned"]
        return new


@hookimpl
def uncertank_rankers():
    return {"overlap": lambda: CallableRanker(_overlap, name="overlap"), "overlap-ensemble": _make_noisy_ensemble,
            "trained": Trained}


@pytest.fixture
def study_rankers():
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("study_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="test-rankers")
    yield
    get_plugin_manager(refresh=True)


def _config(**changes):
    base = dict(
        name="tiny",
        train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),
                    ConditionConfig("cross-NS random", "ubuntu-sample", "random")),
        rankers=(RankerConfig("bm25"), RankerConfig("overlap"), RankerConfig("overlap-ensemble", {"n_members": 3})),
        max_train_queries=20, max_valid_queries=30, max_test_queries=40,
        risk_grid=(0.0, 0.5),
        bayes=BayesConfig(enabled=False),
    )
    base.update(changes)
    return StudyConfig(**base)


@pytest.mark.slow
def test_study_runs_end_to_end_and_resumes(tmp_path, study_rankers):
    config = _config()
    result = run_study(config, tmp_path)
    assert isinstance(result, StudyResult)
    assert result.rankers == ["bm25", "overlap", "overlap-ensemble"]
    assert result.conditions == ["in-domain", "cross-NS random"]
    for e in result.evaluations:
        assert 0.0 <= e.metrics["R@1"] <= e.metrics["R@2"] <= e.metrics["R@5"] <= 1.0
        assert len(e.per_query["R@1"]) == 40
        assert np.mean(e.per_query["R@1"]) == pytest.approx(e.metrics["R@1"])
        assert e.selective is not None and len(e.selective.risk) == 40
        assert e.selective.oracle_aurc <= e.selective.aurc + 1e-12
    # bm25 is not probabilistic: no calibration; the callable rankers are
    bm25 = result.evaluation("bm25", "in-domain")
    assert bm25 is not None and not bm25.probabilistic and "ECE" not in bm25.metrics
    assert bm25.selective is not None and bm25.selective.confidence == "margin"
    ov = result.evaluation("overlap", "in-domain")
    assert ov is not None and "ECE" in ov.metrics and ov.reliability is not None and ov.imbalance
    assert set(ov.recalibrated) >= {"platt", "temperature"}
    ens = result.evaluation("overlap-ensemble", "cross-NS random")
    assert ens is not None and ens.stochastic and ens.risk is not None and ens.mean_std is not None
    assert set(ens.risk.test_curve) == {0.0, 0.5}
    assert ens.risk.test_curve[ens.risk.b] == pytest.approx(ens.risk.r1_risk_aware)
    assert ens.risk.test_curve[0.0] == pytest.approx(ens.risk.r1_mean)
    nota = result.evaluation("overlap-ensemble", "in-domain").nota  # type: ignore[union-attr]
    assert nota is not None and nota.f1_means_var is not None
    assert result.sizes["test"] == {"in-domain": 40, "cross-NS random": 40}
    on_disk = StudyResult.from_dict(json.loads((tmp_path / "results.json").read_text()))
    assert on_disk.evaluations[0].metrics == result.evaluations[0].metrics
    assert (tmp_path / "report.html").exists() and list((tmp_path / "figures").glob("*.png"))
    # resume: predictions are read back, nothing is scored again, same numbers, timings of the first run
    CALLS.clear()
    again = run_study(config, tmp_path)
    assert CALLS == {}
    assert [e.metrics for e in again.evaluations] == [e.metrics for e in result.evaluations]
    for name, step in again.steps.items():
        if name.startswith("predict"):
            assert step.resumed and step.seconds == pytest.approx(result.steps[name].seconds)


@pytest.mark.slow
def test_changed_inputs_recompute_exactly_their_steps(tmp_path, study_rankers):
    rankers = (RankerConfig("trained", {"weight": 1.0}), RankerConfig("overlap"))
    config = _config(rankers=rankers, conditions=(ConditionConfig("in-domain", "ubuntu-sample", "bm25"),),
                     nota=False)
    first = run_study(config, tmp_path)
    assert Trained.fits == 1

    def rerun(cfg):
        before = Trained.fits
        res = run_study(cfg, tmp_path)
        recomputed = {k for k, s in res.steps.items() if not s.resumed and k.split()[0] in ("fit", "predict")}
        return res, recomputed, Trained.fits - before

    # nothing changed: nothing recomputed
    _, recomputed, fits = rerun(config)
    assert recomputed == set() and fits == 0
    # a ranker parameter: that ranker's fit and predictions, nothing of the other ranker
    changed = _config(rankers=(RankerConfig("trained", {"weight": 0.5}), RankerConfig("overlap")),
                      conditions=config.conditions, nota=False)
    res, recomputed, fits = rerun(changed)
    assert recomputed == {"fit trained", "predict trained valid", "predict trained in-domain"} and fits == 1
    assert res.steps["fit trained"].key != first.steps["fit trained"].key
    # the test data (another negative sampler, same shape): only the predictions on it
    changed_data = _config(rankers=rankers, conditions=(ConditionConfig("in-domain", "ubuntu-sample", "random"),),
                           nota=False)
    _, recomputed, fits = rerun(changed_data)
    assert recomputed == {"predict trained in-domain", "predict overlap in-domain"} and fits == 0
    # the training data: every fit and everything after it (the untrained ranker's predictions stay)
    changed_train = _config(rankers=rankers, conditions=config.conditions, nota=False, max_train_queries=25)
    _, recomputed, fits = rerun(changed_train)
    assert recomputed == {"fit trained", "predict trained valid", "predict trained in-domain"} and fits == 1


@pytest.mark.slow
def test_save_to_writes_a_checkpoint_other_studies_load(tmp_path, study_rankers):
    from uncertank.experiment.runner import SAVED_BY

    target = tmp_path / "shared" / "trained"
    conditions = (ConditionConfig("in-domain", "ubuntu-sample", "bm25"),)
    config = _config(rankers=(RankerConfig("trained", {"weight": 0.5}, save_to=str(target)),), conditions=conditions,
                     nota=False)
    first = run_study(config, tmp_path / "a")
    key = first.steps["fit trained"].key
    assert json.loads((target / SAVED_BY).read_text()) == {"key": key, "label": "trained", "ranker": "trained",
                                                            "files": [SAVED_BY, "w.json"]}
    assert not (target / ".complete").exists() and not target.with_name("trained.tmp").exists()
    saved = json.loads((target / "w.json").read_text())
    assert saved["weight"] == 0.5 and saved["learned"] is not None
    # resumed with the same key: the folder is left as it is
    stamp = (target / "w.json").stat().st_mtime_ns
    run_study(config, tmp_path / "a")
    assert (target / "w.json").stat().st_mtime_ns == stamp
    # another study loads it as a checkpoint and scores the same
    other = _config(rankers=(RankerConfig("trained", checkpoint=str(target)),), conditions=conditions, nota=False)
    again = run_study(other, tmp_path / "b")
    assert again.evaluation("trained", "in-domain").metrics == first.evaluation("trained", "in-domain").metrics
    # a changed model (another parameter, another key) replaces it
    changed = _config(rankers=(RankerConfig("trained", {"weight": 1.0}, save_to=str(target)),), conditions=conditions,
                      nota=False)
    res = run_study(changed, tmp_path / "a")
    assert json.loads((target / SAVED_BY).read_text())["key"] == res.steps["fit trained"].key != key
    assert json.loads((target / "w.json").read_text())["weight"] == 1.0


def test_save_to_needs_a_trained_ranker(study_rankers):
    with pytest.raises(ValueError, match=r"rankers\[0\].save_to: 'overlap' is not trained by the study and saved"):
        validate_config(_config(rankers=(RankerConfig("overlap", save_to="/tmp/x"),)))


def test_bad_names_fail_before_any_data_is_loaded(monkeypatch, study_rankers):
    import uncertank.datasets as ds

    def boom(*a, **k):
        raise AssertionError("data loaded")

    monkeypatch.setattr(ds, "load", boom)
    cases = [
        (dict(rankers=(RankerConfig("nope"),)), "unknown ranker 'nope'; known: .*bm25"),
        (dict(rankers=(RankerConfig("bm25", {"k9": 1}),)), "unknown parameter"),
        (dict(train_dataset="nowhere"), "unknown dataset 'nowhere'"),
        (dict(conditions=(ConditionConfig("x", "ubuntu-sample", "psychic"),)), "unknown negative sampler 'psychic'"),
        (dict(metrics=("recall_at_k", "no_such_metric")), "no_such_metric"),
        (dict(recalibrators=("magic",)), "unknown recalibrator 'magic'"),
    ]
    for change, match in cases:
        with pytest.raises(ValueError, match=match):
            validate_config(_config(**change))


@pytest.mark.slow
def test_a_checkpoint_is_loaded_not_trained_and_keyed_by_its_content(tmp_path, study_rankers):
    import uncertank.datasets as ds

    train = ds.load("ubuntu-sample", split="train", n_candidates=10, seed=0).subset(range(20))
    trained = Trained(weight=0.5).fit(train)
    ckpt = tmp_path / "ckpt"
    trained.save(ckpt)
    conditions = (ConditionConfig("in-domain", "ubuntu-sample", "bm25"),)
    config = _config(rankers=(RankerConfig("trained", checkpoint=str(ckpt)),), conditions=conditions, nota=False)
    out = tmp_path / "study"
    before = Trained.fits
    first = run_study(config, out)
    assert Trained.fits == before  # loaded, never fitted
    assert "fit trained" not in first.steps and not first.steps["load trained"].resumed
    ev = first.evaluation("trained", "in-domain")
    assert ev is not None and "ECE" in ev.metrics
    # same files elsewhere: same key, predictions reused
    moved = tmp_path / "moved"
    trained.save(moved)
    again = run_study(_config(rankers=(RankerConfig("trained", checkpoint=str(moved)),), conditions=conditions,
                              nota=False), out)
    assert again.steps["load trained"].key == first.steps["load trained"].key
    assert again.steps["predict trained in-domain"].resumed
    # a changed checkpoint: a new key, its predictions recomputed
    (moved / "w.json").write_text(json.dumps({"weight": 0.5, "learned": 0.25}))
    changed = run_study(_config(rankers=(RankerConfig("trained", checkpoint=str(moved)),), conditions=conditions,
                                nota=False), out)
    assert changed.steps["load trained"].key != first.steps["load trained"].key
    assert not changed.steps["predict trained in-domain"].resumed
    assert changed.evaluation("trained", "in-domain").metrics["ECE"] != ev.metrics["ECE"]  # type: ignore[union-attr]


def test_a_bad_checkpoint_is_named_before_any_data_is_loaded(tmp_path, monkeypatch, study_rankers):
    import uncertank.datasets as ds

    monkeypatch.setattr(ds, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("data loaded")))
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (RankerConfig("trained", checkpoint=str(tmp_path / "missing")),
         "checkpoint: must be a non-empty folder.*no such"),
        (RankerConfig("trained", checkpoint=str(empty)), "checkpoint: must be a non-empty folder.*empty"),
        (RankerConfig("overlap", checkpoint=str(empty)), "checkpoint: 'overlap' offers no load"),
    ]
    for rc, match in cases:
        with pytest.raises(ValueError, match=match):
            validate_config(_config(rankers=(rc,)))
    with pytest.raises(ValueError, match="give init_from or checkpoint, not both"):
        _config(rankers=(RankerConfig("bm25"), RankerConfig("trained", init_from="bm25", checkpoint=str(empty))))


def test_a_relative_checkpoint_in_a_study_file_is_taken_from_the_files_folder(tmp_path):
    from uncertank.experiment import load_config

    (tmp_path / "models" / "m").mkdir(parents=True)
    study = tmp_path / "studies" / "s.toml"
    study.parent.mkdir()
    study.write_text(
        '[study]\ntrain_dataset = "ubuntu-sample"\n[[conditions]]\nname = "in-domain"\ndataset = "ubuntu-sample"\n'
        '[[rankers]]\nname = "trained"\ncheckpoint = "../models/m"\n'
    )
    config = load_config(study)
    assert config.rankers[0].checkpoint == str((tmp_path / "models" / "m").resolve())
    study.write_text(study.read_text().replace('"../models/m"', "3"))
    with pytest.raises(ValueError, match="checkpoint: must be a folder path"):
        load_config(study)


def test_init_from_must_name_an_earlier_ranker():
    with pytest.raises(ValueError, match="init_from: must name an earlier ranker"):
        _config(rankers=(RankerConfig("overlap", init_from="bert"), RankerConfig("bm25")))


def test_run_command_rejects_an_unknown_ranker_in_one_line(tmp_path):
    from click.testing import CliRunner

    from uncertank.cli import cli

    study = tmp_path / "study.toml"
    study.write_text('[study]\ntrain_dataset = "ubuntu-sample"\n\n[[conditions]]\nname = "in"\n'
                     'dataset = "ubuntu-sample"\n\n[[rankers]]\nname = "bertt"\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(study), "--out", str(out)])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown ranker 'bertt'; known:" in lines[0] and "bm25" in lines[0]
    assert not out.exists()


def test_the_log_names_the_queries_a_capped_ranker_trains_on():
    from uncertank.protocols import capabilities

    capped = capabilities(types.SimpleNamespace(max_train_queries=1908))  # declares uncertank.TrainingLimited
    assert _training_queries(capped, 9539) == "1908 of the 9539 training queries (max_train_queries)"
    assert _training_queries(capped, 1000) == "1000 queries"  # a cap above the split caps nothing
    assert _training_queries(capabilities(Trained()), 9539) == "9539 queries"  # a ranker without the option
    undeclared = types.SimpleNamespace(training_config=types.SimpleNamespace(max_train_queries=1908))
    assert _training_queries(capabilities(undeclared), 9539) == "9539 queries"  # nothing undeclared is probed
