"""The ``uncertank`` command.

Sub-commands are thin: each parses its options and calls the library. Heavy
dependencies are imported inside the command that needs them, so
``uncertank plugins`` and ``uncertank --help`` stay fast.
"""

from __future__ import annotations

import json

import click

from uncertank import __version__

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
        table.add_column(col)
    for i in infos:
        table.add_row(i.kind, i.name, i.plugin, i.distribution, i.version)
    console = Console()
    console.print(table)
    for f in failures:
        console.print(f"[red]failed to load[/red] plugin {f.plugin!r} ({f.distribution}): {f.error}")


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="uncertank")


if __name__ == "__main__":  # pragma: no cover
    main()
