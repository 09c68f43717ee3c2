"""The typed result of a study: what :func:`~uncertank.experiment.run_study` returns.

A :class:`StudyResult` holds one :class:`Evaluation` per ranker and test
condition (every metric, per-query values for significance tests,
recalibrated calibration, the reliability curve with its
:class:`CalibrationDetail`, ECE against the imbalance ratio, risk-aware
reranking, selective prediction, NOTA, thresholds with a guarantee), the :class:`Significance` of the
comparisons the report marks, the Bayesian comparison per model family, and
one :class:`StepInfo` per cached step (its key, the cost of the run that
computed it, and whether this run reused it). ``to_dict`` / ``from_dict``
give the JSON form written to ``results.json``: the report is drawn from
that file alone (``uncertank report DIR``).

:meth:`StudyResult.from_json` (and ``from_dict``) validate the whole
document before anything is built: every key the report reads, its type
(a number, not a string; an integer, not a float; true or false, not 0 or
1), no unknown key. Each error is one line with its JSON path
(``evaluations[3].metrics.ECE: must be a number; got the string 'abc'``),
raised together as a :class:`ResultsFileError`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ConfigDict
from typing_extensions import NotRequired, TypedDict

from uncertank._schema_errors import describe_value, error_message
from uncertank.files import JSONValue
from uncertank.validation import check_name, check_path_messages

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError
    from pydantic.json_schema import JsonSchemaValue
    from pydantic_core import ErrorDetails

__all__ = [
    "BayesOutcome",
    "CalibrationDetail",
    "Comparison",
    "ConformalOutcome",
    "Curve",
    "Evaluation",
    "ExternalRunOutcome",
    "NotaOutcome",
    "PaperTable",
    "ResultsFileError",
    "RiskOutcome",
    "RiskTest",
    "SelectiveOutcome",
    "Significance",
    "StepInfo",
    "StudyResult",
    "results_schema",
]


def json_object(value: object) -> Mapping[str, object]:
    """``value`` when it is a JSON object (a mapping), else an empty one: an optional table of ``results.json``.

    Examples
    --------
    >>> json_object({"k": 1}), json_object(None)
    ({'k': 1}, {})
    """
    return value if isinstance(value, Mapping) else {}


def json_number(value: object) -> float:
    """A number of ``results.json`` (an int or a float there) as a float, as ``float(value)`` gives it.

    Raises
    ------
    TypeError
        When ``value`` is not a number (nor a string of one).
    """
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"must be a number; got {type(value).__name__}")


#: Read by pydantic when ``results.json`` is validated: an unknown key is an error, not dropped.
_STRICT: ConfigDict = {"extra": "forbid"}


@dataclass
class StepInfo:
    """One cached step of a study.

    Attributes
    ----------
    key : str
        Digest of everything the step depends on (parameters, the content of
        its data, the keys of the steps before it, library and plugin
        versions); a changed input changes the key and recomputes the step.
    seconds : float
        Wall time of the run that computed the step (kept on resume).
    resumed : bool
        True when this run reused the step instead of computing it.
    estimated_seconds : float or None
        What the plan estimated for the step before it ran (the rankers'
        rates, calibrated to the machine by the speed probe, or a previous
        run's seconds), beside ``seconds`` to show how far it was; None when
        the step had no estimate or was reused.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    key: str
    seconds: float
    resumed: bool = False
    estimated_seconds: float | None = None


@dataclass
class Curve:
    """A reliability curve: only the bins that hold predictions."""

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    mean_confidence: list[float]
    fraction_relevant: list[float]
    count: list[int]


@dataclass
class CalibrationDetail:
    """What lies under one ranker's ECE under one condition, from its reliability curve (uniform bins).

    Attributes
    ----------
    bias : float
        Signed bias over all pairs: mean score minus the fraction of relevant
        pairs (> 0: the scores over-estimate relevance). When every bin
        over-estimates, the ECE equals this bias whatever the binning.
    over_bins, filled_bins : int
        Bins whose mean score exceeds their fraction relevant, of the bins
        that hold pairs.
    mce_all : float
        The largest gap between mean score and fraction relevant over every
        filled bin (a bin of one pair included).
    mce_min_count : int
        The fewest pairs a bin needs to count in ``mce``.
    mce : float or None
        The largest gap over the bins holding at least ``mce_min_count``
        pairs; None when no bin holds that many.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    bias: float
    over_bins: int
    filled_bins: int
    mce_all: float
    mce_min_count: int
    mce: float | None

    @property
    def every_bin_over(self) -> bool:
        """Whether every filled bin over-estimates (then ECE equals ``bias``)."""
        return self.filled_bins > 0 and self.over_bins == self.filled_bins


@dataclass
class RiskOutcome:
    """Risk-aware reranking (Penha & Hauff eq. 7) of one ranker under one condition.

    Attributes
    ----------
    b : float
        Risk aversion chosen on validation R@1.
    valid_curve : dict
        ``b -> validation R@1`` over the grid (the choice).
    test_curve : dict
        ``b -> test R@1`` over the grid (R@1 against b, for the figure).
    r1_mean, r1_risk_aware : float
        Test R@1 ranking by the mean, and risk-aware with the chosen ``b``.
    p_value : float or None
        Paired t-test over queries of the two; None when they never differ.
    oracle_b, r1_oracle, p_value_oracle : float or None
        An upper bound, not a result: the ``b`` of the grid with the best
        *test* R@1 (the smallest ``|b|`` on ties), that R@1, and its paired
        t-test against ranking by the mean. If even the oracle gains nothing
        significant, the uncertainty carries no risk signal on this data.
    mixed_means_from : str or None
        The study's reference ranker when it is deterministic and another
        ranker: risk-aware reranking then also runs on the reference's means
        with this ranker's (co)variances (Penha & Hauff's RA-BERT mixes
        bert's means with an ensemble's variances).
    mixed_b, r1_mixed_mean, r1_mixed, p_value_mixed : float or None
        That mixed reranking: ``b`` chosen on validation, test R@1 by the
        reference's means and risk-aware, and their paired t-test.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    b: float
    valid_curve: dict[float, float]
    test_curve: dict[float, float]
    r1_mean: float
    r1_risk_aware: float
    p_value: float | None
    oracle_b: float | None = None
    r1_oracle: float | None = None
    p_value_oracle: float | None = None
    mixed_means_from: str | None = None
    mixed_b: float | None = None
    r1_mixed_mean: float | None = None
    r1_mixed: float | None = None
    p_value_mixed: float | None = None


@dataclass
class SelectiveOutcome:
    """Selective prediction: abstain on the queries whose top candidate is least certain.

    ``coverage[i]`` is the fraction of queries answered and ``risk[i]`` the
    error rate (top candidate not relevant) among them; ``aurc`` the area
    under that curve (lower is better). ``confidence`` names the certainty
    used to order the queries.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    confidence: str
    coverage: list[float]
    risk: list[float]
    aurc: float
    oracle_aurc: float


@dataclass
class NotaOutcome:
    """NOTA prediction on the in-domain condition (macro-F1 over stratified folds)."""

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    f1_means: float
    f1_means_sd: float
    f1_means_var: float | None = None
    f1_means_var_sd: float | None = None
    p_value: float | None = None


@dataclass
class ConformalOutcome:
    """Thresholds with a guarantee for one ranker under one condition (:mod:`uncertank.experiment.guarantees`).

    Calibrated on the study's validation queries, measured on the
    condition's test queries; see docs/conformal.md, "In a study".

    Attributes
    ----------
    score : str
        The conformity score thresholded: ``"score"`` (a deterministic
        ranker's scores), ``"mean"``, ``"quantile"`` or ``"lower"`` (of a
        stochastic ranker's draws).
    alpha, delta : float
        The miscoverage level (target coverage ``1 - alpha``) and the
        probability that abstention's guarantee fails.
    n_calibration, n_test : int
        Validation queries calibrated on; test queries measured.
    threshold : float or None
        The split conformal threshold on the score: the set of a query is
        its candidates scoring ``>=`` it. None when no finite threshold is
        valid (too few calibration queries, or too many without a relevant
        candidate): every candidate is kept.
    feasible : bool
        False when coverage ``1 - alpha`` cannot be reached on these
        calibration queries.
    coverage, coverage_lower, coverage_upper : float
        The share of test queries whose set holds a relevant candidate,
        with its Clopper-Pearson 95% interval.
    mean_size : float
        Mean candidates per set over the test queries.
    abstain_threshold : float or None
        Conformal abstention's threshold on the top candidate's score; None
        when no threshold is certified (abstain on every query).
    answer_rate : float
        The share of test queries answered (top score ``>=`` the threshold).
    error_rate : float or None
        The share of answered test queries whose top candidate is not
        relevant; None when none is answered.
    exchangeable : bool
        False when the Kolmogorov-Smirnov test of the queries' top scores
        rejects exchangeability of calibration and test queries at 0.05.
    exchangeability_statistic, exchangeability_p : float
        Its distance and p-value.
    weighted_coverage, weighted_coverage_lower, weighted_coverage_upper : float or None
        Weighted split conformal (likelihood ratios from a domain
        classifier) under a shifted condition: coverage and its interval;
        None under the first condition or without ``[conformal] weighted``.
    weighted_mean_size : float or None
        Mean size of the weighted sets.
    effective_size : float or None
        The effective calibration size of the weights, ``(sum w)^2 / sum w^2``.
    curve_alpha, curve_coverage, curve_size : list of float
        The coverage curve: per level of ``[conformal] alphas``, the test
        coverage and mean set size.
    reference : str or None
        The study's reference ranker the set sizes are compared with; None
        for the reference itself (or when it was not evaluated).
    reference_mean_size : float or None
        Its mean set size on the same test queries, at the same ``alpha``.
    size_p_value : float or None
        Two-sided paired t-test over test queries of the set sizes against
        the reference's; None when the sizes never differ.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    score: str
    alpha: float
    delta: float
    n_calibration: int
    n_test: int
    threshold: float | None
    feasible: bool
    coverage: float
    coverage_lower: float
    coverage_upper: float
    mean_size: float
    abstain_threshold: float | None
    answer_rate: float
    error_rate: float | None
    exchangeable: bool
    exchangeability_statistic: float
    exchangeability_p: float
    weighted_coverage: float | None = None
    weighted_coverage_lower: float | None = None
    weighted_coverage_upper: float | None = None
    weighted_mean_size: float | None = None
    effective_size: float | None = None
    curve_alpha: list[float] = field(default_factory=list)
    curve_coverage: list[float] = field(default_factory=list)
    curve_size: list[float] = field(default_factory=list)
    reference: str | None = None
    reference_mean_size: float | None = None
    size_p_value: float | None = None


@dataclass
class Evaluation:
    """Everything measured for one ranker under one test condition.

    Attributes
    ----------
    ranker, condition : str
        Report labels.
    probabilistic : bool
        The ranker's own claim that its scores are P(relevant); calibration
        is measured only then.
    stochastic : bool
        Whether the ranker gave predictive samples (risk, variances for NOTA).
    metrics : dict
        Metric label -> value (ranking metrics always, calibration metrics
        when probabilistic).
    per_query : dict
        Ranking-metric label -> per-query values, for paired tests.
    recalibrated : dict
        Recalibrator name -> calibration label -> value (fitted on validation).
    mean_std : float or None
        Mean predictive standard deviation over pairs (stochastic rankers).
    conformal : ConformalOutcome or None
        Thresholds with a guarantee (None when the study did not run the
        stage, as in results written before it existed).
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    ranker: str
    condition: str
    probabilistic: bool
    stochastic: bool
    metrics: dict[str, float]
    per_query: dict[str, list[float]] = field(default_factory=dict)
    recalibrated: dict[str, dict[str, float]] = field(default_factory=dict)
    reliability: Curve | None = None
    imbalance: dict[int, float] | None = None
    risk: RiskOutcome | None = None
    selective: SelectiveOutcome | None = None
    nota: NotaOutcome | None = None
    mean_std: float | None = None
    calibration: CalibrationDetail | None = None
    conformal: ConformalOutcome | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evaluation:
        """Rebuild from :func:`dataclasses.asdict` output (JSON keys are strings)."""
        d = dict(d)
        if d.get("reliability") is not None:
            d["reliability"] = Curve(**d["reliability"])
        if d.get("imbalance") is not None:
            d["imbalance"] = {int(k): float(v) for k, v in d["imbalance"].items()}
        if d.get("risk") is not None:
            r = dict(d["risk"])
            r["valid_curve"] = {float(k): float(v) for k, v in r["valid_curve"].items()}
            r["test_curve"] = {float(k): float(v) for k, v in r["test_curve"].items()}
            d["risk"] = RiskOutcome(**r)
        if d.get("selective") is not None:
            d["selective"] = SelectiveOutcome(**d["selective"])
        if d.get("nota") is not None:
            d["nota"] = NotaOutcome(**d["nota"])
        if d.get("calibration") is not None:
            d["calibration"] = CalibrationDetail(**d["calibration"])
        if d.get("conformal") is not None:
            d["conformal"] = ConformalOutcome(**d["conformal"])
        return cls(**d)


@dataclass(frozen=True)
class Comparison:
    """One ranker against the reference on one metric under one condition.

    Attributes
    ----------
    ranker, reference, condition, metric : str
        What is compared.
    value, reference_value : float
        The two values of the metric.
    change : float or None
        Relative change in percent (:func:`~uncertank.experiment.analysis.relative_change`).
    better : bool or None
        Whether ``ranker`` is better than the reference (by ``higher_is_better``);
        None when they are equal.
    p_value : float or None
        Two-sided paired t-test over the per-query values; None when the
        study holds no per-query values of this metric for both rankers (or
        they differ in length or hold NaN).
        Identical per-query values give 1.0 (no difference at all).
    p_adjusted : float or None
        Holm-adjusted over the comparisons tested together.
    significant : bool
        ``p_adjusted < alpha``.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    ranker: str
    reference: str
    condition: str
    metric: str
    value: float
    reference_value: float
    change: float | None
    better: bool | None
    p_value: float | None
    p_adjusted: float | None
    significant: bool


@dataclass(frozen=True)
class RiskTest:
    """Risk-aware reranking against ranking by the mean, for one ranker under one condition.

    ``p_value`` is :attr:`RiskOutcome.p_value` (None when the two rankings
    never differ), ``p_adjusted`` its Holm adjustment over every such test
    of the study, ``significant`` whether ``p_adjusted < alpha``.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    ranker: str
    condition: str
    p_value: float | None
    p_adjusted: float | None
    significant: bool


@dataclass
class Significance:
    """Every significance test the report marks, computed by the study (not by the report).

    Attributes
    ----------
    reference : str or None
        The ranker every comparison is made against.
    alpha : float
        Significance level.
    correction : str
        Multiple-comparison correction applied within each family of tests.
    test : str
        The test, in words.
    tables : dict
        Family -> comparisons tested together (one result table each):
        ``"in-domain"`` (the first condition) and ``"shifted"`` (the others).
    risk : list of RiskTest
        Risk-aware against mean ranking, one family over the study.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    reference: str | None
    alpha: float
    correction: str
    test: str
    tables: dict[str, list[Comparison]] = field(default_factory=dict)
    risk: list[RiskTest] = field(default_factory=list)

    def risk_test(self, ranker: str, condition: str) -> RiskTest | None:
        """The risk test of ``ranker`` under ``condition``, or None."""
        return next((t for t in self.risk if t.ranker == ranker and t.condition == condition), None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Significance:
        """Rebuild from :func:`dataclasses.asdict` output."""
        return cls(
            reference=d.get("reference"), alpha=float(d["alpha"]), correction=str(d["correction"]),
            test=str(d["test"]),
            tables={k: [Comparison(**c) for c in v] for k, v in d.get("tables", {}).items()},
            risk=[RiskTest(**t) for t in d.get("risk", [])],
        )


@dataclass
class BayesOutcome:
    """One fit of the Bayesian comparison of systems: one model family (and, for a study's rankers, one condition).

    Attributes
    ----------
    family : str
        ``gaussian``, ``zoib`` or ``zoib_rank``.
    n_systems : int
        Systems compared.
    best_distinguishable, worst_distinguishable : int or None
        How many systems are credibly different from the best / the worst;
        None when the fit failed its convergence checks (no verdict is given).
    converged : bool
        R-hat <= 1.01, enough ESS and no divergences.
    diagnostics : dict
        Max R-hat, min bulk ESS, divergences, and problems found.
    effects : list of dict
        Per system: ``system``, ``mean``, ``lower``, ``upper`` (95% interval).
    risk : dict
        URisk counts against the baseline, when it is among the systems.
    figures : list of str
        Figure files made elsewhere (relative to the report folder), embedded
        as they are; a study leaves it empty, the report draws its figures.
    ppc : str or None
        The posterior predictive check's curves (an NPZ file relative to the
        report folder: ``grid``, ``observed``, ``replicates``, ``outside``),
        from which the report draws the check.
    systems : {"trec_covid", "study"}
        What was compared: the bundled TREC-COVID round 1 runs, or the
        study's rankers (``[bayes] systems``).
    condition, metric : str or None
        For the study's rankers: the condition, and the label of the
        per-query metric compared (its topics are the condition's queries).
    baseline : str or None
        The system URisk and ``against_baseline`` compare with.
    against_baseline : list of dict
        For the study's rankers, from a converged fit: one row per ranker
        other than the baseline: ``system``, ``diff_mean``, ``diff_lower``,
        ``diff_upper`` (its effect minus the baseline's, 95% interval, on
        the model's link scale), ``p_better`` (posterior probability that
        its effect is the larger), ``verdict`` (``"better"``, ``"worse"``
        or ``"not distinguishable"``: whether the interval excludes 0) and,
        for r = 1 and 2, ``urisk_r<r>``, ``urisk_r<r>_lower``,
        ``urisk_r<r>_upper`` (Benham's convention: above 0 is riskier than
        the baseline).
    fits : int
        Fits made: 1, plus one per retry after a fit failed its checks.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    family: str
    n_systems: int
    best_distinguishable: int | None
    worst_distinguishable: int | None
    converged: bool
    diagnostics: dict[str, object]
    effects: list[dict[str, object]] = field(default_factory=list)
    risk: dict[str, int] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    ppc: str | None = None
    systems: Literal["trec_covid", "study"] = "trec_covid"
    condition: str | None = None
    metric: str | None = None
    baseline: str | None = None
    against_baseline: list[dict[str, object]] = field(default_factory=list)
    fits: int = 1


@dataclass
class ExternalRunOutcome:
    """One external run (``[[bayes.runs]]``): another system's TREC run file, measured on a condition's test queries.

    Attributes
    ----------
    name, condition : str
        The run's name in the Bayesian comparison, and the condition whose
        test queries it ranks.
    path : str
        The run file, as the study resolved it.
    sha256 : str
        Hex SHA-256 of the file's bytes, as read.
    metric : str
        The label of the per-query metric compared (``[bayes] metric``).
    per_query : list of float
        The run's value of ``metric`` per test query, in the condition's
        query order (the topics of the comparison).
    mean : float
        The mean of ``per_query``.
    n_pairs : int
        (query, candidate) pairs of the condition.
    n_unscored : int
        Pairs the run does not score, ranked after those it scores
        (by descending document id, trec_eval's rule for ties).
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    name: str
    condition: str
    path: str
    sha256: str
    metric: str
    per_query: list[float]
    mean: float
    n_pairs: int
    n_unscored: int


@dataclass
class PaperTable:
    """The report's "A paper's table": the rankers compared on one condition's per-query ranking metrics.

    Made by :func:`uncertank.experiment.table.paper_table` in the run
    and rendered by the report (``report.md``, ``report.html``) and as
    ``table.tex``, computing nothing more.

    Attributes
    ----------
    condition : str
        The condition whose test queries are compared (the in-domain one).
    report : dict
        :meth:`uncertank.ComparisonReport.to_dict`: the systems, means,
        every comparison with its p-values and effect sizes, the
        calibration columns with intervals, the Bayesian comparison's
        P(better) and verdict, and the options (test, correction, family,
        alpha, resamples, seed). ``ComparisonReport.from_dict`` rebuilds it.
    left_out : list of str
        Ranking metrics of the condition not compared: some ranker lacks
        their per-query values or holds a value that is not finite.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    condition: str
    report: dict[str, object]
    left_out: list[str] = field(default_factory=list)


@dataclass
class StudyResult:
    """What a study produced; ``results.json`` is ``to_dict()``.

    Attributes
    ----------
    config : dict
        The study configuration (as written by :func:`dataclasses.asdict`).
    sizes : dict
        Queries per split and condition.
    metric_info : dict
        Metric label -> ``{"kind", "higher_is_better", "needs_probabilities"}``.
    evaluations : list of Evaluation
        One per ranker and condition, rankers in config order.
    bayes : dict
        Family -> :class:`BayesOutcome`.
    external_runs : list of ExternalRunOutcome
        The external runs compared beside the study's rankers
        (``[[bayes.runs]]``), each with its per-query metric.
    steps : dict
        Step name -> :class:`StepInfo`.
    smoke : bool
        True for ``uncertank demo --quick``: the numbers are not evidence.
    significance : Significance or None
        The significance tests the report marks (None: none were run).
    environment : dict
        The versions and the machine of the run that wrote the result
        (uncertank, Python, numpy, the platform; torch's version, CPU
        kernels and threads when a neural ranker ran). Steps resumed from
        an earlier run were computed by that run's; the models a study
        trains keep their own in their training history.
    warnings : list of dict
        The distinct Python warnings raised while the study ran (also in
        ``run.log``): ``category``, ``message`` and ``count``, e.g. a
        ``PostHocHeadWarning`` naming a post-hoc head that ranks the
        validation queries worse than the model's own head. Steps resumed
        from an earlier run raise none again.
    paper_table : PaperTable or None
        The rankers compared on the in-domain condition as a paper's table
        (``[report]``); None when there is nothing to compare (one ranker)
        or the result predates it.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _STRICT

    config: dict[str, object]
    sizes: dict[str, object]
    metric_info: dict[str, dict[str, object]]
    evaluations: list[Evaluation]
    bayes: dict[str, BayesOutcome] = field(default_factory=dict)
    external_runs: list[ExternalRunOutcome] = field(default_factory=list)
    steps: dict[str, StepInfo] = field(default_factory=dict)
    smoke: bool = False
    significance: Significance | None = None
    environment: dict[str, object] = field(default_factory=dict)
    warnings: list[dict[str, object]] = field(default_factory=list)
    paper_table: PaperTable | None = None

    @property
    def rankers(self) -> list[str]:
        """Ranker labels in config order."""
        return list(dict.fromkeys(e.ranker for e in self.evaluations))

    @property
    def conditions(self) -> list[str]:
        """Condition names in config order (the first is in-domain)."""
        return list(dict.fromkeys(e.condition for e in self.evaluations))

    def evaluation(self, ranker: str, condition: str) -> Evaluation | None:
        """The evaluation of ``ranker`` under ``condition``, or None."""
        for e in self.evaluations:
            if e.ranker == ranker and e.condition == condition:
                return e
        return None

    def to_dict(self) -> dict[str, JSONValue]:
        """A JSON-ready dict (``results.json``)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, object], *, source: str = "results") -> StudyResult:
        """Rebuild from :meth:`to_dict` output (e.g. a parsed ``results.json``), validated as :meth:`from_json` does.

        Raises
        ------
        ResultsFileError
            When ``d`` is not a study's result; one line per error, with
            its path (``evaluations[3].metrics.ECE``) under ``source``.
        """
        try:
            text = json.dumps(d)
        except (TypeError, ValueError) as exc:
            raise ResultsFileError(source, [("", f"must hold JSON values only ({exc})")]) from None
        return cls.from_json(text, source=source)

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "results.json") -> StudyResult:
        """Validate the JSON text of ``results.json`` as a whole, then rebuild the result.

        Every error is reported, each with its path in the document; nothing
        is built from a document with one.

        Parameters
        ----------
        text : str or bytes
            The document.
        source : str
            What the errors name (the file's path).

        Raises
        ------
        ResultsFileError
            A ``ValueError``: the document is not JSON, or not a study's
            result (a key missing or unknown, a value of the wrong type).
        """
        from pydantic import ValidationError

        errors: list[tuple[str, str]] = []
        result: StudyResult | None = None
        try:
            result = _adapters()[0].validate_json(text, strict=True)
        except ValidationError as exc:
            errors += _validation_errors(exc)
        if not any(path == "" for path, _ in errors):  # JSON and an object: check what the report reads of the rest
            try:
                _adapters()[1].validate_json(text, strict=True)
            except ValidationError as exc:
                errors += [e for e in _validation_errors(exc) if e not in errors]
        if result is not None and not errors:
            errors = _inconsistencies(result)
        if errors or result is None:
            raise ResultsFileError(source, errors or [("", "is not a study's result")])
        return result


class ResultsFileError(ValueError):
    """A ``results.json`` that is not a study's result: one line per error, each with its JSON path.

    Attributes
    ----------
    source : str
        The file (or what the caller named the document).
    errors : tuple of (str, str)
        ``(path, message)`` pairs such as
        ``("evaluations[3].metrics.ECE", "must be a number; got the string 'abc'")``;
        the path is ``""`` for the document as a whole.
    """

    #: The most errors the message lists (all are in ``errors``).
    shown: ClassVar[int] = 20

    def __init__(self, source: str, errors: list[tuple[str, str]]) -> None:
        self.source = check_name(source, "source")
        errors = check_path_messages(errors)
        self.errors = tuple(errors)
        lines = [f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in errors[: self.shown]]
        if len(errors) > self.shown:
            lines.append(f"{source}: ... and {len(errors) - self.shown} more errors")
        super().__init__("\n".join(lines))


# --------------------------------------------------------------------------- validation of results.json
# The dataclasses above give the types; what they leave as ``dict[str, Any]`` but the report
# reads (metric_info, the Bayesian effects, sizes, a few config keys) is typed here.


class _MetricInfo(TypedDict):
    kind: Literal["ranking", "calibration"]
    higher_is_better: bool
    needs_probabilities: bool
    name: NotRequired[str]
    options: NotRequired[dict[str, object]]


class _Effect(TypedDict):
    system: str
    mean: float
    lower: float
    upper: float


class _Diagnostics(TypedDict):
    problems: NotRequired[list[str]]


class _Bayes(TypedDict):
    effects: NotRequired[list[_Effect]]
    diagnostics: NotRequired[_Diagnostics]


class _Sizes(TypedDict):
    train: NotRequired[int]
    valid: NotRequired[int]
    test: NotRequired[dict[str, int]]


class _Config(TypedDict):
    name: NotRequired[str | None]
    reference: NotRequired[str | None]
    n_bins: NotRequired[int]
    n_candidates: NotRequired[int | None]


class _ReportReads(TypedDict):
    config: NotRequired[_Config]
    sizes: NotRequired[_Sizes]
    metric_info: NotRequired[dict[str, _MetricInfo]]
    bayes: NotRequired[dict[str, _Bayes]]


@functools.cache
def _adapters() -> tuple[TypeAdapter[StudyResult], TypeAdapter[_ReportReads]]:
    """The pydantic validators of the whole result and of the parts typed above (built once, on first use)."""
    from pydantic import TypeAdapter

    return TypeAdapter(StudyResult), TypeAdapter(_ReportReads)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _json_path(loc: tuple[str | int, ...]) -> str:
    """``("evaluations", 3, "metrics", "ECE balanced")`` -> ``evaluations[3].metrics["ECE balanced"]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            out += " (a key)"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _result_keys(loc: tuple[str | int, ...]) -> list[str] | None:
    """The keys allowed beside ``loc[-1]``: the fields of the dataclass that holds it (None if none does)."""
    import typing

    cls: object = StudyResult  # a type, or a type expression (``list[Evaluation]``, ``Curve | None``)
    for part in loc[:-1]:
        if cls is None:
            break
        if is_dataclass(cls) and isinstance(part, str):
            cls = typing.get_type_hints(cls).get(part)
        else:  # a list's or dict's item: its value type
            args = [a for a in typing.get_args(cls) if a is not type(None)]
            cls = args[-1] if args else None
        while cls is not None and not is_dataclass(cls) and typing.get_args(cls) \
                and typing.get_origin(cls) is not list and typing.get_origin(cls) is not dict:
            cls = next((a for a in typing.get_args(cls) if a is not type(None)), None)  # X | None
    if cls is None or not is_dataclass(cls):
        return None
    return [f.name for f in fields(cls)]


def _result_error(err: ErrorDetails) -> tuple[str, str]:
    """One pydantic error as ``(JSON path, message)``."""
    loc: tuple[str | int, ...] = tuple(err["loc"])
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "json_invalid":
        return "", f"is not valid JSON: {ctx.get('error', err['msg'])}"
    if not loc and kind in ("dict_type", "dataclass_type", "dataclass_args_type", "model_type"):
        return "", f"the document must be an object; got {describe_value(err.get('input'), 'json')}"
    return _json_path(loc), error_message(err, "json", lambda: _result_keys(loc))


def _inconsistencies(result: StudyResult) -> list[tuple[str, str]]:
    """What is well-typed but cannot be drawn: a reference that is no ranker, an interval without its mean."""
    out: list[tuple[str, str]] = []
    reference = result.config.get("reference")
    if reference is not None and reference not in result.rankers:
        out.append(("config.reference", f"must be one of the rankers of evaluations {result.rankers}; "
                                        f"got {reference!r}"))
    for i, ev in enumerate(result.evaluations):
        c = ev.reliability
        if c is not None and not len(c.mean_confidence) == len(c.fraction_relevant) == len(c.count):
            out.append((f"evaluations[{i}].reliability", "must hold as many fraction_relevant and count as "
                        f"mean_confidence (one per bin); got {len(c.mean_confidence)}, {len(c.fraction_relevant)} "
                        f"and {len(c.count)}"))
        sel = ev.selective
        if sel is not None and len(sel.coverage) != len(sel.risk):
            out.append((f"evaluations[{i}].selective", "must hold one risk per coverage; got "
                        f"{len(sel.coverage)} coverage and {len(sel.risk)} risk values"))
        conf = ev.conformal
        if conf is not None and not len(conf.curve_alpha) == len(conf.curve_coverage) == len(conf.curve_size):
            out.append((f"evaluations[{i}].conformal", "must hold one curve_coverage and curve_size per curve_alpha; "
                        f"got {len(conf.curve_alpha)}, {len(conf.curve_coverage)} and {len(conf.curve_size)}"))
    for fam, b in result.bayes.items():
        for i, e in enumerate(b.effects):
            if not json_number(e["lower"]) <= json_number(e["mean"]) <= json_number(e["upper"]):
                out.append((_json_path(("bayes", fam, "effects", i)),
                            f"must have lower <= mean <= upper; got lower {e['lower']!r}, mean {e['mean']!r}, "
                            f"upper {e['upper']!r}"))
    return out


def _validation_errors(exc: ValidationError) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for err in exc.errors():
        line = _result_error(err)
        if line not in out:
            out.append(line)
    return out


def _plain(obj: object) -> JSONValue:
    """Dataclasses (at any depth) as dicts, then plain JSON values (:func:`uncertank.files.to_jsonable`)."""
    from uncertank.files import to_jsonable

    if is_dataclass(obj) and not isinstance(obj, type):
        obj = asdict(obj)
    elif isinstance(obj, dict):
        obj = {k: _plain(v) for k, v in obj.items()}
    elif isinstance(obj, (list, tuple)):
        obj = [_plain(v) for v in obj]
    plain: JSONValue = to_jsonable(obj)  # to_jsonable gives plain JSON values (typed Any there)
    return plain


def results_schema() -> JsonSchemaValue:
    """The JSON schema of ``results.json`` (:meth:`StudyResult.to_dict`), generated from the classes above.

    The document must match both :class:`StudyResult` and the typing of
    what the report reads inside its free-form parts (``metric_info``,
    ``sizes``, a few ``config`` keys, the Bayesian effects): the two
    validators :meth:`StudyResult.from_json` applies. The cross-checks of
    :meth:`~StudyResult.from_json` (a reference that is a ranker, curves of
    matching lengths, ``lower <= mean <= upper``) are not expressible here.
    docs/results.schema.json is this schema; a test keeps the two equal.

    Examples
    --------
    >>> schema = results_schema()
    >>> schema["title"], sorted(schema["$defs"]["StudyResult"]["required"])
    ('uncertank results.json', ['config', 'evaluations', 'metric_info', 'sizes'])
    """
    whole, reads = (adapter.json_schema() for adapter in _adapters())
    defs = {**whole.pop("$defs", {}), **reads.pop("$defs", {})}
    defs["StudyResult"], defs["ReportReads"] = whole, reads
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "uncertank results.json",
        "description": "The record of a study (uncertank run, uncertank demo): StudyResult.to_dict(). "
        "Validated as a whole by StudyResult.from_json when uncertank report reads it; "
        "docs/results-schema.md describes every key.",
        "allOf": [{"$ref": "#/$defs/StudyResult"}, {"$ref": "#/$defs/ReportReads"}],
        "$defs": dict(sorted(defs.items())),
    }
