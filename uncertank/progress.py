"""Progress of long steps as periodic log lines: training, scoring, sampling.

A study (``uncertank run``, ``uncertank demo``) logs one line per step; a
step can take many minutes on a CPU, and a run that prints nothing for that
long looks hung. :func:`reporting` installs, for the calls inside it, a
:class:`ProgressReporter` that turns the progress of every long loop into a
line at most every ``every`` seconds (and at the first update): what is
done out of how much, the rate, the elapsed time and an estimate of what is
left, plus whatever the loop reports beside it (the training loss,
divergent transitions so far).

Loops report through :func:`tracker`, which works with or without a
reporter installed (without one it does nothing), so library code calls it
unconditionally::

    with tracker("epoch 1/1", total=n_pairs, unit="pairs") as track:
        for batch in batches:
            ...
            track.advance(len(batch), loss=f"{loss:.4f}")

The reporter is held in a :class:`contextvars.ContextVar`: each thread (and
each ``asyncio`` task) sees its own, and a Python user who calls the
library directly gets no lines unless they install one.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading
import time
from collections.abc import Callable, Iterator

from uncertank.validation import check_number

__all__ = ["ProgressReporter", "Tracker", "format_duration", "machine_load", "reporting", "tracker"]

Log = Callable[[str], None]

_REPORTER: contextvars.ContextVar[ProgressReporter | None] = contextvars.ContextVar("uncertank_progress",
                                                                                    default=None)


def format_duration(seconds: float) -> str:
    """``seconds`` as ``"45 s"``, ``"3 min 20 s"`` or ``"1 h 05 min"``; ``"?"`` for NaN, infinite or negative."""
    seconds = check_number(seconds, "seconds", "a number of seconds")
    if not math.isfinite(seconds) or seconds < 0:  # NaN, infinite or negative: nothing to say
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def machine_load() -> str | None:
    """A sentence on the machine's load when it is busier than its cores, else None.

    The 1-minute load average over the CPU cores this process may use: above
    1.0 the run shares the cores with other work and each step takes
    longer than on an idle machine, by about that ratio.
    """
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not on every platform
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ratio = load / max(cores, 1)
    if ratio <= 1.2:
        return None
    return (f"the machine is busy (load average {load:.1f} on {cores} cores): steps may take about {ratio:.1f}x "
            "as long as on an idle machine")


class Tracker:
    """The progress of one loop: ``advance`` after each piece of work.

    Made by :func:`tracker`; reports to the installed
    :class:`ProgressReporter`, or to nothing.
    """

    def __init__(self, reporter: ProgressReporter | None, what: str, total: int | None, unit: str | None) -> None:
        self.reporter, self.what, self.total, self.unit = reporter, what, total, unit
        self.done = 0
        self.started = time.monotonic()
        self._last: float | None = None
        self._first: tuple[float, int] | None = None  # when the first unit was done: the rate counts from there
        self.fields: dict[str, object] = {}

    def advance(self, n: int = 1, **fields: object) -> None:
        """Count ``n`` more units done; ``fields`` (e.g. ``loss="0.41"``) are shown with the next line."""
        self.done += n
        self.fields.update(fields)
        if self.reporter is None:
            return
        now = time.monotonic()
        if self._first is None:  # what came before (loading, compiling) says nothing of the rate
            self._first = (now, self.done)
        if self._last is None or now - self._last >= self.reporter.every:
            self._last = now
            self.reporter.emit(self.line(now), self)

    def line(self, now: float | None = None) -> str:
        """What the reporter prints for this loop now."""
        elapsed = (time.monotonic() if now is None else now) - self.started
        parts = []
        if self.unit is not None:  # None: a heartbeat of a loop that cannot count its work
            parts.append(f"{self.done:,}" + (f" of {self.total:,}" if self.total else "") + f" {self.unit}")
            if self.total:
                parts[0] += f" ({100.0 * self.done / self.total:.0f}%)"
        extra = ", ".join(f"{k} {v}" for k, v in self.fields.items())
        if extra:
            parts.append(extra)
        parts.append(f"{format_duration(elapsed)} elapsed")
        if self.total and self._first is not None and self._first[1] < self.done < self.total:
            t0, n0 = self._first
            rate = (self.done - n0) / max((time.monotonic() if now is None else now) - t0, 1e-9)
            parts.append(f"about {format_duration((self.total - self.done) / rate)} left")
        said = self.reporter is not None and self.what == self.reporter.label  # the prefix names it already
        return ("" if said else f"{self.what}: ") + ", ".join(parts)


class ProgressReporter:
    """Turns the progress of long loops into log lines, at most one per loop every ``every`` seconds.

    Parameters
    ----------
    log : callable
        Receives each line (a study's log).
    every : float
        Seconds between two lines of one loop (the first update of a loop
        always prints, so that a step's start and its first rate show).
    prefix : str
        Put before each line (e.g. the ranker's label).
    label : str, optional
        A loop named exactly this (a ranker scoring under its own name) is
        not named again after the prefix.
    """

    def __init__(self, log: Log, *, every: float = 20.0, prefix: str = "", label: str | None = None) -> None:
        if isinstance(every, bool) or not isinstance(every, (int, float)) or not every > 0:
            raise ValueError(f"every must be a number of seconds > 0; got {every!r}")
        self.log, self.every, self.prefix, self.label = log, float(every), prefix, label
        self._lock = threading.RLock()
        self._emitted = time.perf_counter()
        self._active: list[Tracker] = []

    def emit(self, line: str, track: Tracker | None = None) -> None:
        """Log ``line`` with the prefix (``track``: the loop it is about, now the one a heartbeat repeats)."""
        with self._lock:
            self._emitted = time.perf_counter()
            if track is not None and track not in self._active:
                self._active.append(track)
            self.log(f"{self.prefix}{line}")

    def done(self, track: Tracker) -> None:
        """``track``'s loop has ended: a heartbeat no longer repeats it."""
        with self._lock:
            if track in self._active:
                self._active.remove(track)

    def beat(self) -> None:
        """Repeat the line of the loop running now when nothing was said for ``every`` seconds.

        A loop says something only when a piece of its work ends; one piece
        that takes longer than ``every`` (a training batch on a crowded
        machine) would leave the console silent that long.
        """
        with self._lock:
            if self._active and time.perf_counter() - self._emitted >= self.every:
                track = self._active[-1]
                self._emitted = time.perf_counter()
                self.log(f"{self.prefix}{track.line()}")


@contextlib.contextmanager
def reporting(log: Log, *, every: float = 20.0, prefix: str = "", label: str | None = None,
              heartbeat: bool = False) -> Iterator[ProgressReporter]:
    """Report the progress of every long loop inside the block to ``log`` (see the module's docstring).

    With ``heartbeat``, a background thread repeats the running loop's line
    (its elapsed time updated) whenever ``every`` seconds pass without one,
    so that a slow piece of work does not leave the console silent.
    """
    reporter = ProgressReporter(log, every=every, prefix=prefix, label=label)
    token = _REPORTER.set(reporter)
    stop = threading.Event()
    thread = None
    if heartbeat:
        def beat() -> None:
            while not stop.wait(reporter.every / 4):
                reporter.beat()

        thread = threading.Thread(target=beat, name="uncertank-progress", daemon=True)
        thread.start()
    try:
        yield reporter
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=5.0)
        _REPORTER.reset(token)


@contextlib.contextmanager
def tracker(what: str, *, total: int | None = None, unit: str | None = "items") -> Iterator[Tracker]:
    """A :class:`Tracker` for one loop, reporting to the installed reporter (if any).

    ``unit=None`` makes a heartbeat: lines with the elapsed time only, for
    work that runs elsewhere and cannot be counted (``advance(0)``).
    """
    track = Tracker(_REPORTER.get(), what, total, unit)
    try:
        yield track
    finally:
        if track.reporter is not None:
            track.reporter.done(track)
