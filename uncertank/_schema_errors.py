"""Pydantic's validation errors in the words of the file a person wrote.

Two documents are validated with pydantic, a study file (TOML, written by a
person) and a study's ``results.json`` (JSON, written by the library and read
back by people's scripts). Both report each error as one line naming where it
is and what was expected and what came, in the vocabulary of their format:
TOML has tables and no null, JSON has objects and null. This module holds
what the two share: how a value is named (:func:`describe_value`) and the
message for each pydantic error type (:func:`error_message`); each document
adds its own special cases before it and formats the location its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

__all__ = ["Format", "describe_value", "error_message"]

Format = Literal["toml", "json"]

_BOUNDS = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}


def describe_value(value: object, fmt: Format) -> str:
    """A value as the file's author would name it: ``the string 'no'``, ``a table``, ``3``, ``null``.

    Examples
    --------
    >>> describe_value("no", "toml"), describe_value({"a": 1}, "toml"), describe_value([], "toml")
    ("the string 'no'", 'a table with keys a', 'an empty list')
    >>> describe_value(None, "json"), describe_value(3, "json"), describe_value({"a": 1}, "json")
    ('null', 'the number 3', 'an object')
    """
    if fmt == "json" and value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return repr(value) if fmt == "toml" else f"the number {value!r}"
    if isinstance(value, Mapping):
        if fmt == "json":
            return "an object"
        return f"a table with keys {', '.join(map(str, value)) or 'none'}"
    if isinstance(value, (list, tuple)):
        if fmt == "json":
            return "a list"
        return f"a list of {len(value)}" if value else "an empty list"
    return f"{type(value).__name__} {value!r}"


def error_message(err: Mapping[str, object], fmt: Format, known_keys: Callable[[], list[str] | None]) -> str:
    """The message of one pydantic error (an item of ``ValidationError.errors()``), without its location.

    Parameters
    ----------
    err : mapping
        With pydantic's keys ``type``, ``msg`` and, where pydantic gives them,
        ``input`` and ``ctx``.
    fmt : {"toml", "json"}
        The document's format: a "table" or an "object", and how values are named.
    known_keys : callable
        The keys allowed where an unknown key was found, asked for only then;
        None when they are not known.

    Examples
    --------
    >>> error_message({"type": "int_parsing", "msg": "", "input": "ten"}, "toml", lambda: None)
    "must be an integer; got the string 'ten'"
    >>> error_message({"type": "extra_forbidden", "msg": "", "input": 1}, "json", lambda: ["name", "k"])
    'unknown key; known: name, k'
    """
    kind, given = err["type"], err.get("ctx")
    ctx: Mapping[str, object] = given if isinstance(given, Mapping) else {}
    got = describe_value(err.get("input"), fmt)
    if kind in ("missing", "missing_argument"):
        return "missing: this key is required"
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        keys = known_keys()
        return "unknown key" + ("" if keys is None else f"; known: {', '.join(keys)}")
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be an integer; got {got}"
    if kind in ("float_type", "float_parsing"):
        return f"must be a number; got {got}"
    if kind == "finite_number":
        return f"must be a finite number; got {got}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false; got {got}"
    if kind in ("string_type", "string_unicode"):
        return f"must be a string; got {got}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind in ("dict_type", "dataclass_type", "dataclass_args_type", "model_type"):
        return f"must be {'a table' if fmt == 'toml' else 'an object'}; got {got}"
    if kind in ("tuple_type", "list_type", "iterable_type"):
        return f"must be a list; got {got}"
    if kind == "too_short":
        need = ctx.get("min_length", 1)
        return f"must hold at least {need} value{'s' if need != 1 else ''}; got {got}"
    if kind in _BOUNDS:
        bound = next(v for k, v in ctx.items() if k in ("ge", "gt", "le", "lt"))
        return f"must be {_BOUNDS[kind]} {bound}; got {got}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}; got {got}"
    msg = str(err["msg"])
    return f"{msg[:1].lower()}{msg[1:]}; got {got}"
