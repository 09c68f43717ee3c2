"""Run a study in stages: load, fit or load, predict, measure, decide, guarantee, test, report.

Each stage is a function of this module (or of the module named) returning a
typed result of its own; no stage edits what an earlier one returned, and
:func:`run_study` orders them. A stage takes its section of the study
(:meth:`StudyConfig.section <uncertank.experiment.config.StudyConfig.section>`:
``DataSettings``, ``RankerSettings``, ``MeasureSettings``, ...), never the
whole config, and what the stages before it returned:

1. :func:`load_data`: the training, validation and test query sets (built and
   cached by :mod:`uncertank.datasets`), each with a digest of its content.
2. :func:`fit_rankers`: every ranker trained (or loaded from ``models/``, or
   from the ``checkpoint`` folder its config names: a model trained
   elsewhere, keyed by the digest of its files).
3. :func:`predict_all`: predictions (mean and, for stochastic rankers, joint
   samples) on validation and every test condition (or loaded from
   ``predictions/``).
4. :func:`measure`: every metric named by the study (through the metrics
   registry), calibration after every recalibrator, reliability curves with
   the signed bias and a minimum-count MCE, ECE against the imbalance ratio.
5. :func:`decide`: what the uncertainty is worth: risk-aware reranking, NOTA,
   selective prediction (:class:`Decision` per ranker and condition).
6. :func:`~uncertank.experiment.guarantees.guarantees`: thresholds with a
   guarantee (``[conformal]``): conformal sets and abstention calibrated on
   the validation queries and measured under every condition.
7. :func:`~uncertank.experiment.analysis.significance`: the paired t-tests
   and their Holm correction, for every cell the report marks; then
   :func:`~uncertank.experiment.table.study_paper_table`: the rankers on the
   in-domain condition as a paper's table (``[report]``), from the
   per-query values and predictions already made.
8. :func:`~uncertank.experiment.report.write_report`: ``results.json``, then
   ``report.md``, ``report.html``, ``table.tex`` and the figures drawn from
   that file (and the curve data stored beside it) alone, as ``uncertank
   report DIR`` does.

Every cached step (a trained model, the predictions of one ranker on one
split, a Bayesian fit) is keyed by a digest of everything it depends on: the
ranker's name and parameters, the content of its data (not the path), the key
of the step before it, and the versions of uncertank and of the plugin. A
changed input recomputes that step and the steps after it, nothing else; a
step's cost is that of the run that computed it, kept on resume. Every file is
written atomically (a temporary file, then a rename).

What a cached step holds is checked before it is reused: the SHA-256 of its
bytes is recorded when it is written (``<file>.sha256`` beside a predictions
or Bayesian file, ``step.json`` for a model's files), and a file that is
missing, empty, corrupt, or whose bytes differ from the record (edited, even
into another valid file) is recomputed, with a log line naming it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank import Predictions, PredictiveSamples, QuerySet, __version__
from uncertank._folders import MANIFEST, STUDY_RECORD, model_folder
from uncertank.datasets._cache import checksum_problem, write_checksum
from uncertank.experiment.building import build_ranker, load_saved_ranker, warm_start
from uncertank.experiment.config import (
    ComparisonSettings,
    DataSettings,
    DecisionSettings,
    GuaranteeSettings,
    MeasureSettings,
    RankerConfig,
    RankerSettings,
    StudyConfig,
    StudyConfigError,
    TableSettings,
)
from uncertank.experiment.decisions import decide, with_decisions
from uncertank.experiment.guarantees import guarantees, with_guarantees
from uncertank.experiment.logfile import LOG_FILE, run_log
from uncertank.experiment.plan import StudyPlan, plan_sections
from uncertank.experiment.preflight import SAVE_TO_REMEDY, check_output_folder, validate_config
from uncertank.experiment.result import (
    BayesOutcome,
    CalibrationDetail,
    Curve,
    Evaluation,
    StepInfo,
    StudyResult,
)
from uncertank.experiment.stages import (
    LoadOptions,
    RankerPrediction,
    StudyData,
    digest,
    file_stem,
    fit_key,
    unfitted_key,
)
from uncertank.files import (
    atomic_path,
    atomic_write_text,
    bytes_digest,
    current_umask,
    file_digest,
    temporary_folder,
    to_jsonable,
)
from uncertank.progress import machine_load, reporting
from uncertank.protocols import Capabilities, Ranker, capabilities
from uncertank.validation import check_bool, check_callable, check_instance, check_path

__all__ = [
    "MCE_MIN_COUNT",
    "measure",
    "fit_rankers",
    "load_data",
    "predict_all",
    "plan_study",
    "run_study",
]

Log = Callable[[str], None]
_T = TypeVar("_T")

if TYPE_CHECKING:
    from uncertank.metrics.calibration import ReliabilityCurve


class _Recalibration(Protocol):
    """What a study uses of a fitted recalibrator (``uncertank_recalibrators``): its map of scores to probabilities."""

    def transform(self, scores: NDArray[np.float64], /) -> ArrayLike:
        """Calibrated probabilities of ``scores``."""
        ...


class _PredictionArrays(TypedDict, total=False):
    """What a cached prediction file (``predictions/*.npz``) holds."""

    mean: NDArray[np.float64]
    stochastic: bool
    probabilistic: bool
    seconds: float
    samples: NDArray[np.float64]

#: The fewest pairs a reliability bin needs to count in the study's MCE
#: (:attr:`~uncertank.experiment.result.CalibrationDetail.mce`): the gap of a
#: bin of a few pairs is noise (one pair gives a gap of up to 1).
MCE_MIN_COUNT = 30


def _quiet(msg: str) -> None:
    """Discard a progress line."""


# -- stage 0 (validate_config) is uncertank.experiment.preflight ------------------------------------------------


# -- stage 1: data ---------------------------------------------------------------------------------------------------


def _load(name: str, split: str, negatives: str, cap: int | None, settings: DataSettings) -> QuerySet:
    from uncertank.datasets import load

    options: LoadOptions = {}
    if cap is not None:
        options["max_queries"] = cap  # a seeded subset, drawn before the negatives are sampled
    if settings.max_context_turns is not None:
        options["max_context_turns"] = settings.max_context_turns
    return load(name, split=split, negatives=negatives, n_candidates=settings.n_candidates, seed=settings.seed,
                **options)


def load_data(settings: DataSettings, log: Log = _quiet) -> StudyData:
    """Stage 1: load (building and caching on first use) every query set the study's ``settings`` name."""
    check_instance(settings, "settings", (DataSettings, StudyConfig), "a DataSettings or a StudyConfig")
    check_callable(log, "log", "a function of one str")
    log(f"data: {settings.train_dataset} train/valid with {settings.train_negatives} negatives")
    with reporting(log, prefix="data: ", heartbeat=True):  # building a cache (embedding negatives) can take minutes
        train = _load(settings.train_dataset, "train", settings.train_negatives, settings.max_train_queries, settings)
        valid = _load(settings.train_dataset, "valid", settings.train_negatives, settings.max_valid_queries, settings)
        tests: dict[str, QuerySet] = {}
        for cond in settings.conditions:
            log(f"data: condition {cond.name!r} = {cond.dataset} test with {cond.negatives} negatives")
            tests[cond.name] = _load(cond.dataset, "test", cond.negatives, settings.max_test_queries, settings)
    digests = {"train": train.digest(), "valid": valid.digest(), **{k: v.digest() for k, v in tests.items()}}
    return StudyData(train, valid, tests, digests)


# -- stage 2: fit or load --------------------------------------------------------------------------------------------


def _estimated(estimates: Mapping[str, float] | None, step: str) -> str:
    """``"; about 12 min by the estimate"`` for a step with an estimate, else ``""``."""
    from uncertank.progress import format_duration

    seconds = (estimates or {}).get(step)
    return "" if seconds is None else f"; about {format_duration(seconds)} by the estimate"


def _against(estimates: Mapping[str, float] | None, step: str) -> str:
    """``" (estimated 12 min 00 s)"`` after a step's seconds, for a step with an estimate, else ``""``."""
    from uncertank.progress import format_duration

    seconds = (estimates or {}).get(step)
    return "" if seconds is None else f" (estimated {format_duration(seconds)})"


def _say_load(log: Log, label: str) -> None:
    """Log, before a long step, that the machine is busy (so a slow step is named, not mysterious)."""
    busy = machine_load()
    if busy is not None:
        log(f"{label}: {busy}")


def _read_seconds(folder: Path) -> float:
    try:
        return float(json.loads((folder / "step.json").read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return float("nan")


#: A model folder's own marks, left out of the digest of its files.
_STEP_FILES = frozenset({"step.json", ".complete"})


def _model_files_digest(folder: Path) -> str:
    """SHA-256 over a model folder's files (relative path and bytes' digest), its step record and mark left out."""
    files = sorted(f for f in folder.rglob("*") if f.is_file() and f.relative_to(folder).as_posix() not in _STEP_FILES)
    return bytes_digest(f"{f.relative_to(folder).as_posix()}\0{file_digest(f)}\n".encode() for f in files)


def _model_problem(folder: Path, key: str) -> str | None:
    """Why the trained model in ``folder`` cannot be reused; None when its files are those ``step.json`` records."""
    try:
        record = json.loads((folder / "step.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"its step.json cannot be read ({type(exc).__name__})"
    if not isinstance(record, dict) or record.get("key") != key:
        return "its step.json records another key"
    expected = record.get("sha256")
    if not isinstance(expected, str):
        return "its step.json records no SHA-256 of its files"
    try:
        actual = _model_files_digest(folder)
    except OSError as exc:
        return f"its files cannot be read ({type(exc).__name__}: {exc})"
    if actual != expected:
        return (f"its files differ from those recorded in step.json (SHA-256 {actual[:12]}... instead of "
                f"{expected[:12]}...)")
    return None


SAVED_BY = STUDY_RECORD


def _save_to(rc: RankerConfig, folder: Path, key: str, log: Log) -> None:
    """Copy the model folder of a trained ranker to its ``save_to`` (unless that already holds ``key``).

    The copy is a checkpoint as the ranker's ``save`` wrote it, plus
    ``uncertank-study.json`` (the step's key, the ranker's label and the
    entries written). A new folder is written beside its target and renamed
    into place; in an existing one only the model's own entries are
    replaced, the manifest and the record last, and a user's files are left as they are
    (:func:`uncertank._folders.model_folder`). A folder holding files
    uncertank did not write is refused unless the ranker sets ``overwrite``
    (:func:`validate_config` checks that before any work).
    """
    if rc.save_to is None:
        return
    target = Path(rc.save_to)
    try:
        if json.loads((target / SAVED_BY).read_text())["key"] == key:
            return
    except (OSError, ValueError, KeyError, TypeError):
        pass
    last = (MANIFEST, SAVED_BY)  # a reader never finds them over a half-replaced model
    with model_folder(target, overwrite=rc.overwrite, last=last, remedy=SAVE_TO_REMEDY) as tmp:
        shutil.copytree(folder, tmp, ignore=shutil.ignore_patterns(".complete", "step.json"), dirs_exist_ok=True)
        files = sorted({*os.listdir(tmp), SAVED_BY})
        record = {"key": key, "label": rc.key, "ranker": rc.name, "files": files}
        atomic_write_text(tmp / SAVED_BY, json.dumps(record, indent=2) + "\n")
    log(f"{rc.key}: saved to {target}")


def _training_queries(caps: Capabilities, n_queries: int) -> str:
    """What the log says a ranker trains on: the train split, or the seeded subset it declares (TrainingLimited)."""
    cap = caps.max_train_queries
    if cap is not None and cap < n_queries:
        return f"{cap} of the {n_queries} training queries (max_train_queries)"
    return f"{n_queries} queries"


def _linked_record(folder: Path) -> dict[str, object] | None:
    """The record of a model that was not copied (``step.json`` with ``source`` or ``init_from``); else None."""
    try:
        record = json.loads((folder / "step.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and ("source" in record or "init_from" in record) else None


def _write_warm_link(folder: Path, rc: RankerConfig, key: str, seconds: float) -> None:
    """Record in ``folder`` that the model of ``key`` is ``rc.init_from``'s, taken as it is (no file copied).

    A ranker started from a trained one that needs no training of its own
    (MC dropout on ``bert``'s weights) is rebuilt from that ranker on
    resume; the key holds the upstream's key, so a retrained upstream has
    another key.
    """
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    atomic_write_text(tmp / "step.json", json.dumps({"key": key, "seconds": seconds, "init_from": rc.init_from}))
    (tmp / ".complete").write_text("ok\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


def _link_problem(record: Mapping[str, object], key: str) -> str | None:
    """Why a record of a model's source folder does not stand for the model of ``key``; None when it does.

    The key holds the digest of the source's files (:func:`~uncertank.experiment.stages.fit_key`), so
    a source edited since the record was written has another key.
    """
    if record.get("key") != key:
        return "its step.json records another key"
    if not isinstance(record.get("source"), list) or not isinstance(record.get("source_sha256"), list):
        return "its step.json records no source folder and digest"
    return None


def _write_link(folder: Path, rc: RankerConfig, key: str, seconds: float) -> None:
    """Record in ``folder`` that the model of ``key`` is the ``pretrained`` folder(s) of ``rc``, as they are.

    ``step.json`` holds the key, the seconds, each source folder and the
    SHA-256 of its files (:func:`uncertank.files.folder_digest`); no file is
    copied. A model folder written by an earlier run under the same name is
    replaced by the record.
    """
    from uncertank.files import folder_digest

    sources = [rc.pretrained] if isinstance(rc.pretrained, str) else list(rc.pretrained or [])
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    record = {"key": key, "seconds": seconds, "source": [str(Path(f).resolve()) for f in sources],
              "source_sha256": [folder_digest(f) for f in sources]}
    atomic_write_text(tmp / "step.json", json.dumps(record))
    (tmp / ".complete").write_text("ok\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


def _save_unsaved_to(rc: RankerConfig, built: Capabilities, out: Path, key: str, log: Log) -> None:
    """``save_to`` for a ranker used from its source folder: saved to a temporary folder, copied, removed."""
    if rc.save_to is None:
        return
    if built.saveable is None:  # the study's check refuses save_to for such a ranker
        raise TypeError(f"{rc.key}: save_to needs a ranker that offers save (uncertank.Saveable)")
    try:
        if json.loads((Path(rc.save_to) / SAVED_BY).read_text())["key"] == key:
            return
    except (OSError, ValueError, KeyError, TypeError):
        pass
    work = temporary_folder(prefix=f".{file_stem(rc.key)}-", dir=out / "models")
    try:
        built.saveable.save(work / "model")
        _save_to(rc, work / "model", key, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fit_rankers(
    settings: RankerSettings, data: StudyData, out: Path, *, resume: bool = True, log: Log = _quiet,
    estimates: Mapping[str, float] | None = None,
) -> tuple[dict[str, Ranker], dict[str, StepInfo]]:
    """Stage 2: train every ranker of ``settings`` (or load it from ``out/models``) on the query sets of stage 1.

    ``estimates`` (step name -> seconds, e.g. from
    :func:`plan_study`) go into the line that
    starts a training step.

    A ranker trained here is saved under ``out/models/<label>-<key>``. One
    built from the user's ``pretrained`` folder that needs no training (a
    fine-tuned cross-encoder used as it is) is not copied there: its
    ``step.json`` records the source folder and the SHA-256 of its files
    (which the key holds too), and a resumed study builds it from the
    source again. So is one started from a trained ranker (``init_from``)
    that needs no training of its own (MC dropout on ``bert``'s weights):
    its ``step.json`` names the upstream, and a resumed study starts it
    from that ranker again.

    Returns
    -------
    rankers : dict
        Ranker label -> ranker, ready to predict.
    steps : dict
        ``"fit <label>"`` (or ``"load <label>"`` for a ranker loaded from its
        ``checkpoint``) -> :class:`StepInfo`; rankers without ``fit`` have none.
    """
    check_instance(settings, "settings", (RankerSettings, StudyConfig), "a RankerSettings or a StudyConfig")
    check_instance(data, "data", StudyData)
    out = check_path(out, "out")
    check_bool(resume, "resume")
    check_callable(log, "log", "a function of one str")
    if estimates is not None:
        check_instance(estimates, "estimates", Mapping, "a mapping of seconds by key")
    rankers: dict[str, Ranker] = {}
    keys: dict[str, str] = {}
    steps: dict[str, StepInfo] = {}
    for rc in settings.rankers:
        # Building a ranker is cheap (models load lazily); its class gives fit, load and from_ranker.
        built = build_ranker(rc)
        upstream = keys.get(rc.init_from) if rc.init_from else None
        key = fit_key(rc, data, upstream)
        keys[rc.key] = key
        folder = out / "models" / f"{file_stem(rc.key)}-{key}"
        if rc.checkpoint is not None:
            t0 = time.perf_counter()
            log(f"{rc.key}: loading the checkpoint {rc.checkpoint}")
            rankers[rc.key] = load_saved_ranker(rc, built, Path(rc.checkpoint), rc.params).ranker
            steps[f"load {rc.key}"] = StepInfo(key, time.perf_counter() - t0)
            continue
        if built.trainable is None:
            rankers[rc.key] = built.ranker
            continue
        linked = _linked_record(folder) if resume and (folder / ".complete").exists() else None
        if linked is not None and "init_from" in linked:  # rebuilt from the upstream ranker, as it was
            warm = warm_start(rc, built, rankers[rc.init_from]) \
                if linked.get("key") == key and rc.init_from in rankers else None
            if warm is not None and warm.trainable is not None and warm.trainable.is_fitted:
                log(f"{rc.key}: built from the trained {rc.init_from} again, as {folder}/step.json records "
                    "(not copied)")
                rankers[rc.key] = warm.ranker
                steps[f"fit {rc.key}"] = StepInfo(key, _read_seconds(folder), resumed=True)
                _save_unsaved_to(rc, warm, out, key, log)
                continue
            log(f"{rc.key}: the record in {folder} is not reused; it is built again")
        elif linked is not None:
            problem = _link_problem(linked, key)
            if problem is None and built.trainable.is_fitted:
                log(f"{rc.key}: using its pretrained folder as it is, as {folder}/step.json records (not copied)")
                rankers[rc.key] = built.ranker
                steps[f"fit {rc.key}"] = StepInfo(key, _read_seconds(folder), resumed=True)
                _save_unsaved_to(rc, built, out, key, log)
                continue
            log(f"{rc.key}: the record in {folder} is not reused: {problem or 'the model is not fitted'}; "
                "it is built again")
        elif resume and (folder / ".complete").exists() and built.saveable is not None:
            problem = _model_problem(folder, key)
            if problem is None:
                log(f"{rc.key}: loading the trained model from {folder}")
                rankers[rc.key] = load_saved_ranker(rc, built, folder).ranker
                steps[f"fit {rc.key}"] = StepInfo(key, _read_seconds(folder), resumed=True)
                _save_to(rc, folder, key, log)
                continue
            log(f"{rc.key}: the trained model in {folder} is not reused: {problem}; it is trained again")
        t0 = time.perf_counter()
        if rc.init_from is not None:
            log(f"{rc.key}: starting from the trained {rc.init_from}")
            built = warm_start(rc, built, rankers[rc.init_from])
        trainable = built.trainable
        assert trainable is not None  # build_ranker's and warm_start's record say so
        trained = not trainable.is_fitted
        if trained:
            log(f"{rc.key}: training on {_training_queries(built, data.train.n_queries)}"
                f"{_estimated(estimates, f'fit {rc.key}')}")
            _say_load(log, rc.key)
            with reporting(log, prefix=f"{rc.key}: ", heartbeat=True):  # a line every 20 s while it trains
                trainable.fit(data.train, data.valid)
        seconds = time.perf_counter() - t0
        log(f"{rc.key}: ready in {seconds:.1f} s{_against(estimates, f'fit {rc.key}') if trained else ''}")
        if not trained and rc.pretrained is not None:  # the user's folder as it is: recorded, not copied
            _write_link(folder, rc, key, seconds)
            _save_unsaved_to(rc, built, out, key, log)
        elif not trained and rc.init_from is not None:  # the upstream's weights as they are: recorded, not copied
            _write_warm_link(folder, rc, key, seconds)
            _save_unsaved_to(rc, built, out, key, log)
        elif built.saveable is not None:
            tmp = folder.with_name(folder.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            built.saveable.save(tmp)
            os.chmod(tmp, 0o777 & ~current_umask())  # a plugin's save may make it private (tempfile.mkdtemp)
            record = {"key": key, "seconds": seconds, "sha256": _model_files_digest(tmp)}
            atomic_write_text(tmp / "step.json", json.dumps(record))
            (tmp / ".complete").write_text("ok\n")
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(tmp, folder)
            _save_to(rc, folder, key, log)
        rankers[rc.key] = built.ranker
        steps[f"fit {rc.key}"] = StepInfo(key, seconds, estimated_seconds=(estimates or {}).get(f"fit {rc.key}")
                                          if trained else None)
    return rankers, steps


# -- stage 3: predict ------------------------------------------------------------------------------------------------


def _predict_one(ranker: Ranker, label: str) -> Callable[[QuerySet, str], RankerPrediction]:
    """Score a query set and check the output at once (before anything is cached), naming ranker and split.

    A :class:`~uncertank.protocols.StochasticRanker` is asked for samples, and
    its :class:`~uncertank.protocols.Probabilistic` flag, where it has one,
    tells their kind; any other ranker for its scores.
    """
    from uncertank.validation import InvalidPredictionError, check_prediction

    def call(method: str, fn: Callable[[QuerySet], _T], qs: QuerySet, split: str) -> _T:
        try:
            return fn(qs)
        except ValueError as err:  # e.g. the output types refusing NaN or a score outside [0, 1]
            said = " ".join(str(err).split())
            raise InvalidPredictionError(label, split, f"{method} raised {type(err).__name__}: {said}") from err

    caps = capabilities(ranker)

    def run(qs: QuerySet, split: str) -> RankerPrediction:
        if caps.stochastic is not None:
            flag = caps.probabilistic
            drawn = call("predict_samples", caps.stochastic.predict_samples, qs, split)
            ps = check_prediction(drawn, qs, ranker=label, condition=split, samples=True, probabilistic=flag)
            assert isinstance(ps, PredictiveSamples)
            mean = ps.mean()
            prob = bool(((mean >= 0) & (mean <= 1)).all()) if flag is None else bool(flag)
            return RankerPrediction(mean, ps, prob)
        pred = check_prediction(call("predict", ranker.predict, qs, split), qs, ranker=label, condition=split)
        assert isinstance(pred, Predictions)
        return RankerPrediction(pred.scores, None, bool(pred.probabilistic))

    return run


def _read_prediction(path: Path, qs: QuerySet, label: str) -> tuple[RankerPrediction, float] | str:
    """The cached prediction in ``path`` and its seconds, or why it cannot be reused (a sentence).

    Its bytes must be those recorded in ``<path>.sha256`` when it was written,
    and its arrays those of a prediction on ``qs``.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"it cannot be read ({type(exc).__name__}: {exc})"
    if not data:
        return "it is empty"
    problem = checksum_problem(path, data)
    if problem is not None:
        return problem
    try:
        with np.load(io.BytesIO(data)) as z:
            mean = np.asarray(z["mean"], dtype=np.float64)
            stochastic, probabilistic, seconds = bool(z["stochastic"]), bool(z["probabilistic"]), float(z["seconds"])
            raw = np.asarray(z["samples"], dtype=np.float64) if stochastic else None
    except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        return f"it is not a predictions file ({type(exc).__name__}: {' '.join(str(exc).split())})"
    if mean.shape != (qs.n_pairs,) or (raw is not None and (raw.ndim != 2 or raw.shape[1] != qs.n_pairs)):
        got = mean.shape if raw is None or mean.shape != (qs.n_pairs,) else raw.shape
        return f"its scores have shape {got}; the query set has {qs.n_pairs} pairs"
    samples = None if raw is None else PredictiveSamples(raw, qs.offsets, ranker=label)
    return RankerPrediction(mean, samples, probabilistic), seconds


def predict_all(
    settings: RankerSettings,
    data: StudyData,
    rankers: dict[str, Ranker],
    fit_steps: dict[str, StepInfo],
    out: Path,
    *,
    resume: bool = True,
    log: Log = _quiet,
    estimates: Mapping[str, float] | None = None,
) -> tuple[dict[tuple[str, str], RankerPrediction], dict[str, StepInfo]]:
    """Stage 3: predictions of every ranker of ``settings`` on ``"valid"`` and every condition (or loaded).

    ``rankers`` and ``fit_steps`` are what :func:`fit_rankers` returned.

    ``estimates`` as :func:`fit_rankers`'s: a step estimated at 30 s or
    more gets a line when it starts.

    Returns
    -------
    predictions : dict
        ``(ranker label, split)`` -> :class:`RankerPrediction`, split being ``"valid"``
        or a condition name.
    steps : dict
        ``"predict <label> <split>"`` -> :class:`StepInfo`.
    """
    check_instance(settings, "settings", (RankerSettings, StudyConfig), "a RankerSettings or a StudyConfig")
    check_instance(data, "data", StudyData)
    check_instance(rankers, "rankers", dict, "a dict of rankers by label")
    check_instance(fit_steps, "fit_steps", dict, "a dict of StepInfo by label")
    out = check_path(out, "out")
    check_bool(resume, "resume")
    check_callable(log, "log", "a function of one str")
    if estimates is not None:
        check_instance(estimates, "estimates", Mapping, "a mapping of seconds by key")
    preds: dict[tuple[str, str], RankerPrediction] = {}
    steps: dict[str, StepInfo] = {}
    sets = {"valid": data.valid, **data.tests}
    for rc in settings.rankers:
        step = fit_steps.get(f"fit {rc.key}") or fit_steps.get(f"load {rc.key}")
        upstream = step.key if step is not None else unfitted_key(rc)
        run = _predict_one(rankers[rc.key], rc.key)
        for split, qs in sets.items():
            key = digest([upstream, data.digests[split]])
            path = out / "predictions" / f"{file_stem(rc.key)}-{file_stem(split)}-{key}.npz"
            if resume and path.exists():
                cached = _read_prediction(path, qs, rc.key)
                if not isinstance(cached, str):
                    preds[(rc.key, split)], seconds = cached
                    steps[f"predict {rc.key} {split}"] = StepInfo(key, seconds, resumed=True)
                    continue
                log(f"{rc.key}: the cached predictions {path} are not reused: {cached}; they are recomputed")
            t0 = time.perf_counter()
            name = f"predict {rc.key} {split}"
            if (estimates or {}).get(name, 0.0) >= 30.0:
                log(f"{rc.key}: scoring {qs.n_pairs} pairs ({split}){_estimated(estimates, name)}")
            with reporting(log, prefix=f"{rc.key}: scoring {split}: ", label=rc.key, heartbeat=True):
                pred = run(qs, split)
            seconds = time.perf_counter() - t0
            log(f"{rc.key}: scored {qs.n_pairs} pairs ({split}) in {seconds:.1f} s{_against(estimates, name)}")
            arrays: _PredictionArrays = {"mean": pred.mean, "stochastic": pred.samples is not None,
                                          "probabilistic": pred.probabilistic, "seconds": seconds}
            if pred.samples is not None:
                arrays["samples"] = pred.samples.samples
            buffer = io.BytesIO()
            np.savez(buffer, **arrays)
            with atomic_path(path) as tmp:
                tmp.write_bytes(buffer.getvalue())
            write_checksum(path, buffer.getvalue())  # after the file: a file without its record is recomputed
            preds[(rc.key, split)] = pred
            steps[name] = StepInfo(key, seconds, estimated_seconds=(estimates or {}).get(name))
    return preds, steps


# -- stage 4: measure ------------------------------------------------------------------------------------------------


def _calibration_detail(curve: ReliabilityCurve, probs: np.ndarray, labels: np.ndarray) -> CalibrationDetail:
    """Signed bias, over-estimating bins and the MCE with and without :data:`MCE_MIN_COUNT` (uniform bins)."""
    filled = curve.counts > 0
    conf = curve.mean_confidence[filled]
    frac = curve.fraction_relevant[filled]
    counts = curve.counts[filled]
    gaps = np.abs(conf - frac)
    trusted = gaps[counts >= MCE_MIN_COUNT]
    return CalibrationDetail(
        bias=float(np.mean(probs) - np.mean(labels > 0)),
        over_bins=int(np.sum(conf > frac)), filled_bins=int(filled.sum()),
        mce_all=float(gaps.max()) if gaps.size else 0.0, mce_min_count=MCE_MIN_COUNT,
        mce=float(trusted.max()) if trusted.size else None,
    )


def measure(
    settings: MeasureSettings, data: StudyData, preds: dict[tuple[str, str], RankerPrediction]
) -> tuple[list[Evaluation], dict[str, dict[str, object]]]:
    """Stage 4: every metric of the study, recalibration, reliability and imbalance, per ranker and condition.

    Reads ``settings`` (the study's rankers, conditions, metrics,
    recalibrators, ``n_bins`` and seed), the query sets of stage 1 and the
    predictions of stage 3.

    Returns
    -------
    evaluations : list of Evaluation
        One per ranker and condition, without the outcomes of :func:`decide`
        (``risk``, ``nota`` and ``selective`` are None).
    metric_info : dict
        Metric label -> ``{"kind", "higher_is_better", "needs_probabilities", "name", "options"}``.
    """
    from uncertank import metrics as M
    from uncertank.metrics import resolve_metrics
    from uncertank.plugins import get_factory, registry

    check_instance(settings, "settings", (MeasureSettings, StudyConfig), "a MeasureSettings or a StudyConfig")
    check_instance(data, "data", StudyData)
    check_instance(preds, "preds", dict, "a dict of RankerPrediction by (ranker, condition)")

    bound = resolve_metrics(settings.metric_entries())
    info = {m.display_label: {"kind": m.kind, "higher_is_better": m.higher_is_better,
                              "needs_probabilities": m.needs_probabilities, "name": m.name,
                              "options": to_jsonable(dict(m.options))} for m in bound}
    recal_names = (list(settings.recalibrators) if settings.recalibrators is not None
                   else sorted(registry("recalibrators")))
    out: list[Evaluation] = []
    valid_labels = data.valid.labels
    for rc in settings.rankers:
        valid_pred = preds[(rc.key, "valid")]
        fitted: dict[str, _Recalibration] = {}
        if valid_pred.probabilistic and valid_labels is not None:
            for name in recal_names:
                fitted[name] = get_factory("recalibrators", name)().fit(valid_pred.mean, valid_labels)
        for cond in settings.conditions:
            qs = data.tests[cond.name]
            pred = preds[(rc.key, cond.name)]
            ranked = qs.ranked(pred.mean)
            values: dict[str, float] = {}
            per_query: dict[str, list[float]] = {}
            for m in bound:
                if m.needs_probabilities and not pred.probabilistic:
                    continue
                values[m.display_label] = float(m(ranked))
                if m.kind == "ranking":
                    per_query[m.display_label] = np.asarray(m(ranked, per_query=True), dtype=float).tolist()
            recalibrated: dict[str, dict[str, float]] = {}
            reliability = imbalance = detail = None
            if pred.probabilistic:
                for name, rec in fitted.items():
                    cal = qs.ranked(np.clip(rec.transform(pred.mean), 0.0, 1.0))
                    recalibrated[name] = {m.display_label: float(m(cal)) for m in bound if m.kind == "calibration"}
                curve = M.reliability_curve(ranked, n_bins=settings.n_bins)
                filled = curve.counts > 0
                reliability = Curve(curve.mean_confidence[filled].tolist(), curve.fraction_relevant[filled].tolist(),
                                    [int(c) for c in curve.counts[filled]])
                if qs.labels is not None:
                    detail = _calibration_detail(curve, pred.mean, qs.labels)
                sweep = M.imbalance_sweep(ranked, n_bins=settings.n_bins, seed=settings.seed)
                imbalance = {int(k): float(v) for k, v in zip(sweep.n_negatives, sweep.ece, strict=True)}
            out.append(Evaluation(
                ranker=rc.key, condition=cond.name, probabilistic=pred.probabilistic,
                stochastic=pred.samples is not None, metrics=values, per_query=per_query, recalibrated=recalibrated,
                reliability=reliability, imbalance=imbalance,
                mean_std=None if pred.samples is None else float(np.sqrt(pred.samples.var()).mean()),
                calibration=detail,
            ))
    return out, info


# -- stage 5 (decide) is uncertank.experiment.decisions ----------------------------------------------------------------


# -- the whole study -------------------------------------------------------------------------------------------------


def plan_study(config: StudyConfig, out_dir: str | os.PathLike[str], *, resume: bool = True,
               force: bool = False, calibrate: bool = True) -> StudyPlan:
    """What ``run_study(config, out_dir)`` would train, score and reuse, and an estimate of its cost.

    The dry run (``uncertank run --dry-run``): the checks :func:`run_study`
    makes at the door, then :func:`uncertank.experiment.plan.plan_sections`
    on the study's sections. Nothing is trained and no ranker's model is
    loaded.

    Parameters
    ----------
    config : StudyConfig
    out_dir : path
        The output folder the run would write into (it is only read).
    resume : bool
        False: every step counts as to be run, as with ``--no-resume``.
    force : bool
        As ``run_study``'s: accept a folder holding another study's results.
    calibrate : bool
        True: when a step would be estimated by a neural ranker's rates, run
        the speed probe (:func:`~uncertank.experiment.speed.probe_machine`, a
        few seconds) and scale those rates by its factors. False: the
        reference machine's rates as they are.

    Raises
    ------
    StudyConfigError
        What the run would refuse at the door, the same lines.
    """
    validate_config(config)
    check_bool(force, "force")
    refused = check_output_folder(out_dir, study=config.name, force=force)
    if refused:
        raise StudyConfigError(refused)
    return plan_sections(config.name, config.section(DataSettings), config.section(RankerSettings),
                         config.section(ComparisonSettings), out_dir, resume=resume, calibrate=calibrate)


def run_study(
    config: StudyConfig,
    out_dir: str | os.PathLike[str],
    *,
    resume: bool = True,
    log: Log | None = None,
    smoke: bool = False,
    force: bool = False,
    estimates: Mapping[str, float] | None = None,
) -> StudyResult:
    """Run ``config`` stage by stage and write its report into ``out_dir``.

    Parameters
    ----------
    config : StudyConfig
        What to run (see :func:`uncertank.experiment.demo_config`); checked
        once against the installed plugins
        (:func:`~uncertank.experiment.preflight.validate_config`) before any work.
    out_dir : path
        The report folder: ``results.json``, ``report.md``, ``report.html``, ``table.tex``,
        ``figures/*.png``, plus ``models/``, ``predictions/`` and ``bayes/``
        for resuming (``bayes/`` also holds the posterior predictive curves
        the report draws). It must take new files, and must not hold
        another study's results (a ``results.json`` whose ``config.name``
        is not ``config.name``), both checked before any work
        (:func:`~uncertank.experiment.preflight.check_output_folder`).
    resume : bool
        Reuse finished steps found in ``out_dir`` whose keys match, and
        whose files are those recorded when they were written.
    log : callable, optional
        Receives one line per step (progress) and, at the end, one line
        counting what went to ``run.log``; silent when None.
    smoke : bool
        Mark the report as a smoke run whose numbers are not evidence.
    force : bool
        Run even when ``out_dir`` holds another study's results: its
        ``results.json``, report and figures are replaced (its cached steps
        stay, reused only where their keys match).
    estimates : mapping, optional
        Step name (``"fit bert"``, ``"predict bert in-domain"``) -> its
        estimated seconds, said when the step starts (``uncertank run`` and
        ``demo`` pass those of :func:`plan_study`).

    Returns
    -------
    StudyResult
        Also written to ``results.json`` (``StudyResult.to_dict()``).

    Notes
    -----
    While the stages run, the console keeps only the progress lines given
    to ``log`` (and uncertank's own output): Python warnings, other
    libraries' log records and their output (PyMC's sampler,
    transformers' ``Loading weights`` bar) are written to
    ``out_dir/run.log``, one timestamped line each, with every progress
    line; ``log`` then gets one line counting them
    (:func:`uncertank.experiment.logfile.run_log`). A resumed run appends
    to the file. Warnings raised before the stages (by the checks) are
    not redirected.

    Raises
    ------
    StudyConfigError
        Before any work: what :func:`validate_config` refuses, an
        ``out_dir`` that cannot be written, or one that holds another
        study's results (without ``force``).
    """
    validate_config(config)
    # before any work too: a run never fails writing its first step, nor overwrites another study unasked
    refused = check_output_folder(out_dir, study=config.name, force=force)
    if refused:
        raise StudyConfigError(refused)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with run_log(out / LOG_FILE, log, header=f"study {config.name!r}, uncertank {__version__}") as logged:
        return _run_stages(config, out, resume=resume, log=logged.say, smoke=smoke,
                           warned=lambda: [dict(m) for m in logged.messages], estimates=estimates)


def _run_stages(config: StudyConfig, out: Path, *, resume: bool, log: Log, smoke: bool,
                warned: Callable[[], list[dict[str, object]]], estimates: Mapping[str, float] | None) -> StudyResult:
    """Stages 1 to 8 of :func:`run_study`, into the folder ``out`` it checked; ``warned()``: the warnings so far.

    Each stage gets its section of ``config``
    (:meth:`~uncertank.experiment.config.StudyConfig.section`) and what the
    stages before it returned; docs/architecture.md tables what
    each reads and writes.
    """
    from uncertank._environment import environment
    from uncertank.experiment.analysis import significance
    from uncertank.experiment.external import match_runs, score_runs
    from uncertank.experiment.report import write_report
    from uncertank.experiment.systems import compare_systems
    from uncertank.experiment.table import study_paper_table

    say = log
    rankers_settings = config.section(RankerSettings)
    comparison = config.section(ComparisonSettings)
    t0 = time.perf_counter()
    data = load_data(config.section(DataSettings), say)
    matched = match_runs(comparison, data.tests)  # before any ranker is trained: a run's ids against the test queries
    steps = {"data": StepInfo(digest(data.digests), round(time.perf_counter() - t0, 2))}
    rankers, fit_steps = fit_rankers(rankers_settings, data, out, resume=resume, log=say, estimates=estimates)
    preds, pred_steps = predict_all(rankers_settings, data, rankers, fit_steps, out, resume=resume, log=say,
                                    estimates=estimates)
    t0 = time.perf_counter()
    measured, metric_info = measure(config.section(MeasureSettings), data, preds)
    decisions = decide(config.section(DecisionSettings), data, preds)
    guaranteed = guarantees(config.section(GuaranteeSettings), data, preds)
    steps.update(fit_steps)
    steps.update(pred_steps)
    steps["evaluate and decide"] = StepInfo(digest([s.key for s in steps.values()]),
                                            round(time.perf_counter() - t0, 2))
    bayes: dict[str, BayesOutcome] = {}
    external = score_runs(comparison, data.tests, matched)
    if comparison.bayes.enabled:
        bayes, bayes_steps = compare_systems(comparison, out, measured, runs=external, resume=resume, log=say,
                                             estimates=estimates)
        steps.update(bayes_steps)
    result = StudyResult(
        config=to_jsonable(asdict(config)),
        sizes={"train": data.train.n_queries, "valid": data.valid.n_queries,
               "test": {name: qs.n_queries for name, qs in data.tests.items()}},
        metric_info=metric_info, evaluations=with_guarantees(with_decisions(measured, decisions), guaranteed),
        bayes=bayes, external_runs=external, steps=steps, smoke=smoke, environment=environment(),
        warnings=warned(),
    )
    result = replace(result, significance=significance(result))
    result = replace(result, paper_table=study_paper_table(config.section(TableSettings), data, preds, result))
    write_report(result, out)
    say(f"report written to {out}")
    return result
