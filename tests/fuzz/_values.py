"""Values the fuzz harness feeds to uncertank's public callables and to the ``uncertank`` command.

Two kinds: *bad and extreme* values (NaN, inf, 0, negatives, integers above
2**63, 1e308, empties, one element, ties, wrong types and shapes, duplicated
keys, unicode, paths that are files, folders, missing or read-only) and
*plausible* values chosen by the parameter's name (``scores``, ``labels``,
``alpha``, ``queries``...), so that a call gets past its first check and the
checks behind it are reached too. Every strategy draws from fixed pools, so
that a failing example shrinks to one value of the pool.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

DATA = Path(__file__).resolve().parents[1] / "data"


class Paths:
    """Files and folders of every kind, made once in a scratch folder."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.missing = root / "missing" / "nothing.txt"
        self.folder = root / "a-folder"
        self.folder.mkdir(exist_ok=True)
        self.empty = root / "empty.txt"
        self.empty.write_text("", encoding="utf-8")
        self.garbage = root / "garbage.bin"
        self.garbage.write_bytes(b"\xff\xfe\x00\x01 not text \x80\x81\n\t\t\n")
        self.unicode = root / "ünïcødé ☃.txt"
        self.unicode.write_text("q1 Q0 d1 1 nan a\nq1 Q0 d1 1 inf a\n", encoding="utf-8")
        self.readonly = root / "read-only"
        self.readonly.mkdir(exist_ok=True)
        (self.readonly / "results.json").write_text("{}", encoding="utf-8")
        os.chmod(self.readonly, stat.S_IRUSR | stat.S_IXUSR)
        # copies: a writer fuzzed with one of these paths overwrites the copy, never the tests' own data
        self.run = root / "edge-a.run"
        self.run.write_bytes((DATA / "edge-a.run").read_bytes())
        self.qrels = root / "edge.qrels"
        self.qrels.write_bytes((DATA / "edge.qrels").read_bytes())
        self.toml_dup = root / "duplicated.toml"
        self.toml_dup.write_text('name = "a"\nname = "b"\n', encoding="utf-8")
        self.huge = root / "huge.run"
        self.huge.write_text(f"q1 Q0 d1 {2**64} 1e308 a\nq1 Q0 d2 1 -1e308 a\n", encoding="utf-8")

    def all(self) -> list[Any]:
        kinds = [self.missing, self.folder, self.empty, self.garbage, self.unicode, self.readonly,
                 self.run, self.qrels, self.toml_dup, self.huge]
        return kinds + [str(p) for p in kinds]


#: Numbers at and beyond every edge: NaN, the infinities, 0, negatives, above 2**63, the largest floats, and
#: integers past the range of a float (10**400), which float() refuses with an OverflowError.
BAD_NUMBERS: list[Any] = [
    math.nan, math.inf, -math.inf, 0, 0.0, -1, -0.5, 1, 1.0, 2, 0.5, 1e-320, 2**63, 2**64, -(2**63) - 1,
    1e308, -1e308, 1e20, 10**400, -(10**400), np.float64(np.nan), np.int64(-3), True, False,
]

#: Values of the wrong kind: None, strings, bytes, containers, objects.
BAD_OBJECTS: list[Any] = [None, "", "é☃\u200b", "nan", "0.5", b"x", [], (), {}, {"a": 1}, object(), 1j, ["a", "b"]]


def bad_arrays() -> list[Any]:
    """Arrays that break promises: empty, one element, NaN, inf, ties, wrong rank, wrong dtype, huge."""
    return [
        np.array([]), np.array([0.5]), np.array([np.nan, 0.5]), np.array([np.inf, 0.5, 0.1]),
        np.full(6, 0.5), np.zeros(6), np.ones(6), np.array([[0.1, 0.2], [0.3, 0.4]]),
        np.array(["a", "b"]), np.array([1e308, -1e308, 1e308]), np.array([2.0**64, 1.0]),
        np.array([-1, 2, 3]), np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0]), [math.nan], [[]],
        np.arange(6, dtype=np.int64), np.array([True, False, True]), [0.2, "x"],
    ]


def bad_values(paths: Paths) -> st.SearchStrategy[Any]:
    """Any bad or extreme value."""
    return st.sampled_from(BAD_NUMBERS + BAD_OBJECTS + bad_arrays() + paths.all())


def _containers() -> dict[str, Any]:
    from uncertank import Predictions, PredictiveSamples, QuerySet, RankedLists

    qs = QuerySet.from_lists(["q one", "q two"], [["a", "b", "c"], ["d", "e", "f"]], [[1, 0, 0], [0, 0, 1]])
    ties = QuerySet.from_lists(["q"], [["a", "b", "c"]], [[0, 0, 0]])
    scores = np.array([0.9, 0.2, 0.4, 0.1, 0.3, 0.8])
    pred = Predictions(scores, qs.offsets, ranker="r")
    samples = PredictiveSamples(np.clip(scores + np.array([[0.0], [0.05], [-0.05]]), 0, 1), qs.offsets)
    ranked = RankedLists(scores, qs.labels, qs.offsets)
    flat_ties = RankedLists(np.full(3, 0.5), np.zeros(3, dtype=np.int64), np.array([0, 3]))
    return {"queries": qs, "ties": ties, "pred": pred, "samples": samples, "ranked": ranked,
            "flat_ties": flat_ties, "scores": scores}


def plausible(name: str, paths: Paths) -> list[Any]:
    """Values that would pass for parameter ``name`` (by its name), so that later checks are reached."""
    c = _containers()
    n = name.lower()
    scores = [c["scores"], np.array([0.1, 0.9, 0.5, 0.5, 0.2, 0.7]), [0.3, 0.6, 0.6]]
    labels = [np.array([1, 0, 0, 0, 0, 1]), np.array([0, 0, 0, 0, 0, 0]), [1, 1, 1]]
    table: list[tuple[tuple[str, ...], list[Any]]] = [
        (("quer", "qs", "data", "test", "calib", "valid", "train", "dev"), [c["queries"], c["ties"]]),
        (("pred",), [c["pred"]]),
        (("sample",), [c["samples"], 3]),
        (("ranked", "lists", "run"), [c["ranked"], c["flat_ties"]]),
        (("score", "prob", "x", "y", "values", "mean", "var", "std", "a", "b", "logit"), scores),
        (("label", "relevan", "target", "truth", "correct"), labels),
        (("offset",), [np.array([0, 3, 6]), np.array([0, 6])]),
        (("alpha", "delta", "level", "quantile", "frac", "phi", "q", "p", "coverage", "r"), [0.1, 0.5, 0.9]),
        (("seed", "random_state", "rng"), [0, 1]),
        (("n_", "k", "depth", "bins", "size", "count", "draws", "chains", "tune", "top"), [1, 2, 5]),
        (("path", "file", "folder", "dir", "out", "source", "qrels"), [paths.run, paths.qrels, paths.folder]),
        (("name", "metric", "ranker", "kind", "method", "family", "strategy", "mode", "norm", "test", "system"),
         ["map", "mrr", "ece", "bm25", "gaussian", "ranker", "x"]),
    ]
    for keys, values in table:
        if any(n.startswith(k) or n.endswith(k) or (len(k) > 2 and k in n) for k in keys):
            return values
    return [0.5, 1, "x", *scores[:1], *labels[:1]]


def values_for(name: str, paths: Paths) -> st.SearchStrategy[Any]:
    """Bad, extreme and plausible values for a parameter named ``name``."""
    return st.one_of(st.sampled_from(plausible(name, paths)), bad_values(paths))
