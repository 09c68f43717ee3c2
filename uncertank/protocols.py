"""The ranker protocols every plugin implements, one per capability.

They are :class:`typing.Protocol` classes checked structurally at run time
(``isinstance(obj, Ranker)``): a ranker need not inherit from anything. A
ranker offers :class:`Ranker` and any of the capabilities below; what a study
does with each is in docs/plugins.md ("What a study uses of a ranker"):

- :class:`Trainable` (``fit``, ``is_fitted``): trained on the study's
  training queries unless already fitted.
- :class:`Saveable` (``save``, classmethod ``load``): its trained model is
  kept under ``models/`` and reused on resume; it can read a ``checkpoint``.
- :class:`WarmStartable` (classmethod ``from_ranker``): it can start from
  another ranker of the study (``init_from``).
- :class:`StochasticRanker` (``predict_samples``): joint draws of its scores.
- :class:`Probabilistic` (``probabilistic``): says whether its scores are
  probabilities before it predicts.
- :class:`CostEstimating` (``cost_rates``): says what its ``fit`` and
  ``predict`` should cost, for ``uncertank run --dry-run`` and the
  estimates a run prints before each step.
- :class:`TrainingLimited` (``max_train_queries``): it trains on a seeded
  subset of the training queries, which the study's log and estimate count.
- :class:`ModelBuilding` (``build_model``): it builds its network untrained
  (weights read, nothing trained), so a study's check can try a warm start
  before any work.
- :class:`RequirementChecking` (``missing_requirements``): it names, before
  any work, what it needs that the machine lacks (a packaged model).
- :class:`Cloneable` (``get_params``, ``set_params``): scikit-learn's
  estimator contract; ``sklearn.base.clone`` rebuilds it from its
  parameters (:class:`uncertank.params.Parameters` gives a class both).
- A factory (or ``load``, or ``from_ranker``) that names the keyword
  ``show_progress`` in its signature has its progress bars turned off by a
  study (:func:`takes_show_progress`).

:func:`capabilities` is the one place that asks a ranker what it offers: it
returns a :class:`Capabilities` record, which the study (its check, its plan
and its run), the conformance kit and the checkpoint reader use; nothing
else probes a ranker. A ranker that offers one member of a capability
without the other (``fit`` without ``is_fitted``, ``save`` without
``load``) is refused by :func:`check_capabilities` rather than half used.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from os import PathLike
from typing import Any, NamedTuple, Protocol, runtime_checkable

from typing_extensions import Self

from uncertank._types import Predictions, PredictiveSamples, QuerySet
from uncertank.validation import check_nonnegative

__all__ = [
    "Capabilities",
    "CapabilityError",
    "Cloneable",
    "CostEstimating",
    "CostRates",
    "ModelBuilding",
    "NotFittedError",
    "Probabilistic",
    "ProbeScaled",
    "Ranker",
    "RequirementChecking",
    "Saveable",
    "StochasticRanker",
    "Trainable",
    "TrainableRanker",
    "TrainingLimited",
    "WarmStartable",
    "capabilities",
    "check_capabilities",
    "cost_rates_problem",
    "takes_show_progress",
]


class NotFittedError(ValueError, AttributeError):
    """A ranker was asked to predict before it was fitted, loaded or given trained weights.

    Subclasses ValueError and AttributeError, as scikit-learn's
    ``NotFittedError`` does, so existing ``except ValueError`` handlers keep working.
    """


class CapabilityError(TypeError):
    """A ranker does not offer what it must: not a :class:`Ranker`, or part of a capability only.

    Raised by :func:`uncertank.make_ranker` and :func:`check_capabilities`
    (so by :func:`capabilities`); a TypeError, as before it had a name of its own.
    """


@runtime_checkable
class Ranker(Protocol):
    """Scores every candidate of every query.

    Attributes
    ----------
    name : str
        A short name used in reports.
    """

    name: str

    def predict(self, queries: QuerySet) -> Predictions:
        """Return the (mean) probability of relevance of every pair, shape (n_pairs,)."""
        ...


@runtime_checkable
class StochasticRanker(Ranker, Protocol):
    """A ranker with a predictive distribution over its scores."""

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Return joint draws of shape (n_samples, n_pairs).

        Each row is one joint draw across all pairs (one dropout mask, one
        ensemble member, one posterior draw). ``n_samples=None`` uses the
        ranker's own default (T passes, M members, ...).
        """
        ...


@runtime_checkable
class Probabilistic(Protocol):
    """A ranker that says, before predicting, whether its scores are probabilities of relevance.

    A study reads the flag of a :class:`StochasticRanker` to tell its
    samples' kind; without it, the mean of the samples decides (all in
    [0, 1]: probabilities). A ranker whose samples lie in [0, 1] but are not
    probabilities sets ``probabilistic = False``.

    Attributes
    ----------
    probabilistic : bool
        True when the scores are P(relevant), False for other scores.
    """

    @property
    def probabilistic(self) -> bool:
        """Whether the scores are probabilities of relevance."""
        ...


class _CostRateFields(NamedTuple):
    fit_per_query: float
    predict_per_pair: float


class CostRates(_CostRateFields):
    """What a ranker's ``fit`` and ``predict`` should cost, in seconds, on the machine its rates were measured on.

    A named tuple of two finite seconds ``>= 0``, checked when it is built:
    a NaN, an infinity, a negative number or no number raises there, naming
    the field.

    Attributes
    ----------
    fit_per_query : float
        Seconds of ``fit`` per training query (0 when it trains nothing).
    predict_per_pair : float
        Seconds of ``predict`` (or ``predict_samples``) per scored pair.
    """

    __slots__ = ()

    def __new__(cls, fit_per_query: float, predict_per_pair: float) -> Self:
        """Build the rates, refusing a field that is not a finite number of seconds >= 0."""
        check_nonnegative(fit_per_query, "fit_per_query")
        check_nonnegative(predict_per_pair, "predict_per_pair")
        return super().__new__(cls, fit_per_query, predict_per_pair)


@runtime_checkable
class CostEstimating(Protocol):
    """A ranker that says what it should cost before it runs (the dry run's estimate).

    ``cost_rates`` is read on a ranker just built (no model loaded, nothing
    trained): rates measured on a known machine at the ranker's own setting
    (its passes, its members), or None when it has none. A ranker with a
    transformer encoder gives them for six layers (the packaged MiniLM's);
    a study scales them by ``num_hidden_layers / 6`` where the ranker, or
    the one it starts from, sets ``num_hidden_layers``, and by the sizes of
    its splits. The first-party rates were measured on two CPU cores
    (docs/results/real_run.json).
    """

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """The seconds per training query and per scored pair; ``warm_start``: it starts from another ranker."""
        ...


def cost_rates_problem(rates: object) -> str | None:
    """What is wrong with a value ``cost_rates`` returned, or None when it is None or valid :class:`CostRates`.

    Examples
    --------
    >>> cost_rates_problem(CostRates(0.2, 0.006)) is None, cost_rates_problem(None) is None
    (True, True)
    >>> cost_rates_problem((0.2, 0.006))
    'must return None or uncertank.CostRates of two finite seconds >= 0; got (0.2, 0.006)'
    """
    if rates is None or (isinstance(rates, CostRates) and all(
            isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r) and r >= 0
            for r in rates)):
        return None
    return f"must return None or uncertank.CostRates of two finite seconds >= 0; got {rates!r}"


@runtime_checkable
class Trainable(Protocol):
    """A ranker that is trained on labelled queries.

    A study calls :meth:`fit` unless :attr:`is_fitted` is already True (a
    fine-tuned model used as it is, a ranker loaded from a checkpoint).
    """

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Train on labelled queries; return self."""
        ...

    @property
    def is_fitted(self) -> bool:
        """True once the ranker can predict without :meth:`fit` (trained, loaded, or given trained weights)."""
        ...


@runtime_checkable
class Saveable(Protocol):
    """A ranker that writes itself to a folder and is rebuilt from it."""

    def save(self, path: str | PathLike[str]) -> None:
        """Write everything needed to rebuild the ranker into the folder ``path``."""
        ...

    @classmethod
    def load(cls, path: str | PathLike[str], **params: Any) -> Self:
        """Rebuild a ranker written by :meth:`save`.

        ``params`` are constructor parameters that override what the
        checkpoint stored (``device``, ``show_progress``, ...): a study's
        ``[[rankers]] checkpoint = ...`` with ``params`` calls
        ``load(folder, **params)`` (the checkpoint contract, docs/plugins.md).
        """
        ...


@runtime_checkable
class WarmStartable(Protocol):
    """A ranker built from another, trained one (a study's ``init_from``)."""

    @classmethod
    def from_ranker(cls, ranker: Any, **params: Any) -> Self:
        """A new ranker of this class, built with the constructor parameters ``params``, starting from ``ranker``.

        What it takes over (weights, an encoder, a first ensemble member)
        is the class's to say; it refuses a ``ranker`` it cannot start from.
        """
        ...


@runtime_checkable
class TrainableRanker(Ranker, Trainable, Saveable, Protocol):
    """A ranker that can be fitted, saved and loaded: :class:`Ranker`, :class:`Trainable` and :class:`Saveable`."""


@runtime_checkable
class TrainingLimited(Protocol):
    """A trainable ranker that trains on a seeded subset of the training queries when it has more.

    A study's log ("training on 3000 of the 10000 training queries") and
    its estimate of the ``fit`` step count the subset.

    Attributes
    ----------
    max_train_queries : int or None
        The most training queries ``fit`` uses (None: all of them).
    """

    @property
    def max_train_queries(self) -> int | None:
        """The most training queries ``fit`` uses; None for all."""
        ...


@runtime_checkable
class ModelBuilding(Protocol):
    """A ranker that builds its network untrained on request (its weights read, nothing trained).

    A study's check before the work builds an untrained source this way and
    tries ``from_ranker`` on it, so that a parameter the trained source
    would refuse (MC dropout layers above the encoder's) is named before any
    training.
    """

    def build_model(self) -> Any:
        """Build (once) and return the ranker's network, untrained."""
        ...


@runtime_checkable
class RequirementChecking(Protocol):
    """A ranker that names what it needs and the machine lacks, before anything is loaded."""

    def missing_requirements(self) -> list[tuple[str, str]]:
        """One ``(parameter, what to do)`` per missing requirement: ``("backbone", "install it with pip ...")``.

        Called on a ranker just built (nothing loaded); an empty list when
        nothing is missing.
        """
        ...


@runtime_checkable
class ProbeScaled(Protocol):
    """A ranker whose :class:`CostRates` are a torch network's, so the machine's speed probe scales them.

    Before a study's work, one batch of the bundled backbone trained and
    scored on the user's machine, against the same batch on the machine the
    rates were measured on, gives the factor (``uncertank.experiment.speed``).

    Attributes
    ----------
    cost_scales_with_probe : bool
        True when the rates are a torch network's.
    """

    cost_scales_with_probe: bool


@runtime_checkable
class Cloneable(Protocol):
    """A ranker with scikit-learn's estimator contract: rebuilt from the parameters it reports.

    ``type(r)(**r.get_params(deep=False))`` must give a ranker that reports
    the same parameters, each the very object passed (its constructor
    stores its arguments unchanged, under their own names), which is what
    ``sklearn.base.clone`` relies on; the conformance kit checks it.
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, by name."""
        ...

    def set_params(self, **params: Any) -> Self:
        """Set constructor arguments by name; returns the ranker."""
        ...


@dataclass(frozen=True, eq=False)
class Capabilities:
    """What a ranker offers, asked once (:func:`capabilities`): each capability as the ranker, typed, or None.

    Attributes
    ----------
    ranker : object
        The ranker asked.
    is_ranker : bool
        Whether it satisfies :class:`Ranker` (a ``name`` and ``predict``).
    trainable, saveable, warm_startable, stochastic, cost_estimating, model_building, requirement_checking
        The ranker typed as :class:`Trainable`, :class:`Saveable`,
        :class:`WarmStartable`, :class:`StochasticRanker`,
        :class:`CostEstimating`, :class:`ModelBuilding` and
        :class:`RequirementChecking`, where it offers them; else None.
    probabilistic : bool or None
        Its :class:`Probabilistic` flag; None when it declares none.
    max_train_queries : int or None
        Its :class:`TrainingLimited` cap; None when it trains on every query
        (or declares no cap).
    probe_scaled : bool
        Its :class:`ProbeScaled` flag; False when it declares none.
    cloneable : Cloneable or None
        The ranker typed as :class:`Cloneable`, where it offers
        ``get_params`` and ``set_params``; else None.
    """

    ranker: Any
    is_ranker: bool
    trainable: Trainable | None
    saveable: Saveable | None
    warm_startable: WarmStartable | None
    stochastic: StochasticRanker | None
    cost_estimating: CostEstimating | None
    model_building: ModelBuilding | None
    requirement_checking: RequirementChecking | None
    probabilistic: bool | None
    max_train_queries: int | None
    probe_scaled: bool = False
    cloneable: Cloneable | None = None

    @property
    def name(self) -> str:
        """The ranker's class name, for messages."""
        return type(self.ranker).__name__

    def missing_requirements(self) -> list[tuple[str, str]]:
        """What the ranker says it needs and the machine lacks (empty when it declares nothing)."""
        return [] if self.requirement_checking is None else list(self.requirement_checking.missing_requirements())


def capabilities(ranker: object) -> Capabilities:
    """Ask ``ranker`` once what it offers: the one place that tests a ranker against the protocols.

    Parameters
    ----------
    ranker : object
        A built (or loaded) ranker.

    Returns
    -------
    Capabilities

    Raises
    ------
    CapabilityError
        When it offers part of a capability (:func:`check_capabilities`), or
        declares a ``max_train_queries`` that is not None or an int >= 1.

    Examples
    --------
    >>> from uncertank.baselines import BM25Ranker
    >>> caps = capabilities(BM25Ranker())
    >>> caps.is_ranker, caps.trainable is None, caps.stochastic is None
    (True, True, True)
    """
    check_capabilities(ranker)
    limit = ranker.max_train_queries if isinstance(ranker, TrainingLimited) else None
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise CapabilityError(f"ranker {type(ranker).__name__}: max_train_queries must be None or an int >= 1 "
                        f"(uncertank.TrainingLimited); got {limit!r}")
    flag = ranker.probabilistic if isinstance(ranker, Probabilistic) else None
    return Capabilities(
        ranker=ranker,
        is_ranker=isinstance(getattr(ranker, "name", None), str) and isinstance(ranker, Ranker),
        trainable=ranker if isinstance(ranker, Trainable) else None,
        saveable=ranker if isinstance(ranker, Saveable) else None,
        warm_startable=ranker if isinstance(ranker, WarmStartable) else None,
        stochastic=ranker if isinstance(ranker, StochasticRanker) else None,
        cost_estimating=ranker if isinstance(ranker, CostEstimating) else None,
        model_building=ranker if isinstance(ranker, ModelBuilding) else None,
        requirement_checking=ranker if isinstance(ranker, RequirementChecking) else None,
        probabilistic=None if flag is None else bool(flag),
        max_train_queries=limit,
        probe_scaled=bool(ranker.cost_scales_with_probe) if isinstance(ranker, ProbeScaled) else False,
        cloneable=ranker if isinstance(ranker, Cloneable) else None,
    )


#: The members of each capability: offering some without the others is an error.
_CAPABILITIES: tuple[tuple[type, tuple[str, ...]], ...] = (
    (Trainable, ("fit", "is_fitted")),
    (Saveable, ("save", "load")),
    (Cloneable, ("get_params", "set_params")),
)


def check_capabilities(ranker: object) -> None:
    """Refuse a ranker that offers part of a capability (``fit`` without ``is_fitted``, ``save`` without ``load``).

    A study would otherwise use half of it: train a ranker it cannot tell is
    fitted, or save a model it cannot read back.

    Parameters
    ----------
    ranker : Ranker
        A built ranker.

    Raises
    ------
    CapabilityError
        Naming the ranker, the members it has and the member it lacks.
    """
    for proto, members in _CAPABILITIES:
        have = [m for m in members if hasattr(ranker, m)]
        if have and len(have) < len(members):
            lacks = [m for m in members if m not in have]
            raise CapabilityError(
                f"ranker {type(ranker).__name__} offers {' and '.join(have)} but not {' and '.join(lacks)}; "
                f"uncertank.{proto.__name__} needs {' and '.join(members)} (docs/plugins.md)"
            )


def _keywords(fn: Callable[..., object]) -> tuple[bool, bool]:
    """(whether ``fn``'s signature names ``show_progress`` as a keyword, whether it takes ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): it declares nothing
        return False, False
    named = "show_progress" in params and params["show_progress"].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return named, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def takes_show_progress(factory: Callable[..., object], *, constructor: type | None = None) -> bool:
    """Whether ``factory`` declares the keyword ``show_progress`` (False turns the ranker's progress bars off).

    A ranker declares it by naming ``show_progress`` in its factory's
    signature. Only signatures are read; nothing is called:

    - a class: its ``__init__``, and, while an ``__init__`` takes
      ``**kwargs`` (passed on to ``super().__init__``), the next one up its
      MRO. A class without an ``__init__`` of its own reads its bases'; one
      whose MRO defines none (``object``'s) declares nothing.
    - a function or method: its own signature; with ``constructor``, a
      ``**kwargs`` stands for the constructor's parameters, as the ``params``
      of :meth:`Saveable.load` and :meth:`WarmStartable.from_ranker` do.

    Parameters
    ----------
    factory : callable
        A ranker class, a factory function, or a bound ``load`` / ``from_ranker``.
    constructor : type, optional
        The class whose constructor a ``**kwargs`` of ``factory`` feeds.

    Returns
    -------
    bool

    Examples
    --------
    >>> class Quiet:
    ...     def __init__(self, *, show_progress: bool = True) -> None: ...
    >>> class Plain:
    ...     name = "plain"
    >>> takes_show_progress(Quiet), takes_show_progress(Plain)
    (True, False)
    """
    if isinstance(factory, type):
        for cls in factory.__mro__:
            if cls is object or "__init__" not in vars(cls):
                continue
            named, passes_on = _keywords(vars(cls)["__init__"])
            if named or not passes_on:
                return named
        return False
    named, passes_on = _keywords(factory)
    if named:
        return True
    return passes_on and constructor is not None and takes_show_progress(constructor)
