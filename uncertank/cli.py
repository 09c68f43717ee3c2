"""The ``uncertank`` command.

Sub-commands are thin: each parses its options and calls the library. Heavy
dependencies are imported inside the command that needs them, so
``uncertank plugins`` and ``uncertank --help`` stay fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from uncertank import __version__

if TYPE_CHECKING:
    from uncertank.experiment import StudyConfig

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="uncertank")
def cli() -> None:
    """Can a ranker's scores be trusted? Calibration, uncertainty and risk for any ranker."""


@cli.command("plugins")
@click.option("--kind", type=click.Choice(["rankers", "datasets", "negative_samplers", "recalibrators", "metrics"]),
              default=None, help="Show one kind only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(kind: str | None, as_json: bool) -> None:
    """List the installed plugins and what each registers."""
    from uncertank.plugins import list_plugins, plugin_failures

    infos = list_plugins(kind)  # type: ignore[arg-type]
    failures = plugin_failures()
    if as_json:
        payload = {
            "registered": [
                {"name": i.name, "kind": i.kind, "plugin": i.plugin,
                 "distribution": i.distribution, "version": i.version}
                for i in infos
            ],
            "failed": [{"plugin": f.plugin, "distribution": f.distribution, "error": f.error} for f in failures],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="uncertank plugins")
    for col in ("kind", "name", "plugin", "distribution", "version"):
        table.add_column(col, overflow="fold")
    for i in infos:
        table.add_row(i.kind, i.name, i.plugin, i.distribution, i.version)
    console = Console()
    console.print(table)
    for f in failures:
        console.print(f"[red]failed to load[/red] plugin {f.plugin!r} ({f.distribution}): {f.error}")


def _progress_logger() -> Callable[[str], None]:
    from rich.console import Console

    console = Console(stderr=True)
    start = time.perf_counter()

    def log(msg: str) -> None:
        console.print(f"[dim]{time.perf_counter() - start:7.1f}s[/dim] {msg}")

    return log


@cli.command("demo")
@click.option("--quick", "size", flag_value="quick", help="A smoke run: 1 MiniLM layer, a few dozen queries.")
@click.option("--full", "size", flag_value="full", help="All 6 MiniLM layers and the whole sample (hours on CPU).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="uncertank-demo", show_default=True,
              help="Report folder.")
@click.option("--no-resume", is_flag=True, help="Recompute every step instead of reusing finished ones.")
@click.option("--no-bayes", is_flag=True, help="Skip the Bayesian comparison of TREC-COVID systems.")
def demo_command(size: str | None, out_dir: str, no_resume: bool, no_bayes: bool) -> None:
    """Run the bundled study on real data (no network needed) and write a report."""
    from dataclasses import replace

    from uncertank.experiment import demo_config

    config = demo_config(size or "default")  # type: ignore[arg-type]
    if no_bayes:
        config = replace(config, bayes=replace(config.bayes, enabled=False))
    _run(config, out_dir, not no_resume)


@cli.command("run")
@click.argument("config_path", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Report folder (default: the config file's name without .toml).")
@click.option("--no-resume", is_flag=True, help="Recompute every step instead of reusing finished ones.")
def run_command(config_path: str, out_dir: str | None, no_resume: bool) -> None:
    """Run the study described in CONFIG_PATH (TOML) and write a report."""
    from pathlib import Path

    from uncertank.experiment import load_config

    try:
        config = load_config(config_path)
    except (ValueError, TypeError) as exc:
        raise click.BadParameter(str(exc), param_hint="CONFIG_PATH") from None
    _run(config, out_dir or Path(config_path).with_suffix("").name, not no_resume)


def _run(config: StudyConfig, out_dir: str, resume: bool) -> None:
    from uncertank.experiment import run_study
    from uncertank.experiment.report import markdown_table

    result = run_study(config, out_dir, resume=resume, log=_progress_logger())
    click.echo(markdown_table(result["effectiveness"]))
    if result["calibration"]:
        click.echo(markdown_table(result["calibration"]))
    click.echo(f"Report: {out_dir}/report.html (and results.json, report.md, figures/)")


def _attach_commands() -> None:
    """Attach sub-commands that live next to the code they drive (imported lazily inside)."""
    from uncertank.bayes.cli import compare_command

    cli.add_command(compare_command, "compare")


_attach_commands()


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="uncertank")


if __name__ == "__main__":  # pragma: no cover
    main()
