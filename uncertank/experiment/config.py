"""A study, described in TOML and validated as a whole by one schema.

A study trains rankers on one dataset and evaluates them under several
conditions (in-domain, cross-negative-sampling, cross-domain), then reports
effectiveness, calibration, risk-aware reranking, NOTA prediction and,
optionally, a Bayesian comparison of systems.

The classes below are pydantic dataclasses: building one checks every type,
range and cross-reference (``init_from`` names an earlier ranker, labels are
distinct, ...), and :func:`study_schema` is their JSON schema, which
documents the file format (docs/experiments.md shows it). :func:`load_config`
reads a file and reports every error on one line with its path in the file
(``rankers[2].params: must be a table ...; got the string 'n_passes=3'``) as
a :class:`StudyConfigError`, and takes every path in the file (a file
dataset's, a ranker's folders) relative to the file's folder, so a study
file runs the same from any working directory. What needs the installed
plugins (names, parameters, checkpoints) is checked by
:func:`uncertank.experiment.preflight.validate_config`, before any work.

The demo's studies are files of this package (:data:`DEMO_STUDIES`,
:func:`demo_study_path`), so the same command runs the same study
everywhere.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import fields, replace
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, TypedDict, TypeVar, cast, overload

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictStr,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.dataclasses import dataclass

from uncertank._schema_errors import describe_value, error_message
from uncertank.validation import check_path, check_path_messages

if TYPE_CHECKING:
    from _typeshed import DataclassInstance
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import ErrorDetails

    from uncertank.compare import Family, Test
    from uncertank.metrics.metric import MetricEntry
    from uncertank.stats import Correction

__all__ = [
    "DEMO_STUDIES",
    "BayesConfig",
    "ComparisonSettings",
    "ConditionConfig",
    "ConformalConfig",
    "DataSettings",
    "DecisionSettings",
    "ExternalRunConfig",
    "GuaranteeSettings",
    "MeasureSettings",
    "RankerConfig",
    "RankerSettings",
    "ReportConfig",
    "StudyConfig",
    "StudyConfigError",
    "TableSettings",
    "demo_config",
    "demo_study_path",
    "load_config",
    "study_schema",
]

#: The studies ``uncertank demo`` runs, files in ``uncertank/experiment/studies/``.
DEMO_STUDIES: tuple[str, ...] = ("quick", "default", "full", "gp")
DemoStudy = Literal["quick", "default", "full", "gp"]

_CONFIG = ConfigDict(extra="forbid")
_Name = Annotated[StrictStr, Field(min_length=1)]
_Count = Annotated[int, Strict(), Field(ge=1)]
_Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
_Section = TypeVar("_Section", bound="DataclassInstance")


class StudyConfigError(ValueError):
    """A study that cannot run: one line per error, each starting with its path in the study file.

    Attributes
    ----------
    errors : tuple of (str, str)
        ``(path, message)`` pairs such as
        ``("rankers[2].params.mc_layers", "must be <= the encoder's 6 layers; got 100")``.
    """

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = tuple(check_path_messages(errors))
        super().__init__("\n".join(f"{path}: {msg}" if path else msg for path, msg in self.errors))


class _At(ValueError):
    """A cross-reference error raised inside a validator, with the path it belongs to."""

    def __init__(self, where: tuple[str | int, ...], message: str) -> None:
        self.where, self.message = where, message
        super().__init__(f"{_path(where, top='')}: {message}")


def _path(loc: tuple[str | int, ...], *, top: str = "study") -> str:
    """``("rankers", 2, "params")`` -> ``rankers[2].params``; a scalar of the study -> ``study.<key>``."""
    if loc and loc[0] not in ("conditions", "rankers", "bayes", "conformal", "report") and top:
        loc = (top, *loc)
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _check_pretrained(value: object) -> object:
    if value is None or (isinstance(value, str) and value):
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise ValueError(
        "must be a model folder (a string), or a list of folders for a ranker of several models; "
        f"got {describe_value(value, 'toml')}"
    )


def _check_metrics(value: object) -> object:
    if value is None or not isinstance(value, (list, tuple)):
        return value  # None, or a type error reported by the schema
    for i, entry in enumerate(value):
        if isinstance(entry, Mapping) and not isinstance(entry.get("name"), str):
            raise _At((i, "name"), f"a metric table needs a name (a string); got keys {sorted(entry)}")
        if not isinstance(entry, (str, Mapping)) and not callable(entry):
            raise _At((i,), "must be a metric name or a table {name = ..., options}; "
                            f"got {describe_value(entry, 'toml')}")
    return tuple(value)


_METRIC_ENTRIES_SCHEMA = {
    "anyOf": [
        {"type": "array", "items": {"anyOf": [
            {"type": "string"},
            {"type": "object", "properties": {"name": {"type": "string"}, "label": {"type": "string"}},
             "required": ["name"], "additionalProperties": True},
        ]}},
        {"type": "null"},
    ],
    "default": None,
}


@dataclass(frozen=True, config=_CONFIG)
class ConditionConfig:
    """One evaluation condition: a dataset's test split under one negative sampler."""

    name: Annotated[_Name, Field(description="The condition's name in the report; distinct within a study.")]
    dataset: Annotated[_Name, Field(description="A registered dataset (`uncertank plugins --kind datasets`).")]
    negatives: _Name = Field(
        default="bm25", description="A registered negative sampler (`uncertank plugins --kind negative_samplers`)."
    )


@dataclass(frozen=True, config=_CONFIG)
class RankerConfig:
    """One ranker: a registered name, its factory's parameters, and where its weights come from.

    At most one of ``init_from`` (an earlier ranker's trained weights),
    ``checkpoint`` (a folder written by the ranker's ``save``) and
    ``pretrained`` (the user's own Hugging Face or sentence-transformers
    model folder) is given; without any, the ranker is built from
    ``params`` and trained when it can be. Relative folders in a study file
    are taken relative to that file. :attr:`key` is its name in reports.
    ``save_to`` must be new, empty, or hold only a model uncertank saved
    there, unless ``overwrite`` is true (and then only the model's own files
    are replaced); the study checks it before any work.
    """

    name: Annotated[_Name, Field(description="A registered ranker (`uncertank plugins --kind rankers`).")]
    params: dict[str, object] = Field(
        default_factory=dict,
        description="Keyword arguments of the ranker's factory, a table: params = { n_passes = 10 }. "
        "With checkpoint, load-time overrides (n_passes, eval_batch_size, ...).",
    )
    label: StrictStr = Field(default="", description="The ranker's name in reports and caches; name by default.")
    init_from: StrictStr | None = Field(
        default=None,
        description="The label of an earlier, trained ranker of the study (a neural one, such as bert) whose "
        "weights this one starts from, through its factory's from_ranker(trained, **params): mc_dropout from "
        "bert is Penha & Hauff's S-BERT^D; an ensemble keeps bert as member 0.",
    )
    checkpoint: StrictStr | None = Field(
        default=None,
        description="A folder written by this ranker's save (its manifest names the same ranker), loaded "
        "instead of trained; keyed by the digest of its files.",
    )
    pretrained: Annotated[str | list[str] | None, BeforeValidator(_check_pretrained)] = Field(
        default=None,
        description="The user's own Hugging Face / sentence-transformers model folder (holding config.json); "
        "a list of folders for a ranker of several models (an ensemble).",
    )
    save_to: StrictStr | None = Field(
        default=None,
        description="A folder the trained ranker is also written to (a checkpoint, as its save writes it), "
        "so that other studies load it by a path that does not change (checkpoint = ...); rewritten only "
        "when the model's key changes, and never half-written. It must be new, empty, or hold only a model "
        "uncertank saved there; a folder holding other files fails the study's check, unless overwrite.",
    )
    overwrite: StrictBool = Field(
        default=False,
        description="With save_to: write into a folder that holds files uncertank did not write. Only the "
        "model's own files are replaced; every other file in the folder is left as it is.",
    )

    @property
    def key(self) -> str:
        """The name used in reports and cache paths."""
        return self.label or self.name


_FAMILY = Literal["gaussian", "zoib", "zoib_rank"]


@dataclass(frozen=True, config=_CONFIG)
class ExternalRunConfig:
    """A run of another system compared beside the study's rankers (a ``[[bayes.runs]]`` table).

    A TREC run file (``qid Q0 docid rank score tag``) that scores the
    condition's test queries and their candidates, by their ids. Its
    per-query value of the compared metric enters the Bayesian comparison of
    that condition as one more system
    (:mod:`uncertank.experiment.external`). ``path`` is taken relative to
    the study file's folder.
    """

    name: Annotated[_Name, Field(
        description="The run's name in the comparison and the report; not a ranker's label. One name may be "
        "given for several conditions (one table each), never twice for one condition."
    )]
    condition: Annotated[_Name, Field(description="The condition whose test queries the run ranks (a [[conditions]] "
                                                  "name).")]
    path: Annotated[_Name, Field(
        description="The TREC run file (qid Q0 docid rank score tag; .gz allowed), relative to the study file's "
        "folder. Every test query of the condition, and only those; documents among the query's candidates only. "
        "Candidates the run leaves out rank after those it scores."
    )]


@dataclass(frozen=True, config=_CONFIG)
class BayesConfig:
    """The Bayesian comparison of systems (the ``[bayes]`` table).

    By default the systems are the study's own rankers: one fit per family
    and condition of their per-query ``metric``, with URisk against the
    ``baseline`` (the study's ``reference`` ranker unless named).
    ``systems = "trec_covid"`` fits the bundled TREC-COVID round 1 runs
    instead (Benham et al. 2021's setting: the worked example the demo
    studies show). ``runs`` adds other systems' TREC run files on a
    condition's test queries beside the study's rankers
    (:class:`ExternalRunConfig`).
    """

    enabled: StrictBool | None = Field(
        default=None,
        description="Run the comparison (true or false); left out, it runs when there is something to compare: "
        "two rankers or more, a run ([[bayes.runs]]), or systems = \"trec_covid\". The study's config records "
        "what was decided.",
    )
    systems: Literal["study", "trec_covid"] = Field(
        default="study",
        description="What is compared: the study's rankers on each condition (\"study\"), or the bundled "
        "TREC-COVID round 1 runs (\"trec_covid\", Benham et al. 2021's example).",
    )
    metric: StrictStr | None = Field(
        default=None,
        description="With systems = \"study\": the label of the per-query ranking metric compared (one of the "
        "study's metrics, e.g. \"MAP\" or \"R@1\"); MAP when the study measures it, else its first ranking metric.",
    )
    conditions: tuple[StrictStr, ...] | None = Field(
        default=None,
        description="With systems = \"study\": the conditions compared (names of [[conditions]]); all by default.",
    )
    retries: Annotated[int, Strict(), Field(ge=0, le=5)] = Field(
        default=1,
        description="Fits again, with twice the draws and tuning steps and target acceptance 0.95, when a fit "
        "fails its convergence checks; after the last, the fit gives no verdict.",
    )
    families: Annotated[tuple[_FAMILY, ...], Field(min_length=1)] = Field(
        default=("gaussian", "zoib"), description="Models fitted, each once; distinct."
    )
    draws: _Count = Field(default=500, description="Posterior draws per chain.")
    tune: Annotated[int, Strict(), Field(ge=0)] = Field(default=500, description="Tuning steps per chain.")
    chains: _Count = Field(default=2, description="Markov chains.")
    sampler: Literal["auto", "pymc", "nutpie", "numpyro"] = Field(
        default="pymc", description="The MCMC sampler; nutpie and numpyro are packages of their own."
    )
    drop_bottom: Annotated[_Number, Field(ge=0.0, lt=1.0)] = Field(
        default=0.0, description="Share of the worst systems left out, in [0, 1)."
    )
    baseline: StrictStr | None = Field(
        default=None,
        description="The system URisk compares against: with systems = \"study\" a ranker's label (the study's "
        "reference by default), with \"trec_covid\" a run (bm25_baseline by default).",
    )
    runs: tuple[ExternalRunConfig, ...] = Field(
        default=(),
        description="With systems = \"study\": other systems' TREC run files ([[bayes.runs]] tables), each "
        "compared beside the study's rankers under its condition, on the same per-query metric.",
    )

    @model_validator(mode="after")
    def _distinct(self) -> BayesConfig:
        seen: set[str] = set()
        for i, fam in enumerate(self.families):
            if fam in seen:
                raise _At(("families", i), f"{fam!r} is listed twice; give each family once")
            seen.add(fam)
        runs: dict[tuple[str, str], int] = {}
        for i, run in enumerate(self.runs):
            earlier = runs.get((run.name, run.condition))
            if earlier is not None:
                raise _At(("runs", i, "name"), f"{run.name!r} is already the name of runs[{earlier}] under "
                          f"{run.condition!r}; give each run of a condition its own name")
            runs[run.name, run.condition] = i
        return self


_Level = Annotated[_Number, Field(gt=0.0, lt=1.0)]


@dataclass(frozen=True, config=_CONFIG)
class ConformalConfig:
    """Thresholds with a guarantee (the ``[conformal]`` table): a stage of its own after the decisions.

    For every ranker and condition, split conformal candidate sets and
    conformal abstention are calibrated on the study's validation queries
    (the training domain) and measured on the condition's test queries
    (:mod:`uncertank.experiment.guarantees`, docs/conformal.md, "In a study").
    """

    enabled: StrictBool = Field(default=True, description="Run the stage.")
    alpha: _Level = Field(
        default=0.1,
        description="Miscoverage level in (0, 1): a candidate set holds a relevant candidate with probability "
        ">= 1 - alpha; conformal abstention keeps the error rate among answered queries <= alpha.",
    )
    delta: _Level = Field(
        default=0.1, description="Abstention's guarantee holds with probability >= 1 - delta over the calibration "
        "draw (Learn-then-Test), in (0, 1).",
    )
    alphas: Annotated[tuple[_Level, ...], Field(min_length=1)] = Field(
        default=(0.05, 0.1, 0.15, 0.2, 0.25, 0.3),
        description="Miscoverage levels of the coverage curve (coverage against 1 - alpha, for the figure); distinct.",
    )
    score: Literal["mean", "quantile", "lower"] = Field(
        default="mean",
        description="The conformity score of a stochastic ranker: its predictive mean, a quantile of its draws, or "
        "the mean minus k_std standard deviations (a deterministic ranker's scores are used as they are).",
    )
    quantile: Annotated[_Number, Field(ge=0.0, le=1.0)] | None = Field(
        default=None, description='With score = "quantile": the quantile of the draws, in [0, 1]; 0.1 when absent.'
    )
    k_std: Annotated[_Number, Field(ge=0.0)] | None = Field(
        default=None,
        description='With score = "lower": standard deviations subtracted from the mean, >= 0; 1 when absent.',
    )
    weighted: StrictBool = Field(
        default=True,
        description="Also weighted split conformal sets under the shifted conditions (every condition but the "
        "first), with likelihood ratios from a domain classifier of validation against test queries.",
    )

    @model_validator(mode="after")
    def _checks(self) -> ConformalConfig:
        seen: dict[float, int] = {}
        for i, a in enumerate(self.alphas):
            if a in seen:
                raise _At(("alphas", i), f"{a:g} is already alphas[{seen[a]}]; give each level once")
            seen[a] = i
        if self.score != "quantile" and self.quantile is not None:
            raise _At(("quantile",), f'applies to score = "quantile"; got score = "{self.score}": leave it out')
        if self.score != "lower" and self.k_std is not None:
            raise _At(("k_std",), f'applies to score = "lower"; got score = "{self.score}": leave it out')
        return self


@dataclass(frozen=True, config=_CONFIG)
class ReportConfig:
    """The report's comparison table, "A paper's table" (the ``[report]`` table).

    The study's rankers on the in-domain condition's per-query ranking
    metrics, each against the ``reference`` ranker, by
    :func:`uncertank.compare_runs` (docs/paper-table.md, "In a study's
    report"). The defaults repeat the tests the report's † marks make (a
    paired t-test, Holm's correction over the whole table), so the table's
    superscripts and the in-domain section's marks say the same.
    """

    test: Literal["t", "wilcoxon", "randomization", "bootstrap", "tukey"] = Field(
        default="t",
        description="The paired test of each ranker against the reference: t, wilcoxon, randomization (Fisher), "
        "bootstrap, or tukey (Tukey's HSD, which adjusts its own p-values).",
    )
    correction: Literal["holm", "bh", "bonferroni", "none"] | None = Field(
        default=None,
        description="The multiple-comparison correction: holm, bh (Benjamini-Hochberg), bonferroni or none; holm "
        "when absent (none with test = \"tukey\", which takes no other).",
    )
    family: Literal["metric", "table"] | None = Field(
        default=None,
        description="What the correction runs over: the comparisons of each metric (\"metric\") or of the whole "
        "table (\"table\"); table when absent (metric with test = \"tukey\", which takes no other).",
    )
    resamples: _Count = Field(
        default=10_000,
        description="Resamples of the queries for the intervals of the mean differences, and draws of a "
        "randomization or bootstrap test.",
    )

    @model_validator(mode="after")
    def _tukey(self) -> ReportConfig:
        if self.test == "tukey" and self.correction not in (None, "none"):
            raise _At(("correction",), f"{self.correction!r} with test = \"tukey\": Tukey's HSD adjusts its p-values "
                      "for all pairs of each metric itself; leave correction out (or \"none\")")
        if self.test == "tukey" and self.family == "table":
            raise _At(("family",), "\"table\" with test = \"tukey\": Tukey's HSD adjusts over the pairs of each "
                      "metric; leave family out (or \"metric\")")
        return self

    @property
    def options(self) -> _CompareOptions:
        """``test``, ``correction``, ``family`` and ``n_resamples`` as :func:`uncertank.compare_runs` takes them."""
        tukey = self.test == "tukey"
        return {"test": self.test, "correction": self.correction or ("none" if tukey else "holm"),
                "family": self.family or ("metric" if tukey else "table"), "n_resamples": self.resamples}


class _CompareOptions(TypedDict):
    """:attr:`ReportConfig.options`: the keyword arguments of :func:`uncertank.compare_runs` it sets."""

    test: Test
    correction: Correction
    family: Family
    n_resamples: int


@dataclass(frozen=True, config=_CONFIG)
class StudyConfig:
    """Everything a study needs: ``[study]``, ``[[conditions]]``, ``[[rankers]]`` and the single tables.

    The single tables are ``[bayes]``, ``[conformal]`` and ``[report]``.

    Every field is described in the JSON schema (:func:`study_schema`,
    shown in docs/experiments.md). ``reference`` is filled in with the first
    ranker's label when not given.
    """

    name: Annotated[StrictStr, Field(description="Report title; the file's name without .toml by default.")]
    train_dataset: Annotated[
        _Name, Field(description="Where the rankers are trained: the dataset's train and valid splits.")
    ]
    conditions: Annotated[tuple[ConditionConfig, ...], Field(
        min_length=1, description="Test conditions ([[conditions]] tables); the first is taken as in-domain."
    )]
    rankers: Annotated[tuple[RankerConfig, ...], Field(
        min_length=1, description="Rankers to train (or load) and evaluate ([[rankers]] tables), in report order."
    )]
    train_negatives: _Name = Field(default="bm25", description="The negative sampler of the train and valid splits.")
    n_candidates: Annotated[int, Strict(), Field(ge=2)] = Field(
        default=10, description="Candidates per query: one relevant and n_candidates - 1 negatives."
    )
    max_train_queries: _Count | None = Field(
        default=None, description="A seeded random subset of the train split; all queries when absent."
    )
    max_valid_queries: _Count | None = Field(default=None, description="A seeded subset of the valid split.")
    max_test_queries: _Count | None = Field(default=None, description="A seeded subset of each condition's test split.")
    max_context_turns: _Count | None = Field(
        default=None, description="Keep only the most recent utterances of a context."
    )
    n_bins: _Count = Field(default=10, description="Bins of the ECE and the reliability diagrams.")
    risk_grid: Annotated[tuple[_Number, ...], Field(min_length=1)] = Field(
        default=(-0.5, -0.2, -0.1, 0.0, 0.1, 0.2, 0.5),
        description="Values of the risk aversion b tried on validation data (risk-aware reranking).",
    )
    nota: StrictBool = Field(default=True, description="Run NOTA prediction on the first condition.")
    metrics: Annotated[
        tuple[object, ...] | None, BeforeValidator(_check_metrics), WithJsonSchema(_METRIC_ENTRIES_SCHEMA)
    ] = Field(
        default=None,
        description="Metric entries of the metrics registry: a name (\"map\") or a table with options "
        "({name = \"recall_at_k\", k = 1}); uncertank.metrics.DEFAULT_STUDY_METRICS when absent.",
    )
    recalibrators: tuple[_Name, ...] | None = Field(
        default=None, description="Registered recalibrators fitted on validation predictions; every one when absent."
    )
    bayes: Annotated[BayesConfig, Field(description="The [bayes] table.")] = BayesConfig()
    conformal: Annotated[ConformalConfig, Field(description="The [conformal] table.")] = ConformalConfig()
    report: Annotated[ReportConfig, Field(description="The [report] table.")] = ReportConfig()
    seed: Annotated[int, Strict(), Field(ge=0)] = Field(
        default=0, description="Seeds data subsets, negative sampling, training and sampling."
    )
    reference: StrictStr | None = Field(
        default=None,
        description="The label of the ranker every comparison (relative changes, significance tests) is "
        "made against; the first ranker when absent.",
    )

    def metric_entries(self) -> list[MetricEntry]:
        """The study's metric entries: ``metrics``, or ``uncertank.metrics.DEFAULT_STUDY_METRICS`` when absent."""
        return _metric_entries(self.metrics)

    def section(self, kind: type[_Section]) -> _Section:
        """The section of the study one stage reads: each field of ``kind`` is the field of the study so named.

        The one place where the study is cut into what each stage sees
        (:class:`DataSettings`, :class:`MeasureSettings`, ...); the runner
        passes each stage its section.

        Examples
        --------
        >>> study = demo_config("quick")
        >>> study.section(DecisionSettings).risk_grid == study.risk_grid
        True
        """
        return kind(**{f.name: getattr(self, f.name) for f in fields(kind)})

    @model_validator(mode="after")
    def _cross_references(self) -> StudyConfig:
        labels: dict[str, int] = {}
        saved: dict[str, int] = {}
        for i, r in enumerate(self.rankers):
            if r.key in labels:
                raise _At(("rankers", i, "label"), f"{r.key!r} is already the label of rankers[{labels[r.key]}]; "
                          "labels must be distinct (set label = ...)")
            given = [k for k in ("init_from", "checkpoint", "pretrained") if getattr(r, k) is not None]
            if len(given) > 1:
                got = " and ".join(f"{k} = {getattr(r, k)!r}" for k in given)
                raise _At(("rankers", i), f"give {' or '.join(given)}, not both (got {got})")
            if r.save_to is not None and r.checkpoint is not None:
                raise _At(("rankers", i, "save_to"), f"a checkpoint is loaded, not trained: nothing new to save "
                          f"(got checkpoint = {r.checkpoint!r})")
            if r.overwrite and r.save_to is None:
                raise _At(("rankers", i, "overwrite"), "applies to save_to, which is not given; leave it out "
                          "or give save_to = \"<folder>\"")
            if r.save_to is not None and r.save_to in saved:
                raise _At(("rankers", i, "save_to"), f"{r.save_to!r} is already the save_to of "
                          f"rankers[{saved[r.save_to]}]; folders must be distinct")
            if r.save_to is not None:
                saved[r.save_to] = i
            if r.init_from is not None and r.init_from not in labels:
                earlier = ", ".join(repr(k) for k in labels) or "none"
                raise _At(("rankers", i, "init_from"),
                          f"must name an earlier ranker's label; got {r.init_from!r} (earlier: {earlier})")
            labels[r.key] = i
        names: dict[str, int] = {}
        for i, c in enumerate(self.conditions):
            if c.name in names:
                raise _At(("conditions", i, "name"),
                          f"{c.name!r} is already the name of conditions[{names[c.name]}]; names must be distinct")
            names[c.name] = i
        if self.reference is None:
            object.__setattr__(self, "reference", self.rankers[0].key)
        elif self.reference not in labels:
            raise _At(("reference",), f"must be the label of a ranker of the study ({', '.join(map(repr, labels))}); "
                      f"got {self.reference!r}")
        self._check_bayes(labels, names)
        return self

    def _check_bayes(self, labels: dict[str, int], conditions: dict[str, int]) -> None:
        """``[bayes]`` against the study: what a comparison of the study's rankers needs of it.

        An ``enabled`` left out is decided here: on when there is something
        to compare (two rankers or more, an external run, or the TREC-COVID
        runs).
        """
        bayes = self.bayes
        if bayes.enabled is None:
            bayes = replace(bayes, enabled=bayes.systems == "trec_covid" or len(labels) >= 2 or bool(bayes.runs))
            object.__setattr__(self, "bayes", bayes)
        if not bayes.enabled:
            return
        if bayes.systems == "trec_covid":
            for key in ("metric", "conditions"):
                if getattr(bayes, key) is not None:
                    raise _At(("bayes", key), 'applies to systems = "study" (the study\'s rankers); the TREC-COVID '
                              "runs are compared by their own per-topic scores: leave it out")
            if bayes.runs:
                raise _At(("bayes", "runs"), 'applies to systems = "study": runs are compared beside the study\'s '
                          "rankers, not beside the TREC-COVID runs; leave it out or drop systems = \"trec_covid\"")
            return
        self._check_runs(labels, conditions)
        if len(labels) < 2 and not bayes.runs:
            raise _At(("bayes", "enabled"), f"comparing the study's rankers needs at least two; the study has "
                      f"{len(labels)} ({', '.join(map(repr, labels))}): add a ranker, set enabled = false, or "
                      'systems = "trec_covid" for the bundled example')
        if len(labels) < 2:
            alone = [c for c in (bayes.conditions or conditions) if all(r.condition != c for r in bayes.runs)]
            if alone:
                where = ("bayes", "conditions") if bayes.conditions is not None else ("bayes", "runs")
                raise _At(where, f"a comparison needs two systems or more under each condition compared; "
                          f"{', '.join(map(repr, alone))} would have only the study's one ranker "
                          f"({', '.join(map(repr, labels))}): add a run for it, or name the conditions compared "
                          "(conditions = [...])")
        if "zoib_rank" in bayes.families:
            raise _At(("bayes", "families", bayes.families.index("zoib_rank")),
                      "'zoib_rank' models per-rank gains of TREC runs, which a study's rankers do not give; "
                      "use 'gaussian' or 'zoib' (or systems = \"trec_covid\")")
        if bayes.baseline is not None and bayes.baseline not in labels:
            raise _At(("bayes", "baseline"), f"must be the label of a ranker of the study "
                      f"({', '.join(map(repr, labels))}); got {bayes.baseline!r}")
        for i, cond in enumerate(bayes.conditions or ()):
            if cond not in conditions:
                raise _At(("bayes", "conditions", i), f"must name a condition of the study "
                          f"({', '.join(map(repr, conditions))}); got {cond!r}")

    def _check_runs(self, labels: dict[str, int], conditions: dict[str, int]) -> None:
        """``[[bayes.runs]]`` against the study: a condition it compares, a name that is no ranker's label."""
        bayes = self.bayes
        for i, run in enumerate(bayes.runs):
            if run.name in labels:
                raise _At(("bayes", "runs", i, "name"), f"{run.name!r} is the label of rankers[{labels[run.name]}]; "
                          "a run needs a name of its own in the comparison")
            if run.condition not in conditions:
                raise _At(("bayes", "runs", i, "condition"), f"must name a condition of the study "
                          f"({', '.join(map(repr, conditions))}); got {run.condition!r}")
            if bayes.conditions is not None and run.condition not in bayes.conditions:
                raise _At(("bayes", "runs", i, "condition"), f"{run.condition!r} is not among the conditions compared "
                          f"(bayes.conditions = {list(bayes.conditions)}): the run would not be compared; add the "
                          "condition there or leave the run out")


def _metric_entries(metrics: tuple[object, ...] | None) -> list[MetricEntry]:
    """``metrics`` as a list, or ``uncertank.metrics.DEFAULT_STUDY_METRICS`` when None.

    The schema checks each entry only as far as a study file can write it (a name, or a table with one; a
    callable from Python); :func:`~uncertank.metrics.resolve_metrics` refuses what is no metric entry.
    """
    from uncertank.metrics import DEFAULT_STUDY_METRICS

    if metrics is None:
        return list(DEFAULT_STUDY_METRICS)
    return cast("list[MetricEntry]", list(metrics))


# -- what each stage of a study reads ----------------------------------------------------------------------------------
#
# A stage of the runner takes its section, never the whole StudyConfig: the fields it reads, each named and typed as
# the StudyConfig field it is copied from (StudyConfig.section builds them), so the signature of a stage says what it
# depends on.


@dataclasses.dataclass(frozen=True)
class DataSettings:
    """What stage 1 (:func:`~uncertank.experiment.runner.load_data`) reads: the datasets and how to sample them."""

    train_dataset: str
    train_negatives: str
    conditions: tuple[ConditionConfig, ...]
    n_candidates: int
    max_train_queries: int | None
    max_valid_queries: int | None
    max_test_queries: int | None
    max_context_turns: int | None
    seed: int


@dataclasses.dataclass(frozen=True)
class RankerSettings:
    """What stages 2 and 3 (:func:`~uncertank.experiment.runner.fit_rankers`, ``predict_all``) read: ``[[rankers]]``."""

    rankers: tuple[RankerConfig, ...]


@dataclasses.dataclass(frozen=True)
class MeasureSettings:
    """What stage 4 (:func:`~uncertank.experiment.runner.measure`) reads: metrics, recalibrators, bins."""

    rankers: tuple[RankerConfig, ...]
    conditions: tuple[ConditionConfig, ...]
    metrics: tuple[object, ...] | None
    recalibrators: tuple[str, ...] | None
    n_bins: int
    seed: int

    def metric_entries(self) -> list[MetricEntry]:
        """As :meth:`StudyConfig.metric_entries`."""
        return _metric_entries(self.metrics)


@dataclasses.dataclass(frozen=True)
class DecisionSettings:
    """What stage 5 (:func:`~uncertank.experiment.decisions.decide`) reads: the risk grid, NOTA, the reference."""

    rankers: tuple[RankerConfig, ...]
    conditions: tuple[ConditionConfig, ...]
    reference: str | None
    risk_grid: tuple[float, ...]
    nota: bool
    seed: int


@dataclasses.dataclass(frozen=True)
class GuaranteeSettings:
    """What stage 6 (:func:`~uncertank.experiment.guarantees.guarantees`) reads: ``[conformal]`` and the reference."""

    rankers: tuple[RankerConfig, ...]
    conditions: tuple[ConditionConfig, ...]
    reference: str | None
    conformal: ConformalConfig


@dataclasses.dataclass(frozen=True)
class ComparisonSettings:
    """What the external runs and the Bayesian comparison read: ``[bayes]`` and the systems it compares.

    Stages :mod:`uncertank.experiment.external` (``[[bayes.runs]]``) and
    :func:`~uncertank.experiment.systems.compare_systems`.
    """

    rankers: tuple[RankerConfig, ...]
    conditions: tuple[ConditionConfig, ...]
    reference: str | None
    metrics: tuple[object, ...] | None
    bayes: BayesConfig
    seed: int

    def metric_entries(self) -> list[MetricEntry]:
        """As :meth:`StudyConfig.metric_entries`."""
        return _metric_entries(self.metrics)


@dataclasses.dataclass(frozen=True)
class TableSettings:
    """What the paper's table (:func:`~uncertank.experiment.table.study_paper_table`) reads: ``[report]``."""

    rankers: tuple[RankerConfig, ...]
    conditions: tuple[ConditionConfig, ...]
    metrics: tuple[object, ...] | None
    report: ReportConfig
    seed: int

    def metric_entries(self) -> list[MetricEntry]:
        """As :meth:`StudyConfig.metric_entries`."""
        return _metric_entries(self.metrics)


_TABLES = {"conditions": ConditionConfig, "rankers": RankerConfig, "bayes": BayesConfig,
           "conformal": ConformalConfig, "report": ReportConfig}
#: The tables given once (``[bayes]``), not as a list (``[[rankers]]``).
_SINGLE = ("bayes", "conformal", "report")


# -- reading a study file --------------------------------------------------------------------------------------------


def _load_toml(path: Path) -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            table: dict[str, object] = tomllib.load(fh)  # tomli, on Python 3.10, is untyped here
            return table
    except FileNotFoundError:
        raise FileNotFoundError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"config file {path} is a folder; give the study file (a .toml) in it") from None
    except OSError as exc:  # no permission, an I/O error: the library's message, the OS's reason
        raise type(exc)(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyConfigError([("", f"not valid TOML: {exc}")]) from None
    except UnicodeDecodeError as exc:
        raise StudyConfigError([("", f"not valid TOML: a study file is UTF-8 text; {exc}")]) from None


def _study_file_keys(loc: tuple[str | int, ...]) -> list[str]:
    """The keys allowed in the table holding ``loc``."""
    parent = [p for p in loc[:-1] if isinstance(p, str)]
    cls: type[DataclassInstance] = _TABLES.get(parent[0], StudyConfig) if parent else StudyConfig
    if parent[:2] == ["bayes", "runs"]:
        cls = ExternalRunConfig
    names = [f.name for f in fields(cls)]
    return [n for n in names if n not in _TABLES] if cls is StudyConfig else names


def _study_file_error(err: ErrorDetails) -> tuple[tuple[str | int, ...], str]:
    """One pydantic error as (location, the message a study file's author reads)."""
    loc: tuple[str | int, ...] = tuple(err["loc"])
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    got = describe_value(value, "toml")
    if kind == "value_error" and isinstance(ctx.get("error"), _At):
        return (*loc, *ctx["error"].where), ctx["error"].message
    if kind == "value_error":
        return loc, str(ctx.get("error", err["msg"]))
    if kind == "string_type" and loc and loc[-1] in ("checkpoint", "pretrained"):
        return loc, f"must be a folder path (a string); got {got}"
    if kind == "dict_type" and loc and loc[-1] == "params":
        return loc, f"must be a table of the factory's keyword arguments, e.g. params = {{ n_passes = 3 }}; got {got}"
    if kind in ("tuple_type", "list_type", "iterable_type"):
        if loc and loc[-1] in _TABLES and loc[-1] not in _SINGLE:
            return loc, f"must be a list of [[{loc[-1]}]] tables; got {got}"
        if isinstance(value, str):
            return loc, f'must be a list (write ["{value}"]); got {got}'
    return loc, error_message(err, "toml", lambda: _study_file_keys(loc))


def _errors(exc: ValidationError) -> list[tuple[str, str]]:
    """One ``(path, message)`` per error, leaving out those implied by an error inside them."""
    described = [_study_file_error(e) for e in exc.errors()]
    out: list[tuple[str, str]] = []
    for loc, msg in described:
        inner = any(other != loc and other[: len(loc)] == loc for other, _ in described)
        if inner and msg.startswith("must hold at least"):
            continue
        line = (_path(loc), msg)
        if line not in out:
            out.append(line)
    return out


#: The keys of a ``[[rankers]]`` table that name a folder.
_FOLDER_KEYS = ("checkpoint", "pretrained", "save_to")


@overload
def _resolve(value: str, base: Path) -> str: ...


@overload
def _resolve(value: object, base: Path) -> object: ...


def _resolve(value: object, base: Path) -> object:
    """A path of a study file, taken relative to the file's folder ``base`` (other values as they are).

    ``~`` is the user's home; an absolute path is kept as given (made
    canonical). A list is resolved entry by entry.
    """
    if isinstance(value, str) and value:
        return str((base / Path(value).expanduser()).resolve())
    if isinstance(value, list):
        return [_resolve(v, base) for v in value]
    return value


def _dataset_path(name: object, base: Path) -> object:
    """A file dataset's name with its path taken from ``base``: ``tsv:d/{split}.tsv`` -> ``tsv:<base>/d/{split}.tsv``.

    A file dataset is one whose registered loader reads files, i.e. has
    ``resolve(arg, split)`` (``tsv:``, ``jsonl:``, a plugin's prefix that
    does the same); ``{split}`` is kept. Any other name (``ubuntu-sample``,
    an unknown one, which :func:`~uncertank.experiment.preflight.validate_config`
    names) is returned as written.
    """
    if not isinstance(name, str) or ":" not in name:
        return name
    from uncertank.datasets._load import resolve_dataset
    from uncertank.hookspecs import dataset_loader_capabilities
    from uncertank.plugins import get_factory

    try:
        prefix, arg = resolve_dataset(name)
        loader = get_factory("datasets", prefix)
    except (ValueError, TypeError):
        return name
    if not arg or dataset_loader_capabilities(loader).resolving is None:
        return name
    return prefix + _resolve(arg, base)


def _from_file(raw: Mapping[str, object], path: Path) -> dict[str, object]:
    """The file's tables as the keyword arguments of :class:`StudyConfig`, every path taken from the file's folder.

    The paths of a study file: a file dataset's (``train_dataset``,
    ``conditions[i].dataset``: ``tsv:PATH``, ``jsonl:PATH``), a ranker's
    ``checkpoint``, ``pretrained`` and ``save_to``, and a run's
    (``bayes.runs[i].path``). ``params`` are the
    factory's own and passed as written.
    """
    errors: list[tuple[str, str]] = []
    unknown = [k for k in raw if k not in ("study", *_TABLES)]
    for key in unknown:
        errors.append((key, f"unknown table; known: study, {', '.join(_TABLES)}"))
    study = raw.get("study", {})
    if not isinstance(study, dict):
        errors.append(("study", f"must be a table ([study]); got {describe_value(study, 'toml')}"))
        study = {}
    for key in _TABLES:
        if key in study:
            form = f"[{key}] table" if key in _SINGLE else f"[[{key}]] tables"
            errors.append((f"study.{key}", f"give {key} as {form}, not inside [study]"))
    if errors:
        raise StudyConfigError(errors)
    data: dict[str, object] = {"name": path.stem, **study}
    for key in _TABLES:
        if key in raw:
            data[key] = raw[key]
    base = path.parent
    if "train_dataset" in data:
        data["train_dataset"] = _dataset_path(data["train_dataset"], base)
    conditions, rankers = data.get("conditions"), data.get("rankers")
    if isinstance(conditions, list):
        data["conditions"] = [
            {**c, "dataset": _dataset_path(c["dataset"], base)} if isinstance(c, dict) and "dataset" in c else c
            for c in conditions
        ]
    if isinstance(rankers, list):
        data["rankers"] = [
            {**r, **{k: _resolve(r[k], base) for k in _FOLDER_KEYS if k in r}} if isinstance(r, dict) else r
            for r in rankers
        ]
    bayes = data.get("bayes")
    runs = bayes.get("runs") if isinstance(bayes, dict) else None
    if isinstance(bayes, dict) and isinstance(runs, list):
        data["bayes"] = {**bayes, "runs": [
            {**r, "path": _resolve(r["path"], base)} if isinstance(r, dict) and "path" in r else r
            for r in runs
        ]}
    return data


def load_config(path: str | PathLike[str]) -> StudyConfig:
    """Read and validate a study file.

    The file has a ``[study]`` table with the scalar fields of
    :class:`StudyConfig`, ``[[conditions]]`` and ``[[rankers]]`` arrays of
    tables, and optional ``[bayes]``, ``[conformal]`` and ``[report]`` tables (the JSON schema of
    :func:`study_schema`). Every key is checked: its type (``"4"`` is not an
    integer, ``"no"`` not a boolean), its range, and the cross-references
    between rankers. Every path in the file (a file dataset's ``tsv:PATH``
    or ``jsonl:PATH``, a ranker's ``checkpoint``, ``pretrained`` and
    ``save_to``, a run's ``bayes.runs[i].path``) is taken relative to the
    file's folder, wherever the study runs from, and made absolute; an
    absolute path is kept. What needs the
    installed plugins is checked by
    :func:`~uncertank.experiment.preflight.validate_config` when the study
    runs, before any work.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    StudyConfigError
        One line per error, each starting with its path in the file
        (``study.n_candidates: must be an integer; got the string '4'``).
    """
    p = check_path(path, "path")
    data = _from_file(_load_toml(p), p)
    try:
        return TypeAdapter(StudyConfig).validate_python(data)
    except ValidationError as exc:
        raise StudyConfigError(_errors(exc)) from None


def study_schema() -> JsonSchemaValue:
    """The JSON schema of a study file: ``[study]``, ``[[conditions]]``, ``[[rankers]]`` and the single tables.

    Generated from :class:`StudyConfig`; docs/experiments.md shows it and a
    test keeps the two equal.

    Examples
    --------
    >>> sorted(study_schema()["properties"])
    ['bayes', 'conditions', 'conformal', 'rankers', 'report', 'study']
    """
    full = TypeAdapter(StudyConfig).json_schema()
    defs = full.pop("$defs", {})
    props = dict(full["properties"])
    tables = {k: props.pop(k) for k in _TABLES}
    study = {
        "description": "The [study] table.",
        "type": "object",
        "properties": props,
        "required": [k for k in full.get("required", []) if k not in _TABLES and k != "name"],
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "uncertank study file",
        "description": "A study for `uncertank run`: a [study] table, [[conditions]] and [[rankers]] tables, "
        "and optional [bayes], [conformal] and [report] tables. TOML has no null: a key whose value may be null is "
        "left out.",
        "type": "object",
        "properties": {"study": study, **tables},
        "required": ["study", "conditions", "rankers"],
        "additionalProperties": False,
        "$defs": defs,
    }


# -- the demo's studies ------------------------------------------------------------------------------------------------


def demo_study_path(name: DemoStudy = "default") -> Path:
    """The study file ``uncertank demo`` runs (``uncertank demo --show`` prints it).

    Parameters
    ----------
    name : {"quick", "default", "full", "gp"}
        ``quick``: a smoke run (one MiniLM layer, a few hundred queries; it
        checks that everything runs, its numbers are not evidence).
        ``default``: three MiniLM layers, mean-pooled, fine-tuned on 3,000
        queries, under 15 minutes on two CPU cores with every neural ranker
        clearly trained. ``full``: Penha & Hauff's setting on the whole
        sample (all six layers, M = 5, T = 10); hours on a CPU. ``gp``: the
        default study with the GP rankers (``sngp``, ``gpf_bert``, ``pgdrr``)
        added, each a GP head on a copy of bert's fine-tuned encoder.

    Raises
    ------
    ValueError
        When ``name`` is not one of :data:`DEMO_STUDIES`.

    Examples
    --------
    >>> demo_study_path("quick").name
    'quick.toml'
    """
    from uncertank.validation import check_choice

    check_choice(name, "name", DEMO_STUDIES)
    return Path(str(resources.files("uncertank.experiment").joinpath("studies").joinpath(f"{name}.toml")))


def demo_config(name: DemoStudy = "default") -> StudyConfig:
    """The demo's study ``name`` (:func:`demo_study_path`), read from its file in the package.

    Ubuntu (sample) with BM25 negatives for training; test conditions:
    in-domain (BM25 negatives), cross-negative-sampling (random and
    embedding negatives), cross-domain (chitchat, BM25 negatives). Rankers:
    the BM25 baseline, ``bert`` fine-tuned from the packaged MiniLM,
    ``mc_dropout`` with ``bert``'s weights (Penha & Hauff's S-BERT^D),
    ``ensemble`` with ``bert`` as member 0 (and the GP rankers in ``gp``);
    ``bert`` is the reference. The same study on every machine: a missing
    plugin or package stops the run before any work, naming the ``pip``
    command that installs it.
    """
    return load_config(demo_study_path(name))
