"""The typed result of a study: what :func:`~uncertank.experiment.run_study` returns.

A :class:`StudyResult` holds one :class:`Evaluation` per ranker and test
condition (every metric, per-query values for significance tests,
recalibrated calibration, the reliability curve, ECE against the imbalance
ratio, risk-aware reranking, selective prediction, NOTA), the Bayesian
comparison per model family, and one :class:`StepInfo` per cached step (its
key and the cost of the run that computed it). ``to_dict`` /
``from_dict`` give the JSON form written to ``results.json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "BayesOutcome",
    "Curve",
    "Evaluation",
    "NotaOutcome",
    "RiskOutcome",
    "SelectiveOutcome",
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
    """

    b: float
    valid_curve: dict[float, float]
    test_curve: dict[float, float]
    r1_mean: float
    r1_risk_aware: float
    p_value: float | None


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
        return cls(**d)


@dataclass
class BayesOutcome:
    """The Bayesian comparison of the TREC-COVID round 1 systems with one model family.

    Attributes
    ----------
    family : str
        ``gaussian``, ``zoib`` or ``zoib_rank``.
    n_systems : int
        Systems compared.
    best_distinguishable, worst_distinguishable : int
        How many systems are credibly different from the best / the worst.
    converged : bool
        R-hat <= 1.01, enough ESS and no divergences.
    diagnostics : dict
        Max R-hat, min bulk ESS, divergences, and problems found.
    effects : list of dict
        Per system: ``system``, ``mean``, ``lower``, ``upper`` (95% interval).
    risk : dict
        URisk counts against the baseline, when it is among the systems.
    figures : list of str
        Figure files (relative to the report folder): effects and PPC.
    """

    family: str
    n_systems: int
    best_distinguishable: int
    worst_distinguishable: int
    converged: bool
    diagnostics: dict[str, Any]
    effects: list[dict[str, Any]] = field(default_factory=list)
    risk: dict[str, int] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)


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
    """

    config: dict[str, Any]
    sizes: dict[str, Any]
    metric_info: dict[str, dict[str, Any]]
    evaluations: list[Evaluation]
    bayes: dict[str, BayesOutcome] = field(default_factory=dict)
    steps: dict[str, StepInfo] = field(default_factory=dict)
    smoke: bool = False

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
