"""The data model: what rankers read (:class:`QuerySet`) and what evaluators read.

All containers store one flat array per field plus CSR-style ``offsets`` of
shape ``(n_queries + 1,)``: the candidates of query ``q`` are the slice
``offsets[q]:offsets[q + 1]``. Lists may differ in length.

Every container owns its data: arrays are copied on construction (unless
already a private read-only array) and stored read-only, and sequences of
texts are copied into lists, so that changing the caller's array or list
afterwards changes nothing here, and nothing validated can become invalid.

The containers live in one module per concept and are re-exported here,
where the rest of the package imports them from:

- :mod:`uncertank._lists`: :class:`QuerySet` (what rankers read) and
  :class:`RankedLists` (what evaluators read);
- :mod:`uncertank._predictions`: :class:`Predictions` and
  :class:`PredictiveSamples` (what rankers output);
- :mod:`uncertank._owned`: the ownership rule every container applies.
"""

from __future__ import annotations

from uncertank._lists import QuerySet, RankedLists
from uncertank._predictions import Predictions, PredictiveSamples

__all__ = ["PredictiveSamples", "Predictions", "QuerySet", "RankedLists"]
