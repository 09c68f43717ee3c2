"""What a plugin package's ``__init__.py`` uses to stay light: :func:`lazy_exports`."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from uncertank.validation import check_instance, check_name, check_names

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each exported name from its module when first used.

    A plugin package's ``__init__.py`` stays light this way: importing the
    package, or its entry-point module inside it, does not import the modules
    that need torch (PEP 562 module attributes).

    Parameters
    ----------
    package : str
        The package's ``__name__``, for the error message.
    homes : mapping of str to str
        Exported name -> the module that defines it.

    Returns
    -------
    callable
        ``__getattr__(name)``: the attribute ``name`` of ``homes[name]``,
        imported then; AttributeError for a name not in ``homes``.

    Examples
    --------
    In a package's ``__init__.py``:

    >>> __getattr__ = lazy_exports("uncertank_demo", {"dumps": "json"})
    >>> __getattr__("dumps")([1])
    '[1]'
    >>> __getattr__("loads")
    Traceback (most recent call last):
    AttributeError: module 'uncertank_demo' has no attribute 'loads'
    """
    check_name(package, "package")
    homes = dict(check_instance(homes, "homes", Mapping, "a mapping of module by exported name"))
    check_names(list(homes), "homes' names")
    check_names(list(homes.values()), "homes' modules")

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(homes[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
