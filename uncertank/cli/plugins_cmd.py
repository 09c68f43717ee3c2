"""``uncertank plugins``: the installed plugins and what each registers."""

from __future__ import annotations

import json

import click

__all__ = ["plugins_command"]


@click.command("plugins")
@click.option("--kind", type=click.Choice(["rankers", "datasets", "negative_samplers", "recalibrators", "metrics"]),
              default=None, help="Show one kind only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(kind: str | None, as_json: bool) -> None:
    """List the installed plugins and what each registers."""
    import shutil

    from uncertank.plugin_listing import plugin_report, render_plugin_report

    report = plugin_report(kind)  # type: ignore[arg-type]
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(render_plugin_report(report, width=shutil.get_terminal_size((80, 24)).columns))
