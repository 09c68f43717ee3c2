"""The Laplace section of docs/own-ranker.md runs as written, on a user's folder (smaller data)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _section(page: str, heading: str) -> str:
    text = (ROOT / "docs" / page).read_text()
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow
def test_the_own_ranker_laplace_script_runs(tmp_path, capsys):
    from uncertank_bert import BertRanker

    from uncertank.nn.testing import tiny_config, toy_queries

    folder = BertRanker(tiny_config(), max_length=32, epochs=1, batch_size=4, lr=3e-3, show_progress=False,
                        device="cpu").fit(toy_queries()).save_pretrained(tmp_path / "my-cross-encoder")
    code = re.findall(r"```python\n(.*?)```", _section("own-ranker.md", "## Last-layer Laplace on your model"),
                      flags=re.S)[0]
    code = code.replace('FOLDER = "my-cross-encoder"', f"FOLDER = {str(folder)!r}").replace("max_queries=200",
                                                                                           "max_queries=12")
    exec(compile(code, "docs/own-ranker.md", "exec"), {"__name__": "laplace_docs"})
    out = capsys.readouterr().out
    assert "(by marginal likelihood)" in out and "Laplace ECE" in out
