"""Query sets from instances: sampled negatives added, lists shuffled, negatives redrawn.

Every function here takes one :class:`~uncertank.datasets.sampling.NegativeSampling`
(or its fields as separate keyword arguments, each defaulting to the
specification's default) and draws the negatives of each query from a
registered sampler, with the dialogue rule where the dialogues are known.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, SupportsIndex

import numpy as np

from uncertank import plugins
from uncertank._types import QuerySet
from uncertank.datasets.dialogues import (
    MAX_CONTEXT_TURNS,
    MAX_INSTANCES_PER_DIALOGUE,
    Dialogue,
    check_dialogues,
    conversation_instances,
    dialogue_of,
)
from uncertank.datasets.duplicates import normalize_text
from uncertank.datasets.sampling import NegativeSampling
from uncertank.validation import check_instance, check_positive_int

__all__ = ["assemble_query_set", "build_query_set", "candidate_ids_or_positions", "redraw_negatives"]


def build_query_set(
    dialogues: Sequence[Dialogue],
    *,
    sampling: NegativeSampling | None = None,
    negatives: str | None = None,
    n_candidates: int | None = None,
    max_context_turns: int | None = MAX_CONTEXT_TURNS,
    max_instances_per_dialogue: int | None = MAX_INSTANCES_PER_DIALOGUE,
    seed: int | None = None,
    name: str = "",
    sampler_options: Mapping[str, object] | None = None,
    relevant_first: bool | None = None,
    max_queries: int | None = None,
) -> QuerySet:
    """Response-ranking queries over ``dialogues``, negatives from the other dialogues' utterances.

    Parameters
    ----------
    dialogues : sequence of Dialogue
        One split's dialogues; all their utterances form the response pool
        (a query's negatives never come from its own dialogue).
    sampling : NegativeSampling, optional
        How the candidates are drawn. Or give its fields separately:
    negatives, n_candidates, seed, sampler_options, relevant_first : optional
        The fields of :class:`~uncertank.datasets.sampling.NegativeSampling`
        (the sampler, candidates per query, the seed of the sampler and of
        the shuffling, the sampler's options, the layout of each list); None
        takes the specification's default. Not together with ``sampling``.
    max_context_turns, max_instances_per_dialogue
        See :func:`conversation_instances`.
    name : str
        Name of the resulting set.
    max_queries : int, optional
        Keep a seeded random subset of this many queries (in their original
        order) *before* negatives are drawn, so that an expensive sampler
        works for them only. The response pool stays the whole split.

    Returns
    -------
    QuerySet
        See :func:`assemble_query_set`.
    """
    dialogues = check_dialogues(dialogues)
    spec = NegativeSampling.resolve(sampling, negatives=negatives, n_candidates=n_candidates, seed=seed,
                                    sampler_options=sampler_options, relevant_first=relevant_first)
    contexts, responses, ids = conversation_instances(
        dialogues, max_context_turns=max_context_turns, max_instances_per_dialogue=max_instances_per_dialogue
    )
    if not ids:
        raise ValueError(f"{name or 'the dialogues'}: no dialogue has two utterances, so there is no instance")
    if max_queries is not None:
        max_queries = check_positive_int(max_queries, "max_queries")
        if max_queries < len(ids):
            keep = np.sort(np.random.default_rng([spec.seed, 2]).permutation(len(ids))[:max_queries])
            contexts = [contexts[i] for i in keep]
            responses = [responses[i] for i in keep]
            ids = [ids[i] for i in keep]
    pool = [u for d in dialogues for u in d.utterances]
    pool_ids = [f"{d.dialogue_id}#{t}" for d in dialogues for t in range(len(d.utterances))]
    groups = [i.rsplit("#", 1)[0] for i in ids]
    pool_groups = [d.dialogue_id for d in dialogues for _ in d.utterances]
    return assemble_query_set(
        contexts, responses, ids, pool, pool_ids, groups=groups, pool_groups=pool_groups, sampling=spec, name=name,
    )


def _accepts(factory: Callable[..., object], param: str) -> bool:
    """Whether ``factory`` takes a keyword argument ``param`` (or ``**kwargs``)."""
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
    sampling: NegativeSampling | None = None,
    negatives: str | None = None,
    n_candidates: int | None = None,
    seed: int | None = None,
    name: str = "",
    sampler_options: Mapping[str, object] | None = None,
    relevant_first: bool | None = None,
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
    sampling, negatives, n_candidates, seed, sampler_options, relevant_first
        How the candidates are drawn; see :func:`build_query_set`. With
        ``relevant_first`` the relevant candidate comes first and the
        negatives after it in the sampler's order (the layout of the UDC test
        files, from which R_2@1 is read off the first two candidates) instead
        of a shuffled list. Beware: a metric that breaks ties by input
        position then favours the relevant candidate (BM25 gives many
        zero-score ties).
    name : str
        Name of the resulting set.

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
    for arg, label in ((contexts, "contexts"), (positives, "positives"), (ids, "ids"), (pool, "pool")):
        check_instance(arg, label, (list, tuple), "a list")
    if not all(isinstance(t, str) for t in [*positives, *pool]):
        raise TypeError("positives and pool must be lists of str")
    spec = NegativeSampling.resolve(sampling, negatives=negatives, n_candidates=n_candidates, seed=seed,
                                    sampler_options=sampler_options, relevant_first=relevant_first)
    negatives, n_candidates, seed = spec.negatives, spec.n_candidates, spec.seed
    n_distinct = len({normalize_text(u) for u in pool} - {""})
    if n_candidates > n_distinct:
        raise ValueError(
            f"n_candidates={n_candidates} is larger than the response pool of "
            f"{name or 'these queries'} allows: {n_distinct} distinct texts give at most "
            f"{n_distinct - 1} negatives besides a positive, so n_candidates <= {n_distinct}"
        )
    factory = plugins.get_factory("negative_samplers", negatives)
    kwargs = dict(spec.sampler_options)
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
    if not spec.relevant_first:
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


def candidate_ids_or_positions(qs: QuerySet) -> list[str]:
    """Candidate ids of ``qs``, or ``"<query id>:<position>"`` where it has none."""
    check_instance(qs, "qs", QuerySet)
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
    keep: Iterable[SupportsIndex] | None = None,
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
    sampling: NegativeSampling | None = None,
    negatives: str | None = None,
    n_candidates: int | None = None,
    seed: int | None = None,
    pool: Sequence[str] | None = None,
    pool_ids: Sequence[str] | None = None,
    groups: Sequence[str] | Literal["ids"] | None = "ids",
    pool_groups: Sequence[str] | Literal["ids"] | None = "ids",
    sampler_options: Mapping[str, object] | None = None,
    relevant_first: bool | None = None,
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
    sampling : NegativeSampling, optional
        How the candidates are drawn; or give its fields separately
        (``negatives``, ``n_candidates``, ``seed``, ``sampler_options``,
        ``relevant_first``; see :func:`build_query_set`), not both. Without
        an ``n_candidates``: the length of the lists of ``queries`` when all
        are equal (and at least 2), else the specification's default.
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
    if sampling is None and n_candidates is None:
        lengths = queries.lengths
        if (lengths == lengths[0]).all() and lengths[0] >= 2:
            n_candidates = int(lengths[0])
    spec = NegativeSampling.resolve(sampling, negatives=negatives, n_candidates=n_candidates, seed=seed,
                                    sampler_options=sampler_options, relevant_first=relevant_first)
    rel_pos = np.flatnonzero(rel)
    owners, first = np.unique(qidx[rel_pos], return_index=True)
    first_rel = np.full(queries.n_queries, -1, dtype=np.int64)
    first_rel[owners] = rel_pos[first]
    keep = np.flatnonzero(has)
    all_qids = (
        [str(x) for x in queries.query_ids] if queries.query_ids is not None
        else [str(q) for q in range(queries.n_queries)]
    )
    own_ids = candidate_ids_or_positions(queries)
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
        groups=q_groups, pool_groups=p_groups, sampling=spec,
        name=f"{queries.name}/{spec.negatives}" if name is None else name,
    )
