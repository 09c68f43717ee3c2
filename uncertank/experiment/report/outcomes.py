"""The report's sections on what the uncertainty is worth, the Bayesian comparison and the timings.

Risk-aware reranking, NOTA, selective prediction, reliability diagrams, ECE
against the imbalance ratio, the Bayesian comparison of systems, and the
steps of the study: each a heading, a generated sentence, a table and a
figure, from the :class:`~uncertank.experiment.result.StudyResult` and the
curve data stored beside ``results.json`` alone.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from uncertank.experiment.report.document import Doc
from uncertank.experiment.report.figures import Figures
from uncertank.experiment.report.markdown import MARK, cell, names
from uncertank.experiment.report.sections import conditions_of, open_section
from uncertank.experiment.result import BayesOutcome, Evaluation, ExternalRunOutcome, StudyResult, json_number
from uncertank.formatting import format_interval, format_number, format_pvalue
from uncertank.validation import check_instance, check_path

__all__ = ["DIAGNOSTIC_LABELS", "bayes", "imbalance", "nota", "reliability", "risk", "run_warnings", "selective",
           "timings"]

#: Human labels of the Bayesian fit's diagnostics (:meth:`uncertank.bayes.Diagnostics.to_dict` keys).
DIAGNOSTIC_LABELS = {
    "max_rhat": "largest R-hat",
    "min_ess_bulk": "smallest bulk ESS",
    "min_ess_tail": "smallest tail ESS",
    "n_divergences": "divergent transitions",
    "divergences": "divergent transitions",
    "n_chains": "chains",
    "n_draws": "draws per chain",
    "worst_rhat": "parameter with the largest R-hat",
    "worst_ess": "parameter with the smallest ESS",
    "problems": "problems",
    "rhat_available": "R-hat available",
}


def _diagnostic_label(key: str) -> str:
    return DIAGNOSTIC_LABELS.get(key, key.replace("_", " "))


def risk(doc: Doc, result: StudyResult, figs: Figures) -> None:
    """Risk-aware reranking: chosen b, R@1 by the mean and risk-aware, the stored tests; R@1 against b."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_instance(figs, "figs", Figures)
    evs = open_section(doc, result, "Risk-aware reranking", lambda e: e.risk is not None,
                       "No ranker gave predictive samples, so risk-aware reranking (Penha & Hauff 2021, "
                       "eq. 7) was not run.")
    if not evs:
        return
    sig = result.significance
    alpha = sig.alpha if sig is not None else 0.05
    rows, improved, marked, zero_b = [], [], [], 0
    for e in evs:
        r = e.risk
        assert r is not None
        test = sig.risk_test(e.ranker, e.condition) if sig is not None else None
        delta = r.r1_risk_aware - r.r1_mean
        mark = MARK if test is not None and test.significant else ""
        if delta > 0:
            improved.append(f"{e.ranker} / {e.condition}")
        if mark:
            marked.append(f"{e.ranker} / {e.condition}")
        zero_b += r.b == 0
        rows.append([f"`{e.condition}`", f"`{e.ranker}`", format_number(r.b), format_number(r.r1_mean),
                     format_number(r.r1_risk_aware), f"{delta:+.4f}{mark}", format_pvalue(r.p_value),
                     format_pvalue(test.p_adjusted if test is not None else None)])
    text = (f"With the risk aversion b chosen on validation R@1, risk-aware ranking raises test R@1 for "
            f"{len(improved)} of {len(evs)} ranker-condition pairs")
    text += f", significantly for {names(marked)}" if marked else ", none significantly"
    text += f"; b = 0 (ranking by the mean) was chosen for {zero_b} of them." if zero_b else "."
    doc.text(text)
    doc.table(["condition", "ranker", "b", "R@1 by mean", "R@1 risk-aware", "change", "p", "p (Holm)"], rows,
              ["b: the risk aversion of Penha & Hauff (2021) eq. 7, chosen on the validation split. "
               "p: paired t-test over queries between the two rankings (– when they never differ); p (Holm): "
               f"adjusted over this table; {MARK}: significant at α = {alpha}."])
    oracle = [e for e in evs if e.risk is not None and e.risk.oracle_b is not None]
    if oracle:
        gains = [e for e in oracle if e.risk is not None and e.risk.p_value_oracle is not None
                 and e.risk.p_value_oracle < alpha and (e.risk.r1_oracle or 0.0) > e.risk.r1_mean]
        text = ("An upper bound, not a result: the b of the grid with the best R@1 on the test condition itself "
                "(the oracle), chosen with the test labels. ")
        text += (f"The oracle gains significantly (raw p < {alpha}) for "
                 f"{names([f'{e.ranker} / {e.condition}' for e in gains])}." if gains else
                 f"Even the oracle gains nothing significant (raw p < {alpha}) for any ranker-condition pair: "
                 "on this data the uncertainty carries no risk signal that a choice of b could use.")
        doc.text(text)
        doc.table(["condition", "ranker", "b chosen", "oracle b", "R@1 by mean", "R@1 oracle", "change", "p"],
                  [[f"`{e.condition}`", f"`{e.ranker}`", format_number(e.risk.b), format_number(e.risk.oracle_b),
                    format_number(e.risk.r1_mean), format_number(e.risk.r1_oracle),
                    f"{(e.risk.r1_oracle or 0.0) - e.risk.r1_mean:+.4f}", format_pvalue(e.risk.p_value_oracle)]
                   for e in oracle if e.risk is not None],
                  ["oracle b: the best b on the test condition (the smallest |b| on ties); p: paired t-test over "
                   "queries against ranking by the mean, not adjusted."])
    mixed = [e for e in evs if e.risk is not None and e.risk.mixed_means_from is not None]
    if mixed:
        source = mixed[0].risk.mixed_means_from if mixed[0].risk is not None else ""
        doc.text(f"Risk-aware reranking on `{source}`'s means with each stochastic ranker's (co)variances "
                 "(Penha & Hauff's RA-BERT mixes bert's means with an ensemble's variances), b chosen on "
                 "validation.")
        doc.table(["condition", "variances of", "b", f"R@1 by {source}", "R@1 risk-aware", "change", "p"],
                  [[f"`{e.condition}`", f"`{e.ranker}`", format_number(e.risk.mixed_b),
                    format_number(e.risk.r1_mixed_mean), format_number(e.risk.r1_mixed),
                    f"{(e.risk.r1_mixed or 0.0) - (e.risk.r1_mixed_mean or 0.0):+.4f}",
                    format_pvalue(e.risk.p_value_mixed)]
                   for e in mixed if e.risk is not None],
                  ["p: paired t-test over queries against ranking by the reference's means, not adjusted."])
    doc.figure(figs.risk(evs, conditions_of(result, evs)),
               "Test R@1 against the risk aversion b, per ranker and condition; the star marks the b chosen "
               "on validation.")


def nota(doc: Doc, result: StudyResult) -> None:
    """NOTA prediction from the means, and from the means and variances."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    evs = open_section(doc, result, "NOTA prediction", lambda e: e.nota is not None,
                       "NOTA prediction was not run (it needs a ranker whose scores are probabilities).")
    if not evs:
        return
    alpha = result.significance.alpha if result.significance is not None else 0.05
    rows, helped, sig = [], [], []
    for e in evs:
        n = e.nota
        assert n is not None
        if n.f1_means_var is not None and n.f1_means_var > n.f1_means:
            helped.append(e.ranker)
            if n.p_value is not None and n.p_value < alpha:
                sig.append(e.ranker)
        rows.append([f"`{e.ranker}`", f"`{e.condition}`",
                     f"{format_number(n.f1_means)} ± {format_number(n.f1_means_sd)}",
                     "–" if n.f1_means_var is None else
                     f"{format_number(n.f1_means_var)} ± {format_number(n.f1_means_var_sd)}",
                     format_pvalue(n.p_value)])
    with_var = [e for e in evs if e.nota is not None and e.nota.f1_means_var is not None]

    def top(e: Evaluation) -> float:
        return max(e.nota.f1_means, e.nota.f1_means_var or -1.0) if e.nota else -1.0

    best = max(evs, key=top)
    text = f"The best NOTA macro-F1 is `{best.ranker}`'s ({format_number(top(best))})"
    if with_var:
        text += (f"; adding the variances to the features raises F1 for {len(helped)} of {len(with_var)} stochastic "
                 f"rankers" + (f", significantly (p < {alpha}) for {names(sig)}." if sig else ", none significantly."))
    else:
        text += "; no ranker gave variances, so only the means are used."
    doc.text(text)
    doc.table(["ranker", "condition", "F1 means", "F1 means + variances", "p"], rows,
              ["Macro-F1 (mean ± sd over stratified 5-fold cross-validation) of a random forest predicting whether "
               "no candidate is relevant, from the sorted scores, and from the scores and their variances (Penha & "
               "Hauff 2021, sec. 5.3). p: paired t-test over folds between the two feature sets."])


def selective(doc: Doc, result: StudyResult, figs: Figures) -> None:
    """Selective prediction: AURC per ranker and condition, and the risk-coverage curves."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_instance(figs, "figs", Figures)
    evs = open_section(doc, result, "Selective prediction", lambda e: e.selective is not None,
                       "Selective prediction was not computed in this study.")
    if not evs:
        return
    rows = []
    conds = conditions_of(result, evs)
    for cond in conds:
        cevs = [e for e in evs if e.condition == cond and e.selective is not None]
        low = min(e.selective.aurc for e in cevs if e.selective)
        for e in cevs:
            s = e.selective
            assert s is not None
            rows.append([f"`{cond}`", f"`{e.ranker}`", s.confidence, cell(s.aurc, math.isclose(s.aurc, low)),
                         format_number(s.oracle_aurc), format_number(s.aurc - s.oracle_aurc)])
    c0 = [e for e in evs if e.condition == conds[0] and e.selective]
    best = min(c0, key=lambda e: e.selective.aurc if e.selective else math.inf)
    assert best.selective is not None
    doc.text(f"Abstaining on the queries whose top candidate is least certain, `{best.ranker}` has the lowest area "
             f"under the risk-coverage curve under `{conds[0]}` (AURC {format_number(best.selective.aurc)}, against "
             f"{format_number(best.selective.oracle_aurc)} for an oracle that abstains on its errors first).")
    doc.table(["condition", "ranker", "certainty", "AURC", "oracle AURC", "excess"], rows,
              ["AURC: area under the risk-coverage curve, risk being the share of answered queries whose top "
               "candidate is not relevant (lower is better; best per condition in bold). Certainty: the top "
               "candidate's probability, or its margin over the runner-up for scores that are not probabilities."])
    doc.figure(figs.risk_coverage(evs, conds),
               "Risk-coverage curves: the top-1 error rate among the queries answered, as the least certain "
               "queries are left out; one panel per condition.")


def reliability(doc: Doc, result: StudyResult, figs: Figures) -> None:
    """Reliability diagrams, rankers overlaid, one panel per condition."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_instance(figs, "figs", Figures)
    evs = open_section(doc, result, "Reliability diagrams",
                       lambda e: e.reliability is not None and e.reliability.count,
                       "No ranker's scores are probabilities, so there are no reliability diagrams.")
    if not evs:
        return
    src = figs.reliability(evs, conditions_of(result, evs))
    doc.text("Fraction of relevant pairs against the mean predicted probability per bin, the rankers overlaid; a "
             "calibrated ranker follows the diagonal.")
    doc.figure(src, "Reliability diagrams, one panel per condition. Marker area is proportional to the share of a "
                    "ranker's pairs in the bin; the strip below gives the bin counts (log scale).")


def imbalance(doc: Doc, result: StudyResult, figs: Figures) -> None:
    """ECE against the number of non-relevant candidates per relevant one (Penha & Hauff 2021, Fig. 2)."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_instance(figs, "figs", Figures)
    evs = open_section(doc, result, "ECE against the imbalance ratio", lambda e: e.imbalance,
                       "The imbalance sweep needs rankers whose scores are probabilities; there are none here.")
    if not evs:
        return
    rising = 0
    for e in evs:
        assert e.imbalance is not None
        ks = sorted(e.imbalance)
        rising += len(ks) > 1 and e.imbalance[ks[-1]] > e.imbalance[ks[0]]
    doc.text(f"ECE with 1, 2, … non-relevant candidates per relevant one (Penha & Hauff 2021, Fig. 2): it grows "
             f"from the balanced setting to the most imbalanced for {rising} of {len(evs)} ranker-condition pairs.")
    doc.figure(figs.imbalance(evs, conditions_of(result, evs)),
               "ECE against the number of non-relevant candidates per relevant one, one line per ranker and one "
               "panel per condition.")


def _problems(b: BayesOutcome) -> list[object]:
    """The problems a fit's diagnostics name (none when it names none)."""
    problems = b.diagnostics.get("problems")
    return list(problems) if isinstance(problems, (list, tuple)) else []


def _scalar(v: object) -> bool:
    return v is None or isinstance(v, (int, float, str, bool, np.integer, np.floating, np.bool_))


def bayes(doc: Doc, result: StudyResult, figs: Figures, out: Path) -> None:
    """The Bayesian comparison: of the study's rankers (per condition), or of the TREC-COVID runs (per family)."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    check_instance(figs, "figs", Figures)
    out = check_path(out, "out")
    study = [b for b in result.bayes.values() if b.systems == "study"]
    trec = [b for b in result.bayes.values() if b.systems != "study"]
    if study:
        _bayes_rankers(doc, study, figs, out, result.external_runs)
    if trec:
        _bayes_trec_covid(doc, trec, figs, out)


def _external_runs(doc: Doc, runs: list[ExternalRunOutcome]) -> None:
    """The external runs compared beside the rankers: their files, how much of each list they rank, their mean."""
    doc.text(f"Beside the study's rankers, {len(runs)} external run{'s' if len(runs) != 1 else ''} "
             "(`[[bayes.runs]]`: another system's TREC run file on a condition's test queries) "
             f"{'are' if len(runs) != 1 else 'is'} compared, each measured with the condition's labels as qrels; "
             "candidates a run does not score rank after those it scores (ties by descending document id, "
             "as trec_eval).")
    rows = [[f"`{r.name}`", f"`{r.condition}`", f"`{Path(r.path).name}`", str(len(r.per_query)),
             f"{r.n_unscored} of {r.n_pairs}", format_number(r.mean)] for r in runs]
    doc.table(["run", "condition", "file", "queries", "candidates not scored", f"mean {runs[0].metric}"], rows,
              ["The file's full path and SHA-256 are in results.json (`external_runs`)."])


def _bayes_rankers(doc: Doc, fits: list[BayesOutcome], figs: Figures, out: Path,
                   runs: list[ExternalRunOutcome]) -> None:
    """The study's rankers (and external runs) against the baseline, per condition and family: contrasts, URisk."""
    doc.heading(2, "Bayesian comparison of the rankers")
    first = fits[0]
    doc.text(f"A hierarchical model of ranker and query effects on the per-query `{first.metric}` of each "
             f"condition (Benham et al. 2021), each ranker against `{first.baseline}`: its effect minus the "
             "baseline's with the 95% credible interval, and URisk on the posterior predictive (above 0: "
             "riskier than the baseline).")
    if runs:
        _external_runs(doc, runs)
    external = {(r.name, r.condition) for r in runs}
    said = []
    for b in fits:
        where = f"under `{b.condition}` (`{b.family}`)"
        if not b.converged:
            failed = "; ".join(str(p) for p in _problems(b)) or "see the table"
            said.append(f"{where}, **no verdict**: the fit failed its convergence checks after {b.fits} "
                        f"fit{'s' if b.fits != 1 else ''} ({failed}); sample more (`draws`, `tune`) for one")
            continue
        better = [str(r["system"]) for r in b.against_baseline if r.get("verdict") == "better"]
        worse = [str(r["system"]) for r in b.against_baseline if r.get("verdict") == "worse"]
        parts = [f"{names(better)} credibly better than `{b.baseline}`" if better else "",
                 f"{names(worse)} credibly worse" if worse else ""]
        said.append(f"{where}: " + ("; ".join(p for p in parts if p) or
                                      f"no ranker is credibly different from `{b.baseline}`"))
    text = "; ".join(said) + "."
    doc.text(text[:1].upper() + text[1:])
    rows = []
    for b in fits:
        if not b.converged:
            rows.append([f"`{b.condition}`", f"`{b.family}`", "", "no verdict", "", "", "", "", "**no**"])
            continue
        for r in b.against_baseline:
            run = " (run)" if (r["system"], b.condition) in external else ""
            rows.append([f"`{b.condition}`", f"`{b.family}`", f"`{r['system']}`{run}",
                         format_interval(r["diff_mean"], r["diff_lower"], r["diff_upper"]),
                         format_number(r["p_better"]),
                         str(r["verdict"]), *[format_interval(r.get(f"urisk_r{k}"), r.get(f"urisk_r{k}_lower"),
                                                        r.get(f"urisk_r{k}_upper")) if f"urisk_r{k}" in r else ""
                                              for k in (1, 2)], "yes"])
    doc.table(["condition", "family", "ranker", f"effect − {first.baseline}", "P(better)", "verdict", "URisk r=1",
               "URisk r=2", "converged"], rows,
              [f"Effect − {first.baseline}: the posterior mean of the ranker's effect minus the baseline's, with "
               "its 95% credible interval, on the model's scale: score units for `gaussian`; for `zoib`, the "
               "log-odds of the mean of the scores strictly between 0 and 1 (the shares of exact 0s and 1s have "
               "no ranker effect in that model, so its verdict can differ from `gaussian`'s); better or worse "
               "when the interval excludes 0. URisk (Benham et al. 2021's convention, "
               "r = 1 and 2): above 0 is riskier than the baseline, losses weighted 1 + r. Converged: R-hat ≤ "
               "1.01, enough effective sample size and no divergent transitions (a fit that failed was made again "
               "with twice the draws before giving no verdict)."]
              + (["(run): an external run of `[[bayes.runs]]`, listed above."] if runs else []))
    for b in fits:
        if b.ppc is None:
            continue
        path = out / b.ppc
        if not path.is_file():
            doc.text(f"The posterior predictive curves of `{b.family}` under `{b.condition}` ({b.ppc}) are missing "
                     "from the folder, so its check is not drawn.")
            continue
        with np.load(path) as z:
            src = figs.ppc(b.family, {k: z[k] for k in z.files}, condition=b.condition)
        doc.figure(src, f"`{b.family}` model under `{b.condition}`: posterior predictive check: densities of "
                        f"replicated per-query {b.metric} over the observed ones.")


def _bayes_trec_covid(doc: Doc, fams: list[BayesOutcome], figs: Figures, out: Path) -> None:
    """The TREC-COVID round 1 comparison per family: distinguishable systems, convergence, URisk, effects and PPC."""
    doc.heading(2, "Bayesian comparison of systems")
    # ``ok`` is the "converged" column already
    # numbers in the table; the parameters' names (long) and lists in the notes under it
    diag_keys = list(dict.fromkeys(k for b in fams for k, v in b.diagnostics.items()
                                   if _scalar(v) and not isinstance(v, str) and k != "ok"))
    list_keys = list(dict.fromkeys(k for b in fams for k, v in b.diagnostics.items()
                                   if not _scalar(v) or isinstance(v, str)))
    parts = []
    for b in fams:
        if b.converged and b.best_distinguishable is not None:
            parts.append(f"with `{b.family}`, {b.best_distinguishable} of {b.n_systems} systems are credibly "
                         f"different from the best and {b.worst_distinguishable} from the worst")
        else:  # convergence is a gate: an unconverged fit gives no verdict
            failed = "; ".join(str(p) for p in _problems(b)) or "see the table"
            parts.append(f"with `{b.family}`, **no verdict**: the fit failed its convergence checks ({failed}) "
                         f"after {b.fits} fit{'s' if b.fits != 1 else ''}; sample more (`draws`, `tune`) for one")
    doc.text("On the TREC-COVID round 1 runs (Benham et al. 2021): " + "; ".join(parts) + ".")
    rows = []
    for b in fams:
        counts = [format_number(v) if v is not None and b.converged else "no verdict"
                  for v in (b.best_distinguishable, b.worst_distinguishable)]
        row = [f"`{b.family}`", format_number(b.n_systems), *counts, "yes" if b.converged else "**no**"]
        row += [format_number(b.diagnostics.get(k)) for k in diag_keys]
        rows.append(row)
    notes = ["Distinguishable: the 95% credible interval of the difference in system effects excludes 0. "
             "Converged: R-hat ≤ 1.01, enough effective sample size and no divergent transitions."]
    for b in fams:
        for k in list_keys:
            v = b.diagnostics.get(k)
            items = v if isinstance(v, (list, tuple)) else ([] if v is None else [v])
            if items:
                notes.append(f"`{b.family}`, {_diagnostic_label(k)}: " + "; ".join(str(x) for x in items) + ".")
    doc.table(["family", "systems", "distinguishable from best", "distinguishable from worst", "converged",
               *[_diagnostic_label(k) for k in diag_keys]], rows, notes)
    risk_keys = list(dict.fromkeys(k for b in fams for k in b.risk))
    if risk_keys:
        doc.heading(3, "URisk against the baseline")
        doc.text("Systems whose URisk on the posterior predictive is credibly above or below the baseline's "
                 "(Benham et al. 2021), per family.")
        doc.table(["family", *risk_keys],
                  [[f"`{b.family}`", *[format_number(b.risk.get(k)) for k in risk_keys]] for b in fams])
    with_effects = [b for b in fams if b.effects]
    if with_effects:
        doc.figure(figs.system_effects(with_effects),
                   "System effects with 95% credible intervals, one panel per model family (posterior means "
                   "sorted; the line marks an average system).")
    for b in fams:
        if b.ppc is not None:
            path = out / b.ppc
            if not path.is_file():
                doc.text(f"The posterior predictive curves of `{b.family}` ({b.ppc}) are missing from the folder, "
                         "so its check is not drawn.")
                continue
            with np.load(path) as z:
                src = figs.ppc(b.family, {k: z[k] for k in z.files})
            doc.figure(src, f"`{b.family}` model: posterior predictive check: densities of replicated scores over "
                            "the observed ones.")
        for f in b.figures:
            if not (out / f).is_file():
                continue
            stem = Path(f).stem.lower()
            what = ("posterior predictive check: densities of replicated scores over the observed ones"
                    if "ppc" in stem else "system effects with credible intervals" if "effects" in stem
                    else stem.replace("-", " "))
            doc.figure(f, f"`{b.family}` model: {what}.")


def timings(doc: Doc, result: StudyResult) -> None:
    """Every step: its cost, whether this run reused it, its cache key."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    doc.heading(2, "Timings and cache keys")
    if not result.steps:
        doc.text("No step timings were recorded.")
        return
    total = sum(s.seconds for s in result.steps.values())
    resumed = [n for n, s in result.steps.items() if s.resumed]
    slowest = max(result.steps.items(), key=lambda kv: kv[1].seconds)
    doc.text(f"Computing every step took {total:.1f} s, the longest being `{slowest[0]}` ({slowest[1].seconds:.1f} "
             f"s); this run reused {len(resumed)} of {len(result.steps)} steps from an earlier run.")
    rows = [[f"`{name}`", f"{s.seconds:.1f}", "yes" if s.resumed else "no", f"`{s.key}`"]
            for name, s in result.steps.items()]
    doc.table(["step", "seconds", "resumed", "cache key"], rows,
              ["Seconds: wall time of the run that computed the step (kept when a later run resumes it). The cache "
               "key digests everything the step depends on; a changed input changes it and recomputes the step."])


def run_warnings(doc: Doc, result: StudyResult) -> None:
    """The warnings raised while the study ran (``results.json``'s ``warnings``), when there were any."""
    check_instance(doc, "doc", Doc)
    check_instance(result, "result", StudyResult)
    if not result.warnings:
        return
    doc.heading(2, "Warnings during the run")
    n = sum(int(json_number(w.get("count", 1))) for w in result.warnings)
    doc.text(f"The run raised {n} warning{'s' if n != 1 else ''} ({len(result.warnings)} distinct), kept in "
             "`results.json` (`warnings`) and, with their source, in `run.log`. Read each before trusting the "
             "numbers it concerns.")
    doc.table(["category", "message", "times"],
              [[f"`{w.get('category', '')}`", str(w.get("message", "")), format_number(w.get("count", 1))]
               for w in result.warnings])
