"""The data a study's stages pass on: its query sets (stage 1) and each ranker's scores (stage 3).

Defined apart from :mod:`uncertank.experiment.runner`, which produces them,
so that the stages consuming them (:mod:`uncertank.experiment.decisions`,
:mod:`uncertank.experiment.systems`) import them without importing the
runner; with them, how a stage names and keys the files it caches
(:func:`file_stem`, :func:`digest`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from uncertank import PredictiveSamples, QuerySet
from uncertank.files import json_digest
from uncertank.validation import check_name

__all__ = ["RankerPrediction", "StudyData", "digest", "file_stem"]


@dataclass
class StudyData:
    """The query sets of a study and the digests of their content.

    Attributes
    ----------
    train, valid : QuerySet
        Where the rankers learn and where ``b`` and the recalibrators are fitted.
    tests : dict
        Condition name -> test QuerySet.
    digests : dict
        ``"train"``, ``"valid"`` and each condition name -> content digest.
    """

    train: QuerySet
    valid: QuerySet
    tests: dict[str, QuerySet]
    digests: dict[str, str] = field(default_factory=dict)


@dataclass
class RankerPrediction:
    """A ranker's output on one query set of a study (what :func:`predict_all` gives per ranker and split).

    Attributes
    ----------
    mean : ndarray of shape (n_pairs,)
        The scores (the mean over samples for a stochastic ranker).
    samples : PredictiveSamples or None
        Joint draws, for a stochastic ranker.
    probabilistic : bool
        The ranker's own claim that its scores are P(relevant).
    """

    mean: np.ndarray
    samples: PredictiveSamples | None
    probabilistic: bool


class LoadOptions(TypedDict, total=False):
    """The options :func:`uncertank.datasets.load` gets for a split beside its name, negatives and seed."""

    max_queries: int
    max_context_turns: int


def file_stem(name: str) -> str:
    """``name`` as a piece of a file name (anything but letters, digits, ``-_.`` becomes ``-``)."""
    check_name(name, "name")
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)


def digest(obj: object) -> str:
    """A short key (16 hex digits of SHA-256 over canonical JSON) for a cached step's file name."""
    return json_digest(obj)[:16]
