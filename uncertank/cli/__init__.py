"""The ``uncertank`` command.

Sub-commands are thin: each parses its options and calls the library. Each
group of them is a module of this package, imported when the command is
first looked up, so ``uncertank plugins`` and ``uncertank --help`` stay
fast and ``uncertank run`` does not import :mod:`uncertank.bayes` (and
scipy). A bad input is one :class:`~uncertank.cli._input_error.InputError`:
one line naming it, exit status 2.
"""

from __future__ import annotations

from typing import ClassVar

import click

from uncertank import __version__

__all__ = ["cli", "main"]


class _LazyGroup(click.Group):
    """A group whose sub-commands live in the modules of this package, each imported when first looked up."""

    lazy: ClassVar[dict[str, str]] = {
        "compare": "uncertank.cli.compare_cmd:compare_command",
        "demo": "uncertank.cli.study_cmd:demo_command",
        "evaluate": "uncertank.cli.evaluate_cmd:evaluate_command",
        "plugins": "uncertank.cli.plugins_cmd:plugins_command",
        "report": "uncertank.cli.study_cmd:report_command",
        "run": "uncertank.cli.study_cmd:run_command",
        "threshold": "uncertank.cli.threshold_cmd:threshold_command",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _refuse_repeated_options(command, rest)
        return name, command, rest

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            import importlib

            module, attr = self.lazy[cmd_name].split(":")
            command: click.Command = getattr(importlib.import_module(module), attr)
            return command
        return super().get_command(ctx, cmd_name)


def _refuse_repeated_options(command: click.Command, args: list[str]) -> None:
    """A usage error (exit status 2) when an option that takes one value, or a flag, is given twice.

    click would keep the last of two ``--seed`` silently; an option meant to
    be repeated (``--runs``, ``-m``) is left alone. The rule is
    :func:`uncertank.validation.check_unique`.
    """
    from uncertank.validation import check_unique

    single = {opt: p.opts[0] for p in command.params if isinstance(p, click.Option) and not p.multiple
              and not p.count for opt in (*p.opts, *p.secondary_opts)}
    given: list[str] = []
    for arg in args:
        if arg == "--":
            break
        head = arg.split("=", 1)[0]
        if head in single:
            given.append(single[head])
    try:
        check_unique(given, "options")
    except ValueError as exc:
        raise click.UsageError(f"{exc} (give each option once)") from None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="uncertank")
def cli() -> None:
    """Can a ranker's scores be trusted? Calibration, uncertainty and risk for any ranker."""


def main() -> None:
    """Entry point of the console script."""
    cli(prog_name="uncertank")
