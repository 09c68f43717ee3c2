"""ir_measures' metric names (``nDCG@10``, ``AP``, ``P(rel=2)@5``) as registered metrics with options.

:func:`resolve_metrics <uncertank.metrics.resolve_metrics>` looks a name up
in the metric registry first and, when it is not registered, reads it as an
ir_measures measure (MacAvaney et al. 2022): ``Name(param=value, ...)@cutoff``.
Each measure maps to one registered metric and its options:

============  ====================  =====================================
ir_measures   registered metric     trec_eval
============  ====================  =====================================
``nDCG@k``    ``ndcg`` (``k``)      ``ndcg_cut_k`` (``nDCG``: ``ndcg``)
``AP``        ``map``               ``map`` (``AP@k``: ``map_cut_k``)
``RR``        ``mrr``               ``recip_rank``
``P@k``       ``precision``         ``P_k``
``R@k``       ``trec_recall_at_k``  ``recall_k``
``Success@k`` ``recall_at_k``       ``success_k`` (R_n@k)
============  ====================  =====================================

``rel=N`` (the lowest grade that counts as relevant, trec_eval's ``-l``)
becomes the metric's ``rel`` option; for ``nDCG`` it sets the gain of
grades below ``N`` to 0 (ir_measures has no ``rel`` for nDCG; this is the
nDCG of qrels with those grades set to 0). The aliases ``NDCG``, ``MAP``,
``MRR``, ``Precision`` and ``Recall`` are understood. The column label is
ir_measures' own spelling of the measure (defaults dropped, ``MAP`` written
``AP``), and so is the measure's canonical identifier
(:mod:`uncertank.metrics.measures`).

Note that ir_measures' ``R@k`` is the recall of trec_eval (relevant in the
top k over all relevant), not the R_n@k of response ranking that
``recall_at_k`` computes and labels ``R@k``; that one is ``Success@k``.
Since no two measures share a label, ``R@k`` asked for by its ir_measures
name is labelled ``Recall@k`` (ir_measures' other spelling of it), while
its identifier is ``R@k``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypedDict

from typing_extensions import NotRequired

from uncertank.metrics.measures import MEASURES

__all__ = ["IR_MEASURES", "IRMeasureEntry", "parse_ir_measure"]

#: ir_measures measure name -> (registered metric, whether a cutoff is required): the
#: measures of :data:`~uncertank.metrics.measures.MEASURES` whose identifier is ir_measures' name.
IR_MEASURES: Mapping[str, tuple[str, bool]] = MappingProxyType(
    {m.id: (m.name, m.cutoff_required) for m in MEASURES.values() if m.ir_measures}
)

#: ir_measures' other spellings of the same measures.
_ALIASES = {"NDCG": "nDCG", "MAP": "AP", "MRR": "RR", "Precision": "P", "Recall": "R"}

_SYNTAX = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_]*)\s*(?:\((?P<params>[^()]*)\))?\s*(?:@\s*(?P<cutoff>\S+))?")

#: Parameters understood, with the value ir_measures takes by default.
_DEFAULTS: dict[str, int | bool | str] = {"rel": 1, "judged_only": False, "dcg": "log2"}


class IRMeasureEntry(TypedDict):
    """The metric entry of an ir_measures name: what :func:`parse_ir_measure` returns."""

    name: str  # the registered metric
    k: int | None  # the cutoff, None without one
    rel: NotRequired[int]  # the lowest relevant grade, when it is not 1
    label: str  # ir_measures' spelling


def _value(measure: str, key: str, raw: str) -> int | bool | str:
    """A parameter value: ``rel`` an integer >= 1, ``judged_only`` False, ``dcg`` log2."""
    text = raw.strip().strip("'\"")
    if key == "rel":
        if not re.fullmatch(r"\+?\d+", text) or int(text) < 1:
            raise ValueError(
                f"metric {measure!r}: rel must be an integer >= 1 (the lowest relevant grade); got {raw!r}"
            )
        return int(text)
    if key == "judged_only":
        if text.lower() in ("false", "0"):
            return False
        if text.lower() in ("true", "1"):
            raise ValueError(
                f"metric {measure!r}: judged_only=True is not supported (unjudged documents count as "
                "non-relevant, as trec_eval's default); drop it"
            )
        raise ValueError(f"metric {measure!r}: judged_only must be True or False; got {raw!r}")
    if text != "log2":  # dcg
        raise ValueError(
            f"metric {measure!r}: only dcg=log2 is supported (linear gains, trec_eval's ndcg); got {raw!r}"
        )
    return text


def parse_ir_measure(text: str) -> IRMeasureEntry | None:
    """The metric entry of an ir_measures name, or None when ``text`` names no supported measure.

    Parameters
    ----------
    text : str
        ``Name``, ``Name@cutoff`` or ``Name(param=value, ...)@cutoff`` with a
        name of :data:`IR_MEASURES` (or an alias).

    Returns
    -------
    IRMeasureEntry (a dict) or None
        ``{"name": registered metric, **options, "label": ir_measures spelling}``,
        an entry for :func:`~uncertank.metrics.resolve_metrics`.

    Raises
    ------
    ValueError
        A supported measure with a malformed or unsupported parameter, a
        cutoff that is not an integer >= 1, or no cutoff where the measure
        needs one (``P``, ``R``, ``Success``).

    Examples
    --------
    >>> parse_ir_measure("nDCG(rel=2)@10")
    {'name': 'ndcg', 'k': 10, 'rel': 2, 'label': 'nDCG(rel=2)@10'}
    >>> parse_ir_measure("MAP")
    {'name': 'map', 'k': None, 'label': 'AP'}
    >>> parse_ir_measure("bleu") is None
    True
    """
    if not isinstance(text, str):
        return None
    match = _SYNTAX.fullmatch(text.strip())
    if match is None:
        return None
    name = _ALIASES.get(match["name"], match["name"])
    if name not in IR_MEASURES:
        return None
    metric, needs_cutoff = IR_MEASURES[name]
    params: dict[str, int | bool | str] = {}
    if match["params"] is not None and match["params"].strip():
        for part in match["params"].split(","):
            key, eq, raw = part.partition("=")
            key = key.strip()
            if not eq or not key:
                raise ValueError(f"metric {text!r}: parameters are key=value pairs separated by commas; got {part!r}")
            allowed = ("rel", "judged_only", "dcg") if name == "nDCG" else ("rel", "judged_only")
            if key not in allowed:
                raise ValueError(f"metric {text!r}: {name} has no parameter {key!r}; supported: {', '.join(allowed)}")
            if key in params:
                raise ValueError(f"metric {text!r}: parameter {key!r} is given twice")
            params[key] = _value(text, key, raw)
    cutoff: int | None = None
    if match["cutoff"] is not None:
        if not re.fullmatch(r"\d+", match["cutoff"]) or int(match["cutoff"]) < 1:
            raise ValueError(f"metric {text!r}: the cutoff after '@' must be an integer >= 1; got {match['cutoff']!r}")
        cutoff = int(match["cutoff"])
    elif needs_cutoff:
        raise ValueError(f"metric {text!r}: {name} needs a cutoff, e.g. {name}@10")
    shown = {k: v for k, v in sorted(params.items()) if v != _DEFAULTS[k]}
    label = name + (f"({', '.join(f'{k}={v}' for k, v in shown.items())})" if shown else "")
    label += "" if cutoff is None else f"@{cutoff}"
    if "rel" in shown:
        return IRMeasureEntry(name=metric, k=cutoff, rel=int(shown["rel"]), label=label)
    return IRMeasureEntry(name=metric, k=cutoff, label=label)
