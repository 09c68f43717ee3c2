"""A ranker from a folder: a user's Hugging Face or sentence-transformers classifier, or any checkpoint.

:func:`from_pretrained` builds a ranker on a user's folder: by default the
core's own cross-encoder (:class:`~uncertank.nn.NeuralRanker`), which scores
the model as it is with no plugin installed, or the registered ranker it is
given (``make_ranker(name, pretrained=folder)``); :func:`load_ranker` reads
any checkpoint through the ranker registry (or a plain Hugging Face folder).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from uncertank._folders import MANIFEST
from uncertank.nn.checkpoint import read_manifest
from uncertank.nn.ranker import NeuralRanker
from uncertank.protocols import Ranker, capabilities
from uncertank.validation import check_path

__all__ = ["from_pretrained", "load_ranker"]

#: A model folder, or several (a ranker that takes a list of folders, e.g. an ensemble of the user's own).
_Folders = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


@overload
def from_pretrained(path: str | os.PathLike[str], ranker: None = None, **params: Any) -> NeuralRanker: ...
@overload
def from_pretrained(path: _Folders, ranker: str, **params: Any) -> Ranker: ...
def from_pretrained(path: _Folders, ranker: str | None = None, **params: Any) -> Ranker:
    """A user's trained cross-encoder folder as a ranker, without training.

    With ``ranker=None`` (the default), :class:`~uncertank.nn.NeuralRanker`,
    the cross-encoder the core ships: the model keeps its own classification
    head and scores as it is, dropout off, whatever plugins are installed
    (or none). With the name of a registered neural ranker,
    ``make_ranker(ranker, pretrained=path, **params)``: each plugin's page
    says what it adds (MC dropout's T passes, an ensemble of the user's own
    folders, a post-hoc head that :meth:`~NeuralRanker.fit` trains on the
    frozen encoder, ...).

    Parameters
    ----------
    path : str, path, or list of them
        A local folder holding ``AutoModelForSequenceClassification`` weights
        and its tokenizer (``save_pretrained``, or sentence-transformers'
        ``CrossEncoder.save``); a list for a ranker that takes several.
    ranker : str, optional
        A registered neural ranker (``uncertank plugins``); None for
        :class:`~uncertank.nn.NeuralRanker`.
    **params
        The ranker's parameters: ``pair_format`` (:class:`~uncertank.nn.PairFormat`),
        ``max_length``, ``activation``, ``device``, ...

    Returns
    -------
    NeuralRanker or Ranker
        :class:`~uncertank.nn.NeuralRanker` when ``ranker`` is None; else
        the :class:`~uncertank.Ranker` that :func:`uncertank.make_ranker`
        builds and checks (narrow it with ``isinstance`` to use more, as
        there).

    Examples
    --------
    >>> scorer = from_pretrained("my-cross-encoder")  # doctest: +SKIP
    >>> scorer.predict(test).scores  # doctest: +SKIP
    """
    if ranker is None:
        if not isinstance(path, (str, os.PathLike)):  # NeuralRanker's own refusal, said for one folder
            raise TypeError(f"pretrained must be a local model folder (a path); got {type(path).__name__}")
        return NeuralRanker(pretrained=path, **params)
    from uncertank.plugins import make_ranker

    return make_ranker(ranker, pretrained=path, **params)


def load_ranker(path: str | os.PathLike[str], **overrides: Any) -> Ranker:
    """Load any checkpoint through the ranker registry.

    A folder without a manifest but with a Hugging Face ``config.json`` (a
    user's own classifier) loads with :func:`from_pretrained`, as the core's
    :class:`~uncertank.nn.NeuralRanker`.

    The manifest's ``ranker`` entry names a registered ranker
    (``uncertank plugins``); its factory gives the class, whose ``load``
    rebuilds the checkpoint. A checkpoint of the core's own
    :class:`~uncertank.nn.NeuralRanker` (``"cross-encoder"``) loads with it
    when no plugin registers that name. Nothing the manifest names is
    imported: a checkpoint is data, and only installed, registered plugins
    run.

    Parameters
    ----------
    path : str or path
        A checkpoint folder written by a ranker's ``save``.
    **overrides
        Passed to the class's ``load`` (``device=...``).

    Returns
    -------
    Ranker
        The loaded ranker (narrow it with ``isinstance`` against the
        capabilities of :mod:`uncertank.protocols` to use more).

    Raises
    ------
    ValueError
        When the manifest names no ranker, or one that no installed plugin
        registers (the message lists the registered names).
    TypeError
        When the registered class has no ``load``, or its ``load`` returns
        something that is not a :class:`~uncertank.Ranker`.
    """
    check_path(path, "path")
    from uncertank.plugins import registry

    if not (Path(path) / MANIFEST).is_file() and (Path(path) / "config.json").is_file():
        plain: Ranker = from_pretrained(path, **overrides)  # a "ranker" among the overrides picks the class
        return plain
    manifest = read_manifest(path)
    name = manifest.get("ranker")
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"checkpoint {str(path)!r} records no registered ranker name (its manifest has no 'ranker' "
            "entry); load it with the ranker class's own load(), e.g. NeuralRanker.load(path)"
        )
    rankers = registry("rankers")
    if name == NeuralRanker.name and name not in rankers:
        return NeuralRanker.load(path, **overrides)
    if name not in rankers:
        known = ", ".join(sorted(rankers)) or "(none)"
        raise ValueError(
            f"checkpoint {str(path)!r} was written by ranker {name!r}, which no installed plugin "
            f"registers; known rankers: {known}. Install the plugin that provides it (nothing "
            "named in a checkpoint is imported)."
        )
    factory = rankers[name].factory
    cls = factory if isinstance(factory, type) else type(factory(**_init_params(manifest)))
    load = getattr(cls, "load", None)
    if not callable(load):
        raise TypeError(f"ranker {name!r} ({cls.__qualname__}) has no load(path) classmethod")
    loaded: Ranker = load(path, **overrides)
    if not capabilities(loaded).is_ranker:
        raise TypeError(f"ranker {name!r}: {cls.__qualname__}.load returned a {type(loaded).__name__}, which is not "
                        "an uncertank.Ranker (a str name and predict(queries))")
    return loaded


def _init_params(manifest: dict[str, Any]) -> dict[str, Any]:
    """The constructor parameters a checkpoint records (to build a throwaway instance)."""
    params = {k: v for k, v in manifest.get("params", {}).items() if k not in ("negatives",)}
    return {**params, **manifest.get("extra", {})}
