"""The ``uncertank`` command.

Sub-commands are thin: each parses its options and calls the library. Heavy
dependencies are imported inside the command that needs them, so
``uncertank plugins`` and ``uncertank --help`` stay fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import click

from uncertank import __version__

if TYPE_CHECKING:
    from uncertank.experiment import StudyConfig

__all__ = ["cli", "main"]


class _LazyGroup(click.Group):
    """A group with sub-commands that live next to the code they drive, imported when first looked up.

    ``uncertank run`` then does not import :mod:`uncertank.bayes` (and scipy)
    to attach ``compare``; ``uncertank --help`` imports it to describe it.
    """

    lazy: ClassVar[dict[str, str]] = {"compare": "uncertank.bayes.cli:compare_command"}

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
    from rich.console import Console

    console = Console(stderr=True)
    start = time.perf_counter()

    def log(msg: str) -> None:
        console.print(f"[dim]{time.perf_counter() - start:7.1f}s[/dim] {msg}")

    return log


@cli.command("demo")
@click.option("--quick", is_flag=True, help="A smoke run (minutes): tiny sizes, numbers that are not evidence.")
@click.option("--full", is_flag=True, help="The whole study: all 6 MiniLM layers, every query (hours on CPU).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="uncertank-demo", show_default=True,
              help="Report folder.")
@click.option("--no-resume", is_flag=True, help="Recompute every step instead of reusing finished ones.")
@click.option("--no-bayes", is_flag=True, help="Skip the Bayesian comparison of TREC-COVID systems.")
def demo_command(quick: bool, full: bool, out_dir: str, no_resume: bool, no_bayes: bool) -> None:
    """Run the bundled study on real data (no network needed) and write a report."""
    from dataclasses import replace

    from uncertank.experiment import demo_config

    if quick and full:
        raise click.UsageError("--quick and --full contradict each other; give one of them (or neither)")
    size = "quick" if quick else "full" if full else "default"
    config = demo_config(size)  # type: ignore[arg-type]
    if no_bayes:
        config = replace(config, bayes=replace(config.bayes, enabled=False))
    if quick:
        click.echo("uncertank demo --quick is a smoke run: it checks that everything runs; its numbers are not "
                   "evidence (run `uncertank demo` for a study with trained rankers).", err=True)
    _run(config, out_dir, not no_resume, smoke=quick)


@cli.command("run")
@click.argument("config_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Report folder (default: the config file's name without .toml).")
@click.option("--no-resume", is_flag=True, help="Recompute every step instead of reusing finished ones.")
def run_command(config_path: str, out_dir: str | None, no_resume: bool) -> None:
    """Run the study described in CONFIG_PATH (TOML) and write a report."""
    from pathlib import Path

    from uncertank.experiment import load_config
    from uncertank.experiment.runner import validate_config

    try:
        config = load_config(config_path)
        validate_config(config)
    except (ValueError, TypeError) as exc:
        click.echo(f"Error: {config_path}: {exc}", err=True)
        raise SystemExit(2) from None
    _run(config, out_dir or Path(config_path).with_suffix("").name, not no_resume)


def _run(config: StudyConfig, out_dir: str, resume: bool, *, smoke: bool = False) -> None:
    from uncertank.experiment import run_study

    result = run_study(config, out_dir, resume=resume, log=_progress_logger(), smoke=smoke)
    first = result.conditions[0]
    labels = [k for k in result.metric_info if k in ("R@1", "MAP", "ECE", "ECE balanced")]
    click.echo(f"{first}: " + "; ".join(
        f"{e.ranker} " + " ".join(f"{k} {e.metrics[k]:.3f}" for k in labels if k in e.metrics)
        for e in result.evaluations if e.condition == first))
    click.echo(f"Report: {out_dir}/report.html (and results.json, report.md, figures/)")


@cli.command("evaluate")
@click.option("--run", "runs", multiple=True, required=True, type=click.Path(dir_okay=False),
              help="A TREC run file (repeat for several; the first is the baseline of the significance tests).")
@click.option("--qrels", required=True, type=click.Path(dir_okay=False), help="The TREC qrels file.")
@click.option("--metric", "-m", "metrics", multiple=True,
              help="A registered metric, with options as 'ndcg:k=5' (repeatable). "
                   "Default: map, mrr, ndcg:k=10, recall_at_k:k=1, recall_at_k:k=10.")
@click.option("--per-query", is_flag=True, help="One row per run and query instead of the means.")
@click.option("--probabilities", is_flag=True,
              help="The scores are probabilities of relevance: add calibration (ECE, Brier, NLL by default).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Significance level of the † marks.")
def evaluate_command(runs: tuple[str, ...], qrels: str, metrics: tuple[str, ...], per_query: bool,
                     probabilities: bool, fmt: str, alpha: float) -> None:
    """trec_eval-style effectiveness of TREC run files (see docs/trec.md); exit 2 on a bad file."""
    import sys

    from uncertank.evaluate import evaluate_runs, parse_metric

    try:
        entries = [parse_metric(m) for m in metrics] or None
        report = evaluate_runs(list(runs), qrels, metrics=entries, probabilities=probabilities, alpha=alpha)
    except (ValueError, TypeError, OSError) as exc:
        click.echo(f"uncertank evaluate: {' '.join(str(exc).split())}", err=True)
        sys.exit(2)
    click.echo(report.render(fmt, per_query=per_query), nl=False)  # type: ignore[arg-type]


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="uncertank")


if __name__ == "__main__":  # pragma: no cover
    main()
