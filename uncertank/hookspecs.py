"""The hook specifications of uncertank's plugin system.

Every hook takes no argument and returns a mapping from a unique name to a
factory (a class or a function), never an instance: the host decides when to
build things. A plugin implements any subset::

    from uncertank import hookimpl

    @hookimpl
    def uncertank_rankers():
        return {"my-ranker": MyRanker}

and is announced in its own ``pyproject.toml``::

    [project.entry-points.uncertank]
    my-ranker = "mypkg.plugin"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FunctionType
from typing import Any, Protocol, TypeVar, overload, runtime_checkable

import pluggy

from uncertank.validation import check_bool, check_instance, check_name

__all__ = [
    "CacheTokened",
    "DatasetLoaderCapabilities",
    "PathResolving",
    "dataset_loader_capabilities",
    "hookimpl",
    "hookspec",
    "uncertank_datasets",
    "uncertank_metrics",
    "uncertank_negative_samplers",
    "uncertank_rankers",
    "uncertank_recalibrators",
]

PROJECT = "uncertank"

_F = TypeVar("_F", bound=Callable[..., object])


def _check_function(function: object) -> None:
    """A marker marks a function (it sets an attribute on it): anything else is refused by name."""
    if function is not None:
        check_instance(function, "function", FunctionType, "a function (def)")


class _HookspecMarker:
    """pluggy's hookspec marker, refusing with a library error what it cannot mark (an array, a number)."""

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name
        self._marker = pluggy.HookspecMarker(project_name)

    @overload
    def __call__(self, function: _F, firstresult: bool = ..., historic: bool = ...,
                 warn_on_impl: Warning | None = ..., warn_on_impl_args: Mapping[str, Warning] | None = ...) -> _F: ...

    @overload
    def __call__(self, function: None = ..., firstresult: bool = ..., historic: bool = ...,
                 warn_on_impl: Warning | None = ...,
                 warn_on_impl_args: Mapping[str, Warning] | None = ...) -> Callable[[_F], _F]: ...

    def __call__(
        self, function: Any = None, firstresult: bool = False, historic: bool = False,
        warn_on_impl: Warning | None = None, warn_on_impl_args: Mapping[str, Warning] | None = None,
    ) -> Any:
        _check_function(function)
        check_bool(firstresult, "firstresult")
        check_bool(historic, "historic")
        if warn_on_impl is not None:
            check_instance(warn_on_impl, "warn_on_impl", Warning, "a Warning or None")
        if warn_on_impl_args is not None:
            check_instance(warn_on_impl_args, "warn_on_impl_args", Mapping, "a mapping of Warning by argument")
        return self._marker(function, firstresult=firstresult, historic=historic, warn_on_impl=warn_on_impl,
                            warn_on_impl_args=warn_on_impl_args)


class _HookimplMarker:
    """pluggy's hookimpl marker, refusing with a library error what it cannot mark (an array, a number)."""

    def __init__(self, project_name: str) -> None:
        self.project_name = project_name
        self._marker = pluggy.HookimplMarker(project_name)

    @overload
    def __call__(self, function: _F, hookwrapper: bool = ..., optionalhook: bool = ..., tryfirst: bool = ...,
                 trylast: bool = ..., specname: str | None = ..., wrapper: bool = ...) -> _F: ...

    @overload
    def __call__(self, function: None = ..., hookwrapper: bool = ..., optionalhook: bool = ..., tryfirst: bool = ...,
                 trylast: bool = ..., specname: str | None = ..., wrapper: bool = ...) -> Callable[[_F], _F]: ...

    def __call__(
        self, function: Any = None, hookwrapper: bool = False, optionalhook: bool = False, tryfirst: bool = False,
        trylast: bool = False, specname: str | None = None, wrapper: bool = False,
    ) -> Any:
        _check_function(function)
        for flag, name in ((hookwrapper, "hookwrapper"), (optionalhook, "optionalhook"), (tryfirst, "tryfirst"),
                           (trylast, "trylast"), (wrapper, "wrapper")):
            check_bool(flag, name)
        if specname is not None:
            check_name(specname, "specname")
        return self._marker(function, hookwrapper=hookwrapper, optionalhook=optionalhook, tryfirst=tryfirst,
                            trylast=trylast, specname=specname, wrapper=wrapper)


#: Marks a hook specification of uncertank's (pluggy's ``HookspecMarker``, its arguments checked).
hookspec = _HookspecMarker(PROJECT)
#: Marks a plugin's implementation of a hook: ``@hookimpl`` (pluggy's ``HookimplMarker``, its arguments checked).
hookimpl = _HookimplMarker(PROJECT)


@hookspec
def uncertank_rankers() -> Mapping[str, Callable[..., object]]:
    """Return ranker factories by name.

    Each factory is called as ``factory(**params)`` by
    :func:`uncertank.make_ranker` (with the ``params`` of a study file) and
    must return an object satisfying :class:`uncertank.Ranker`: a str
    ``name`` and ``predict(queries) -> Predictions``; ``make_ranker`` checks
    this and raises TypeError naming the plugin otherwise. ``uncertank run``
    then calls, where the ranker has them: ``fit(train, valid)``,
    ``save(folder)`` (a folder that does not exist yet), ``type(ranker).load(folder)``
    on a resumed run, and ``predict_samples(queries)`` (a
    :class:`uncertank.StochasticRanker`, whose rows are joint draws) or else
    ``predict(queries)``. :func:`uncertank.testing.check_ranker` and
    :func:`uncertank.testing.check_stochastic_ranker` check that contract.
    """
    return {}  # the specification offers none; plugins' hookimpls do


@hookspec
def uncertank_datasets() -> Mapping[str, Callable[..., object]]:
    """Return dataset loaders by name.

    Each loader is called as ``loader(split=..., negatives=..., n_candidates=...,
    seed=..., **options)`` by :func:`uncertank.datasets.load` and returns a
    :class:`uncertank.QuerySet`; ``max_context_turns`` is passed only when the
    user sets it. A name ending in ``":"`` is a prefix: the text after it (a
    path, say) is passed as the loader's first argument. A loader with a
    method ``cache_token(arg=None, *, split=...)`` returning a str that
    changes whenever its data does is cached on disk by ``load`` (keyed by
    that token and every parameter); one without it is called every time.
    """
    return {}  # the specification offers none; plugins' hookimpls do


@hookspec
def uncertank_negative_samplers() -> Mapping[str, Callable[..., object]]:
    """Return negative-sampler factories by name.

    A sampler is built as ``factory(pool, seed=...)`` over a pool of candidate
    responses and called as ``sampler.sample(contexts, positives, k)``,
    returning an integer array of shape (n_queries, k) of indices into the
    pool. A factory that accepts ``groups=`` is told which dialogue each pool
    text comes from, so that a query's own dialogue is never sampled.
    """
    return {}  # the specification offers none; plugins' hookimpls do


@hookspec
def uncertank_recalibrators() -> Mapping[str, Callable[..., object]]:
    """Return recalibrator factories by name.

    The factory is called with no argument; the object has ``fit(scores,
    labels) -> self`` and ``transform(scores) -> probabilities``, both on flat
    arrays of shape (n_pairs,), and maps the scores of a probabilistic ranker
    to calibrated probabilities in [0, 1]. A study fits each one on the
    validation predictions and reports the calibration metrics of its output
    beside the raw scores. The map should be non-decreasing in the score, so
    that recalibrating never reorders the ranking it calibrates;
    :func:`uncertank.testing.check_recalibrator` checks this contract.
    """
    return {}  # the specification offers none; plugins' hookimpls do


@hookspec
def uncertank_metrics() -> Mapping[str, Callable[..., object]]:
    """Return metrics by name: :class:`uncertank.metrics.Metric` objects (or bare callables).

    A :class:`~uncertank.metrics.Metric` carries what a study report needs:
    ``kind`` (``"ranking"`` or ``"calibration"``), ``needs_probabilities``,
    ``higher_is_better``, a column ``label`` (``"P@{k}"``) and default
    ``options``. Every metric is called as ``metric(scores, labels=None, *,
    per_query=False, **options)``, where ``scores`` is a
    :class:`uncertank.RankedLists` (``labels`` None), a
    :class:`uncertank.Predictions` with labels, or dense arrays of shape
    (n_queries, n_candidates); it returns a float, or an array of shape
    (n_queries,) with ``per_query=True``. A bare callable is wrapped by
    :func:`uncertank.metrics.as_metric` as a ranking metric, higher is
    better. A ranking metric must give per-query values. A study's
    ``metrics = [...]`` names them (with options) and its report shows their
    columns; :func:`uncertank.testing.check_metric` checks this contract.
    """
    return {}  # the specification offers none; plugins' hookimpls do


# -- what a dataset loader may offer beyond being called ------------------------------------------------------------


@runtime_checkable
class CacheTokened(Protocol):
    """A dataset loader whose sets :func:`uncertank.datasets.load` caches on disk.

    ``cache_token`` returns a str that changes whenever the data or the way
    a set is built changes (the cache key also holds every parameter of the
    call); :func:`uncertank.datasets.cacheable` adds one to a function.
    """

    def cache_token(self, arg: str | None = None, *, split: str = "train") -> str:
        """A str that changes with the data read for ``split`` (``arg``: the text after a prefix)."""
        ...


@runtime_checkable
class PathResolving(Protocol):
    """A prefix dataset loader (``tsv:PATH``) that names the file it would read, without reading it.

    A study file's relative paths are taken from the file's folder, and the
    study's check finds a missing file before any work, through ``resolve``.
    """

    def resolve(self, arg: str, split: str) -> Any:
        """The file ``arg`` names for ``split``; OSError or ValueError when there is none."""
        ...


@dataclass(frozen=True, eq=False)
class DatasetLoaderCapabilities:
    """What a registered dataset loader offers (:func:`dataset_loader_capabilities`).

    Attributes
    ----------
    loader : object
        The loader (a function, a class or a callable loader object).
    cacheable : CacheTokened or None
        The loader typed as :class:`CacheTokened`, or None.
    resolving : PathResolving or None
        The loader typed as :class:`PathResolving`, or None.
    """

    loader: Any
    cacheable: CacheTokened | None
    resolving: PathResolving | None


def dataset_loader_capabilities(loader: object) -> DatasetLoaderCapabilities:
    """Ask a dataset loader once what it offers: the one place that tests one against its protocols.

    Examples
    --------
    >>> from uncertank.datasets import cacheable
    >>> @cacheable("v1")
    ... def mine(*, split="train", negatives=None, n_candidates=None, seed=0): ...
    >>> caps = dataset_loader_capabilities(mine)
    >>> caps.cacheable is not None, caps.resolving is None
    (True, True)
    """
    return DatasetLoaderCapabilities(
        loader=loader,
        cacheable=loader if isinstance(loader, CacheTokened) and callable(loader.cache_token) else None,
        resolving=loader if isinstance(loader, PathResolving) and callable(loader.resolve) else None,
    )
