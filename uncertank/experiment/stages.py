"""The data a study's stages pass on: its query sets (stage 1) and each ranker's scores (stage 3).

Defined apart from :mod:`uncertank.experiment.runner`, which produces them,
so that the stages consuming them (:mod:`uncertank.experiment.decisions`,
:mod:`uncertank.experiment.systems`) import them without importing the
runner; with them, how a stage names and keys the files it caches
(:func:`file_stem`, :func:`digest`), and the keys of a ranker's steps
(:func:`fit_key`, :func:`unfitted_key`), which the run and the dry run's
plan compute alike.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import numpy as np

from uncertank import PredictiveSamples, QuerySet, __version__
from uncertank.experiment.config import RankerConfig
from uncertank.files import json_digest
from uncertank.validation import check_instance, check_name

__all__ = ["RankerPrediction", "StudyData", "digest", "file_stem", "fit_key", "unfitted_key"]


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


# -- the keys of a ranker's cached steps ---------------------------------------------------------------------------


def _plugin_version(name: str) -> str:
    from uncertank.plugins import registry

    info = registry("rankers").get(name)
    return "" if info is None else f"{info.distribution} {info.version}"


def _ranker_code(name: str) -> str:
    """The code a ranker's outputs depend on: its plugin's version and source, and uncertank.nn's source.

    Editing a plugin's files (an editable install included) or the shared
    neural machinery changes the digest, so a study recomputes that ranker's
    steps instead of reusing stale ones.
    """
    from uncertank.plugin_sources import plugin_source_digest

    nn_dir = Path(__file__).resolve().parents[1] / "nn"
    nn_src = [f"{f.name}:{hashlib.sha256(f.read_bytes()).hexdigest()}" for f in sorted(nn_dir.glob("*.py"))]
    return digest([_plugin_version(name), plugin_source_digest("rankers", name), nn_src])


def _model_key(rc: RankerConfig, data: StudyData, upstream: str | None) -> str:
    from uncertank.files import folder_digest

    if rc.checkpoint is not None:  # what was loaded, not what it was trained on
        return digest([rc.name, rc.params, "checkpoint", folder_digest(rc.checkpoint), __version__,
                       _ranker_code(rc.name)])
    pretrained = rc.pretrained
    weights = None if pretrained is None else [
        folder_digest(f) for f in ([pretrained] if isinstance(pretrained, str) else pretrained)
    ]
    return digest([rc.name, rc.params, data.digests["train"], data.digests["valid"], upstream,
                   __version__, _ranker_code(rc.name), *(["pretrained", weights] if weights else [])])


def fit_key(rc: RankerConfig, data: StudyData, upstream: str | None) -> str:
    """The key of the ``fit`` (or ``load``) step of ``rc`` on ``data``; ``upstream`` is its ``init_from``'s key.

    The name of its folder under ``models/`` and the start of its
    predictions' keys (what ``uncertank run --dry-run`` looks for).
    """
    check_instance(rc, "rc", RankerConfig)
    check_instance(data, "data", StudyData)
    if upstream is not None:
        check_name(upstream, "upstream")
    return _model_key(rc, data, upstream)


def unfitted_key(rc: RankerConfig) -> str:
    """What stands for the fit key in the predictions' keys of a ranker without ``fit`` (name, params, code)."""
    check_instance(rc, "rc", RankerConfig)
    return digest([rc.name, rc.params, __version__, _ranker_code(rc.name)])
