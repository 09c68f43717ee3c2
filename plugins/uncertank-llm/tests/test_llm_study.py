"""The LLM rankers in a study file: fine-tuned, zero-shot and started from the fine-tuned one."""

from __future__ import annotations

import pytest
from uncertank_llm.testing import tiny_lm_folder


@pytest.mark.slow
def test_in_a_study_file(tmp_path):
    from uncertank.experiment import run_study
    from uncertank.experiment.config import load_config

    folder = tiny_lm_folder(tmp_path / "llama", "llama")
    common = 'device = "cpu", max_length = 48, eval_batch_size = 8, show_progress = false'
    study = tmp_path / "llm.toml"
    study.write_text(f"""
[study]
name = "llm"
train_dataset = "ubuntu-sample"
max_train_queries = 6
max_valid_queries = 4
max_test_queries = 5
nota = false
risk_grid = [0.0, 0.1]
reference = "llm"

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"

[[rankers]]
name = "llm"
pretrained = "{folder}"
params = {{ template = "monot5", lora_r = 2, batch_size = 4, {common} }}

[[rankers]]
name = "llm"
label = "zero-shot"
pretrained = "{folder}"
params = {{ zero_shot = true, template = "monot5", {common} }}

[[rankers]]
name = "llm_mc_dropout"
init_from = "llm"
params = {{ n_passes = 3 }}

[[rankers]]
name = "llm_laplace"
init_from = "llm"
params = {{ n_samples = 5 }}

[conformal]
enabled = true

[bayes]
enabled = false
""")
    result = run_study(load_config(study), tmp_path / "report")
    assert result.rankers == ["llm", "zero-shot", "llm_mc_dropout", "llm_laplace"]
    for ranker in result.rankers:
        ev = result.evaluation(ranker, "in-domain")
        assert ev is not None and 0 <= ev.metrics["ECE"] <= 1
    assert result.evaluation("llm_mc_dropout", "in-domain").mean_std > 0
    assert (tmp_path / "report" / "report.html").is_file()
