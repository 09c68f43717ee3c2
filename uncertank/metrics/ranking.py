"""Ranking metrics: R_n@k, P@k, recall@k, MAP, MRR, nDCG@k and RBP, vectorised over queries.

Every function takes a :class:`~uncertank.RankedLists` (flat CSR arrays,
lists may differ in length; ``labels`` is then None), a
:class:`~uncertank.Predictions` with ``labels`` of shape (n_pairs,) or its
labelled :class:`~uncertank.QuerySet`, or two dense arrays ``scores`` and
``labels`` of shape (n_queries, n_candidates); all of them pass through the
one input layer of the metrics package. Labels are integers ``>= 0``; a
candidate is relevant when its label is ``> 0`` (or ``>= rel`` where a metric
takes ir_measures' ``rel``: the lowest grade that counts as relevant). Each metric is a per-query
core (``_recall_core``, ``_ap_core``, ...) on validated lists, and a thin
public function: with ``per_query=True`` it returns the per-query values,
shape (n_queries,); otherwise their mean over all queries.

Tie rule
--------
Every metric ranks the candidates of a query by a stable sort on descending
score: equal scores keep their order in the input, so the earlier candidate
ranks higher. trec_eval breaks ties by document id instead, and
torchmetrics' retrieval metrics treat relevant candidates scored ``<= 0`` as
non-relevant; on lists without ties (and with positive scores) the values
agree with both.

Queries without a relevant candidate
------------------------------------
They count, with value 0 for every metric (RBP's residual is still reported),
as trec_eval does for a judged query with no relevant document. Drop them
beforehand (``RankedLists.subset``) to average over the other queries only.

Implementation
--------------
No Python loop runs over queries: the ranks of the relevant candidates come
from :mod:`uncertank.metrics.ranks` (vectorised comparisons, one ``argsort``
or one ``lexsort``, whichever is cheaper), and each metric is then a
handful of ``bincount`` reductions over the relevant candidates.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank.metrics._inputs import LabelsInput, Lists, ScoresInput, as_lists
from uncertank.metrics.ranks import pair_ranks, relevant_ranks
from uncertank.validation import check_positive_int, check_unit_interval

__all__ = [
    "mean_average_precision",
    "mean_reciprocal_rank",
    "ndcg_at_k",
    "precision_at_k",
    "rank_biased_precision",
    "recall_at_k",
    "trec_recall_at_k",
]

# --------------------------------------------------------------------------- options


#: The largest cutoff, depth, list size or grade an option of a ranking metric takes (no list is longer).
MAX_CUTOFF = 1_000_000_000


def check_cutoff(k: object, name: str = "k") -> int:
    """A cutoff, depth or grade option: an integer from 1 to :data:`MAX_CUTOFF`, else an error naming it."""
    return check_positive_int(k, name, maximum=MAX_CUTOFF)


def check_optional_cutoff(k: object, name: str = "k") -> int | None:
    """As :func:`check_cutoff`, None passing as None (no cutoff)."""
    return None if k is None else check_cutoff(k, name)


def check_persistence(p: object) -> float:
    """RBP's persistence ``p``: a number in (0, 1)."""
    return check_unit_interval(p, "p")


def _lists(scores: ScoresInput, labels: LabelsInput, rel: object) -> Lists:
    """The validated lists, with labels below ``rel`` (checked, ``>= 1``) set to 0."""
    return as_lists(scores, labels).at_least(check_cutoff(rel, "rel"))


def _finish(values: NDArray[np.float64], per_query: bool) -> float | NDArray[np.float64]:
    if per_query:
        return values
    return float(values.mean())


# --------------------------------------------------------------------------- metrics


def recall_at_k(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    k: int = 1,
    n: int | None = None,
    rel: int = 1,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""R_n@k (ir_measures' ``Success@k``): the fraction of queries with a relevant candidate in the top ``k``.

    $$
    R_n@k = \frac{1}{|Q|} \sum_{q} \mathbb{1}[\exists\, d \in \mathrm{top}_k(q): y_d > 0]
    $$

    the recall of conversation response ranking (Lowe et al. 2015; Penha &
    Hauff 2021), where each query has ``n`` candidates. It is what
    ir_measures calls ``Success@k`` and trec_eval ``success_k``, **not**
    ir_measures' ``R@k`` (the fraction of a query's relevant documents in its
    top k, trec_eval's ``recall_k``): that one is :func:`trec_recall_at_k`.
    With one relevant candidate per query the two agree.

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position (see the module notes).
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    k : int
        Cutoff, ``>= 1``.
    n : int, optional
        Use only the first ``n`` candidates of each list, in input order (the
        literature computes R_2@1 from lists built for R_10@1 this way, with
        the relevant candidate first). Default: all candidates.
    rel : int
        The lowest label that counts as relevant, ``>= 1`` (ir_measures'
        ``rel``, trec_eval's ``-l``). Default 1: relevant is ``label > 0``.
    per_query : bool
        Return the per-query 0/1 values, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Notes
    -----
    With one relevant candidate per query this equals recall@k. With several,
    a query counts 1 as soon as one of them is in the top ``k`` (hit rate);
    Penha & Hauff's released code counts the fraction of them instead.

    Examples
    --------
    >>> scores = [[0.9, 0.2, 0.4], [0.1, 0.8, 0.3]]
    >>> labels = [[0, 0, 1], [0, 1, 0]]
    >>> recall_at_k(scores, labels, k=1)
    0.5
    >>> recall_at_k(scores, labels, k=2)
    1.0
    >>> recall_at_k(scores, labels, k=1, n=2)  # first query keeps no relevant candidate
    0.5
    """
    kk, nn = check_cutoff(k), check_optional_cutoff(n, "n")
    return _finish(_recall_core(_lists(scores, labels, rel), kk, nn), per_query)


def _recall_core(lists: Lists, k: int, n: int | None) -> NDArray[np.float64]:
    """Per-query R_n@k, shape (n_queries,)."""
    if n is not None:
        lists = lists.truncate(n)
    rr = relevant_ranks(lists)
    top = rr.above == 0  # the highest-ranked relevant candidate of each query
    return rr.per_query((rr.rank < k).astype(np.float64), top)


def precision_at_k(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    k: int = 10,
    rel: int = 1,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""P@k: the fraction of the top ``k`` candidates that are relevant, as trec_eval's ``P_k``.

    $$
    \mathrm{P@k}(q) = \frac{1}{k} \sum_{r=1}^{k} \mathbb{1}[y_{(r)} > 0]
    $$

    The denominator is always ``k``, also for a list shorter than ``k``
    (trec_eval's ``P_k``, ir_measures' ``P@k``).

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position (see the module notes).
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    k : int
        Cutoff, ``>= 1``; default 10.
    rel : int
        The lowest label that counts as relevant, ``>= 1`` (ir_measures'
        ``rel``, trec_eval's ``-l``). Default 1.
    per_query : bool
        Return P@k per query, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> scores = [[0.9, 0.2, 0.4], [0.1, 0.8, 0.3]]
    >>> labels = [[1, 0, 1], [0, 1, 0]]
    >>> precision_at_k(scores, labels, k=2)  # (2/2 + 1/2) / 2
    0.75
    >>> precision_at_k(scores, labels, k=5, per_query=True)  # shorter lists still divide by 5
    array([0.4, 0.2])
    """
    kk = check_cutoff(k)
    return _finish(_precision_core(_lists(scores, labels, rel), kk), per_query)


def _precision_core(lists: Lists, k: int) -> NDArray[np.float64]:
    """Per-query P@k (denominator k), shape (n_queries,)."""
    rr = relevant_ranks(lists)
    return rr.per_query(np.ones(rr.rank.size), rr.rank < k) / k


def trec_recall_at_k(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    k: int = 10,
    rel: int = 1,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""Recall@k as trec_eval's ``recall_k`` (ir_measures' ``R@k``): relevant in the top ``k`` over all relevant.

    $$
    \mathrm{Recall@k}(q) = \frac{1}{R_q} \sum_{r=1}^{k} \mathbb{1}[y_{(r)} > 0]
    $$

    with $R_q$ the relevant candidates of ``q``; 0 when $R_q = 0$. Not
    :func:`recall_at_k`, which is R_n@k of response ranking (a hit in the top
    k, ir_measures' ``Success@k``); with one relevant candidate per query they
    agree. Over a TREC run, :func:`uncertank.evaluate.evaluate_runs` divides
    by every relevant document of the qrels, retrieved or not, as trec_eval.

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position (see the module notes).
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    k : int
        Cutoff, ``>= 1``; default 10.
    rel : int
        The lowest label that counts as relevant, ``>= 1`` (ir_measures'
        ``rel``, trec_eval's ``-l``). Default 1.
    per_query : bool
        Return the recall of every query, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    Two relevant candidates, one of them in the top 1:

    >>> trec_recall_at_k([[0.9, 0.2, 0.4]], [[1, 0, 1]], k=1)
    0.5
    >>> recall_at_k([[0.9, 0.2, 0.4]], [[1, 0, 1]], k=1)  # Success@1: a hit
    1.0
    """
    kk = check_cutoff(k)
    return _finish(_trec_recall_core(_lists(scores, labels, rel), kk), per_query)


def _trec_recall_core(lists: Lists, k: int) -> NDArray[np.float64]:
    """Per-query relevant-in-top-k over relevant, shape (n_queries,)."""
    rr = relevant_ranks(lists)
    hits = rr.per_query(np.ones(rr.rank.size), rr.rank < k)
    return np.divide(hits, rr.n_relevant, out=np.zeros_like(hits), where=rr.n_relevant > 0)


def mean_reciprocal_rank(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    k: int | None = None,
    rel: int = 1,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""MRR: the mean over queries of one over the rank of the first relevant candidate.

    $$
    \mathrm{RR}(q) = 1 / \mathrm{rank}_q, \qquad \mathrm{MRR} = \frac{1}{|Q|}\sum_q \mathrm{RR}(q)
    $$

    as trec_eval's ``recip_rank`` (Voorhees 1999). RR is 0 for a query with
    no relevant candidate, or (with ``k``) none in the top ``k``.

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position.
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    k : int, optional
        Cutoff (MRR@k); default none.
    rel : int
        The lowest label that counts as relevant, ``>= 1`` (ir_measures'
        ``rel``, trec_eval's ``-l``); lower labels count as 0. Default 1.
    per_query : bool
        Return RR per query, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> scores = [[0.9, 0.2, 0.4], [0.1, 0.8, 0.3]]
    >>> labels = [[0, 0, 1], [0, 1, 0]]
    >>> mean_reciprocal_rank(scores, labels)  # (1/2 + 1/1) / 2
    0.75
    >>> mean_reciprocal_rank(scores, labels, k=1)
    0.5
    """
    kk = check_optional_cutoff(k)
    return _finish(_rr_core(_lists(scores, labels, rel), kk), per_query)


def _rr_core(lists: Lists, k: int | None) -> NDArray[np.float64]:
    """Per-query reciprocal rank, shape (n_queries,)."""
    rr = relevant_ranks(lists)
    top = rr.above == 0
    rec = 1.0 / (rr.rank + 1.0)
    if k is not None:
        rec[rr.rank >= k] = 0.0
    return rr.per_query(rec, top)


def mean_average_precision(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    k: int | None = None,
    rel: int = 1,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""MAP: the mean over queries of average precision, as trec_eval's ``map``.

    $$
    \mathrm{AP}(q) = \frac{1}{R_q} \sum_{d:\, y_d > 0,\ \mathrm{rank}_d \le k} \mathrm{P@rank}_d
    $$

    where $R_q$ is the number of relevant candidates of ``q`` and
    P@r the precision of the top r (Buckley & Voorhees 2000). AP is 0 when
    $R_q = 0$. With ``k`` this is trec_eval's ``map_cut_k`` (the
    denominator stays $R_q$).

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position.
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    k : int, optional
        Cutoff; default none (the whole list).
    rel : int
        The lowest label that counts as relevant, ``>= 1`` (ir_measures'
        ``rel``, trec_eval's ``-l``); lower labels count as 0. Default 1.
    per_query : bool
        Return AP per query, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    Relevant at ranks 1 and 3: AP = (1/1 + 2/3) / 2 = 5/6.

    >>> round(mean_average_precision([[0.9, 0.5, 0.7]], [[1, 1, 0]]), 4)
    0.8333
    """
    kk = check_optional_cutoff(k)
    return _finish(_ap_core(_lists(scores, labels, rel), kk), per_query)


def _ap_core(lists: Lists, k: int | None) -> NDArray[np.float64]:
    """Per-query average precision, shape (n_queries,)."""
    rr = relevant_ranks(lists)
    prec = (rr.above + 1.0) / (rr.rank + 1.0)
    mask = None if k is None else rr.rank < k
    total = rr.per_query(prec, mask)
    return np.divide(total, rr.n_relevant, out=np.zeros_like(total), where=rr.n_relevant > 0)


def ndcg_at_k(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    k: int | None = 10,
    rel: int = 1,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""nDCG@k with linear gains, as trec_eval's ``ndcg_cut_k``.

    $$
    \mathrm{DCG@k}(q) = \sum_{r=1}^{k} \frac{g_{(r)}}{\log_2(r + 1)}
    $$

    $$
    \mathrm{nDCG@k}(q) = \frac{\mathrm{DCG@k}(q)}{\mathrm{IDCG@k}(q)}
    $$

    with gain $g = y$ (the label itself, trec_eval's linear gain, not
    $2^y - 1$), and IDCG the DCG of the candidates sorted by label
    (Järvelin & Kekäläinen 2002). nDCG is 0 for a query with no relevant
    candidate.

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position.
    labels : array-like of shape (n_queries, n_candidates), optional
        Graded integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    k : int or None
        Cutoff, default 10; None for the whole list.
    rel : int
        The lowest label that counts as relevant, ``>= 1`` (ir_measures'
        ``rel``, trec_eval's ``-l``); lower labels count as 0. Default 1.
    per_query : bool
        Return nDCG per query, shape (n_queries,).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    Ranked labels (0, 2, 1): DCG = 2/log2(3) + 1/log2(4) = 1.7619; ideal order
    (2, 1, 0): IDCG = 2/log2(2) + 1/log2(3) = 2.6309.

    >>> round(ndcg_at_k([[0.9, 0.8, 0.7]], [[0, 2, 1]], k=3), 4)
    0.6697
    """
    kk = check_optional_cutoff(k)
    return _finish(_ndcg_core(_lists(scores, labels, rel), kk), per_query)


def _ndcg_core(lists: Lists, k: int | None) -> NDArray[np.float64]:
    """Per-query nDCG@k with linear gains, shape (n_queries,)."""
    rr = relevant_ranks(lists, ideal=True)
    assert rr.ideal is not None  # asked for with ideal=True
    width = int(lists.lengths.max())
    discount = 1.0 / np.log2(np.arange(width, dtype=np.float64) + 2.0)
    gain = rr.gain.astype(np.float64)
    dmask = None if k is None else rr.rank < k
    imask = None if k is None else rr.ideal < k
    dcg = rr.per_query(gain * discount[rr.rank], dmask)
    idcg = rr.per_query(gain * discount[rr.ideal], imask)
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


def rank_biased_precision(
    scores: ScoresInput,
    labels: LabelsInput = None,
    *,
    p: float = 0.8,
    depth: int | None = None,
    max_grade: int | None = None,
    judged: ArrayLike | None = None,
    per_query: bool = False,
) -> tuple[float, float] | tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Rank-biased precision RBP(p) and its residual (Moffat & Zobel 2008).

    $$
    \mathrm{RBP}(q) = (1 - p) \sum_{r=1}^{d} g_{(r)}\, p^{\,r-1}, \qquad
    \mathrm{residual}(q) = (1 - p) \sum_{r \le d,\ \text{unjudged}} p^{\,r-1} + p^{\,d}
    $$

    where ``d`` is the evaluated depth (the list length, or ``depth`` if
    shorter) and $g \in [0, 1]$ the gain (0 for an unjudged candidate). The
    residual is the most RBP could still grow if every unjudged candidate
    and everything past depth ``d`` were relevant: the weight of the
    unjudged candidates in the top ``d`` plus the tail $p^d$, as Moffat &
    Zobel define it and ``rbp_eval`` reports it. Without ``judged`` every
    candidate is judged and the residual is $p^d$.

    Parameters
    ----------
    scores : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Higher ranks first; ties by input position.
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``scores`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    p : float
        Persistence, in (0, 1). Default 0.8 (Benham et al. 2021).
    depth : int, optional
        Evaluate the top ``depth`` ranks only.
    max_grade : int, optional
        None (default): binary gain, 1 for ``label > 0``. An integer ``m``:
        graded gain ``min(label, m) / m`` (with ``m = 2``, labels 0/1/2 give
        gains 0/0.5/1 as in the TREC-COVID RBP data of Benham et al.).
    judged : array-like of bool, optional
        Whether each candidate has a judgement, of the shape of ``labels``
        (shape (n_pairs,) with a RankedLists or Predictions); an unjudged
        candidate has label 0 and its weight goes to the residual. Default:
        every candidate is judged. :func:`uncertank.evaluate.evaluate_runs`
        passes it from the qrels.
    per_query : bool
        Return per-query arrays, each of shape (n_queries,).

    Returns
    -------
    value, residual : float, or ndarrays of shape (n_queries,) with ``per_query``
        The means over queries (or the per-query values).

    Examples
    --------
    Relevant at ranks 1 and 3 of three, p = 0.5: RBP = 0.5 (1 + 0.25) = 0.625, residual 0.5^3.

    >>> rank_biased_precision([[0.9, 0.5, 0.7]], [[1, 1, 0]], p=0.5)
    (0.625, 0.125)

    The same list with the candidate at rank 2 unjudged: its weight
    0.5 * 0.5 joins the residual.

    >>> rank_biased_precision([[0.9, 0.5, 0.7]], [[1, 0, 0]], p=0.5, judged=[[True, True, False]])
    (0.5, 0.375)
    """
    pp = check_persistence(p)
    dd = check_optional_cutoff(depth, "depth")
    mg = check_optional_cutoff(max_grade, "max_grade")
    lists = as_lists(scores, labels)
    mask = None if judged is None else _judged_mask(judged, lists)
    value, residual = _rbp_core(lists, pp, dd, mg, mask)
    if per_query:
        return value, residual
    return float(value.mean()), float(residual.mean())


def _judged_mask(judged: ArrayLike, lists: Lists) -> NDArray[np.bool_]:
    """``judged`` as a flat bool mask in input order, shape (n_pairs,), checked against the labels."""
    try:
        arr = np.asarray(judged)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"judged must be an array of bools; got {type(judged).__name__} ({exc})") from None
    if arr.dtype != bool:
        raise TypeError(f"judged must be bools (True where the candidate is judged); got dtype {arr.dtype}")
    block = lists.s2.shape if lists.s2 is not None and lists.valid is None and lists.structured else None
    if not ((arr.ndim == 1 and arr.size == lists.n_pairs) or arr.shape == block):
        want = f"{block} or " if block is not None else ""
        raise ValueError(
            f"judged must have one entry per candidate, shape {want}({lists.n_pairs},); got shape {arr.shape}"
        )
    mask = arr.reshape(-1)
    _, y = lists.flat()
    bad = ~mask & (y > 0)
    if bad.any():
        raise ValueError(
            f"judged is False for {int(bad.sum())} candidates with a relevant label (e.g. position "
            f"{int(np.flatnonzero(bad)[0])}); an unjudged candidate must have label 0"
        )
    return mask


def _rbp_core(
    lists: Lists, p: float, depth: int | None, max_grade: int | None,
    judged: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-query RBP(p) and its residual, each of shape (n_queries,)."""
    rr = relevant_ranks(lists)
    width = int(lists.lengths.max())
    weights = (1.0 - p) * p ** np.arange(width, dtype=np.float64)
    if max_grade is None:
        gain = np.ones(rr.rank.size)
    else:
        gain = np.minimum(rr.gain, max_grade).astype(np.float64) / max_grade
    mask = None if depth is None else rr.rank < depth
    value = rr.per_query(gain * weights[rr.rank], mask)
    evaluated = lists.lengths if depth is None else np.minimum(lists.lengths, depth)
    residual = p ** evaluated.astype(np.float64)
    if judged is not None and not judged.all():
        rank = pair_ranks(lists)
        qidx = lists.query_index()
        open_ = ~judged & (rank < evaluated[qidx])  # unjudged within the evaluated depth
        residual = residual + np.bincount(
            qidx[open_], weights=(1.0 - p) * p ** rank[open_].astype(np.float64), minlength=lists.n_queries
        )
    return value, residual
