"""uncertank.testing: loading plugins without installing them, fake entry points, and the conformance checks.

Every check is shown to catch the fault it exists for, on a ranker that has
exactly that fault.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import uncertank
from uncertank import Predictions, PredictiveSamples, QuerySet, hookimpl
from uncertank import plugins as host
from uncertank.testing import (
    ConformanceError,
    FakeEntryPoint,
    check_metric,
    check_ranker,
    check_recalibrator,
    check_stochastic_ranker,
    fake_entry_points,
    load_plugin_module,
)

QS = QuerySet.from_lists(
    [["my wifi is down"], ["no sound"], ["grub fails"]],
    [["restart the wifi", "hello", "bye"], ["check the mixer", "hi"], ["reinstall grub", "ok", "sure", "no"]],
    [[1, 0, 0], [1, 0], [1, 0, 0, 0]],
)


def test_importable_without_pytest():
    code = "import sys; sys.modules['pytest'] = None; import uncertank.testing; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- load_plugin_module ------------------------------------------------------------------


PLUGIN_SOURCE = """
from uncertank import hookimpl, CallableRanker


@hookimpl
def uncertank_rankers():
    return {"{name}": lambda: CallableRanker(lambda c, x: [0.5] * len(x), name="{name}")}
"""


def _write_package(root: Path, name: str) -> Path:
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "impl.py").write_text("VALUE = 0.25\n")
    (pkg / "plugin.py").write_text(textwrap.dedent("""
        from uncertank import hookimpl, CallableRanker
        from {pkg}.impl import VALUE


        @hookimpl
        def uncertank_rankers():
            return {{"{pkg}": lambda: CallableRanker(lambda c, x: [VALUE] * len(x), name="{pkg}")}}
    """).format(pkg=name))
    return pkg


def test_load_a_standalone_file_after_a_lookup(tmp_path):
    path = tmp_path / "my_plugin.py"
    path.write_text(PLUGIN_SOURCE.replace("{name}", "file-ranker"))
    assert "file-ranker" not in host.registry("rankers")
    module = load_plugin_module(path, name="file-plugin")
    try:
        assert uncertank.make_ranker("file-ranker").predict(QS).scores.tolist() == [0.5] * QS.n_pairs
        assert host.registry("rankers")["file-ranker"].plugin == "file-plugin"
        assert load_plugin_module(path, register=False) is module  # imported once
    finally:
        host.unregister(module)
    assert "file-ranker" not in host.registry("rankers")


def test_load_a_module_inside_a_package_with_its_own_imports(tmp_path):
    pkg = _write_package(tmp_path, "kitpkg_a")
    module = load_plugin_module(pkg / "plugin.py")
    try:
        assert module.__name__ == "kitpkg_a.plugin"
        assert uncertank.make_ranker("kitpkg_a").predict(QS).scores[0] == 0.25
    finally:
        host.unregister(module)


def test_load_by_dotted_name_package_folder_and_module(tmp_path):
    pkg = _write_package(tmp_path, "kitpkg_b")
    folder_module = load_plugin_module(pkg, register=False)
    assert folder_module.__name__ == "kitpkg_b"
    module = load_plugin_module("kitpkg_b.plugin")
    try:
        assert "kitpkg_b" in host.registry("rankers")
        assert load_plugin_module(module) is module  # already registered: left as it is
    finally:
        host.unregister(module)


def test_load_plugin_module_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"must be an existing \.py file or package folder"):
        load_plugin_module(tmp_path / "nope.py")
    (tmp_path / "data.txt").write_text("x")
    with pytest.raises(ValueError, match=r"must be a \.py file or a package folder; got the file"):
        load_plugin_module(tmp_path / "data.txt")
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError, match=r"must be a package folder \(with __init__.py\)"):
        load_plugin_module(tmp_path / "plain")
    with pytest.raises(ModuleNotFoundError, match=r"path_or_module: no module named 'no_such_module_anywhere'"):
        load_plugin_module("no_such_module_anywhere")
    with pytest.raises(LookupError, match=r"no module named 'uncertank\.no_such_part' can be imported"):
        load_plugin_module("uncertank.no_such_part")  # the missing part named, not the package above it
    with pytest.raises(ValueError, match=r"path_or_module must be .*; got the empty string ''"):
        load_plugin_module("")  # not the current folder
    for bad in ("two words", "a..b", "1abc"):
        with pytest.raises(ValueError, match=r"path_or_module must be .*no dotted module name and no existing path"):
            load_plugin_module(bad)
    with pytest.raises(TypeError, match=r"path_or_module must be a module, a dotted module name.*; got int"):
        load_plugin_module(3)  # type: ignore[arg-type]
    broken = tmp_path / "broken_plugin.py"
    broken.write_text("raise RuntimeError('broken at import')\n")
    with pytest.raises(RuntimeError, match="broken at import"):
        load_plugin_module(broken)
    assert not any("broken_plugin" in name for name in sys.modules)


# -- fake entry points -------------------------------------------------------------------


def test_fake_entry_points_patch_only_the_uncertank_group_and_restore():
    original = importlib.metadata.entry_points
    mod = types.ModuleType("fake_mod")
    with fake_entry_points(("only", mod)) as eps:
        assert [ep.name for ep in importlib.metadata.entry_points(group="uncertank")] == ["only"]
        assert importlib.metadata.entry_points(group="console_scripts") is not None
        assert eps[0].dist.name == "fake-dist" and eps[0].value == "<module>"
        assert "bert" not in host.registry("rankers")  # installed plugins are hidden
    assert importlib.metadata.entry_points is original
    assert "bert" in host.registry("rankers")


def test_fake_entry_points_can_keep_the_installed_ones_and_import_by_name():
    with pytest.warns(RuntimeWarning, match="'by-name' .* failed to load: ValueError: Plugin already registered"), \
            fake_entry_points(FakeEntryPoint("by-name", "uncertank.baselines"), keep_installed=True):
        names = [ep.name for ep in importlib.metadata.entry_points(group="uncertank")]
        assert "by-name" in names and "bert" in names
        # the module is the built-in one, already registered: reported, not fatal
        assert any(f.plugin == "by-name" for f in host.plugin_failures())


def test_fake_entry_points_restore_after_an_error():
    original = importlib.metadata.entry_points
    with pytest.raises(KeyError), fake_entry_points():
        raise KeyError("inside")
    assert importlib.metadata.entry_points is original


def test_fake_entry_point_errors():
    with pytest.raises(TypeError, match="entry_points must be FakeEntryPoint objects or"):
        with fake_entry_points("oops"):  # type: ignore[arg-type]
            pass  # pragma: no cover
    with pytest.raises(TypeError, match="name must be a non-empty str; got ''"):
        FakeEntryPoint("", types.ModuleType("x"))
    assert "FakeEntryPoint('a', 'pkg.mod', distribution='d')" == repr(FakeEntryPoint("a", "pkg.mod", distribution="d"))


# -- rankers with one fault each -------------------------------------------------------------


class Good:
    """A deterministic ranker that keeps every rule: the overlap of words."""

    name = "good"

    def __init__(self, *, offset: float = 0.0) -> None:
        self.offset = offset

    def _scores(self, queries: QuerySet) -> np.ndarray:
        out = []
        for ctx, cands, _ in queries:
            words = set(" ".join(ctx).split())
            out += [len(words & set(c.split())) / (1 + len(c.split())) for c in cands]
        return np.clip(np.asarray(out) + self.offset, 0, 1)

    def predict(self, queries: QuerySet) -> Predictions:
        return Predictions(self._scores(queries), queries.offsets, ranker=self.name)

    is_fitted = False  # the kit refuses fit without is_fitted (uncertank.Trainable)

    def fit(self, train, valid=None):
        self.offset = 0.0
        return self

    def save(self, path) -> None:
        Path(path).mkdir(parents=True)
        (Path(path) / "state.json").write_text(json.dumps({"offset": self.offset}))

    @classmethod
    def load(cls, path):
        return cls(**json.loads((Path(path) / "state.json").read_text()))


class GoodStochastic(Good):
    """Seeded noise around the overlap: joint draws, same seed same output."""

    name = "good-stochastic"

    def predict_samples(self, queries, *, n_samples=None):
        n = 4 if n_samples is None else n_samples
        rng = np.random.default_rng(0)
        noise = rng.uniform(-0.05, 0.05, size=(n, 1))  # one shift per draw, shared by the whole list
        return PredictiveSamples(np.clip(self._scores(queries) + noise, 0, 1), queries.offsets, ranker=self.name)

    def predict(self, queries):
        return self.predict_samples(queries).to_predictions()


def test_good_rankers_pass_every_check():
    assert check_ranker(Good(), QS, train=QS, valid=QS) == [
        "protocol", "fit", "predict", "same output twice", "labels unused", "input unchanged", "save/load"]
    done = check_stochastic_ranker(GoodStochastic(), QS, n_samples=2)
    assert done == ["protocol", "predict", "predict_samples", "n_samples", "same output twice", "labels unused",
                    "input unchanged", "save/load"]


class NoName(Good):
    name = ""


class NoPredict:
    name = "no-predict"


class WrongType(Good):
    def predict(self, queries):
        return self._scores(queries)


class WrongLength(Good):
    def predict(self, queries):
        return Predictions(self._scores(queries)[:-1], np.array([0, queries.n_pairs - 1]))


class WrongOffsets(Good):
    def predict(self, queries):
        return Predictions(self._scores(queries), np.array([0, queries.n_pairs]))


class NotFinite(Good):
    def predict(self, queries):
        pred = Predictions(self._scores(queries), queries.offsets, probabilistic=False)
        s = pred.scores.copy()
        s[0] = np.nan
        object.__setattr__(pred, "scores", s)  # bypasses Predictions' own check
        return pred


class OutOfRange(Good):
    def predict(self, queries):
        pred = Predictions(self._scores(queries), queries.offsets)
        object.__setattr__(pred, "scores", pred.scores + 2.0)  # bypasses Predictions' own check
        return pred


class FlagContradicts(Good):
    probabilistic = False


class Unseeded(Good):
    def predict(self, queries):
        return Predictions(np.random.default_rng().random(queries.n_pairs), queries.offsets)


class PeeksAtLabels(Good):
    def predict(self, queries):
        s = self._scores(queries) if queries.labels is None else queries.labels.astype(float)
        return Predictions(s, queries.offsets)


class Mutates(Good):
    def predict(self, queries):
        queries.contexts[0].append("extra turn")
        return super().predict(queries)


class NegativeCost(Good):
    def cost_rates(self, *, warm_start=False):
        from uncertank import CostRates

        return CostRates(0.0, -1.0)


class CostAsTuple(Good):
    def cost_rates(self, *, warm_start=False):
        return (0.1, 0.2)


class ForgetsOnSave(Good):
    def save(self, path):
        Path(path).mkdir(parents=True)
        (Path(path) / "state.json").write_text(json.dumps({"offset": 0.5}))


class SavesNothing(Good):
    def save(self, path):
        pass


class LoadsSomethingElse(Good):
    @classmethod
    def load(cls, path):
        return object()


class FitReturnsNone(Good):
    def fit(self, train, valid=None):
        return None


class CannotFit:
    name = "cannot-fit"

    def predict(self, queries):
        return Predictions(np.zeros(queries.n_pairs), queries.offsets)


FAULTS = [
    (NoName(), "protocol", "non-empty str attribute 'name'"),
    (NoPredict(), "protocol", r"does not satisfy uncertank.Ranker: it needs predict\(queries\)"),
    (WrongType(), "predict", "must return uncertank.Predictions; got ndarray"),
    (WrongLength(), "predict", r"scores must have shape \(9,\), one per pair; got \(8,\)"),
    (WrongOffsets(), "predict", "must carry the offsets of the QuerySet scored"),
    (NotFinite(), "predict", "scores must be finite; got 1 NaN or infinite values"),
    (OutOfRange(), "predict", r"probabilistic scores must lie in \[0, 1\]"),
    (FlagContradicts(), "predict", "attribute probabilistic=False contradicts its predictions' probabilistic=True"),
    (Unseeded(), "same output twice", "must give the same scores .seed your randomness.; max abs difference"),
    (PeeksAtLabels(), "labels unused", "must not depend on the labels"),
    (Mutates(), "input unchanged", "must not modify the QuerySet"),
    (ForgetsOnSave(), "save/load", "a loaded ranker must predict what the saved one did"),
    (SavesNothing(), "save/load", r"save\(path\) must write into path; nothing at"),
    (LoadsSomethingElse(), "save/load", "load must return a Ranker; got object"),
    # CostRates refuses a negative second when it is built, inside the ranker's cost_rates
    (NegativeCost(), "protocol", r"raised ValueError: predict_per_pair must be a finite number >= 0; got -1.0"),
    (CostAsTuple(), "protocol", r"must return None or uncertank.CostRates .*; got \(0.1, 0.2\)"),
]


@pytest.mark.parametrize(("ranker", "check", "message"), FAULTS, ids=[type(f[0]).__name__ for f in FAULTS])
def test_each_fault_is_caught_by_its_check(ranker, check, message):
    qs = QuerySet.from_lists([list(c) for c in QS.contexts], [QS.query(q)[1] for q in range(3)],
                             [QS.query(q)[2].tolist() for q in range(3)])
    with pytest.raises(ConformanceError, match=rf"ranker '.*' \({type(ranker).__name__}\) fails check "
                                               rf"'{check}': .*{message}"):
        check_ranker(ranker, qs)


def test_fit_faults():
    with pytest.raises(ConformanceError, match="fit must return the ranker itself"):
        check_ranker(FitReturnsNone(), QS, train=QS)
    with pytest.raises(ConformanceError, match=r"train was given but the ranker has no fit"):
        check_ranker(CannotFit(), QS, train=QS)


# -- stochastic faults -----------------------------------------------------------------------


class NotStochastic(Good):
    pass


class SamplesWrongType(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        return super().predict_samples(queries, n_samples=n_samples).samples

    def predict(self, queries):
        return Good.predict(self, queries)


class SamplesWrongShape(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        ps = super().predict_samples(queries, n_samples=n_samples)
        return PredictiveSamples(ps.samples[:, :-1], np.array([0, queries.n_pairs - 1]))

    def predict(self, queries):
        return Good.predict(self, queries)


class IgnoresNSamples(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        return super().predict_samples(queries)


class SamplesWrongOffsets(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        ps = super().predict_samples(queries, n_samples=n_samples)
        return PredictiveSamples(ps.samples, np.array([0, queries.n_pairs]))

    def predict(self, queries):
        return Good.predict(self, queries)


class SamplesNotFinite(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        ps = super().predict_samples(queries, n_samples=n_samples)
        s = ps.samples.copy()
        s[0, 0] = np.inf
        object.__setattr__(ps, "samples", s)  # bypasses PredictiveSamples' own check
        return ps

    def predict(self, queries):
        return Good.predict(self, queries)


class SamplesOutOfRange(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        ps = super().predict_samples(queries, n_samples=n_samples)
        return PredictiveSamples(ps.samples + 1.5, queries.offsets)

    def predict(self, queries):
        return Good.predict(self, queries)


class RawButUnflagged(GoodStochastic):
    def predict(self, queries):
        return Predictions(self.predict_samples(queries).mean(), queries.offsets, probabilistic=False)


class RawAndFlagged(RawButUnflagged):
    probabilistic = False


class SamplesUnseeded(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        n = 3 if n_samples is None else n_samples
        return PredictiveSamples(np.random.default_rng().random((n, queries.n_pairs)), queries.offsets)

    def predict(self, queries):
        return Good.predict(self, queries)


class SamplesPeek(GoodStochastic):
    def predict_samples(self, queries, *, n_samples=None):
        ps = super().predict_samples(queries, n_samples=n_samples)
        if queries.labels is None:
            return ps
        return PredictiveSamples(np.clip(ps.samples + queries.labels * 0.01, 0, 1), queries.offsets)

    def predict(self, queries):
        return Good.predict(self, queries)


class SamplesForgotten(GoodStochastic):
    @classmethod
    def load(cls, path):
        class Other(GoodStochastic):
            def predict_samples(self, queries, *, n_samples=None):
                ps = GoodStochastic.predict_samples(self, queries, n_samples=n_samples)
                return PredictiveSamples(ps.samples * 0.5, queries.offsets)

            def predict(self, queries):
                return GoodStochastic.predict(SamplesForgotten(), queries)

        return Other()


STOCHASTIC_FAULTS = [
    (NotStochastic(), "protocol", "does not satisfy uncertank.StochasticRanker"),
    (SamplesWrongType(), "predict_samples", "must return uncertank.PredictiveSamples; got ndarray"),
    (SamplesWrongShape(), "predict_samples", r"samples must have shape \(n_samples, 9\), one joint draw per row"),
    (IgnoresNSamples(), "n_samples", "n_samples=2 must give 2 rows; got 4"),
    (SamplesWrongOffsets(), "predict_samples", "samples must carry the offsets"),
    (SamplesNotFinite(), "predict_samples", "samples must be finite"),
    (SamplesOutOfRange(), "predict_samples", r"every sample must lie in \[0, 1\]"),
    (RawButUnflagged(), "predict_samples", "give the ranker an attribute probabilistic = False"),
    (SamplesUnseeded(), "same output twice", "predict_samples on the same queries must give the same draws"),
    (SamplesPeek(), "labels unused", "samples must not depend on the labels"),
    (SamplesForgotten(), "save/load", "a loaded ranker must draw what the saved one did"),
]


@pytest.mark.parametrize(("ranker", "check", "message"), STOCHASTIC_FAULTS,
                         ids=[type(f[0]).__name__ for f in STOCHASTIC_FAULTS])
def test_each_stochastic_fault_is_caught_by_its_check(ranker, check, message):
    with pytest.raises(ConformanceError, match=rf"fails check '{check}': .*{message}"):
        check_stochastic_ranker(ranker, QS, n_samples=2)


def test_a_stochastic_ranker_with_raw_scores_in_0_1_passes_once_flagged():
    assert "save/load" in check_stochastic_ranker(RawAndFlagged(), QS)


def test_argument_errors():
    with pytest.raises(TypeError, match="queries must be a QuerySet; got list"):
        check_ranker(Good(), [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1; got 0"):
        check_stochastic_ranker(GoodStochastic(), QS, n_samples=0)
    with pytest.raises(ValueError, match="atol must be a number >= 0; got -1"):
        check_ranker(Good(), QS, atol=-1)
    with pytest.raises(TypeError, match="train must be a QuerySet or None; got str"):
        check_ranker(Good(), QS, train="data")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="valid needs train"):
        check_ranker(Good(), QS, valid=QS)


# -- the kit used as a plugin author would, end to end ------------------------------------------


def test_a_plugin_tested_through_fake_entry_points():
    @hookimpl
    def uncertank_rankers():
        return {"good": Good, "good-stochastic": GoodStochastic}

    mod = types.ModuleType("authors_plugin")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    with fake_entry_points(FakeEntryPoint("good", mod, distribution="uncertank-good", version="0.3")):
        info = host.registry("rankers")["good-stochastic"]
        assert (info.plugin, info.distribution, info.version) == ("good", "uncertank-good", "0.3")
        check_stochastic_ranker(uncertank.make_ranker("good-stochastic"), QS)
        check_ranker(uncertank.make_ranker("good"), QS)


# -- metrics ------------------------------------------------------------------------------------


def _recall1(scores, labels=None, *, per_query=False):
    from uncertank.metrics import recall_at_k

    return recall_at_k(scores, labels, k=1, per_query=per_query)


def test_every_registered_metric_and_recalibrator_conforms():
    for info in host.registry("metrics").values():
        assert check_metric(info.factory)[-1] == "label", info.name
    for info in host.registry("recalibrators").values():
        assert check_recalibrator(info.factory) == ["fit", "transform", "order kept"], info.name


def test_a_bare_callable_metric_is_checked_as_the_registry_wraps_it():
    assert check_metric(_recall1, name="r1") == ["value", "inputs agree", "per query", "direction", "label"]


def _metric(fn, **meta):
    from uncertank.metrics import Metric

    return Metric(fn, name="faulty", kind=meta.pop("kind", "ranking"), **meta)


def _not_a_float(scores, labels=None, *, per_query=False):
    return [1.0]


_calls = []


def _drifting(scores, labels=None, *, per_query=False):
    _calls.append(1)
    return _recall1(scores, labels, per_query=per_query) + (0.0 if per_query else 0.01 * len(_calls))


def _input_dependent(scores, labels=None, *, per_query=False):
    value = _recall1(scores, labels, per_query=per_query)
    return value if isinstance(scores, uncertank.RankedLists) or per_query else value + 0.5


def _no_per_query(scores, labels=None):
    return float(_recall1(scores, labels))


def _short_per_query(scores, labels=None, *, per_query=False):
    value = _recall1(scores, labels, per_query=per_query)
    return value[:-1] if per_query else value


def _per_query_not_the_mean(scores, labels=None, *, per_query=False):
    value = _recall1(scores, labels, per_query=per_query)
    return value * 0.5 if per_query else value


METRIC_FAULTS = [
    (_metric(_not_a_float), "value", r"must return a finite float; got \[1.0\]"),
    (_metric(_drifting), "value", "must give the same value twice"),
    (_metric(_input_dependent), "inputs agree", "must give the same value"),
    (_metric(_no_per_query), "per query", "a ranking metric must accept per_query=True"),
    (_metric(_short_per_query), "per query", r"must give 12 finite values, shape \(12,\); got shape \(11,\)"),
    (_metric(_per_query_not_the_mean), "per query", "the mean of the per-query values"),
    (_metric(_recall1, higher_is_better=False), "direction", "higher_is_better=False says the first is better"),
    (_metric(_recall1, label=" "), "label", "the column label must be a non-empty str; got ' '"),
]


@pytest.mark.parametrize(("metric", "check", "message"), METRIC_FAULTS,
                         ids=[f[0].fn.__name__ + "-" + f[1] for f in METRIC_FAULTS])
def test_each_metric_fault_is_caught(metric, check, message):
    with pytest.raises(ConformanceError, match=rf"metric 'faulty' fails check '{check}': .*{message}"):
        check_metric(metric)


def test_check_metric_needs_a_callable():
    with pytest.raises(TypeError, match="metric must be a Metric or a callable; got int"):
        check_metric(3)


# -- recalibrators --------------------------------------------------------------------------------


class _Clip:
    def fit(self, scores, labels):
        return self

    def transform(self, scores):
        return np.clip(np.asarray(scores, dtype=float), 0, 1)


class _FitReturnsNone(_Clip):
    def fit(self, scores, labels):
        return None


class _OutOfRange(_Clip):
    def transform(self, scores):
        return np.asarray(scores, dtype=float) * 2


class _Noisy(_Clip):
    def transform(self, scores):
        return np.clip(np.asarray(scores, dtype=float) + np.random.default_rng().normal(0, 1e-3), 0, 1)


class _UnconstrainedPlatt:
    """Platt scaling without the slope bound: reverses the ranking when relevance falls with the score."""

    def fit(self, scores, labels):
        from sklearn.linear_model import LogisticRegression

        self.model = LogisticRegression(C=np.inf).fit(np.asarray(scores)[:, None], labels)
        return self

    def transform(self, scores):
        return self.model.predict_proba(np.asarray(scores, dtype=float)[:, None])[:, 1]


def test_recalibrator_faults_are_caught():
    assert check_recalibrator(_Clip) == ["fit", "transform", "order kept"]
    with pytest.raises(ConformanceError, match="'_FitReturnsNone' fails check 'fit': fit must return the "):
        check_recalibrator(_FitReturnsNone)
    with pytest.raises(ConformanceError, match=r"fails check 'transform': .*finite probabilities in \[0, 1\]"):
        check_recalibrator(_OutOfRange)
    with pytest.raises(ConformanceError, match="fails check 'transform': transform must give the same output"):
        check_recalibrator(_Noisy)
    with pytest.raises(ConformanceError, match=r"'_UnconstrainedPlatt' fails check 'order kept': the map must be "
                                               r"non-decreasing.*\(relevance falling with the score\)"):
        check_recalibrator(_UnconstrainedPlatt)


def test_check_recalibrator_on_given_data_and_its_errors():
    rng = np.random.default_rng(3)
    x = rng.random(300)
    y = (rng.random(300) < x).astype(int)
    assert check_recalibrator(uncertank.plugins.get_factory("recalibrators", "isotonic"), x, y)[-1] == "order kept"
    with pytest.raises(ValueError, match="scores and labels go together"):
        check_recalibrator(_Clip, x)
    with pytest.raises(TypeError, match="recalibrator must be a class or factory; got str"):
        check_recalibrator("platt")


# -- the checkpoint contract: load(folder, **params) -------------------------------------------


class LoadsWithParams(Good):
    """Keeps the contract: ``load(folder, **params)`` takes the parameters the ranker was built with."""

    @classmethod
    def load(cls, path, **params):
        state = json.loads((Path(path) / "state.json").read_text())
        return cls(**{**state, **params})


class LoadsWithParamsAndDrifts(Good):
    """Takes the parameters, but a loaded ranker scores differently from the saved one."""

    @classmethod
    def load(cls, path, **params):
        return super().load(path) if not params else cls(offset=0.25)


def test_load_with_params_passes_when_load_takes_them():
    done = check_ranker(LoadsWithParams(offset=0.1), QS, params={"offset": 0.1})
    assert done[-2:] == ["save/load", "load with params"]
    done = check_stochastic_ranker(type("S", (LoadsWithParams, GoodStochastic), {})(), QS, params={"offset": 0.0})
    assert done[-1] == "load with params"


def test_load_with_params_is_checked_only_when_params_are_given():
    assert "load with params" not in check_ranker(Good(), QS)
    assert "load with params" not in check_ranker(Good(), QS, params={})


def test_load_that_takes_only_the_folder_fails_with_params():
    """A study with a checkpoint and params calls load(folder, **params): Good.load(path) cannot take them."""
    with pytest.raises(ConformanceError) as info:
        check_ranker(Good(offset=0.1), QS, params={"offset": 0.1})
    assert str(info.value) == (
        "ranker 'good' (Good) fails check 'load with params': a study with a checkpoint and params calls "
        "load(folder, offset=0.1); load must take the ranker's parameters as keyword arguments "
        "(load(cls, path, **params)); raised TypeError: Good.load() got an unexpected keyword argument 'offset'")
    assert isinstance(info.value.__cause__, TypeError)


def test_load_with_params_must_predict_what_was_saved():
    with pytest.raises(ConformanceError, match=r"fails check 'load with params': a ranker loaded with "
                                               r"load\(folder, note='\{x\}'\), the parameters it was built "
                                               r"with, must predict what the saved one did; max abs difference"):
        check_ranker(LoadsWithParamsAndDrifts(), QS, params={"note": "{x}"})  # braces shown as they are


def test_params_must_be_a_dict():
    with pytest.raises(TypeError, match=r"params must be a dict of str keys or None; got str 'offset=1'"):
        check_ranker(Good(), QS, params="offset=1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"params must be a dict of str keys or None; got dict \{1: 2\}"):
        check_stochastic_ranker(GoodStochastic(), QS, params={1: 2})  # type: ignore[dict-item]


# -- the rule for hook entries, as the kit meets it ------------------------------------------------


CALLABLE_INSTANCE_PLUGIN = """
from uncertank import hookimpl, CallableRanker


class Scorer:
    def __call__(self, **params):
        return CallableRanker(lambda c, x: [0.5] * len(x), name="scorer")


@hookimpl
def uncertank_rankers():
    return {"scorer": Scorer()}
"""


def test_load_plugin_module_refuses_a_callable_instance_entry(tmp_path):
    """A ranker entry must be a class or a function: an instance with __call__ is refused, naming it."""
    path = tmp_path / "instance_plugin.py"
    path.write_text(CALLABLE_INSTANCE_PLUGIN)
    with pytest.raises(TypeError) as info:
        load_plugin_module(path)
    assert "uncertank_rankers() entry 'scorer' must be a class or a function (a factory); got an instance of " \
           "Scorer (a callable object); register its class or a function" in str(info.value)
    assert "scorer" not in host.registry("rankers")


def test_fake_entry_point_with_a_callable_instance_entry_is_reported_and_skipped():
    module = types.ModuleType("instance_plugin_ep")
    exec(CALLABLE_INSTANCE_PLUGIN, module.__dict__)
    with pytest.warns(RuntimeWarning, match=r"uncertank plugin 'instance-plugin' \(distribution fake-dist\): "
                                              r"uncertank_rankers\(\) entry 'scorer' must be a class or a function "
                                              r".*\(entry skipped\)"), fake_entry_points(("instance-plugin", module)):
        assert "scorer" not in host.registry("rankers")
        errors = [f.error for f in host.plugin_failures() if f.plugin == "instance-plugin"]
    assert len(errors) == 1 and "entry 'scorer' must be a class or a function (a factory); got an instance of " \
                                "Scorer (a callable object)" in errors[0]


# -- clone: scikit-learn's estimator contract --------------------------------------------------------------


from uncertank.params import Parameters  # noqa: E402
from uncertank.protocols import CapabilityError, capabilities  # noqa: E402


class Cloned(Parameters):
    """Keeps the rule: each argument stored unchanged under its own name."""

    name = "cloned"

    def __init__(self, *, offset: float = 0.0, tags: tuple[str, ...] = ()) -> None:
        self.offset = offset
        self.tags = tags
        self._check_params()

    def predict(self, queries: QuerySet) -> Predictions:
        return Predictions(np.full(queries.n_pairs, 0.5 + self.offset), queries.offsets, ranker=self.name)


class CopiesItsArgument(Cloned):
    """Breaks it: the constructor stores a copy of ``tags``, so clone cannot tell it kept them."""

    def __init__(self, *, offset: float = 0.0, tags: tuple[str, ...] = ()) -> None:
        super().__init__(offset=offset, tags=tags)
        self.tags = list(tags)


class ReportsWhatItCannotTake(Cloned):
    """Breaks it: get_params reports a parameter the constructor does not take."""

    def get_params(self, deep: bool = True) -> dict[str, object]:
        return {**super().get_params(deep), "speed": 2}


def test_a_cloneable_ranker_passes_the_clone_check():
    done = check_ranker(Cloned(offset=0.1, tags=("a", "b")), QS)
    assert done[:3] == ["protocol", "clone", "predict"]
    assert "clone" not in check_ranker(Good(), QS)  # no get_params: nothing to clone


def test_every_first_party_params_ranker_keeps_the_clone_rule():
    # BM25 and the rerankers' wrapper are torch-free; the neural ones are held by tests/nn/test_clone.py
    assert "clone" in check_ranker(uncertank.make_ranker("bm25", k1=1.2, b=0.5), QS)


def test_a_constructor_that_changes_its_argument_fails_clone():
    with pytest.raises(ConformanceError, match=r"ranker 'cloned' \(CopiesItsArgument\) fails check 'clone': the "
                                               r"constructor must store each argument unchanged under its own "
                                               r"name, as sklearn\.base\.clone needs; .* for \['tags'\]"):
        check_ranker(CopiesItsArgument(tags=("a",)), QS)


def test_get_params_the_constructor_cannot_take_fails_clone():
    with pytest.raises(ConformanceError, match=r"fails check 'clone': raised TypeError: .*'speed'") as info:
        check_ranker(ReportsWhatItCannotTake(), QS)
    assert isinstance(info.value.__cause__, TypeError)


def test_the_kit_agrees_with_sklearn_clone():
    base = pytest.importorskip("sklearn.base")
    ranker = Cloned(offset=0.2, tags=("x",))
    assert base.clone(ranker).get_params() == ranker.get_params()
    with pytest.raises(RuntimeError, match="does not set or modifies parameter tags"):
        base.clone(CopiesItsArgument(tags=("a",)))


def test_get_params_without_set_params_is_half_a_capability():
    class HalfCloneable:
        name = "half"

        def predict(self, queries):  # pragma: no cover - never reached
            raise AssertionError

        def get_params(self, deep=True):
            return {}

    with pytest.raises(CapabilityError, match=r"HalfCloneable offers get_params but not set_params; "
                                              r"uncertank\.Cloneable needs get_params and set_params"):
        capabilities(HalfCloneable())
    assert capabilities(Cloned()).cloneable is not None and capabilities(Good()).cloneable is None


@pytest.mark.parametrize("fit, predict, error, message", [
    (float("nan"), 0.1, ValueError, "fit_per_query must be a finite number >= 0; got nan"),
    (0.1, float("inf"), ValueError, "predict_per_pair must be a finite number >= 0; got inf"),
    ("1", 0.1, TypeError, "fit_per_query must be a finite number >= 0; got str '1'"),
])
def test_cost_rates_refuse_what_is_no_number_of_seconds_when_built(fit, predict, error, message):
    with pytest.raises(error, match=re.escape(message)):
        uncertank.CostRates(fit, predict)
    assert uncertank.CostRates(0, 2.5) == (0, 2.5)  # a named tuple as before
