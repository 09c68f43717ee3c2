"""The harness's own rules: pydantic's ValidationError is the library's error only from uncertank's models."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from tests.fuzz import _harness
from tests.fuzz._harness import raw_reason
from uncertank.experiment import BayesConfig, RankerConfig


def _refusal(build) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        build()
    return info.value


class Foreign(BaseModel):
    n: int


class Asserting(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def positive(cls, v: int) -> int:
        assert v > 0
        return v


class Operating(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def parsed(cls, v: int) -> int:
        return int("not a number") + v  # a ValueError of an operation, not of a raise


@pytest.mark.parametrize("build", [lambda: BayesConfig(retries=-1, systems=3), lambda: RankerConfig(name="")])
def test_a_refusal_of_uncertanks_own_model_is_a_library_error(build):
    assert raw_reason(_refusal(build)) is None


def test_a_refusal_of_another_model_is_raw():
    assert "not a pydantic model of uncertank's" in raw_reason(_refusal(lambda: Foreign(n="x")))


def test_an_assert_or_an_operation_in_a_validator_is_raw(monkeypatch):
    monkeypatch.setattr(_harness, "_project_models", lambda: {"Asserting": Asserting, "Operating": Operating})
    assert "from an assert in a validator" in raw_reason(_refusal(lambda: Asserting(n=-1)))
    assert "wrapping ValueError from a dependency" in raw_reason(_refusal(lambda: Operating(n=1)))
