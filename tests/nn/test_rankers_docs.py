"""The extension-API example of docs/rankers.md runs, and the section lists exactly the public API."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "rankers.md").read_text().split("## Write your own neural ranker", 1)[1].split("\n## ", 1)[0]


def test_the_write_your_own_example_runs():
    code = re.findall(r"```python\n(.*?)```", SECTION, flags=re.S)[0]
    exec(compile(code, "docs/rankers.md", "exec"), {"__name__": "rankers_docs"})


def test_the_section_lists_every_public_method_of_the_extension_api():
    from uncertank.nn import NeuralRanker

    public = {
        name for name, value in vars(NeuralRanker).items()
        if not name.startswith("_") and callable(getattr(NeuralRanker, name)) and name not in ("fit", "predict")
    }
    assert public == {
        "create_model", "build_model", "loss", "on_train_end", "extra_params", "saved_params", "check_queries",
        "encode", "encode_texts", "score", "batch_outputs", "check_fitted", "save", "save_into", "save_pretrained",
        "load", "warm_start", "from_ranker", "read_pairs_like", "cost_rates", "missing_requirements",
    }
    missing = [name for name in public if f"`{name}(" not in SECTION]
    assert missing == []
    properties = [n for n, v in vars(NeuralRanker).items() if isinstance(v, property) and not n.startswith("_")]
    assert [n for n in properties if f"`{n}` (property)" not in SECTION] == []
