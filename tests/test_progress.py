"""Long steps report their progress as periodic lines: training, scoring, sampling."""

from __future__ import annotations

import itertools
import re
import time

import pytest

import uncertank.progress as P


class Clock:
    """A monotonic clock that moves ``step`` seconds at each reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize(("seconds", "text"), [(0, "0 s"), (44.6, "45 s"), (200, "3 min 20 s"), (3900, "1 h 05 min"),
                                               (float("nan"), "?"), (-1, "?"), (float("inf"), "?")])
def test_durations_read_as_a_person_says_them(seconds, text):
    assert P.format_duration(seconds) == text


@pytest.mark.parametrize("bad", ["45", None, [1.0]])
def test_a_duration_that_is_not_a_number_is_named(bad):
    with pytest.raises(TypeError, match=r"^seconds must be a number of seconds; got "):
        P.format_duration(bad)


def test_a_loop_prints_at_its_first_update_then_at_most_every_period(monkeypatch):
    clock = Clock(1.0)
    monkeypatch.setattr(P.time, "monotonic", clock)
    lines: list[str] = []
    with P.reporting(lines.append, every=10.0, prefix="bert: "), \
            P.tracker("epoch 1/1", total=100, unit="pairs") as track:
        for _ in range(100):
            track.advance(1, loss="0.5")
    # one reading per advance plus one per printed line: a line about every 10 s of the clock
    assert 5 <= len(lines) <= 10
    assert lines[0].startswith("bert: epoch 1/1: 1 of 100 pairs (1%), loss 0.5, ")
    assert all(line.startswith("bert: epoch 1/1: ") and "elapsed" in line for line in lines)
    assert "left" in lines[1]


def test_the_estimate_counts_from_the_first_unit_done(monkeypatch):
    """Time before the first unit (loading, compiling) does not slow the estimated rate."""
    clock = Clock(0.0)
    monkeypatch.setattr(P.time, "monotonic", clock)
    lines: list[str] = []
    with P.reporting(lines.append, every=1.0), P.tracker("sampling", total=10, unit="draws") as track:
        clock.now = 100.0  # compiling took 100 s
        track.advance(1)
        clock.now = 101.0  # then one draw a second
        track.advance(1)
    assert lines[-1] == "sampling: 2 of 10 draws (20%), 1 min 41 s elapsed, about 8 s left"


def test_without_a_reporter_a_tracker_counts_and_prints_nothing(capsys):
    with P.tracker("scoring", total=3) as track:
        track.advance(3)
    assert track.done == 3 and capsys.readouterr() == ("", "")


def test_the_period_must_be_a_positive_number():
    for bad in (0, -1, "20", True):
        with pytest.raises(ValueError, match="every must be a number of seconds > 0"):
            P.ProgressReporter(print, every=bad)  # type: ignore[arg-type]


def test_a_busy_machine_is_named(monkeypatch):
    monkeypatch.setattr(P.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(P.os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    assert P.machine_load() == ("the machine is busy (load average 8.0 on 2 cores): steps may take about 4.0x as "
                                "long as on an idle machine")
    monkeypatch.setattr(P.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert P.machine_load() is None


def test_a_study_reports_training_and_scoring_as_they_run(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from uncertank.experiment import run_study
    from uncertank.experiment.config import BayesConfig, ConditionConfig, RankerConfig, StudyConfig
    from uncertank.nn.testing import tiny_config

    ticks = itertools.count(step=30.0)  # 30 s between two readings: every update prints
    monkeypatch.setattr(P.time, "monotonic", lambda: float(next(ticks)))
    params = {"backbone": tiny_config(), "max_length": 32, "epochs": 1, "batch_size": 8, "device": "cpu"}
    config = StudyConfig(
        name="tiny", train_dataset="ubuntu-sample", conditions=(ConditionConfig("in-domain", "ubuntu-sample"),),
        rankers=(RankerConfig("bert", params),), max_train_queries=4, max_valid_queries=2, max_test_queries=3,
        nota=False, risk_grid=(0.0,), bayes=BayesConfig(enabled=False),
    )
    lines: list[str] = []
    run_study(config, tmp_path / "out", log=lines.append, estimates={"fit bert": 90.0})
    assert "bert: training on 4 queries; about 1 min 30 s by the estimate" in lines
    training = [line for line in lines if line.startswith("bert: epoch 1/1: ")]
    assert training and all("pairs" in line and "loss" in line for line in training)
    assert re.match(r"bert: epoch 1/1: (\d+) of \1 pairs \(100%\), loss \d\.\d{4}, ", training[-1]), training[-1]
    assert any(line.startswith("bert: scoring in-domain: ") and "of 30 pairs" in line for line in lines)
    assert not any(line.startswith("bert: scoring in-domain: bert:") for line in lines)  # named once


def test_pymc_draws_and_divergences_are_counted():
    from types import SimpleNamespace

    from uncertank.bayes.fit import _draw_callback

    lines: list[str] = []
    with P.reporting(lines.append, every=1e9), P.tracker("sampling", total=4, unit="draws") as track:
        callback = _draw_callback(track, stop_on_sigint=False)
        for tuning, diverging in [(True, True), (False, True), (False, False), (False, True)]:
            callback(trace=None, draw=SimpleNamespace(tuning=tuning, stats=[{"diverging": diverging}]))
    assert track.done == 4 and track.fields == {"divergences": 2}  # a divergence while tuning does not count
    assert lines == [lines[0]] and lines[0].startswith("sampling: 1 of 4 draws (25%), divergences 0, ")


def test_a_heartbeat_says_how_long_without_a_count(monkeypatch):
    clock = Clock(30.0)
    monkeypatch.setattr(P.time, "monotonic", clock)
    lines: list[str] = []
    with P.reporting(lines.append, every=20.0), P.tracker("sampling (nutpie)", unit=None) as track:
        track.advance(0)
        track.advance(0)
    assert lines == ["sampling (nutpie): 30 s elapsed", "sampling (nutpie): 1 min 00 s elapsed"]


def test_a_run_says_what_each_step_should_cost_as_it_starts(tmp_path, monkeypatch):
    """`uncertank run` says the plan's estimate first, then each long step's as the step starts."""
    from click.testing import CliRunner

    from uncertank import CostRates
    from uncertank.baselines import BM25Ranker
    from uncertank.cli import cli

    # a second per pair: every scoring step is long
    monkeypatch.setattr(BM25Ranker, "cost_rates", lambda self, *, warm_start=False: CostRates(0.0, 1.0))
    study = tmp_path / "study.toml"
    study.write_text('[study]\nname = "costs"\ntrain_dataset = "ubuntu-sample"\ntrain_negatives = "random"\n'
                     "max_train_queries = 5\nmax_valid_queries = 4\nmax_test_queries = 4\nnota = false\n"
                     'risk_grid = [0.0]\n[[conditions]]\nname = "in-domain"\ndataset = "ubuntu-sample"\n'
                     'negatives = "random"\n[[rankers]]\nname = "bm25"\n')
    run = CliRunner().invoke(cli, ["run", str(study), "--out", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert "estimated time: about 1 min 20 s by the rankers' rates" in run.stderr  # 2 x 40 pairs
    assert "bm25: scoring 40 pairs (valid); about 40 s by the estimate" in run.stderr
    assert "bm25: scoring 40 pairs (in-domain); about 40 s by the estimate" in run.stderr
    assert re.search(r"bm25: scored 40 pairs \(in-domain\) in \d+\.\d s \(estimated 40 s\)", run.stderr)


def test_a_nutpie_run_reports_its_completed_draws_and_divergences(monkeypatch):
    az = pytest.importorskip("arviz")
    import numpy as np

    import uncertank.bayes.fit as F

    x = np.full((2, 10), np.nan)
    x[:, :4] = 0.5  # four draws done by both chains so far
    diverging = np.zeros((2, 10), dtype=bool)
    diverging[0, 1] = diverging[1, 6] = True  # one among the completed draws, one beyond them
    trace = az.from_dict(posterior={"x": x}, sample_stats={"diverging": diverging})

    class Run:
        polls = 0

        @property
        def is_finished(self):
            type(self).polls += 1
            return type(self).polls > 2

        def inspect(self):
            return trace

    monkeypatch.setattr(F, "_LOOK_EVERY_S", 0.0)
    lines: list[str] = []
    with P.reporting(lines.append, every=1e-9):
        F._watch(Run(), 10, poll=0.0)
    assert lines and lines[-1].startswith("sampling (nutpie): 4 of 10 draws per chain after tuning (40%), "
                                          "divergences 1, ")
    class Unwatched(Run):
        def inspect(self):
            raise AssertionError("the trace was read with nobody to report to")

    Unwatched.polls = 0
    F._watch(Unwatched(), 10, poll=0.0)  # without a reporter it returns at once: the caller's wait() waits
    assert Unwatched.polls == 0


def test_a_heartbeat_repeats_the_running_loops_line_while_a_piece_of_work_is_slow():
    import threading

    lines: list[str] = []
    slow = threading.Event()
    with P.reporting(lines.append, every=0.05, prefix="bert: ", heartbeat=True), \
            P.tracker("epoch 1/1", total=10, unit="pairs") as track:
        track.advance(1, loss="0.69")
        slow.wait(0.5)  # one batch that takes ten periods: the heartbeat speaks meanwhile
        n_during = len(lines)
    time.sleep(0.2)
    assert n_during >= 3, lines  # the first update, then repeats while the batch runs
    assert all(line.startswith("bert: epoch 1/1: 1 of 10 pairs (10%), loss 0.69, ") for line in lines)
    assert len(lines) == n_during  # nothing once the loop and the block have ended
    with P.reporting(lines.append, every=0.05):  # without the heartbeat: silent while it waits
        with P.tracker("epoch 1/1", total=10, unit="pairs") as track:
            track.advance(1)
            slow.wait(0.3)
    assert len(lines) == n_during + 1
