"""What each metric column of the report means: one sentence with its definition and its source.

:func:`define` reads a column's registry name and options from
``result.metric_info`` (results written before it kept them: the label)
and returns the sentence the report puts under the table and in the
header's tooltip. The definitions follow docs/metrics.md. A metric this
module does not know (a plugin's) gets its registry name and direction.
"""

from __future__ import annotations

from collections.abc import Mapping

from uncertank.experiment.result import StudyResult, json_object
from uncertank.validation import check_instance, check_name

__all__ = ["define"]

#: Registry name and options of the default columns, for results written before metric_info kept them.
_BY_LABEL: dict[str, tuple[str, dict[str, object]]] = {
             "R@1": ("recall_at_k", {"k": 1}), "MAP": ("map", {}), "MRR": ("mrr", {}), "ECE": ("ece", {}),
             "ECE quantile": ("ece", {"strategy": "quantile"}), "ECE balanced": ("ece", {"balanced": True}),
             "ECE Penha-Hauff": ("ece", {"convention": "penha-hauff"}), "MCE": ("mce", {}), "Brier": ("brier", {}),
             "NLL": ("nll", {})}


def _ece(opts: Mapping[str, object]) -> str:
    if opts.get("convention") == "penha-hauff":
        bins = opts.get("n_bins", 50)
        return (f"ECE in the convention of Penha & Hauff's released code (EACL 2021): {bins} equal-width bins, and "
                f"the sum divided by the number of bins a second time, so about {bins}x smaller than `ECE` on the "
                "same scores; compare it only with that paper's numbers")
    bins = opts.get("n_bins", 10)
    kind = "equal-mass (quantile)" if opts.get("strategy") == "quantile" else "equal-width"
    norm = opts.get("norm", "l1")
    if norm == "max":
        text = (f"MCE: the largest gap between a bin's mean score and its fraction of relevant pairs over {bins} "
                f"{kind} bins, however few pairs the bin holds (Naeini et al. 2015)")
    elif norm == "l2":
        text = (f"l2 calibration error: the root of the pair-weighted mean squared gap over {bins} {kind} bins "
                "(Kumar et al. 2019)")
    else:
        text = (f"expected calibration error: the pair-weighted mean gap between a bin's mean score and its fraction "
                f"of relevant pairs, over {bins} {kind} bins (Naeini et al. 2015)")
    if opts.get("balanced"):
        k = opts.get("n_subsamples", 1)
        sub = "a random subsample" if k == 1 else f"the mean over {k} random subsamples"
        text += (f", on as many non-relevant as relevant pairs ({sub} of the non-relevant ones), the balanced "
                 "setting of Penha & Hauff (EACL 2021), Table 1")
    else:
        text += ", over all pairs"
    return text


def _sentence(name: str, opts: Mapping[str, object]) -> str | None:
    k = opts.get("k")
    cut = f" of the top {k}" if k else ""
    if name == "recall_at_k":
        n = opts.get("n")
        first = f" among the first {n} candidates of each list" if n else ""
        return (f"the share of queries with a relevant candidate in the top {k or 1}{first} (R_n@k of response "
                "ranking, Lowe et al. 2015; trec_eval success)")
    if name == "map":
        return (f"mean average precision{cut}: the mean over queries of the precision at each relevant candidate's "
                "rank, averaged over its relevant candidates (trec_eval map)")
    if name == "mrr":
        return f"mean reciprocal rank{cut}: the mean over queries of 1 / the rank of the first relevant candidate"
    if name == "ndcg":
        return (f"normalised discounted cumulative gain of the top {k or 10}: linear gain, log2 discount, divided "
                "by the ideal ordering's (Järvelin & Kekäläinen 2002; trec_eval ndcg_cut)")
    if name == "precision":
        return f"the share of relevant candidates among the top {k or 10}"
    if name == "trec_recall_at_k":
        return f"the share of a query's relevant candidates found in the top {k or 10} (trec_eval recall)"
    if name == "ece":
        return _ece(opts)
    if name == "mce":
        return _ece({**opts, "norm": "max"})
    if name == "brier":
        return ("Brier score: the mean squared difference between score and label over all pairs (Brier 1950); "
                "a constant 0.5 scores 0.25")
    if name == "nll":
        return ("negative log-likelihood: the mean of −log of the probability given to each pair's label, over all "
                "pairs; large for confident mistakes")
    return None


def define(result: StudyResult, label: str) -> str:
    """The definition of the column ``label``: ``the share of queries ...; higher is better``."""
    check_instance(result, "result", StudyResult)
    check_name(label, "label")
    info = result.metric_info.get(label, {})
    name, opts = info.get("name"), dict(json_object(info.get("options")))
    if name is None and label in _BY_LABEL:
        name, opts = _BY_LABEL[label][0], dict(_BY_LABEL[label][1])
    text = _sentence(str(name), opts)
    if text is None:
        text = f"metric `{name or label}` of the metric registry (a plugin's; see its documentation)"
    return text + ("; higher is better" if info.get("higher_is_better", True) else "; lower is better")
