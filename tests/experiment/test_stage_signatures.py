"""A study's stages see only their settings: which modules take the whole ``StudyConfig``, read from the source.

Every function of every module of ``uncertank/`` is read with ``ast``; a
module counts when one of its functions annotates a parameter with
``StudyConfig`` (plainly, in a union, or as a string). Only the command
line, the runner (which cuts the study into sections, orders the stages,
and plans them for the dry run: ``run_study`` and ``plan_study``) and the
check before the work (the preflight) may: three modules. Every other
stage takes its section of the config (``uncertank.experiment.config``'s
``*Settings``), the dry run's plan included (``plan_sections``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from pathlib import Path

import pytest

import uncertank
from uncertank.experiment import config as study_config
from uncertank.experiment import decisions, external, guarantees, runner, systems, table
from uncertank.experiment.config import StudyConfig

PACKAGE = Path(uncertank.__file__).resolve().parent

#: The modules that may take the whole study config, by path under uncertank/.
ALLOWED = {
    "cli/study_cmd.py",  # the command line
    "experiment/runner.py",  # the runner: cuts the study into sections, orders the stages
    "experiment/preflight.py",  # the check before the work
}

SECTIONS = (study_config.DataSettings, study_config.RankerSettings, study_config.MeasureSettings,
            study_config.DecisionSettings, study_config.GuaranteeSettings, study_config.ComparisonSettings,
            study_config.TableSettings)

#: Each stage and the section it takes first.
STAGES = {
    runner.load_data: study_config.DataSettings,
    runner.fit_rankers: study_config.RankerSettings,
    runner.predict_all: study_config.RankerSettings,
    runner.measure: study_config.MeasureSettings,
    decisions.decide: study_config.DecisionSettings,
    guarantees.guarantees: study_config.GuaranteeSettings,
    external.check_run_files: study_config.ComparisonSettings,
    external.match_runs: study_config.ComparisonSettings,
    external.score_runs: study_config.ComparisonSettings,
    systems.bayes_metric: study_config.ComparisonSettings,
    systems.compare_systems: study_config.ComparisonSettings,
    table.study_paper_table: study_config.TableSettings,
}


def _names_study_config(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "StudyConfig":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "StudyConfig":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                if _names_study_config(ast.parse(node.value, mode="eval").body):
                    return True
            except SyntaxError:
                continue
    return False


def takes_study_config(source: str) -> list[str]:
    """The functions of ``source`` with a parameter annotated as ``StudyConfig``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if any(p is not None and _names_study_config(p.annotation) for p in params):
                found.append(node.name)
    return found


def modules_taking_study_config() -> dict[str, list[str]]:
    """Module path under uncertank/ -> its functions taking the whole StudyConfig."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hits = takes_study_config(path.read_text(encoding="utf-8"))
        if hits:
            out[path.relative_to(PACKAGE).as_posix()] = hits
    return out


def test_the_walk_finds_every_spelling_of_the_annotation():
    source = '''
def a(config: StudyConfig) -> None: ...
def b(x: int, *, config: "StudyConfig | None" = None) -> None: ...
def c(config: cfg.StudyConfig) -> None: ...
class K:
    def d(self, settings: DecisionSettings, other: list[StudyConfig]) -> None: ...
def e(settings: DecisionSettings) -> StudyConfig: ...
'''
    assert takes_study_config(source) == ["a", "b", "c", "d"]


def test_only_the_command_line_the_runner_and_the_checks_take_the_whole_study():
    found = modules_taking_study_config()
    extra = {m: f for m, f in found.items() if m not in ALLOWED}
    assert extra == {}, f"stages that take the whole StudyConfig instead of their section: {extra}"
    assert "experiment/runner.py" in found  # the walk sees the one that must
    assert len(found) <= 3, found  # 8 modules took it before the stages were cut to their sections


@pytest.mark.parametrize("stage", list(STAGES), ids=lambda f: f.__name__)
def test_each_stage_takes_its_section_first(stage):
    params = list(inspect.signature(stage).parameters.values())
    assert params[0].annotation == STAGES[stage].__name__  # as written (postponed annotations)
    assert getattr(inspect.getmodule(stage), STAGES[stage].__name__) is STAGES[stage]
    assert not any("StudyConfig" in str(p.annotation) for p in params)


@pytest.mark.parametrize("section", SECTIONS, ids=lambda c: c.__name__)
def test_a_section_is_fields_of_the_study_under_their_own_names(section):
    """Each field of a section is the StudyConfig field so named, with the same meaning (its type, bar pydantic's
    constraints), so ``StudyConfig.section`` copies it and a study config can stand in for any section."""
    assert dataclasses.is_dataclass(section) and section.__dataclass_params__.frozen  # type: ignore[attr-defined]
    study = {f.name: f for f in dataclasses.fields(StudyConfig)}
    own = dataclasses.fields(section)
    assert own and {f.name for f in own} <= set(study)
    hints = typing.get_type_hints(section)
    study_hints = typing.get_type_hints(StudyConfig)
    for f in own:
        assert _plain(hints[f.name]) == _plain(study_hints[f.name]), f.name


def _plain(tp: object) -> object:
    """A type without ``Annotated`` metadata (pydantic's constraints), at any depth."""
    if typing.get_origin(tp) is typing.Annotated:
        return _plain(typing.get_args(tp)[0])
    args = typing.get_args(tp)
    if not args:
        return tp
    origin = typing.get_origin(tp)
    plain = tuple(_plain(a) for a in args)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return frozenset(plain)
    return (origin, plain)


def test_the_study_cuts_itself_into_each_section():
    study = study_config.demo_config("quick")
    for section in SECTIONS:
        got = study.section(section)
        assert isinstance(got, section)
        for f in dataclasses.fields(section):
            assert getattr(got, f.name) is getattr(study, f.name)


def test_scoring_no_external_run_needs_no_ranking_metric():
    """A study measuring only calibration, without runs, is not asked for the metric the runs would be scored by."""
    study = study_config.StudyConfig(
        name="calibration only", train_dataset="ubuntu-sample",
        conditions=(study_config.ConditionConfig("in-domain", "ubuntu-sample", "random"),),
        rankers=(study_config.RankerConfig("bm25"),), metrics=("ece",),
        bayes=study_config.BayesConfig(enabled=False),
    )
    comparison = study.section(study_config.ComparisonSettings)
    assert external.score_runs(comparison, {}, []) == []
    with pytest.raises(ValueError, match="measures no ranking metric"):
        systems.bayes_metric(comparison)
