"""The conformance checks of rankers: :func:`check_ranker` and :func:`check_stochastic_ranker`."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any, cast

import numpy as np

from uncertank._types import Predictions, PredictiveSamples, QuerySet
from uncertank.protocols import (
    Capabilities,
    CapabilityError,
    Cloneable,
    Saveable,
    capabilities,
    cost_rates_problem,
)
from uncertank.testing._errors import ConformanceError, guard
from uncertank.validation import InvalidPredictionError, check_positive_int, check_prediction

__all__ = ["check_ranker", "check_stochastic_ranker"]


def _name(ranker: object) -> str:
    """The ranker's name for a message; ``"?"`` when reading it fails or gives no str."""
    try:
        name = getattr(ranker, "name", "?")
    except Exception:  # a failing property must not hide the failure being reported
        return "?"
    return name if isinstance(name, str) else "?"


def _who(ranker: object) -> str:
    return f"ranker {_name(ranker)!r} ({type(ranker).__name__})"


def _fail(ranker: object, check: str, message: str) -> ConformanceError:
    return ConformanceError(f"{_who(ranker)} fails check {check!r}: {message}")


def _check_queries(queries: object) -> QuerySet:
    if not isinstance(queries, QuerySet):
        raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
    return queries


def _without_labels(queries: QuerySet) -> QuerySet:
    return QuerySet(
        [list(c) for c in queries.contexts], list(queries.candidates), queries.offsets.copy(), None,
        query_ids=queries.query_ids, candidate_ids=queries.candidate_ids, name=queries.name,
    )


def _fingerprint(queries: QuerySet) -> tuple[object, ...]:
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


def _check_predictions(ranker: object, pred: object, queries: QuerySet, check: str) -> Predictions:
    try:
        out = check_prediction(pred, queries, ranker=_name(ranker))
    except InvalidPredictionError as exc:
        raise _fail(ranker, check, exc.problem) from exc
    return cast(Predictions, out)


def _check_samples(
    ranker: object, ps: object, queries: QuerySet, check: str, n: int | None, probabilistic: bool | None = None
) -> PredictiveSamples:
    try:
        out = check_prediction(ps, queries, ranker=_name(ranker), samples=True, n_samples=n,
                               probabilistic=probabilistic)
    except InvalidPredictionError as exc:
        raise _fail(ranker, check, exc.problem) from exc
    return cast(PredictiveSamples, out)


def _step(ranker: object, check: str) -> Any:
    """:func:`guard` for a ranker's check."""
    return guard(lambda c, message: _fail(ranker, c, message), check)


def _check_again(
    ranker: object,
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


def _clone(ranker: Cloneable) -> Cloneable:
    """``sklearn.base.clone``'s rule, without scikit-learn: rebuild from ``get_params(deep=False)`` and compare.

    Each parameter is passed as a deep copy (a :class:`~uncertank.Cloneable`
    one is cloned in turn), and the new ranker must report each of them as
    the very object it was given, and no other parameter.
    """
    given = ranker.get_params(deep=False)
    if not isinstance(given, dict) or not all(isinstance(k, str) for k in given):
        raise _fail(ranker, "clone", f"get_params(deep=False) must return a dict of str keys; got {given!r}")
    passed = {k: _clone(v) if isinstance(v, Cloneable) and not isinstance(v, type) else copy.deepcopy(v)
              for k, v in given.items()}
    rebuilt = type(ranker)(**passed)
    back = rebuilt.get_params(deep=False)
    if set(back) != set(passed):
        extra, lost = sorted(set(back) - set(passed)), sorted(set(passed) - set(back))
        raise _fail(ranker, "clone", f"a ranker rebuilt from get_params(deep=False) reports other parameters "
                                     f"(new: {extra}, missing: {lost})")
    changed = sorted(k for k in passed if back[k] is not passed[k])
    if changed:
        raise _fail(ranker, "clone", f"the constructor must store each argument unchanged under its own name, "
                                     f"as sklearn.base.clone needs; rebuilt from get_params(deep=False), the ranker "
                                     f"reports other objects for {changed}")
    return rebuilt


def _satisfies(obj: object, stochastic: bool) -> bool:
    """Whether ``obj`` (or its record) is a :class:`~uncertank.Ranker`, and a stochastic one if asked."""
    try:
        caps = obj if isinstance(obj, Capabilities) else capabilities(obj)
    except CapabilityError:
        return False
    return caps.is_ranker and (not stochastic or caps.stochastic is not None)


def _run_checks(
    ranker: Any,
    queries: QuerySet,
    *,
    stochastic: bool,
    n_samples: int,
    train: QuerySet | None,
    valid: QuerySet | None,
    atol: float,
    params: dict[str, object] | None = None,
) -> list[str]:
    done: list[str] = []
    proto = "StochasticRanker" if stochastic else "Ranker"
    with _step(ranker, "protocol"):
        if not isinstance(getattr(ranker, "name", None), str) or not ranker.name:
            raise _fail(ranker, "protocol", "a ranker needs a non-empty str attribute 'name' (used in reports)")
        try:
            caps = capabilities(ranker)
        except CapabilityError as exc:
            raise _fail(ranker, "protocol", str(exc)) from exc
        if not _satisfies(caps, stochastic):
            need = "predict(queries) and predict_samples(queries, *, n_samples=None)" if stochastic else \
                "predict(queries)"
            raise _fail(ranker, "protocol", f"does not satisfy uncertank.{proto}: it needs {need}")
        if caps.cost_estimating is not None:
            for warm in (False, True):
                problem = cost_rates_problem(caps.cost_estimating.cost_rates(warm_start=warm))
                if problem is not None:
                    raise _fail(ranker, "protocol", f"cost_rates(warm_start={warm}) {problem}")
    done.append("protocol")
    if caps.cloneable is not None:
        cloneable = caps.cloneable
        with _step(ranker, "clone"):
            _clone(cloneable)
        done.append("clone")
    if train is not None:
        with _step(ranker, "fit"):
            if caps.trainable is None:
                raise _fail(ranker, "fit", "train was given but the ranker has no fit(train, valid=None) and "
                                           "is_fitted (uncertank.Trainable)")
            fitted = caps.trainable.fit(train, valid)
            if fitted is not ranker:
                raise _fail(ranker, "fit", f"fit must return the ranker itself (self); got {type(fitted).__name__}")
        done.append("fit")
    before = _fingerprint(queries)
    with _step(ranker, "predict"):
        pred = _check_predictions(ranker, ranker.predict(queries), queries, "predict")
        flag = capabilities(ranker).probabilistic  # read after fit, as a study reads it
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
    if caps.saveable is not None:
        with _step(ranker, "save/load"), tempfile.TemporaryDirectory(prefix="uncertank-conformance-") as tmp:
            folder = Path(tmp) / "ranker"
            ranker.save(folder)
            if not folder.exists():
                raise _fail(ranker, "save/load", f"save(path) must write into path; nothing at {folder}")
            loaded = type(ranker).load(folder)
            if not _satisfies(loaded, stochastic):
                raise _fail(ranker, "save/load", f"load must return a {proto}; got {type(loaded).__name__}")
            _check_again(ranker, loaded, queries, "save/load", pred.scores, samples, atol,
                         "a loaded ranker must predict what the saved one did; {diff}",
                         "a loaded ranker must draw what the saved one did; {diff}")
            if params:
                _check_load_with_params(caps.saveable, folder, params, stochastic, queries, pred.scores, samples,
                                        atol)
        done.append("save/load")
        if params:
            done.append("load with params")
    return done


def _check_load_with_params(
    ranker: Saveable, folder: Path, params: dict[str, object], stochastic: bool, queries: QuerySet,
    scores: np.ndarray, samples: np.ndarray | None, atol: float,
) -> None:
    """``type(ranker).load(folder, **params)``, as a study with a ``checkpoint`` and ``params`` calls it."""
    check = "load with params"
    with _step(ranker, check):
        call = f"load(folder, {', '.join(f'{k}={v!r}' for k, v in params.items())})"
        try:
            loaded = type(ranker).load(folder, **params)
        except TypeError as exc:
            raise _fail(ranker, check, f"a study with a checkpoint and params calls {call}; load must take the "
                                       f"ranker's parameters as keyword arguments (load(cls, path, **params)); "
                                       f"raised TypeError: {exc}") from exc
        if not _satisfies(loaded, stochastic):
            proto = "StochasticRanker" if stochastic else "Ranker"
            raise _fail(ranker, check, f"{call} must return a {proto}; got {type(loaded).__name__}")
        shown = call.replace("{", "{{").replace("}", "}}")  # the messages are formatted with {diff}
        _check_again(ranker, loaded, queries, check, scores, samples, atol,
                     f"a ranker loaded with {shown}, the parameters it was built with, must predict what the saved "
                     "one did; {diff}",
                     f"a ranker loaded with {shown} must draw what the saved one did; {{diff}}")


def _check_params(params: object) -> dict[str, object] | None:
    if params is None:
        return None
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise TypeError(f"params must be a dict of str keys or None; got {type(params).__name__} {params!r}")
    return dict(params)


def _check_options(n_samples: object, atol: object, train: object, valid: object) -> None:
    check_positive_int(n_samples, "n_samples")
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or not atol >= 0:
        raise ValueError(f"atol must be a number >= 0; got {atol!r}")
    for label, value in (("train", train), ("valid", valid)):
        if value is not None and not isinstance(value, QuerySet):
            raise TypeError(f"{label} must be a QuerySet or None; got {type(value).__name__}")
    if valid is not None and train is None:
        raise ValueError("valid needs train: the ranker is fitted only when train is given")


def check_ranker(
    ranker: object,
    queries: QuerySet,
    *,
    train: QuerySet | None = None,
    valid: QuerySet | None = None,
    atol: float = 1e-6,
    params: dict[str, object] | None = None,
) -> list[str]:
    """Check that ``ranker`` keeps the contract :class:`uncertank.Ranker` and ``uncertank run`` rely on.

    The checks, in order (a failing one raises, naming the ranker and the check):

    ``protocol``
        ``isinstance(ranker, uncertank.Ranker)``, with a non-empty str ``name``,
        and no capability half offered (``fit`` without ``is_fitted``,
        ``save`` without ``load``: :func:`uncertank.protocols.check_capabilities`).
    ``clone`` (when the ranker is :class:`uncertank.Cloneable`)
        ``type(ranker)(**ranker.get_params(deep=False))``, each parameter
        deep-copied, builds a ranker that reports exactly those parameters,
        each the object it was given: ``sklearn.base.clone``'s rule.
    ``fit`` (only with ``train``)
        The ranker is :class:`uncertank.Trainable` and ``ranker.fit(train, valid)``
        returns the ranker itself.
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
    ``save/load`` (when the ranker is :class:`uncertank.Saveable`)
        ``save`` into a folder that does not exist yet, ``type(ranker).load``
        of it, and the loaded ranker predicts the same scores (within ``atol``).
    ``load with params`` (with ``params``, when the ranker has ``save`` and ``load``)
        ``type(ranker).load(folder, **params)``, the call ``uncertank run``
        makes for a study's ``[[rankers]]`` entry with a ``checkpoint`` and
        ``params``, takes them (a ``TypeError`` fails the check) and the
        ranker it returns predicts the same scores.

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
    params : dict, optional
        The keyword parameters ``ranker`` was built with (its factory's, as
        a study's ``params``): checked to be accepted by ``load``.

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
    return _run_checks(ranker, queries, stochastic=False, n_samples=1, train=train, valid=valid, atol=atol,
                       params=_check_params(params))


def check_stochastic_ranker(
    ranker: object,
    queries: QuerySet,
    *,
    n_samples: int = 3,
    train: QuerySet | None = None,
    valid: QuerySet | None = None,
    atol: float = 1e-6,
    params: dict[str, object] | None = None,
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
    ``same output twice``, ``labels unused``, ``save/load``, ``load with params``
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
    params : dict, optional
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
    return _run_checks(ranker, queries, stochastic=True, n_samples=n_samples, train=train, valid=valid, atol=atol,
                       params=_check_params(params))
