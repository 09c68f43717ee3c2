"""docs/llm.md quotes the LLM studies' checked-in numbers, and those are what the study files ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
STUDIES = {
    "llm_study": "uncertank run docs/studies/llm.toml --out .cache/llm_study",
    "llm_laplace": "uncertank run docs/studies/llm_laplace.toml --out .cache/llm_laplace",
    "llm_mc_dropout": "uncertank run docs/studies/llm_mc_dropout.toml --out .cache/llm_mc_dropout",
    "llm_uncertainty": "uncertank run docs/studies/llm_uncertainty.toml --out .cache/llm_uncertainty",
    "llm_lora_ensemble": "uncertank run docs/studies/llm_lora_ensemble.toml --out .cache/llm_lora_ensemble",
}


@pytest.fixture(scope="module")
def summary():
    return load_script(ROOT / "docs" / "scripts" / "full_study_summary.py")


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_the_page_quotes_every_table_of_the_record(summary, name):
    payload = json.loads((RESULTS / f"{name}.json").read_text())
    assert payload["command"] == STUDIES[name]
    page = (ROOT / "docs" / "llm.md").read_text()
    for key, table in summary.tables(payload).items():
        if table.count("\n") > 1:  # a table with rows
            assert table in page, f"docs/llm.md lacks the {key!r} table of docs/results/{name}.json"


def test_the_fine_tuned_llm_learned_and_is_calibrated_beside_bert():
    payload = json.loads((RESULTS / "llm_study.json").read_text())
    ind = payload["results"][payload["conditions"][0]]
    assert ind["llm"]["R@1"] >= 0.30 > ind["llm_zero_shot"]["R@1"]  # chance is 0.10
    for cond in payload["conditions"]:
        for ranker in ("bert", "llm", "llm_zero_shot"):
            row = payload["results"][cond][ranker]
            assert 0 <= row["ECE"] <= 1 and 0 <= row["ECE balanced"] <= 1
