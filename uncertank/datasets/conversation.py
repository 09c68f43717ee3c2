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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import numpy as np

from uncertank._types import QuerySet
from uncertank._validation import check_choice, check_positive_int
from uncertank.datasets.samplers import DuplicateStats, duplicate_stats, normalize_text

__all__ = [
    "SPLITS",
    "SPLIT_FRACTIONS",
    "Dialogue",
    "SplitSummary",
    "assemble_query_set",
    "build_query_set",
    "chitchat_dialogues",
    "conversation_instances",
    "describe",
    "dialogue_of",
    "load_chitchat",
    "load_ubuntu_sample",
    "redraw_negatives",
    "split_dialogues",
    "ubuntu_dialogues",
]

SPLITS = ("train", "valid", "test")
#: Fractions of dialogues in train, valid and test.
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
#: Default cap on instances per dialogue (evenly spaced turns); None keeps every turn.
MAX_INSTANCES_PER_DIALOGUE = 10
#: Default number of context utterances kept (the most recent); None keeps all, as UDC v1.
MAX_CONTEXT_TURNS: int | None = None

_UBUNTU_FILE = "dialogues_small.json"


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
    ref = resources.files("uncertank.datasets").joinpath("_data", "ubuntu", _UBUNTU_FILE)
    with ref.open("r", encoding="utf-8") as fh:
        raw = json.load(fh)
    return tuple(Dialogue(str(d["dialogue_id"]), _clean(d["text"].split("\n"))) for d in raw)


def _ubuntu_version() -> str:
    import hashlib

    ref = resources.files("uncertank.datasets").joinpath("_data", "ubuntu", _UBUNTU_FILE)
    return "ubuntu-sample:" + hashlib.sha256(ref.read_bytes()).hexdigest()[:16]


def _require_chitchat() -> Any:
    try:
        import chitchat_dataset
    except ImportError as exc:
        raise ImportError(
            'the chitchat dataset needs the optional dependency chitchat-dataset; install it with '
            'pip install "uncertank[retrieval]"'
        ) from exc
    return chitchat_dataset


@lru_cache(maxsize=2)
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
    min_turns = check_positive_int(min_turns, "min_turns", minimum=2)
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
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.shape != (3,) or (fr < 0).any() or not np.isclose(fr.sum(), 1.0):
        raise ValueError(
            f"fractions must be 3 non-negative shares (train, valid, test) summing to 1; got {list(fractions)}"
        )
    ids = [d.dialogue_id for d in dialogues]
    if len(set(ids)) != len(ids):
        raise ValueError("dialogues must have unique ids; some id occurs twice")
    ordered = sorted(dialogues, key=lambda d: d.dialogue_id)
    perm = np.random.default_rng(split_seed).permutation(len(ordered))
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


def build_query_set(
    dialogues: Sequence[Dialogue],
    *,
    negatives: str = "random",
    n_candidates: int = 10,
    max_context_turns: int | None = MAX_CONTEXT_TURNS,
    max_instances_per_dialogue: int | None = MAX_INSTANCES_PER_DIALOGUE,
    seed: int = 0,
    name: str = "",
    sampler_options: Mapping[str, Any] | None = None,
    relevant_first: bool = False,
    max_queries: int | None = None,
) -> QuerySet:
    """Response-ranking queries over ``dialogues``, negatives from the other dialogues' utterances.

    Parameters
    ----------
    dialogues : sequence of Dialogue
        One split's dialogues; all their utterances form the response pool
        (a query's negatives never come from its own dialogue).
    negatives : str
        A registered negative sampler (``random``, ``bm25``, ``embedding``, ...).
    n_candidates : int
        Candidates per query: one relevant plus ``n_candidates - 1`` negatives.
    max_context_turns, max_instances_per_dialogue
        See :func:`conversation_instances`.
    seed : int
        Seeds the sampler and the shuffling of each candidate list.
    name : str
        Name of the resulting set.
    sampler_options : mapping, optional
        Extra keyword arguments of the sampler's factory.
    relevant_first : bool
        See :func:`assemble_query_set`.
    max_queries : int, optional
        Keep a seeded random subset of this many queries (in their original
        order) *before* negatives are drawn, so that an expensive sampler
        works for them only. The response pool stays the whole split.

    Returns
    -------
    QuerySet
        See :func:`assemble_query_set`.
    """
    contexts, responses, ids = conversation_instances(
        dialogues, max_context_turns=max_context_turns, max_instances_per_dialogue=max_instances_per_dialogue
    )
    if not ids:
        raise ValueError(f"{name or 'the dialogues'}: no dialogue has two utterances, so there is no instance")
    if max_queries is not None:
        max_queries = check_positive_int(max_queries, "max_queries")
        if max_queries < len(ids):
            keep = np.sort(np.random.default_rng([seed, 2]).permutation(len(ids))[:max_queries])
            contexts = [contexts[i] for i in keep]
            responses = [responses[i] for i in keep]
            ids = [ids[i] for i in keep]
    pool = [u for d in dialogues for u in d.utterances]
    pool_ids = [f"{d.dialogue_id}#{t}" for d in dialogues for t in range(len(d.utterances))]
    groups = [i.rsplit("#", 1)[0] for i in ids]
    pool_groups = [d.dialogue_id for d in dialogues for _ in d.utterances]
    return assemble_query_set(
        contexts, responses, ids, pool, pool_ids, groups=groups, pool_groups=pool_groups,
        negatives=negatives, n_candidates=n_candidates, seed=seed, name=name,
        sampler_options=sampler_options, relevant_first=relevant_first,
    )


def _accepts(factory: Any, param: str) -> bool:
    """Whether ``factory`` takes a keyword argument ``param`` (or ``**kwargs``)."""
    import inspect

    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    return any(
        p.name == param or p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()
    )


def assemble_query_set(
    contexts: Sequence[Sequence[str]],
    positives: Sequence[str],
    ids: Sequence[str],
    pool: Sequence[str],
    pool_ids: Sequence[str],
    *,
    positive_ids: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    pool_groups: Sequence[str] | None = None,
    negatives: str = "random",
    n_candidates: int = 10,
    seed: int = 0,
    name: str = "",
    sampler_options: Mapping[str, Any] | None = None,
    relevant_first: bool = False,
) -> QuerySet:
    """Add sampled negatives to (context, positive) instances and shuffle each list.

    Parameters
    ----------
    contexts : sequence of n_queries sequences of str
    positives : sequence of n_queries str
        The relevant response of each query.
    ids : sequence of n_queries str
        Query ids (also the candidate id of each positive).
    pool : sequence of str
        The response pool the sampler draws from.
    pool_ids : sequence of str
        One id per pool text.
    positive_ids : sequence of n_queries str, optional
        Candidate id of each positive; ``ids`` by default.
    groups, pool_groups : sequence of str, optional
        The dialogue of each query and of each pool text. A sampler whose
        factory accepts ``groups=`` (all built-in ones do) then never returns a
        text of the query's own dialogue.
    negatives, n_candidates, seed, name, sampler_options
        See :func:`build_query_set`.
    relevant_first : bool
        Put the relevant candidate first and the negatives after it in the
        sampler's order (the layout of the UDC test files, from which R_2@1 is
        read off the first two candidates) instead of shuffling each list.
        Beware: a metric that breaks ties by input position then favours the
        relevant candidate (BM25 gives many zero-score ties).

    Returns
    -------
    QuerySet
        ``n_queries`` queries of exactly ``n_candidates`` candidates, one
        labelled 1, in a seeded random order (unless ``relevant_first``). ``candidate_ids`` give, for a
        negative, the id of its text's first occurrence in the pool.

    Raises
    ------
    ValueError
        When ``n_candidates - 1`` exceeds the number of distinct pool texts
        minus one.
    """
    from uncertank.plugins import get_factory

    n_candidates = check_positive_int(n_candidates, "n_candidates", minimum=2)
    n_distinct = len({normalize_text(u) for u in pool} - {""})
    if n_candidates > n_distinct:
        raise ValueError(
            f"n_candidates={n_candidates} is larger than the response pool of "
            f"{name or 'these queries'} allows: {n_distinct} distinct texts give at most "
            f"{n_distinct - 1} negatives besides a positive, so n_candidates <= {n_distinct}"
        )
    factory = get_factory("negative_samplers", negatives)
    kwargs = dict(sampler_options or {})
    use_groups = groups is not None and pool_groups is not None and _accepts(factory, "groups")
    if use_groups:
        kwargs["groups"] = pool_groups
    sampler = factory(pool, seed=seed, **kwargs)
    n = len(ids)
    if use_groups:
        neg = sampler.sample(contexts, positives, n_candidates - 1, groups=groups)
    else:
        neg = sampler.sample(contexts, positives, n_candidates - 1)
    neg = np.asarray(neg, dtype=np.int64)
    if neg.shape != (n, n_candidates - 1):
        raise ValueError(
            f"negative sampler {negatives!r} returned shape {neg.shape}; expected ({n}, {n_candidates - 1})"
        )
    # column 0 holds the positive; a seeded permutation per row shuffles it in
    src = np.concatenate([np.full((n, 1), -1, dtype=np.int64), neg], axis=1)
    if not relevant_first:
        rng = np.random.default_rng([seed, 1])
        perm = np.argsort(rng.random((n, n_candidates)), axis=1)
        src = np.take_along_axis(src, perm, axis=1)
    src = src.ravel()
    owner = np.repeat(np.arange(n), n_candidates)
    pairs = list(zip(src.tolist(), owner.tolist(), strict=True))
    candidates = [positives[r] if s < 0 else pool[s] for s, r in pairs]
    pos_ids = list(ids) if positive_ids is None else list(positive_ids)
    cand_ids = [pos_ids[r] if s < 0 else pool_ids[s] for s, r in pairs]
    labels = (src < 0).astype(np.int64)
    offsets = np.arange(0, n * n_candidates + 1, n_candidates, dtype=np.int64)
    return QuerySet(
        [list(c) for c in contexts], candidates, offsets, labels,
        query_ids=list(ids), candidate_ids=cand_ids, name=name,
    )


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


def _ids_or_positions(qs: QuerySet) -> list[str]:
    """Candidate ids of ``qs``, or ``"<query id>:<position>"`` where it has none."""
    if qs.candidate_ids is not None:
        return [str(c) for c in qs.candidate_ids]
    qids = [str(x) for x in qs.query_ids] if qs.query_ids is not None else [str(q) for q in range(qs.n_queries)]
    within = (np.arange(qs.n_pairs) - np.repeat(qs.offsets[:-1], qs.lengths)).tolist()
    return [f"{qids[q]}:{j}" for q, j in zip(qs.query_index.tolist(), within, strict=True)]


def _groups_from_ids(ids: Sequence[str]) -> list[str] | None:
    out = [dialogue_of(i) for i in ids]
    return None if any(g is None for g in out) else out  # type: ignore[return-value]


def _resolve_groups(
    groups: Sequence[str] | str | None,
    name: str,
    ids: Sequence[str],
    n: int,
    what: str,
    keep: Iterable[Any] | None = None,
) -> list[str] | None:
    """The dialogue of each kept item, from the argument ``name`` (``groups``) of :func:`redraw_negatives`.

    ``"ids"`` reads them from ``ids`` (the kept items' ids), None gives None,
    and a sequence must hold one dialogue per ``what`` (``n`` in all), of
    which those at ``keep`` (default: all) are returned.
    """
    if isinstance(groups, str):
        if groups != "ids":
            raise ValueError(f"{name} must be a sequence of dialogue ids, 'ids' or None; got {groups!r}")
        return _groups_from_ids(ids)
    if groups is None:
        return None
    if len(groups) != n:
        raise ValueError(f"{name} must hold one dialogue per {what} ({n}); got {len(groups)}")
    return [str(groups[int(i)]) for i in (range(n) if keep is None else keep)]


def redraw_negatives(
    queries: QuerySet,
    *,
    negatives: str = "random",
    n_candidates: int | None = None,
    seed: int = 0,
    pool: Sequence[str] | None = None,
    pool_ids: Sequence[str] | None = None,
    groups: Sequence[str] | Literal["ids"] | None = "ids",
    pool_groups: Sequence[str] | Literal["ids"] | None = "ids",
    sampler_options: Mapping[str, Any] | None = None,
    relevant_first: bool = False,
    name: str | None = None,
) -> QuerySet:
    """The same queries and positives with new negatives from a registered sampler.

    Each query keeps its context and its first relevant candidate; its
    negatives are drawn again by the sampler ``negatives`` from ``pool`` with
    every rule of :class:`~uncertank.datasets.NegativeSampler`: never the
    positive, never a text identical (after whitespace normalisation) to the
    positive or to another negative of the list, never one of the query's
    context utterances, and never a text of the query's own dialogue. This
    is how a ranker gets training pairs built differently (another sampler,
    another seed per epoch, more candidates) without drawing negatives
    itself: data flows one way, from ``uncertank.datasets`` to the ranker.

    Parameters
    ----------
    queries : QuerySet
        A labelled set. Queries with no relevant candidate are dropped (with
        a warning).
    negatives : str
        A registered negative sampler (``random``, ``bm25``, ``embedding``, ...).
    n_candidates : int, optional
        Candidates per query, the positive included. Default: the length of
        the lists of ``queries`` when all are equal, else 10.
    seed : int
        Seeds the sampler and the shuffling of each list.
    pool : sequence of str, optional
        The texts negatives are drawn from. Default: every candidate of
        ``queries`` (the sets built by :func:`uncertank.datasets.load` hold
        only a sample of their split's utterances; pass the split's
        utterances to draw from all of them).
    pool_ids : sequence of str, optional
        One id per pool text (the candidate ids of the result). Default: the
        candidate ids of ``queries`` when ``pool`` is None (``"<query
        id>:<position>"`` where it has none), else ``"pool:<i>"``.
    groups : sequence of str, "ids" or None
        The dialogue of each query. ``"ids"`` (the default) reads it from the
        query ids when all have the form ``"<dialogue_id>#<turn>"`` (those of
        the bundled corpora and of :func:`build_query_set`), and applies no
        dialogue rule otherwise; None applies none.
    pool_groups : sequence of str, "ids" or None
        The dialogue of each pool text, likewise (``"ids"`` reads ``pool_ids``).
    sampler_options : mapping, optional
        Keyword arguments of the sampler's factory (``{"k1": 1.2}`` for ``bm25``).
    relevant_first : bool
        See :func:`assemble_query_set`.
    name : str, optional
        Name of the result; default ``"<name of queries>/<negatives>"``.

    Returns
    -------
    QuerySet
        One query per query of ``queries`` with a relevant candidate, in the
        same order, each with ``n_candidates`` candidates of which one is
        relevant (label 1); query ids and contexts kept.

    Raises
    ------
    ValueError
        When ``queries`` has no labels or no relevant candidate at all, the
        pool is too small for ``n_candidates``, or ``groups`` / ``pool_groups``
        / ``pool_ids`` have the wrong length.

    Examples
    --------
    >>> from uncertank.datasets import load, redraw_negatives
    >>> train = load("ubuntu-sample", split="valid", negatives="random", cache=False)
    >>> hard = redraw_negatives(train, negatives="bm25", seed=1)
    >>> hard.n_queries == train.n_queries, int(hard.labels.sum()) == hard.n_queries
    (True, True)
    """
    import warnings

    if not isinstance(queries, QuerySet):
        raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
    if queries.labels is None:
        raise ValueError("queries must be labelled to redraw its negatives; got a QuerySet without labels")
    rel = queries.labels > 0
    qidx = queries.query_index
    has = np.zeros(queries.n_queries, dtype=bool)
    has[qidx[rel]] = True
    if not has.any():
        raise ValueError(
            f"queries {queries.name or '(unnamed)'}: no query has a relevant candidate, so there is nothing to "
            "redraw negatives around"
        )
    if not has.all():
        warnings.warn(
            f"{queries.name or 'queries'}: {int((~has).sum())} of {queries.n_queries} queries have no relevant "
            "candidate and are dropped when negatives are redrawn",
            RuntimeWarning, stacklevel=2,
        )
    if n_candidates is None:
        lengths = queries.lengths
        n_candidates = int(lengths[0]) if (lengths == lengths[0]).all() and lengths[0] >= 2 else 10
    rel_pos = np.flatnonzero(rel)
    owners, first = np.unique(qidx[rel_pos], return_index=True)
    first_rel = np.full(queries.n_queries, -1, dtype=np.int64)
    first_rel[owners] = rel_pos[first]
    keep = np.flatnonzero(has)
    all_qids = (
        [str(x) for x in queries.query_ids] if queries.query_ids is not None
        else [str(q) for q in range(queries.n_queries)]
    )
    own_ids = _ids_or_positions(queries)
    if pool is None:
        if pool_ids is not None:
            raise ValueError("pool_ids needs pool; pass both or neither")
        pool_texts, ids = list(queries.candidates), own_ids
    else:
        pool_texts = list(pool)
        ids = [f"pool:{i}" for i in range(len(pool_texts))] if pool_ids is None else [str(i) for i in pool_ids]
        if len(ids) != len(pool_texts):
            raise ValueError(f"pool_ids must hold one id per pool text ({len(pool_texts)}); got {len(ids)}")
    query_ids = [all_qids[q] for q in keep]
    q_groups = _resolve_groups(groups, "groups", query_ids, queries.n_queries, "query", keep)
    p_groups = _resolve_groups(pool_groups, "pool_groups", ids, len(pool_texts), "pool text")
    return assemble_query_set(
        [queries.contexts[int(q)] for q in keep],
        [queries.candidates[first_rel[q]] for q in keep],
        query_ids, pool_texts, ids,
        positive_ids=[own_ids[first_rel[q]] for q in keep],
        groups=q_groups, pool_groups=p_groups,
        negatives=negatives, n_candidates=n_candidates, seed=seed,
        name=f"{queries.name}/{negatives}" if name is None else name,
        sampler_options=sampler_options, relevant_first=bool(relevant_first),
    )


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
    see :func:`uncertank.datasets.load` for the parameters.
    """

    def __init__(self, name: str, dialogues: Any, version: Any) -> None:
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
        sampler_options: Mapping[str, Any] | None = None,
        relevant_first: bool = False,
        max_queries: int | None = None,
    ) -> QuerySet:
        """Build one split; see :func:`uncertank.datasets.load`."""
        split = check_choice(split, "split", SPLITS)
        negatives = "random" if negatives is None else negatives
        n_candidates = 10 if n_candidates is None else n_candidates
        parts = split_dialogues(self._dialogues(), split_seed=split_seed)
        return build_query_set(
            parts[split],
            negatives=negatives,
            n_candidates=n_candidates,
            max_context_turns=max_context_turns,
            max_instances_per_dialogue=max_instances_per_dialogue,
            seed=seed,
            name=f"{self.name}/{split}/{negatives}",
            sampler_options=sampler_options,
            relevant_first=bool(relevant_first),
            max_queries=max_queries,
        )

    def __repr__(self) -> str:
        return f"ConversationLoader({self.name!r})"


load_ubuntu_sample = ConversationLoader("ubuntu-sample", ubuntu_dialogues, _ubuntu_version)
load_chitchat = ConversationLoader("chitchat", chitchat_dialogues, _chitchat_version)
