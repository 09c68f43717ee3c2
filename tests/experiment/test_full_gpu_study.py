"""docs/studies/full_gpu.toml: the full study trained inside the study, the file benchmarks/gpu_full_study.sh runs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from uncertank.experiment import load_config

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "docs" / "studies" / "full_gpu.toml"


def test_the_gpu_study_trains_every_model_and_names_no_device():
    config = load_config(STUDY)
    rankers = {rc.key: rc for rc in config.rankers}
    assert set(rankers) == {"bm25", "bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"}
    assert all(rc.checkpoint is None for rc in config.rankers)  # nothing loaded: every model is trained here
    assert all("device" not in rc.params for rc in config.rankers)  # "auto": CUDA where there is one
    assert rankers["ensemble"].params["n_members"] == 5 and rankers["mc_dropout"].params["n_passes"] == 10
    assert [c.name for c in config.conditions] == ["in-domain", "cross-NS random", "cross-NS embedding",
                                                   "cross-domain chitchat"]
    assert config.conformal.enabled and config.bayes.systems == "trec_covid"


def test_the_gpu_study_keeps_the_full_studys_recipe():
    """The same sizes and rankers' recipes as the real run, whose models docs/studies/full.toml loads."""
    full, gpu = load_config(ROOT / "docs" / "studies" / "full.toml"), load_config(STUDY)
    for name in ("n_candidates", "max_valid_queries", "max_test_queries", "risk_grid", "seed", "reference"):
        assert getattr(full, name) == getattr(gpu, name), name
    real = {rc.key: rc for rc in load_config(ROOT / "docs" / "studies" / "real_run.toml").rankers}
    for rc in load_config(STUDY).rankers:
        if rc.key in ("bert", "sngp", "gpf_bert", "pgdrr"):
            assert rc.params == real[rc.key].params, rc.key


def test_the_script_without_pymc_runs_the_study_with_the_bayes_stage_off(tmp_path):
    script = (ROOT / "benchmarks" / "gpu_full_study.sh").read_text()
    assert subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "gpu_full_study.sh")]).returncode == 0
    (snippet,) = re.findall(r"<<'PY'\n(.*?)\nPY\n  study=", script, flags=re.S)
    out = tmp_path / "full_gpu.toml"
    subprocess.run(["python3", "-c", snippet, str(out)], cwd=ROOT, check=True)
    config = load_config(out)
    assert config.bayes.enabled is False
    assert [rc.key for rc in config.rankers] == [rc.key for rc in load_config(STUDY).rankers]
