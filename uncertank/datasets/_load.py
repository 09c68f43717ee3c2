"""``load()``: one entry point for every registered dataset, with an on-disk cache."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from uncertank._types import QuerySet
from uncertank.hookspecs import dataset_loader_capabilities
from uncertank.validation import check_choice, check_positive_int, check_seed

__all__ = ["cacheable", "list_datasets", "load", "resolve_dataset"]

F = TypeVar("F", bound=Callable[..., object])

SPLITS = ("train", "valid", "test")


def list_datasets() -> list[str]:
    """Names of the registered datasets; those ending in ``":"`` are prefixes taking a path."""
    from uncertank.plugins import registry

    return sorted(registry("datasets"))


def resolve_dataset(name: str) -> tuple[str, str | None]:
    """Split ``name`` into the registered loader name and the argument after a prefix.

    ``"ubuntu-sample"`` gives ``("ubuntu-sample", None)``; ``"tsv:data/x.tsv"``
    gives ``("tsv:", "data/x.tsv")``. A name no plugin provides raises
    :class:`~uncertank.plugins.UnknownNameError` listing the known ones.
    """
    from uncertank.plugins import get_factory, registry

    if not isinstance(name, str):
        raise TypeError(f"name must be a str such as 'ubuntu-sample' or 'tsv:PATH'; got {type(name).__name__}")
    reg = registry("datasets")
    if name in reg and not name.endswith(":"):
        return name, None
    head, sep, rest = name.partition(":")
    if sep and f"{head}:" in reg:
        return f"{head}:", rest
    get_factory("datasets", name)  # raises UnknownNameError with the known names
    raise AssertionError("unreachable")  # pragma: no cover


def cacheable(token: str | Callable[..., str]) -> Callable[[F], F]:
    """Mark a dataset loader as cacheable by :func:`load`: give it a ``cache_token``.

    :func:`load` caches a built set on disk only for a loader with a
    ``cache_token(arg=None, *, split=...)`` method or attribute returning a
    str that changes whenever the data or the way the set is built changes
    (the key also holds every parameter of the call). A class loader can
    define that method itself; this decorator adds it to a function.

    Parameters
    ----------
    token : str or callable
        A fixed version string (``"my-corpus-v2"``: bump it when the data or
        the code change), or a function ``token(arg, split)`` returning one,
        such as a digest of the file read (:func:`uncertank.files.file_digest`).

    Returns
    -------
    callable
        A decorator that sets ``loader.cache_token`` and returns the loader.

    Examples
    --------
    >>> from uncertank import QuerySet
    >>> @cacheable("greetings-v1")
    ... def greetings(*, split="train", negatives=None, n_candidates=None, seed=0):
    ...     return QuerySet.from_lists(["hi"], [["hello", "bye"]], [[1, 0]], name=f"greetings/{split}")
    >>> greetings.cache_token(split="test")
    'greetings-v1'
    """
    if isinstance(token, str):
        fixed = token

        def make(arg: str | None = None, *, split: str = "train") -> str:
            return fixed
    elif callable(token):
        fn = token

        def make(arg: str | None = None, *, split: str = "train") -> str:
            return fn(arg, split)
    else:
        raise TypeError(f"token must be a str or a callable (arg, split) -> str; got {type(token).__name__}")

    def decorate(loader: F) -> F:
        if not callable(loader):
            raise TypeError(f"cacheable decorates a dataset loader (a callable); got {type(loader).__name__}")
        loader.cache_token = make  # type: ignore[attr-defined]
        return loader

    return decorate


def _check_options(loader: Callable[..., object], name: str, kwargs: Mapping[str, object]) -> None:
    """Raise TypeError naming every option ``loader`` does not take (unless it takes ``**kwargs``)."""
    import inspect

    try:
        params = inspect.signature(loader).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - a callable without a signature
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    accepted = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    unknown = sorted(k for k in kwargs if k not in accepted)
    if unknown:
        takes = ", ".join(sorted(accepted - {"split", "negatives", "n_candidates", "seed"})) or "none"
        raise TypeError(
            f"dataset {name!r} does not take the option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; its options: {takes}"
        )


def load(
    name: str,
    *,
    split: str = "train",
    negatives: str | None = None,
    n_candidates: int | None = None,
    max_context_turns: int | None = None,
    seed: int = 0,
    cache: bool = True,
    **options: object,
) -> QuerySet:
    """Load (building and caching on first use) a conversation response ranking set.

    Parameters
    ----------
    name : str
        A registered dataset: ``"ubuntu-sample"``, ``"chitchat"``, or a file
        ``"tsv:PATH"`` / ``"jsonl:PATH"`` (a ``{split}`` in ``PATH`` is
        replaced by ``split``). :func:`list_datasets` lists them all.
    split : {"train", "valid", "test"}
        Which split of the dialogues (for files: which file, via ``{split}``).
    negatives : str, optional
        The negative-sampling strategy: ``"random"``, ``"bm25"``,
        ``"embedding"`` or any registered sampler; ``"file"`` keeps a file's
        own candidates. Default: ``"random"`` for bundled corpora, ``"file"``
        for files.
    n_candidates : int, optional
        Candidates per query, one of them relevant. Default: 10 when negatives
        are sampled; the file's lists with ``"file"`` (an int then checks them).
    max_context_turns : int, optional
        Keep only the most recent utterances of each context; None keeps all.
    seed : int
        Seeds the negatives and the order of each candidate list. The split
        of dialogues does not depend on it.
    cache : bool
        Read and write the on-disk cache (``$UNCERTANK_CACHE`` or
        ``~/.cache/uncertank``), keyed by every parameter and the data's
        version. Every built-in dataset is cached; a plugin's loader is
        cached when it has a ``cache_token(arg=None, *, split=...)`` method
        (see :func:`cacheable`), and built on every call otherwise.
    **options
        Passed to the loader: for bundled corpora ``max_instances_per_dialogue``
        (default 10, None for every turn), ``split_seed`` (default 0) and
        ``max_queries`` (a seeded subset of that many queries, taken before the
        negatives are drawn so that an expensive sampler such as ``embedding``
        works for them only; the response pool stays the whole split); for all
        built-ins ``sampler_options`` (a dict for the sampler, e.g.
        ``{"k1": 1.2}`` for ``bm25``, ``{"progress": False}`` for ``embedding``)
        and ``relevant_first`` (default False: each list is shuffled; True
        puts the relevant candidate first, the UDC test-file layout from
        which R_2@1 is read off the first two candidates; ties then favour it
        under position tie-breaking).

    Returns
    -------
    QuerySet
        Contexts as lists of utterances (oldest first), candidates, labels
        (1 relevant, 0 not), query and candidate ids, and a name such as
        ``"ubuntu-sample/test/bm25"``.

    Raises
    ------
    UnknownNameError
        For an unknown dataset or sampler name (the message lists the known ones).
    TypeError
        For an option the dataset's loader does not take (the message names
        it and lists the loader's options), or a ``cache_token`` that does not
        return a str.
    ValueError
        For a bad split, ``n_candidates`` larger than the response pool
        allows, or a malformed file (the message names file and line).

    Examples
    --------
    >>> from uncertank.datasets import load
    >>> test = load("ubuntu-sample", split="test", negatives="random", seed=0, cache=False)
    >>> int(test.lengths.min()), int(test.lengths.max()), int(test.labels.sum()) == test.n_queries
    (10, 10, True)
    """
    from uncertank.plugins import get_factory

    split = check_choice(split, "split", SPLITS)
    seed = check_seed(seed, allow_none=False, generator=False)
    if n_candidates is not None:
        n_candidates = check_positive_int(n_candidates, "n_candidates")
    if max_context_turns is not None:
        max_context_turns = check_positive_int(max_context_turns, "max_context_turns")
    if negatives is not None:
        if not isinstance(negatives, str):
            raise TypeError(
                f"negatives must be a str such as 'random', 'bm25' or 'embedding'; got {type(negatives).__name__}"
            )
        if negatives != "file":
            get_factory("negative_samplers", negatives)  # unknown -> UnknownNameError listing the known
    loader_name, arg = resolve_dataset(name)
    loader = get_factory("datasets", loader_name)
    args: tuple[str, ...] = () if arg is None else (arg,)
    kwargs: dict[str, object] = dict(split=split, negatives=negatives, n_candidates=n_candidates, seed=seed)
    if max_context_turns is not None:  # passed only when set, so a loader need not know it
        kwargs["max_context_turns"] = max_context_turns
    kwargs.update(options)
    _check_options(loader, name, kwargs)
    cacheable = dataset_loader_capabilities(loader).cacheable
    key = None
    if cache and cacheable is not None:
        from uncertank.datasets import _cache

        token = cacheable.cache_token(*args, split=split)
        if not isinstance(token, str):
            raise TypeError(
                f"dataset {name!r}: cache_token must return a str that changes with the data; "
                f"got {type(token).__name__}"
            )
        key = _cache.cache_key({"dataset": loader_name, "arg": arg, "token": token, **kwargs})
        hit = _cache.read_cached(key)
        if hit is not None:
            return hit
    qs = loader(*args, **kwargs)
    if not isinstance(qs, QuerySet):
        raise TypeError(f"dataset loader {loader_name!r} must return a QuerySet; got {type(qs).__name__}")
    if key is not None:
        from uncertank.datasets import _cache

        _cache.write_cached(key, qs)
    return qs
