"""docs/own-ranker.md works as written: its script and its study file run on a user's CrossEncoder folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "own-ranker.md").read_text()


@pytest.fixture(scope="module")
def cross_encoder_folder(tmp_path_factory):
    """A small random classifier saved the way sentence-transformers saves a CrossEncoder."""
    pytest.importorskip("transformers")
    st = pytest.importorskip("sentence_transformers")
    pytest.importorskip("uncertank_sngp")
    pytest.importorskip("uncertank_mcdropout")
    from uncertank.datasets import packaged_model_path
    from uncertank.nn.testing import tiny_classifier_folder

    if packaged_model_path() is None:
        pytest.skip("the packaged MiniLM tokenizer is not installed")
    base = tiny_classifier_folder(tmp_path_factory.mktemp("own") / "hf")
    folder = base.parent / "my-cross-encoder"
    st.CrossEncoder(str(base), max_length=48, device="cpu").save(str(folder))
    return folder


@pytest.mark.slow
def test_the_script_runs(cross_encoder_folder, capsys):
    blocks = [b for b in re.findall(r"```python\n(.*?)```", PAGE, flags=re.S) if 'MODEL = "my-cross-encoder"' in b]
    assert len(blocks) == 1  # "One script"
    code = blocks[0]
    code = code.replace('MODEL = "my-cross-encoder"', f"MODEL = {str(cross_encoder_folder)!r}")
    exec(compile(code, "docs/own-ranker.md", "exec"), {"__name__": "own_ranker_docs"})
    printed = capsys.readouterr().out
    for label in ("R_10@1", "ECE after Platt", "MC dropout ECE", "post-hoc SNGP ECE", "risk-aware b =", "NOTA F1"):
        assert label in printed


@pytest.mark.slow
def test_the_study_file_runs(cross_encoder_folder, tmp_path):
    from uncertank.experiment import run_study
    from uncertank.experiment.config import load_config

    toml = re.findall(r"```toml\n(.*?)```", PAGE, flags=re.S)[0]
    study = cross_encoder_folder.parent / "my-model.toml"
    study.write_text(toml)
    result = run_study(load_config(study), tmp_path / "report")
    assert result.rankers == ["bert", "mc_dropout", "sngp", "bm25"]
    for ranker in result.rankers[:3]:
        ev = result.evaluation(ranker, "in-domain")
        assert ev is not None and ev.probabilistic and "ECE" in ev.metrics
    assert result.evaluation("mc_dropout", "in-domain").stochastic
    assert "fit bert" in result.steps
    # the Bayes stage compares exactly these rankers, against the reference
    (fit,) = result.bayes.values()
    assert (fit.systems, fit.condition, fit.baseline) == ("study", "in-domain", "bert")
    assert sorted(e["system"] for e in fit.effects) == sorted(result.rankers)
    others = ["bm25", "mc_dropout", "sngp"] if fit.converged else []  # no verdict from an unconverged fit
    assert sorted(r["system"] for r in fit.against_baseline) == others
