"""uncertank._environment: what a result records of the machine that computed it."""

from __future__ import annotations

import sys

import numpy as np

import uncertank
from uncertank._environment import environment
from uncertank.experiment.result import StudyResult


def test_the_record_names_the_versions_and_reads_torch_only_when_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = environment()
    assert env["uncertank"] == uncertank.__version__ and env["numpy"] == np.__version__
    assert not [k for k in env if k.startswith("torch")]  # torch is neither imported nor described
    assert "torch" not in sys.modules


def test_a_study_result_round_trips_its_environment_and_reads_old_files_without_one():
    result = StudyResult({}, {}, {}, [], environment={"uncertank": "0.1.0", "torch cpu capability": "AVX512"})
    assert StudyResult.from_dict(result.to_dict()).environment == result.environment
    old = result.to_dict()
    del old["environment"]
    assert StudyResult.from_dict(old).environment == {}
