"""Duplicate texts: when two texts are the same, and how many of a collection repeat another.

Texts are compared after whitespace normalisation (:func:`normalize_text`):
every run of whitespace becomes one space and both ends are stripped; case
and punctuation are kept. This is the equality under which a negative may
not repeat its positive or another negative of the same list (see
:mod:`uncertank.datasets.negative_sampler`), and under which
:func:`duplicate_stats` counts the repeated texts of a corpus.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from uncertank.validation import check_instance, check_positive_int

__all__ = ["DuplicateStats", "duplicate_stats", "normalize_text"]

_WS = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    r"""Collapse every run of whitespace to one space and strip both ends.

    This is the equality under which a negative may not repeat its positive
    or another negative of the same list. Case and punctuation are kept.

    Examples
    --------
    >>> normalize_text("  sudo   apt-get\tupdate ")
    'sudo apt-get update'
    """
    check_instance(text, "text", str)
    return _WS.sub(" ", text).strip()


@dataclass(frozen=True)
class DuplicateStats:
    """How many texts of a collection repeat an earlier one.

    Attributes
    ----------
    n_texts : int
        Texts counted.
    n_unique : int
        Distinct texts after :func:`normalize_text`.
    n_duplicates : int
        ``n_texts - n_unique``: occurrences that repeat an earlier text.
    n_repeated : int
        Distinct texts that occur more than once.
    most_common : list of (str, int)
        The most frequent repeated texts with their counts.
    """

    n_texts: int
    n_unique: int
    n_duplicates: int
    n_repeated: int
    most_common: list[tuple[str, int]]


def duplicate_stats(texts: Sequence[str], *, top: int = 10) -> DuplicateStats:
    """Count texts identical after whitespace normalisation.

    Parameters
    ----------
    texts : sequence of str
    top : int
        How many of the most frequent repeated texts to list.

    Returns
    -------
    DuplicateStats

    Examples
    --------
    >>> s = duplicate_stats(["yes", "yes ", "no", "ok", "yes"])
    >>> s.n_texts, s.n_unique, s.n_duplicates, s.n_repeated, s.most_common
    (5, 3, 2, 1, [('yes', 3)])
    """
    top = check_positive_int(top, "top", minimum=0)
    check_instance(texts, "texts", (list, tuple), "a list of str")
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str; got an item that is not a str")
    counts = Counter(normalize_text(t) for t in texts)
    repeated = [(t, c) for t, c in counts.most_common() if c > 1]
    return DuplicateStats(
        n_texts=len(texts),
        n_unique=len(counts),
        n_duplicates=len(texts) - len(counts),
        n_repeated=len(repeated),
        most_common=repeated[:top],
    )
