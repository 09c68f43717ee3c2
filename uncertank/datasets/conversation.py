"""Conversation response ranking sets built from dialogues, as the Ubuntu Dialogue Corpus v1.

From a dialogue of utterances ``u_0, ..., u_{n-1}``, the instance at turn
``t >= 1`` has the context ``u_0, ..., u_{t-1}`` (oldest first, not joined;
``max_context_turns`` keeps only the most recent ones), the true next
utterance ``u_t`` as its one relevant candidate, and ``n_candidates - 1``
negatives drawn by a negative sampler from the response pool of the same
split (Lowe et al. 2015; Penha & Hauff 2021). The candidates of each query are
shuffled (seeded), so that the relevant one sits at a random position and
ties cannot favour it.

Dialogues, not instances, are split: a fixed seeded permutation of the sorted
dialogue ids gives 80% train, 10% valid and 10% test, so that no dialogue is in
two splits and the split does not change with ``seed`` (which drives only the
negatives and the shuffling).

This module holds the bundled corpora and their loaders; the splitting and
the instances live in :mod:`uncertank.datasets.dialogues`, the sampling
specification in :mod:`uncertank.datasets.sampling`, and the assembly of
query sets (negatives added, lists shuffled, negatives redrawn) in
:mod:`uncertank.datasets.assembly`.

Two corpora are bundled:

- ``ubuntu-sample``: 2,002 Ubuntu IRC dialogues (Apache-2.0), one utterance
  per line, no speaker labels; each line is one context entry.
- ``chitchat``: the conversations with three or more turns of the
  ``chitchat-dataset`` package (BYU PCC lab, MIT); a turn (a speaker's
  consecutive messages, joined by a space) is one context entry.

References
----------
Lowe, R., Pow, N., Serban, I. & Pineau, J. (2015). The Ubuntu Dialogue Corpus:
a large dataset for research in unstructured multi-turn dialogue systems.
SIGDIAL 2015.
Penha, G. & Hauff, C. (2021). On the calibration and uncertainty of neural
learning to rank models for conversational search. EACL 2021.
"""


from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import ModuleType

from uncertank._optional import require
from uncertank._types import QuerySet
from uncertank.datasets._load import SPLITS
from uncertank.datasets.assembly import build_query_set
from uncertank.datasets.dialogues import (
    MAX_CONTEXT_TURNS,
    MAX_INSTANCES_PER_DIALOGUE,
    Dialogue,
    conversation_instances,
    split_dialogues,
)
from uncertank.datasets.duplicates import DuplicateStats, duplicate_stats, normalize_text
from uncertank.datasets.sampling import NegativeSampling
from uncertank.validation import check_choice, check_positive_int

__all__ = [
    "SplitSummary",
    "chitchat_dialogues",
    "describe",
    "load_chitchat",
    "load_ubuntu_sample",
    "ubuntu_dialogues",
]

_UBUNTU_FILE = "dialogues_small.json"


def _clean(texts: Sequence[str]) -> tuple[str, ...]:
    out = (normalize_text(t) for t in texts)
    return tuple(t for t in out if t)


@lru_cache(maxsize=1)
def ubuntu_dialogues() -> tuple[Dialogue, ...]:
    """The 2,002 dialogues of the bundled Ubuntu Dialogue Corpus sample.

    Each line of a dialogue's text is one utterance; whitespace is
    normalised and empty lines (one in the whole sample) are dropped.

    Returns
    -------
    tuple of Dialogue
        In file order.
    """
    ref = resources.files("uncertank.datasets").joinpath("_data").joinpath("ubuntu").joinpath(_UBUNTU_FILE)
    with ref.open("r", encoding="utf-8") as fh:
        raw = json.load(fh)
    return tuple(Dialogue(str(d["dialogue_id"]), _clean(d["text"].split("\n"))) for d in raw)


def _ubuntu_version() -> str:
    import hashlib

    ref = resources.files("uncertank.datasets").joinpath("_data").joinpath("ubuntu").joinpath(_UBUNTU_FILE)
    return "ubuntu-sample:" + hashlib.sha256(ref.read_bytes()).hexdigest()[:16]


def _require_chitchat() -> ModuleType:
    return require("chitchat_dataset", "retrieval", what="the chitchat dataset")


def chitchat_dialogues(min_turns: int = 3) -> tuple[Dialogue, ...]:
    """The conversations of the ``chitchat-dataset`` package with at least ``min_turns`` turns.

    A turn is a speaker's consecutive messages, joined by a space (as the
    package's own ``ConversationDataset`` does), whitespace-normalised.

    Parameters
    ----------
    min_turns : int
        Minimum number of non-empty turns (3 by default: 3,462 of 7,168).

    Returns
    -------
    tuple of Dialogue
        In the package's order; ids are the package's conversation keys.
    """
    return _chitchat_dialogues(check_positive_int(min_turns, "min_turns", minimum=2))


@lru_cache(maxsize=2)
def _chitchat_dialogues(min_turns: int) -> tuple[Dialogue, ...]:
    """:func:`chitchat_dialogues` on a checked ``min_turns``, cached (the check runs before the cache's hash)."""
    mod = _require_chitchat()
    with open(mod._PATH, encoding="utf-8") as fh:
        raw = json.load(fh)
    out = []
    for key, conv in raw.items():
        turns = _clean([" ".join(m["text"] for m in msg) for msg in conv["messages"]])
        if len(turns) >= min_turns:
            out.append(Dialogue(str(key), turns))
    return tuple(out)


def _chitchat_version() -> str:
    import importlib.metadata

    try:
        version = importlib.metadata.version("chitchat-dataset")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        version = "?"
    mod = _require_chitchat()
    import os

    return f"chitchat:{version}:{os.path.getsize(mod._PATH)}"


@dataclass(frozen=True)
class SplitSummary:
    """Sizes of one split of a conversation dataset.

    Attributes
    ----------
    split : str
    n_dialogues : int
    n_utterances : int
        Utterances (turns) in the split: the response pool before deduplication.
    n_instances : int
        Queries built with the given cap on instances per dialogue.
    pool : DuplicateStats
        Duplicates in the response pool (texts equal after whitespace normalisation).
    responses : DuplicateStats
        Duplicates among the relevant responses of the instances.
    """

    split: str
    n_dialogues: int
    n_utterances: int
    n_instances: int
    pool: DuplicateStats
    responses: DuplicateStats


def describe(
    name: str,
    *,
    max_instances_per_dialogue: int | None = MAX_INSTANCES_PER_DIALOGUE,
    split_seed: int = 0,
) -> dict[str, SplitSummary]:
    """Per-split sizes and duplicate counts of a bundled conversation dataset.

    Parameters
    ----------
    name : {"ubuntu-sample", "chitchat"}
    max_instances_per_dialogue : int or None
        As for loading.
    split_seed : int
        As for loading.

    Returns
    -------
    dict of str to SplitSummary
        Keyed by ``"train"``, ``"valid"``, ``"test"``.
    """
    name = check_choice(name, "name", ("ubuntu-sample", "chitchat"))
    dialogues = ubuntu_dialogues() if name == "ubuntu-sample" else chitchat_dialogues()
    out = {}
    for split, ds in split_dialogues(dialogues, split_seed=split_seed).items():
        _, responses, _ = conversation_instances(
            ds, max_context_turns=1, max_instances_per_dialogue=max_instances_per_dialogue
        )
        pool = [u for d in ds for u in d.utterances]
        out[split] = SplitSummary(
            split, len(ds), len(pool), len(responses), duplicate_stats(pool), duplicate_stats(responses)
        )
    return out


class ConversationLoader:
    """A dataset loader over a bundled dialogue corpus (what the ``uncertank_datasets`` hook registers).

    Called as ``loader(split=..., negatives=..., n_candidates=..., seed=..., **options)``;
    see :func:`uncertank.datasets.load` for the parameters (which ``load``
    checks; the sampling options are gathered into one
    :class:`~uncertank.datasets.sampling.NegativeSampling`, checked there).
    """

    def __init__(
        self, name: str, dialogues: Callable[[], Sequence[Dialogue]], version: Callable[[], object]
    ) -> None:
        self.name = name
        self._dialogues = dialogues
        self._version = version

    def cache_token(self, arg: str | None = None, *, split: str = "train") -> str:
        """A string that changes whenever the underlying data does."""
        return str(self._version())

    def __call__(
        self,
        *,
        split: str = "train",
        negatives: str | None = None,
        n_candidates: int | None = None,
        max_context_turns: int | None = MAX_CONTEXT_TURNS,
        seed: int = 0,
        max_instances_per_dialogue: int | None = MAX_INSTANCES_PER_DIALOGUE,
        split_seed: int = 0,
        sampler_options: Mapping[str, object] | None = None,
        relevant_first: bool = False,
        max_queries: int | None = None,
    ) -> QuerySet:
        """Build one split; see :func:`uncertank.datasets.load`."""
        sampling = NegativeSampling.of(negatives=negatives, n_candidates=n_candidates, seed=seed,
                                       sampler_options=sampler_options, relevant_first=relevant_first)
        parts = split_dialogues(self._dialogues(), split_seed=split_seed)
        if not isinstance(split, str) or split not in parts:  # load() checks it; a direct call gets its message
            check_choice(split, "split", SPLITS)
        return build_query_set(
            parts[split],
            sampling=sampling,
            max_context_turns=max_context_turns,
            max_instances_per_dialogue=max_instances_per_dialogue,
            name=f"{self.name}/{split}/{sampling.negatives}",
            max_queries=max_queries,
        )

    def __repr__(self) -> str:
        return f"ConversationLoader({self.name!r})"


load_ubuntu_sample = ConversationLoader("ubuntu-sample", ubuntu_dialogues, _ubuntu_version)
load_chitchat = ConversationLoader("chitchat", chitchat_dialogues, _chitchat_version)


chitchat_dialogues.cache_clear = _chitchat_dialogues.cache_clear  # type: ignore[attr-defined]
