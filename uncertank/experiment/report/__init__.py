"""Write a study's report: ``results.json``, then ``report.md``, ``report.html`` and ``figures/*.png`` from it.

``results.json`` is the record and the report a view of it: :func:`write_report`
writes the file, then draws the report from the file alone (and the
curve data stored beside it), as :func:`render_report` and ``uncertank
report DIR`` do, so a report re-rendered from its folder is byte-identical
to the one the study wrote. The report computes no number; every value,
significance mark and sentence comes from the file.

The report holds the tables and figures of Penha & Hauff (EACL 2021) and
Benham et al. (ECIR 2021):

1. in-domain effectiveness and calibration (their Table 1), best per column in bold;
2. the shifted conditions (cross negative sampling, cross-domain) with the
   relative change against the reference ranker and significance markers
   (paired t-test over queries, Holm-corrected over the table);
3. calibration in detail: the signed bias beside the ECE, the bins that
   over-estimate, and the MCE over bins with enough pairs;
4. calibration before and after each recalibrator;
5. risk-aware reranking (b chosen on validation; test R@1 against b);
6. NOTA prediction with and without variances;
7. selective prediction (risk-coverage curves, AURC);
8. thresholds with a guarantee (conformal sets and abstention calibrated on
   the validation queries; coverage against 1 - alpha per condition);
9. reliability diagrams, rankers overlaid, one panel per condition;
10. ECE against the imbalance ratio (their Figure 2);
11. the Bayesian comparison per model family (system effects, posterior
    predictive check, convergence, URisk);
12. a paper's table: the rankers on the in-domain condition against the
    reference (:func:`uncertank.compare_runs`: tests, correction, effect
    sizes, calibration with intervals, the Bayesian verdict), also written
    as ``table.tex``;
13. the timings, cache keys and reuse of every step;
14. the warnings raised while the study ran (when there were any).

Modules: :mod:`~uncertank.experiment.report.markdown` (numbers and
Markdown cells), :mod:`~uncertank.experiment.report.document` (the document
model, its Markdown and HTML renderers and the stylesheet),
:mod:`~uncertank.experiment.report.figures`,
:mod:`~uncertank.experiment.report.sections` (the metric tables) and
:mod:`~uncertank.experiment.report.outcomes` (what the uncertainty is worth,
the Bayesian comparison, the timings) and
:mod:`~uncertank.experiment.report.guarantee_section` (thresholds with a guarantee) and
:mod:`~uncertank.experiment.report.table_section` (a paper's table).
"""

from __future__ import annotations

import json
import os
import re

from uncertank.experiment.analysis import reference_ranker
from uncertank.experiment.report import guarantee_section, outcomes, sections, table_section
from uncertank.experiment.report.document import Doc, render_html, render_markdown
from uncertank.experiment.report.figures import Figures
from uncertank.experiment.report.markdown import markdown_table
from uncertank.experiment.result import ResultsFileError, StudyResult
from uncertank.files import atomic_write_text
from uncertank.validation import check_path

__all__ = ["markdown_table", "render_report", "write_report"]

#: The file a report is drawn from.
RESULTS = "results.json"


def _results_text(result: StudyResult) -> str:
    return json.dumps(result.to_dict(), indent=2) + "\n"


def _tex_label(result: StudyResult) -> str:
    """The LaTeX label of the study's table: ``tab:`` and its name, letters and digits only."""
    return re.sub(r"[^A-Za-z0-9]+", "-", str(result.config.get("name") or "study")).strip("-").lower() or "study"


def write_report(result: StudyResult, out: str | os.PathLike[str]) -> None:
    """Write ``results.json`` into ``out``, then the report drawn from it (:func:`render_report`).

    Parameters
    ----------
    result : StudyResult
        What the study produced. Figures that the result lists itself
        (``BayesOutcome.figures``, relative to ``out``) are embedded as they
        are; the posterior predictive curves (``BayesOutcome.ppc``) are read
        from ``out``.
    out : path
        The report folder (created if missing). Every file is written
        atomically (:mod:`uncertank.files`).

    Raises
    ------
    TypeError
        When ``result`` is not a :class:`~uncertank.experiment.result.StudyResult`.
    ImportError
        When matplotlib (the ``plot`` extra) is missing.
    """
    if not isinstance(result, StudyResult):
        raise TypeError(f"result must be a StudyResult (uncertank.experiment.result); got {type(result).__name__}")
    folder = check_path(out, "out")
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / RESULTS, _results_text(result))
    render_report(folder)


def render_report(out: str | os.PathLike[str]) -> StudyResult:
    """Draw ``report.md``, ``report.html``, ``table.tex`` and ``figures/*.png`` of ``out`` from its ``results.json``.

    What ``uncertank report DIR`` runs: the same bytes as the study wrote,
    from the folder alone. ``table.tex`` is the paper's table as LaTeX; a
    result without one leaves no ``table.tex`` in the folder.

    Returns
    -------
    StudyResult
        The result read from ``results.json``.

    Raises
    ------
    FileNotFoundError
        When ``out`` holds no ``results.json``.
    ResultsFileError
        A ``ValueError``: ``results.json`` is a folder, cannot be read, is
        not JSON or not a study's result. The document is validated as a
        whole before anything is drawn: one line per error, each naming the
        file and the JSON path of the key at fault
        (``evaluations[3].metrics.ECE: must be a number; got the string 'abc'``).
    ImportError
        When matplotlib (the ``plot`` extra) is missing.
    """
    folder = check_path(out, "out")
    path = folder / RESULTS
    if path.is_dir():
        raise ResultsFileError(str(path), [("", "is a folder, not a file; give the folder that holds the "
                                                "results.json a study wrote (uncertank run --out DIR)")])
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; give the folder a study wrote (uncertank run --out DIR)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(str(path), [("", f"is not UTF-8 text ({exc.reason} at byte {exc.start})")]) from None
    except OSError as exc:
        raise ResultsFileError(str(path), [("", f"cannot be read: {exc.strerror or exc}")]) from None
    result = StudyResult.from_json(text, source=str(path))
    figs = Figures(folder, result.rankers)
    ref = reference_ranker(result)
    doc = Doc()
    sections.header(doc, result, ref)
    sections.in_domain(doc, result, ref)
    sections.shifted(doc, result, ref)
    sections.calibration_detail(doc, result)
    sections.recalibration(doc, result)
    outcomes.risk(doc, result, figs)
    outcomes.nota(doc, result)
    outcomes.selective(doc, result, figs)
    guarantee_section.thresholds(doc, result, figs)
    outcomes.reliability(doc, result, figs)
    outcomes.imbalance(doc, result, figs)
    outcomes.bayes(doc, result, figs, folder)
    table_section.paper_table(doc, result)
    outcomes.timings(doc, result)
    outcomes.run_warnings(doc, result)
    table = table_section.table_report(result)
    tex = folder / table_section.TEX_FILE
    if table is not None:
        atomic_write_text(tex, table.to_latex(label=f"tab:{_tex_label(result)}"))
    elif tex.is_file():  # an earlier study's table in a folder this result replaces
        tex.unlink()
    atomic_write_text(folder / "report.md", render_markdown(doc))
    atomic_write_text(folder / "report.html", render_html(doc, str(result.config.get("name") or "Study report")))
    return result
