"""How a study makes its rankers: built from a ``[[rankers]]`` entry, loaded from a folder, or warm-started.

Every stage that needs a ranker (the check before the work, the plan of a
dry run, the run itself) gets it here, and gets with it the ranker's
:class:`~uncertank.protocols.Capabilities`, the record of what it offers
(:func:`uncertank.protocols.capabilities`); no stage tests a ranker against
a protocol itself. Building is cheap: a ranker loads its model lazily.

A study logs one line per step, so a ranker's own progress bars are turned
off here where its factory (or ``load``, or ``from_ranker``) declares the
keyword ``show_progress`` (:func:`quiet_params`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from uncertank.experiment.config import RankerConfig
from uncertank.protocols import Capabilities, Ranker, capabilities, takes_show_progress
from uncertank.validation import check_callable, check_instance, check_path

__all__ = ["build_ranker", "load_saved_ranker", "quiet_params", "warm_start"]


def quiet_params(
    factory: Callable[..., object], params: Mapping[str, object], constructor: type | None = None
) -> dict[str, object]:
    """``params`` with ``show_progress=False`` added where ``factory`` declares the keyword.

    The option changes no output, so no cache key holds it, and a study
    that sets it keeps its own value. ``factory`` declares it in its
    signature (:func:`uncertank.protocols.takes_show_progress`);
    ``constructor`` is the class whose parameters a ``**kwargs`` of
    ``factory`` takes (``load``, ``from_ranker``).
    """
    check_callable(factory, "factory", "a callable")
    check_instance(params, "params", Mapping, "a mapping of keyword arguments")
    if constructor is not None:
        check_instance(constructor, "constructor", type, "a class or None")
    if "show_progress" in params or not takes_show_progress(factory, constructor=constructor):
        return dict(params)
    return {**params, "show_progress": False}


def build_ranker(rc: RankerConfig) -> Capabilities:
    """The ranker of ``rc`` from its registered factory, with its ``params`` and ``pretrained``.

    Built through :func:`uncertank.make_ranker` (which refuses anything that
    is not a :class:`~uncertank.Ranker`); nothing is loaded or trained.

    Raises
    ------
    TypeError, ValueError, ImportError
        What the factory raises for its parameters (an unknown keyword is
        Python's TypeError, which the study's check names with its path),
        and :func:`~uncertank.protocols.capabilities`' TypeError for a
        ranker offering part of a capability.
    """
    from uncertank.plugins import get_factory, make_ranker

    check_instance(rc, "rc", RankerConfig)

    params = dict(rc.params) if rc.pretrained is None else {**rc.params, "pretrained": rc.pretrained}
    return capabilities(make_ranker(rc.name, **quiet_params(get_factory("rankers", rc.name), params)))


def load_saved_ranker(rc: RankerConfig, built: Capabilities, folder: str | os.PathLike[str],
                params: Mapping[str, object] | None = None) -> Capabilities:
    """``type(ranker).load(folder, **params)`` for the ranker ``built`` from ``rc`` (a checkpoint, or a saved step).

    Raises
    ------
    TypeError
        When the ranker offers no ``load`` (:class:`~uncertank.Saveable`), or
        what ``load`` returns is not a ranker.
    """
    check_instance(rc, "rc", RankerConfig)
    check_instance(built, "built", Capabilities)
    check_path(folder, "folder")
    if params is not None:
        check_instance(params, "params", Mapping, "a mapping of keyword arguments")
    if built.saveable is None:
        raise TypeError(f"{rc.key}: {rc.name!r} offers no load(folder) to read {os.fspath(folder)} with "
                        "(uncertank.Saveable)")
    cls = type(built.ranker)
    load = type(built.saveable).load  # the ranker's class (built.saveable is the ranker, typed)
    loaded = capabilities(load(folder, **quiet_params(load, dict(params or {}), cls)))
    if not loaded.is_ranker:
        raise TypeError(f"{rc.key}: {cls.__name__}.load returned a {loaded.name}, which is not an uncertank.Ranker "
                        "(a str name and predict(queries))")
    return loaded


def warm_start(rc: RankerConfig, built: Capabilities, source: Ranker) -> Capabilities:
    """``rc``'s ranker started from ``source`` (the trained ranker ``rc.init_from`` names): its class's ``from_ranker``.

    Raises
    ------
    TypeError
        When the class offers no ``from_ranker`` (:class:`~uncertank.WarmStartable`),
        or what it returns has no ``fit`` and ``is_fitted``
        (:class:`~uncertank.Trainable`).
    """
    check_instance(rc, "rc", RankerConfig)
    check_instance(built, "built", Capabilities)
    if rc.init_from is None:
        raise ValueError(f"{rc.key}: rc.init_from must name the trained ranker to start from; got None")
    cls = type(built.ranker)
    if built.warm_startable is None:
        raise TypeError(f"{rc.key}: {rc.name!r} offers no from_ranker(trained, **params) to start from "
                        f"{rc.init_from} with (uncertank.WarmStartable)")
    from_ranker = type(built.warm_startable).from_ranker  # the ranker's class (built.warm_startable is the ranker)
    warm = capabilities(from_ranker(source, **quiet_params(from_ranker, dict(rc.params), cls)))
    if warm.trainable is None:
        raise TypeError(f"{rc.key}: {cls.__name__}.from_ranker returned a {warm.name}, "
                        "which has no fit and is_fitted (uncertank.Trainable)")
    return warm
