"""Every command and option of ``uncertank``, fed bad and extreme values: a result, or one line and exit 2.

The commands and their options are walked from the click group
(:data:`uncertank.cli.cli`), so a new command or option is fuzzed without
an edit here. Each call passes when it exits 0, or exits 2 (click's usage
error, or the command's ``InputError``) with no traceback; the work itself
(a Bayesian fit, a study's training) is replaced by a stub that stops the
call as soon as the inputs have passed their checks, so that only what
runs before the work is judged, and quickly.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz._values import Paths
from uncertank.cli import cli

#: Values an option or argument is given on the command line: numbers at every edge, text, paths of every kind.
TEXT_VALUES = ["nan", "inf", "-inf", "0", "-1", "0.5", "1", "2", str(2**63), str(2**64), "1e308", "-1e308", "1e20",
               "", " ", "é☃\u200b", "x", "map", "map,map", "k=1,k=2", "recall_at_k:k=1,k=2", "map:k=1e20",
               "bm25", "a,b", "--", "-"]

STUDY = """
[study]
train_dataset = "ubuntu-sample"
train_negatives = "random"
seed = {seed}
{extra}
[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "random"

[bayes]
enabled = false

[[rankers]]
name = "bm25"
{rankers}
"""


class _ReachedWork(Exception):
    """The command's inputs passed their checks and it was about to do its work (stubbed)."""


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    return {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}  # type: ignore[misc]


COMMANDS = _commands()
OPTIONS = [(name, p) for name, cmd in COMMANDS.items() for p in cmd.params]


def _studies(root: Any) -> list[str]:
    """Study files with extreme numbers, a key given twice and labels given twice."""
    cases = {
        "huge-seed": STUDY.format(seed=2**64, extra="", rankers=""),
        "float-seed": STUDY.format(seed="1e308", extra="", rankers=""),
        "nan-bins": STUDY.format(seed=0, extra="n_bins = nan", rankers=""),
        "empty-metrics": STUDY.format(seed=0, extra="metrics = []", rankers=""),
        "two-labels": STUDY.format(seed=0, extra="", rankers='label = "a"\n[[rankers]]\nname = "bm25"\nlabel = "a"'),
        "duplicated-key": STUDY.format(seed=0, extra="seed = 1", rankers=""),
    }
    out = []
    for name, text in cases.items():
        path = root / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        out.append(str(path))
    return out


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    paths = Paths(tmp_path_factory.mktemp("cli-paths"))
    files = [str(p) for p in paths.all() if isinstance(p, str)]
    return {"text": TEXT_VALUES, "path": files + _studies(tmp_path_factory.mktemp("studies"))}


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The work replaced by :class:`_ReachedWork`; every call runs in a scratch folder."""
    import uncertank.bayes.fit as fit
    import uncertank.experiment as experiment
    import uncertank.experiment.runner as runner
    from uncertank.experiment.preflight import validate_config

    def reached(*args: Any, **kwargs: Any) -> Any:
        raise _ReachedWork

    def checked_plan(config: Any, out_dir: Any, **kwargs: Any) -> Any:
        validate_config(config, out_dir=out_dir)
        raise _ReachedWork

    monkeypatch.setattr(fit, "compare", reached)
    monkeypatch.setattr(experiment, "run_study", reached)
    monkeypatch.setattr(runner, "plan_study", checked_plan)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UNCERTANK_CACHE", str(tmp_path / "cache"))


def _value(data: st.DataObject, param: click.Parameter, pools: dict[str, list[str]]) -> str:
    is_path = isinstance(param.type, click.Path) or param.name in ("source", "qrels", "run", "runs", "against")
    pool = pools["path"] + pools["text"][:6] if is_path else pools["text"] + pools["path"][:4]
    if isinstance(param.type, click.Choice):
        pool = [*map(str, param.type.choices), *pool[:8]]
    return data.draw(st.sampled_from(pool), label=param.name or "?")


def _arguments(data: st.DataObject, cmd: click.Command, pools: dict[str, list[str]]) -> list[str]:
    args: list[str] = []
    for p in cmd.params:
        if isinstance(p, click.Argument):
            if p.required or data.draw(st.booleans()):
                args.append(_value(data, p, pools))
            continue
        assert isinstance(p, click.Option)
        if not (p.required or data.draw(st.booleans(), label=f"give {p.name}")):
            continue
        flag = p.opts[0]
        times = data.draw(st.sampled_from([1, 1, 2]), label=f"times {p.name}")  # an option given twice
        for _ in range(times):
            if p.is_flag:
                args.append(flag)
            else:
                args += [flag, _value(data, p, pools)]
    return args


def judge(result: Any, argv: list[str]) -> str | None:
    """What is wrong with the outcome of ``uncertank ARGV`` (None when acceptable)."""
    exc = result.exception
    if isinstance(exc, _ReachedWork):
        return None
    if exc is not None and not isinstance(exc, SystemExit):
        return f"raised {type(exc).__name__}: {exc}"
    text = (result.stdout or "") + (result.stderr or "")
    if "Traceback" in text:
        return "printed a traceback"
    if result.exit_code not in (0, 2):
        return f"exit status {result.exit_code}"
    if result.exit_code == 2:
        lines = [ln for ln in (result.stderr or "").splitlines() if ln.strip()]
        if not lines:
            return "exit status 2 without a message on stderr"
        if not any(ln.startswith(("Error", "uncertank")) for ln in lines):
            return f"exit status 2 without an error line: {lines[-1][:200]}"
    return None


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_gives_a_result_or_one_line_and_exit_2(name: str, pools: dict[str, list[str]],
                                                             stubbed: None) -> None:
    cmd = COMMANDS[name]
    examples = int(os.environ.get("UNCERTANK_FUZZ_EXAMPLES", "6")) * 4

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
    @given(st.data())
    def fuzz(data: st.DataObject) -> None:
        argv = [name, *_arguments(data, cmd, pools)]
        result = CliRunner().invoke(cli, argv, catch_exceptions=True)
        problem = judge(result, argv)
        assert problem is None, f"uncertank {' '.join(argv)}: {problem}\n{result.stdout}\n{result.stderr}"

    fuzz()


@pytest.mark.parametrize("name,param", [pytest.param(n, p, id=f"{n}:{p.name}") for n, p in OPTIONS])
def test_each_option_alone_with_each_bad_value(name: str, param: click.Parameter, pools: dict[str, list[str]],
                                               stubbed: None) -> None:
    """Every option with every value of its pool, the other required ones plausible: the outcome is judged."""
    cmd = COMMANDS[name]
    required = {"qrels": pools["path"][pools["path"].index(next(p for p in pools["path"] if p.endswith(".qrels")))],
                "run": next(p for p in pools["path"] if p.endswith("edge-a.run"))}
    values = [None] if getattr(param, "is_flag", False) else (
        pools["path"][:20] if isinstance(param.type, click.Path) else pools["text"])
    for value in values:
        argv = [name]
        for p in cmd.params:
            if p is param:
                continue
            if p.required:
                plausible = required["qrels"] if "qrels" in (p.name or "") else required["run"]
                argv += [plausible] if isinstance(p, click.Argument) else [p.opts[0], plausible]  # type: ignore[attr-defined]
        if isinstance(param, click.Argument):
            argv.append(str(value))
        elif value is None:
            argv.append(param.opts[0])  # type: ignore[attr-defined]
        else:
            argv += [param.opts[0], str(value)]  # type: ignore[attr-defined]
        if name == "demo" and not any(a in argv for a in ("--show",)):
            argv.append("--show")  # the demo's study runs only as far as printing it
        result = CliRunner().invoke(cli, argv, catch_exceptions=True)
        problem = judge(result, argv)
        assert problem is None, f"uncertank {' '.join(argv)}: {problem}\n{result.stdout}\n{result.stderr}"


def test_main_with_a_bad_command_line_exits_2(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from uncertank.cli import main

    monkeypatch.setattr(sys, "argv", ["uncertank", "evaluate", "--runs", "nan"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_the_walk_covers_every_command_and_option() -> None:
    """The commands and options fuzzed are those the group lists; none is left out."""
    ctx = click.Context(cli)
    assert sorted(COMMANDS) == sorted(cli.list_commands(ctx))
    assert len(OPTIONS) == sum(len(cmd.params) for cmd in COMMANDS.values())
    assert len(COMMANDS) >= 7 and len(OPTIONS) >= 60
