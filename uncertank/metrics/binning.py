r"""The binning of the calibration metrics, shared by the in-memory and the streaming evaluators.

Public inside the package (as torchmetrics keeps its ``_update`` and
``_compute`` helpers): :mod:`uncertank.metrics.calibration` and
:mod:`uncertank.metrics.streaming` both bin through :func:`bin_index`, so a
pair lands in the same bin whichever evaluator reads it.

Equal-width bins
----------------
With ``n`` bins, bin ``b`` holds the probabilities ``p`` with

$$
e_b \le p < e_{b+1}, \qquad e_b = b / n \text{ (the float64 quotient)},
$$

and 1.0 falls in the last bin. ``floor(p * n)`` is not quite that: the
product is rounded, so ``0.8999999999999999 * 10`` is exactly 9.0 although
the value lies below ``9 / 10``. :func:`uniform_bin_index` starts from
``floor(p * n)`` and moves a pair down (up) one bin where it lies below
(at or above) the edge it was given, which the rounding can be off by at
most one bin, so the documented rule holds at every representable edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from uncertank.validation import check_choice, check_instance, check_ndarray, check_positive_int

__all__ = [
    "CONVENTIONS",
    "DEFAULT_BINS",
    "MAX_BINS",
    "NORMS",
    "STRATEGIES",
    "BinStats",
    "Convention",
    "Norm",
    "Strategy",
    "bin_index",
    "bin_stats",
    "check_binning",
    "ece_from_stats",
    "uniform_bin_index",
    "uniform_edges",
]

Strategy = Literal["uniform", "quantile"]
Norm = Literal["l1", "l2", "max"]
Convention = Literal["naeini", "penha-hauff"]

STRATEGIES: tuple[Strategy, ...] = ("uniform", "quantile")
NORMS: tuple[Norm, ...] = ("l1", "l2", "max")
CONVENTIONS: tuple[Convention, ...] = ("naeini", "penha-hauff")

#: Default number of bins under each convention.
DEFAULT_BINS: dict[str, int] = {"naeini": 10, "penha-hauff": 50}

#: The most bins an ECE takes: every bin holds three arrays of its sums.
MAX_BINS = 1_000_000


def check_binning(
    n_bins: object, strategy: object, norm: object, convention: object
) -> tuple[int, Strategy, Norm, Convention]:
    """The checked binning options of an ECE: bins (the convention's default for None), strategy, norm, convention.

    Raises
    ------
    ValueError
        An unknown strategy, norm or convention (the message lists the
        allowed ones), ``n_bins`` outside [1, :data:`MAX_BINS`], or ``convention="penha-hauff"`` with
        equal-mass bins or a norm other than ``"l1"``.
    """
    convention = check_choice(convention, "convention", CONVENTIONS)
    strategy = check_choice(strategy, "strategy", STRATEGIES)
    norm = check_choice(norm, "norm", NORMS)
    bins = DEFAULT_BINS[convention] if n_bins is None else check_positive_int(n_bins, "n_bins", maximum=MAX_BINS)
    if convention == "penha-hauff":
        if strategy != "uniform":
            raise ValueError(
                f"convention='penha-hauff' bins by equal width only; got strategy={strategy!r} "
                "(use strategy='uniform')"
            )
        if norm != "l1":
            raise ValueError(
                f"convention='penha-hauff' defines the l1 ECE only; got norm={norm!r} (use norm='l1')"
            )
    return bins, strategy, norm, convention


@dataclass(frozen=True, eq=False)
class BinStats:
    """Per-bin sums of a set of pairs.

    Attributes
    ----------
    counts : ndarray of shape (n_bins,)
        Pairs per bin.
    sum_conf : ndarray of shape (n_bins,)
        Sum of the probabilities per bin (float64).
    sum_pos : ndarray of shape (n_bins,)
        Relevant pairs per bin (float64).
    edges : ndarray of shape (n_bins + 1,)
        The bin edges.
    n : int
        Pairs counted in the denominator of the ECE (all of them, also a
        pair that falls in no bin under ``convention="penha-hauff"``).
    """

    counts: NDArray[np.int64]
    sum_conf: NDArray[np.float64]
    sum_pos: NDArray[np.float64]
    edges: NDArray[np.float64]
    n: int


def uniform_edges(n_bins: int) -> NDArray[np.float64]:
    """The equal-width edges ``b / n_bins`` for ``b = 0, ..., n_bins``, shape (n_bins + 1,)."""
    n_bins = check_positive_int(n_bins, "n_bins", maximum=MAX_BINS)
    return np.arange(n_bins + 1, dtype=np.float64) / n_bins


def uniform_bin_index(p: NDArray[np.float64], n_bins: int) -> NDArray[np.intp]:
    """Bin of every probability among ``n_bins`` equal-width bins, shape (n_pairs,).

    Bin ``b`` holds ``b / n_bins <= p < (b + 1) / n_bins`` (float64
    quotients), 1.0 the last bin; see the module notes.

    Parameters
    ----------
    p : ndarray of shape (n_pairs,)
        Probabilities in [0, 1].
    n_bins : int
        Number of bins, ``>= 1``.

    Examples
    --------
    >>> uniform_bin_index(np.array([0.0, 0.8999999999999999, 0.9, 1.0]), 10).tolist()
    [0, 8, 9, 9]
    """
    check_ndarray(p, "p")
    n_bins = check_positive_int(n_bins, "n_bins", maximum=MAX_BINS)
    idx = np.empty(p.size, dtype=np.intp)
    np.multiply(p, n_bins, out=idx, casting="unsafe")  # floor(n * p) for p >= 0, one pass
    np.clip(idx, 0, n_bins - 1, out=idx)
    lower = idx / n_bins  # the edge the pair was given, as a float64 quotient
    idx -= p < lower  # rounded up across an edge: one bin down
    upper = (idx + 1) / n_bins
    idx += (p >= upper) & (idx < n_bins - 1)  # rounded down below an edge: one bin up
    return idx


def bin_index(
    p: NDArray[np.float64], n_bins: int, strategy: str, convention: str,
    edges: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.intp], NDArray[np.float64], int]:
    """Bin of every pair (``n_bins`` for none), the edges, and the bincount length.

    Parameters
    ----------
    p : ndarray of shape (n_pairs,)
        Probabilities in [0, 1].
    n_bins : int
        Number of bins.
    strategy : {"uniform", "quantile"}
        Equal-width bins (:func:`uniform_bin_index`) or equal-mass bins
        (a value equal to an inner edge goes to the upper bin).
    convention : {"naeini", "penha-hauff"}
        ``"penha-hauff"`` uses the edges of Penha & Hauff's code (``1 /
        n_bins`` added up); a value at or past their last edge falls in no
        bin (index ``n_bins``).
    edges : ndarray of shape (n_bins + 1,), optional
        Quantile edges computed elsewhere (the streaming evaluators compute
        them exactly over all chunks first).

    Returns
    -------
    idx : ndarray of shape (n_pairs,)
    edges : ndarray of shape (n_bins + 1,)
    minlength : int
        The ``minlength`` for ``numpy.bincount`` over ``idx``.
    """
    check_ndarray(p, "p")
    n_bins = check_positive_int(n_bins, "n_bins", maximum=MAX_BINS)
    check_choice(strategy, "strategy", STRATEGIES)
    check_choice(convention, "convention", CONVENTIONS)
    if edges is not None:
        check_ndarray(edges, "edges")
        if edges.size != n_bins + 1:
            raise ValueError(f"edges must have shape ({n_bins + 1},), n_bins + 1; got {edges.shape}")
    elif strategy == "quantile" and p.size == 0:
        raise ValueError("p must hold at least one probability for strategy='quantile'; got an empty array")
    minlength = n_bins
    if strategy == "uniform":
        if convention == "penha-hauff":
            # Their edges: 1/M added up M times in float64, bins [e_b, e_b+1); a value at
            # or past the last edge falls in no bin (overflow slot n_bins, dropped).
            edges = np.concatenate([[0.0], np.cumsum(np.full(n_bins, 1.0 / n_bins))])
            idx = np.searchsorted(edges, p, side="right") - 1
            minlength = n_bins + 1
        else:
            edges = uniform_edges(n_bins)
            idx = uniform_bin_index(p, n_bins)
    else:
        if edges is None:
            edges = np.quantile(p, np.linspace(0.0, 1.0, n_bins + 1))
        idx = np.searchsorted(edges[1:-1], p, side="right")
    return idx, edges, minlength


def bin_stats(
    p: NDArray[np.float64], y: NDArray[np.bool_], n_bins: int, strategy: str, convention: str = "naeini"
) -> BinStats:
    """Per-bin count, sum of confidences and number relevant (float64 accumulation)."""
    check_ndarray(y, "y", kinds="biuf")
    if np.shape(y) != np.shape(p):
        raise ValueError(f"p and y must have the same shape; got {np.shape(p)} and {np.shape(y)}")
    idx, edges, minlength = bin_index(p, n_bins, strategy, convention)
    counts = np.bincount(idx, minlength=minlength)[:n_bins]
    # bincount with weights sums in float64 (typed as intp by the numpy stubs)
    sum_conf = np.bincount(idx, weights=p, minlength=minlength)[:n_bins].astype(np.float64, copy=False)
    sum_pos = np.bincount(idx, weights=y, minlength=minlength)[:n_bins].astype(np.float64, copy=False)
    return BinStats(counts.astype(np.int64, copy=False), sum_conf, sum_pos, edges, int(p.size))


def ece_from_stats(st: BinStats, norm: str, convention: str) -> float:
    """The ECE (``"l1"``), l2-ECE or MCE (``"max"``) of per-bin sums."""
    check_instance(st, "st", BinStats)
    check_choice(norm, "norm", NORMS)
    check_choice(convention, "convention", CONVENTIONS)
    if norm == "l1" and st.n == 0:  # the l2 and max norms of no pair are 0, as without one full bin
        raise ValueError("st must count at least one pair for norm='l1'; got n = 0")
    gap = st.sum_conf - st.sum_pos  # |B| * (conf - acc) per bin
    if norm == "l1":
        ece = float(np.abs(gap).sum()) / st.n
        if convention == "penha-hauff":
            ece /= st.counts.size
        return ece
    full = st.counts > 0
    if not full.any():
        return 0.0
    if norm == "l2":
        return math.sqrt(float((gap[full] ** 2 / st.counts[full]).sum()) / st.n)
    return float((np.abs(gap[full]) / st.counts[full]).max())
