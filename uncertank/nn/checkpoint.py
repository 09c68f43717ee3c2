"""Checkpoints: weights as safetensors, settings as JSON, written atomically.

A checkpoint is a folder::

    uncertank.json      what to rebuild: format, registered ranker name, its parameters
    model.safetensors   the CrossEncoderModel's state dict
    backbone/           the encoder's transformers config
    tokenizer/          the tokenizer, [U] and [T] included

A new folder is first written next to its destination under a temporary
name and then moved into place with :func:`os.replace`, so a reader never
sees a half-written checkpoint. An existing folder is written into only when
it is empty or holds an earlier model this library saved there, or with
``overwrite=True``; then only the checkpoint's own entries are replaced, one
rename each, the manifest last, and every other file in the folder is left
as it is (:mod:`uncertank._folders`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch

from uncertank._folders import MANIFEST, model_folder
from uncertank.validation import check_instance, check_path

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "FORMAT",
    "atomic_directory",
    "load_model",
    "load_weights",
    "read_manifest",
    "save_model",
    "write_manifest",
]

FORMAT = "uncertank.nn/1"


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield an empty temporary folder whose entries are written into ``path`` when the block succeeds.

    ``path`` must not exist, be empty, or hold only a model this library
    saved there earlier (a checkpoint with its manifest, a
    ``save_pretrained`` folder, a study's ``save_to`` copy); any other
    folder is refused with :class:`uncertank.FolderInUseError` before the
    block runs, unless ``overwrite`` is true. The entries written replace
    their namesakes, the earlier model's own entries not written again are
    removed, and nothing else in ``path`` is touched: a user's files stay.
    The manifest (``uncertank.json``) is replaced last. On error the
    temporary folder is removed and ``path`` is left as it was.

    Raises
    ------
    ValueError
        When ``path`` is a file.
    uncertank.FolderInUseError
        When ``path`` holds files the library did not write and
        ``overwrite`` is false.
    """
    with model_folder(path, overwrite=overwrite, last=(MANIFEST,)) as tmp:
        yield tmp


def save_model(
    folder: Path, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, manifest: Mapping[str, object]
) -> None:
    """Write ``model``, ``tokenizer`` and ``manifest`` into ``folder`` (which exists).

    ``model``'s whole state dict (parameters and persistent buffers) goes to
    ``model.safetensors``, ``model.encoder``'s config to ``backbone/``.
    """
    check_path(folder, "folder")
    check_instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    check_instance(manifest, "manifest", Mapping, "a mapping of JSON values")
    from safetensors.torch import save_file

    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": FORMAT})
    config = getattr(getattr(model, "encoder", None), "config", None)  # a transformers config
    save_config = getattr(config, "save_pretrained", None)
    if not callable(save_config):
        raise TypeError(
            f"model must have a transformers encoder (model.encoder.config); got {type(model).__name__}"
        )
    save_config(str(folder / "backbone"))
    tokenizer.save_pretrained(str(folder / "tokenizer"))
    write_manifest(folder, manifest)


def write_manifest(folder: Path, manifest: Mapping[str, object]) -> None:
    """Write ``manifest`` (JSON values) as the manifest of the checkpoint ``folder``, with the format.

    For composite checkpoints (an ensemble's folder of member folders); a
    single model's :func:`save_model` calls it. The manifest should carry
    ``"ranker"``, the registered ranker name that :func:`uncertank.nn.load_ranker` resolves.
    """
    check_path(folder, "folder")
    check_instance(manifest, "manifest", Mapping, "a mapping of JSON values")
    with open(Path(folder) / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump({**manifest, "format": FORMAT}, fh, indent=2, sort_keys=True)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of the checkpoint folder ``path``.

    Raises
    ------
    ValueError
        When ``path`` is not a checkpoint of this format.
    """
    check_path(path, "path")
    file = Path(path) / MANIFEST
    if not file.is_file():
        raise ValueError(f"path must be a checkpoint folder written by save(); {str(path)!r} has no {MANIFEST}")
    with open(file, encoding="utf-8") as fh:
        manifest: dict[str, Any] = json.load(fh)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"checkpoint {str(path)!r} has format {manifest.get('format')!r}; expected {FORMAT!r}")
    return manifest


def load_model(
    folder: str | os.PathLike[str], *, make_model: Callable[[torch.nn.Module], torch.nn.Module] | None = None
) -> tuple[torch.nn.Module, PreTrainedTokenizerBase]:
    """Rebuild the model and tokenizer saved in ``folder``.

    Parameters
    ----------
    folder : str or path
        A checkpoint folder written by :func:`save_model`.
    make_model : callable, optional
        ``make_model(encoder) -> nn.Module`` builds the network around the
        encoder before the saved weights (and buffers) are loaded into it,
        strictly; :class:`CrossEncoderModel` by default.

    Returns
    -------
    model : nn.Module
        In eval mode.
    tokenizer : transformers tokenizer
    """
    check_path(folder, "folder")
    from transformers import AutoConfig

    from uncertank.nn.model import CrossEncoderModel, build_backbone

    folder = Path(folder)
    try:
        config = AutoConfig.from_pretrained(str(folder / "backbone"), local_files_only=True)
    except Exception as exc:  # transformers' OSError or ValueError: no readable backbone/config.json
        detail = " ".join(str(exc).split())[:300]
        raise ValueError(
            f"folder must be a checkpoint folder written by save_model (with backbone/config.json); "
            f"{str(folder)!r} could not be read ({type(exc).__name__}: {detail})"
        ) from exc
    encoder, tokenizer = build_backbone(config, tokenizer=folder / "tokenizer")
    model = (make_model or CrossEncoderModel)(encoder)
    load_weights(model, folder / "model.safetensors")
    model.eval()
    return model, tokenizer


def load_weights(model: torch.nn.Module, file: str | os.PathLike[str]) -> None:
    """Load the safetensors ``file`` into ``model``, strictly, naming the file in every error.

    Raises
    ------
    FileNotFoundError
        When ``file`` does not exist.
    ValueError
        When ``file`` is not a readable safetensors file (truncated or
        corrupt), or its tensors do not fit the network its configuration
        describes (missing or unexpected names, other shapes).
    """
    check_instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    check_path(file, "file")
    from safetensors.torch import load_file

    path = Path(file)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint weights {str(path)!r} do not exist")
    try:
        state = load_file(str(path))
    except Exception as err:  # safetensors raises its own error type for a bad header or a short file
        raise ValueError(
            f"checkpoint weights {str(path)!r} are not a readable safetensors file ({err}); the file is "
            "truncated or corrupt: save the model again"
        ) from None
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        detail = " ".join(str(err).split())
        raise ValueError(
            f"checkpoint weights {str(path)!r} do not fit the network its configuration describes: {detail}"
        ) from None


def accepts_param(cls: type, name: str) -> bool:
    """Whether ``cls(name=...)`` is accepted: a named parameter, or ``**params`` passed on up."""
    import inspect

    params = inspect.signature(cls).parameters
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def checkpoint_params(cls: type, path: str | os.PathLike[str], manifest: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments of ``cls`` that rebuild the ranker of a checkpoint's ``manifest``.

    The stored parameters and the extra ones ``cls`` accepts; a pretrained
    model is rebuilt from the checkpoint's own config and tokenizer.
    """
    params = {k: v for k, v in manifest["params"].items() if k not in ("name", "negatives")}
    extra = {k: v for k, v in manifest.get("extra", {}).items() if accepts_param(cls, k)}
    if params.get("pretrained") is not None:
        params["pretrained"] = str(Path(path) / "backbone")
        params["tokenizer"] = str(Path(path) / "tokenizer")
    return {**params, **extra}


class _Manifested(Protocol):
    """What :func:`ranker_manifest` reads of a :class:`~uncertank.nn.NeuralRanker` (no import: a circle)."""

    name: str

    @property
    def history_(self) -> object | None: ...

    @property
    def weights_source_(self) -> str | None: ...

    def saved_params(self) -> dict[str, object]: ...

    def extra_params(self) -> dict[str, object]: ...


def ranker_manifest(ranker: _Manifested) -> dict[str, object]:
    """What a checkpoint records of a neural ranker: its registered name, class, parameters and history."""
    from dataclasses import asdict

    cls = type(ranker)
    return {
        "ranker": cls.name,
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "params": ranker.saved_params(),
        "extra": ranker.extra_params(),
        "history": None if ranker.history_ is None else asdict(ranker.history_),  # type: ignore[call-overload]
        # where the weights came from ("fit", "warm_start", "pretrained", "load"); None only for a ranker
        # never fitted, which save refuses (a ranker sharing a fitted one's weights has its history)
        "weights": ranker.weights_source_ or ("fit" if ranker.history_ is not None else None),
    }
