"""The Bayesian comparison of systems, the last computing stage of a study (:func:`compare_systems`).

Benham et al. (ECIR 2021)'s hierarchical models of system and topic
effects, one fit per model family, on one of two sets of systems
(``[bayes] systems``):

- ``"study"`` (the default): the study's own rankers, one fit per family and
  condition, the condition's queries as topics and a per-query ranking
  metric (``[bayes] metric``, :func:`bayes_metric`) as the score; each
  ranker against the baseline (the study's reference ranker unless named):
  the credible interval of the difference of effects and URisk. The
  external runs of a condition (``[[bayes.runs]]``, measured by
  :mod:`uncertank.experiment.external`) are systems of its fit beside the
  rankers, read against the same baseline.
- ``"trec_covid"``: the bundled TREC-COVID round 1 runs, the paper's worked
  example: distinguishable systems and URisk against ``bm25_baseline``.

Convergence is a gate: a fit that fails its checks is made again with twice
the draws and tuning steps at target acceptance 0.95 (``[bayes] retries``
times), and a fit that still fails gives no verdict. The curves of the
posterior predictive check are stored beside ``results.json`` for the report
to draw.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uncertank import __version__
from uncertank.datasets._cache import checksum_problem, write_checksum
from uncertank.experiment.config import ComparisonSettings, StudyConfig
from uncertank.experiment.result import BayesOutcome, Evaluation, ExternalRunOutcome, StepInfo
from uncertank.experiment.stages import digest, file_stem
from uncertank.files import atomic_path, atomic_write_text, to_jsonable
from uncertank.progress import format_duration, reporting
from uncertank.validation import check_bool, check_callable, check_instance, check_path

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.bayes import Diagnostics, SystemComparison
    from uncertank.bayes._fitted import Fitted

__all__ = ["PPC_GRID", "PPC_REPLICATES", "bayes_metric", "compare_systems", "ppc_curves", "quiet_bayes"]

Log = Callable[[str], None]


def _quiet(msg: str) -> None:
    """Discard a progress line."""


@contextlib.contextmanager
def quiet_bayes() -> Iterator[None]:
    """Silence, for the Bayesian stage only, two messages that concern no call of a study.

    ArviZ's FutureWarning about its coming refactor, and PyTensor's warnings
    that it found no C BLAS (a log line and a UserWarning; it then uses
    NumPy's, correctly, only slower). Every other warning passes.
    """
    blas = logging.getLogger("pytensor.tensor.blas")
    level = blas.level
    blas.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, message=r"\s*ArviZ is undergoing")
            warnings.filterwarnings("ignore", category=UserWarning, message=r"\s*PyTensor could not link to a BLAS")
            yield
    finally:
        blas.setLevel(level)


#: Replicated data sets drawn for the posterior predictive check, and the points of its density grid.
PPC_REPLICATES = 100
PPC_GRID = 256


def ppc_curves(cmp: Fitted, seed: int) -> dict[str, np.ndarray]:
    """The posterior predictive check as curves, as the report stores them: :func:`uncertank.bayes.plots.ppc_densities`.

    KDE densities of :data:`PPC_REPLICATES` replicated data sets and of the
    observed scores on one grid of :data:`PPC_GRID` points, and the share of
    replicated scores outside [0, 1].
    """
    from uncertank.bayes.plots import ppc_densities

    return ppc_densities(cmp, PPC_REPLICATES, seed=seed, points=PPC_GRID)


def bayes_metric(settings: ComparisonSettings) -> str:
    """The label of the per-query metric a comparison of the study's rankers fits.

    ``[bayes] metric`` when given, else ``MAP`` when the study measures it,
    else the study's first ranking metric.

    Raises
    ------
    ValueError
        When the label given is not one of the study's ranking metrics, or
        the study measures none.
    """
    from uncertank.metrics import resolve_metrics

    check_instance(settings, "settings", (ComparisonSettings, StudyConfig), "a ComparisonSettings or a StudyConfig")

    ranking = [m.display_label for m in resolve_metrics(settings.metric_entries()) if m.kind == "ranking"]
    chosen = settings.bayes.metric
    if chosen is None:
        if not ranking:
            raise ValueError("the study measures no ranking metric to compare its rankers by; add one to "
                             "study.metrics (e.g. \"map\"), or set [bayes] enabled = false")
        return "MAP" if "MAP" in ranking else ranking[0]
    if chosen not in ranking:
        raise ValueError(f"must be the label of a ranking metric the study measures ({', '.join(map(repr, ranking))}); "
                         f"got {chosen!r}")
    return chosen


def compare_systems(
    settings: ComparisonSettings,
    out: Path,
    evaluations: list[Evaluation] | None = None,
    *,
    runs: Sequence[ExternalRunOutcome] = (),
    resume: bool = True,
    log: Log = _quiet,
    estimates: Mapping[str, float] | None = None,
) -> tuple[dict[str, BayesOutcome], dict[str, StepInfo]]:
    """The Bayesian comparison of ``settings.bayes``: the study's rankers, or the TREC-COVID round 1 runs.

    Each fit is a cached step (``bayes/<family>[-<condition>]-<key>.json``,
    keyed by the family, the ``[bayes]`` table, the seed and the data
    compared) beside its posterior predictive curves (``...-ppc.npz``, from
    which the report draws the check), each file with the SHA-256 of its
    bytes in ``<file>.sha256``: a fit whose files are missing, unreadable or
    differ from their records is fitted again (a log line names the file).
    ArviZ's FutureWarning and PyTensor's BLAS warning are silenced while it
    runs (:func:`quiet_bayes`).

    Parameters
    ----------
    settings : ComparisonSettings
        The study's ``[bayes]`` table (what is compared and how), its
        rankers, conditions, reference, metrics and seed.
    out : Path
        The report folder.
    evaluations : list of Evaluation, optional
        The study's measurements (:func:`~uncertank.experiment.runner.measure`):
        the per-query scores a comparison of the study's rankers fits.
        Needed with ``systems = "study"``.
    runs : sequence of ExternalRunOutcome
        The external runs of ``[[bayes.runs]]`` with their per-query metric
        (:func:`~uncertank.experiment.external.score_runs`): each is one
        more system of its condition's fit, after the rankers.
    resume, log
        As in :func:`~uncertank.experiment.runner.run_study`.
    estimates : mapping, optional
        Step name -> estimated seconds (``uncertank.experiment.plan``'s
        ``bayes <family>[ <condition>]`` steps): a fit's log line gives its
        seconds beside its estimate, and its step records both.

    Returns
    -------
    outcomes : dict
        ``"<family>"`` (TREC-COVID) or ``"<family> <condition>"`` (the
        study's rankers) -> :class:`~uncertank.experiment.result.BayesOutcome`.
    steps : dict
        ``"bayes <family>[ <condition>]"`` -> :class:`~uncertank.experiment.result.StepInfo`.

    Raises
    ------
    ValueError
        With ``systems = "study"`` and no ``evaluations``, evaluations
        without the per-query metric of :func:`bayes_metric`, or ``runs``
        without a run of ``[[bayes.runs]]``, or with another metric or
        number of queries.
    """
    check_instance(settings, "settings", (ComparisonSettings, StudyConfig), "a ComparisonSettings or a StudyConfig")
    out = check_path(out, "out")
    if evaluations is not None:
        for ev in check_instance(evaluations, "evaluations", (list, tuple), "a list of Evaluation or None"):
            check_instance(ev, "evaluations", Evaluation, "a list of Evaluation or None")
    for run in check_instance(runs, "runs", (list, tuple), "a list of ExternalRunOutcome"):
        check_instance(run, "runs", ExternalRunOutcome, "a list of ExternalRunOutcome")
    check_bool(resume, "resume")
    check_callable(log, "log", "a function of one str")
    if estimates is not None:
        check_instance(estimates, "estimates", Mapping, "a mapping of seconds by key")
    with quiet_bayes():
        if settings.bayes.systems == "trec_covid":
            return _fit_all(settings, out, _trec_covid_fits(settings), resume, log, estimates or {})
        if evaluations is None:
            raise ValueError('evaluations: a comparison of the study\'s rankers (systems = "study") needs the '
                             "study's per-query measurements; got None")
        return _fit_all(settings, out, _study_fits(settings, evaluations, runs), resume, log, estimates or {})


@dataclass
class _Fit:
    """One fit to make: its name, data and what its outcome records."""

    name: str
    family: str
    frame: pd.DataFrame
    baseline: str | None
    what: str
    condition: str | None = None
    metric: str | None = None


def _trec_covid_fits(settings: ComparisonSettings) -> list[_Fit]:
    from uncertank.bayes import frame_from_trec_covid

    fits = []
    for family in settings.bayes.families:
        frame = frame_from_trec_covid(family)
        fits.append(_Fit(family, family, frame, settings.bayes.baseline or "bm25_baseline",
                         f"TREC-COVID round 1 ({frame['system'].nunique()} pooled runs)"))
    return fits


def _study_fits(settings: ComparisonSettings, evaluations: list[Evaluation],
                runs: Sequence[ExternalRunOutcome]) -> list[_Fit]:
    import pandas as pd

    metric = bayes_metric(settings)
    given = {(r.name, r.condition): r for r in runs}
    conditions = list(settings.bayes.conditions or [c.name for c in settings.conditions])
    labels = [rc.key for rc in settings.rankers]
    baseline = settings.bayes.baseline or settings.reference
    fits = []
    for cond in conditions:
        columns: dict[str, list[str | int | float]] = {"system": [], "topic": [], "score": []}
        for label in labels:
            ev = next((e for e in evaluations if e.ranker == label and e.condition == cond), None)
            if ev is None or metric not in ev.per_query:
                raise ValueError(f"evaluations: no per-query {metric!r} of ranker {label!r} under {cond!r}")
            scores = ev.per_query[metric]
            columns["system"] += [label] * len(scores)
            columns["topic"] += list(range(len(scores)))
            columns["score"] += [float(x) for x in scores]
        n_queries = len(columns["score"]) // len(labels)
        external = [r.name for r in settings.bayes.runs if r.condition == cond]
        for name in external:
            run = given.get((name, cond))
            if run is None or run.metric != metric or len(run.per_query) != n_queries:
                got = "none" if run is None else f"{len(run.per_query)} values of {run.metric!r}"
                raise ValueError(f"runs: run {name!r} of [[bayes.runs]] needs its per-query {metric!r} under "
                                 f"{cond!r}, one per query ({n_queries}); got {got}")
            columns["system"] += [name] * n_queries
            columns["topic"] += list(range(n_queries))
            columns["score"] += [float(x) for x in run.per_query]
        frame = pd.DataFrame(columns)
        also = f" and {len(external)} external run{'s' if len(external) != 1 else ''}" if external else ""
        for family in settings.bayes.families:
            fits.append(_Fit(f"{family} {cond}", family, frame, baseline,
                             f"the study's {len(labels)} rankers{also} under {cond!r} (per-query {metric}, "
                             f"{n_queries} queries)", condition=cond, metric=metric))
    return fits


def _read_fit(out: Path, path: Path, ppc: str) -> tuple[BayesOutcome, float] | str:
    """The cached fit in ``path`` and its seconds, or why it cannot be reused (a sentence naming the file)."""
    for file in (path, out / ppc):
        problem = checksum_problem(file) if file.is_file() else "it is missing"
        if problem is not None:
            return f"{file}: {problem}"
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return BayesOutcome(**saved["outcome"]), float(saved["seconds"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{path}: it is not a fit's record ({type(exc).__name__}: {exc})"


def _fit(settings: ComparisonSettings, fit: _Fit, log: Log) -> tuple[SystemComparison, Diagnostics, int]:
    """``compare`` on ``fit``'s data, again with more draws while it fails its checks (``[bayes] retries``).

    Returns the comparison, its diagnostics and the number of fits made;
    the checks are reported by the stage's log lines, not as warnings.
    """
    from uncertank.bayes import ConvergenceWarning, compare

    bayes = settings.bayes
    draws, tune, accept = bayes.draws, bayes.tune, 0.9
    for attempt in range(bayes.retries + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the gate below reports the checks
            cmp = compare(fit.frame, family=fit.family, draws=draws, tune=tune,  # type: ignore[arg-type]
                          chains=bayes.chains, seed=settings.seed, sampler=bayes.sampler,
                          drop_bottom=bayes.drop_bottom, target_accept=accept)
            diag = cmp.diagnostics()
        if diag.ok or attempt == bayes.retries:
            return cmp, diag, attempt + 1
        draws, tune, accept = 2 * draws, 2 * tune, 0.95
        log(f"bayes: the {fit.name} fit fails its convergence checks ({'; '.join(diag.problems)}); fitting again "
            f"with {draws} draws and {tune} tuning steps per chain, target acceptance {accept}")
    raise AssertionError("unreachable")  # pragma: no cover


def _against_baseline(cmp: SystemComparison, baseline: str) -> list[dict[str, object]]:
    """Each other system's effect against ``baseline``'s, with URisk for r = 1 and 2 (a converged fit)."""
    rows: dict[str, dict[str, object]] = {
        str(row["system"]): {str(k): (float(v) if k not in ("system", "verdict") else str(v)) for k, v in row.items()}
        for row in cmp.contrasts(baseline).to_dict("records")}
    for r in (1, 2):
        ur = cmp.urisk(baseline, r=r)
        for row in ur.to_dict("records"):
            got = rows.get(str(row["system"]))
            if got is not None:
                got.update({f"urisk_r{r}": float(row["urisk"]), f"urisk_r{r}_lower": float(row["urisk_lower"]),
                            f"urisk_r{r}_upper": float(row["urisk_upper"])})
    return list(rows.values())


def _fit_all(settings: ComparisonSettings, out: Path, fits: list[_Fit], resume: bool, log: Log,
             estimates: Mapping[str, float]) -> tuple[dict[str, BayesOutcome], dict[str, StepInfo]]:
    outcomes: dict[str, BayesOutcome] = {}
    steps: dict[str, StepInfo] = {}
    for fit in fits:
        frame_key = digest(fit.frame.to_csv(index=False))
        key = digest([fit.family, asdict(settings.bayes), settings.seed, frame_key, __version__])
        stem = fit.family if fit.condition is None else f"{fit.family}-{file_stem(fit.condition)}"
        path = out / "bayes" / f"{stem}-{key}.json"
        ppc = f"bayes/{stem}-{key}-ppc.npz"
        if resume and path.exists():
            cached = _read_fit(out, path, ppc)
            if not isinstance(cached, str):
                log(f"bayes: reusing the finished {fit.name} fit")
                outcomes[fit.name], seconds = cached
                steps[f"bayes {fit.name}"] = StepInfo(key, seconds, resumed=True)
                continue
            log(f"bayes: the cached {fit.name} fit is not reused: {cached}; it is fitted again")
        log(f"bayes: fitting the {fit.family} model on {fit.what}")
        t0 = time.perf_counter()
        with reporting(log, prefix=f"bayes: {fit.name}: ", heartbeat=True):  # draws, divergences: every 20 s
            cmp, diag, n_fits = _fit(settings, fit, log)
        eff = cmp.system_effects()
        risk: dict[str, int] = {}
        against: list[dict[str, object]] = []
        baseline = fit.baseline if fit.baseline in {str(x) for x in cmp.systems} else None
        if not diag.ok:  # convergence is a gate: no verdict from this fit, its diagnostics say why
            log(f"bayes: the {fit.name} fit fails its convergence checks ({'; '.join(diag.problems)}): "
                "no verdict (distinguishable systems, URisk) is given")
        elif baseline is not None and fit.condition is not None:
            against = _against_baseline(cmp, baseline)
        elif baseline is not None:
            for r in (1, 2):
                ur = cmp.urisk(baseline, r=r)
                # Benham convention: URisk > 0 is riskier than the baseline.
                risk[f"credibly riskier than {baseline} (r={r})"] = int((ur["urisk_lower"] > 0).sum())
                risk[f"credibly less risky than {baseline} (r={r})"] = int((ur["urisk_upper"] < 0).sum())
        curves = ppc_curves(cmp, settings.seed)
        with atomic_path(out / ppc) as tmp, tmp.open("wb") as fh:
            # numpy's stub checks a ** of arrays against its allow_pickle: bool (a keyword since numpy 2.1)
            np.savez(fh, **curves)  # type: ignore[arg-type]
        write_checksum(out / ppc)
        outcome = BayesOutcome(
            family=fit.family, n_systems=len(cmp.systems),
            best_distinguishable=len(cmp.distinguishable(reference="best")) if diag.ok else None,
            worst_distinguishable=len(cmp.distinguishable(reference="worst")) if diag.ok else None,
            converged=bool(diag.ok), diagnostics=to_jsonable(diag.to_dict()),
            effects=[{"system": str(row["system"]), "mean": float(row["mean"]), "lower": float(row["lower"]),
                      "upper": float(row["upper"])} for row in eff.to_dict("records")],
            risk=risk, ppc=ppc, systems="trec_covid" if fit.condition is None else "study",
            condition=fit.condition, metric=fit.metric, baseline=baseline, against_baseline=against, fits=n_fits,
        )
        seconds = time.perf_counter() - t0
        atomic_write_text(path, json.dumps({"outcome": to_jsonable(asdict(outcome)), "seconds": seconds}, indent=2))
        write_checksum(path)
        outcomes[fit.name] = outcome
        estimated = estimates.get(f"bayes {fit.name}")
        if estimated is not None:
            log(f"bayes: the {fit.name} fit took {seconds:.1f} s (estimated {format_duration(estimated)})")
        steps[f"bayes {fit.name}"] = StepInfo(key, seconds, estimated_seconds=estimated)
    return outcomes, steps

