"""What a study would do, without doing it: ``uncertank run --dry-run``.

:func:`~uncertank.experiment.runner.plan_study`, beside ``run_study``, runs
the checks a run makes at the door
(:func:`~uncertank.experiment.preflight.validate_config` and
:func:`~uncertank.experiment.preflight.check_output_folder`) and cuts the
study into the sections the plan reads; :func:`plan_sections` then counts
the queries and pairs of every split, finds the steps already cached in the
output folder (by the keys the run would compute) and estimates the cost of
the others. It loads no ranker's model and trains nothing: the data is built as the
run builds it (and cached the same way) when its negatives need no model
(:data:`MODEL_FREE_NEGATIVES`); a split whose sampler needs one is counted
with random negatives instead, and its steps are shown as not known to be
cached. The ``[[bayes.runs]]`` files are matched with the test queries of
the conditions built as the run builds them, as the run matches them
(:func:`~uncertank.experiment.external.match_runs`).

The cost of a step comes, in order, from the seconds a previous run in the
output folder recorded for the same step (``results.json``'s ``steps``),
scaled by the sizes, or from the ranker's own rates
(:class:`uncertank.CostEstimating`; the first-party rankers' were measured
on the real run of docs/results/real_run.json, two CPU cores): an estimate
that scales with the rankers' settings. A neural ranker's rates are
calibrated to the machine: when one of its steps is estimated by them, a
probe of a few seconds (:func:`uncertank.experiment.speed.probe_machine`,
the packaged backbone's only load) times one small batch trained and one
scored, and their ratio to the reference machine's scales the rates; the
plan keeps the reference machine's estimate beside it, and the range the
probe's repeats give.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from uncertank import QuerySet
from uncertank.experiment.building import build_ranker
from uncertank.experiment.config import (
    ComparisonSettings,
    DataSettings,
    RankerConfig,
    RankerSettings,
    StudyConfigError,
)
from uncertank.experiment.result import json_object
from uncertank.experiment.speed import MachineSpeed, probe_machine
from uncertank.experiment.stages import LoadOptions, StudyData
from uncertank.params import Parameters
from uncertank.protocols import Capabilities, CostRates, cost_rates_problem
from uncertank.validation import check_bool, check_instance, check_name, check_path

__all__ = ["MODEL_FREE_NEGATIVES", "RATE_LAYERS", "StepPlan", "StudyPlan", "plan_sections"]

#: Negative samplers that need no model: a dry run builds their data as the run does.
MODEL_FREE_NEGATIVES = frozenset({"random", "bm25", "file", "given"})

#: The encoder layers the rankers' rates are given for (:class:`uncertank.CostEstimating`).
RATE_LAYERS = 6
#: Seconds of one Bayesian fit of the bundled TREC-COVID round 1 systems (42 runs x 30 topics, 1,260 cells) with
#: nutpie, 1,000 tuning steps and 1,000 draws in each of 4 chains, on the reference machine: the default demo
#: there, quiet (docs/results/demo.json). A fit is estimated at its family's seconds, scaled by its steps times
#: chains over these 8,000 and, for a study's own systems, by its cells (systems x queries) over these 1,260;
#: a refit after failed convergence checks (``[bayes] retries``) is not counted.
BAYES_REFERENCE_SECONDS = {"gaussian": 7.7, "zoib": 9.0}
_BAYES_REFERENCE_CELLS = 42 * 30
_BAYES_SOURCE = "the reference machine's seconds for its size"
_RATE = "at the ranker's rate"
_CALIBRATED = "at the ranker's rate, calibrated"
_RATE_SOURCE = ("estimates (the first-party rankers' measured on a real run on 2 CPU cores, "
                "docs/results/real_run.json; a neural ranker's follow its pairs per query, epochs and max_length), "
                "scaled by the encoder's layers and, for the neural rankers, by the speed probe")


def _layer_scale(rc: RankerConfig, by_label: Mapping[str, RankerConfig]) -> float:
    """How the encoder's layers scale a ranker's rates (1 when neither it nor its source sets them).

    ``num_hidden_layers``, its own or read from the ranker it starts from,
    over :data:`RATE_LAYERS`.
    """
    source = by_label.get(rc.init_from) if rc.init_from else None
    layers = rc.params.get("num_hidden_layers", (source.params if source is not None else {}).get("num_hidden_layers"))
    return layers / RATE_LAYERS if isinstance(layers, int) and layers > 0 else 1.0


def _as_started(rc: RankerConfig, built: Capabilities, by_label: Mapping[str, RankerConfig]) -> Capabilities:
    """``built`` with the settings it takes over from the ranker it starts from, for its rates.

    A ranker started from another (``init_from``) runs with the source's
    settings (``max_length``, ``train_ratio``, the epochs: its warm start
    copies them), which its own parameters in the study file leave out; its
    cost is theirs. Only the parameters it takes (``get_params``) are
    copied, its own study-file ones win, and a ranker without
    :class:`uncertank.params.Parameters` is used as built.
    """
    source = by_label.get(rc.init_from) if rc.init_from else None
    if source is None or not isinstance(built.ranker, Parameters):
        return built
    takes = set(built.ranker.get_params())
    inherited = {k: v for k, v in source.params.items() if k in takes and k not in rc.params}
    return build_ranker(dataclasses.replace(rc, params={**inherited, **rc.params})) if inherited else built


def _rates(built: Capabilities, warm_start: bool, where: str) -> CostRates | None:
    """A ranker's :class:`~uncertank.CostRates` (None without them); a wrong value is the study's error."""
    if built.cost_estimating is None:
        return None
    rates = built.cost_estimating.cost_rates(warm_start=warm_start)
    problem = cost_rates_problem(rates)
    if problem is not None:
        raise StudyConfigError([(where, f"{built.name}.cost_rates(warm_start={warm_start}) {problem}")])
    return rates


@dataclass
class StepPlan:
    """One step the study would take: its name, its key (None when not known), whether it is cached, its cost.

    ``seconds`` is the estimate; for a step estimated by a neural ranker's
    rates calibrated to the machine (``source`` :data:`_CALIBRATED`),
    ``high`` is the high end of its range and ``reference_seconds`` the
    estimate at the reference machine's rates; both are None otherwise.
    """

    name: str
    key: str | None
    cached: bool
    seconds: float | None
    source: str = ""
    high: float | None = None
    reference_seconds: float | None = None


@dataclass
class StudyPlan:
    """What :func:`plan_study` found: the splits' sizes, every step, and where the costs come from."""

    name: str
    out: Path
    splits: list[tuple[str, str, int, int, bool]]  # (split, what, queries, pairs, exact)
    rankers: list[tuple[str, str]]  # (label, what happens to it)
    steps: list[StepPlan] = field(default_factory=list)
    speed: MachineSpeed | None = None  # the probe's finding, when a step's rates were calibrated

    @property
    def seconds(self) -> float:
        """The estimated seconds of the steps that would run (those with an estimate)."""
        return sum(s.seconds or 0.0 for s in self.steps if not s.cached)

    @property
    def high_seconds(self) -> float:
        """The high end of the estimate's range: each calibrated step's ``high``, the others' ``seconds``."""
        return sum((s.high if s.high is not None else s.seconds) or 0.0 for s in self.steps if not s.cached)

    @property
    def reference_seconds(self) -> float:
        """The estimate at the reference machine's rates (the calibrated steps uncalibrated)."""
        return sum((s.reference_seconds if s.reference_seconds is not None else s.seconds) or 0.0
                   for s in self.steps if not s.cached)

    def estimate_line(self) -> str:
        """The total as the run's log says it before any work, with its range and the reference's."""
        from uncertank.progress import format_duration

        total = f"about {format_duration(self.seconds)}"
        if self.speed is None:
            return (f"{total} by the rankers' rates (measured on 2 CPU cores) or a previous run's seconds; "
                    "`uncertank run --dry-run` lists the steps")
        return (f"{total}, up to {format_duration(self.high_seconds)} under the load the speed probe met "
                f"({format_duration(self.reference_seconds)} at the rates of the reference machine, 2 CPU cores; "
                f"this machine {self.speed.describe()}, a {self.speed.seconds:.1f} s probe); "
                "`uncertank run --dry-run` lists the steps")

    def render(self) -> str:
        """The plan as the lines ``uncertank run --dry-run`` prints."""
        loaded = "no model is loaded" if self.speed is None else \
            "no ranker's model is loaded (the speed probe loaded the packaged backbone)"
        lines = [f"Dry run of the study {self.name!r} into {self.out}: the checks passed; nothing is trained "
                 f"and {loaded}.", "", "Data:"]
        for split, what, queries, pairs, exact in self.splits:
            note = "" if exact else " (counted with random negatives: its sampler needs a model)"
            lines.append(f"  {split:<12} {what}: {queries} queries, {pairs} pairs{note}")
        lines += ["", "Rankers:"] + [f"  {label}: {what}" for label, what in self.rankers]
        lines += ["", "Steps:"]
        for s in self.steps:
            if s.cached:
                state = "cached, reused"
            elif s.key is not None:
                state = "runs"
            else:
                state = "runs unless cached" + ("" if s.name.startswith("bayes ") else " (its data is not built)")
            if s.cached:
                cost = ""
            elif s.seconds is None:
                cost = ", cost unknown (" + ("measured with nutpie only" if s.name.startswith("bayes ")
                                            else "no rate for this ranker") + ")"
            elif s.reference_seconds is not None:
                cost = (f", about {_upto(s.seconds, s.high)} ({s.source}; "
                        f"{_duration(s.reference_seconds)} on the reference machine)")
            else:
                cost = f", about {_duration(s.seconds)} ({s.source})"
            lines.append(f"  {s.name}: {state}{cost}")
        unknown = sum(1 for s in self.steps if not s.cached and s.seconds is None)
        if all(s.cached for s in self.steps):
            return "\n".join([*lines, "", "Estimated time: none; every step is cached and would be reused."])
        rated = any(s.source in (_RATE, _CALIBRATED) for s in self.steps)
        if self.speed is not None:
            lines += ["", f"Speed probe: {self.speed.seconds:.1f} s, one small batch of the packaged backbone "
                      f"trained and one scored; this machine takes {self.speed.describe()}: its fastest batch "
                      "to its median one. It scales the neural rankers' rates."]
            total = (f"about {_upto(self.seconds, self.high_seconds)} "
                     f"(at the reference machine's rates: {_duration(self.reference_seconds)})")
        else:
            total = f"about {_duration(self.seconds)}"
        lines += ["", f"Estimated time: {total}"
                  + (f", plus {unknown} step{'s' if unknown != 1 else ''} of unknown cost" if unknown else "")
                  + "; " + ("the rankers' rates are " + _RATE_SOURCE if rated
                            else "from the seconds the previous run recorded")
                  + "."]
        return "\n".join(lines)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _upto(seconds: float | None, high: float | None) -> str:
    """``"3 min, up to 4 min"``; the estimate alone where its range's high end reads the same."""
    low, top = _duration(seconds), _duration(high)
    return low if top == low else f"{low}, up to {top}"


def _previous(out: Path) -> tuple[dict[str, object], dict[str, object]]:
    """The steps and sizes a previous run in ``out`` recorded (empty when none can be read)."""
    try:
        doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
        return dict(doc.get("steps") or {}), dict(doc.get("sizes") or {})
    except (OSError, ValueError, AttributeError, TypeError):
        return {}, {}


def _load_counted(name: str, split: str, negatives: str, cap: int | None, config: DataSettings,
                  where: str) -> tuple[QuerySet, bool]:
    """The query set the run would load (or, for a sampler needing a model, one with random negatives)."""
    from uncertank.datasets import load

    model_free = negatives in MODEL_FREE_NEGATIVES
    options: LoadOptions = {} if cap is None else {"max_queries": cap}  # as the runner's load_data passes them
    if config.max_context_turns is not None:
        options["max_context_turns"] = config.max_context_turns
    try:
        return load(name, split=split, negatives=negatives if model_free else "random",
                    n_candidates=config.n_candidates, seed=config.seed, **options), model_free
    except (OSError, ValueError) as exc:  # a file that is there but cannot be read as a dataset
        said = " ".join(str(exc).split())
        raise StudyConfigError([(where, f"its {split} split cannot be loaded: {said}")]) from None


def plan_sections(
    name: str,
    config: DataSettings,
    ranking: RankerSettings,
    comparison: ComparisonSettings,
    out_dir: str | os.PathLike[str],
    *,
    resume: bool = True,
    calibrate: bool = True,
) -> StudyPlan:
    """What a study of these sections would train, score and reuse in ``out_dir``, and an estimate of its cost.

    The plan's part of :func:`uncertank.experiment.runner.plan_study`, which
    checks the whole study and its output folder first and cuts it into
    these sections (``StudyConfig.section``).

    Parameters
    ----------
    name : str
        The study's name.
    config : DataSettings
        The datasets and how they are sampled.
    ranking : RankerSettings
        The ``[[rankers]]``.
    comparison : ComparisonSettings
        ``[bayes]``, its external runs and the systems it compares.
    out_dir : path
        The output folder the run would write into (it is only read).
    resume : bool
        False: every step counts as to be run, as with ``--no-resume``.
    calibrate : bool
        True: when a step would be estimated by a neural ranker's rates, run
        the speed probe (:func:`~uncertank.experiment.speed.probe_machine`, a
        few seconds) and scale those rates by its factors. False: the
        reference machine's rates as they are.

    Raises
    ------
    StudyConfigError
        A dataset that cannot be loaded, a run whose ids match no test
        query, a ranker's rates that are not seconds.
    """
    from uncertank.experiment.external import match_runs
    from uncertank.experiment.stages import digest, file_stem, fit_key, unfitted_key

    check_name(name, "name")
    check_instance(config, "config", DataSettings)
    check_instance(ranking, "ranking", RankerSettings)
    check_instance(comparison, "comparison", ComparisonSettings)
    out = Path(check_path(out_dir, "out_dir"))
    check_bool(resume, "resume")
    check_bool(calibrate, "calibrate")
    train, exact_train = _load_counted(config.train_dataset, "train", config.train_negatives,
                                       config.max_train_queries, config, "study.train_dataset")
    valid, exact_valid = _load_counted(config.train_dataset, "valid", config.train_negatives,
                                       config.max_valid_queries, config, "study.train_dataset")
    tests, exact = {}, {"train": exact_train, "valid": exact_valid}
    for i, cond in enumerate(config.conditions):
        tests[cond.name], exact[cond.name] = _load_counted(cond.dataset, "test", cond.negatives,
                                                           config.max_test_queries, config, f"conditions[{i}].dataset")
    # a run's ids against the test queries the run will load (not those drawn with stand-in negatives)
    match_runs(comparison, {cond: qs for cond, qs in tests.items() if exact[cond]})
    digests = {"train": train.digest(), "valid": valid.digest(), **{k: v.digest() for k, v in tests.items()}}
    data = StudyData(train, valid, tests, digests)
    sets = {"valid": valid, **tests}
    splits = [("train", f"{config.train_dataset}, {config.train_negatives} negatives", train.n_queries,
               train.n_pairs, exact_train),
              ("valid", f"{config.train_dataset}, {config.train_negatives} negatives", valid.n_queries,
               valid.n_pairs, exact_valid)]
    splits += [(c.name, f"{c.dataset} test, {c.negatives} negatives", tests[c.name].n_queries,
                tests[c.name].n_pairs, exact[c.name]) for c in config.conditions]
    before, sizes = _previous(out)

    def cost(step: str, rates: CostRates | None, kind: str, amount: int, recorded_amount: int | None,
             scale: float = 1.0) -> tuple[float | None, str]:
        old = before.get(step)
        if isinstance(old, dict) and isinstance(old.get("seconds"), (int, float)) and math.isfinite(old["seconds"]):
            ratio = amount / recorded_amount if recorded_amount else 1.0
            return float(old["seconds"]) * ratio, "as the previous run"
        if amount == 0:
            return 0.0, "nothing to train"
        if rates is None:
            return None, ""
        rate = rates.fit_per_query if kind == "fit" else rates.predict_per_pair
        if kind == "fit" and rate == 0.0:
            return 0.0, "nothing to train"
        return rate * amount * scale, _RATE

    def recorded(split: str) -> int | None:
        size = sizes.get(split) if split in ("train", "valid") else json_object(sizes.get("test")).get(split)
        if not isinstance(size, int):  # none recorded (or not a count): the amount is not scaled
            return None
        return size * config.n_candidates if split != "train" else size

    plan = StudyPlan(name, out, splits, [])
    neural: dict[int, tuple[str, str]] = {}  # step's index -> (fit or predict, the ranker's device)
    keys: dict[str, str | None] = {}
    known = exact["train"] and exact["valid"]
    n_pairs = sum(qs.n_pairs for qs in sets.values())
    by_label = {rc.key: rc for rc in ranking.rankers}
    for i, rc in enumerate(ranking.rankers):
        scale = _layer_scale(rc, by_label)
        built = build_ranker(rc)
        rates = _rates(_as_started(rc, built, by_label), rc.init_from is not None, f"rankers[{i}]")
        upstream = keys.get(rc.init_from) if rc.init_from else None
        key = fit_key(rc, data, upstream) if known and (rc.init_from is None or upstream is not None) else None
        if rc.checkpoint is not None:
            step, what = f"load {rc.key}", f"loads its checkpoint {rc.checkpoint}"
            seconds, source = cost(step, None, "fit", 0, None)
            plan.steps.append(StepPlan(step, key, False, seconds, source))
        elif built.trainable is not None:
            step = f"fit {rc.key}"
            cap = built.max_train_queries  # it trains on a seeded subset of at most this many (TrainingLimited)
            n_train = train.n_queries if cap is None else min(cap, train.n_queries)
            trains_on = f"{n_train} queries" if n_train == train.n_queries else \
                f"{n_train} of the {train.n_queries} training queries (max_train_queries)"
            if rc.pretrained is not None:
                what, amount = f"uses {rc.pretrained} as it is when already fitted, else trains on it", 0
            elif rc.init_from is not None:
                what = f"starts from {rc.init_from} (from_ranker), then trains if it is not fitted"
                amount = n_train
            else:
                what, amount = f"trains on {trains_on}", n_train
            folder = out / "models" / f"{file_stem(rc.key)}-{key}"
            cached = resume and key is not None and (folder / ".complete").exists()
            before_train = recorded("train")
            if cap is not None and before_train is not None:
                before_train = min(cap, before_train)
            seconds, source = cost(step, rates, "fit", amount, before_train if amount else None, scale)
            if source == _RATE and built.probe_scaled:
                neural[len(plan.steps)] = ("fit", str(getattr(built.ranker, "device", "cpu")))
            plan.steps.append(StepPlan(step, key, cached, seconds, source))
        else:
            what, key = "is not trained", unfitted_key(rc)
        keys[rc.key] = key
        plan.rankers.append((rc.key, f"{rc.name}; {what}; scores {n_pairs} pairs"))
        for split, qs in sets.items():
            pkey = digest([key, digests[split]]) if exact[split] and key is not None else None
            path = out / "predictions" / f"{file_stem(rc.key)}-{file_stem(split)}-{pkey}.npz"
            step = f"predict {rc.key} {split}"
            seconds, source = cost(step, rates, "predict", qs.n_pairs, recorded(split), scale)
            if source == _RATE and built.probe_scaled:
                neural[len(plan.steps)] = ("predict", str(getattr(built.ranker, "device", "cpu")))
            plan.steps.append(StepPlan(step, pkey, resume and pkey is not None and path.exists(), seconds, source))
    _plan_bayes(plan, comparison, {cond: qs.n_queries for cond, qs in tests.items()}, before if resume else {})
    _calibrate(plan, {i: v for i, v in neural.items() if not plan.steps[i].cached} if calibrate else {})
    return plan


def _plan_bayes(plan: StudyPlan, config: ComparisonSettings, queries: Mapping[str, int],
                before: Mapping[str, object]) -> None:
    """The Bayes stage's fits as steps (``bayes <family>[ <condition>]``), estimated by :data:`BAYES_REFERENCE_SECONDS`.

    A fit a previous run in the folder recorded is estimated at its seconds.
    """
    bayes = config.bayes
    if not bayes.enabled:
        return
    steps = (bayes.draws + bayes.tune) * bayes.chains / 8000

    def seconds(family: str, cells: int) -> float | None:
        if bayes.sampler not in ("nutpie", "auto"):  # measured with nutpie only
            return None
        ref = BAYES_REFERENCE_SECONDS.get(family, max(BAYES_REFERENCE_SECONDS.values()))
        return ref * steps * cells / _BAYES_REFERENCE_CELLS

    fits: list[tuple[str, int]] = []
    if bayes.systems == "trec_covid":
        fits += [(family, _BAYES_REFERENCE_CELLS) for family in bayes.families]
    else:
        conditions = list(bayes.conditions or [c.name for c in config.conditions])
        for cond in conditions:
            systems = len(config.rankers) + sum(1 for r in bayes.runs if r.condition == cond)
            fits += [(f"{family} {cond}", systems * queries.get(cond, 0)) for family in bayes.families]
    for name, cells in fits:
        old = before.get(f"bayes {name}")
        if isinstance(old, dict) and isinstance(old.get("seconds"), (int, float)) and math.isfinite(old["seconds"]):
            plan.steps.append(StepPlan(f"bayes {name}", None, False, float(old["seconds"]), "as the previous run"))
            continue
        estimate = seconds(name.split(" ")[0], cells)
        plan.steps.append(StepPlan(f"bayes {name}", None, False, estimate, _BAYES_SOURCE if estimate is not None
                                   else ""))


def _calibrate(plan: StudyPlan, neural: dict[int, tuple[str, str]]) -> None:
    """Scale the steps ``neural`` names (index -> kind, device) by the speed probe's factors (none: no probe)."""
    if not neural:
        return
    plan.speed = speed = probe_machine(device=next(iter(neural.values()))[1])
    for i, (kind, _) in neural.items():
        step, factor = plan.steps[i], speed.fit if kind == "fit" else speed.predict
        assert step.seconds is not None  # a step estimated at a rate has seconds
        step.reference_seconds = step.seconds
        step.seconds, step.high, step.source = step.seconds * factor.value, step.seconds * factor.high, _CALIBRATED
