"""A comparison of two systems (a user's model against BM25): the default model converges.

With two systems a group scale for the system effects is barely identified,
and the paper's pooled model fails its convergence checks on such data
(docs/results/few_systems.json); below 10 systems the system effects are
fixed, summing to zero under a fixed-scale prior. A two-system fit that
converges and gets its verdict is tests/bayes/test_cli.py's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pymc")

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "scripts" / "few_systems.py"


def _simulate(k: int):
    spec = importlib.util.spec_from_file_location("few_systems", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("few_systems", module)
    spec.loader.exec_module(module)
    return module.simulate(k)


def test_the_simulated_scores_look_like_per_query_ap():
    df = _simulate(2)
    assert sorted(df["system"].unique()) == ["s0", "s1"] and df["topic"].nunique() == 150
    share0, share1 = (df["score"] == 0).mean(), (df["score"] == 1).mean()
    assert 0.08 < share0 < 0.3 and 0.08 < share1 < 0.3 and ((df["score"] >= 0) & (df["score"] <= 1)).all()


def test_the_docs_table_is_the_recorded_measurement():
    import json
    import re

    root = Path(__file__).resolve().parents[2]
    rows = json.loads((root / "docs" / "results" / "few_systems.json").read_text())["rows"]
    text = (root / "docs" / "bayes.md").read_text()
    by = {(r["systems"], r["family"], r["system_effects"]): r for r in rows}
    assert len(by) == 12
    for k in (2, 4, 8):
        for family, label in (("gaussian", "Gaussian"), ("zoib", "ZOiB")):
            cells = [f"{by[(k, family, e)]['max_rhat']:.3f}, {by[(k, family, e)]['min_ess_bulk']:.0f}, "
                     f"{by[(k, family, e)]['n_divergences']}" for e in ("pooled", "fixed")]
            row = rf"\| {k} \| {label} \| {re.escape(cells[0])} \| {re.escape(cells[1])} \|"
            assert re.search(row, text), (k, family)
    assert all(not r["ok"] for r in rows if r["system_effects"] == "pooled")
    assert all(r["ok"] for r in rows if r["system_effects"] == "fixed")
