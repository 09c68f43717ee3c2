"""The dataset ``ubuntu-questions``: the bundled Ubuntu sample, only the turns that answer a question.

A query is kept when the last utterance of its context ends with a question
mark, so the relevant response is the reply to a question (about a fifth of
the instances). Everything else (the split by dialogue, the negatives and
their rules) is the built-in ``ubuntu-sample`` dataset's, loaded through
:func:`uncertank.datasets.load`.

The loader caches itself through the datasets layer: the decorator
:func:`uncertank.datasets.cacheable` gives it a ``cache_token``, and
:func:`uncertank.datasets.load` stores the built set on disk under a key made
of that token and every parameter, so the second load of the same set reads
one file. The token changes with this loader's version and with the data of
``ubuntu-sample`` (its own token), so a stale file is never reused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from uncertank import QuerySet
from uncertank.datasets import cacheable

__all__ = ["ubuntu_questions"]

#: Bump when the construction below changes.
VERSION = 1


def _token(arg: str | None, split: str) -> str:
    """Changes whenever the set built for ``split`` would change."""
    from uncertank.plugins import get_factory

    base: Any = get_factory("datasets", "ubuntu-sample")
    return f"ubuntu-questions-v{VERSION}:{base.cache_token(split=split)}"


def question_turns(queries: QuerySet) -> np.ndarray:
    """Indices of the queries whose context ends with a question, shape (n_kept,)."""
    return np.flatnonzero([c[-1].rstrip().endswith("?") for c in queries.contexts])


@cacheable(_token)
def ubuntu_questions(
    *,
    split: str = "train",
    negatives: str | None = None,
    n_candidates: int | None = None,
    seed: int = 0,
    max_context_turns: int | None = None,
    split_seed: int = 0,
    sampler_options: Mapping[str, Any] | None = None,
    max_queries: int | None = None,
) -> QuerySet:
    """Build one split of ``ubuntu-questions``; see :func:`uncertank.datasets.load` for the parameters.

    ``max_queries`` keeps a subset of that many of the question turns,
    seeded by ``seed`` (in their original order); the other options are
    passed to the ``ubuntu-sample`` dataset.
    """
    from uncertank.datasets import load
    from uncertank.validation import check_positive_int

    if max_queries is not None:
        max_queries = check_positive_int(max_queries, "max_queries")
    options: dict[str, Any] = {"split_seed": split_seed}
    if max_context_turns is not None:
        options["max_context_turns"] = max_context_turns
    if sampler_options is not None:
        options["sampler_options"] = sampler_options
    negatives = "random" if negatives is None else negatives
    full = load("ubuntu-sample", split=split, negatives=negatives, n_candidates=n_candidates, seed=seed, **options)
    keep = question_turns(full)
    if max_queries is not None and max_queries < keep.size:
        keep = np.sort(np.random.default_rng(seed).choice(keep, size=max_queries, replace=False))
    return replace(full.subset(keep), name=f"ubuntu-questions/{split}/{negatives}")
