"""The bundled TREC-COVID round 1 data of Benham, Moffat & Culpepper (ECIR 2021).

:func:`load_trec_covid_round1` returns the data of "Bayesian System
Inference on Shallow Pools" (ECIR 2021), bundled with the package under its
MIT licence (the notice ships beside the files, in
``uncertank/datasets/_data/trec-covid-round1/``).
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Literal

import numpy as np

from uncertank.validation import check_choice

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TREC_COVID_ROUND1_BM25_BASELINE", "load_trec_covid_round1"]

#: The run the paper's URisk analysis uses as its BM25 baseline.
TREC_COVID_ROUND1_BM25_BASELINE = "bm25_baseline"

_KINDS = ("scores", "rbp_gain", "pooled")
_FILES = {"scores": "round1_data.csv", "rbp_gain": "round1_rbpgain.csv", "pooled": "round1_pooled.csv"}


def _read_bundled(name: str) -> pd.DataFrame:
    import pandas as pd

    ref = resources.files("uncertank.datasets").joinpath("_data").joinpath("trec-covid-round1").joinpath(name)
    with ref.open("rb") as fh:
        return pd.read_csv(fh)


def load_trec_covid_round1(
    kind: Literal["scores", "rbp_gain", "pooled"] = "scores", *, pooled_only: bool = False
) -> pd.DataFrame:
    """The bundled TREC-COVID round 1 data of Benham, Moffat & Culpepper (ECIR 2021).

    Copied unedited from the ``rmit-ir/bayesian-shallow`` repository (MIT
    licence, Copyright (c) 2021 Rodger Benham; the notice ships beside the
    files).

    Parameters
    ----------
    kind : {"scores", "rbp_gain", "pooled"}
        - ``"scores"``: 107 runs x 30 topics, columns ``system``, ``topic``
          (int), ``score``: one per-topic score in [0, 1]. The source does
          not label it; on the 3,150 (system, topic) cells shared with
          ``"rbp_gain"``, 3,137 lie within the depth-7 truncation residual of
          binary RBP with persistence 0.5 computed from those gains (grade >
          0 counts as relevant), so it is most likely RBP(0.5) over the whole
          run; the 13 others differ, by up to 0.124.
        - ``"rbp_gain"``: columns ``system``, ``topic``, ``rank``, ``score``:
          the RBP (persistence 0.8) gain of each ranked document, ranks 1-7
          (a few 8-9), ``(1 - 0.8) * 0.8 ** (rank - 1) * g`` with graded gain
          g in {0, 0.5, 1}. Its run set differs from ``"scores"`` by two
          runs each way (none of the four pooled).
        - ``"pooled"``: 143 runs, columns ``system`` and ``pooled`` (bool):
          whether the run contributed to the judgement pool (56 did).
    pooled_only : bool
        Keep only the pooled runs: 42 runs in ``"scores"`` and
        ``"rbp_gain"``. This is the paper's setting: its code keeps
        ``pooled == 1``, and the 14 pooled runs absent from the files are
        the bottom 25% of the 56 pooled runs that the paper discards.

    Returns
    -------
    pandas.DataFrame
        In file order. :data:`TREC_COVID_ROUND1_BM25_BASELINE`
        (``"bm25_baseline"``) is the BM25 baseline run of the paper's risk
        analysis.

    Examples
    --------
    >>> df = load_trec_covid_round1("scores", pooled_only=True)
    >>> df["system"].nunique(), df["topic"].nunique()
    (42, 30)
    """
    check_choice(kind, "kind", _KINDS)
    if not isinstance(pooled_only, bool):
        raise TypeError(f"pooled_only must be a bool; got {type(pooled_only).__name__}")
    df = _read_bundled(_FILES[kind])
    df["system"] = df["system"].astype(str)
    if kind == "pooled":
        df["pooled"] = df["pooled"].astype(bool)
        return df[df["pooled"]].reset_index(drop=True) if pooled_only else df
    df["topic"] = df["topic"].astype(np.int64)
    if kind == "rbp_gain":
        df["rank"] = df["rank"].astype(np.int64)
    df["score"] = df["score"].astype(np.float64)
    if pooled_only:
        pooled = _read_bundled(_FILES["pooled"])
        keep = set(pooled.loc[pooled["pooled"].astype(bool), "system"].astype(str))
        df = df[df["system"].isin(keep)].reset_index(drop=True)
    return df
