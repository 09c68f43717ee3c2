"""Conversation response ranking data, negative sampling, and TREC runs and qrels.

- :func:`load` builds a :class:`~uncertank.QuerySet` from a registered
  dataset (``ubuntu-sample``, ``chitchat``, ``tsv:PATH``, ``jsonl:PATH``)
  with negatives from a registered sampler (``random``, ``bm25``,
  ``embedding``), caching the result on disk.
- :func:`redraw_negatives` gives a labelled set new negatives from a
  registered sampler, keeping every sampling rule (the way rankers get
  differently built training pairs: data flows one way).
- The samplers, the file readers and writers, and the corpus helpers are
  importable from here too.
- TREC run files and qrels (:func:`read_trec_run`, :func:`read_qrels`,
  :func:`ranked_lists_from_run`, :func:`load_trec_covid_round1`) live in
  :mod:`uncertank.datasets.trec_files`, :mod:`uncertank.datasets.trec` and
  :mod:`uncertank.datasets.trec_covid`, and are re-exported here on first
  access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from uncertank.datasets._cache import cache_dir, clear_cache
from uncertank.datasets._load import cacheable, list_datasets, load
from uncertank.datasets.assembly import build_query_set, redraw_negatives
from uncertank.datasets.conversation import SplitSummary, chitchat_dialogues, describe, ubuntu_dialogues
from uncertank.datasets.dialogues import Dialogue, dialogue_of, split_dialogues
from uncertank.datasets.duplicates import DuplicateStats, duplicate_stats, normalize_text
from uncertank.datasets.formats import (
    read_response_jsonl,
    read_response_tsv,
    write_response_jsonl,
    write_response_tsv,
)
from uncertank.datasets.negative_sampler import NegativeSampler
from uncertank.datasets.retrieval import packaged_model_path
from uncertank.datasets.samplers import BM25Sampler, EmbeddingSampler, RandomSampler

if TYPE_CHECKING:  # what __getattr__ imports on first access, as the type checker sees it
    from uncertank.datasets.trec import ranked_lists_from_run as ranked_lists_from_run
    from uncertank.datasets.trec_covid import load_trec_covid_round1 as load_trec_covid_round1
    from uncertank.datasets.trec_files import read_qrels as read_qrels
    from uncertank.datasets.trec_files import read_trec_run as read_trec_run

#: The TREC names re-exported on first access, by home module (they import pandas).
_TREC_NAMES = {
    "load_trec_covid_round1": "uncertank.datasets.trec_covid",
    "ranked_lists_from_run": "uncertank.datasets.trec",
    "read_qrels": "uncertank.datasets.trec_files",
    "read_trec_run": "uncertank.datasets.trec_files",
}

__all__ = [
    "BM25Sampler",
    "Dialogue",
    "DuplicateStats",
    "EmbeddingSampler",
    "NegativeSampler",
    "RandomSampler",
    "SplitSummary",
    "build_query_set",
    "cache_dir",
    "cacheable",
    "chitchat_dialogues",
    "clear_cache",
    "describe",
    "dialogue_of",
    "duplicate_stats",
    "list_datasets",
    "load",
    "normalize_text",
    "packaged_model_path",
    "read_response_jsonl",
    "read_response_tsv",
    "redraw_negatives",
    "split_dialogues",
    "ubuntu_dialogues",
    "write_response_jsonl",
    "write_response_tsv",
]


def __getattr__(name: str) -> object:
    """Re-export the TREC names lazily, each from its home module."""
    if name in _TREC_NAMES:
        return getattr(importlib.import_module(_TREC_NAMES[name]), name)
    raise AttributeError(f"module 'uncertank.datasets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_TREC_NAMES])
