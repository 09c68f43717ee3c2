"""Warnings and other libraries' chatter go to the study's run.log; the console keeps the progress and one count."""

from __future__ import annotations

import io
import logging
import re
import sys
import types
import warnings
from typing import ClassVar

import numpy as np
import pytest
from click.testing import CliRunner

from uncertank import Predictions, hookimpl
from uncertank.cli import cli
from uncertank.cli.study_cmd import _progress_logger
from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
from uncertank.experiment.config import BayesConfig
from uncertank.experiment.logfile import run_log
from uncertank.plugins import get_plugin_manager

STUDY = """
[study]
name = "chatty"
train_dataset = "ubuntu-sample"
max_train_queries = 10
max_valid_queries = 10
max_test_queries = 10
risk_grid = [0.0]

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"

[[rankers]]
name = "chatty"

[bayes]
enabled = false
"""

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"


class ConvergenceWarning(UserWarning):
    """As PyMC's and ArviZ's."""


class Chatty:
    """A ranker whose libraries talk: a warning, a log record, a progress bar, a print, each on its first call."""

    name = "chatty"
    calls: ClassVar[list[str]] = []
    fail = False

    def __init__(self, *, show_progress: bool = True) -> None:
        self.show_progress = show_progress

    def predict(self, queries):
        type(self).calls.append("predict")
        if len(type(self).calls) == 1:
            warnings.warn("the sampler did not converge: max R-hat 1.08", ConvergenceWarning, stacklevel=1)
            logging.getLogger("chatty_sampler").warning("Sampling 4 chains for 1_000 tune")
            bar = sys.stderr
            for i in (0, 50, 100):
                bar.write(f"\rLoading weights: {i:3d}%|")
            bar.write("\n")
            print("Auto-assigning NUTS sampler...")
            if self.fail:
                raise RuntimeError("the sampler broke")
        scores = np.linspace(0.1, 0.9, queries.n_pairs)
        return Predictions(scores, queries.offsets, ranker=self.name)


@hookimpl
def uncertank_rankers():
    return {"chatty": Chatty}


@pytest.fixture
def chatty():
    Chatty.calls.clear()
    Chatty.fail = False
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("chatty_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="chatty-rankers")
    yield Chatty
    get_plugin_manager(refresh=True)


def _config() -> StudyConfig:
    return StudyConfig(
        name="chatty", train_dataset="ubuntu-sample",
        conditions=(ConditionConfig("in-domain", "ubuntu-sample", "random"),),
        rankers=(RankerConfig("chatty"),), max_train_queries=10, max_valid_queries=10, max_test_queries=10,
        risk_grid=(0.0,), bayes=BayesConfig(enabled=False),
    )


RAW = ("ConvergenceWarning", "R-hat", "Sampling 4 chains", "Loading weights", "Auto-assigning", "warnings.warn")


def test_uncertank_run_keeps_warnings_and_chatter_off_the_console(tmp_path, chatty):
    path = tmp_path / "chatty.toml"
    path.write_text(STUDY)
    out = tmp_path / "out"
    root = logging.getLogger()
    kept = root.handlers[:]
    root.handlers.clear()  # as in a plain `uncertank run`: a record nobody handles goes to logging's last resort
    try:
        run = CliRunner().invoke(cli, ["run", str(path), "--out", str(out)])
    finally:
        root.handlers[:] = kept
    assert run.exit_code == 0, run.output
    for raw in RAW:
        assert raw not in run.output.replace("1 ConvergenceWarning", ""), raw
    last = run.stderr.strip().splitlines()[-1]
    assert re.fullmatch(rf"\s*[\d.]+s 1 warning \(1 ConvergenceWarning\) and 3 lines of other libraries' output "
                        rf"written to {re.escape(str(out))}/run.log", last), last
    assert "report written to" in run.stderr  # the study's own progress stays
    log = (out / "run.log").read_text()
    assert re.search(rf"^{STAMP} \[warning\] ConvergenceWarning: the sampler did not converge: max R-hat 1.08 "
                     r"\(.*test_run_log.py:\d+\)$", log, re.M), log
    assert re.search(rf"^{STAMP} \[stderr\] Sampling 4 chains for 1_000 tune$", log, re.M), log
    assert re.search(rf"^{STAMP} \[stderr\] Loading weights: 100%\|$", log, re.M), log  # the bar's last state only
    assert "Loading weights:   0%" not in log
    assert re.search(rf"^{STAMP} \[stdout\] Auto-assigning NUTS sampler\.\.\.$", log, re.M), log
    assert re.search(rf"^{STAMP} \[study\] study 'chatty', uncertank ", log, re.M), log  # the run's first line
    assert re.search(rf"^{STAMP} \[study\] report written to {re.escape(str(out))}$", log, re.M), log
    assert log.rstrip().endswith(f"written to {out}/run.log")


def test_run_study_logs_a_handler_made_before_the_run_and_restores_it(tmp_path, chatty, capsys):
    handler = logging.StreamHandler(sys.stderr)  # a library imported before the run, as PyMC adds its handler
    logger = logging.getLogger("chatty_sampler")
    logger.addHandler(handler)
    lines: list[str] = []
    try:
        run_study(_config(), tmp_path / "out", log=lines.append)
    finally:
        logger.removeHandler(handler)
    assert handler.stream is sys.stderr
    err = capsys.readouterr()
    for raw in RAW:
        assert raw not in err.err + err.out, raw
    assert lines[-1] == (f"1 warning (1 ConvergenceWarning) and 3 lines of other libraries' output written to "
                         f"{tmp_path / 'out' / 'run.log'}")
    log = (tmp_path / "out" / "run.log").read_text()
    assert re.search(rf"^{STAMP} \[stderr\] Sampling 4 chains for 1_000 tune$", log, re.M), log


def test_a_resumed_run_appends_and_a_failed_run_still_counts(tmp_path, chatty, capsys):
    out = tmp_path / "out"
    run_study(_config(), out)
    chatty.calls.clear()
    chatty.fail = True
    with pytest.raises(RuntimeError, match="the sampler broke"):
        run_study(_config(), out, resume=False)
    assert type(sys.stdout).__name__ != "_Stream" and type(sys.stderr).__name__ != "_Stream"  # given back
    log = (out / "run.log").read_text()
    assert len(re.findall(r"\[study\] study 'chatty'", log)) == 2  # two runs, one file
    assert log.count("ConvergenceWarning: the sampler did not converge") == 2
    assert log.rstrip().endswith(f"written to {out / 'run.log'}")
    assert "R-hat" not in capsys.readouterr().err


def test_uncertanks_own_output_stays_on_the_console(tmp_path):
    own = types.ModuleType("uncertank.fake_progress")
    exec("def bar(stream):\n    stream.write('training: 50%\\n')\n", own.__dict__)  # as uncertank's tqdm bars
    seen: list[str] = []
    console = io.StringIO()
    old = sys.stderr
    sys.stderr = console
    try:
        with run_log(tmp_path / "run.log", seen.append) as logged:
            own.bar(sys.stderr)
            sys.stderr.write("someone else's line\n")
            logged.say("step 1 of 2")
    finally:
        sys.stderr = old
    assert console.getvalue() == "training: 50%\n"
    assert seen == ["step 1 of 2", f"1 line of other libraries' output written to {tmp_path / 'run.log'}"]
    assert re.search(rf"^{STAMP} \[stderr\] someone else's line$", (tmp_path / "run.log").read_text(), re.M)


def test_a_handler_made_during_the_run_writes_where_the_console_is_after_it(tmp_path):
    console = io.StringIO()
    old = sys.stderr
    sys.stderr = console
    logger = logging.getLogger("chatty_late")
    try:
        with run_log(tmp_path / "run.log"):
            handler = logging.StreamHandler()  # as PyMC adds one when it is first imported, during a study
            logger.addHandler(handler)
            logger.warning("during the run")
        logger.warning("after the run")
    finally:
        logger.removeHandler(handler)
        sys.stderr = old
    assert console.getvalue() == "after the run\n"
    assert re.search(rf"^{STAMP} \[stderr\] during the run$", (tmp_path / "run.log").read_text(), re.M)


def test_a_run_with_nothing_to_hide_says_where_its_log_is(tmp_path):
    seen: list[str] = []
    with run_log(tmp_path / "run.log", seen.append):
        pass
    assert seen == [f"no warnings; this run's log is {tmp_path / 'run.log'}"]


@pytest.mark.parametrize("tty", [False, True])
def test_progress_lines_are_never_wrapped(monkeypatch, tty):
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    stream = Stream()
    monkeypatch.setattr(sys, "stderr", stream)
    log = _progress_logger()
    long = "rankers[0] " + "x" * 150
    log(long)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and long in lines[0]  # one line, and rich markup left as written


def test_the_warnings_of_a_run_are_kept_in_results_json_and_the_report(tmp_path, chatty):
    import json

    run_study(_config(), tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["warnings"] == [{"category": "ConvergenceWarning", "message": "the sampler did not converge: max "
                                  "R-hat 1.08", "count": 1}]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Warnings during the run" in report and "the sampler did not converge: max R-hat 1.08" in report
