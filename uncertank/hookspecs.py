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
from typing import Any

import pluggy

__all__ = [
    "hookimpl",
    "hookspec",
    "uncertank_datasets",
    "uncertank_metrics",
    "uncertank_negative_samplers",
    "uncertank_rankers",
    "uncertank_recalibrators",
]

PROJECT = "uncertank"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def uncertank_rankers() -> Mapping[str, Callable[..., Any]]:
    """Return ranker factories by name.

    Each factory is called as ``factory(**params)`` by
    :func:`uncertank.make_ranker` and must return an object satisfying
    :class:`uncertank.Ranker` (or :class:`uncertank.StochasticRanker`).
    """
    raise NotImplementedError


@hookspec
def uncertank_datasets() -> Mapping[str, Callable[..., Any]]:
    """Return dataset loaders by name.

    Each loader is called as ``loader(split=..., negatives=..., n_candidates=...,
    seed=..., **options)`` by :func:`uncertank.datasets.load` and returns a
    :class:`uncertank.QuerySet`. A name ending in ``":"`` is a prefix: the text
    after it (a path, say) is passed as the loader's first argument.
    """
    raise NotImplementedError


@hookspec
def uncertank_negative_samplers() -> Mapping[str, Callable[..., Any]]:
    """Return negative-sampler factories by name.

    A sampler is built as ``factory(pool, seed=...)`` over a pool of candidate
    responses and called as ``sampler.sample(contexts, positives, k)``.
    """
    raise NotImplementedError


@hookspec
def uncertank_recalibrators() -> Mapping[str, Callable[..., Any]]:
    """Return recalibrator factories by name.

    A recalibrator has ``fit(scores, labels)`` and ``transform(scores)``, both on
    flat arrays of shape (n_pairs,), and maps scores to calibrated probabilities.
    """
    raise NotImplementedError


@hookspec
def uncertank_metrics() -> Mapping[str, Callable[..., Any]]:
    """Return metric functions by name.

    A metric is called as ``metric(scores, labels, **options)`` where ``scores``
    is a :class:`uncertank.RankedLists` (``labels`` is then None) or a dense
    2-D array, and returns a float (or an array with ``per_query=True``).
    """
    raise NotImplementedError
