r"""Exact quantiles of data read in chunks: the edges of equal-mass bins, in constant memory.

Equal-mass bins (``strategy="quantile"``) need the quantiles of all the
scores before the first pair can be binned. :func:`quantile_edges` finds
them exactly (equal to ``numpy.quantile`` on all the scores, bit for bit)
in a few more passes over the chunks, in constant memory: a radix selection
on the bits of the float64 scores, 16 bits a pass, that gathers the last
candidates once few enough remain (usually three passes in all).

The passes are public inside the package so that
:mod:`uncertank.metrics.sharded` runs the same selection on Dask:
:func:`select_pass` over one chunk of :func:`float_bits`,
:func:`combine_pass` to add two chunks' results, and
:func:`exact_quantiles` to drive the passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias, TypeVar

import numpy as np
from numpy.typing import NDArray

from uncertank._types import RankedLists
from uncertank.metrics._inputs import LabelsInput, ScoresInput, as_pairs
from uncertank.metrics.binning import MAX_BINS
from uncertank.validation import check_bool, check_callable, check_instance, check_ndarray, check_positive_int

__all__ = [
    "chunk_probabilities",
    "combine_pass",
    "exact_quantiles",
    "float_bits",
    "quantile_edges",
    "reiterable",
    "select_pass",
]

T = TypeVar("T")

#: What one pass of the selection gives per prefix group: a histogram of the next 16 bits
#: (``collect`` False) or the group's bit patterns (``collect`` True).
PassResult: TypeAlias = list[NDArray[np.integer]]

_DIGIT = 16  # bits of the float64 pattern resolved per pass
_COLLECT = 1 << 20  # gather the candidates once at most this many remain


def float_bits(p: NDArray[np.float64]) -> NDArray[np.uint64]:
    """Order-preserving unsigned view of probabilities in [0, 1] (-0.0 made +0.0)."""
    check_ndarray(p, "p")
    if p.dtype != np.float64:
        raise TypeError(f"p must be a 1-D ndarray of float64; got dtype {p.dtype}")
    return np.ascontiguousarray(p + 0.0).view(np.uint64)


def select_pass(u: NDArray[np.uint64], level: int, prefixes: tuple[int, ...], collect: bool) -> PassResult:
    """Per prefix group: the histogram of the next 16 bits, or (``collect``) the group's values."""
    check_ndarray(u, "u", kinds="u")
    level = check_positive_int(level, "level", minimum=0, maximum=64 // _DIGIT - 1)
    given = np.asarray(check_instance(prefixes, "prefixes", tuple, "a tuple of bit prefixes"))
    if given.size and (given.ndim != 1 or given.dtype.kind not in "iu"
                       or int(given.min()) < 0 or int(given.max()) >> (_DIGIT * level)):
        raise ValueError(f"prefixes must be integers from 0 to 2**{_DIGIT * level} - 1 (the bits of level {level}); "
                         f"got {prefixes[:5]!r}")
    collect = check_bool(collect, "collect")
    if level == 0:
        return [np.bincount((u >> np.uint64(64 - _DIGIT)).astype(np.intp), minlength=1 << _DIGIT)]
    top = u >> np.uint64(64 - _DIGIT * level)
    out: PassResult = []
    for pre in prefixes:
        sel = u[top == np.uint64(pre)]
        if collect:
            out.append(sel)
        else:
            shift = np.uint64(64 - _DIGIT * (level + 1))
            out.append(np.bincount(((sel >> shift) & np.uint64(0xFFFF)).astype(np.intp), minlength=1 << _DIGIT))
    return out


def combine_pass(a: PassResult, b: PassResult, collect: bool) -> PassResult:
    """Add two chunks' results of :func:`select_pass`: histograms summed, gathered values joined."""
    collect = check_bool(collect, "collect")
    for part, name in ((a, "a"), (b, "b")):
        for x in check_instance(part, name, list, "a list of arrays from select_pass"):
            check_ndarray(x, name, kinds="iuf")
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b, strict=True) if not collect):
        raise ValueError(f"a and b must be results of one pass (as many arrays, of one shape); "
                         f"got {len(a)} and {len(b)} arrays")
    if collect:
        return [np.concatenate([x, y]) for x, y in zip(a, b, strict=True)]
    return [x + y for x, y in zip(a, b, strict=True)]


#: A chunk of scored pairs: a RankedLists (probabilities as scores) or a ``(probs, labels)`` tuple.
Chunk: TypeAlias = RankedLists | tuple[ScoresInput, LabelsInput]


def _lerp(a: NDArray[np.float64], b: NDArray[np.float64], t: NDArray[np.float64]) -> NDArray[np.float64]:
    """numpy.quantile's linear interpolation, operation for operation (so the edges agree bit for bit)."""
    diff = b - a
    out = np.add(a, diff * t)
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def exact_quantiles(run_pass: Callable[[int, tuple[int, ...], bool], PassResult], n_bins: int) -> NDArray[np.float64]:
    """Edges equal to ``numpy.quantile(all scores, linspace(0, 1, n_bins + 1))``.

    ``run_pass(level, prefixes, collect)`` runs :func:`select_pass` over
    every chunk and combines the results with :func:`combine_pass`.
    """
    check_callable(run_pass, "run_pass", "a function (level, prefixes, collect) -> list")
    n_bins = check_positive_int(n_bins, "n_bins", maximum=MAX_BINS)
    hist0 = run_pass(0, (0,), False)[0]
    n = int(hist0.sum())
    if n == 0:
        raise ValueError("quantile_edges needs at least one score; the chunks held none")
    q = np.linspace(0.0, 1.0, n_bins + 1)
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above] = n - 1
    nxt[above] = n - 1
    gamma = virtual - np.where(above, -1.0, prev)  # as numpy: the index of the last element is -1 there
    ranks = sorted({int(k) for k in np.concatenate([prev, nxt])})
    # per wanted rank: the bits found so far, how many levels they cover, the rank within that group
    state = {k: [0, 0, k] for k in ranks}
    value: dict[int, float] = {}
    hists: dict[int, NDArray[np.integer]] = {0: hist0}
    level = 0
    while len(value) < len(ranks):
        for k, st in state.items():  # descend one digit with the histograms of this level
            if k in value or st[1] != level:
                continue
            h = hists[st[0]]
            cum = np.cumsum(h)
            d = int(np.searchsorted(cum, st[2], side="right"))
            st[2] -= int(cum[d - 1]) if d else 0
            st[0] = (st[0] << _DIGIT) | d
            st[1] = level + 1
            if st[1] == 64 // _DIGIT:
                value[k] = float(np.array([st[0]], dtype=np.uint64).view(np.float64)[0])
        level += 1
        open_ = sorted({st[0] for k, st in state.items() if k not in value})
        if not open_:
            break
        if sum(_group_sizes(state, value, hists).values()) <= _COLLECT:
            groups = run_pass(level, tuple(open_), True)
            for pre, vals in zip(open_, groups, strict=True):
                srt = np.sort(vals.view(np.float64))
                for k, st in state.items():
                    if k not in value and st[0] == pre:
                        value[k] = float(srt[st[2]])
            break
        new = run_pass(level, tuple(open_), False)
        hists = dict(zip(open_, new, strict=True))
    a = np.array([value[int(i)] for i in prev])
    b = np.array([value[int(i)] for i in nxt])
    return _lerp(a, b, gamma)


def _group_sizes(
    state: dict[int, list[int]], value: dict[int, float], hists: dict[int, NDArray[np.integer]]
) -> dict[int, int]:
    """Size of every open prefix group, read off the histograms of the level just resolved."""
    sizes: dict[int, int] = {}
    for k, st in state.items():
        if k in value:
            continue
        parent, digit = st[0] >> _DIGIT, st[0] & 0xFFFF
        sizes[st[0]] = int(hists[parent][digit]) if parent in hists else 0
    return sizes


def chunk_probabilities(chunk: Chunk) -> NDArray[np.float64]:
    """The probabilities of a chunk (a RankedLists or a ``(probs, labels)`` tuple), shape (n_pairs,)."""
    if isinstance(chunk, tuple):
        if len(chunk) != 2:
            raise ValueError(f"a chunk tuple must be (scores, labels); got {len(chunk)} items")
        return as_pairs(chunk[0], chunk[1])[0]
    return as_pairs(chunk, None)[0]


def reiterable(chunks: Callable[[], Iterable[T]] | Iterable[T]) -> Callable[[], Iterable[T]]:
    """A function returning a fresh iterator over ``chunks`` (a callable, or a list or tuple)."""
    if callable(chunks):
        return chunks
    if isinstance(chunks, (list, tuple)):
        items = chunks
        return lambda: iter(items)
    raise ValueError(
        "equal-mass bins need the chunks twice (the quantile edges first): pass a function that returns "
        "a new iterator over them (e.g. lambda: read_scored_pairs(path)) or a list"
    )


def quantile_edges(
    chunks: Callable[[], Iterable[Chunk]] | list[Chunk] | tuple[Chunk, ...], *, n_bins: int = 10
) -> NDArray[np.float64]:
    """The equal-mass bin edges of all the scores in ``chunks``, exactly, in constant memory.

    Equal, bit for bit, to ``numpy.quantile(p, numpy.linspace(0, 1, n_bins
    + 1))`` on all the probabilities at once (the edges of
    ``strategy="quantile"``), found by a radix selection over the float64
    bit patterns: one pass counts the top 16 bits, each further pass the
    next 16 bits of the groups that hold a wanted order statistic, and once
    those groups hold at most about a million scores they are gathered and
    sorted. Three passes over the chunks on most data, five at most.

    Parameters
    ----------
    chunks : callable or list
        A function returning a new iterable of chunks on each call (e.g.
        ``lambda: read_scored_pairs(path)``), or a list of chunks. A chunk is
        a RankedLists (probabilities as scores), or a ``(probs, labels)``
        tuple.
    n_bins : int
        Number of bins, ``>= 1``.

    Returns
    -------
    ndarray of shape (n_bins + 1,)

    Raises
    ------
    ValueError
        For a one-shot iterator (it cannot be read twice), or no scores.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.random.default_rng(0).random(1000)
    >>> chunks = [(p[i:i + 100], np.zeros(100, dtype=int)) for i in range(0, 1000, 100)]
    >>> bool((quantile_edges(chunks, n_bins=4) == np.quantile(p, np.linspace(0, 1, 5))).all())
    True
    """
    c = check_positive_int(n_bins, "n_bins", maximum=MAX_BINS)
    source = reiterable(chunks)

    def run_pass(level: int, prefixes: tuple[int, ...], collect: bool) -> PassResult:
        acc: PassResult | None = None
        for chunk in source():
            part = select_pass(float_bits(chunk_probabilities(chunk)), level, prefixes, collect)
            acc = part if acc is None else combine_pass(acc, part, collect)
        if acc is None:
            raise ValueError("quantile_edges needs at least one score; the chunks held none")
        return acc

    return exact_quantiles(run_pass, c)
