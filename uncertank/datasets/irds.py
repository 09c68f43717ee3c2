r"""ir_datasets collections as query sets: the ``irds:`` dataset names.

``load("irds:NAME")`` reads the queries, documents and relevance judgements
of any collection ir_datasets knows (MacAvaney et al. 2021):
``irds:msmarco-passage/trec-dl-2019/judged``, ``irds:beir/scifact/test``,
``irds:beir/trec-covid``. The options of a name follow it as ``key=value``
pairs after a ``?``, joined by ``&``, so that a study file, Python and the
command line name one set the same way::

    irds:NAME[?first_stage=...&run=PATH&query_split=60/20/20&split_seed=0&splits=train,dev,test]

The candidates (the *first stage*) come from, by ``first_stage``:

- ``run``: a TREC run file (``run=PATH``, read from the folder the process
  runs in), each query's best-scored documents;
- ``scoreddocs``: the collection's own first-stage run (TREC DL's BM25 top
  1000, for instance);
- ``bm25``: BM25 over the collection's documents (``bm25s``, the index of
  the ``bm25`` negative sampler, :class:`~uncertank.datasets.retrieval.BM25Index`),
  :data:`BM25_DEPTH` documents per query unless ``n_candidates`` says
  otherwise;
- ``auto`` (the default): the run when one is given, else scoreddocs where
  the collection has them, else BM25 over its documents.

Each list holds the first ``n_candidates`` documents in the first stage's
order (descending score, ties by descending document id, as ``trec_eval``
orders a run), labelled with their graded judgement (unjudged and negative
grades count 0). Judged relevant documents the first stage did not retrieve
are not added: the set is a reranking set, and a metric computed on it is
the reranker's over the first stage's candidates (``uncertank evaluate
--qrels irds:NAME`` counts them, as ``trec_eval`` does). With a negative
sampler (``negatives="bm25"``, ``"random"``, ...) each query keeps instead
its best-graded relevant document and gets ``n_candidates - 1`` negatives
drawn from the first stage's documents of all its split's queries, less
every document judged relevant to any of them.

Splits: a ``{split}`` in ``NAME`` is replaced by the collection's own split
(``train``, ``dev`` and ``test`` for uncertank's ``train``, ``valid`` and
``test``; ``splits=`` names others); ``query_split=A/B/C`` cuts the judged
queries into train, valid and test by percentages, seeded by ``split_seed``;
a name with neither is one set of queries, the ``test`` split.

References
----------
MacAvaney, S., Yates, A., Feldman, S., Downey, D., Cohan, A. & Goharian, N.
(2021). Simplified data wrangling with ir_datasets. SIGIR 2021.
"""

from __future__ import annotations

import difflib
import hashlib
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

import numpy as np

from uncertank._optional import require
from uncertank._types import QuerySet
from uncertank.validation import check_choice, check_positive_int, check_seed

if TYPE_CHECKING:
    import pandas as pd

    from uncertank.datasets.sampling import NegativeSampling

__all__ = ["BM25_DEPTH", "DatasetUnavailableError", "IrdsLoader", "IrdsName", "irds_qrels"]

#: The prefix of the names this module reads.
PREFIX = "irds:"
#: Documents BM25 retrieves per query when ``n_candidates`` does not say how many.
BM25_DEPTH = 100
#: The ways of getting the candidates (see the module notes).
FIRST_STAGES = ("auto", "scoreddocs", "run", "bm25")
#: What ``{split}`` becomes for uncertank's train, valid and test splits, unless ``splits=`` says otherwise.
DEFAULT_SPLIT_NAMES = ("train", "dev", "test")
_SPLITS = ("train", "valid", "test")
_OPTIONS = ("first_stage", "run", "query_split", "split_seed", "splits")
_EXAMPLE = "irds:msmarco-passage/trec-dl-2019/judged?first_stage=bm25"


class DatasetUnavailableError(OSError):
    """ir_datasets could not get a collection's files (most often: a first download without the network).

    The message names the dataset and ir_datasets' cache folder
    (``IR_DATASETS_HOME``); the error of ir_datasets is chained as
    ``__cause__``. A subclass of :class:`OSError`.
    """


def _require_ir_datasets() -> ModuleType:
    return require("ir_datasets", "irds", what="the irds: datasets")


# -- what is read of an ir_datasets dataset (ir_datasets ships no types) ------------------------------------------


class _Query(Protocol):
    @property
    def query_id(self) -> str: ...


class _Doc(Protocol):
    @property
    def doc_id(self) -> str: ...


class _Qrel(Protocol):
    @property
    def query_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def relevance(self) -> int: ...


class _ScoredDoc(Protocol):
    @property
    def query_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def score(self) -> float: ...


class _DocsStore(Protocol):
    def get_many(self, doc_ids: Sequence[str]) -> Mapping[str, object]: ...


class _Dataset(Protocol):
    """An ir_datasets dataset, as far as this module reads it."""

    def has_docs(self) -> bool: ...

    def has_qrels(self) -> bool: ...

    def has_scoreddocs(self) -> bool: ...

    def queries_iter(self) -> Iterable[_Query]: ...

    def qrels_iter(self) -> Iterable[_Qrel]: ...

    def scoreddocs_iter(self) -> Iterable[_ScoredDoc]: ...

    def docs_iter(self) -> Iterable[_Doc]: ...

    def docs_store(self) -> _DocsStore: ...


# -- the name --------------------------------------------------------------------------------------------------------


def _percentages(value: str, where: str) -> tuple[int, int, int]:
    parts = value.split("/")
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or sum(int(p) for p in parts) != 100:
        raise ValueError(
            f"{where}: query_split must be three whole percentages for train/valid/test that add up to 100, "
            f"such as 60/20/20; got {value!r}"
        )
    a, b, c = (int(p) for p in parts)
    return a, b, c


@dataclass(frozen=True)
class IrdsName:
    """An ``irds:`` dataset name, parsed and checked (nothing is read).

    Attributes
    ----------
    name : str
        The ir_datasets name, possibly with ``{split}``.
    first_stage : {"auto", "scoreddocs", "run", "bm25"}
    run : str or None
        A TREC run file giving the candidates.
    query_split : tuple of 3 int or None
        Percentages of the judged queries for train, valid and test.
    split_seed : int
        Seed of the permutation that cuts the queries (``query_split``).
    splits : tuple of 3 str
        What ``{split}`` becomes for train, valid and test.

    Examples
    --------
    >>> IrdsName.parse("beir/fiqa/{split}").dataset_id("valid")
    'beir/fiqa/dev'
    >>> n = IrdsName.parse("beir/trec-covid?query_split=60/20/20&split_seed=1")
    >>> n.query_split, n.split_seed, n.dataset_id("train")
    ((60, 20, 20), 1, 'beir/trec-covid')
    """

    name: str
    first_stage: str = "auto"
    run: str | None = None
    query_split: tuple[int, int, int] | None = None
    split_seed: int = 0
    splits: tuple[str, str, str] = DEFAULT_SPLIT_NAMES

    @classmethod
    def parse(cls, arg: str) -> IrdsName:
        """Parse what follows ``irds:`` (``"beir/scifact/{split}?splits=train,train,test"``).

        Raises
        ------
        TypeError
            When ``arg`` is not a str.
        ValueError
            For an empty name, a malformed, unknown, repeated or empty
            option, or options that do not go together; the message names
            the option and what it takes.
        """
        if not isinstance(arg, str):
            raise TypeError(f"the irds: name must be a str such as {_EXAMPLE!r}; got {type(arg).__name__}")
        where = f"{PREFIX}{arg}"
        name, _, query = arg.partition("?")
        name = name.strip()
        if not name:
            raise ValueError(f"{where!r}: an ir_datasets name must follow 'irds:', e.g. {_EXAMPLE!r}")
        given: dict[str, str] = {}
        for pair in query.split("&") if query else []:
            key, eq, value = pair.partition("=")
            if not eq or not key:
                raise ValueError(f"{where!r}: options are key=value pairs joined by '&'; got {pair!r}")
            if key not in _OPTIONS:
                raise ValueError(f"{where!r}: unknown option {key!r}; the options are {', '.join(_OPTIONS)}")
            if key in given:
                raise ValueError(f"{where!r}: option {key!r} is given twice; give it once")
            if not value:
                raise ValueError(f"{where!r}: option {key!r} has no value")
            given[key] = value
        first_stage = check_choice(given.get("first_stage", "auto"), f"{where!r}: first_stage", FIRST_STAGES)
        run = given.get("run")
        if run is not None and first_stage not in ("auto", "run"):
            raise ValueError(f"{where!r}: run gives the candidates, so first_stage must be 'run' or left out; "
                             f"got first_stage={first_stage!r}")
        if first_stage == "run" and run is None:
            raise ValueError(f"{where!r}: first_stage=run needs the run file: add &run=PATH")
        query_split = None if "query_split" not in given else _percentages(given["query_split"], repr(where))
        has_slot = "{split}" in name
        if query_split is not None and has_slot:
            raise ValueError(f"{where!r}: give the collection's splits with {{split}} or query_split, not both")
        split_seed = 0
        if "split_seed" in given:
            if query_split is None:
                raise ValueError(f"{where!r}: split_seed applies to query_split, which is not given; leave it out")
            raw = given["split_seed"]
            try:
                split_seed = check_seed(int(raw) if raw.isdigit() else raw, "split_seed", allow_none=False,
                                        generator=False)
            except TypeError as exc:
                raise ValueError(f"{where!r}: {exc}") from None
        splits = DEFAULT_SPLIT_NAMES
        if "splits" in given:
            if not has_slot:
                raise ValueError(f"{where!r}: splits says what {{split}} becomes, and the name holds no {{split}}")
            parts = tuple(p.strip() for p in given["splits"].split(","))
            if len(parts) != 3 or not all(parts):
                raise ValueError(f"{where!r}: splits must name three parts for train, valid and test, such as "
                                 f"'train,dev,test'; got {given['splits']!r}")
            splits = (parts[0], parts[1], parts[2])
        return cls(name, first_stage, run, query_split, split_seed, splits)

    def dataset_id(self, split: str) -> str:
        """The ir_datasets name that holds ``split``'s queries (before a ``query_split`` cuts them).

        Raises
        ------
        ValueError
            For a name with neither ``{split}`` nor ``query_split`` and a
            split other than ``"test"``: such a name is one set of queries.
        """
        split = check_choice(split, "split", _SPLITS)
        if "{split}" in self.name:
            return self.name.replace("{split}", self.splits[_SPLITS.index(split)])
        if self.query_split is None and split != "test":
            raise ValueError(
                f"{PREFIX}{self.name} is one set of queries, which is the 'test' split; for split={split!r} "
                f"name the collection's own splits with {{split}} (e.g. 'irds:beir/scifact/{{split}}?splits="
                f"train,train,test'; {{split}} becomes train, dev and test by default) or cut its queries with "
                f"'irds:{self.name}?query_split=60/20/20'{_siblings_hint(self.name)}"
            )
        return self.name


def _registry_names() -> list[str]:
    return list(_require_ir_datasets().registry)


def _siblings_hint(name: str) -> str:
    parent = name.rsplit("/", 1)[0] if "/" in name else None
    if parent is None:
        return ""
    try:
        names = _registry_names()
    except ImportError:
        return ""
    near = sorted(n for n in names if n.startswith(parent + "/") and n.count("/") == name.count("/") and n != name)
    return f" (ir_datasets also has {', '.join(near[:8])})" if near else ""


def _lookup(dataset_id: str, *, what: str, hint: str = "") -> _Dataset:
    """The ir_datasets dataset named ``dataset_id``; an unknown name lists the close ones (and ``hint``)."""
    irds = _require_ir_datasets()
    from uncertank.plugins import UnknownNameError

    try:
        ds: _Dataset = irds.registry[dataset_id]
    except KeyError:
        names = _registry_names()
        near = difflib.get_close_matches(dataset_id, names, n=5, cutoff=0.6)
        close = f"close matches: {', '.join(near)}" if near else "no name is close"
        raise UnknownNameError(
            f"{what}: ir_datasets knows no dataset {dataset_id!r}; {close} "
            f"(ir_datasets knows {len(names)} names: https://ir-datasets.com){hint}"
        ) from None
    return ds


def _subsets(dataset_id: str, has: str) -> str:
    irds = _require_ir_datasets()
    out = []
    for n in sorted(irds.registry):
        if n.startswith(dataset_id + "/") and getattr(irds.registry[n], f"has_{has}")():
            out.append(n)
        if len(out) == 8:
            break
    return f"; its subsets with {has}: {', '.join(out)}" if out else ""


# -- reading through ir_datasets ---------------------------------------------------------------------------------


def _cache_folder() -> str:
    try:
        return str(_require_ir_datasets().util.home_path())
    except OSError:  # the folder cannot be made: name where it would be
        import os

        return os.environ.get("IR_DATASETS_HOME", str(Path.home() / ".ir_datasets"))


@contextmanager
def _reading(dataset_id: str, what: str) -> Iterator[None]:
    """Re-raise ir_datasets' failure to get a file (no network, a missing file) as DatasetUnavailableError."""
    try:
        yield
    except OSError as exc:  # requests' errors are OSErrors, as are a missing or unreadable file
        raise _unavailable(dataset_id, what, exc) from exc
    except RuntimeError as exc:  # ir_datasets' "All download sources failed", after trying every mirror
        if "download" not in str(exc).lower():
            raise
        raise _unavailable(dataset_id, what, exc) from exc


def _unavailable(dataset_id: str, what: str, exc: BaseException) -> DatasetUnavailableError:
    said = " ".join(str(exc).split())
    said = said if len(said) <= 300 else said[:297] + "..."
    return DatasetUnavailableError(
        f"{PREFIX}{dataset_id}: ir_datasets could not get its {what} ({type(exc).__name__}: {said}). "
        f"ir_datasets downloads a dataset on first use, which needs the network once, and keeps the files in "
        f"its cache folder {_cache_folder()} (IR_DATASETS_HOME); connect once, or copy the files there "
        "from a machine that has them"
    )


def _text(record: object, what: str, dataset_id: str) -> str:
    """ir_datasets' ``default_text()`` of a document or query (title and text for BEIR, the text for MS MARCO)."""
    default_text = getattr(record, "default_text", None)
    if callable(default_text):
        return str(default_text())
    text = getattr(record, "text", None)
    if isinstance(text, str):
        return str(text)
    raise TypeError(f"{PREFIX}{dataset_id}: its {what} of type {type(record).__name__} have neither default_text() "
                    "nor a text field, so uncertank cannot read their text")


def _queries(ds: _Dataset, dataset_id: str) -> dict[str, str]:
    with _reading(dataset_id, "queries"):
        return {str(q.query_id): _text(q, "queries", dataset_id) for q in ds.queries_iter()}


def _judgements(ds: _Dataset, dataset_id: str) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: grade}}``; a document judged twice for a query keeps its highest grade."""
    out: dict[str, dict[str, int]] = {}
    with _reading(dataset_id, "relevance judgements (qrels)"):
        for r in ds.qrels_iter():
            per = out.setdefault(str(r.query_id), {})
            doc, grade = str(r.doc_id), int(r.relevance)
            per[doc] = max(grade, per.get(doc, grade))
    return out


def _ranked(scored: Mapping[str, float]) -> list[str]:
    """Document ids by descending score, ties by descending id (trec_eval's order)."""
    by_id = sorted(scored, reverse=True)
    return sorted(by_id, key=lambda d: -scored[d])


def _scoreddocs(ds: _Dataset, dataset_id: str, wanted: set[str]) -> dict[str, list[str]]:
    per: dict[str, dict[str, float]] = {}
    with _reading(dataset_id, "scoreddocs (its first-stage run)"):
        for s in ds.scoreddocs_iter():
            qid = str(s.query_id)
            if qid in wanted:
                per.setdefault(qid, {}).setdefault(str(s.doc_id), float(s.score))
    return {q: _ranked(docs) for q, docs in per.items()}


def _run_lists(path: str, wanted: set[str]) -> dict[str, list[str]]:
    from uncertank.datasets.trec_files import read_trec_run

    frame = read_trec_run(path, system="run")  # one run whatever its tags; a document twice is named by line
    frame = frame[frame["query_id"].isin(wanted)]
    per: dict[str, dict[str, float]] = {}
    for qid, doc, score in zip(frame["query_id"], frame["doc_id"], frame["score"], strict=True):
        per.setdefault(str(qid), {})[str(doc)] = float(score)
    return {q: _ranked(docs) for q, docs in per.items()}


def _bm25_lists(
    ds: _Dataset, dataset_id: str, query_ids: Sequence[str], queries: Mapping[str, str], depth: int
) -> tuple[dict[str, list[str]], dict[str, str]]:
    from uncertank.datasets.retrieval import BM25Index, require_bm25s

    require_bm25s()  # before the documents are read
    with _reading(dataset_id, "documents"):
        docs = [(str(d.doc_id), _text(d, "documents", dataset_id)) for d in ds.docs_iter()]
    if not docs:
        raise ValueError(f"{PREFIX}{dataset_id} holds no document, so BM25 has nothing to retrieve; pass &run=PATH")
    index = BM25Index([t for _, t in docs])
    ids, _ = index.top_k([queries[q] for q in query_ids], depth)
    lists = {q: [docs[i][0] for i in row.tolist() if i >= 0] for q, row in zip(query_ids, ids, strict=True)}
    wanted = {d for lst in lists.values() for d in lst}
    return lists, {d: t for d, t in docs if d in wanted}


def _doc_texts(ds: _Dataset, dataset_id: str, doc_ids: set[str], source: str) -> dict[str, str]:
    with _reading(dataset_id, "documents"):
        found = ds.docs_store().get_many(sorted(doc_ids))
    missing = sorted(doc_ids - set(found))
    if missing:
        raise ValueError(
            f"{PREFIX}{dataset_id}: {len(missing)} documents of the {source} are not in its documents, e.g. "
            f"{missing[0]!r}; the {source} must rank documents of this collection"
        )
    return {str(k): _text(v, "documents", dataset_id) for k, v in found.items()}


# -- the loader ------------------------------------------------------------------------------------------------------


def _first_stage(parsed: IrdsName, ds: _Dataset, dataset_id: str) -> str:
    """The first stage that gives the candidates, checked against what the collection has (nothing is read)."""
    stage = parsed.first_stage
    if stage == "auto":
        stage = "run" if parsed.run is not None else "scoreddocs" if ds.has_scoreddocs() else "bm25"
    if stage == "scoreddocs" and not ds.has_scoreddocs():
        raise ValueError(f"{PREFIX}{dataset_id} has no scoreddocs (a first-stage run of its own); add "
                         "&first_stage=bm25 (BM25 over its documents) or &run=PATH (a TREC run file)")
    if stage == "bm25" and not ds.has_docs():
        has = "neither scoreddocs nor documents" if parsed.first_stage == "auto" else "no documents"
        raise ValueError(f"{PREFIX}{dataset_id} has {has} to retrieve with BM25; add "
                         "&run=PATH (a TREC run file ranking its documents)")
    return stage


def _check_run(parsed: IrdsName, where: str) -> None:
    if parsed.run is not None and not Path(parsed.run).expanduser().is_file():
        raise FileNotFoundError(f"{where}: run={parsed.run!r} names no file (a relative path is read from "
                                f"the folder the process runs in, {Path.cwd()})")


def _sorted_ids(ids: Sequence[str]) -> list[str]:
    """Ids in numeric order when all are integers, else in string order."""
    if all(i.isdigit() for i in ids):
        return sorted(ids, key=int)
    return sorted(ids)


def _split_queries(judged: list[str], parsed: IrdsName, split: str, where: str) -> list[str]:
    """The judged queries of ``split`` under ``query_split`` (rule in docs/datasets.md), in collection order."""
    assert parsed.query_split is not None
    n = len(judged)
    order = _sorted_ids(judged)
    perm = np.random.default_rng(parsed.split_seed).permutation(n)
    cum = np.cumsum(parsed.query_split)
    ends = [0, *(int(np.floor(n * c / 100 + 0.5)) for c in cum)]
    i = _SPLITS.index(split)
    chosen = {order[j] for j in perm[ends[i]:ends[i + 1]].tolist()}
    if not chosen:
        a, b, c = parsed.query_split
        raise ValueError(f"{where}: query_split={a}/{b}/{c} leaves split {split!r} no query "
                         f"(of the {n} judged queries); give it a larger share")
    return [q for q in judged if q in chosen]


def _query_set(query_ids: list[str], texts: Mapping[str, str], lists: Mapping[str, list[str]],
               doc_texts: Mapping[str, str], labels: list[int], name: str) -> QuerySet:
    """One query per id, its candidates the documents of its list (ids kept), ``labels`` flat."""
    lengths = np.fromiter((len(lists[q]) for q in query_ids), dtype=np.int64, count=len(query_ids))
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    doc_ids = [d for q in query_ids for d in lists[q]]
    return QuerySet([[texts[q]] for q in query_ids], [doc_texts[d] for d in doc_ids], offsets,
                    np.asarray(labels, dtype=np.int64), query_ids=list(query_ids), candidate_ids=doc_ids, name=name)


class IrdsLoader:
    """The ``irds:`` dataset loader (what the ``uncertank_datasets`` hook registers).

    Called by :func:`uncertank.datasets.load` as ``loader(arg, split=...,
    negatives=..., n_candidates=..., seed=..., ...)`` where ``arg`` is the
    name after ``irds:`` with its options (see the module notes and
    docs/datasets.md).
    """

    def cache_token(self, arg: str, *, split: str = "train") -> str:
        """A digest of the name, ir_datasets' version, this module's code and the run file's bytes.

        A collection registered from local files that change under the same
        name is not seen to change: load it with ``cache=False``.
        """
        from uncertank.files import file_digest, json_digest

        parsed = IrdsName.parse(arg)
        irds = _require_ir_datasets()
        run_digest = None
        if parsed.run is not None:
            _check_run(parsed, f"{PREFIX}{arg}")
            run_digest = file_digest(Path(parsed.run).expanduser())
        code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
        return "irds:" + json_digest({"name": asdict(parsed), "ir_datasets": irds.__version__, "code": code,
                                      "run": run_digest, "split": split})

    def __call__(
        self,
        arg: str,
        /,
        *,
        split: str = "train",
        negatives: str | None = None,
        n_candidates: int | None = None,
        seed: int = 0,
        max_context_turns: int | None = None,
        max_queries: int | None = None,
        sampler_options: Mapping[str, object] | None = None,
        relevant_first: bool = False,
    ) -> QuerySet:
        """Build one split; see the module notes and :func:`uncertank.datasets.load`.

        ``max_context_turns`` changes nothing (a query is one text);
        ``max_queries`` keeps a seeded subset of that many queries (drawn from
        ``seed``) before the first stage runs.

        Raises
        ------
        ImportError
            Without ir_datasets (``pip install "uncertank[irds]"``), or
            without ``bm25s`` for a BM25 first stage.
        UnknownNameError
            For a name ir_datasets does not know (close names are listed),
            a ``{split}`` that names no dataset among them.
        ValueError
            For a bad option, a split the name does not have, a collection
            without queries, judgements, documents or a first stage, a run
            naming documents the collection does not hold, no query left.
        FileNotFoundError
            For a run file that does not exist.
        DatasetUnavailableError
            When ir_datasets cannot get the files (a first download without
            the network).
        """
        where = f"{PREFIX}{arg}"
        parsed = IrdsName.parse(arg)
        split = check_choice(split, "split", _SPLITS)
        file_mode = negatives in (None, "file")
        if n_candidates is not None:
            n_candidates = check_positive_int(n_candidates, "n_candidates")
        if max_queries is not None:
            max_queries = check_positive_int(max_queries, "max_queries")
        if max_context_turns is not None:
            check_positive_int(max_context_turns, "max_context_turns")
        if file_mode and relevant_first:
            raise ValueError("relevant_first=True reorders sampled lists; with negatives='file' the first stage's "
                             "order is kept, so pass a sampler name or relevant_first=False")
        if file_mode and sampler_options:
            raise ValueError("sampler_options are a negative sampler's; with negatives='file' no sampler runs, "
                             "so pass a sampler name or leave sampler_options out")
        sampling = None
        if not file_mode:
            from uncertank.datasets.sampling import NegativeSampling

            sampling = NegativeSampling.of(negatives=negatives, n_candidates=n_candidates, seed=seed,
                                           sampler_options=sampler_options, relevant_first=relevant_first)
        _check_run(parsed, where)
        dataset_id = parsed.dataset_id(split)
        if "{split}" in parsed.name:
            part = parsed.splits[_SPLITS.index(split)]
            ds = _lookup(dataset_id, what=f"{where} for split={split!r} ({{split}} = {part!r})",
                         hint="; name the collection's own parts with ?splits=TRAIN,VALID,TEST (default "
                              "train,dev,test), or cut one part's queries with ?query_split=A/B/C instead of {split}")
        else:
            ds = _lookup(dataset_id, what=where)
        for has, needed in (("queries", "queries"), ("qrels", "relevance judgements (qrels) to label candidates")):
            if not getattr(ds, f"has_{has}")():
                raise ValueError(f"{PREFIX}{dataset_id} has no {needed}{_subsets(dataset_id, has)}")
        stage = _first_stage(parsed, ds, dataset_id)
        if not ds.has_docs():
            raise ValueError(f"{PREFIX}{dataset_id} has no documents, so its candidates would have no text for a "
                             f"ranker to read{_subsets(dataset_id, 'docs')}")
        if stage == "bm25":
            from uncertank.datasets.retrieval import require_bm25s

            require_bm25s()

        # -- the queries, at the door of any expensive work
        texts = _queries(ds, dataset_id)
        grades = _judgements(ds, dataset_id)
        judged = [q for q in texts if q in grades]
        if not judged:
            raise ValueError(f"{PREFIX}{dataset_id}: no query has a relevance judgement; check its qrels")
        query_ids = judged if parsed.query_split is None else _split_queries(judged, parsed, split, where)
        if max_queries is not None and max_queries < len(query_ids):
            keep = np.sort(np.random.default_rng([seed, 2]).permutation(len(query_ids))[:max_queries])
            query_ids = [query_ids[i] for i in keep.tolist()]

        # -- the first stage
        depth = n_candidates if file_mode else None
        doc_texts: dict[str, str] = {}
        if stage == "bm25":
            lists, doc_texts = _bm25_lists(ds, dataset_id, query_ids, texts, depth or BM25_DEPTH)
        elif stage == "run":
            assert parsed.run is not None
            lists = _run_lists(parsed.run, set(query_ids))
        else:
            lists = _scoreddocs(ds, dataset_id, set(query_ids))
        if depth is not None:
            lists = {q: lst[:depth] for q, lst in lists.items()}
        source = {"run": f"run file {parsed.run}", "scoreddocs": "scoreddocs", "bm25": "BM25 first stage"}[stage]
        if sampling is None:
            return self._reranking(ds, dataset_id, query_ids, texts, grades, lists, doc_texts, source,
                                   name=f"{dataset_id}/{split}/{stage}")
        return self._sampled(ds, dataset_id, query_ids, texts, grades, lists, doc_texts, source, sampling,
                             name=f"{dataset_id}/{split}/{sampling.negatives}")

    @staticmethod
    def _reranking(ds: _Dataset, dataset_id: str, query_ids: list[str], texts: Mapping[str, str],
                   grades: Mapping[str, Mapping[str, int]], lists: Mapping[str, list[str]],
                   doc_texts: dict[str, str], source: str, *, name: str) -> QuerySet:
        kept = [q for q in query_ids if lists.get(q)]
        if not kept:
            raise ValueError(f"{PREFIX}{dataset_id}: the {source} retrieves no document for any of its "
                             f"{len(query_ids)} judged queries; check that the query ids match")
        if len(kept) < len(query_ids):
            gone = [q for q in query_ids if not lists.get(q)]
            warnings.warn(f"{PREFIX}{dataset_id}: {len(gone)} of {len(query_ids)} judged queries have no candidate "
                          f"in the {source} and are left out, e.g. query {gone[0]!r}", RuntimeWarning, stacklevel=4)
        needed = {d for q in kept for d in lists[q]} - set(doc_texts)
        if needed:
            doc_texts.update(_doc_texts(ds, dataset_id, needed, source))
        return _query_set(kept, texts, {q: lists[q] for q in kept}, doc_texts,
                          [max(grades[q].get(d, 0), 0) for q in kept for d in lists[q]], name)

    @staticmethod
    def _sampled(ds: _Dataset, dataset_id: str, query_ids: list[str], texts: Mapping[str, str],
                 grades: Mapping[str, Mapping[str, int]], lists: Mapping[str, list[str]],
                 doc_texts: dict[str, str], source: str, sampling: NegativeSampling, *, name: str) -> QuerySet:
        from uncertank.datasets.assembly import redraw_negatives

        best: dict[str, str] = {}
        for q in query_ids:
            relevant = [(g, d) for d, g in grades[q].items() if g > 0]
            if relevant:
                best[q] = min(relevant, key=lambda gd: (-gd[0], gd[1]))[1]  # highest grade, then smallest id
        kept = [q for q in query_ids if q in best]
        if not kept:
            raise ValueError(f"{PREFIX}{dataset_id}: no query has a document judged relevant (grade > 0), so "
                             "there is nothing to draw negatives around")
        if len(kept) < len(query_ids):
            warnings.warn(f"{PREFIX}{dataset_id}: {len(query_ids) - len(kept)} of {len(query_ids)} queries have no "
                          "document judged relevant and are left out", RuntimeWarning, stacklevel=4)
        relevant_anywhere = {d for q in query_ids for d, g in grades[q].items() if g > 0}
        pool_ids = sorted({d for q in query_ids for d in lists.get(q, ())} - relevant_anywhere)
        needed = (set(pool_ids) | set(best.values())) - set(doc_texts)
        if needed:
            doc_texts.update(_doc_texts(ds, dataset_id, needed, source))
        positives = _query_set(kept, texts, {q: [best[q]] for q in kept}, doc_texts, [1] * len(kept), name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # said above, naming the dataset
            return redraw_negatives(positives, sampling=sampling, pool=[doc_texts[d] for d in pool_ids],
                                    pool_ids=pool_ids, groups=None, pool_groups=None, name=name)

    def __repr__(self) -> str:
        return "IrdsLoader()"


def irds_qrels(name: str) -> pd.DataFrame:
    """The relevance judgements of an ``irds:`` name as a frame, as :func:`~uncertank.datasets.read_qrels` returns.

    What ``uncertank evaluate --qrels irds:NAME`` reads.

    Parameters
    ----------
    name : str
        ``"irds:NAME"``, without options or ``{split}``.

    Returns
    -------
    pandas.DataFrame
        Columns ``query_id`` (str), ``doc_id`` (str) and ``relevance``
        (int64, negative grades kept), one row per judgement; a document
        judged twice for a query keeps its highest grade.

    Raises
    ------
    ValueError
        For a name without the ``irds:`` prefix, with options or
        ``{split}``, or of a dataset without qrels.
    UnknownNameError, DatasetUnavailableError, ImportError
        As the ``irds:`` loader.
    """
    import pandas as pd

    if not isinstance(name, str) or not name.startswith(PREFIX):
        raise ValueError(f"qrels must be 'irds:NAME' here, e.g. 'irds:msmarco-passage/trec-dl-2019/judged'; "
                         f"got {name!r}")
    arg = name[len(PREFIX):]
    if "?" in arg or "{split}" in arg:
        raise ValueError(f"qrels {name!r}: give the qrels of one ir_datasets name, without options (?...) or "
                         "{split}; they are every judgement of that dataset")
    parsed = IrdsName.parse(arg)
    ds = _lookup(parsed.name, what=f"qrels {name!r}")
    if not ds.has_qrels():
        raise ValueError(f"qrels {name!r}: {parsed.name} has no relevance judgements{_subsets(parsed.name, 'qrels')}")
    grades = _judgements(ds, parsed.name)
    rows = [(q, d, g) for q, per in grades.items() for d, g in per.items()]
    if not rows:
        raise ValueError(f"qrels {name!r}: {parsed.name} holds no judgement")
    qrels: pd.DataFrame = pd.DataFrame({
        "query_id": pd.Series([r[0] for r in rows], dtype=str),
        "doc_id": pd.Series([r[1] for r in rows], dtype=str),
        "relevance": np.array([r[2] for r in rows], dtype=np.int64),
    })
    return qrels
