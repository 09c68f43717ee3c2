"""Every public callable of uncertank and its first-party plugins, fed bad and extreme values.

Each returns, or raises a library error.

The callables are enumerated from the ``__all__`` of ``uncertank`` and of
its public modules (:func:`tests.fuzz._harness.enumerate_targets`); the test
``test_every_public_callable_is_covered`` counts what is fuzzed and checks
it against that enumeration, so a new public name is fuzzed without any
edit here. A call passes when it returns (every float it returns finite) or
raises the library's own ValueError, TypeError or LookupError from a
``raise`` in uncertank's code; anything else (an AttributeError, an error
from inside numpy or scipy, an OverflowError) fails, with the input.
"""

from __future__ import annotations

import os
import signal
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz._harness import (
    PLUGIN_PACKAGES,
    Target,
    call,
    documents_infinity,
    enumerate_targets,
    is_protocol,
    non_finite,
    parameters,
    raw_reason,
)
from tests.fuzz._values import Paths, bad_values, values_for
from tests.fuzz.known_failures import KNOWN_FAILURES

TARGETS = enumerate_targets()

#: Callables that are not called: each needs a trained model or the network. The reason is shown in the report.
EXCLUDED: dict[str, str] = {
    "uncertank.nn.probe.probe_backbone": "loads and runs a transformer backbone: needs a model",
    "uncertank.experiment.speed.probe_machine": "times a transformer backbone on this machine: needs a model",
    "uncertank.datasets.retrieval.SentenceEncoder": "loads a sentence-embedding model (from the network if not cached)",
}


#: Seconds one call may take on bad input before the harness calls it hung.
CALL_LIMIT_S = 20


class _Hung(Exception):
    """A call ran past :data:`CALL_LIMIT_S`."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hung(f"the call ran past {CALL_LIMIT_S} s")


def cli_target(t: Target) -> bool:
    """Whether ``t`` is the ``uncertank`` command or one of its parts: tests/fuzz/test_cli.py fuzzes those."""
    return t.module == "uncertank.cli" or t.module.startswith("uncertank.cli.")


def _cases() -> list[Any]:
    cases = []
    for t in TARGETS:
        if t.id in EXCLUDED or cli_target(t):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[t.id])] if t.id in KNOWN_FAILURES else []
        cases.append(pytest.param(t, id=t.id, marks=marks))
    return cases


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    return Paths(tmp_path_factory.mktemp("fuzz-paths"))


@pytest.fixture(scope="module", autouse=True)
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Run every call in a scratch folder, with the dataset cache there too: nothing of the user's is touched."""
    folder = tmp_path_factory.mktemp("fuzz-cwd")
    old_cwd, old_cache = os.getcwd(), os.environ.get("UNCERTANK_CACHE")
    os.chdir(folder)
    os.environ["UNCERTANK_CACHE"] = str(folder / "cache")
    yield folder
    os.chdir(old_cwd)
    if old_cache is None:
        os.environ.pop("UNCERTANK_CACHE", None)
    else:
        os.environ["UNCERTANK_CACHE"] = old_cache


def outcome(target: Target, args: dict[str, Any]) -> str | None:
    """What is wrong with calling ``target`` with ``args`` (None when the outcome is acceptable)."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(CALL_LIMIT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if is_protocol(target.obj):
                result = isinstance(args.get("value"), target.obj)
            else:
                result = call(target, args)
    except _Hung as exc:
        return str(exc)
    except Exception as exc:  # the harness judges every exception
        reason = raw_reason(exc)
        return None if reason is None else f"{reason}: {type(exc).__name__}: {str(exc)[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    found = non_finite(result, allow=documents_infinity(target.obj))
    return None if found is None else f"returned a non-finite number: {found}"


def draw_arguments(data: st.DataObject, target: Target, paths: Paths) -> dict[str, Any]:
    """Arguments for one call: every required parameter, and some optional ones, from the value pools."""
    if is_protocol(target.obj):
        return {"value": data.draw(bad_values(paths), label="value")}
    args: dict[str, Any] = {}
    for p in parameters(target.obj):
        required = p.default is p.empty
        if required or data.draw(st.booleans(), label=f"set {p.name}"):
            args[p.name] = data.draw(values_for(p.name, paths), label=p.name)
    return args


@pytest.mark.parametrize("target", _cases())
def test_bad_input_gives_a_library_error(target: Target, paths: Paths) -> None:
    examples = int(os.environ.get("UNCERTANK_FUZZ_EXAMPLES", "6"))

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              phases=(Phase.explicit, Phase.generate),  # values come from fixed pools: nothing to shrink
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def fuzz(data: st.DataObject) -> None:
        args = draw_arguments(data, target, paths)
        problem = outcome(target, args)
        assert problem is None, f"{target.id}({args!r}): {problem}"

    try:
        fuzz()
    finally:
        if "plugin" in target.id or target.name in ("register", "unregister", "hookimpl"):
            from uncertank.plugins import get_plugin_manager

            get_plugin_manager(refresh=True)  # a fuzzed register() or unregister() leaves no trace


def test_every_public_callable_is_covered() -> None:
    """The cases are the enumeration less the commented exclusions; every exclusion names a public callable."""
    ids = {t.id for t in TARGETS}
    from tests.fuzz.test_cli import COMMANDS

    fuzzed = _cases()
    commands = [t for t in TARGETS if cli_target(t)]
    assert len(fuzzed) + len(commands) + len(EXCLUDED) == len(TARGETS)
    # each part of the command is the group, its entry point, or a command the CLI harness walks
    walked = {id(c) for c in COMMANDS.values()}
    assert all(t.name in ("cli", "main") or id(t.obj) in walked for t in commands), commands
    assert set(EXCLUDED) <= ids, set(EXCLUDED) - ids
    assert set(KNOWN_FAILURES) <= ids, set(KNOWN_FAILURES) - ids
    assert all(reason.strip() for reason in EXCLUDED.values())
    assert len(TARGETS) > 300  # the walk reached the subpackages
    # and every first-party plugin package: each exports callables (its ranker at least)
    roots = {t.module.split(".")[0] for t in TARGETS}
    assert set(PLUGIN_PACKAGES) <= roots, set(PLUGIN_PACKAGES) - roots
    assert len(PLUGIN_PACKAGES) >= 8
