"""The typed result of a study: what :func:`~uncertank.experiment.run_study` returns.

A :class:`StudyResult` holds one :class:`Evaluation` per ranker and test
condition (every metric, per-query values for significance tests,
recalibrated calibration, the reliability curve with its
:class:`CalibrationDetail`, ECE against the imbalance ratio, risk-aware
reranking, selective prediction, NOTA), the :class:`Significance` of the
comparisons the report marks, the Bayesian comparison per model family, and
one :class:`StepInfo` per cached step (its key, the cost of the run that
computed it, and whether this run reused it). ``to_dict`` / ``from_dict``
give the JSON form written to ``results.json``: the report is drawn from
that file alone (``uncertank report DIR``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "BayesOutcome",
    "CalibrationDetail",
    "Comparison",
    "Curve",
    "Evaluation",
    "NotaOutcome",
    "RiskOutcome",
    "RiskTest",
    "SelectiveOutcome",
    "Significance",
    "StepInfo",
    "StudyResult",
]


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
    """

    key: str
    seconds: float
    resumed: bool = False


@dataclass
class Curve:
    """A reliability curve: only the bins that hold predictions."""

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

    confidence: str
    coverage: list[float]
    risk: list[float]
    aurc: float
    oracle_aurc: float


@dataclass
class NotaOutcome:
    """NOTA prediction on the in-domain condition (macro-F1 over stratified folds)."""

    f1_means: float
    f1_means_sd: float
    f1_means_var: float | None = None
    f1_means_var_sd: float | None = None
    p_value: float | None = None


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
    """

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
    """The Bayesian comparison of the TREC-COVID round 1 systems with one model family.

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
    """

    family: str
    n_systems: int
    best_distinguishable: int | None
    worst_distinguishable: int | None
    converged: bool
    diagnostics: dict[str, Any]
    effects: list[dict[str, Any]] = field(default_factory=list)
    risk: dict[str, int] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    ppc: str | None = None


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
    """

    config: dict[str, Any]
    sizes: dict[str, Any]
    metric_info: dict[str, dict[str, Any]]
    evaluations: list[Evaluation]
    bayes: dict[str, BayesOutcome] = field(default_factory=dict)
    steps: dict[str, StepInfo] = field(default_factory=dict)
    smoke: bool = False
    significance: Significance | None = None
    environment: dict[str, Any] = field(default_factory=dict)

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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``results.json``)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StudyResult:
        """Rebuild from :meth:`to_dict` output (e.g. a parsed ``results.json``)."""
        return cls(
            config=d["config"],
            sizes=d["sizes"],
            metric_info=d["metric_info"],
            evaluations=[Evaluation.from_dict(e) for e in d["evaluations"]],
            bayes={k: BayesOutcome(**v) for k, v in d.get("bayes", {}).items()},
            steps={k: StepInfo(**v) for k, v in d.get("steps", {}).items()},
            smoke=bool(d.get("smoke", False)),
            significance=None if d.get("significance") is None else Significance.from_dict(d["significance"]),
            environment=dict(d.get("environment") or {}),
        )


def _plain(obj: Any) -> Any:
    """Dataclasses (at any depth) as dicts, then plain JSON values (:func:`uncertank._io.to_jsonable`)."""
    from uncertank._io import to_jsonable

    if hasattr(obj, "__dataclass_fields__"):
        obj = asdict(obj)
    elif isinstance(obj, dict):
        obj = {k: _plain(v) for k, v in obj.items()}
    elif isinstance(obj, (list, tuple)):
        obj = [_plain(v) for v in obj]
    return to_jsonable(obj)
