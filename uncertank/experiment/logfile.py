"""A study's ``run.log``: warnings and other libraries' messages go to a file, the console keeps the progress.

:func:`~uncertank.experiment.run_study` wraps its stages in :func:`run_log`.
While a study runs, everything that is not its own progress would otherwise
reach the console raw: Python warnings printed with a source line (PyMC's
and ArviZ's ``ConvergenceWarning``, PyTensor's BLAS warning), the log records
of other libraries (PyMC's sampler, transformers, PyTensor) and their
progress bars (transformers' ``Loading weights``). They are written to the
log file instead, one timestamped line each, together with every progress
line of the study, and at the end one line counts them (``3 warnings
(2 ConvergenceWarning, 1 UserWarning) written to uncertank-demo/run.log``).

What reaches ``sys.stdout`` and ``sys.stderr`` during the run is sorted by
where it comes from: output written by uncertank's own code (its progress
bars, a ranker's ``show_progress``) and by the study's ``log`` callback
passes to the console; output of any other module goes to the file. A
progress bar's redraws (carriage returns) are kept as its last state, one line.
Everything is restored when the block ends, an exception included.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO, TypedDict

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["LOG_FILE", "RunLog", "run_log"]

#: The name of a study's log file in its output folder.
LOG_FILE = "run.log"

#: Modules a write passes through on its way to a stream; the module before them is the one that wrote.
_RELAYS = ("tqdm", "rich", "click", "logging", "warnings", "io", "codecs", "encodings", "threading", "contextlib",
           __name__)


class _Message(TypedDict):
    """One distinct warning of a run, as ``results.json``'s ``warnings`` keeps it."""

    category: str
    message: str
    count: int


class RunLog:
    """The open log file of one run and what it has taken from the console.

    Attributes
    ----------
    path : Path
        The log file.
    warnings : Counter
        Python warnings written to the file, by category name.
    messages : list of dict
        The distinct warnings, in the order first seen: ``category``,
        ``message`` and ``count`` (a study keeps them in ``results.json``).
    lines : int
        Lines of other libraries' log records and output written to the file.
    """

    def __init__(self, path: Path, file: TextIO, log: Callable[[str], None] | None) -> None:
        self.path = path
        self.warnings: Counter[str] = Counter()
        self.messages: list[_Message] = []
        self.lines = 0
        self._file = file
        self._log = log
        self._lock = threading.RLock()
        self._local = threading.local()

    def write(self, text: str, *, source: str) -> None:
        """Append ``text`` to the file, each line stamped with the time and ``source``."""
        stamp = datetime.now().isoformat(sep=" ", timespec="milliseconds")
        first, *rest = text.rstrip("\n").split("\n")
        with self._lock:
            self._file.write(f"{stamp} [{source}] {first}\n")
            for line in rest:
                self._file.write(f"{stamp} [{source}]   {line}\n")
            self._file.flush()

    def say(self, message: str) -> None:
        """A progress line of the study: into the file, and to the ``log`` callback on the console."""
        self.write(message, source="study")
        if self._log is not None:
            with self.console():
                self._log(message)

    @contextlib.contextmanager
    def console(self) -> Iterator[None]:
        """Let this thread's writes to ``sys.stdout`` and ``sys.stderr`` reach the console while the block runs."""
        before = getattr(self._local, "console", False)
        self._local.console = True
        try:
            yield
        finally:
            self._local.console = before

    def to_console(self) -> bool:
        """Whether this thread's current write belongs on the console (see the module's docstring)."""
        if getattr(self._local, "console", False):
            return True
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            name = str(frame.f_globals.get("__name__", ""))
            if not any(name == r or name.startswith(f"{r}.") for r in _RELAYS):
                top = name.split(".", 1)[0]
                return top == "uncertank" or top.startswith("uncertank_")
            frame = frame.f_back
        return False

    def summary(self) -> str:
        """One line: how many warnings and other lines went to the file, and where it is."""
        n = sum(self.warnings.values())
        parts = []
        if n:
            kinds = ", ".join(f"{count} {name}" for name, count in self.warnings.most_common())
            parts.append(f"{n} warning{'s' if n != 1 else ''} ({kinds})")
        if self.lines:
            parts.append(f"{self.lines} line{'s' if self.lines != 1 else ''} of other libraries' output")
        if not parts:
            return f"no warnings; this run's log is {self.path}"
        return f"{' and '.join(parts)} written to {self.path}"

    def _warning(self, message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
        """:func:`warnings.showwarning` while the run lasts: the warning, without its source line, into the file."""
        self.warnings[category.__name__] += 1
        text = " ".join(str(message).split())
        seen = next((m for m in self.messages if m["category"] == category.__name__ and m["message"] == text), None)
        if seen is None:
            self.messages.append({"category": category.__name__, "message": text, "count": 1})
        else:
            seen["count"] += 1
        self.write(f"{category.__name__}: {message} ({filename}:{lineno})", source="warning")


class _Stream(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` during a run: the console for uncertank's writes, the log for others'."""

    def __init__(self, name: str, console: TextIO, log: RunLog) -> None:
        self.name, self.console, self.log = name, console, log
        self.active = True
        self._pending = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.console.fileno()

    def write(self, text: str) -> int:
        if not self.active:  # a handler that kept this stream after the run: where the stream is now
            stream: TextIO = getattr(sys, self.name)
            return stream.write(text)
        if self.log.to_console():
            return self.console.write(text)
        with self.log._lock:
            *done, self._pending = (self._pending + text).split("\n")
            for line in done:
                self._line(line)
        return len(text)

    def flush(self) -> None:
        if self.active:
            self.console.flush()

    def close_run(self) -> None:
        """Write what is pending (a progress bar's last state) and hand the stream back."""
        if self._pending:
            self._line(self._pending)
            self._pending = ""
        self.active = False

    def _line(self, line: str) -> None:
        shown = [part for part in line.split("\r") if part.strip()]  # a progress bar's redraws: its last state
        if shown:
            self.log.lines += 1
            self.log.write(shown[-1].rstrip(), source=self.name)


def _stream_handlers(console: dict[str, TextIO]) -> list[logging.StreamHandler[SupportsWrite[str]]]:
    """Every logging handler that writes to the console's ``sys.stdout`` or ``sys.stderr`` (or a finished run's)."""
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    found = []
    for lg in loggers:
        for handler in lg.handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler) and (
                    any(handler.stream is s for s in console.values()) or isinstance(handler.stream, _Stream)):
                found.append(handler)
    return found


@contextlib.contextmanager
def run_log(path: str | Path, log: Callable[[str], None] | None = None, *,
            header: str | None = None) -> Iterator[RunLog]:
    """Write warnings and other libraries' messages to ``path`` while the block runs; count them at the end.

    Parameters
    ----------
    path : path
        The log file, appended to (a resumed study keeps the log of its
        earlier runs); its folder must exist.
    log : callable, optional
        The console's progress callback: it receives each line given to
        :meth:`RunLog.say` and, when the block ends, :meth:`RunLog.summary`.
    header : str, optional
        A first line for this run in the file.

    Yields
    ------
    RunLog
        Its :meth:`~RunLog.say` writes a progress line to the file and to ``log``.
    """
    target = Path(path)
    with target.open("a", encoding="utf-8") as file:
        run = RunLog(target, file, log)
        if header is not None:
            run.write(header, source="study")
        console = {"stdout": sys.stdout, "stderr": sys.stderr}
        streams = {name: _Stream(name, stream, run) for name, stream in console.items()}
        handlers = [(h, h.stream) for h in _stream_handlers(console)]
        try:
            with warnings.catch_warnings():
                warnings.showwarning = run._warning
                sys.stdout, sys.stderr = streams["stdout"], streams["stderr"]
                for handler, stream in handlers:
                    name = stream.name if isinstance(stream, _Stream) else \
                        "stderr" if stream is console["stderr"] else "stdout"
                    handler.setStream(streams[name])
                try:
                    yield run
                finally:
                    for handler, stream in handlers:
                        handler.setStream(stream)
                    sys.stdout, sys.stderr = console["stdout"], console["stderr"]
                    for s in streams.values():
                        s.close_run()
        finally:
            summary = run.summary()
            run.write(summary, source="study")
            if log is not None:
                log(summary)
