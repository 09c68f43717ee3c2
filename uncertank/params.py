"""A ranker's parameters, scikit-learn's way: the constructor's arguments, stored under their own names.

Needs no torch: :class:`uncertank.nn.NeuralRanker`, ``BM25Ranker`` and any
plugin's ranker inherit it.

:class:`Parameters` gives a ranker ``get_params`` and ``set_params`` read
off the signature of its constructor, so that ``sklearn.base.clone`` (and a
study) rebuilds it from what it reports. The rules a class follows:

- ``__init__`` stores every argument unchanged, as the attribute of the same
  name (scikit-learn's convention); settings derived from them (a
  :class:`~uncertank.nn.TrainingConfig`, a network's head settings) are
  built from them when needed, never stored instead of them.
- ``__init__`` ends by calling :meth:`Parameters._check_params`, and so does
  :meth:`Parameters.set_params`: a bad value raises at construction, before
  any work (the library's rule), while the stored attribute stays the value
  the user gave. A subclass extends ``_check_params`` and calls the parent's.
- A constructor that takes ``**params`` and passes them to its parent's
  reports the parent's parameters too: the names are collected along the
  method resolution order while a constructor has ``**kwargs``. A class
  whose ``**params`` go to another class's constructor (an ensemble's
  members) names that class in ``_params_passed_to``.
- ``name``, the class attribute a ranker is registered under, is also a
  parameter that overrides it: it is reported as given (None unless one was).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from typing_extensions import Self

__all__ = ["Parameters"]

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class Parameters:
    """``get_params`` / ``set_params`` from the constructor's signature (scikit-learn's estimator contract)."""

    #: The class whose constructor receives this class's ``**params``, when it is not the next one in the MRO.
    _params_passed_to: ClassVar[type | None] = None

    @classmethod
    def param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted, ``**params`` followed to the constructor that takes them.

        scikit-learn's ``BaseEstimator._get_param_names``, which reads one
        ``__init__`` only: here a constructor with ``**params`` is followed to
        the next one in the MRO (or to ``_params_passed_to``), so that a
        subclass reports its parent's parameters too. A ``*args`` is refused.
        """
        names: set[str] = set()
        for klass in cls.__mro__:
            init = vars(klass).get("__init__")
            if klass is object:
                break
            if init is None:
                continue
            params = list(inspect.signature(init).parameters.values())[1:]  # drop self
            for p in params:
                if p.kind is inspect.Parameter.VAR_POSITIONAL:
                    raise TypeError(
                        f"{klass.__qualname__}.__init__ takes *{p.name}: a ranker's parameters must be named "
                        "(scikit-learn's convention), so that get_params can report them"
                    )
                if p.kind in _NAMED:
                    names.add(p.name)
            if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                break
            target = vars(klass).get("_params_passed_to")
            if target is not None:
                names.update(_signature_names(target))
                break
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters, as given: ``type(self)(**self.get_params())`` builds an unfitted copy.

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn's ``clone``; a ranker holds no nested estimators.
        """
        return {key: self._param_value(key) for key in self.param_names()}

    def _param_value(self, key: str) -> Any:
        if key == "name":  # the registered class attribute, unless the constructor was given one
            return vars(self).get("name")
        return getattr(self, key)

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters and check them as the constructor does; nothing else changes.

        A value the constructor would refuse is refused here with the same
        error, and the ranker is left as it was. Derived settings follow,
        since they are built from the parameters when used; a network
        already built is kept (build a new ranker, or ``clone`` it, to
        start afresh).

        Raises
        ------
        ValueError
            When a name is not a parameter of the constructor (the message
            lists them), or a value is refused.
        """
        valid = self.param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(
                f"{type(self).__name__} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters: {', '.join(valid)}"
            )
        before = {key: vars(self)[key] for key in params if key in vars(self)}
        try:
            for key, value in params.items():
                self._set_param(key, value)
            self._check_params()
        except Exception:
            for key in params:
                vars(self).pop(key, None)
            vars(self).update(before)
            raise
        return self

    def _set_param(self, key: str, value: Any) -> None:
        if key == "name" and value is None:
            vars(self).pop("name", None)  # back to the class attribute
        else:
            setattr(self, key, value)

    def _check_params(self) -> None:
        """Raise for a parameter value that would fail later; called by ``__init__`` and :meth:`set_params`.

        Checks only, no state: the parameters stay as they were given.
        """


def _signature_names(cls: type) -> set[str]:
    if isinstance(cls, type) and issubclass(cls, Parameters):
        return set(cls.param_names())
    params = inspect.signature(cls).parameters.values()
    return {p.name for p in params if p.kind in _NAMED}
