"""``uncertank evaluate``: trec_eval-style effectiveness of TREC run files, and their comparison report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import click

from uncertank.cli._input_error import InputError, one_line

if TYPE_CHECKING:
    from uncertank._types import RankedLists
    from uncertank.metrics.metric import MetricEntry

__all__ = ["evaluate_command"]


@click.command("evaluate")
@click.option("--run", "runs", multiple=True, required=True, type=click.Path(),
              help="A TREC run file (repeat for several; the first is the baseline of the significance tests).")
@click.option("--qrels", required=True, type=click.Path(),
              help="The TREC qrels file, or an ir_datasets collection as irds:NAME (its judgements; "
                   "docs/datasets.md).")
@click.option("--metric", "-m", "metrics", multiple=True,
              help="A registered metric, with options as 'ndcg:k=5', or an ir_measures name such as "
                   "nDCG@10, AP, RR, P@5, R@1000, Success@1, 'nDCG(rel=2)@10' (repeatable). "
                   "Default: map, mrr, ndcg:k=10, recall_at_k:k=1, recall_at_k:k=10.")
@click.option("--per-query", is_flag=True, help="One row per run and query instead of the means.")
@click.option("--probabilities", is_flag=True,
              help="The scores are probabilities of relevance: add calibration (ECE, Brier, NLL by default).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Significance level of the † marks (and of the --report).")
@click.option("--complete", "-c", is_flag=True,
              help="Average over every query of the qrels, a query the run misses counting 0 (trec_eval -c, "
                   "ir_measures' default).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the comparison report (docs/paper-table.md) to this file, in the format its "
                   "suffix names: .md, .tex (LaTeX), .csv or .json.")
@click.option("--test", "test", default="t", show_default=True,
              help="The report's test: t, wilcoxon, randomization, bootstrap or tukey (Tukey's HSD).")
@click.option("--correction", default=None,
              help="The report's correction: holm, bh (Benjamini-Hochberg), bonferroni or none. "
                   "Default: holm (none with --test tukey).")
@click.option("--family", default="metric", show_default=True,
              help="What the report's correction runs over: metric (the comparisons of each metric) or table.")
@click.option("--baseline", default=None,
              help="Compare each run with this one only (a run's file name) in the report; default: every pair.")
@click.option("--resamples", "n_resamples", type=int, default=10_000, show_default=True,
              help="Resamples of the report's intervals and resampling tests.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the report's resampling.")
def evaluate_command(runs: tuple[str, ...], qrels: str, metrics: tuple[str, ...], per_query: bool,
                     probabilities: bool, fmt: str, alpha: float, complete: bool, report_path: str | None,
                     test: str, correction: str | None, family: str, baseline: str | None, n_resamples: int,
                     seed: int) -> None:
    """trec_eval-style effectiveness of TREC run files (see docs/trec.md); exit 2 on a bad file.

    A bad input (a missing, empty or unparsable file, a run file given twice,
    an unknown metric or a wrong option of one, a score outside [0, 1] with
    --probabilities) prints one line naming it and exits with status 2,
    before any metric is computed; so does a bad option of --report.

    With --report, the runs are also compared as a paper's table
    (uncertank.compare_runs): every pair (or each against --baseline), per
    ranking metric, over the queries all runs share, with the --test, the
    --correction over the --family, effect sizes, and with --probabilities
    calibration columns with intervals; the file is replaced atomically.
    """
    from uncertank.compare import check_test_options, compare_runs, report_format
    from uncertank.evaluate import evaluate_runs, parse_metric
    from uncertank.metrics import resolve_metrics
    from uncertank.validation import check_positive_int, check_seed

    def fail(message: str) -> NoReturn:
        raise InputError(one_line(message), command="evaluate") from None

    ctx = click.get_current_context()
    given = [f"--{name.replace('n_resamples', 'resamples')}" for name in
             ("test", "correction", "family", "baseline", "n_resamples", "seed")
             if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
    if report_path is None and given:
        fail(f"{', '.join(given)} set the comparison report's options; pass --report FILE (.md, .tex, .csv or .json)")
    if report_path is not None:  # the report's options, checked before any file is read
        try:
            report_format(report_path)
            check_test_options(test, correction, family)
            check_positive_int(n_resamples, "--resamples")
            check_seed(seed, "--seed", allow_none=False, generator=False)
        except (ValueError, TypeError) as exc:
            fail(f"--report: {exc}")
    entries = []
    for spec in metrics:  # each -m alone, so that an error names the spec it came from
        try:
            entry = parse_metric(spec)
            resolve_metrics([entry])
        except (ValueError, TypeError) as exc:
            fail(f"-m {spec!r}: {str(exc).replace(' (entry 0)', '').replace(' (in bind())', '')}")
        entries.append(entry)
    try:
        report = evaluate_runs(list(runs), qrels, metrics=entries or None, probabilities=probabilities, alpha=alpha,
                               complete=complete)
    except (ValueError, TypeError, OSError, ImportError) as exc:  # ImportError: irds: without ir_datasets
        fail(str(exc))
    if report_path is not None:
        try:
            calibration, calibration_metrics = (
                _probability_runs(runs, [r.name for r in report.runs], qrels, entries) if probabilities
                else (None, []))
            comparison = compare_runs(report, baseline=baseline, test=test, correction=correction,  # type: ignore[arg-type]
                                      family=family, alpha=alpha, n_resamples=n_resamples, seed=seed,  # type: ignore[arg-type]
                                      calibration=calibration, calibration_metrics=calibration_metrics or ("ece",))
            comparison.write(report_path)
        except (ValueError, TypeError, OSError, ImportError) as exc:
            fail(f"--report: {exc}")
    click.echo(report.render(fmt, per_query=per_query), nl=False)  # type: ignore[arg-type]


def _probability_runs(
    runs: tuple[str, ...], names: list[str], qrels: str, entries: Sequence[MetricEntry]
) -> tuple[dict[str, RankedLists] | None, list[MetricEntry]]:
    """The runs' pairs by run name, for the report's calibration columns, and the calibration metrics.

    The metrics are evaluate's: those of ``-m`` that read probabilities, or
    its defaults when ``-m`` names no metric. When ``-m`` names no
    calibration metric there are no columns, and no run is read again.
    """
    from uncertank.datasets import ranked_lists_from_run, read_qrels, read_trec_run
    from uncertank.evaluate import DEFAULT_CALIBRATION_METRICS
    from uncertank.metrics import resolve_metrics

    chosen: list[MetricEntry] = [e for e in entries if resolve_metrics([e])[0].needs_probabilities] \
        if entries else list(DEFAULT_CALIBRATION_METRICS)
    if not chosen:
        return None, []
    if qrels.startswith("irds:"):  # as evaluate_runs reads them: an ir_datasets collection's judgements
        from uncertank.datasets.irds import irds_qrels

        judged = irds_qrels(qrels)
    else:
        judged = read_qrels(qrels)
    lists = {name: ranked_lists_from_run(read_trec_run(path, system=name), judged)
             for path, name in zip(runs, names, strict=True)}
    return lists, chosen
