"""How fast this machine runs the backbone, against the machine the rankers' cost rates were measured on.

The first-party rankers' :class:`~uncertank.CostRates` are one machine's
(two CPU cores, docs/results/real_run.json). Before a study's work its plan
(:func:`uncertank.experiment.runner.plan_study`) runs a probe of a few
seconds, :func:`uncertank.nn.probe.probe_backbone`: one small batch of the
packaged backbone trained (forward and backward) and one scored, a few
times each. Divided by the same probe's times on the reference machine
(:data:`REFERENCE_PROBE`) they give one factor for ``fit`` and one for
``predict``, which scale the neural rankers' rates.

The factor is the fastest repeat over the reference's fastest: the
machine's speed as little disturbed as it can be seen. Its range runs from
there to the median repeat over the same reference: the speed under the
load the probe met. On a quiet machine the two are close; on a busy one
the range says how much the load may cost. It is the probe's spread, not
the rates' own error, which the run log shows step by step (each step's
estimate beside its seconds).

This module needs no torch; only :func:`probe_machine` imports it.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from uncertank.validation import check_instance, check_nonnegative, check_positive_int

__all__ = ["REFERENCE_PROBE", "MachineSpeed", "ProbeTimes", "SpeedFactor", "machine_speed", "probe_machine"]


@dataclass(frozen=True)
class ProbeTimes:
    """The seconds of each timed batch of :func:`uncertank.nn.probe.probe_backbone`.

    Attributes
    ----------
    train : tuple of float
        Forward and backward passes of one batch, one value per repeat.
    predict : tuple of float
        Forward-only passes of the same batch, one value per repeat.
    device : str
        Where it ran (``"cpu"``, ``"cuda"``).
    """

    train: tuple[float, ...]
    predict: tuple[float, ...]
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("train", "predict"):
            values = getattr(self, name)
            check_instance(values, f"ProbeTimes.{name}", tuple, "a tuple of seconds")
            if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                     and v > 0 for v in values):
                raise ValueError(f"ProbeTimes.{name} must be one or more seconds > 0; got {values!r}")
        check_instance(self.device, "ProbeTimes.device", str)


#: The probe on the reference machine: an AMD EPYC VM, 2 cores with AVX-512, torch 2.13.0+cpu, quiet (load
#: average below 1); the fastest batch of each kind over 4 probes of 5 repeats each, on the machine kind the
#: rankers' rates were measured on. Every repeat and the load: docs/results/probe_reference.json.
REFERENCE_PROBE = ProbeTimes(train=(0.1158,), predict=(0.0304,), device="cpu")


@dataclass(frozen=True)
class SpeedFactor:
    """How many times the reference machine's seconds this machine takes, with its range.

    Attributes
    ----------
    value : float
        The fastest repeat over the reference's: the estimate's factor, and
        the low end of its range.
    high : float
        The median repeat over the reference's fastest: the range's high end
        (``high >= value``).
    """

    value: float
    high: float


@dataclass(frozen=True)
class MachineSpeed:
    """What the probe found: the factor for ``fit`` and for ``predict``, and the probe itself.

    Attributes
    ----------
    fit, predict : SpeedFactor
        Scale ``CostRates.fit_per_query`` and ``CostRates.predict_per_pair``.
    probe : ProbeTimes
        Its measurement.
    seconds : float
        Wall time of the probe, the backbone's loading included (0 when the
        measurement was given, not taken).
    """

    fit: SpeedFactor
    predict: SpeedFactor
    probe: ProbeTimes
    seconds: float = 0.0

    def describe(self) -> str:
        """``"fit x1.30 (to 1.85), predict x0.90 (to 1.10) the reference machine's seconds"``.

        A kind the probe timed once (a slow machine stops its repeats) has
        no range: ``"x1.30 (one batch)"``.
        """
        def one(f: SpeedFactor, times: tuple[float, ...]) -> str:
            return f"x{f.value:.2f} ({'one batch' if len(times) == 1 else f'to {f.high:.2f}'})"
        return (f"fit {one(self.fit, self.probe.train)}, predict {one(self.predict, self.probe.predict)} "
                "the reference machine's seconds")


def _factor(measured: tuple[float, ...], reference: tuple[float, ...]) -> SpeedFactor:
    base = min(reference)
    return SpeedFactor(min(measured) / base, statistics.median(measured) / base)


def machine_speed(measured: ProbeTimes, *, reference: ProbeTimes = REFERENCE_PROBE,
                  seconds: float = 0.0) -> MachineSpeed:
    """The speed factors of ``measured`` against ``reference`` (the fastest repeats; the range to the median).

    Parameters
    ----------
    measured : ProbeTimes
        This machine's probe.
    reference : ProbeTimes
        The reference machine's (:data:`REFERENCE_PROBE`).
    seconds : float
        The probe's wall time, kept for the record.

    Examples
    --------
    >>> speed = machine_speed(ProbeTimes((0.5, 0.75, 0.625), (0.125, 0.125, 0.25)),
    ...                       reference=ProbeTimes((0.25,), (0.125,)))
    >>> speed.fit
    SpeedFactor(value=2.0, high=2.5)
    >>> speed.predict.value, speed.predict.high
    (1.0, 1.0)
    """
    check_instance(measured, "measured", ProbeTimes)
    check_instance(reference, "reference", ProbeTimes)
    check_nonnegative(seconds, "seconds")
    return MachineSpeed(_factor(measured.train, reference.train), _factor(measured.predict, reference.predict),
                        measured, seconds)


def probe_machine(*, repeats: int = 3, device: str = "cpu") -> MachineSpeed:
    """Run :func:`uncertank.nn.probe.probe_backbone` (a few seconds) and compare it with the reference.

    Parameters
    ----------
    repeats : int
        Timed batches of each kind.
    device : str
        Where the neural rankers will run (their ``device``; ``"auto"`` picks CUDA when present).

    Raises
    ------
    ImportError
        Without the ``torch`` extra, naming ``pip install "uncertank[torch]"``.
    """
    repeats = check_positive_int(repeats, "repeats")
    from uncertank.nn.probe import probe_backbone
    from uncertank.nn.runtime import resolve_device

    t0 = time.perf_counter()
    train, predict = probe_backbone(repeats=repeats, device=device)
    return machine_speed(ProbeTimes(tuple(train), tuple(predict), resolve_device(device).type),
                         seconds=time.perf_counter() - t0)
