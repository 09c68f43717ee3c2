"""A study's cached steps are reused only when their bytes are those recorded when they were written.

An edited predictions file (still a valid one), an empty or corrupt one, one without its record, or an edited
model file is recomputed, with a log line that names the file; the numbers are those of the first run.
"""

from __future__ import annotations

import json
import types
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from uncertank import Predictions, hookimpl
from uncertank.cli import cli
from uncertank.datasets._cache import checksum_path, checksum_problem, write_checksum
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.experiment.result import BayesOutcome
from uncertank.experiment.systems import _read_fit
from uncertank.files import atomic_write_text
from uncertank.plugins import get_plugin_manager


def _scores(queries) -> np.ndarray:
    """Deterministic probabilities from the candidates' lengths."""
    return np.array([(len(t) % 17 + 1) / 19 for t in queries.candidates])


class Scored:
    """Scores every pair from its candidate's length: P(relevant) in (0, 1)."""

    name = "scored"
    calls = 0

    def __init__(self, *, show_progress: bool = False) -> None:
        self.show_progress = show_progress

    def predict(self, queries):
        type(self).calls += 1
        return Predictions(_scores(queries), queries.offsets, ranker="scored")


class Learner:
    """Learns one offset (the mean label), saves it as JSON; counts its fits."""

    name = "learner"
    fits = 0

    def __init__(self, *, show_progress: bool = False) -> None:
        self.offset: float | None = None

    @property
    def is_fitted(self) -> bool:
        return self.offset is not None

    def fit(self, train, valid=None):
        type(self).fits += 1
        self.offset = float(np.mean(train.labels)) / 10
        return self

    def predict(self, queries):
        return Predictions(np.clip(_scores(queries) + self.offset, 0, 1), queries.offsets, ranker="learner")

    def save(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "offset.json").write_text(json.dumps({"offset": self.offset}))

    @classmethod
    def load(cls, path):
        new = cls()
        new.offset = json.loads((Path(path) / "offset.json").read_text())["offset"]
        return new


@hookimpl
def uncertank_rankers():
    return {"scored": Scored, "learner": Learner}


@pytest.fixture(scope="module")
def dataset_cache(tmp_path_factory):
    """One dataset cache for the module, apart from the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UNCERTANK_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture
def rankers(dataset_cache):
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("integrity_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="integrity-rankers")
    yield
    get_plugin_manager(refresh=True)


def _config(*rankers: RankerConfig) -> StudyConfig:
    return StudyConfig(
        name="integrity", train_dataset="ubuntu-sample", train_negatives="random",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "random"),),
        rankers=rankers or (RankerConfig("scored"),), max_train_queries=10, max_valid_queries=10,
        max_test_queries=10, risk_grid=(0.0,), nota=False, bayes=BayesConfig(enabled=False),
    )


def _run(config: StudyConfig, out: Path) -> tuple[object, list[str]]:
    lines: list[str] = []
    return run_study(config, out, log=lines.append), lines


def _predictions(out: Path, split: str = "in-domain") -> Path:
    (path,) = (out / "predictions").glob(f"scored-{split}-*.npz")
    return path


def test_predictions_are_written_with_the_sha256_of_their_bytes(tmp_path, rankers):
    run_study(_config(), tmp_path)
    path = _predictions(tmp_path)
    record = checksum_path(path).read_text()
    import hashlib

    assert record == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"
    assert checksum_problem(path) is None


def test_an_edited_but_valid_predictions_file_is_recomputed_not_reused(tmp_path, rankers):
    first, _ = _run(_config(), tmp_path)
    path = _predictions(tmp_path)
    with np.load(path) as z:
        original = z["mean"].copy()
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["mean"] = np.full_like(arrays["mean"], 0.99)  # a valid file with other scores
    with path.open("wb") as fh:
        np.savez(fh, **arrays)
    Scored.calls = 0
    again, lines = _run(_config(), tmp_path)
    assert not again.steps["predict scored in-domain"].resumed and again.steps["predict scored valid"].resumed
    assert Scored.calls == 1
    assert (f"scored: the cached predictions {path} are not reused: its bytes differ from those recorded in "
            f"{path.name}.sha256") in "\n".join(lines)
    assert any(line.endswith("; they are recomputed") and str(path) in line for line in lines)
    assert again.evaluation("scored", "in-domain").metrics == first.evaluation("scored", "in-domain").metrics
    with np.load(path) as z:  # rewritten with the ranker's scores, and its record with it
        assert np.array_equal(z["mean"], original)
    assert checksum_problem(path) is None


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("empty", "it is empty"),
        ("garbage", "its bytes differ from those recorded"),
        ("truncated", "its bytes differ from those recorded"),
        ("no record", "no record of its SHA-256"),
        ("garbage, record rewritten", "it is not a predictions file"),
    ],
)
def test_a_damaged_predictions_file_is_recomputed_with_a_line_naming_it(tmp_path, rankers, damage, reason):
    first, _ = _run(_config(), tmp_path)
    path = _predictions(tmp_path)
    if damage == "empty":
        path.write_bytes(b"")
    elif damage.startswith("garbage"):
        path.write_bytes(b"PK\x03\x04 not a zip archive")
        if damage.endswith("rewritten"):  # a record that matches: the file itself is checked too
            write_checksum(path)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        checksum_path(path).unlink()
    again, lines = _run(_config(), tmp_path)
    assert not again.steps["predict scored in-domain"].resumed
    (line,) = [line for line in lines if "not reused" in line]
    assert line.startswith(f"scored: the cached predictions {path} are not reused: {reason}")
    assert line.endswith("; they are recomputed")
    assert again.evaluation("scored", "in-domain").metrics == first.evaluation("scored", "in-domain").metrics
    assert checksum_problem(path) is None
    third, lines = _run(_config(), tmp_path)  # and reused from now on
    assert third.steps["predict scored in-domain"].resumed and not [x for x in lines if "not reused" in x]


def test_uncertank_run_recomputes_an_empty_predictions_file_instead_of_aborting(tmp_path, rankers):
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\ntrain_dataset = "ubuntu-sample"\ntrain_negatives = "random"\nmax_train_queries = 10\n'
        'max_valid_queries = 10\nmax_test_queries = 10\nrisk_grid = [0.0]\nnota = false\n'
        '[[conditions]]\nname = "in-domain"\ndataset = "ubuntu-sample"\nnegatives = "random"\n'
        '[[rankers]]\nname = "scored"\n[bayes]\nenabled = false\n')
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["run", str(study), "--out", str(out)]).exit_code == 0
    path = _predictions(out)
    path.write_bytes(b"")
    result = CliRunner().invoke(cli, ["run", str(study), "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = "".join(result.output.split())  # the progress lines are wrapped at the terminal's width
    assert "Aborted!" not in said
    assert "".join(f"the cached predictions {path} are not reused: it is empty; they are recomputed".split()) in said


def test_an_edited_model_file_is_trained_again(tmp_path, rankers):
    config = _config(RankerConfig("learner"))
    Learner.fits = 0
    first, _ = _run(config, tmp_path)
    (folder,) = (tmp_path / "models").glob("learner-*")
    assert isinstance(json.loads((folder / "step.json").read_text())["sha256"], str)
    again, _ = _run(config, tmp_path)
    assert Learner.fits == 1 and again.steps["fit learner"].resumed
    (folder / "offset.json").write_text(json.dumps({"offset": 0.5}))  # valid, and not what was trained
    third, lines = _run(config, tmp_path)
    assert Learner.fits == 2 and not third.steps["fit learner"].resumed
    assert (f"learner: the trained model in {folder} is not reused: its files differ from those recorded in "
            "step.json") in "\n".join(lines)
    assert third.evaluation("learner", "in-domain").metrics == first.evaluation("learner", "in-domain").metrics
    assert json.loads((folder / "offset.json").read_text())["offset"] != 0.5


def test_a_model_folder_without_a_recorded_digest_is_trained_again(tmp_path, rankers):
    config = _config(RankerConfig("learner"))
    Learner.fits = 0
    _run(config, tmp_path)
    (folder,) = (tmp_path / "models").glob("learner-*")
    record = json.loads((folder / "step.json").read_text())
    del record["sha256"]  # written before the digest was recorded
    (folder / "step.json").write_text(json.dumps(record))
    again, lines = _run(config, tmp_path)
    assert Learner.fits == 2 and not again.steps["fit learner"].resumed
    assert any("its step.json records no SHA-256 of its files; it is trained again" in line for line in lines)


def test_a_bayesian_fit_is_reused_only_when_both_its_files_match_their_records(tmp_path):
    outcome = BayesOutcome(family="gaussian", n_systems=3, best_distinguishable=1, worst_distinguishable=1,
                           converged=True, diagnostics={}, ppc="bayes/gaussian-k-ppc.npz")
    path, ppc = tmp_path / "bayes" / "gaussian-k.json", tmp_path / "bayes" / "gaussian-k-ppc.npz"
    atomic_write_text(path, json.dumps({"outcome": asdict(outcome), "seconds": 2.5}))
    write_checksum(path)
    ppc.write_bytes(b"curves")
    write_checksum(ppc)
    assert _read_fit(tmp_path, path, outcome.ppc) == (outcome, 2.5)
    ppc.write_bytes(b"other curves")
    assert _read_fit(tmp_path, path, outcome.ppc) == (
        f"{ppc}: its bytes differ from those recorded in {ppc.name}.sha256 (SHA-256 "
        f"{__import__('hashlib').sha256(b'other curves').hexdigest()[:12]}... instead of "
        f"{__import__('hashlib').sha256(b'curves').hexdigest()[:12]}...)")
    ppc.unlink()
    assert _read_fit(tmp_path, path, outcome.ppc) == f"{ppc}: it is missing"
    ppc.write_bytes(b"curves")
    path.write_text(path.read_text().replace('"n_systems": 3', '"n_systems": 4'))
    assert str(_read_fit(tmp_path, path, outcome.ppc)).startswith(f"{path}: its bytes differ from those recorded")
