r"""Response-selection files: the common TSV format and a JSON-lines format.

TSV (as MSDialog, MANtIS and the Ubuntu Dialogue Corpus are distributed for
response ranking; Yang et al. 2018, Penha et al. 2019) holds one
(context, candidate) pair per line::

    label <TAB> utterance_1 <TAB> ... <TAB> utterance_n <TAB> candidate

``label`` is an integer >= 0 (1 relevant, 0 not). Consecutive lines with the
same context form one query, so a query's lines must be adjacent. There is
no header; blank lines are skipped; a trailing ``\\r`` is dropped. No field
may be empty or blank: a line ending in a tab is an error, not a query with
an empty candidate.

Both readers take UTF-8 text, plain or gzipped (a ``.gz`` suffix), and name
the file and line of anything they reject: a malformed line, bytes that are
not UTF-8, a binary file, a broken archive.

JSON lines holds one query per line, an object with the keys::

    {"context": ["utterance 1", "utterance 2"],   # or one string
     "candidates": ["response a", "response b"],
     "labels": [1, 0],
     "id": "q1",                                 # optional
     "candidate_ids": ["a", "b"]}                # optional

References
----------
Yang, L. et al. (2018). Response ranking with deep matching networks and
external knowledge in information-seeking conversation systems. SIGIR 2018.
Penha, G., Balan, A. & Hauff, C. (2019). Introducing MANtIS: a novel
multi-domain information seeking dialogues dataset. arXiv:1912.04639.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from uncertank._types import QuerySet
from uncertank.datasets._lines import read_lines
from uncertank.datasets.assembly import candidate_ids_or_positions, redraw_negatives
from uncertank.datasets.sampling import NegativeSampling
from uncertank.files import atomic_path
from uncertank.validation import check_choice, check_path, check_positive_int

__all__ = [
    "FileLoader",
    "read_response_jsonl",
    "read_response_tsv",
    "write_response_jsonl",
    "write_response_tsv",
]

PathLike = str | os.PathLike[str]


@contextmanager
def _atomic_writer(path: PathLike) -> Iterator[IO[str]]:
    """Write a text file through a temporary file in the same folder, then ``os.replace``."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        yield fh


def _parse_label(raw: str, where: str) -> int:
    # ASCII digits only: int() would also read "1_0" as 10 and other scripts' digits
    if re.fullmatch(r"[+-]?[0-9]+", raw.strip()) is None:
        raise ValueError(f"{where}: the label must be an integer >= 0; got {raw!r}")
    value = int(raw.strip())
    if value < 0:
        raise ValueError(f"{where}: the label must be an integer >= 0; got {value}")
    return value


def _build(
    contexts: list[list[str]],
    candidates: list[list[str]],
    labels: list[list[int]],
    query_ids: list[str],
    candidate_ids: list[str] | None,
    name: str,
) -> QuerySet:
    lengths = np.fromiter((len(c) for c in candidates), dtype=np.int64, count=len(candidates))
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = [t for c in candidates for t in c]
    flat_labels = np.fromiter((v for lab in labels for v in lab), dtype=np.int64, count=len(flat))
    return QuerySet(contexts, flat, offsets, flat_labels, query_ids=query_ids, candidate_ids=candidate_ids, name=name)


def read_response_tsv(path: PathLike, *, name: str | None = None) -> QuerySet:
    """Read a response-selection TSV file.

    Parameters
    ----------
    path : path
        The file (UTF-8).
    name : str, optional
        Name of the set; the file name by default.

    Returns
    -------
    QuerySet
        One query per run of adjacent lines with the same context; query ids
        are ``"L<line>"``, the line number (from 1) of the query's first line.

    Raises
    ------
    ValueError
        On a line with fewer than three tab-separated fields, an empty or
        blank field (such as a trailing tab), a label that is not an integer
        >= 0, bytes that are not UTF-8 or a broken ``.gz`` archive; the
        message names the file and the line.
    """
    path = check_path(path, "path")
    p = Path(path)
    contexts: list[list[str]] = []
    candidates: list[list[str]] = []
    labels: list[list[int]] = []
    qids: list[str] = []
    prev: tuple[str, ...] | None = None
    for lineno, line in read_lines(p, "TSV file"):
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{p}, line {lineno}"
        if len(fields) < 3:
            raise ValueError(
                f"{where}: expected 'label<TAB>utterance<TAB>...<TAB>candidate' "
                f"(at least 3 tab-separated fields); got {len(fields)}"
            )
        empty = [i for i, f in enumerate(fields) if not f.strip()]
        if empty:
            i = empty[0]
            hint = " (the line ends in a tab)" if i == len(fields) - 1 else ""
            raise ValueError(
                f"{where}: field {i + 1} of {len(fields)} is empty{hint}; every field "
                "(label, utterances, candidate) must hold text"
            )
        label = _parse_label(fields[0], where)
        ctx = tuple(fields[1:-1])
        if ctx != prev:
            contexts.append(list(ctx))
            candidates.append([])
            labels.append([])
            qids.append(f"L{lineno}")
            prev = ctx
        candidates[-1].append(fields[-1])
        labels[-1].append(label)
    if not contexts:
        raise ValueError(f"{p}: the file holds no query (it is empty or blank)")
    return _build(contexts, candidates, labels, qids, None, name if name is not None else p.name)


def _check_tsv_text(text: str, what: str) -> None:
    if not text.strip():
        raise ValueError(f"{what} is empty or blank, which the TSV format cannot hold (it would be an empty field)")
    if "\t" in text or "\n" in text or "\r" in text:
        raise ValueError(
            f"{what} contains a tab or a line break, which the TSV format cannot hold; "
            "use write_response_jsonl instead"
        )


def write_response_tsv(qs: QuerySet, path: PathLike) -> None:
    """Write a labelled :class:`~uncertank.QuerySet` as response-selection TSV (atomically).

    Raises
    ------
    ValueError
        When ``qs`` has no labels, a query has an empty context, a text holds
        a tab or line break, or two adjacent queries share their context
        (they would merge on reading).
    """
    path = check_path(path, "path")
    if not isinstance(qs, QuerySet):
        raise TypeError(f"qs must be a QuerySet; got {type(qs).__name__}")
    if qs.labels is None:
        raise ValueError("qs must have labels to be written as TSV; got a QuerySet without labels")
    prev: list[str] | None = None
    rows: list[str] = []
    for q in range(qs.n_queries):
        ctx, cands, labs = qs.query(q)
        if not ctx:
            raise ValueError(f"query {q} has an empty context, which the TSV format cannot hold")
        if ctx == prev:
            raise ValueError(
                f"queries {q - 1} and {q} are adjacent with the same context; they would merge "
                "into one query on reading. Use write_response_jsonl instead"
            )
        prev = ctx
        for i, u in enumerate(ctx):
            _check_tsv_text(u, f"query {q}, context utterance {i}")
        head = "\t".join(ctx)
        assert labs is not None
        for j, (c, lab) in enumerate(zip(cands, labs.tolist(), strict=True)):
            _check_tsv_text(c, f"query {q}, candidate {j}")
            rows.append(f"{lab}\t{head}\t{c}\n")
    with _atomic_writer(path) as fh:
        fh.writelines(rows)


def _is_label(v: object) -> bool:
    """An integer-valued JSON number >= 0 (``1`` or ``1.0``, never ``0.5`` or ``true``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return v >= 0 and float(v).is_integer()


def _jsonl_field(obj: Mapping[str, object], key: str, where: str) -> object:
    if key not in obj:
        raise ValueError(f"{where}: missing key {key!r}; a query needs 'context', 'candidates' and 'labels'")
    return obj[key]


def _str_list(value: object, key: str, where: str, *, allow_str: bool = False) -> list[str]:
    if allow_str and isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: {key!r} must be a list of strings; got {json.dumps(value)[:80]}")
    blank = [i for i, v in enumerate(value) if not v.strip()]
    if blank:
        raise ValueError(f"{where}: {key!r} entry {blank[0]} is empty; every text must hold something")
    return value


def read_response_jsonl(path: PathLike, *, name: str | None = None) -> QuerySet:
    """Read a JSON-lines response-selection file (format in the module docstring).

    Parameters
    ----------
    path, name
        As in :func:`read_response_tsv`.

    Returns
    -------
    QuerySet
        Query ids are the ``id`` values, or ``"L<line>"`` where absent.

    Raises
    ------
    ValueError
        On invalid JSON, a missing key, a wrong type, an empty or blank text,
        a labels/candidates length mismatch, an empty candidate list, bytes
        that are not UTF-8 or a broken ``.gz`` archive; the message names
        the file and the line.
    """
    path = check_path(path, "path")
    p = Path(path)
    contexts: list[list[str]] = []
    candidates: list[list[str]] = []
    labels: list[list[int]] = []
    qids: list[str] = []
    cids: list[str] = []
    any_cids = False
    for lineno, line in read_lines(p, "JSON-lines file"):
        if not line.strip():
            continue
        where = f"{p}, line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: expected a JSON object; got {type(obj).__name__}")
        ctx = _str_list(_jsonl_field(obj, "context", where), "context", where, allow_str=True)
        cands = _str_list(_jsonl_field(obj, "candidates", where), "candidates", where)
        labs = _jsonl_field(obj, "labels", where)
        if not cands:
            raise ValueError(f"{where}: 'candidates' must not be empty")
        if not isinstance(labs, list) or len(labs) != len(cands):
            raise ValueError(
                f"{where}: 'labels' must be a list with one label per candidate ({len(cands)}); "
                f"got {json.dumps(labs)[:80]}"
            )
        if not all(_is_label(v) for v in labs):
            raise ValueError(f"{where}: 'labels' must be integers >= 0; got {json.dumps(labs)[:80]}")
        labs = [int(v) for v in labs]
        if "candidate_ids" in obj:
            ids = _str_list(obj["candidate_ids"], "candidate_ids", where)
            if len(ids) != len(cands):
                raise ValueError(f"{where}: 'candidate_ids' must have one id per candidate ({len(cands)})")
            if not any_cids and candidates:
                raise ValueError(f"{where}: 'candidate_ids' must be given on every line or on none")
            any_cids = True
            cids.extend(ids)
        elif any_cids:
            raise ValueError(f"{where}: 'candidate_ids' must be given on every line or on none")
        contexts.append(ctx)
        candidates.append(cands)
        labels.append(labs)
        qids.append(str(obj["id"]) if "id" in obj else f"L{lineno}")
    if not contexts:
        raise ValueError(f"{p}: the file holds no query (it is empty or blank)")
    return _build(contexts, candidates, labels, qids, cids if any_cids else None, name if name is not None else p.name)


def write_response_jsonl(qs: QuerySet, path: PathLike) -> None:
    """Write a labelled :class:`~uncertank.QuerySet` as JSON lines (atomically)."""
    path = check_path(path, "path")
    if not isinstance(qs, QuerySet):
        raise TypeError(f"qs must be a QuerySet; got {type(qs).__name__}")
    if qs.labels is None:
        raise ValueError("qs must have labels to be written as JSON lines; got a QuerySet without labels")
    for i, text in enumerate(qs.candidates):
        if not text.strip():
            raise ValueError(f"candidate {i} is empty or blank, which the JSON-lines reader rejects")
    for q, ctx in enumerate(qs.contexts):
        if any(not u.strip() for u in ctx):
            raise ValueError(f"query {q} has an empty or blank context utterance, which the JSON-lines reader rejects")
    with _atomic_writer(path) as fh:
        for q in range(qs.n_queries):
            ctx, cands, labs = qs.query(q)
            assert labs is not None
            obj: dict[str, object] = {"context": ctx, "candidates": cands, "labels": labs.tolist()}
            if qs.query_ids is not None:
                obj["id"] = str(qs.query_ids[q])
            if qs.candidate_ids is not None:
                lo, hi = int(qs.offsets[q]), int(qs.offsets[q + 1])
                obj["candidate_ids"] = [str(c) for c in qs.candidate_ids[lo:hi]]
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")


class FileLoader:
    """The ``tsv:`` and ``jsonl:`` dataset loaders.

    ``load("tsv:PATH", split=...)`` reads ``PATH``, where a ``{split}`` in the
    path is replaced by the split's name (``data/msdialog/{split}.tsv``).
    With ``negatives="file"`` (the default for files) the candidates are
    kept as written. With a sampler name (``random``, ``bm25``, ``embedding``)
    each query keeps its context and its first relevant candidate, and new
    negatives are drawn from the pool of every distinct candidate text in the
    file; queries with no relevant candidate are then dropped (with a warning).

    Parameters
    ----------
    fmt : {"tsv", "jsonl"}
    """

    def __init__(self, fmt: str) -> None:
        self.fmt = check_choice(fmt, "fmt", ("tsv", "jsonl"))

    def resolve(self, arg: str, split: str) -> Path:
        """The file for ``split``: ``arg`` with ``{split}`` replaced; it must exist."""
        if not arg:
            raise ValueError(f"a file dataset needs a path after the prefix, e.g. '{self.fmt}:data/test.{self.fmt}'")
        path = Path(arg.replace("{split}", split)).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"{self.fmt}: no such file {path} (from {arg!r}, split={split!r})")
        return path

    def cache_token(self, arg: str, *, split: str = "train") -> str:
        """The SHA-256 of the file, so that an edited file is read again."""
        from uncertank.files import file_digest

        path = self.resolve(arg, split)
        return f"{self.fmt}:{path.resolve()}:{file_digest(path)}"

    def read(self, path: PathLike) -> QuerySet:
        """Read one file in this loader's format."""
        return read_response_tsv(path) if self.fmt == "tsv" else read_response_jsonl(path)

    def __call__(
        self,
        arg: str,
        *,
        split: str = "train",
        negatives: str | None = None,
        n_candidates: int | None = None,
        max_context_turns: int | None = None,
        seed: int = 0,
        sampler_options: Mapping[str, object] | None = None,
        relevant_first: bool = False,
        max_queries: int | None = None,
    ) -> QuerySet:
        """Load the file for ``split``; see :func:`uncertank.datasets.load`.

        ``max_queries`` keeps a seeded subset of that many queries (in file
        order) before negatives are drawn, as for the bundled corpora: the
        subset depends on ``seed`` only, and with a sampler the response pool
        stays the whole file.
        """
        path = self.resolve(arg, split)
        qs = self.read(path)
        negatives = "file" if negatives is None else negatives
        pool = qs
        if max_queries is not None:
            max_queries = check_positive_int(max_queries, "max_queries")
            if max_queries < qs.n_queries:
                keep = np.sort(np.random.default_rng([seed, 2]).permutation(qs.n_queries)[:max_queries])
                qs = qs.subset(keep)
        if max_context_turns is not None:
            m = check_positive_int(max_context_turns, "max_context_turns")
            qs = QuerySet(
                [list(c)[-m:] for c in qs.contexts], qs.candidates, qs.offsets, qs.labels,
                query_ids=qs.query_ids, candidate_ids=qs.candidate_ids, name=qs.name,
            )
        if negatives == "file":
            if relevant_first:
                raise ValueError(
                    "relevant_first=True reorders sampled lists; with negatives='file' the file's "
                    "order is kept, so pass a sampler name or relevant_first=False"
                )
            if n_candidates is not None:
                n_candidates = check_positive_int(n_candidates, "n_candidates")
                bad = np.flatnonzero(qs.lengths != n_candidates)
                if bad.size:
                    q = int(bad[0])
                    raise ValueError(
                        f"{path}: n_candidates={n_candidates} but {bad.size} queries have another number "
                        f"of candidates, e.g. query {qs.query_ids[q] if qs.query_ids else q} with "
                        f"{int(qs.lengths[q])}; pass n_candidates=None to keep the file's lists"
                    )
            return QuerySet(
                qs.contexts, qs.candidates, qs.offsets, qs.labels,
                query_ids=qs.query_ids, candidate_ids=qs.candidate_ids, name=f"{path.name}/{split}/file",
            )
        sampling = NegativeSampling.of(negatives=negatives, n_candidates=n_candidates, seed=seed,
                                       sampler_options=sampler_options, relevant_first=relevant_first)
        return self._resample(qs, pool, path, split, sampling)

    def _resample(
        self,
        qs: QuerySet,
        pool: QuerySet,
        path: Path,
        split: str,
        sampling: NegativeSampling,
    ) -> QuerySet:
        assert qs.labels is not None
        n_dropped = qs.n_queries - int(np.unique(qs.query_index[qs.labels > 0]).size)
        if n_dropped == qs.n_queries:
            raise ValueError(f"{path}: no query has a relevant candidate, so there is nothing to resample around")
        if n_dropped:
            warnings.warn(
                f"{path}: {n_dropped} of {qs.n_queries} queries have no relevant candidate "
                f"and are dropped when negatives are resampled",
                RuntimeWarning, stacklevel=4,
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # said above, naming the file
            return redraw_negatives(
                qs, sampling=sampling,
                pool=list(pool.candidates), pool_ids=candidate_ids_or_positions(pool), groups=None, pool_groups=None,
                name=f"{path.name}/{split}/{sampling.negatives}",
            )

    def __repr__(self) -> str:
        return f"FileLoader({self.fmt!r})"
