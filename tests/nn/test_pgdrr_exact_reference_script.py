"""docs/scripts/pgdrr_exact_reference.py on a tiny fitted pgdrr: the Gibbs predictive against NUTS."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gibbs_predictive_agrees_with_nuts_on_a_tiny_bank(tmp_path):
    pytest.importorskip("uncertank_pgdrr")
    pytest.importorskip("pymc")
    import uncertank
    from uncertank.datasets import packaged_model_path
    from uncertank.nn.testing import tiny_config, toy_queries

    if packaged_model_path() is None:
        pytest.skip("the packaged MiniLM tokenizer is not installed")
    ranker = uncertank.make_ranker("pgdrr", backbone=tiny_config(vocab_size=30522), bank_size=16, epochs=1,
                                   batch_size=8, show_progress=False, device="cpu", max_length=48)
    ranker.fit(toy_queries(6, 4))
    ranker.save(tmp_path / "pgdrr")
    script = runpy.run_path(str(ROOT / "docs" / "scripts" / "pgdrr_exact_reference.py"), run_name="reference")
    out = tmp_path / "ref.json"
    script["main"](["--ranker", str(tmp_path / "pgdrr"), "--test-pairs", "20", "--draws", "300", "--tune", "300",
                    "--chains", "2", "--out", str(out)])
    got = json.loads(out.read_text())
    assert got["test_pairs"] == 20 and got["bank_size"] == 12 and got["nuts"]["divergences"] == 0
    assert got["nuts"]["max_rhat"] < 1.05
    assert got["within_tolerance"] and got["max_difference_in_standard_errors"] <= 4
    assert got["max_abs_difference"] < 0.1


def test_the_docs_quote_the_results_file():
    results = json.loads((ROOT / "docs" / "results" / "pgdrr_exact_reference.json").read_text())
    text = (ROOT / "docs" / "pgdrr.md").read_text()
    assert results["within_tolerance"] and results["nuts"]["divergences"] == 0
    for value in (f"{results['mean_abs_difference']:.4f}", f"{results['max_abs_difference']:.3f}",
                  f"{results['max_difference_in_standard_errors']:.1f}", f"{results['nuts']['min_ess_bulk']:.0f}"):
        assert value in text
