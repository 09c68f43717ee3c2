"""accepted_keywords: keyword names read from a factory's source, following ``**params`` without importing."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from uncertank._signature import accepted_keywords

BASE = """
class Base:
    def __init__(self, backbone=None, *, lr=0.1, seed=0):
        self.lr = lr
"""

MODELS = """
from shapes.base import Base
from . import base as _base


class Plain(Base):
    name = "plain"


class Extra(Base):
    def __init__(self, backbone=None, *, passes=10, **params):
        super().__init__(backbone, **params)


class Twice(Extra):
    def __init__(self, *, focal=2.0, lr=0.5, **params):
        super().__init__(lr=lr, **params)


class Stored:
    def __init__(self, **params):
        self.params = params


class Mixed(Base, dict):
    pass


class WithNew(Base):
    def __new__(cls, **params):
        return super().__new__(cls)


def _decorate(cls):
    return cls


@_decorate
class Decorated(Base):
    pass
"""

SHAPES_INIT = """
from shapes.models import Extra as Exported
"""

# each builds the class it names with **params, importing it inside as plugin factories do
BUILDS = {"plain": "Plain", "stored": "Stored", "mixed": "Mixed", "with_new": "WithNew", "decorated": "Decorated"}

FACTORIES = "import importlib\n" + "".join(
    f"\n\ndef {name}(**params):\n    from shapes.models import {cls}\n\n    return {cls}(**params)\n"
    for name, cls in BUILDS.items()
) + """

def exported(**params):
    from shapes import Exported

    return Exported(**params)


def relative(**params):
    from .models import Twice

    return Twice(**params)


def both(*, kind="a", **params):
    from shapes.models import Extra, Plain

    return Plain(**params) if kind == "a" else Extra(**params)


def pops(**params):
    from shapes.models import Plain

    extra = params.pop("extra", None), params.get("more"), "flag" in params, params["must"]
    saved = params
    return Plain(**saved) if extra else Plain(**params)


def iterates(**params):
    from shapes.models import Plain

    wanted = {k: v for k, v in params.items() if k.startswith("head_")}
    return Plain(**params), wanted


def dynamic(**params):
    return getattr(importlib.import_module("shapes.models"), "Plain")(**params)


def unused(**params):
    return None


def missing(**params):
    from shapes.nowhere import Thing

    return Thing(**params)
"""


@pytest.fixture
def factories(tmp_path, monkeypatch):
    """A package ``shapes`` on disk whose ``factories`` module is imported and ``models`` is not."""
    pkg = tmp_path / "shapes"
    pkg.mkdir()
    for name, text in {"__init__": SHAPES_INIT, "base": BASE, "models": MODELS, "factories": FACTORIES}.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("shapes.factories", pkg / "factories.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "shapes.factories", module)
    spec.loader.exec_module(module)
    yield module
    assert "shapes.models" not in sys.modules and "shapes" not in sys.modules  # read, never imported


def test_a_signature_without_kwargs_is_read_as_it_is():
    def factory(backbone, /, n, *, seed=0):
        return n

    assert accepted_keywords(factory) == ("n", "seed")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("plain", ("backbone", "lr", "seed")),
        ("exported", ("backbone", "passes", "lr", "seed")),
        ("relative", ("focal", "lr", "backbone", "passes", "seed")),
        ("both", ("kind", "backbone", "lr", "seed", "passes")),  # every callee's names
        ("pops", ("extra", "more", "flag", "must", "backbone", "lr", "seed")),  # keys read by name count
    ],
)
def test_kwargs_are_followed_to_the_class_they_build(factories, name, expected):
    assert accepted_keywords(getattr(factories, name)) == expected


def test_a_chain_deeper_than_the_limit_is_none(factories, monkeypatch):
    from uncertank import _signature

    monkeypatch.setattr(_signature, "_MAX_DEPTH", 1)
    assert accepted_keywords(factories.plain) is None


@pytest.mark.parametrize(
    "name", ["stored", "iterates", "dynamic", "unused", "mixed", "with_new", "decorated", "missing"]
)
def test_what_the_source_cannot_decide_is_none(factories, name):
    assert accepted_keywords(getattr(factories, name)) is None


def test_callables_without_source_or_a_top_level_name_are_none():
    def outer():
        def inner(**params):
            return dict(**params)

        return inner

    assert accepted_keywords(outer()) is None
    assert accepted_keywords(dict) is None


# -- what reading the source adds over building: measured on every installed ranker ----------------


def _ranker_mistakes() -> list[object]:
    from uncertank.plugins import registry

    cases = []
    for name in sorted(registry("rankers")):
        for mistake in ("unknown", "misspelled"):
            cases.append(pytest.param(name, mistake, id=f"{name}-{mistake}"))
    return cases


@pytest.mark.parametrize(("name", "mistake"), _ranker_mistakes())
def test_building_catches_every_parameter_mistake_the_source_reading_catches(name, mistake):
    """The measurement behind the verdict on this module: both catch the same mistakes, by name.

    For every installed ranker, an unknown parameter and a misspelled real
    one are caught by :func:`accepted_keywords` and, just as well, by the
    ``TypeError`` of building the ranker with them (which validation does
    right after the check anyway).
    """
    from uncertank.plugins import get_factory

    factory = get_factory("rankers", name)
    named = accepted_keywords(factory)
    assert named, f"{name}: keywords not readable"
    key = "colour" if mistake == "unknown" else named[0] + "s"
    assert key not in named  # caught by reading the source
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{key}'"):  # caught by building
        factory(**{key: 1})
