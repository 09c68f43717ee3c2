"""The Bayesian comparison of systems, the last computing stage of a study (:func:`compare_systems`).

Benham et al. (ECIR 2021) on the TREC-COVID round 1 runs, one fit per model
family: system effects, distinguishable systems, convergence diagnostics,
URisk against the baseline, and the curves of the posterior predictive check
stored beside ``results.json`` for the report to draw.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from uncertank import __version__
from uncertank._io import atomic_path, atomic_write_text, json_digest, to_jsonable
from uncertank.datasets._cache import checksum_problem, write_checksum
from uncertank.experiment.config import StudyConfig
from uncertank.experiment.result import BayesOutcome, StepInfo

__all__ = ["PPC_GRID", "PPC_REPLICATES", "compare_systems", "ppc_curves", "quiet_bayes"]

Log = Callable[[str], None]


def _quiet(msg: str) -> None:
    """Discard a progress line."""


def digest(obj: Any) -> str:
    """A short key (16 hex digits of SHA-256 over canonical JSON), as the runner's."""
    return json_digest(obj)[:16]


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
PPC_REPLICATES, PPC_GRID = 100, 256


def ppc_curves(cmp: Any, seed: int) -> dict[str, np.ndarray]:
    """The posterior predictive check as curves: KDE densities of replicated and observed scores on one grid.

    The grid spans [0, 1] when every score lies there, else the range of the
    data and replicates (``outside``: the share of replicated scores outside
    [0, 1]), as :func:`uncertank.bayes.plots.plot_ppc` draws it.
    """
    from scipy.stats import gaussian_kde

    rep = cmp.posterior_predictive(PPC_REPLICATES, seed=seed)
    y = cmp.data["score"].to_numpy(dtype=np.float64)
    outside = float(((rep < 0) | (rep > 1)).mean())
    if outside == 0.0 and 0.0 <= y.min() and y.max() <= 1.0:
        grid = np.linspace(0.0, 1.0, PPC_GRID)
    else:
        lo = min(float(y.min()), float(np.quantile(rep, 0.001)))
        hi = max(float(y.max()), float(np.quantile(rep, 0.999)))
        pad = 0.05 * (hi - lo)
        grid = np.linspace(lo - pad, hi + pad, PPC_GRID)
    return {"grid": grid, "observed": gaussian_kde(y)(grid),
            "replicates": np.stack([gaussian_kde(row)(grid) for row in rep]), "outside": np.float64(outside)}


def compare_systems(
    config: StudyConfig, out: Path, *, resume: bool = True, log: Log = _quiet
) -> tuple[dict[str, BayesOutcome], dict[str, StepInfo]]:
    """The Bayesian comparison of the TREC-COVID round 1 systems with each family of ``config.bayes``.

    Each fit is a cached step (``bayes/<family>-<key>.json``) beside its
    posterior predictive curves (``bayes/<family>-<key>-ppc.npz``, from which
    the report draws the check), each file with the SHA-256 of its bytes in
    ``<file>.sha256``: a fit whose files are missing, unreadable or differ
    from their records is fitted again (a log line names the file). ArviZ's
    FutureWarning and PyTensor's BLAS warning are silenced while it runs
    (:func:`quiet_bayes`).

    Returns
    -------
    outcomes : dict
        Family -> :class:`~uncertank.experiment.result.BayesOutcome`.
    steps : dict
        ``"bayes <family>"`` -> :class:`~uncertank.experiment.result.StepInfo`.
    """
    with quiet_bayes():
        return _fit_families(config, out, resume, log)


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


def _fit_families(config: StudyConfig, out: Path, resume: bool, log: Log) -> tuple[dict[str, BayesOutcome],
                                                                                 dict[str, StepInfo]]:
    from uncertank.bayes import compare, frame_from_trec_covid

    outcomes: dict[str, BayesOutcome] = {}
    steps: dict[str, StepInfo] = {}
    for family in config.bayes.families:
        frame = frame_from_trec_covid(family)
        frame_key = digest(frame.to_csv(index=False))
        key = digest([family, asdict(config.bayes), config.seed, frame_key, __version__])
        path = out / "bayes" / f"{family}-{key}.json"
        ppc = f"bayes/{family}-{key}-ppc.npz"
        if resume and path.exists():
            cached = _read_fit(out, path, ppc)
            if not isinstance(cached, str):
                log(f"bayes: reusing the finished {family} fit")
                outcomes[family], seconds = cached
                steps[f"bayes {family}"] = StepInfo(key, seconds, resumed=True)
                continue
            log(f"bayes: the cached {family} fit is not reused: {cached}; it is fitted again")
        log(f"bayes: fitting the {family} model on TREC-COVID round 1 ({frame['system'].nunique()} pooled runs)")
        t0 = time.perf_counter()
        cmp = compare(frame, family=family, draws=config.bayes.draws, tune=config.bayes.tune,  # type: ignore[arg-type]
                      chains=config.bayes.chains, seed=config.seed, sampler=config.bayes.sampler,  # type: ignore[arg-type]
                      drop_bottom=config.bayes.drop_bottom)
        diag = cmp.diagnostics()
        eff = cmp.system_effects()
        risk: dict[str, int] = {}
        baseline = config.bayes.baseline or "bm25_baseline"
        if not diag.ok:  # convergence is a gate: no verdict from this fit, its diagnostics say why
            log(f"bayes: the {family} fit fails its convergence checks ({'; '.join(diag.problems)}): "
                "no verdict (distinguishable systems, URisk) is given")
        if diag.ok and baseline in {str(x) for x in cmp.systems}:
            for r in (1, 2):
                ur = cmp.urisk(baseline, r=r)
                # Benham convention: URisk > 0 is riskier than the baseline.
                risk[f"credibly riskier than {baseline} (r={r})"] = int((ur["urisk_lower"] > 0).sum())
                risk[f"credibly less risky than {baseline} (r={r})"] = int((ur["urisk_upper"] < 0).sum())
        curves: dict[str, Any] = ppc_curves(cmp, config.seed)
        with atomic_path(out / ppc) as tmp, tmp.open("wb") as fh:
            np.savez(fh, **curves)
        write_checksum(out / ppc)
        outcome = BayesOutcome(
            family=family, n_systems=len(cmp.systems),
            best_distinguishable=len(cmp.distinguishable(reference="best")) if diag.ok else None,
            worst_distinguishable=len(cmp.distinguishable(reference="worst")) if diag.ok else None,
            converged=bool(diag.ok), diagnostics=to_jsonable(diag.to_dict()),
            effects=[{"system": str(row["system"]), "mean": float(row["mean"]), "lower": float(row["lower"]),
                      "upper": float(row["upper"])} for row in eff.to_dict("records")],
            risk=risk, ppc=ppc,
        )
        seconds = time.perf_counter() - t0
        atomic_write_text(path, json.dumps({"outcome": to_jsonable(asdict(outcome)), "seconds": seconds}, indent=2))
        write_checksum(path)
        outcomes[family] = outcome
        steps[f"bayes {family}"] = StepInfo(key, seconds)
    return outcomes, steps
