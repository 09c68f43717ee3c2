"""A test kit for plugin authors: load a plugin without installing it, fake entry points, conformance checks.

Nothing here imports pytest; the checks raise :class:`ConformanceError` (an
:class:`AssertionError`), so they read well under any test runner.

- :func:`load_plugin_module`: import a plugin module from a file, a package
  folder or a dotted name and register it with the host (the registries are
  refreshed, so lookups made before see it).
- :func:`fake_entry_points`: a context manager under which the host sees
  the given entry points instead of (or beside) the installed ones, as if a
  distribution announcing them were installed: how loading, failure
  reporting and name clashes can be tested without installing anything.
- :func:`check_ranker` and :func:`check_stochastic_ranker`: the contract
  that ``uncertank run`` relies on, checked on a ranker and a
  :class:`~uncertank.QuerySet` of your choice. Every first-party ranker
  passes them in uncertank's own test suite.
- :func:`check_metric` and :func:`check_recalibrator`: the same for a
  registered metric (one call signature, per-query values, direction) and
  a recalibrator (fit, probabilities, the ranking kept). Every built-in
  passes them.

Examples
--------
>>> from uncertank import QuerySet, make_ranker
>>> from uncertank.testing import check_ranker
>>> qs = QuerySet.from_lists([["my usb drive is not mounted"], ["no sound"]],
...                          [["mount the usb drive", "hello there"], ["check alsamixer", "hi", "reboot"]],
...                          [[1, 0], [1, 0, 0]])
>>> check_ranker(make_ranker("bm25"), qs)
['protocol', 'predict', 'same output twice', 'labels unused', 'input unchanged']
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank import plugins
from uncertank._types import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.protocols import Ranker, StochasticRanker
from uncertank.validation import InvalidPredictionError, check_prediction

__all__ = [
    "ConformanceError",
    "FakeEntryPoint",
    "check_metric",
    "check_ranker",
    "check_recalibrator",
    "check_stochastic_ranker",
    "fake_entry_points",
    "load_plugin_module",
]


class ConformanceError(AssertionError):
    """A ranker breaks the contract; the message names the ranker and the check."""


# -- loading plugins without installing them ---------------------------------------


def _package_root(path: Path) -> tuple[Path, str] | None:
    """For a file or folder inside a package, the folder to import from and the dotted name."""
    parts = [path.stem if path.is_file() else path.name]
    folder = path.parent
    if path.is_file() and path.name == "__init__.py":
        parts = []
    if path.is_dir() and not (path / "__init__.py").is_file():
        return None
    if path.is_file() and not (folder / "__init__.py").is_file():
        return None
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts)


def load_plugin_module(
    path_or_module: str | os.PathLike[str] | ModuleType,
    *,
    name: str | None = None,
    register: bool = True,
) -> ModuleType:
    """Import a plugin module without installing its distribution, and register it.

    Parameters
    ----------
    path_or_module : str, path or module
        A module object; a dotted module name (``"mypkg.plugin"``); a ``.py``
        file; or a package folder. A file or folder inside a package (a
        folder with ``__init__.py``) is imported under its dotted name, with
        the folder above the top package put first on ``sys.path`` so that
        the plugin's own imports (``from mypkg.ranker import ...``) work; a
        standalone file is imported under a private module name.
    name : str, optional
        The plugin's name in the registries and in ``uncertank plugins``;
        the module's name by default.
    register : bool
        Register the module with :func:`uncertank.plugins.register` (the
        default); a module already registered (its distribution is installed,
        say) is left as it is. Undo with :func:`uncertank.plugins.unregister`.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    FileNotFoundError
        When ``path_or_module`` looks like a path that does not exist.
    ModuleNotFoundError
        When a dotted name cannot be imported.
    TypeError
        When ``path_or_module`` is none of the above.

    Examples
    --------
    >>> import uncertank.baselines
    >>> load_plugin_module(uncertank.baselines).__name__  # built-ins are registered already
    'uncertank.baselines'
    """
    if isinstance(path_or_module, ModuleType):
        module = path_or_module
    elif isinstance(path_or_module, (str, os.PathLike)):
        text = os.fspath(path_or_module)
        looks_like_path = isinstance(path_or_module, os.PathLike) or text.endswith(".py") or os.sep in text \
            or (os.altsep is not None and os.altsep in text) or Path(text).exists()
        if not looks_like_path:
            module = importlib.import_module(text)
        else:
            module = _import_path(Path(text))
    else:
        raise TypeError(
            "path_or_module must be a module, a dotted module name, a .py file or a package folder; "
            f"got {type(path_or_module).__name__}"
        )
    if register:
        pm = plugins.get_plugin_manager()
        if not pm.is_registered(module):
            plugins.register(module, name=name or module.__name__)
    return module


def _import_path(path: Path) -> ModuleType:
    path = path.expanduser().resolve()
    if not path.exists():
        raise FileNotFoundError(f"path_or_module must be an existing .py file or package folder; got {path}")
    if path.is_file() and path.suffix != ".py":
        raise ValueError(f"path_or_module must be a .py file or a package folder; got the file {path}")
    rooted = _package_root(path)
    if rooted is not None:
        root, dotted = rooted
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        importlib.invalidate_caches()
        return importlib.import_module(dotted)
    if path.is_dir():
        raise ValueError(f"path_or_module must be a package folder (with __init__.py); got {path}")
    modname = f"_uncertank_plugin_{path.stem}_{abs(hash(str(path))):x}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a spec
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[modname]
        raise
    return module


# -- fake entry points ----------------------------------------------------------------


class _FakeDistribution:
    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self.metadata = {"Name": name, "Version": version}

    def __repr__(self) -> str:
        return f"<fake distribution {self.name} {self.version}>"


class FakeEntryPoint:
    """An entry point of the group ``uncertank`` as an installed distribution would announce it.

    Parameters
    ----------
    name : str
        The entry-point name (the plugin's name).
    target : module, object, str or exception
        What :meth:`load` gives: a module or object is returned; a str is
        imported as a dotted module name; an exception instance (such as
        ``ImportError("no module named x")`` or ``SystemExit(1)``) is raised,
        to test how a broken plugin is reported.
    distribution : str
        The distribution's name, shown by ``uncertank plugins``.
    version : str
        The distribution's version.
    group : str
        The entry-point group; :data:`uncertank.plugins.ENTRY_POINT_GROUP`.
    """

    def __init__(
        self,
        name: str,
        target: Any,
        *,
        distribution: str = "fake-dist",
        version: str = "0.0.0",
        group: str = plugins.ENTRY_POINT_GROUP,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str; got {name!r}")
        self.name = name
        self.group = group
        self.dist = _FakeDistribution(distribution, version)
        self.value = target if isinstance(target, str) else f"<{type(target).__name__}>"
        self._target = target

    def load(self) -> Any:
        """Return, import or raise the target."""
        if isinstance(self._target, BaseException):
            raise self._target
        if isinstance(self._target, str):
            return importlib.import_module(self._target)
        return self._target

    def __repr__(self) -> str:
        return f"FakeEntryPoint({self.name!r}, {self.value!r}, distribution={self.dist.name!r})"


@contextmanager
def fake_entry_points(
    *entry_points: FakeEntryPoint | tuple[str, Any],
    keep_installed: bool = False,
) -> Iterator[list[FakeEntryPoint]]:
    """Make the plugin host see ``entry_points`` as installed, inside a ``with`` block.

    ``importlib.metadata.entry_points`` is patched for the group ``uncertank``
    (other groups are untouched) and the plugin manager rebuilt on entry and
    again on exit, after the patch is undone.

    Parameters
    ----------
    *entry_points : FakeEntryPoint or (name, target)
        The entry points; a pair is ``FakeEntryPoint(name, target)``.
    keep_installed : bool
        Also load the entry points of the installed distributions (False:
        only the fakes, so that a test does not depend on what is installed).

    Yields
    ------
    list of FakeEntryPoint
        The fakes in effect. After changing the list, call
        ``uncertank.get_plugin_manager(refresh=True)``.

    Raises
    ------
    TypeError
        When an entry is neither a FakeEntryPoint nor a (name, target) pair.

    Examples
    --------
    >>> import warnings
    >>> from uncertank.plugins import plugin_failures
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the host warns about the broken plugin
    ...     with fake_entry_points(FakeEntryPoint("broken", SystemExit(3), distribution="broken-dist")):
    ...         print([(f.plugin, f.distribution, f.error) for f in plugin_failures()])
    [('broken', 'broken-dist', 'SystemExit: 3')]
    """
    fakes: list[FakeEntryPoint] = []
    for ep in entry_points:
        if isinstance(ep, FakeEntryPoint):
            fakes.append(ep)
        elif isinstance(ep, tuple) and len(ep) == 2 and isinstance(ep[0], str):
            fakes.append(FakeEntryPoint(ep[0], ep[1]))
        else:
            raise TypeError(
                f"entry_points must be FakeEntryPoint objects or (name, target) pairs; got {type(ep).__name__}"
            )
    original = importlib.metadata.entry_points

    def patched(**params: Any) -> Any:
        if params.get("group") != plugins.ENTRY_POINT_GROUP:
            return original(**params)
        installed = list(original(**params)) if keep_installed else []
        return installed + [ep for ep in fakes if ep.group == plugins.ENTRY_POINT_GROUP]

    importlib.metadata.entry_points = patched  # type: ignore[assignment]
    try:
        plugins.get_plugin_manager(refresh=True)
        yield fakes
    finally:
        importlib.metadata.entry_points = original
        plugins.get_plugin_manager(refresh=True)


# -- conformance checks --------------------------------------------------------------


def _name(ranker: Any) -> str:
    """The ranker's name for a message; ``"?"`` when reading it fails or gives no str."""
    try:
        name = getattr(ranker, "name", "?")
    except Exception:  # a failing property must not hide the failure being reported
        return "?"
    return name if isinstance(name, str) else "?"


def _who(ranker: Any) -> str:
    return f"ranker {_name(ranker)!r} ({type(ranker).__name__})"


def _fail(ranker: Any, check: str, message: str) -> ConformanceError:
    return ConformanceError(f"{_who(ranker)} fails check {check!r}: {message}")


def _check_queries(queries: Any) -> QuerySet:
    if not isinstance(queries, QuerySet):
        raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
    return queries


def _without_labels(queries: QuerySet) -> QuerySet:
    return QuerySet(
        [list(c) for c in queries.contexts], list(queries.candidates), queries.offsets.copy(), None,
        query_ids=queries.query_ids, candidate_ids=queries.candidate_ids, name=queries.name,
    )


def _fingerprint(queries: QuerySet) -> tuple[Any, ...]:
    return (
        queries.offsets.tobytes(),
        None if queries.labels is None else queries.labels.tobytes(),
        tuple(tuple(c) for c in queries.contexts),
        tuple(queries.candidates),
    )


def _close(a: np.ndarray, b: np.ndarray, atol: float) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0.0, atol=atol))


def _max_diff(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shapes {a.shape} and {b.shape}"
    return f"max abs difference {float(np.max(np.abs(a - b))):.3g}"


def _check_predictions(ranker: Any, pred: Any, queries: QuerySet, check: str) -> Predictions:
    try:
        out = check_prediction(pred, queries, ranker=_name(ranker))
    except InvalidPredictionError as exc:
        raise _fail(ranker, check, exc.problem) from exc
    return cast(Predictions, out)


def _check_samples(
    ranker: Any, ps: Any, queries: QuerySet, check: str, n: int | None, probabilistic: bool | None = None
) -> PredictiveSamples:
    try:
        out = check_prediction(ps, queries, ranker=_name(ranker), samples=True, n_samples=n,
                               probabilistic=probabilistic)
    except InvalidPredictionError as exc:
        raise _fail(ranker, check, exc.problem) from exc
    return cast(PredictiveSamples, out)


@contextmanager
def _guard(fail: Callable[[str, str], ConformanceError], check: str) -> Iterator[None]:
    """Turn any exception raised inside ``check`` into the ConformanceError ``fail(check, ...)``, cause kept."""
    try:
        yield
    except ConformanceError:
        raise
    except Exception as exc:  # the plugin's own error: name it, keep it as the cause
        raise fail(check, f"raised {type(exc).__name__}: {exc}") from exc


def _step(ranker: Any, check: str) -> Any:
    """:func:`_guard` for a ranker's check."""
    return _guard(lambda c, message: _fail(ranker, c, message), check)


def _check_again(
    ranker: Any,
    model: Any,
    queries: QuerySet,
    check: str,
    scores: np.ndarray,
    samples: np.ndarray | None,
    atol: float,
    scores_message: str,
    samples_message: str,
) -> None:
    """Predict ``queries`` with ``model`` and require ``scores`` (and ``samples``, unless None) back.

    A failure raises for ``ranker`` under ``check``; ``{diff}`` in a message stands for the difference found.
    """
    again = _check_predictions(model, model.predict(queries), queries, check)
    if not _close(scores, again.scores, atol):
        raise _fail(ranker, check, scores_message.format(diff=_max_diff(scores, again.scores)))
    if samples is not None:
        ps = _check_samples(model, model.predict_samples(queries), queries, check, None)
        if not _close(samples, ps.samples, atol):
            raise _fail(ranker, check, samples_message.format(diff=_max_diff(samples, ps.samples)))


def _run_checks(
    ranker: Any,
    queries: QuerySet,
    *,
    stochastic: bool,
    n_samples: int,
    train: QuerySet | None,
    valid: QuerySet | None,
    atol: float,
) -> list[str]:
    done: list[str] = []
    proto = StochasticRanker if stochastic else Ranker
    with _step(ranker, "protocol"):
        if not isinstance(getattr(ranker, "name", None), str) or not ranker.name:
            raise _fail(ranker, "protocol", "a ranker needs a non-empty str attribute 'name' (used in reports)")
        if not isinstance(cast(Any, ranker), proto):
            need = "predict(queries) and predict_samples(queries, *, n_samples=None)" if stochastic else \
                "predict(queries)"
            raise _fail(ranker, "protocol", f"does not satisfy uncertank.{proto.__name__}: it needs {need}")
    done.append("protocol")
    if train is not None:
        with _step(ranker, "fit"):
            if not callable(getattr(ranker, "fit", None)):
                raise _fail(ranker, "fit", "train was given but the ranker has no fit(train, valid=None)")
            fitted = ranker.fit(train, valid)
            if fitted is not ranker:
                raise _fail(ranker, "fit", f"fit must return the ranker itself (self); got {type(fitted).__name__}")
        done.append("fit")
    before = _fingerprint(queries)
    with _step(ranker, "predict"):
        pred = _check_predictions(ranker, ranker.predict(queries), queries, "predict")
        flag = getattr(ranker, "probabilistic", None)
        if flag is not None and bool(flag) != pred.probabilistic:
            raise _fail(ranker, "predict", f"the ranker's attribute probabilistic={flag!r} contradicts its "
                                           f"predictions' probabilistic={pred.probabilistic}")
    done.append("predict")
    samples = None
    if stochastic:
        with _step(ranker, "predict_samples"):
            ps = _check_samples(ranker, ranker.predict_samples(queries), queries, "predict_samples", None,
                                probabilistic=pred.probabilistic)
            mean = ps.mean()
            if flag is None and not pred.probabilistic and ((mean >= 0) & (mean <= 1)).all():
                raise _fail(ranker, "predict_samples", "predict says its scores are not probabilities, but its "
                            "samples lie in [0, 1], where `uncertank run` takes them for probabilities; give the "
                            "ranker an attribute probabilistic = False")
            samples = ps.samples
        done.append("predict_samples")
        with _step(ranker, "n_samples"):
            _check_samples(ranker, ranker.predict_samples(queries, n_samples=n_samples), queries, "n_samples",
                           n_samples)
        done.append("n_samples")
    # the same seed gives the same output
    with _step(ranker, "same output twice"):
        _check_again(ranker, ranker, queries, "same output twice", pred.scores, samples, atol,
                     "predict on the same queries must give the same scores (seed your randomness); {diff}",
                     "predict_samples on the same queries must give the same draws (seed your randomness); {diff}")
    done.append("same output twice")
    # labels are not read at prediction time
    bare = _without_labels(queries)
    with _step(ranker, "labels unused"):
        _check_again(ranker, ranker, bare, "labels unused", pred.scores, samples, atol,
                     "scores must not depend on the labels of the queries scored; {diff}",
                     "samples must not depend on the labels of the queries scored")
    done.append("labels unused")
    if _fingerprint(queries) != before:
        raise _fail(ranker, "input unchanged", "predicting must not modify the QuerySet it is given")
    done.append("input unchanged")
    # save and load, as `uncertank run` does: save into a folder that does not exist yet, type(r).load(it)
    if callable(getattr(ranker, "save", None)) and callable(getattr(type(ranker), "load", None)):
        with _step(ranker, "save/load"), tempfile.TemporaryDirectory(prefix="uncertank-conformance-") as tmp:
            folder = Path(tmp) / "ranker"
            ranker.save(folder)
            if not folder.exists():
                raise _fail(ranker, "save/load", f"save(path) must write into path; nothing at {folder}")
            loaded = type(ranker).load(folder)
            if not isinstance(cast(Any, loaded), proto):
                raise _fail(ranker, "save/load", f"load must return a {proto.__name__}; got {type(loaded).__name__}")
            _check_again(ranker, loaded, queries, "save/load", pred.scores, samples, atol,
                         "a loaded ranker must predict what the saved one did; {diff}",
                         "a loaded ranker must draw what the saved one did; {diff}")
        done.append("save/load")
    return done


def _check_options(n_samples: Any, atol: Any, train: Any, valid: Any) -> None:
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int; got {n_samples!r}")
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or not atol >= 0:
        raise ValueError(f"atol must be a number >= 0; got {atol!r}")
    for label, value in (("train", train), ("valid", valid)):
        if value is not None and not isinstance(value, QuerySet):
            raise TypeError(f"{label} must be a QuerySet or None; got {type(value).__name__}")
    if valid is not None and train is None:
        raise ValueError("valid needs train: the ranker is fitted only when train is given")


def check_ranker(
    ranker: Any,
    queries: QuerySet,
    *,
    train: QuerySet | None = None,
    valid: QuerySet | None = None,
    atol: float = 1e-6,
) -> list[str]:
    """Check that ``ranker`` keeps the contract :class:`uncertank.Ranker` and ``uncertank run`` rely on.

    The checks, in order (a failing one raises, naming the ranker and the check):

    ``protocol``
        ``isinstance(ranker, uncertank.Ranker)``, with a non-empty str ``name``.
    ``fit`` (only with ``train``)
        ``ranker.fit(train, valid)`` returns the ranker itself.
    ``predict``
        ``predict(queries)`` returns :class:`~uncertank.Predictions` with one
        finite score per pair, shape (n_pairs,), the QuerySet's offsets, and
        scores in [0, 1] when ``probabilistic`` is True; a ``probabilistic``
        attribute of the ranker, where it has one, agrees with them.
    ``same output twice``
        A second ``predict`` gives the same scores (within ``atol``): seeded
        randomness, no state carried from one call to the next.
    ``labels unused``
        The scores of the queries with their labels removed are the same.
    ``input unchanged``
        The QuerySet is not modified.
    ``save/load`` (when the ranker has ``save`` and its class ``load``)
        ``save`` into a folder that does not exist yet, ``type(ranker).load``
        of it, and the loaded ranker predicts the same scores (within ``atol``).

    Parameters
    ----------
    ranker : Ranker
        The ranker under test, fitted or not (``train`` fits it).
    queries : QuerySet
        The queries to score; lists of different lengths make a better test.
    train, valid : QuerySet, optional
        When ``train`` is given, ``fit(train, valid)`` runs first.
    atol : float
        Absolute tolerance of the comparisons (1e-6: float32 models on
        different batch layouts agree to about 1e-7).

    Returns
    -------
    list of str
        The names of the checks that ran and passed.

    Raises
    ------
    ConformanceError
        When a check fails, naming the ranker, the check and what was
        wrong. What a ranker returns is checked by
        :func:`uncertank.validation.check_prediction` (the check ``uncertank
        run`` makes before caching), and an exception the ranker raises
        inside a check (a ``ValueError`` from building ``Predictions`` of
        NaN, say) becomes a ConformanceError too, with the original as its
        ``__cause__``.
    TypeError, ValueError
        For bad arguments (``queries`` not a QuerySet, ``valid``
        without ``train``, a negative ``atol``).
    """
    queries = _check_queries(queries)
    _check_options(1, atol, train, valid)
    return _run_checks(ranker, queries, stochastic=False, n_samples=1, train=train, valid=valid, atol=atol)


def check_stochastic_ranker(
    ranker: Any,
    queries: QuerySet,
    *,
    n_samples: int = 3,
    train: QuerySet | None = None,
    valid: QuerySet | None = None,
    atol: float = 1e-6,
) -> list[str]:
    """Check a :class:`uncertank.StochasticRanker`: everything :func:`check_ranker` checks, and its samples.

    Beyond :func:`check_ranker`, the checks are:

    ``protocol``
        ``isinstance(ranker, uncertank.StochasticRanker)``.
    ``predict_samples``
        ``predict_samples(queries)`` returns :class:`~uncertank.PredictiveSamples`
        of shape (n_samples, n_pairs) (rows are joint draws over every pair),
        finite, with the QuerySet's offsets, and in [0, 1] when ``predict``
        says its scores are probabilities. When ``predict`` says they are
        not, yet the samples' mean lies in [0, 1], the ranker must say so
        with an attribute ``probabilistic = False`` (``uncertank run`` scores
        a stochastic ranker from its samples, which carry no such flag).
    ``n_samples``
        ``predict_samples(queries, n_samples=n_samples)`` gives exactly that many rows.
    ``same output twice``, ``labels unused``, ``save/load``
        Also hold for the samples.

    Parameters
    ----------
    ranker : StochasticRanker
        The ranker under test.
    queries : QuerySet
        The queries to score.
    n_samples : int
        The number of draws asked for in the ``n_samples`` check.
    train, valid : QuerySet, optional
        As in :func:`check_ranker`.
    atol : float
        As in :func:`check_ranker`.

    Returns
    -------
    list of str
        The names of the checks that ran and passed.

    Raises
    ------
    ConformanceError
        When a check fails, or the ranker raises inside one (the original
        kept as ``__cause__``).
    TypeError, ValueError
        For bad arguments.
    """
    queries = _check_queries(queries)
    _check_options(n_samples, atol, train, valid)
    return _run_checks(ranker, queries, stochastic=True, n_samples=n_samples, train=train, valid=valid, atol=atol)


# -- metrics and recalibrators ------------------------------------------------------------


def _toy_lists(seed: int) -> tuple[QuerySet, NDArray[np.int64], NDArray[np.float64]]:
    """Twelve queries of 3 to 8 candidates (one relevant and one not at least), their labels, scores in (0, 1)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 9, size=12)
    labels = []
    for n in lengths:
        lab = (rng.random(n) < 0.3).astype(int)
        lab[rng.integers(n)] = 1
        lab[(np.flatnonzero(lab == 1)[0] + 1) % n] = 0
        labels.append(lab.tolist())
    queries = QuerySet.from_lists([f"q{i}" for i in range(lengths.size)],
                                  [[f"c{j}" for j in range(n)] for n in lengths], labels)
    flat = np.array([v for lab in labels for v in lab], dtype=np.int64)
    scores = np.clip(0.6 * flat + 0.4 * rng.random(queries.n_pairs), 0.01, 0.99)
    return queries, flat, scores


def _who_metric(metric: Any) -> str:
    return f"metric {getattr(metric, 'name', type(metric).__name__)!r}"


def _metric_fail(metric: Any, check: str, message: str) -> ConformanceError:
    return ConformanceError(f"{_who_metric(metric)} fails check {check!r}: {message}")


def check_metric(metric: Any, *, name: str | None = None, seed: int = 0, atol: float = 1e-9) -> list[str]:
    """Check that a metric keeps the contract of the ``uncertank_metrics`` hook.

    The metric is wrapped as the registry wraps it
    (:func:`uncertank.metrics.as_metric`) and evaluated on seeded lists of
    different lengths with scores in (0, 1). The checks:

    ``value``
        A finite float, the same on a second call.
    ``inputs agree``
        The same value from a :class:`~uncertank.RankedLists`, from
        :class:`~uncertank.Predictions` with their labels, and, on lists of
        equal length, from dense (n_queries, n_candidates) arrays.
    ``per query`` (every ranking metric: a study reads per-query values)
        ``per_query=True`` gives a finite array of shape (n_queries,) whose
        mean is the metric's value.
    ``direction``
        Scores equal to the labels are at least as good as scores equal to
        one minus the labels, in the direction ``higher_is_better`` says.
    ``label``
        A non-empty column label.

    Parameters
    ----------
    metric : Metric or callable
        What the plugin registers.
    name : str, optional
        Its registry name (for a bare callable); ``metric.name`` otherwise.
    seed : int
        Seeds the lists.
    atol : float
        Tolerance of the comparisons.

    Returns
    -------
    list of str
        The checks that ran and passed.

    Raises
    ------
    ConformanceError
        When a check fails, or the metric raises inside one (the original
        kept as ``__cause__``).
    TypeError
        When ``metric`` is not callable.

    Examples
    --------
    >>> from uncertank.plugins import get_factory
    >>> check_metric(get_factory("metrics", "map"))
    ['value', 'inputs agree', 'per query', 'direction', 'label']
    """
    from uncertank.metrics import Metric, as_metric

    if not callable(metric):
        raise TypeError(f"metric must be a Metric or a callable; got {type(metric).__name__}")
    label = name or getattr(metric, "name", None) or getattr(metric, "__name__", "metric")
    m: Metric = as_metric(metric, name=str(label))
    done: list[str] = []
    order = ["value", "inputs agree"] + (["per query"] if m.kind == "ranking" or m.per_query else []) + [
        "direction", "label"]
    try:
        _metric_checks(m, seed, atol, done)
    except ConformanceError:
        raise
    except Exception as exc:  # the metric's own error: name it, keep it as the cause
        check = order[min(len(done), len(order) - 1)]
        raise _metric_fail(m, check, f"raised {type(exc).__name__}: {exc}") from exc
    return done


def _metric_checks(m: Any, seed: int, atol: float, done: list[str]) -> None:
    """The checks of :func:`check_metric`, appending each one passed to ``done``."""
    queries, labels, scores = _toy_lists(seed)
    ranked = queries.ranked(scores)
    value = m(ranked)
    if not isinstance(value, (float, np.floating)) or not np.isfinite(value):
        raise _metric_fail(m, "value", f"must return a finite float; got {value!r}")
    again = m(ranked)
    if abs(float(again) - float(value)) > atol:
        raise _metric_fail(m, "value", f"must give the same value twice; got {value!r} and {again!r}")
    done.append("value")
    from_pred = m(Predictions(scores, queries.offsets), labels)
    dense_q, dense_s = _toy_dense(seed)
    dense_ranked = RankedLists.from_dense(dense_s, dense_q)
    from_dense = m(dense_s, dense_q)
    if abs(float(from_pred) - float(value)) > atol or abs(float(from_dense) - float(m(dense_ranked))) > atol:
        raise _metric_fail(m, "inputs agree", "RankedLists, Predictions with labels and dense arrays must give "
                           f"the same value; got {value!r}, {from_pred!r} (and dense {from_dense!r} vs "
                           f"{m(dense_ranked)!r})")
    done.append("inputs agree")
    if m.kind == "ranking" or m.per_query:
        if not m.per_query:
            raise _metric_fail(m, "per query", "a ranking metric must accept per_query=True (a study reads "
                               "per-query values for its significance tests)")
        per = np.asarray(m(ranked, per_query=True), dtype=np.float64)
        if per.shape != (queries.n_queries,) or not np.isfinite(per).all():
            raise _metric_fail(m, "per query", f"per_query=True must give {queries.n_queries} finite values, "
                               f"shape ({queries.n_queries},); got shape {per.shape}")
        if m.kind == "ranking" and abs(float(per.mean()) - float(value)) > atol:
            raise _metric_fail(m, "per query", f"the mean of the per-query values ({per.mean():.6g}) must be "
                               f"the metric's value ({float(value):.6g})")
        done.append("per query")
    y = labels.astype(np.float64)
    good, bad = float(m(queries.ranked(np.clip(y, 0.0, 1.0)))), float(m(queries.ranked(1.0 - y)))
    if (good < bad - atol) if m.higher_is_better else (good > bad + atol):
        raise _metric_fail(m, "direction", f"scores equal to the labels give {good:.6g}, their opposite "
                           f"{bad:.6g}: higher_is_better={m.higher_is_better} says the first is better")
    done.append("direction")
    shown = m.display_label
    if not isinstance(shown, str) or not shown.strip():
        raise _metric_fail(m, "label", f"the column label must be a non-empty str; got {shown!r}")
    done.append("label")


def _toy_dense(seed: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    rng = np.random.default_rng(seed + 1)
    labels = (rng.random((6, 5)) < 0.3).astype(np.int64)
    labels[:, 0] = 1
    labels[:, 1] = 0
    scores = np.clip(0.5 * labels + 0.5 * rng.random((6, 5)), 0.01, 0.99)
    return labels, scores


def check_recalibrator(
    recalibrator: Any,
    scores: ArrayLike | None = None,
    labels: ArrayLike | None = None,
    *,
    seed: int = 0,
) -> list[str]:
    """Check a recalibrator (what the ``uncertank_recalibrators`` hook registers).

    The checks, on ``scores`` and ``labels`` (by default 2,000 seeded scores
    in (0, 1) with labels drawn at those rates) and again on a set where
    relevance *falls* with the score (where unconstrained Platt scaling
    would reverse the ranking):

    ``fit``
        A fresh object from the factory; ``fit(scores, labels)`` returns it.
    ``transform``
        ``transform(scores)`` gives finite probabilities in [0, 1], shape (n_pairs,),
        the same on a second call.
    ``order kept``
        The map is non-decreasing: on a grid over the scores' range, a higher
        score never gets a lower probability, so recalibrating never reorders
        a ranking (ties are allowed).

    Parameters
    ----------
    recalibrator : class or callable
        The registered factory, called with no argument.
    scores, labels : array-like of shape (n_pairs,), optional
        Validation data of your own (scores in [0, 1] when the recalibrator
        needs probabilities).
    seed : int
        Seeds the default data.

    Returns
    -------
    list of str
        The checks that ran and passed.

    Raises
    ------
    ConformanceError
        When a check fails, or the recalibrator raises inside one (the
        original kept as ``__cause__``).
    TypeError, ValueError
        When ``recalibrator`` is not callable, or only one of ``scores`` and
        ``labels`` is given.

    Examples
    --------
    >>> from uncertank.plugins import get_factory
    >>> check_recalibrator(get_factory("recalibrators", "platt"))
    ['fit', 'transform', 'order kept']
    """
    if not callable(recalibrator):
        raise TypeError(f"recalibrator must be a class or factory; got {type(recalibrator).__name__}")
    if (scores is None) != (labels is None):
        raise ValueError("scores and labels go together: give both or neither")
    who = getattr(recalibrator, "__name__", type(recalibrator).__name__)
    rng = np.random.default_rng(seed)
    if scores is None:
        x = rng.uniform(0.01, 0.99, size=2000)
        y = (rng.random(x.size) < x).astype(np.int64)
    else:
        x = np.asarray(scores, dtype=np.float64)
        y = np.asarray(labels)
    reverse = rng.uniform(0.01, 0.99, size=2000)
    cases = [("the given data" if scores is not None else "seeded data", x, y),
             ("relevance falling with the score", reverse, (rng.random(reverse.size) < 1 - reverse).astype(np.int64))]

    def fail(check: str, message: str) -> ConformanceError:
        return ConformanceError(f"recalibrator {who!r} fails check {check!r}: {message}")

    for what, xs, ys in cases:
        with _guard(fail, "fit"):
            obj = recalibrator()
            fitted = obj.fit(xs, ys)
        if fitted is not obj:
            raise fail("fit", f"fit must return the recalibrator itself (self); got {type(fitted).__name__}")
        with _guard(fail, "transform"):
            out = np.asarray(obj.transform(xs), dtype=np.float64)
            if out.shape != xs.shape or not np.isfinite(out).all() or ((out < 0) | (out > 1)).any():
                raise fail("transform", f"transform must give finite probabilities in [0, 1] of shape {xs.shape} "
                           f"({what})")
            if not np.array_equal(out, np.asarray(obj.transform(xs), dtype=np.float64)):
                raise fail("transform", f"transform must give the same output twice ({what})")
        grid = np.linspace(float(xs.min()), float(xs.max()), 201)
        with _guard(fail, "order kept"):
            mapped = np.asarray(obj.transform(grid), dtype=np.float64)
        drops = np.flatnonzero(np.diff(mapped) < -1e-12)
        if drops.size:
            i = int(drops[0])
            raise fail("order kept", f"the map must be non-decreasing, or it reorders the ranking it calibrates; "
                       f"{grid[i]:.4g} -> {mapped[i]:.4g} but {grid[i + 1]:.4g} -> {mapped[i + 1]:.4g} ({what})")
    return ["fit", "transform", "order kept"]
