"""The dataset ``ubuntu-questions``: the bundled Ubuntu sample, only the turns that answer a question.

A query is kept when the last utterance of its context ends with a question
mark, so the relevant response is the reply to a question (about a fifth of
the instances). Everything else (the split by dialogue, the negatives and
their rules) is the built-in ``ubuntu-sample`` dataset's, loaded through
:func:`uncertank.datasets.load`.

The loader caches itself through the datasets layer: it has a
``cache_token(arg=None, *, split=...)`` method, and
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

__all__ = ["UbuntuQuestions"]

#: Bump when the construction below changes.
VERSION = 1


class UbuntuQuestions:
    """Loader of ``ubuntu-questions`` (what the ``uncertank_datasets`` hook registers).

    Called by :func:`uncertank.datasets.load` as ``loader(split=...,
    negatives=..., n_candidates=..., seed=..., **options)``.
    """

    def cache_token(self, arg: str | None = None, *, split: str = "train") -> str:
        """A string that changes whenever the set built for ``split`` would change."""
        from uncertank.plugins import get_factory

        base = get_factory("datasets", "ubuntu-sample")
        return f"ubuntu-questions-v{VERSION}:{base.cache_token(split=split)}"

    def __call__(
        self,
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
        """Build one split; see :func:`uncertank.datasets.load` for the parameters.

        ``max_queries`` keeps a subset of that many of the question turns,
        seeded by ``seed`` (in their original order); the others are passed
        to the ``ubuntu-sample`` dataset.
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
        full = load("ubuntu-sample", split=split, negatives=negatives, n_candidates=n_candidates, seed=seed,
                    **options)
        keep = np.flatnonzero([c[-1].rstrip().endswith("?") for c in full.contexts])
        if max_queries is not None and max_queries < keep.size:
            keep = np.sort(np.random.default_rng(seed).choice(keep, size=max_queries, replace=False))
        return replace(full.subset(keep), name=f"ubuntu-questions/{split}/{negatives}")

    def __repr__(self) -> str:
        return "UbuntuQuestions()"
