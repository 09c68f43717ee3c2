"""``uncertank demo``, ``run`` and ``report``: a study from its file to its report."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

import click

from uncertank.cli._input_error import InputError, one_line

if TYPE_CHECKING:
    from pathlib import Path

    from uncertank.experiment import StudyConfig

__all__ = ["demo_command", "report_command", "run_command"]


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


@click.command("demo")
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


@click.command("run")
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
        from uncertank.experiment.runner import plan_study

        try:
            plan = plan_study(config, out, resume=not no_resume, force=force)
        except StudyConfigError as exc:
            _study_error(config_path, exc)
        click.echo(plan.render())
        return
    _run(config, out, not no_resume, source=config_path, force=force)


def _study_error(source: str, exc: Exception) -> NoReturn:
    """A study's errors, one line each after ``Error: SOURCE:``, and exit status 2."""
    raise InputError("\n".join(f"{source}: {line}" for line in str(exc).splitlines() or [""])) from None


def _load_study(path: str | Path, source: str) -> StudyConfig:
    from uncertank.experiment import StudyConfigError, load_config

    try:
        return load_config(path)
    except StudyConfigError as exc:
        _study_error(source, exc)
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: a study file must be UTF-8 text (TOML); got undecodable bytes at byte "
                         f"{exc.start}") from None
    except OSError as exc:
        raise InputError(f"{source}: a study file must be a readable file; got {one_line(exc.strerror or exc)}"
                         ) from None


def _run(config: StudyConfig, out_dir: str, resume: bool, *, smoke: bool = False, source: str = "study",
         force: bool = False) -> None:
    from uncertank.experiment import StudyConfigError, run_study
    from uncertank.experiment.runner import plan_study
    from uncertank.formatting import format_fixed
    from uncertank.progress import machine_load

    log = _progress_logger()
    try:
        # the dry run's plan first: what each step should cost, said as the step starts
        plan = plan_study(config, out_dir, resume=resume, force=force)
        estimates = {s.name: s.seconds for s in plan.steps if not s.cached and s.seconds is not None}
        if estimates:
            busy = machine_load()
            log(f"estimated time: {plan.estimate_line()}" + (f"; {busy}" if busy else ""))
        result = run_study(config, out_dir, resume=resume, log=log, smoke=smoke, force=force, estimates=estimates)
    except StudyConfigError as exc:  # raised by the validation and the output folder's checks, before any work
        _study_error(source, exc)
    first = result.conditions[0]
    labels = [k for k in result.metric_info if k in ("R@1", "MAP", "ECE", "ECE balanced")]
    click.echo(f"{first}: " + "; ".join(
        f"{e.ranker} " + " ".join(f"{k} {format_fixed(e.metrics[k], 3)}" for k in labels if k in e.metrics)
        for e in result.evaluations if e.condition == first))
    click.echo(f"Report: {out_dir}/report.html (and results.json, report.md, figures/)")


@click.command("report")
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
    from uncertank.experiment.report import render_report

    try:
        render_report(out_dir)
    except (OSError, ValueError) as exc:
        raise InputError("\n".join(one_line(line) for line in str(exc).splitlines() or [""]),
                         command="report") from None
    click.echo(f"Report: {out_dir}/report.html (and report.md, figures/)")
