"""Metrics as registry entries: one call signature and the metadata a report needs.

A :class:`Metric` wraps a metric function with what a study runner and a
report need to know about it (its kind, whether it needs probabilities,
which direction is better, how to label its column) and gives every metric
the same call::

    metric(scores, labels=None, *, per_query=False, **options)

Each built-in metric is built from its measure's one entry in
:data:`~uncertank.metrics.measures.MEASURES` (:meth:`Metric.from_measure`),
which owns its function, label, accumulator and metadata and gives its
canonical identifier (:attr:`Metric.measure_id`).

``scores`` is a :class:`~uncertank.RankedLists` (``labels`` None), a
:class:`~uncertank.Predictions` (or any object with flat ``scores`` and
``offsets``) with ``labels`` an array of shape (n_pairs,) or a labelled
:class:`~uncertank.QuerySet`, dense arrays of shape (n_queries,
n_candidates), or (calibration metrics only) flat arrays of shape
(n_pairs,). All of them go through the one input layer of
:mod:`uncertank.metrics` (``uncertank.metrics._inputs``).

The ``uncertank_metrics`` hook returns ``{name: Metric}``. A bare callable
registered by a third party is accepted and wrapped by :func:`as_metric`
with the metadata of a ranking metric (see there). :func:`resolve_metrics`
turns the entries of a study file (names or mappings with options) into
bound metrics, checking every name and option against the registry first,
and that no label names two measures and no measure has two labels.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from uncertank import plugins
from uncertank.metrics._inputs import LabelsInput, ScoresInput
from uncertank.metrics.accumulators import Accumulator, PerQueryMean
from uncertank.metrics.measures import (
    MEASURES,
    Measure,
    MetricFunction,
    OptionsCheck,
    OptionsLabel,
    function_measure_id,
)
from uncertank.metrics.names import IR_MEASURES, parse_ir_measure
from uncertank.validation import check_choice, check_instance, check_name

__all__ = [
    "DEFAULT_STUDY_METRICS",
    "METRIC_KINDS",
    "Metric",
    "MetricEntry",
    "as_metric",
    "resolve_metrics",
]

MetricKind = Literal["ranking", "calibration"]
METRIC_KINDS: tuple[MetricKind, ...] = ("ranking", "calibration")

Label = str | OptionsLabel

#: Keys of a metric entry that are not options of the metric.
_RESERVED = ("name", "label")


def _option_names(fn: Callable[..., object]) -> tuple[tuple[str, ...], bool]:
    """Keyword options ``fn`` accepts (not scores/labels/per_query), and whether it takes ``**kwargs``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature
        return (), True
    names: list[str] = []
    var_kw = False
    params = list(sig.parameters.values())
    for i, prm in enumerate(params):
        if prm.kind is inspect.Parameter.VAR_KEYWORD:
            var_kw = True
        elif prm.kind is inspect.Parameter.KEYWORD_ONLY or (
            prm.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and i >= 2
        ):
            if prm.name != "per_query":
                names.append(prm.name)
    return tuple(names), var_kw


def _accepts_per_query(fn: Callable[..., object]) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return "per_query" in sig.parameters


class Metric:
    """A metric function with the metadata a study and its report need.

    Parameters
    ----------
    fn : callable
        ``fn(scores, labels=None, *, [per_query=False,] **options)``, returning
        a float (an ndarray of shape (n_queries,) with ``per_query=True``).
    name : str
        The registry name (``"recall_at_k"``).
    kind : {"ranking", "calibration"}
        Which table of a report it belongs to.
    needs_probabilities : bool
        Whether scores must be probabilities in [0, 1] (calibration metrics).
    higher_is_better : bool
        Direction of improvement.
    label : str or callable, optional
        The column label: a format string over the options (``"R@{k}"``), or
        a function of the options mapping that returns the label. Default
        ``name``.
    options : mapping, optional
        Default options, passed to ``fn`` on every call unless overridden.
    per_query : bool, optional
        Whether the metric has a per-query value (``fn`` accepts
        ``per_query``). Default: read from ``fn``'s signature.
    accumulator : callable, optional
        ``accumulator(**options)`` returning a mergeable streaming
        accumulator for this metric (see :mod:`uncertank.metrics.streaming`).
        Metrics with a per-query value get one by default (the mean of the
        per-query values over chunks of whole queries).
    description : str, optional
        One line for listings; default the first line of ``fn``'s docstring.
    check : callable, optional
        ``check(options)``: raises ``ValueError`` (or ``TypeError``) naming
        the option when a value is wrong (``k=0``). It runs on the default
        options whenever they are set (here and by :meth:`bind`), so a bad
        option is refused when the metric is resolved, before any scoring;
        the options of a single call are checked by ``fn`` itself.
    measure : Measure, optional
        The :class:`~uncertank.metrics.measures.Measure` the metric computes;
        the built-in metrics have one (see :meth:`from_measure`), and it
        gives the canonical identifier :attr:`measure_id`.

    Examples
    --------
    >>> from uncertank.metrics import recall_at_k
    >>> r = Metric(recall_at_k, name="recall_at_k", kind="ranking", label="R@{k}", options={"k": 1})
    >>> r([[0.9, 0.2], [0.1, 0.8]], [[0, 1], [0, 1]])
    0.5
    >>> r2 = r.bind(k=2)
    >>> r2.display_label, r2([[0.9, 0.2], [0.1, 0.8]], [[0, 1], [0, 1]])
    ('R@2', 1.0)
    """

    __slots__ = (
        "_accumulator", "_check", "_option_names", "_options", "_var_kw", "description", "fn", "higher_is_better",
        "kind", "label", "measure", "name", "needs_probabilities", "per_query",
    )

    def __init__(
        self,
        fn: MetricFunction,
        *,
        name: str,
        kind: MetricKind,
        needs_probabilities: bool = False,
        higher_is_better: bool = True,
        label: Label | None = None,
        options: Mapping[str, object] | None = None,
        per_query: bool | None = None,
        accumulator: Callable[..., Accumulator] | None = None,
        description: str | None = None,
        check: OptionsCheck | None = None,
        measure: Measure | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable; got {type(fn).__name__}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str; got {name!r}")
        if measure is not None and not isinstance(measure, Measure):
            raise TypeError(f"measure must be a Measure; got {type(measure).__name__}")
        self.fn = fn
        self.name = name
        self.measure = measure
        self.kind: MetricKind = check_choice(kind, "kind", METRIC_KINDS)
        self.needs_probabilities = bool(needs_probabilities)
        self.higher_is_better = bool(higher_is_better)
        self.label: Label = name if label is None else label
        if not (isinstance(self.label, str) or callable(self.label)):
            raise TypeError(f"label must be a format string or a callable; got {type(label).__name__}")
        self.per_query = _accepts_per_query(fn) if per_query is None else bool(per_query)
        self._option_names, self._var_kw = _option_names(fn)
        if check is not None and not callable(check):
            raise TypeError(f"check must be callable; got {type(check).__name__}")
        self._check = check
        self._options: dict[str, object] = {}
        self._options = self._check_options(dict(options or {}), "options")
        if check is not None:
            check(MappingProxyType(self._options))
        self._accumulator = accumulator
        if description is None:
            doc = inspect.getdoc(fn) or ""
            description = doc.strip().splitlines()[0] if doc.strip() else name
        self.description = description

    @classmethod
    def from_measure(cls, measure: Measure) -> Metric:
        """The registered metric of ``measure``: its function, label, options, accumulator and metadata.

        Examples
        --------
        >>> from uncertank.metrics.measures import MEASURES
        >>> m = Metric.from_measure(MEASURES["Success"]).bind(k=5)
        >>> m.name, m.display_label, m.measure_id
        ('recall_at_k', 'R@5', 'Success@5')
        """
        return cls(
            measure.fn, name=measure.name, kind=measure.kind, needs_probabilities=measure.needs_probabilities,
            higher_is_better=measure.higher_is_better, label=measure.display, options=measure.options,
            accumulator=measure.accumulator, description=measure.description, check=measure.check, measure=measure,
        )

    @property
    def measure_id(self) -> str:
        """The canonical identifier of what the metric computes with its options (``"Success@1"``, ``"AP"``).

        The measure's own (:meth:`Measure.measure_id
        <uncertank.metrics.measures.Measure.measure_id>`) for a built-in
        metric; for another (a plugin's), its registry name with the options
        that differ from its function's defaults: ``"my_metric(k=3)"``.
        """
        if self.measure is not None:
            return self.measure.measure_id(self._options)
        return function_measure_id(self.name, self.fn, self._options)

    # ------------------------------------------------------------------ options

    @property
    def options(self) -> Mapping[str, object]:
        """The default options (a read-only view)."""
        return MappingProxyType(self._options)

    @property
    def option_names(self) -> tuple[str, ...]:
        """The options the metric accepts (empty with ``accepts_any_option``)."""
        return self._option_names

    @property
    def accepts_any_option(self) -> bool:
        """Whether the function takes ``**options`` (so any name is passed through)."""
        return self._var_kw

    def accepts(self, option: str) -> bool:
        """Whether ``option`` is an option of this metric (e.g. ``"n_bins"``)."""
        return self._var_kw or option in self._option_names

    def _check_options(self, options: dict[str, object], what: str) -> dict[str, object]:
        unknown = [k for k in options if not self.accepts(k)]
        if unknown:
            known = ", ".join(self._option_names) or "(none)"
            raise ValueError(
                f"metric {self.name!r} has no option {unknown[0]!r} (in {what}); its options are: {known}"
            )
        return options

    def bind(self, **options: object) -> Metric:
        """The same metric with other default options.

        Raises
        ------
        ValueError
            When an option is not one the metric accepts (the message lists
            them), or its value is wrong (the message names the option).
        """
        merged = {**self._options, **self._check_options(options, "bind()")}
        return self._copy(options=merged)

    def with_label(self, label: Label) -> Metric:
        """The same metric under another label (a format string or a callable)."""
        return self._copy(label=label)

    def _copy(
        self, *, name: str | None = None, label: Label | None = None, options: Mapping[str, object] | None = None
    ) -> Metric:
        return Metric(
            self.fn, name=self.name if name is None else name, kind=self.kind,
            needs_probabilities=self.needs_probabilities, higher_is_better=self.higher_is_better,
            label=self.label if label is None else label, options=self._options if options is None else options,
            per_query=self.per_query, accumulator=self._accumulator, description=self.description,
            check=self._check, measure=self.measure,
        )

    @property
    def display_label(self) -> str:
        """The label with the default options filled in (``"R@1"``, ``"ECE quantile"``)."""
        return self.format_label(self._options)

    def format_label(self, options: Mapping[str, object]) -> str:
        """The label for ``options`` (the default options completed by them)."""
        opts = {**self._options, **options}
        if callable(self.label):
            return str(self.label(MappingProxyType(opts)))
        try:
            return self.label.format(**opts)
        except (KeyError, IndexError):
            return self.label

    # ------------------------------------------------------------------ calling

    def __call__(
        self, scores: ScoresInput, labels: LabelsInput = None, *, per_query: bool = False, **options: object
    ) -> float | NDArray[np.float64]:
        """Evaluate on ``scores`` and ``labels`` (see the module notes for the accepted inputs).

        Parameters
        ----------
        scores : RankedLists, Predictions, or array-like
            See the module notes.
        labels : array-like or QuerySet, optional
            None when ``scores`` is a RankedLists.
        per_query : bool
            Return the value of every query, shape (n_queries,).
        **options
            Override the default options for this call.

        Raises
        ------
        ValueError
            ``per_query=True`` on a metric without a per-query value, or an
            option the metric does not accept.
        """
        if not isinstance(per_query, (bool, np.bool_)):
            raise TypeError(f"per_query must be a bool; got {type(per_query).__name__} {per_query!r}")
        per_query = bool(per_query)
        opts = {**self._options, **self._check_options(options, "the call")}
        if per_query:
            if not self.per_query:
                raise ValueError(
                    f"metric {self.name!r} has no per-query value; call it with per_query=False"
                )
            return self.fn(scores, labels, per_query=True, **opts)
        if self.per_query:
            opts["per_query"] = False
        return self.fn(scores, labels, **opts)

    def accumulator(self, **options: object) -> Accumulator:
        """A mergeable streaming accumulator for this metric with its options.

        ``update(chunk)`` with chunks in any input this metric accepts,
        ``merge(other)``, ``compute()``; see :mod:`uncertank.metrics.streaming`.

        Raises
        ------
        ValueError
            When the metric has neither its own accumulator nor a per-query value.
        """
        opts = {**self._options, **self._check_options(options, "accumulator()")}
        if self._accumulator is not None:
            return self._accumulator(**opts)
        if self.per_query:
            return PerQueryMean(self.bind(**opts))
        raise ValueError(
            f"metric {self.name!r} has no streaming accumulator: it has no per-query value and "
            "registers no accumulator"
        )

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return (f"Metric({self.name!r}, kind={self.kind!r}, label={self.display_label!r}, options={{{opts}}}, "
                f"measure={self.measure_id!r})")


#: An entry of a study's ``metrics = [...]``: a registered name, a mapping
#: ``{"name": ..., **options}`` (optionally with ``"label"``), or a Metric.
MetricEntry = str | Mapping[str, object] | Metric


def as_metric(obj: object, *, name: str) -> Metric:
    """A :class:`Metric` from a registry entry.

    A :class:`Metric` is returned as it is (renamed to ``name`` if it was
    registered under another name). A bare callable ``fn(scores, labels,
    **options)`` is wrapped with this metadata: ``kind="ranking"``,
    ``needs_probabilities=False``, ``higher_is_better=True``, label ``name``,
    no default options, a per-query value when ``fn`` takes ``per_query``,
    and the options read from its signature. Register a :class:`Metric` to
    say anything else (a calibration metric, lower is better).

    Raises
    ------
    TypeError
        When ``obj`` is not callable.
    """
    if isinstance(obj, Metric):
        return obj if obj.name == name else obj._copy(name=name)
    if not callable(obj):
        raise TypeError(f"metric {name!r} must be a Metric or a callable; got {type(obj).__name__}")
    return Metric(obj, name=name, kind="ranking")


def resolve_metrics(entries: Iterable[MetricEntry]) -> list[Metric]:
    """Bound metrics for the entries of a study's ``metrics = [...]``.

    Parameters
    ----------
    entries : iterable of str, mapping or Metric
        A registered name (``"map"``), a mapping with the name and options
        (``{"name": "recall_at_k", "k": 1}``, optionally ``"label"`` to
        override the column label), or a :class:`Metric` (kept as it is).
        Names are looked up in the ``metrics`` registry
        (:func:`uncertank.plugins.registry`), so a plugin's metric resolves
        like a built-in one. A name that is not registered is read as an
        ir_measures name (``"nDCG@10"``, ``"AP"``, ``"RR"``, ``"P@5"``,
        ``"R@1000"``, ``"Success@1"``, ``"nDCG(rel=2)@10"``; see
        :mod:`uncertank.metrics.names`): the metric it maps to, with its
        options, labelled with ir_measures' spelling when that spelling is
        a label of the measure (``R@k`` is not: it labels R_n@k, so
        trec_eval's recall keeps ``Recall@k``).

    Returns
    -------
    list of Metric
        One per entry, in order, with the entry's options bound.

    Raises
    ------
    ValueError
        An unknown name (the message lists the registered ones), an unknown
        option (the message lists the metric's options), a wrong value of an
        option (``k=0``, a cutoff or a number of bins beyond its bound; the
        message names the option), an entry without a name, a ``label``
        that is another measure's (``R@5`` for ``trec_recall_at_k``), two
        entries with one label that are not the same entry, or one measure
        under two labels (``"map"`` and ``"AP"``; see
        :mod:`uncertank.metrics.measures`).
    TypeError
        An entry that is neither a str, a mapping nor a Metric.

    Examples
    --------
    >>> [m.display_label for m in resolve_metrics([{"name": "recall_at_k", "k": 5}, "map"])]
    ['R@5', 'MAP']
    >>> [(m.name, m.display_label, m.measure_id) for m in resolve_metrics(["Success@5", "R@100", "AP"])]
    [('recall_at_k', 'Success@5', 'Success@5'), ('trec_recall_at_k', 'Recall@100', 'R@100'), ('map', 'AP', 'AP')]
    """
    if isinstance(entries, (str, Mapping)):
        raise TypeError(
            f"entries must be a list of metric names or mappings; got a single {type(entries).__name__}"
        )
    check_instance(entries, "entries", Iterable, "a list of metric names or mappings")
    reg = plugins.registry("metrics")  # looked up on the module, so a patched registry is seen
    out: list[Metric] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, Metric):
            out.append(entry)
            continue
        if isinstance(entry, str):
            name, options, label = entry, {}, None
        elif isinstance(entry, Mapping):
            if "name" not in entry:
                raise ValueError(f"metric entry {i} must have a 'name'; got keys {sorted(entry)}")
            name = check_name(entry["name"], f"metric entry {i}'s name")
            options = {k: v for k, v in entry.items() if k not in _RESERVED}
            label = entry.get("label")
        else:
            raise TypeError(
                f"metric entry {i} must be a name, a mapping or a Metric; got {type(entry).__name__}"
            )
        own_label = label is not None
        if name not in reg:
            name, options, label = _from_ir_measures(name, options, label, i, reg)
        metric = as_metric(reg[name].factory, name=name).bind(**options)
        if label is not None:
            if own_label:
                _check_own_label(metric, str(label), i)
            metric = metric.with_label(str(label))
        out.append(metric)
    _check_one_label_per_measure(out)
    return out


def _check_own_label(metric: Metric, label: str, i: int) -> None:
    """A label given in an entry may not be another measure's, nor, in its measure's grammar, other options'.

    ``R@5`` for trec recall is R_n@5's label, and ``MAP`` for ``map`` with
    ``k=5`` is another average precision's: both are refused; ``AP@5``
    (the identifier), ``MAP@5`` (the label) and ``MAP of the top 5`` are not.
    """
    owner = MEASURES.of_label(label)
    if owner is None:
        return
    if metric.measure is None or MEASURES.of_id(metric.measure_id) is not owner:
        raise ValueError(
            f"metric entry {i}: the label {label!r} belongs to the measure {owner.id} ({owner.name}), "
            f"not to {metric.measure_id} ({metric.name}); give a label of its own"
        )
    for stem in owner.labels:
        parts = re.fullmatch(rf"({re.escape(stem)})(_\d+)?(\([^()]*\))?(@\d+)?", label)
        if parts is None:
            continue
        plain = label
        if parts[2] and metric.options.get("n") is None:  # R_10@1 names the lists' length: R@1 on lists of ten
            plain = parts[1] + (parts[3] or "") + (parts[4] or "")
        if plain in (metric.display_label, metric.measure_id):
            return
        raise ValueError(
            f"metric entry {i}: the label {label!r} is not {metric.measure_id}'s (its label is "
            f"{metric.display_label!r}, its identifier {metric.measure_id!r}); use one of them or a label of its own"
        )


def _check_one_label_per_measure(metrics: list[Metric]) -> None:
    """No label names two measures, and no measure appears under two labels."""
    by_label: dict[str, int] = {}
    by_id: dict[str, int] = {}
    for i, m in enumerate(metrics):
        label, ident = m.display_label, m.measure_id
        j = by_label.setdefault(label, i)
        other = metrics[j]
        if j != i and (other.name != m.name or dict(other.options) != dict(m.options)):
            what = (f"one measure, {ident}, with other settings ({dict(other.options)} and {dict(m.options)})"
                    if other.measure_id == ident else f"different measures ({other.measure_id} and {ident})")
            raise ValueError(
                f"metric entries {j} and {i} share the label {label!r} but are {what}; give one a label of its own"
            )
        j = by_id.setdefault(ident, i)
        if metrics[j].display_label != label:
            raise ValueError(
                f"metric entries {j} and {i} are one measure, {ident}, under two labels "
                f"({metrics[j].display_label!r} and {label!r}); keep one"
            )


def _from_ir_measures(
    name: str, options: dict[str, object], label: object, i: int, reg: Mapping[str, object]
) -> tuple[str, dict[str, object], object]:
    """The registered name, options and label of an ir_measures name (``"nDCG@10"``)."""
    parsed = parse_ir_measure(name)
    if parsed is None:
        known = ", ".join(sorted(reg)) or "(none)"
        ir = ", ".join(f"{m}@k" if cut else m for m, (_, cut) in IR_MEASURES.items())
        raise ValueError(
            f"unknown metric {name!r} (entry {i}); known metrics: {known}; "
            f"or an ir_measures name: {ir}, with (rel=N)"
        )
    ir_label: str | None = parsed["label"]
    registered = parsed["name"]
    params = {k: v for k, v in parsed.items() if k not in _RESERVED}  # the options it sets (k, rel)
    measure = MEASURES.of_name(registered)
    if measure is not None and not measure.claims(parsed["label"]):
        ir_label = None  # ir_measures' R@k: its label (R@k) is R_n@k's, so trec recall keeps its own (Recall@k)
    clash = [k for k in options if k in params and options[k] != params[k]]
    if clash:
        raise ValueError(
            f"metric entry {i}: {name!r} sets {clash[0]}={params[clash[0]]!r} but the entry gives "
            f"{clash[0]}={options[clash[0]]!r}"
        )
    if registered not in reg:
        raise ValueError(f"metric {name!r} (entry {i}) is ir_measures' name of {registered!r}, which is not registered")
    return registered, {**params, **options}, ir_label if label is None else label


#: The metrics a study reports by default, as entries for :func:`resolve_metrics`
#: (plain dicts: copy one before changing it):
#: R@1, R@2, R@5, MAP, MRR, nDCG@10, ECE (uniform bins), ECE quantile, ECE
#: balanced (subsample seeded with 0; bind ``seed`` to change it), ECE
#: Penha-Hauff, MCE, Brier, NLL.
DEFAULT_STUDY_METRICS: tuple[str | Mapping[str, object], ...] = (
    {"name": "recall_at_k", "k": 1},
    {"name": "recall_at_k", "k": 2},
    {"name": "recall_at_k", "k": 5},
    "map",
    "mrr",
    {"name": "ndcg", "k": 10},
    "ece",
    {"name": "ece", "strategy": "quantile"},
    {"name": "ece", "balanced": True, "seed": 0},
    {"name": "ece", "convention": "penha-hauff"},
    "mce",
    "brier",
    "nll",
)
