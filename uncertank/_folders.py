"""Model folders the library writes: what in a folder is its own, and replacing only that.

A model is saved (``save``, ``save_pretrained``, a study's ``save_to``)
into a new folder, an empty one, or one that holds only what this library
wrote there for an earlier model. Any other folder is refused with
:class:`FolderInUseError` before anything is written, unless the caller
passes ``overwrite=True``; even then only the entries the new model
consists of, and those the library recorded of the earlier one, are
replaced. Nothing else in the folder is touched, so a user's files (and a
model folder beneath it that a ranker was loaded from) survive byte for byte.

What the library recognises as its own in a folder (:func:`library_entries`):

- a checkpoint of ``save``: the manifest ``uncertank.json`` (a format
  ``uncertank.*``), with ``model.safetensors``, ``backbone/``,
  ``tokenizer/`` and an ensemble's ``member_<i>/``;
- a Hugging Face folder of ``save_pretrained``: ``uncertank-export.json``
  and the files it lists;
- a study's ``save_to`` copy: ``uncertank-study.json`` and the files it lists;
- the temporary entries of an interrupted save (``.uncertank-*.tmp``).

:func:`model_folder` writes a folder. A new one is written beside its
destination and renamed into place; into an existing one (the current
directory included) the model is written to a temporary folder inside it,
and then each entry is renamed over its earlier version, the manifest
last. A failure leaves the folder as it was and no temporary entry behind.
A new folder gets the mode ``mkdir`` gives (the user's umask: 0755 under
0022), not the 0700 of a bare ``tempfile.mkdtemp``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from uncertank.files import temporary_folder
from uncertank.validation import check_name, check_names, check_path

__all__ = [
    "EXPORT_RECORD",
    "MANIFEST",
    "STUDY_RECORD",
    "FolderInUseError",
    "check_save_folder",
    "foreign_entries",
    "library_entries",
    "model_folder",
    "write_export_record",
]

#: The manifest of a checkpoint written by ``save``.
MANIFEST = "uncertank.json"
#: The record of a Hugging Face folder written by ``save_pretrained``: the files it wrote.
EXPORT_RECORD = "uncertank-export.json"
EXPORT_FORMAT = "uncertank.export/1"
#: The record of a study's ``save_to`` copy: the fit step's key, the label, the files it wrote.
STUDY_RECORD = "uncertank-study.json"

_CHECKPOINT_NAMES = frozenset({MANIFEST, "model.safetensors", "backbone", "tokenizer"})
_MEMBER = re.compile(r"member_\d+")
_TEMPORARY = re.compile(r"\.uncertank-.+\.tmp")
_SHOWN = 5


#: What a pickled FolderInUseError is rebuilt from: its folder, its foreign entries and its remedy.
_Arguments = tuple[Path, tuple[str, ...], str | None]


class FolderInUseError(FileExistsError):
    """A save refused: the folder holds files this library did not write there.

    Raised before anything is written. A model is saved into a new folder,
    an empty one, or one holding only an earlier model this library wrote;
    ``overwrite=True`` writes into any folder but replaces only the model's
    own files.

    Attributes
    ----------
    folder : pathlib.Path
        The folder refused.
    foreign : tuple of str
        Its entries the library did not write (a folder's name ends with ``/``).
    remedy : str or None
        What the message tells the user to do, when not the default
        (another folder, or ``overwrite=True``).
    """

    def __init__(self, folder: str | os.PathLike[str], foreign: Collection[str], *, remedy: str | None = None) -> None:
        self.folder = check_path(folder, "folder")
        self.foreign = tuple(check_names(foreign, "foreign"))
        self.remedy = None if remedy is None else check_name(remedy, "remedy")
        shown = ", ".join(self.foreign[:_SHOWN])
        if len(self.foreign) > _SHOWN:
            shown += f" and {len(self.foreign) - _SHOWN} more"
        remedy_text = remedy or (
            "save to another (new or empty) folder, or pass overwrite=True to write the model's files into "
            "this one and leave the others in place"
        )
        super().__init__(
            f"{str(self.folder)!r} holds files uncertank did not write ({shown}); a model is saved only into "
            f"a new or empty folder, or over a model uncertank saved there, so that no other file is replaced "
            f"or deleted: {remedy_text}"
        )

    def __reduce__(self) -> tuple[Callable[..., FolderInUseError], _Arguments]:  # pickled with its own arguments
        return (_rebuild, (self.folder, self.foreign, self.remedy))


def _rebuild(folder: Path, foreign: tuple[str, ...], remedy: str | None) -> FolderInUseError:
    return FolderInUseError(folder, foreign, remedy=remedy)


def _read_json(path: Path) -> object:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _listed(record: object) -> set[str]:
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, list):
        return set()
    return {f for f in files if isinstance(f, str) and f and "/" not in f and f not in (".", "..")}


def library_entries(folder: str | os.PathLike[str]) -> set[str]:
    """The names of the entries of ``folder`` that this library wrote there for a model (see the module).

    Empty for a folder that does not exist.
    """
    root = Path(folder)
    try:
        entries = set(os.listdir(root))
    except (FileNotFoundError, NotADirectoryError):
        return set()
    own = {n for n in entries if _TEMPORARY.fullmatch(n)}
    manifest = _read_json(root / MANIFEST) if MANIFEST in entries else None
    checkpoint = isinstance(manifest, dict) and str(manifest.get("format", "")).startswith("uncertank.")
    if checkpoint:
        own |= {n for n in entries if n in _CHECKPOINT_NAMES or _MEMBER.fullmatch(n)}
    export = _read_json(root / EXPORT_RECORD) if EXPORT_RECORD in entries else None
    if isinstance(export, dict) and export.get("format") == EXPORT_FORMAT:
        own |= {EXPORT_RECORD} | (_listed(export) & entries)
    study = _read_json(root / STUDY_RECORD) if STUDY_RECORD in entries else None
    if isinstance(study, dict) and isinstance(study.get("key"), str):
        own |= {STUDY_RECORD} | (_listed(study) & entries)
    return own


def foreign_entries(folder: str | os.PathLike[str]) -> list[str]:
    """The entries of ``folder`` this library did not write, sorted; a folder's name ends with ``/``."""
    root = Path(folder)
    try:
        entries = os.listdir(root)
    except (FileNotFoundError, NotADirectoryError):
        return []
    own = library_entries(root)
    return sorted(n + ("/" if (root / n).is_dir() and not (root / n).is_symlink() else "")
                  for n in entries if n not in own)


def check_save_folder(path: str | os.PathLike[str], *, overwrite: bool = False, remedy: str | None = None) -> None:
    """Refuse ``path`` as a model's folder unless it is new, empty, or holds only the library's files.

    Parameters
    ----------
    path : str or path
        Where the model is to be saved.
    overwrite : bool
        Accept a folder holding other files too (they are left in place).
    remedy : str, optional
        What the message tells the user to do instead (another folder, or
        ``overwrite=True``, by default).

    Raises
    ------
    ValueError
        When ``path`` is a file.
    FolderInUseError
        When ``path`` holds entries the library did not write and
        ``overwrite`` is false; the message names a few of them.
    """
    dest = Path(path)
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"path must be a folder (or not exist); {str(dest)!r} is a file")
    if overwrite:
        return
    foreign = foreign_entries(dest)
    if foreign:
        raise FolderInUseError(dest, foreign, remedy=remedy)


def write_export_record(folder: str | os.PathLike[str]) -> None:
    """Record the entries of ``folder`` (a Hugging Face folder just written) as the library's own."""
    root = Path(folder)
    files = sorted({*os.listdir(root), EXPORT_RECORD})
    with open(root / EXPORT_RECORD, "w", encoding="utf-8") as fh:
        json.dump({"format": EXPORT_FORMAT, "files": files}, fh, indent=2)
        fh.write("\n")


@contextmanager
def model_folder(
    path: str | os.PathLike[str], *, overwrite: bool = False, last: Collection[str] = (),
    remedy: str | None = None,
) -> Iterator[Path]:
    """Yield an empty temporary folder whose entries replace their namesakes in ``path`` when the block succeeds.

    ``path`` is first checked (:func:`check_save_folder`), before the block
    runs. A new ``path`` is the temporary folder itself, renamed into place.
    Into an existing one each entry the block wrote replaces its earlier
    version, and the library's own entries of an earlier model (those of
    :func:`library_entries`) that the block did not write again are removed;
    every other entry is left as it is.

    Parameters
    ----------
    path : str or path
        The model's folder.
    overwrite : bool
        Write into a folder that holds files the library did not write.
    last : collection of str
        Entries (a manifest) taken out of ``path`` first and put in last,
        so that a reader never finds one over a half-replaced model.
    remedy : str, optional
        For the refusal's message (:func:`check_save_folder`).

    Raises
    ------
    ValueError, FolderInUseError
        From :func:`check_save_folder`; nothing has been written.
    """
    check_save_folder(path, overwrite=overwrite, remedy=remedy)
    dest = Path(path)
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_folder(prefix=f".{dest.name}.", dir=dest.parent)  # the user's umask, as mkdir
        try:
            yield tmp
            os.replace(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return
    earlier = library_entries(dest)
    work = temporary_folder(prefix=".uncertank-", dir=dest)
    try:
        new = work / "new"
        new.mkdir()
        yield new
        _swap(dest, new, work / "old", earlier, set(last))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _swap(dest: Path, new: Path, old: Path, earlier: set[str], last: set[str]) -> None:
    """Move ``new``'s entries into ``dest`` and ``earlier`` ones not written again out to ``old``; undone on failure."""
    written = set(os.listdir(new))
    stale = earlier - written
    old.mkdir()
    done: list[tuple[Path, Path]] = []

    def move(src: Path, dst: Path) -> None:
        os.replace(src, dst)
        done.append((src, dst))

    def take_out(name: str) -> None:
        if os.path.lexists(dest / name):
            move(dest / name, old / name)

    try:
        for name in sorted((written | stale) & last):  # the earlier manifest first
            take_out(name)
        for name in sorted(stale - last):
            take_out(name)
        for name in sorted(written - last):
            take_out(name)
            move(new / name, dest / name)
        for name in sorted(written & last):  # the new manifest last
            move(new / name, dest / name)
    except BaseException:
        for src, dst in reversed(done):
            try:
                os.replace(dst, src)
            except OSError:
                pass
        raise
