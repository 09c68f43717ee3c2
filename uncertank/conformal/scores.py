"""Conformity scores: the one number per (query, candidate) pair that a calibration thresholds.

Higher means more likely relevant, as a ranker's scores do. The user
chooses the score; every choice is computed vectorised over the flat pairs,
and the lists keep the CSR ``offsets`` of what was scored:

- ``"score"``: a deterministic ranker's scores as they are
  (:class:`~uncertank.Predictions`, :class:`~uncertank.RankedLists`, or a
  dense array of shape (n_queries, n_candidates)): probabilities or raw
  scores alike;
- ``"mean"``: a stochastic ranker's predictive mean (the mean of its
  :class:`~uncertank.PredictiveSamples` over the draws);
- ``"quantile"``: the ``quantile``-th quantile of its draws (a low quantile
  is a pessimistic score: a candidate that is sometimes scored low ranks
  lower);
- ``"lower"``: the mean minus ``k_std`` predictive standard deviations (a
  lower confidence bound).

``"auto"`` is ``"score"`` for a deterministic ranker and ``"mean"`` for a
stochastic one. :func:`conformity_scores` returns the scores as
:class:`~uncertank.Predictions` (``probabilistic`` when they lie in
[0, 1]); :func:`labelled_scores` pairs them with labels as
:class:`~uncertank.RankedLists`, the calibration data every procedure of
:mod:`uncertank.conformal` reads.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from uncertank._types import Predictions, PredictiveSamples, QuerySet, RankedLists
from uncertank.validation import as_float_array, as_label_array, check_choice, check_unit_interval

__all__ = ["SCORES", "Score", "conformity_scores", "labelled_scores", "resolve_score"]

Score = Literal["auto", "score", "mean", "quantile", "lower"]
#: The conformity scores by name.
SCORES: tuple[str, ...] = ("auto", "score", "mean", "quantile", "lower")


def _in_unit(x: NDArray[np.float64]) -> bool:
    return bool(x.size) and float(x.min()) >= 0.0 and float(x.max()) <= 1.0


def resolve_score(predictions: object, score: str) -> str:
    """The concrete score ``score`` names for ``predictions`` (``"auto"`` resolved), or raise."""
    check_choice(score, "score", SCORES)
    stochastic = isinstance(predictions, PredictiveSamples)
    if score == "auto":
        return "mean" if stochastic else "score"
    if stochastic and score == "score":
        raise ValueError(
            "score='score' needs one score per pair (Predictions, RankedLists or an array); "
            "for PredictiveSamples choose 'mean', 'quantile' or 'lower'"
        )
    if not stochastic and score != "score":
        raise ValueError(
            f"score={score!r} needs a stochastic ranker's PredictiveSamples; got {type(predictions).__name__} "
            "(use score='score' or 'auto')"
        )
    return score


def conformity_scores(
    predictions: Predictions | PredictiveSamples | RankedLists | ArrayLike,
    *,
    score: Score = "auto",
    quantile: float = 0.1,
    k_std: float = 1.0,
) -> Predictions:
    """The conformity score of every pair, with the offsets of its lists.

    Parameters
    ----------
    predictions : Predictions, PredictiveSamples, RankedLists or array of shape (n_queries, n_candidates)
        What a ranker returned (a dense array is taken as equal-length lists).
    score : {"auto", "score", "mean", "quantile", "lower"}
        See the module notes.
    quantile : float
        The quantile of the draws for ``score="quantile"``, in [0, 1].
    k_std : float
        Standard deviations subtracted from the mean for ``score="lower"``,
        ``>= 0``.

    Returns
    -------
    Predictions
        ``scores`` of shape (n_pairs,), the same ``offsets``;
        ``probabilistic`` when every score lies in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from uncertank import PredictiveSamples
    >>> ps = PredictiveSamples(np.array([[0.2, 0.9], [0.4, 0.5]]), np.array([0, 2]))
    >>> conformity_scores(ps).scores.tolist()
    [0.30000000000000004, 0.7]
    >>> conformity_scores(ps, score="lower", k_std=1.0).scores.round(2).tolist()
    [0.2, 0.5]
    """
    name = resolve_score(predictions, score)
    if isinstance(predictions, PredictiveSamples):
        if name == "mean":
            s = np.asarray(predictions.mean(), dtype=np.float64)
        elif name == "quantile":
            q = check_unit_interval(quantile, "quantile", closed="both")
            s = np.quantile(predictions.samples, q, axis=0)
        else:
            if isinstance(k_std, bool) or not isinstance(k_std, (int, float)) or not k_std >= 0.0:
                raise ValueError(f"k_std must be a number >= 0; got {k_std!r}")
            s = predictions.mean() - float(k_std) * predictions.std()
        return Predictions(s, predictions.offsets, ranker=predictions.ranker, probabilistic=_in_unit(s))
    if isinstance(predictions, Predictions):
        return predictions
    if isinstance(predictions, RankedLists):
        s = predictions.scores
        return Predictions(s, predictions.offsets, probabilistic=_in_unit(s))
    if isinstance(predictions, (QuerySet, str, bytes)) or not hasattr(predictions, "__len__"):
        raise TypeError(
            "predictions must be Predictions, PredictiveSamples, RankedLists or an array of shape "
            f"(n_queries, n_candidates); got {type(predictions).__name__}"
        )
    arr = as_float_array(predictions, "predictions", ndim=2)
    n_q, width = arr.shape
    offsets = np.arange(0, n_q * width + 1, width, dtype=np.int64)
    flat = arr.ravel()
    return Predictions(flat, offsets, probabilistic=_in_unit(flat))


def labelled_scores(
    predictions: Predictions | PredictiveSamples | RankedLists | ArrayLike,
    labels: ArrayLike | QuerySet | None = None,
    *,
    score: Score = "auto",
    quantile: float = 0.1,
    k_std: float = 1.0,
) -> RankedLists:
    """Conformity scores with their labels: the calibration data of every procedure here.

    Parameters
    ----------
    predictions : Predictions, PredictiveSamples, RankedLists or array of shape (n_queries, n_candidates)
        As for :func:`conformity_scores`.
    labels : array of shape (n_pairs,) or (n_queries, n_candidates), labelled QuerySet, or None
        Relevance labels (``> 0`` is relevant); None when ``predictions``
        is a RankedLists, which carries its own.
    score, quantile, k_std
        As for :func:`conformity_scores`.

    Returns
    -------
    RankedLists
        The conformity scores, labels and offsets (and the ids of a
        RankedLists).

    Examples
    --------
    >>> r = labelled_scores([[0.9, 0.2], [0.4, 0.6]], [[1, 0], [0, 1]])
    >>> r.n_queries, r.labels.tolist()
    (2, [1, 0, 0, 1])
    """
    if isinstance(predictions, RankedLists):
        if labels is not None:
            raise ValueError(
                f"labels must be None when predictions is a RankedLists (it carries its labels); "
                f"got {type(labels).__name__}"
            )
        if resolve_score(predictions, score) == "score":
            return predictions
    if labels is None:
        raise ValueError(
            "labels are required: an array of shape (n_pairs,), or the labelled QuerySet that was scored"
        )
    scored = conformity_scores(predictions, score=score, quantile=quantile, k_std=k_std)
    if isinstance(labels, QuerySet):
        return scored.ranked(labels)
    lab = as_label_array(labels, "labels", ndim=(1, 2))
    return RankedLists(scored.scores, lab.ravel(), scored.offsets)
