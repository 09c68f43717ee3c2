"""Argument checks for plugin authors: the same checks uncertank runs on its own inputs.

Every check raises ``ValueError`` (or ``TypeError``) naming the argument, what
was expected and what arrived, so a plugin's errors read like the library's.

Examples
--------
>>> from uncertank.validation import check_choice, check_positive_int
>>> check_positive_int(10, "n_passes")
10
>>> check_positive_int(0, "n_passes")
Traceback (most recent call last):
ValueError: n_passes must be an integer >= 1; got 0
>>> check_choice("exact", "cov_mode", ("exact", "momentum"))
'exact'
"""

from __future__ import annotations

from uncertank._validation import (
    as_float_array,
    as_label_array,
    check_choice,
    check_offsets,
    check_positive_int,
    check_probabilities,
    check_same_length,
)

__all__ = [
    "as_float_array",
    "as_label_array",
    "check_choice",
    "check_offsets",
    "check_positive_int",
    "check_probabilities",
    "check_same_length",
]
