r"""Calibration metrics: ECE (and MCE, l2), reliability curves, Brier score, NLL.

Scores here are probabilities of relevance in [0, 1]; a pair is relevant
when its label is ``> 0``. Every function takes ``probs`` and ``labels`` as
arrays of the same shape (1-D over pairs, or 2-D over queries and
candidates, flattened), a :class:`~uncertank.RankedLists` whose scores are
the probabilities (``labels`` is then None), or a
:class:`~uncertank.Predictions` with its labels, through the same input
layer as the ranking metrics. :func:`calibration_by_rank`,
:func:`imbalance_sweep` and ``per_query=True`` need the query structure: 2-D
arrays, a RankedLists or a Predictions.

Binning
-------
``strategy="uniform"`` splits [0, 1] into ``n_bins`` equal-width bins: bin
``b`` holds ``b / n_bins <= p < (b + 1) / n_bins`` (the edges are the
float64 quotients, and the rule holds exactly at each of them: not
``floor(n_bins * p)``, whose rounding puts 0.8999999999999999 in bin 9 of
10), and 1.0 falls in the last bin. :mod:`uncertank.metrics.binning` holds
the binning, shared with the streaming evaluators.
``strategy="quantile"`` uses equal-mass bins: the edges are the quantiles
of ``probs`` at ``0, 1/n_bins, ..., 1`` (linear interpolation, as
``numpy.quantile``), a value equal to an inner edge goes to the upper bin,
and the maximum to the last; tied values always share a bin, so the result
does not depend on the order of the pairs.

Conventions
-----------
``convention="naeini"`` (default) is the ECE of Naeini et al. (2015), as
used by the GP rankers of Ye et al. (2023):

$$
\mathrm{ECE} = \sum_{b=1}^{c} \frac{|B_b|}{n}\, \left|\mathrm{conf}(B_b) - \mathrm{acc}(B_b)\right|
$$

``convention="penha-hauff"`` reproduces the released code of Penha & Hauff
(2021): 50 equal-width bins ``[e_b, e_{b+1})`` whose edges are ``1/50`` added
up in floating point (so the last edge is 1.0000000000000004 and 1.0 lands
in the last bin; with 10 bins the last edge is 0.9999999999999999 and 1.0
falls in no bin, though it still counts in ``n``), and the sum is divided by
the number of bins once more. Their ECE values (about 0.003) are therefore
roughly 50 times smaller than the same quantity under the Naeini
convention (about 0.1 in the GP papers), and only values computed under the
same convention can be compared.

All sums are accumulated in float64.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from uncertank.metrics._inputs import LabelsInput, Lists, ScoresInput, as_pairs, as_structured
from uncertank.metrics.binning import (
    CONVENTIONS,
    DEFAULT_BINS,
    NORMS,
    STRATEGIES,
    Convention,
    Norm,
    Strategy,
    bin_index,
    bin_stats,
    check_binning,
    ece_from_stats,
)
from uncertank.metrics.ranks import pair_ranks
from uncertank.validation import check_bool, check_positive_int, check_real, check_seed

__all__ = [
    "ImbalanceSweep",
    "ReliabilityCurve",
    "brier_score",
    "calibration_by_rank",
    "expected_calibration_error",
    "imbalance_sweep",
    "negative_log_likelihood",
    "reliability_curve",
]

# The binning options live in uncertank.metrics.binning; still importable from here.
_BINNING_OPTIONS = (CONVENTIONS, DEFAULT_BINS, NORMS, STRATEGIES)


# --------------------------------------------------------------------------- options

#: The most balanced subsamples an ECE averages (each is a full ECE of its pairs).
MAX_SUBSAMPLES = 10_000


def check_ece_options(
    n_bins: object, strategy: object, norm: object, convention: object, *, balanced: object = False,
    seed: object = None, n_subsamples: object = 1,
) -> tuple[int, Strategy, Norm, Convention, int]:
    """The checked options of :func:`expected_calibration_error`: binning, ``balanced``, ``seed``, ``n_subsamples``.

    Returns the binning of :func:`~uncertank.metrics.binning.check_binning`
    and the number of subsamples; raises as :func:`expected_calibration_error` does.
    """
    c, strategy, norm, convention = check_binning(n_bins, strategy, norm, convention)
    if not isinstance(balanced, (bool, np.bool_)):
        raise TypeError(f"balanced must be a bool; got {type(balanced).__name__} {balanced!r}")
    check_seed(seed)
    n_sub = check_positive_int(n_subsamples, "n_subsamples", maximum=MAX_SUBSAMPLES)
    if n_sub != 1 and not balanced:
        raise ValueError(f"n_subsamples applies only with balanced=True; got n_subsamples={n_sub} with balanced=False")
    return c, strategy, norm, convention, n_sub


def check_eps(eps: object) -> float:
    """The clipping constant of :func:`negative_log_likelihood`: ``eps`` in (0, 0.5), machine epsilon for None."""
    e = float(np.finfo(np.float64).eps) if eps is None else eps
    return check_real(e, "eps", minimum=0, maximum=0.5, exclusive_minimum=True, exclusive_maximum=True)


# --------------------------------------------------------------------------- balanced subsample


def _balanced_subset(
    p: NDArray[np.float64], y: NDArray[np.bool_], seed: int | np.random.Generator | None
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """As many non-relevant as relevant pairs (the larger class subsampled), seeded."""
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    m = min(pos.size, neg.size)
    if m == 0:
        raise ValueError(
            "balanced=True needs both relevant and non-relevant pairs; "
            f"got {pos.size} relevant and {neg.size} non-relevant"
        )
    rng = np.random.default_rng(seed)
    if pos.size > m:
        pos = rng.choice(pos, m, replace=False)
    if neg.size > m:
        neg = rng.choice(neg, m, replace=False)
    keep = np.sort(np.concatenate([pos, neg]))
    return p[keep], y[keep]


# --------------------------------------------------------------------------- ECE


def expected_calibration_error(
    probs: ScoresInput,
    labels: LabelsInput = None,
    *,
    n_bins: int | None = None,
    strategy: Strategy = "uniform",
    norm: Norm = "l1",
    balanced: bool = False,
    seed: int | np.random.Generator | None = None,
    convention: Convention = "naeini",
    n_subsamples: int = 1,
) -> float:
    r"""Expected calibration error of probabilities of relevance (Naeini et al. 2015).

    $$
    \mathrm{ECE} = \sum_{b=1}^{c} \frac{|B_b|}{n} \left|\overline{p}(B_b) - \overline{y}(B_b)\right|
    $$

    where $\overline{p}(B_b)$ is the mean probability and
    $\overline{y}(B_b)$ the fraction relevant in bin $B_b$.
    ``norm="max"`` gives the maximum calibration error (MCE) over non-empty
    bins, ``norm="l2"`` the root of the count-weighted mean squared gap
    (Kumar et al. 2019, without debiasing).

    Parameters
    ----------
    probs : RankedLists, Predictions, or array-like of shape (n_pairs,) or (n_queries, n_candidates)
        Probabilities of relevance in [0, 1].
    labels : array-like of the same shape, optional
        Integer labels ``>= 0`` (relevant is ``> 0``); None when ``probs`` is
        a RankedLists; of shape (n_pairs,) (or a labelled QuerySet) with a
        Predictions.
    n_bins : int, optional
        Number of bins ``c >= 1``; default 10, or 50 under
        ``convention="penha-hauff"``.
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins (see the module notes).
    norm : {"l1", "l2", "max"}
        ECE, l2-ECE or MCE.
    balanced : bool
        Evaluate on as many non-relevant as relevant pairs, subsampling the
        larger class at random (the balanced setting of Penha & Hauff's
        Table 1).
    seed : int or numpy.random.Generator, optional
        Seeds the subsample of ``balanced=True``; an integer must be ``>= 0``.
    convention : {"naeini", "penha-hauff"}
        ``"penha-hauff"`` reproduces Penha & Hauff's released code: it
        divides the l1 ECE by the number of bins once more (see the module
        notes).
    n_subsamples : int
        With ``balanced=True`` (at most :data:`MAX_SUBSAMPLES`): the mean ECE over this many balanced
        subsamples, drawn one after another from the generator ``seed``
        seeds (the first is the subsample of ``n_subsamples=1``). Which
        non-relevant pairs one subsample keeps moves its ECE: for 600
        relevant pairs of the full study its standard deviation over seeds
        is 0.005-0.011, as large as many differences between rankers.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        For ``n_subsamples`` other than 1 without ``balanced=True``, and for
        ``balanced=True`` without both relevant and non-relevant pairs; for
        ``n_bins`` above :data:`~uncertank.metrics.binning.MAX_BINS`,
        ``n_subsamples`` above :data:`MAX_SUBSAMPLES` and a negative ``seed``.
    TypeError
        For a ``seed`` that is neither an integer, a numpy Generator nor None,
        and a ``balanced`` that is not a bool.

    Examples
    --------
    Two bins: {0.1, 0.2} with one relevant (gap |0.15 - 0.5|) and {0.8, 0.9}
    with both relevant (gap |0.85 - 1|): ECE = (2 * 0.35 + 2 * 0.15) / 4.

    >>> probs, labels = [0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1]
    >>> round(expected_calibration_error(probs, labels, n_bins=2), 6)
    0.25
    >>> round(expected_calibration_error(probs, labels, n_bins=2, norm="max"), 6)  # MCE
    0.35
    """
    c, strategy, norm, convention, n_sub = check_ece_options(
        n_bins, strategy, norm, convention, balanced=balanced, seed=seed, n_subsamples=n_subsamples)
    p, y = as_pairs(probs, labels)
    if balanced and n_sub > 1:
        rng = np.random.default_rng(seed)
        return float(np.mean([
            _ece(*_balanced_subset(p, y, rng), c, strategy, norm, convention) for _ in range(n_sub)
        ]))
    if balanced:
        p, y = _balanced_subset(p, y, seed)
    return _ece(p, y, c, strategy, norm, convention)


def _ece(
    p: NDArray[np.float64], y: NDArray[np.bool_], c: int, strategy: Strategy, norm: Norm, convention: Convention
) -> float:
    if norm == "l1":
        # The l1 ECE needs only the per-bin sums of p - y: one weighted bincount.
        idx, _, minlength = bin_index(p, c, strategy, convention)
        gap = np.bincount(idx, weights=p - y, minlength=minlength)[:c]
        ece = float(np.abs(gap).sum()) / p.size
        return ece / c if convention == "penha-hauff" else ece
    return ece_from_stats(bin_stats(p, y, c, strategy, convention), norm, convention)


@dataclass(frozen=True, eq=False)
class ReliabilityCurve:
    """Per-bin statistics of a reliability diagram.

    Attributes
    ----------
    mean_confidence : ndarray of shape (n_bins,)
        Mean predicted probability per bin (NaN for an empty bin).
    fraction_relevant : ndarray of shape (n_bins,)
        Fraction of relevant pairs per bin (NaN for an empty bin).
    counts : ndarray of shape (n_bins,)
        Number of pairs per bin.
    edges : ndarray of shape (n_bins + 1,)
        Bin edges.

    Unpacks as ``mean_confidence, fraction_relevant, counts``.
    """

    mean_confidence: NDArray[np.float64]
    fraction_relevant: NDArray[np.float64]
    counts: NDArray[np.int64]
    edges: NDArray[np.float64]

    def __iter__(self) -> Iterator[NDArray[np.float64] | NDArray[np.int64]]:
        return iter((self.mean_confidence, self.fraction_relevant, self.counts))

    @property
    def n_bins(self) -> int:
        """Number of bins."""
        return int(self.counts.size)

    def nonempty(self) -> ReliabilityCurve:
        """The same curve without its empty bins (``edges`` keeps every bin)."""
        keep = self.counts > 0
        return ReliabilityCurve(
            self.mean_confidence[keep], self.fraction_relevant[keep], self.counts[keep], self.edges
        )

    def ece(self) -> float:
        """The l1 ECE (Naeini convention) of these bins."""
        full = self.counts > 0
        n = int(self.counts.sum())
        gap = np.abs(self.mean_confidence[full] - self.fraction_relevant[full])
        return float((gap * self.counts[full]).sum()) / n if n else 0.0


def reliability_curve(
    probs: ScoresInput,
    labels: LabelsInput = None,
    *,
    n_bins: int = 10,
    strategy: Strategy = "uniform",
    balanced: bool = False,
    seed: int | np.random.Generator | None = None,
) -> ReliabilityCurve:
    r"""Mean confidence, fraction relevant and count per bin (a reliability diagram).

    For bin $B_b$: $\overline{p}(B_b) = \frac{1}{|B_b|}\sum_{i \in B_b} p_i$
    and $\overline{y}(B_b) = \frac{1}{|B_b|}\sum_{i \in B_b} \mathbb{1}[y_i > 0]$
    (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana 2005). Bins as in
    :func:`expected_calibration_error`.

    Parameters
    ----------
    probs : RankedLists, Predictions, or array-like of shape (n_pairs,) or (n_queries, n_candidates)
        Probabilities of relevance in [0, 1].
    labels : array-like of the same shape, optional
        Integer labels ``>= 0``; None when ``probs`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    n_bins : int
        Number of bins, ``>= 1``.
    strategy : {"uniform", "quantile"}
        Equal-width or equal-mass bins.
    balanced : bool
        Subsample to as many non-relevant as relevant pairs.
    seed : int or numpy.random.Generator, optional
        Seeds that subsample.

    Returns
    -------
    ReliabilityCurve
        Arrays of shape (n_bins,); empty bins have NaN means and count 0.

    Examples
    --------
    >>> conf, frac, count = reliability_curve([0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1], n_bins=2)
    >>> conf.round(2).tolist(), frac.tolist(), count.tolist()
    ([0.15, 0.85], [0.5, 1.0], [2, 2])
    """
    c, strategy, _, _, _ = check_ece_options(n_bins, strategy, "l1", "naeini", balanced=balanced, seed=seed)
    p, y = as_pairs(probs, labels)
    if balanced:
        p, y = _balanced_subset(p, y, seed)
    st = bin_stats(p, y, c, strategy)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = st.sum_conf / st.counts
        frac = st.sum_pos / st.counts
    return ReliabilityCurve(conf, frac, st.counts, st.edges)


# --------------------------------------------------------------------------- scores


def brier_score(
    probs: ScoresInput, labels: LabelsInput = None, *, per_query: bool = False
) -> float | NDArray[np.float64]:
    r"""Brier score: the mean squared difference between probability and relevance.

    $$
    \mathrm{BS} = \frac{1}{n} \sum_i (p_i - \mathbb{1}[y_i > 0])^2
    $$

    (Brier 1950). Lower is better; 0 is perfect.

    Parameters
    ----------
    probs : RankedLists, Predictions, or array-like of shape (n_pairs,) or (n_queries, n_candidates)
        Probabilities of relevance in [0, 1].
    labels : array-like of the same shape, optional
        Integer labels ``>= 0``; None when ``probs`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    per_query : bool
        Return the Brier score of every query (the mean over its pairs),
        shape (n_queries,); needs the query structure (2-D arrays or a
        RankedLists).

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> round(brier_score([0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1]), 6)  # (0.01 + 0.64 + 0.04 + 0.01) / 4
    0.175
    """
    if check_bool(per_query, "per_query"):
        lists, p, y = as_structured(probs, labels)
        d = p - y
        return _per_query_mean(lists, d * d)
    p, y = as_pairs(probs, labels)
    d = p - y
    return float(np.einsum("i,i->", d, d)) / p.size  # no BLAS: its threads cost more than they save here


def _per_query_mean(lists: Lists, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean of ``values`` (one per pair, input order) within each query, shape (n_queries,)."""
    sums = np.bincount(lists.query_index(), weights=values, minlength=lists.n_queries)
    return np.asarray(sums / lists.lengths, dtype=np.float64)


def negative_log_likelihood(
    probs: ScoresInput, labels: LabelsInput = None, *, eps: float | None = None,
    per_query: bool = False,
) -> float | NDArray[np.float64]:
    r"""Mean binary negative log-likelihood (log loss) of the relevance labels.

    $$
    \mathrm{NLL} = -\frac{1}{n} \sum_i \left[ y_i \log p_i + (1 - y_i) \log(1 - p_i) \right]
    $$

    with $y_i = \mathbb{1}[\text{label}_i > 0]$ and $p_i$ clipped
    to ``[eps, 1 - eps]`` so that a confident mistake costs a large but finite
    amount.

    Parameters
    ----------
    probs : RankedLists, Predictions, or array-like of shape (n_pairs,) or (n_queries, n_candidates)
        Probabilities of relevance in [0, 1].
    labels : array-like of the same shape, optional
        Integer labels ``>= 0``; None when ``probs`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    eps : float, optional
        Clipping constant in (0, 0.5); default the float64 machine epsilon
        (as scikit-learn's ``log_loss``).
    per_query : bool
        Return the NLL of every query (the mean over its pairs), shape
        (n_queries,); needs the query structure.

    Returns
    -------
    float or ndarray of shape (n_queries,)

    Examples
    --------
    >>> round(negative_log_likelihood([0.5, 0.5], [0, 1]), 6)  # log 2
    0.693147
    """
    e = check_eps(eps)
    if check_bool(per_query, "per_query"):
        lists, p, y = as_structured(probs, labels)
    else:
        p, y = as_pairs(probs, labels)
    pc = np.clip(p, e, 1.0 - e)
    ll = np.where(y, np.log(pc), np.log1p(-pc))
    if per_query:
        return _per_query_mean(lists, -ll)
    return float(-ll.mean())


# --------------------------------------------------------------------------- structure


def calibration_by_rank(
    probs: ScoresInput,
    labels: LabelsInput = None,
    *,
    n_bins: int | None = None,
    strategy: Strategy = "uniform",
    norm: Norm = "l1",
    convention: Convention = "naeini",
    max_rank: int | None = None,
) -> NDArray[np.float64]:
    r"""ECE per rank position: the calibration of the candidates ranked r-th.

    The candidates of each query are ranked by ``probs`` (descending, ties by
    input position, as the ranking metrics); entry ``r`` is the ECE of all
    candidates at rank ``r + 1`` across queries. A well-ranked list has
    mostly relevant pairs at the top and few below, so the calibration of
    each position shows where confidence and relevance part ways (Penha &
    Hauff 2021).

    Parameters
    ----------
    probs : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Probabilities of relevance in [0, 1].
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``probs`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    n_bins, strategy, norm, convention
        As in :func:`expected_calibration_error`.
    max_rank : int, optional
        Report the first ``max_rank`` positions only; default all.

    Returns
    -------
    ndarray of shape (n_positions,)
        ECE at ranks 1, 2, ...; ``n_positions`` is the longest list (or
        ``max_rank``). A position held by no query (``max_rank`` past the
        longest list) is NaN.

    Examples
    --------
    At rank 1 the probabilities 0.9 and 0.8 are both relevant (ECE 0.15);
    at rank 2, 0.3 and 0.1 are both non-relevant (ECE 0.2).

    >>> calibration_by_rank([[0.9, 0.3], [0.1, 0.8]], [[1, 0], [0, 1]], n_bins=1).round(2)
    array([0.15, 0.2 ])
    """
    c, strategy, norm, convention = check_binning(n_bins, strategy, norm, convention)
    mr = None if max_rank is None else check_positive_int(max_rank, "max_rank")
    lists, p, y = as_structured(probs, labels)
    rank = pair_ranks(lists)
    n_pos = int(lists.lengths.max()) if mr is None else mr
    order = np.argsort(rank, kind="stable")
    bounds = np.zeros(n_pos + 1, dtype=np.int64)
    np.cumsum(np.bincount(rank, minlength=n_pos)[:n_pos], out=bounds[1:])
    out = np.full(n_pos, np.nan)
    for r in range(n_pos):  # one pass per rank position, over that position's pairs
        sel = order[bounds[r]:bounds[r + 1]]
        if sel.size:
            st = bin_stats(p[sel], y[sel], c, strategy, convention)
            out[r] = ece_from_stats(st, norm, convention)
    return out


@dataclass(frozen=True, eq=False)
class ImbalanceSweep:
    """ECE as the number of non-relevant candidates per relevant grows.

    Attributes
    ----------
    n_negatives : ndarray of shape (n_steps,)
        Non-relevant candidates kept per query at each step.
    ece : ndarray of shape (n_steps,)
        The ECE at each step.
    n_pairs : ndarray of shape (n_steps,)
        Pairs evaluated at each step.
    """

    n_negatives: NDArray[np.int64]
    ece: NDArray[np.float64]
    n_pairs: NDArray[np.int64]


def imbalance_sweep(
    probs: ScoresInput,
    labels: LabelsInput = None,
    *,
    n_negatives: Sequence[int] | None = None,
    seed: int | np.random.Generator | None = None,
    n_bins: int | None = None,
    strategy: Strategy = "uniform",
    norm: Norm = "l1",
    convention: Convention = "naeini",
) -> ImbalanceSweep:
    """ECE as the number of non-relevant candidates per relevant one grows.

    At step ``m`` each query keeps all its relevant candidates and its first
    ``m`` non-relevant ones (in input order, or in a random order when
    ``seed`` is given), and the ECE of the kept pairs is computed: the
    setting of Penha & Hauff (2021), Figure 2, where calibration worsens as
    the class imbalance grows. Queries with fewer than ``m`` non-relevant
    candidates keep all of theirs.

    Parameters
    ----------
    probs : RankedLists, Predictions, or array-like of shape (n_queries, n_candidates)
        Probabilities of relevance in [0, 1].
    labels : array-like of shape (n_queries, n_candidates), optional
        Integer labels ``>= 0``; None when ``probs`` is a RankedLists; of
        shape (n_pairs,) (or a labelled QuerySet) with a Predictions.
    n_negatives : sequence of int, optional
        The steps, each ``>= 1``; default ``1, 2, ...`` up to the largest
        number of non-relevant candidates of any query.
    seed : int or numpy.random.Generator, optional
        Choose which non-relevant candidates come first at random; default
        the input order (Penha & Hauff's code takes the first ones).
    n_bins, strategy, norm, convention
        As in :func:`expected_calibration_error`.

    Returns
    -------
    ImbalanceSweep

    Examples
    --------
    One bin. With one negative: mean probability (0.9 + 0.2) / 2 = 0.55 against
    1/2 relevant; with two: 1.7 / 3 against 1/3.

    >>> sweep = imbalance_sweep([[0.9, 0.2, 0.6]], [[1, 0, 0]], n_bins=1)
    >>> sweep.n_negatives.tolist(), sweep.ece.round(3).tolist()
    ([1, 2], [0.05, 0.233])
    """
    c, strategy, norm, convention = check_binning(n_bins, strategy, norm, convention)
    check_seed(seed)
    lists, p, y = as_structured(probs, labels)
    neg = ~y
    qidx = lists.query_index()
    starts = np.zeros(lists.n_queries, dtype=np.int64)
    np.cumsum(lists.lengths[:-1], out=starts[1:])
    if seed is None:
        order = None
        neg_in_order = neg
    else:
        keys = np.random.default_rng(seed).random(p.size)
        order = np.lexsort((keys, qidx))
        neg_in_order = neg[order]
    cum = np.cumsum(neg_in_order)
    base: NDArray[np.int64] = cum[starts] - neg_in_order[starts]
    rank_in_order = cum - 1 - base[qidx]  # rank among the query's negatives
    if order is None:
        neg_rank = rank_in_order
    else:
        neg_rank = np.empty_like(rank_in_order)
        neg_rank[order] = rank_in_order
    if n_negatives is None:
        most = int(np.bincount(qidx, weights=neg, minlength=lists.n_queries).max())
        if most == 0:
            raise ValueError("imbalance_sweep needs non-relevant candidates; labels hold none")
        steps = np.arange(1, most + 1, dtype=np.int64)
    else:
        steps = np.asarray([check_positive_int(m, "n_negatives") for m in n_negatives], dtype=np.int64)
        if steps.size == 0:
            raise ValueError("n_negatives must hold at least one step; got an empty sequence")
    eces = np.empty(steps.size)
    sizes = np.empty(steps.size, dtype=np.int64)
    for i, m in enumerate(steps):  # one pass per step
        keep = y | (neg_rank < m)
        st = bin_stats(p[keep], y[keep], c, strategy, convention)
        eces[i] = ece_from_stats(st, norm, convention)
        sizes[i] = st.n
    return ImbalanceSweep(steps, eces, sizes)
