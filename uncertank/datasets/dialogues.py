"""Dialogues and their instances: the splits of a corpus and the (context, response) pairs of a split.

Dialogues, not instances, are split: a fixed seeded permutation of the sorted
dialogue ids gives 80% train, 10% valid and 10% test, so that no dialogue is in
two splits and the split does not change with ``seed`` (which drives only the
negatives and the shuffling). From a dialogue of utterances ``u_0, ...,
u_{n-1}``, the instance at turn ``t >= 1`` has the context ``u_0, ...,
u_{t-1}`` (oldest first, not joined; ``max_context_turns`` keeps only the
most recent ones) and the true next utterance ``u_t`` as its relevant
candidate, with the id ``"<dialogue_id>#<t>"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from uncertank.datasets._load import SPLITS
from uncertank.validation import check_instance, check_positive_int, check_seed

__all__ = [
    "MAX_CONTEXT_TURNS",
    "MAX_INSTANCES_PER_DIALOGUE",
    "SPLIT_FRACTIONS",
    "Dialogue",
    "conversation_instances",
    "dialogue_of",
    "split_dialogues",
]

#: Fractions of dialogues in train, valid and test.
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
#: Default cap on instances per dialogue (evenly spaced turns); None keeps every turn.
MAX_INSTANCES_PER_DIALOGUE = 10
#: Default number of context utterances kept (the most recent); None keeps all, as UDC v1.
MAX_CONTEXT_TURNS: int | None = None


@dataclass(frozen=True)
class Dialogue:
    """One conversation.

    Attributes
    ----------
    dialogue_id : str
        Identifier, unique within its corpus.
    utterances : tuple of str
        The utterances (or turns), oldest first, whitespace-normalised and
        non-empty.
    """

    dialogue_id: str
    utterances: tuple[str, ...]


def check_dialogues(dialogues: object, name: str = "dialogues") -> list[Dialogue]:
    """``dialogues`` as a list, raising a TypeError unless it is a sequence of :class:`Dialogue`."""
    items: list[object] | tuple[object, ...] = check_instance(dialogues, name, (list, tuple), "a list of Dialogue")
    checked: list[Dialogue] = []
    for i, d in enumerate(items):
        checked.append(check_instance(d, f"{name}[{i}]", Dialogue))
    return checked


def split_dialogues(
    dialogues: Sequence[Dialogue],
    *,
    fractions: Sequence[float] = SPLIT_FRACTIONS,
    split_seed: int = 0,
) -> dict[str, list[Dialogue]]:
    """Assign whole dialogues to train, valid and test.

    The dialogues are sorted by id, permuted by ``numpy.random.default_rng(split_seed)``
    and cut at the cumulative ``fractions`` (rounded), so the assignment does
    not depend on the input order.

    Parameters
    ----------
    dialogues : sequence of Dialogue
        With unique ids.
    fractions : sequence of 3 float
        Shares of train, valid and test; non-negative, summing to 1.
    split_seed : int
        Seed of the permutation.

    Returns
    -------
    dict
        ``{"train": [...], "valid": [...], "test": [...]}``, each in sorted id order.
    """
    dialogues = check_dialogues(dialogues)
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.shape != (3,) or (fr < 0).any() or not np.isclose(fr.sum(), 1.0):
        raise ValueError(
            f"fractions must be 3 non-negative shares (train, valid, test) summing to 1; got {list(fractions)}"
        )
    ids = [d.dialogue_id for d in dialogues]
    if len(set(ids)) != len(ids):
        raise ValueError("dialogues must have unique ids; some id occurs twice")
    ordered = sorted(dialogues, key=lambda d: d.dialogue_id)
    perm = np.random.default_rng(check_seed(split_seed, "split_seed", allow_none=False)).permutation(len(ordered))
    cuts = np.round(np.cumsum(fr)[:2] * len(ordered)).astype(int)
    parts = np.split(perm, cuts)
    return {name: [ordered[i] for i in np.sort(part)] for name, part in zip(SPLITS, parts, strict=True)}


def _turn_positions(n: int, cap: int | None) -> list[int]:
    """Response positions of a dialogue with ``n`` utterances: 1..n-1, at most ``cap`` evenly spaced."""
    if n < 2:
        return []
    if cap is None or n - 1 <= cap:
        return list(range(1, n))
    return sorted({int(p) for p in np.round(np.linspace(1, n - 1, cap))})


def conversation_instances(
    dialogues: Sequence[Dialogue],
    *,
    max_context_turns: int | None = MAX_CONTEXT_TURNS,
    max_instances_per_dialogue: int | None = MAX_INSTANCES_PER_DIALOGUE,
) -> tuple[list[list[str]], list[str], list[str]]:
    """Context/response instances of the dialogues.

    Parameters
    ----------
    dialogues : sequence of Dialogue
    max_context_turns : int or None
        Keep at most this many of the most recent utterances as context; None keeps all.
    max_instances_per_dialogue : int or None
        At most this many responses per dialogue, at evenly spaced turns
        (the last turn always included); None takes every turn from the second on.

    Returns
    -------
    contexts : list of n_instances lists of str
    responses : list of n_instances str
    ids : list of n_instances str
        ``"<dialogue_id>#<turn>"`` of the response (turns counted from 0).
    """
    dialogues = check_dialogues(dialogues)
    if max_context_turns is not None:
        max_context_turns = check_positive_int(max_context_turns, "max_context_turns")
    if max_instances_per_dialogue is not None:
        max_instances_per_dialogue = check_positive_int(max_instances_per_dialogue, "max_instances_per_dialogue")
    contexts: list[list[str]] = []
    responses: list[str] = []
    ids: list[str] = []
    for d in dialogues:
        u = d.utterances
        for t in _turn_positions(len(u), max_instances_per_dialogue):
            lo = 0 if max_context_turns is None else max(0, t - max_context_turns)
            contexts.append(list(u[lo:t]))
            responses.append(u[t])
            ids.append(f"{d.dialogue_id}#{t}")
    return contexts, responses, ids


def dialogue_of(item_id: str) -> str | None:
    """The dialogue of a query or candidate id ``"<dialogue_id>#<turn>"`` (what :func:`build_query_set` writes).

    Returns None for an id of another form.

    Examples
    --------
    >>> dialogue_of("1234#5"), dialogue_of("L17")
    ('1234', None)
    """
    head, sep, turn = str(item_id).rpartition("#")
    return head if sep and head and turn.isdigit() else None
