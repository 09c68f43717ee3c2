"""The one error of the ``uncertank`` command for a bad input: one line per problem, exit status 2."""

from __future__ import annotations

from typing import IO

import click

__all__ = ["InputError", "one_line"]


class InputError(click.ClickException):
    """A bad input (a missing or malformed file, a value out of range, an unknown name): exit status 2.

    Each line of the message is printed on stderr after a prefix:
    ``uncertank <command>: `` when ``command`` is given, click's ``Error: ``
    otherwise. Build a one-line message with :func:`one_line`.

    Parameters
    ----------
    message : str
        What was wrong, naming the input at fault.
    command : str, optional
        The sub-command (``"threshold"``), for the prefix.
    """

    exit_code = 2

    def __init__(self, message: str, *, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command

    def show(self, file: IO[str] | None = None) -> None:
        prefix = "Error" if self.command is None else f"uncertank {self.command}"
        for line in self.format_message().splitlines() or [""]:
            click.echo(f"{prefix}: {line}", err=True)


def one_line(text: object) -> str:
    r"""``text`` (a message or an exception) on one line, runs of white space made one space.

    Examples
    --------
    >>> one_line("a\n  b")
    'a b'
    """
    return " ".join(str(text).split())
