"""A ranker from a folder: a user's Hugging Face or sentence-transformers classifier, or any checkpoint.

:func:`from_pretrained` builds the registered ranker on a user's folder
(``make_ranker(name, pretrained=folder)``); :func:`load_ranker` reads any
checkpoint through the ranker registry (or a plain Hugging Face folder).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from uncertank._folders import MANIFEST
from uncertank.nn.checkpoint import read_manifest

__all__ = ["from_pretrained", "load_ranker"]


def from_pretrained(path: Any, ranker: str = "bert", **params: Any) -> Any:
    """A user's trained cross-encoder folder as the registered ranker ``ranker``, without training.

    ``make_ranker(ranker, pretrained=path, **params)``: with ``"bert"`` (the
    default) the model scores as it is; ``"mc_dropout"`` adds T passes with
    dropout on at every site; ``"ensemble"`` takes a list of folders (the
    user's own seeds or fine-tunes); ``"sngp"``, ``"gpf_bert"`` and
    ``"pgdrr"`` put a post-hoc GP head on the frozen encoder, which
    :meth:`~NeuralRanker.fit` trains on a labelled set.

    Parameters
    ----------
    path : str, path, or list of them
        A local folder holding ``AutoModelForSequenceClassification`` weights
        and its tokenizer (``save_pretrained``, or sentence-transformers'
        ``CrossEncoder.save``); a list for ``"ensemble"``.
    ranker : str
        A registered neural ranker (``uncertank plugins``).
    **params
        The ranker's parameters: ``pair_format`` (:class:`~uncertank.nn.PairFormat`),
        ``max_length``, ``activation``, ``device``, ``n_passes``, ...

    Examples
    --------
    >>> scorer = from_pretrained("my-cross-encoder")  # doctest: +SKIP
    >>> scorer.predict(test).scores  # doctest: +SKIP
    """
    from uncertank.plugins import make_ranker

    return make_ranker(ranker, pretrained=path, **params)


def load_ranker(path: str | os.PathLike[str], **overrides: Any) -> Any:
    """Load any checkpoint through the ranker registry.

    A folder without a manifest but with a Hugging Face ``config.json`` (a
    user's own classifier) loads with :func:`from_pretrained` as ``bert``.

    The manifest's ``ranker`` entry names a registered ranker
    (``uncertank plugins``); its factory gives the class, whose ``load``
    rebuilds the checkpoint. Nothing the manifest names is imported: a
    checkpoint is data, and only installed, registered plugins run.

    Parameters
    ----------
    path : str or path
        A checkpoint folder written by a ranker's ``save``.
    **overrides
        Passed to the class's ``load`` (``device=...``).

    Raises
    ------
    ValueError
        When the manifest names no ranker, or one that no installed plugin
        registers (the message lists the registered names).
    """
    from uncertank.plugins import registry

    if not (Path(path) / MANIFEST).is_file() and (Path(path) / "config.json").is_file():
        return from_pretrained(path, **overrides)
    manifest = read_manifest(path)
    name = manifest.get("ranker")
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"checkpoint {str(path)!r} records no registered ranker name (its manifest has no 'ranker' "
            "entry); load it with the ranker class's own load(), e.g. NeuralRanker.load(path)"
        )
    rankers = registry("rankers")
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
    return load(path, **overrides)


def _init_params(manifest: dict[str, Any]) -> dict[str, Any]:
    """The constructor parameters a checkpoint records (to build a throwaway instance)."""
    params = {k: v for k, v in manifest.get("params", {}).items() if k not in ("negatives",)}
    return {**params, **manifest.get("extra", {})}
