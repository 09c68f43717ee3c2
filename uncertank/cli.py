"""The ``uncertank`` command.

Sub-commands are thin: each parses its options and calls the library. Heavy
dependencies are imported inside the command that needs them, so
``uncertank plugins`` and ``uncertank --help`` stay fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import click

from uncertank import __version__

if TYPE_CHECKING:
    from pathlib import Path

    from uncertank._types import RankedLists
    from uncertank.experiment import StudyConfig

__all__ = ["cli", "main"]


class _LazyGroup(click.Group):
    """A group with sub-commands that live next to the code they drive, imported when first looked up.

    ``uncertank run`` then does not import :mod:`uncertank.bayes` (and scipy)
    to attach ``compare``; ``uncertank --help`` imports it to describe it.
    """

    lazy: ClassVar[dict[str, str]] = {"compare": "uncertank.bayes.compare_cli:compare_command",
                                      "threshold": "uncertank.conformal.threshold_cli:threshold_command"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            import importlib

            module, attr = self.lazy[cmd_name].split(":")
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="uncertank")
def cli() -> None:
    """Can a ranker's scores be trusted? Calibration, uncertainty and risk for any ranker."""


@cli.command("plugins")
@click.option("--kind", type=click.Choice(["rankers", "datasets", "negative_samplers", "recalibrators", "metrics"]),
              default=None, help="Show one kind only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(kind: str | None, as_json: bool) -> None:
    """List the installed plugins and what each registers."""
    import shutil

    from uncertank.plugins import plugin_report, render_plugin_report

    report = plugin_report(kind)  # type: ignore[arg-type]
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(render_plugin_report(report, width=shutil.get_terminal_size((80, 24)).columns))


def _progress_logger() -> Callable[[str], None]:
    """A study's progress lines on stderr, each with the seconds since the start.

    On a terminal, rich draws them (the time dimmed, long lines left to the
    terminal to wrap); into a file or a pipe, each is written as it is, one
    line, never wrapped.
    """
    import sys

    stream = sys.stderr
    start = time.perf_counter()
    if not stream.isatty():
        def log(msg: str) -> None:
            stream.write(f"{time.perf_counter() - start:7.1f}s {msg}\n")
            stream.flush()

        return log
    from rich.console import Console
    from rich.markup import escape

    console = Console(file=stream, soft_wrap=True, highlight=False)

    def log_rich(msg: str) -> None:
        console.print(f"[dim]{time.perf_counter() - start:7.1f}s[/dim] {escape(msg)}")

    return log_rich


def _demo_folder(study: str) -> str:
    """The folder ``uncertank demo`` writes a bundled study into: ``uncertank-demo``, ``uncertank-demo-quick``, ...

    One folder per study, so that ``demo --quick`` never meets the default
    study's report.
    """
    return "uncertank-demo" if study == "default" else f"uncertank-demo-{study}"


@cli.command("demo")
@click.option("--quick", is_flag=True, help="A smoke run (minutes): tiny sizes, numbers that are not evidence.")
@click.option("--full", is_flag=True, help="The whole study: all 6 MiniLM layers, every query (hours on CPU).")
@click.option("--gp", is_flag=True, help="The default study with the GP rankers (sngp, gpf_bert, pgdrr) added.")
@click.option("--show", is_flag=True, help="Print the study file that would run, and stop.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Report folder.  [default: uncertank-demo, or uncertank-demo-quick, -full, -gp with that flag]")
@click.option("--no-resume", is_flag=True, help="Recompute every step instead of reusing finished ones.")
@click.option("--no-bayes", is_flag=True, help="Skip the Bayesian comparison of TREC-COVID systems.")
@click.option("--force", is_flag=True, help="Write into a folder that holds another study's results, replacing them.")
def demo_command(quick: bool, full: bool, gp: bool, show: bool, out_dir: str | None, no_resume: bool,
                 no_bayes: bool, force: bool) -> None:
    """Run a study file shipped with uncertank on real data (no network needed) and write a report.

    The same study everywhere: a missing plugin or package stops it before
    any work, naming the pip command that installs it (exit status 2). Each
    study has its own folder, and a folder that holds another study's
    results is refused before any work (exit status 2) unless --force.
    """
    from dataclasses import replace

    from uncertank.experiment import demo_study_path

    chosen = [flag for flag, on in (("--quick", quick), ("--full", full), ("--gp", gp)) if on]
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} contradict each other; give one of them (or none)")
    name = chosen[0][2:] if chosen else "default"
    path = demo_study_path(name)  # type: ignore[arg-type]
    if show:
        click.echo(path.read_text(encoding="utf-8"), nl=False)
        return
    source = f"uncertank demo{' ' + chosen[0] if chosen else ''} ({path.name})"
    config = _load_study(path, source)
    if no_bayes:
        config = replace(config, bayes=replace(config.bayes, enabled=False))
    if quick:
        click.echo("uncertank demo --quick is a smoke run: it checks that everything runs; its numbers are not "
                   "evidence (run `uncertank demo` for a study with trained rankers).", err=True)
    _run(config, out_dir or _demo_folder(name), not no_resume, smoke=quick, source=source, force=force)


@cli.command("run")
@click.argument("config_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Report folder (default: the config file's name without .toml).")
@click.option("--no-resume", is_flag=True, help="Recompute every step instead of reusing finished ones.")
@click.option("--force", is_flag=True, help="Write into a folder that holds another study's results, replacing them.")
@click.option("--dry-run", is_flag=True,
              help="Check the study and print what it would train, score and reuse, with a cost estimate; "
                   "nothing is trained and no model is loaded.")
def run_command(config_path: str, out_dir: str | None, no_resume: bool, force: bool, dry_run: bool) -> None:
    """Run the study described in CONFIG_PATH (TOML) and write a report.

    The file is validated as a whole before any work (its format: the JSON
    schema in docs/experiments.md); each error is one line with its path in
    the file, and the exit status is 2. A folder that holds another study's
    results is refused before any work too (exit status 2) unless --force.
    With --dry-run the same checks run, then the study's data is counted,
    the steps cached in the output folder are found and the others'
    cost estimated (uncertank.experiment.plan); exit status 0.
    """
    from pathlib import Path

    config = _load_study(config_path, config_path)
    out = out_dir or Path(config_path).with_suffix("").name
    if dry_run:
        from uncertank.experiment import StudyConfigError
        from uncertank.experiment.plan import plan_study

        try:
            plan = plan_study(config, out, resume=not no_resume, force=force)
        except StudyConfigError as exc:
            _study_error(config_path, exc)
        click.echo(plan.render())
        return
    _run(config, out, not no_resume, source=config_path, force=force)


def _study_error(source: str, exc: Exception) -> NoReturn:
    """Print a study's errors, one line each, and exit with status 2."""
    for line in str(exc).splitlines() or [""]:
        click.echo(f"Error: {source}: {line}", err=True)
    raise SystemExit(2)


def _load_study(path: str | Path, source: str) -> StudyConfig:
    from uncertank.experiment import StudyConfigError, load_config

    try:
        return load_config(path)
    except StudyConfigError as exc:
        _study_error(source, exc)


def _run(config: StudyConfig, out_dir: str, resume: bool, *, smoke: bool = False, source: str = "study",
         force: bool = False) -> None:
    from uncertank.experiment import StudyConfigError, run_study
    from uncertank.experiment.plan import plan_study
    from uncertank.formatting import format_fixed
    from uncertank.progress import format_duration, machine_load

    log = _progress_logger()
    try:
        # the dry run's plan first: what each step should cost, said as the step starts
        plan = plan_study(config, out_dir, resume=resume, force=force)
        estimates = {s.name: s.seconds for s in plan.steps if not s.cached and s.seconds is not None}
        if estimates:
            busy = machine_load()
            log(f"estimated time: about {format_duration(plan.seconds)} by the rankers' rates (measured on 2 CPU "
                "cores) or a previous run's seconds; `uncertank run --dry-run` lists the steps"
                + (f"; {busy}" if busy else ""))
        result = run_study(config, out_dir, resume=resume, log=log, smoke=smoke, force=force, estimates=estimates)
    except StudyConfigError as exc:  # raised by the validation and the output folder's checks, before any work
        _study_error(source, exc)
    first = result.conditions[0]
    labels = [k for k in result.metric_info if k in ("R@1", "MAP", "ECE", "ECE balanced")]
    click.echo(f"{first}: " + "; ".join(
        f"{e.ranker} " + " ".join(f"{k} {format_fixed(e.metrics[k], 3)}" for k in labels if k in e.metrics)
        for e in result.evaluations if e.condition == first))
    click.echo(f"Report: {out_dir}/report.html (and results.json, report.md, figures/)")


@cli.command("report")
@click.argument("out_dir", type=click.Path(file_okay=False))
def report_command(out_dir: str) -> None:
    """Draw report.md, report.html and figures/ of a study's folder OUT_DIR again, from its results.json alone.

    The same bytes as the study wrote (``uncertank run`` or ``demo``); the
    report computes nothing, so a changed results.json shows in the report.
    A folder without a readable results.json prints one line, exit status 2;
    a results.json that is not a study's result is validated as a whole
    first, one line per error naming the file and the JSON path at fault
    (``evaluations[3].metrics.ECE``), exit status 2.
    """
    import sys

    from uncertank.experiment.report import render_report

    try:
        render_report(out_dir)
    except (OSError, ValueError) as exc:
        for line in str(exc).splitlines() or [""]:
            click.echo(f"uncertank report: {' '.join(line.split())}", err=True)
        sys.exit(2)
    click.echo(f"Report: {out_dir}/report.html (and report.md, figures/)")


@cli.command("evaluate")
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
    import sys

    from uncertank.compare import check_test_options, compare_runs, report_format
    from uncertank.evaluate import evaluate_runs, parse_metric
    from uncertank.metrics import resolve_metrics
    from uncertank.validation import check_positive_int, check_seed

    def fail(message: str) -> NoReturn:
        click.echo(f"uncertank evaluate: {' '.join(message.split())}", err=True)
        sys.exit(2)

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
    runs: tuple[str, ...], names: list[str], qrels: str, entries: list[Any]
) -> tuple[dict[str, RankedLists] | None, list[Any]]:
    """The runs' pairs by run name, for the report's calibration columns, and the calibration metrics.

    The metrics are evaluate's: those of ``-m`` that read probabilities, or
    its defaults when ``-m`` names no metric. When ``-m`` names no
    calibration metric there are no columns, and no run is read again.
    """
    from uncertank.datasets import ranked_lists_from_run, read_qrels, read_trec_run
    from uncertank.evaluate import DEFAULT_CALIBRATION_METRICS
    from uncertank.metrics import resolve_metrics

    chosen = [e for e in entries if resolve_metrics([e])[0].needs_probabilities] if entries else list(
        DEFAULT_CALIBRATION_METRICS)
    if not chosen:
        return None, []
    if qrels.startswith("irds:"):  # as evaluate_runs reads them: an ir_datasets collection's judgements
        from uncertank.datasets.irds import irds_qrels

        judged: Any = irds_qrels(qrels)
    else:
        judged = read_qrels(qrels)
    lists = {name: ranked_lists_from_run(read_trec_run(path, system=name), judged)
             for path, name in zip(runs, names, strict=True)}
    return lists, chosen


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="uncertank")


if __name__ == "__main__":  # pragma: no cover
    main()
