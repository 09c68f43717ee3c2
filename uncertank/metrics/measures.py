"""One home per measure: its canonical identifier, its function, its accumulator and its metadata.

A *measure* is what a number means: R_10@1 of response ranking, trec_eval's
recall at 100, ECE over ten equal-width bins. Each built-in measure is one
:class:`Measure` entry of :data:`MEASURES`, which owns

- its **canonical identifier** (:meth:`Measure.measure_id`), spelled as
  ir_measures spells the measure where it has one (``Success@1``,
  ``R@100``, ``AP``, ``RR``, ``nDCG@10``, ``P(rel=2)@5``), otherwise in the
  same grammar (``ECE(strategy=quantile)``, ``MCE``, ``Brier``, ``NLL``):
  ``Id(option=value, ...)@cutoff`` with every option that changes the value
  written unless it has its default;
- its **label** (:meth:`Measure.display`), the column of a table and the key
  of a results file, derived from the identifier by the entry's label stem
  (``R@1`` for ``Success@1``, ``MAP`` for ``AP``, ``Recall@100`` for
  ``R@100``);
- its function, its streaming accumulator, and its metadata (kind, range,
  direction, whether it reads probabilities).

The registered :class:`~uncertank.metrics.Metric` entries (``recall_at_k``,
``map``, ...) are built from these entries, so a measure cannot be described
twice. **No two measures share a label**, by construction: every label
begins with a stem that one measure claims, and :meth:`MeasureRegistry.register`
refuses a measure whose stems another one claims; within a measure, the
label writes every option of the identifier (an option its usual label
does not show is written in brackets: ``ECE[n_bins=15]``).

The one spelling where label and identifier part: the tables of response
ranking write R_n@k (``R@1``, ``R_2@1``), which is ir_measures' ``Success@k``,
while ir_measures' ``R@k`` is trec_eval's recall. So ``R@k`` labels the
former (the study's columns, since the first results), and trec_eval's
recall is labelled ``Recall@k`` (an ir_measures spelling of the same
measure) though its identifier is ``R@k``.

Examples
--------
>>> MEASURES["Success"].measure_id({"k": 1}), MEASURES["Success"].display({"k": 1})
('Success@1', 'R@1')
>>> MEASURES["R"].measure_id({"k": 100}), MEASURES["R"].display({"k": 100})
('R@100', 'Recall@100')
>>> measure_id("ece", {"strategy": "quantile", "n_bins": 10})
'ECE(strategy=quantile)'
>>> MEASURES.of_label("MAP@10").measure_id({"k": 10})
'AP@10'
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.metrics._inputs import LabelsInput, ScoresInput
from uncertank.metrics.accumulators import Accumulator, BrierAccumulator, ECEAccumulator, NLLAccumulator
from uncertank.metrics.binning import DEFAULT_BINS, Norm, Strategy
from uncertank.metrics.calibration import (
    brier_score,
    check_ece_options,
    check_eps,
    expected_calibration_error,
    negative_log_likelihood,
)
from uncertank.metrics.ranking import (
    check_cutoff,
    check_optional_cutoff,
    check_persistence,
    mean_average_precision,
    mean_reciprocal_rank,
    ndcg_at_k,
    precision_at_k,
    rank_biased_precision,
    recall_at_k,
    trec_recall_at_k,
)
from uncertank.validation import check_callable, check_instance, check_name, check_names

__all__ = ["MEASURES", "Measure", "MeasureRegistry", "function_measure_id", "measure_id"]

MeasureKind = Literal["ranking", "calibration"]

#: A metric function: ``fn(scores, labels=None, *, [per_query=False,] **options)``, returning a float (an
#: ndarray of shape (n_queries,) with ``per_query=True``).
MetricFunction: TypeAlias = Callable[..., float | NDArray[np.float64]]
#: A function of a measure's options (its label, identifier stem, check).
OptionsLabel: TypeAlias = Callable[[Mapping[str, object]], str]
OptionsCheck: TypeAlias = Callable[[Mapping[str, object]], None]

#: What may follow a label stem in a label: its parameters, its cutoff, R_n's n, unshown options.
SEPARATORS = "(@_["


def _signature_defaults(fn: Callable[..., object]) -> dict[str, object]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, (bool, np.bool_)) and isinstance(b, (bool, np.bool_)) and bool(a) == bool(b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _text(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, float) and value.is_integer() and not math.isinf(value):
        return repr(value)
    return str(value)


def _params(options: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={_text(v)}" for k, v in options.items())


@dataclass(frozen=True, eq=False)
class Measure:
    """A measure: its identifier, label, function, accumulator and metadata, in one entry.

    Parameters
    ----------
    id : str
        The identifier's stem: ir_measures' name where it has one
        (``"Success"``, ``"R"``, ``"AP"``, ``"nDCG"``).
    name : str
        The name of its :class:`~uncertank.metrics.Metric` in the metric
        registry (``"recall_at_k"``).
    fn : callable
        ``fn(scores, labels=None, *, [per_query=False,] **options)``.
    kind : {"ranking", "calibration"}
        Which table of a report it belongs to.
    labels : tuple of str
        The label stems it claims, the first the one its own labels use
        (``("R", "Success")``: ``R@1``, ``R_2@1``; ``Success@1`` when asked
        for by that name). No other measure may claim them.
    label : callable, optional
        ``label(options) -> str``: the usual label, which writes the options
        named in ``shown``; default ``labels[0]`` in the identifier's grammar.
    shown : tuple of str
        Options ``label`` writes; any other option of the identifier is
        added in brackets (``ECE[n_bins=15]``).
    bounds : (float, float)
        The range of values.
    higher_is_better, needs_probabilities : bool
        Direction, and whether scores must be probabilities in [0, 1].
    options : mapping
        The default options of its registered metric (``{"k": 10}``).
    cutoff : str, optional
        The option written after ``@`` (``"k"``), always when it is set.
    cutoff_required : bool
        Whether an ir_measures name of it needs ``@k`` (``P``, ``R``, ``Success``).
    settings : tuple of str
        Options that do not change what is measured and are not part of the
        identifier (``seed`` of a balanced ECE's subsample, ``judged``
        passed by ``evaluate``).
    normalise : callable, optional
        ``normalise(options) -> options``: one spelling of equal options
        (ECE's ``n_bins=None`` and ``n_bins=10`` are one), before the
        identifier is written.
    id_for : callable, optional
        ``id_for(options) -> str``: the identifier's stem when some options
        make it another measure (``ece`` with ``norm="max"`` is ``MCE``).
    accumulator : callable, optional
        ``accumulator(**options)``: its streaming accumulator; measures with
        a per-query value default to the mean of the per-query values.
    check : callable, optional
        ``check(options)``, raising ValueError naming a wrong option.
    ir_measures : bool
        Whether the identifier is ir_measures' name of the measure, checked
        against ir_measures by the test suite, and read by
        :func:`~uncertank.metrics.parse_ir_measure`.
    separators : str
        Characters that may follow a label stem in its labels.
    description : str, optional
        One line for listings.
    """

    id: str
    name: str
    fn: MetricFunction
    kind: MeasureKind
    labels: tuple[str, ...]
    label: OptionsLabel | None = None
    shown: tuple[str, ...] = ()
    bounds: tuple[float, float] = (0.0, 1.0)
    higher_is_better: bool = True
    needs_probabilities: bool = False
    options: Mapping[str, object] = field(default_factory=dict)
    cutoff: str | None = None
    cutoff_required: bool = False
    settings: tuple[str, ...] = ()
    normalise: Callable[[dict[str, object]], dict[str, object]] | None = None
    id_for: OptionsLabel | None = None
    accumulator: Callable[..., Accumulator] | None = None
    check: OptionsCheck | None = None
    ir_measures: bool = False
    separators: str = SEPARATORS
    description: str | None = None

    def __post_init__(self) -> None:
        check_name(self.id, "id")
        check_name(self.name, "name")
        check_callable(self.fn, "fn", "a metric function")
        check_names(check_instance(self.labels, "labels", tuple, "a tuple of label stems (str)"), "labels")
        check_name(self.kind, "kind")
        check_instance(self.options, "options", Mapping, "a mapping of option defaults")
        if not self.id or not self.name or not self.labels:
            raise ValueError(f"a measure needs an id, a name and at least one label stem; got {self!r}")
        if self.kind not in ("ranking", "calibration"):
            raise ValueError(f"measure {self.id!r}: kind must be 'ranking' or 'calibration'; got {self.kind!r}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def __reduce__(self) -> tuple[Callable[..., Measure], tuple[object, ...]]:
        # a registered measure pickles as a reference to the registry entry, another by its fields
        if MEASURES.get(self.id) is self:
            return (_registered, (self.id,))
        return (_rebuilt, (tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.name != "options"),
                           dict(self.options)))

    def __repr__(self) -> str:
        return f"Measure({self.id!r}, name={self.name!r}, labels={self.labels!r})"

    # -------------------------------------------------------------------- identity

    def identity(self, options: Mapping[str, object] | None = None) -> dict[str, object]:
        """The options that make the value what it is, defaults left out, cutoff and settings apart.

        ``options`` complete the entry's default options; the result is sorted by name.
        """
        opts = {**self.options, **(options or {})}
        if self.normalise is not None:
            opts = self.normalise(dict(opts))
        defaults = _signature_defaults(self.fn)
        out: dict[str, object] = {}
        for key in sorted(opts):
            if key == self.cutoff or key in self.settings or key == "per_query":
                continue
            if key in defaults and _same(opts[key], defaults[key]):
                continue
            out[key] = opts[key]
        return out

    def _cut(self, options: Mapping[str, object] | None) -> str:
        if self.cutoff is None:
            return ""
        value = {**self.options, **(options or {})}.get(self.cutoff)
        return "" if value is None else f"@{value}"

    def measure_id(self, options: Mapping[str, object] | None = None) -> str:
        """The canonical identifier with ``options``: ``Success@1``, ``R(rel=2)@100``, ``ECE(strategy=quantile)``."""
        opts = {**self.options, **(options or {})}
        stem = self.id if self.id_for is None else self.id_for(opts)
        ident = self.identity(opts)
        return stem + (f"({_params(ident)})" if ident else "") + self._cut(opts)

    def display(self, options: Mapping[str, object] | None = None) -> str:
        """The label with ``options``: ``R@1``, ``MAP``, ``ECE quantile``, ``Recall@100``."""
        opts = {**self.options, **(options or {})}
        ident = self.identity(opts)
        if self.label is None:
            text = self.labels[0] + (f"({_params(ident)})" if ident else "") + self._cut(opts)
            return text
        text = self.label(MappingProxyType(opts))
        rest = {k: v for k, v in ident.items() if k not in self.shown}
        return text + (f"[{_params(rest)}]" if rest else "")

    def claims(self, label: str) -> bool:
        """Whether ``label`` begins with one of this measure's label stems."""
        return any(_starts(label, stem, self.separators) for stem in self.labels)


def _registered(identifier: str) -> Measure:
    return MEASURES[identifier]


def _rebuilt(items: tuple[tuple[str, Any], ...], options: dict[str, object]) -> Measure:
    # ``items`` are the pickled fields of a Measure, each of its own type: the constructor checks them
    return Measure(**dict(items), options=options)


def _starts(text: str, stem: str, separators: str) -> bool:
    return text == stem or (text.startswith(stem) and text[len(stem)] in separators)


class MeasureRegistry(Mapping[str, Measure]):
    """The measures, by identifier stem; each label stem belongs to one measure.

    Examples
    --------
    >>> reg = MeasureRegistry()
    >>> _ = reg.register(Measure("AP", "map", mean_average_precision, "ranking", labels=("MAP", "AP")))
    >>> reg.register(Measure("MyAP", "my_map", mean_average_precision, "ranking", labels=("MAP",)))
    Traceback (most recent call last):
    ...
    ValueError: measure 'MyAP' claims the label 'MAP', which is measure 'AP''s (map): two measures cannot share a label
    """

    def __init__(self) -> None:
        self._by_id: dict[str, Measure] = {}
        self._by_name: dict[str, Measure] = {}

    def __getitem__(self, key: str) -> Measure:
        return self._by_id[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def register(self, measure: Measure) -> Measure:
        """Add ``measure``.

        Raises
        ------
        ValueError
            When its identifier, its registry name or one of its label stems
            is another measure's (a stem that another's begins with, as
            ``R`` and ``R@``, counts: labels of the two could coincide).
        """
        if not isinstance(measure, Measure):
            raise TypeError(f"measure must be a Measure; got {type(measure).__name__}")
        if measure.id in self._by_id:
            raise ValueError(f"a measure with the identifier {measure.id!r} is registered already "
                             f"({self._by_id[measure.id].name}); two measures cannot share an identifier")
        if measure.name in self._by_name:
            raise ValueError(
                f"a measure named {measure.name!r} is registered already ({self._by_name[measure.name].id})"
            )
        for stem in measure.labels:
            for other in self._by_id.values():
                if other.claims(stem) or any(_starts(s, stem, measure.separators) for s in other.labels):
                    raise ValueError(
                        f"measure {measure.id!r} claims the label {stem!r}, which is measure {other.id!r}'s "
                        f"({other.name}): two measures cannot share a label"
                    )
        self._by_id[measure.id] = measure
        self._by_name[measure.name] = measure
        return measure

    def of_name(self, name: str) -> Measure | None:
        """The measure of the metric registered as ``name`` (``"recall_at_k"``), or None."""
        return self._by_name.get(name)

    def of_label(self, label: str) -> Measure | None:
        """The measure whose labels ``label`` belongs to (``"R@1"``: Success), or None."""
        if not isinstance(label, str):
            return None
        return next((m for m in self._by_id.values() if m.claims(label)), None)

    def of_id(self, identifier: str) -> Measure | None:
        """The measure of a canonical identifier (``"Success@1"``, ``"ECE(strategy=quantile)"``), or None."""
        if not isinstance(identifier, str):
            return None
        stem = identifier.split("(", 1)[0].split("@", 1)[0].strip()
        return self._by_id.get(stem)


# --------------------------------------------------------------------------- functions of measures


def rbp(
    scores: ScoresInput, labels: LabelsInput = None, *, p: float = 0.8, depth: int | None = None,
    max_grade: int | None = None, judged: ArrayLike | None = None, per_query: bool = False,
) -> float | NDArray[np.float64]:
    """Rank-biased precision without its residual; see :func:`rank_biased_precision`."""
    return rank_biased_precision(scores, labels, p=p, depth=depth, max_grade=max_grade, judged=judged,
                                 per_query=per_query)[0]


def rbp_residual(
    scores: ScoresInput, labels: LabelsInput = None, *, p: float = 0.8, depth: int | None = None,
    max_grade: int | None = None, judged: ArrayLike | None = None, per_query: bool = False,
) -> float | NDArray[np.float64]:
    """The residual of rank-biased precision: unjudged weight plus tail; see :func:`rank_biased_precision`."""
    return rank_biased_precision(scores, labels, p=p, depth=depth, max_grade=max_grade, judged=judged,
                                 per_query=per_query)[1]


def mce(
    probs: ScoresInput, labels: LabelsInput = None, *, n_bins: int | None = None, strategy: Strategy = "uniform",
    balanced: bool = False, seed: int | np.random.Generator | None = None,
) -> float:
    """Maximum calibration error: :func:`expected_calibration_error` with ``norm="max"``."""
    return expected_calibration_error(probs, labels, n_bins=n_bins, strategy=strategy, norm="max",
                                      balanced=balanced, seed=seed)


# --------------------------------------------------------------------------- labels


def _with_rel(base: str, options: Mapping[str, object]) -> str:
    """``base`` with ir_measures' ``(rel=N)`` when the relevance level is not the default 1."""
    rel = options.get("rel", 1)
    return base if rel == 1 else f"{base}(rel={rel})"


def _cutoff_label(base: str, options: Mapping[str, object]) -> str:
    k = options.get("k")
    base = _with_rel(base, options)
    return base if k is None else f"{base}@{k}"


def _cutoff(base: str) -> OptionsLabel:
    return partial(_cutoff_label, base)


def _recall_label(options: Mapping[str, object]) -> str:
    # R_n@k of response ranking (ir_measures' Success@k), labelled as the literature does
    n = options.get("n")
    base = _with_rel("R" if n is None else f"R_{n}", options)
    return f"{base}@{options.get('k', 1)}"


def _ece_label(options: Mapping[str, object]) -> str:
    norm = options.get("norm", "l1")
    stems: dict[object, str] = {"l1": "ECE", "l2": "ECE l2", "max": "MCE"}
    parts = [stems.get(norm, f"ECE {norm}")]
    strategy = options.get("strategy", "uniform")
    if strategy != "uniform":
        parts.append(str(strategy))
    if options.get("balanced"):
        n = options.get("n_subsamples", 1)
        parts.append("balanced" if n == 1 else f"balanced x{n}")
    if options.get("convention", "naeini") == "penha-hauff":
        parts.append("Penha-Hauff")
    return " ".join(parts)


def _mce_label(options: Mapping[str, object]) -> str:
    return _ece_label({**options, "norm": "max"})


def _fixed_label(text: str, options: Mapping[str, object]) -> str:
    return text


def _fixed(text: str) -> OptionsLabel:
    return partial(_fixed_label, text)


def _rbp_label_for(base: str, options: Mapping[str, object]) -> str:
    inside = [_text(options.get("p", 0.8))]
    if options.get("max_grade") is not None:
        inside.append(f"max_grade={options['max_grade']}")
    out = f"{base}({', '.join(inside)})"
    return out if options.get("depth") is None else f"{out}@{options['depth']}"


def _rbp_label(base: str) -> OptionsLabel:
    return partial(_rbp_label_for, base)


# --------------------------------------------------------------------------- identity of ECE


def _normalise_ece(options: dict[str, object]) -> dict[str, object]:
    convention = options.get("convention", "naeini")
    if options.get("n_bins") is not None and isinstance(convention, str) and convention in DEFAULT_BINS and \
            _same(options["n_bins"], DEFAULT_BINS[convention]):
        options["n_bins"] = None
    if not options.get("balanced"):
        options.pop("n_subsamples", None)  # the number of subsamples means nothing without them
    if options.get("norm") == "max":
        options.pop("norm")  # written in the identifier's stem: MCE
    return options


def _ece_id(options: Mapping[str, object]) -> str:
    return "MCE" if options.get("norm") == "max" else "ECE"


# --------------------------------------------------------------------------- option checks
# Each runs on a metric's bound options when it is resolved (Metric's ``check``), before any
# scoring, with the same checks (and messages) as the metric function itself.


def _check_cutoffs(options: Mapping[str, object], *, k_required: bool) -> None:
    if "k" in options:
        (check_cutoff if k_required else check_optional_cutoff)(options["k"])
    if "n" in options:
        check_optional_cutoff(options["n"], "n")
    if "rel" in options:
        check_cutoff(options["rel"], "rel")


def _cutoff_check(*, k_required: bool) -> OptionsCheck:
    return partial(_check_cutoffs, k_required=k_required)


def _check_rbp(options: Mapping[str, object]) -> None:
    if "p" in options:
        check_persistence(options["p"])
    for name in ("depth", "max_grade"):
        if name in options:
            check_optional_cutoff(options[name], name)


def _check_ece(norm: Norm | None, options: Mapping[str, object]) -> None:
    check_ece_options(options.get("n_bins"), options.get("strategy", "uniform"),
                      options.get("norm", "l1") if norm is None else norm, options.get("convention", "naeini"),
                      balanced=options.get("balanced", False), seed=options.get("seed"),
                      n_subsamples=options.get("n_subsamples", 1))


def _ece_check(norm: Norm | None) -> OptionsCheck:
    return partial(_check_ece, norm)


def _check_nll(options: Mapping[str, object]) -> None:
    if "eps" in options:
        check_eps(options["eps"])


# --------------------------------------------------------------------------- the built-in measures

class _RankingCut(TypedDict):
    """The fields every ranking measure with a cutoff ``k`` shares."""

    kind: MeasureKind
    cutoff: str
    separators: str


_RANKING_CUT: _RankingCut = {"kind": "ranking", "cutoff": "k", "separators": SEPARATORS}
_ECE_SHOWN = ("norm", "strategy", "balanced", "n_subsamples", "convention")

_BUILTIN: tuple[Measure, ...] = (
    Measure("Success", "recall_at_k", recall_at_k, labels=("R", "Success"), label=_recall_label,
            shown=("n", "rel"), options={"k": 1}, cutoff_required=True, ir_measures=True,
            check=_cutoff_check(k_required=True), **_RANKING_CUT),
    Measure("P", "precision", precision_at_k, labels=("P", "Precision"), label=_cutoff("P"), shown=("rel",),
            options={"k": 10}, cutoff_required=True, ir_measures=True,
            check=_cutoff_check(k_required=True), **_RANKING_CUT),
    Measure("R", "trec_recall_at_k", trec_recall_at_k, labels=("Recall",), label=_cutoff("Recall"), shown=("rel",),
            options={"k": 10}, cutoff_required=True, ir_measures=True,
            check=_cutoff_check(k_required=True), **_RANKING_CUT),
    Measure("AP", "map", mean_average_precision, labels=("MAP", "AP"), label=_cutoff("MAP"), shown=("rel",),
            ir_measures=True, check=_cutoff_check(k_required=False), **_RANKING_CUT),
    Measure("RR", "mrr", mean_reciprocal_rank, labels=("MRR", "RR"), label=_cutoff("MRR"), shown=("rel",),
            ir_measures=True, check=_cutoff_check(k_required=False), **_RANKING_CUT),
    Measure("nDCG", "ndcg", ndcg_at_k, labels=("nDCG", "NDCG"), label=_cutoff("nDCG"), shown=("rel",),
            options={"k": 10}, ir_measures=True,
            check=_cutoff_check(k_required=False), **_RANKING_CUT),
    Measure("RBP", "rbp", rbp, "ranking", labels=("RBP",), label=_rbp_label("RBP"), shown=("p", "max_grade"),
            cutoff="depth", settings=("judged",), check=_check_rbp, separators="(@["),
    Measure("RBP_residual", "rbp_residual", rbp_residual, "ranking", labels=("RBP residual",),
            label=_rbp_label("RBP residual"), shown=("p", "max_grade"), higher_is_better=False,
            cutoff="depth", settings=("judged",), check=_check_rbp, separators="(@["),
    Measure("ECE", "ece", expected_calibration_error, "calibration", labels=("ECE",), label=_ece_label,
            shown=_ECE_SHOWN, needs_probabilities=True, higher_is_better=False, settings=("seed",),
            normalise=_normalise_ece, id_for=_ece_id, accumulator=ECEAccumulator,
            check=_ece_check(None), separators=" [(@"),
    Measure("MCE", "mce", mce, "calibration", labels=("MCE",), label=_mce_label, shown=_ECE_SHOWN,
            needs_probabilities=True, higher_is_better=False, settings=("seed",), normalise=_normalise_ece,
            accumulator=partial(ECEAccumulator, norm="max"), check=_ece_check("max"), separators=" [(@"),
    Measure("Brier", "brier", brier_score, "calibration", labels=("Brier",), label=_fixed("Brier"),
            needs_probabilities=True, higher_is_better=False, accumulator=BrierAccumulator),
    Measure("NLL", "nll", negative_log_likelihood, "calibration", labels=("NLL",), label=_fixed("NLL"),
            bounds=(0.0, math.inf), needs_probabilities=True, higher_is_better=False,
            accumulator=NLLAccumulator, check=_check_nll),
)

#: The built-in measures, by identifier stem (``MEASURES["Success"]``); see the module notes.
MEASURES = MeasureRegistry()
for _m in _BUILTIN:
    MEASURES.register(_m)
del _m


def measure_id(name: str, options: Mapping[str, object] | None = None) -> str | None:
    """The canonical identifier of the metric registered as ``name`` with ``options``, or None when no measure is.

    The documented mapping from what a study's ``results.json`` keeps about a
    column (``metric_info[label]["name"]`` and ``["options"]``) to the
    measure's one name.

    Examples
    --------
    >>> measure_id("recall_at_k", {"k": 1}), measure_id("map"), measure_id("ece", {"balanced": True, "seed": 0})
    ('Success@1', 'AP', 'ECE(balanced=True)')
    """
    check_name(name, "name")
    if options is not None:
        check_instance(options, "options", Mapping, "a mapping of options or None")
    measure = MEASURES.of_name(name)
    return None if measure is None else measure.measure_id(options)


def function_measure_id(name: str, fn: Callable[..., object], options: Mapping[str, object]) -> str:
    """The identifier of a metric that no measure describes (a plugin's): ``name(option=value, ...)``.

    The options written are those that differ from ``fn``'s defaults, sorted by name.

    Examples
    --------
    >>> def coverage(probs, labels=None, *, threshold=0.5, depth=None): ...
    >>> function_measure_id("coverage", coverage, {"threshold": 0.5})
    'coverage'
    >>> function_measure_id("coverage", coverage, {"depth": 3, "threshold": 0.9})
    'coverage(depth=3, threshold=0.9)'
    """
    check_name(name, "name")
    check_callable(fn, "fn", "a metric function")
    check_instance(options, "options", Mapping, "a mapping of options")
    defaults = _signature_defaults(fn)
    ident = {k: v for k, v in sorted(options.items()) if not (k in defaults and _same(v, defaults[k]))}
    return name + (f"({_params(ident)})" if ident else "")
