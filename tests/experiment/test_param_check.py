"""An unknown parameter of a torch ranker is named with its path, the known names and nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

STUDY = """
[study]
name = "s"
train_dataset = "ubuntu-sample"

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "bm25"

[[rankers]]
name = "{ranker}"
params = {{ colour = 3 }}
"""

# `uncertank run`, then whether torch was imported, from the same process
RUN = textwrap.dedent("""
    import json, sys
    from click.testing import CliRunner
    from uncertank.cli import cli

    result = CliRunner().invoke(cli, ["run", sys.argv[1], "--out", sys.argv[2]])
    print(json.dumps({"exit_code": result.exit_code, "output": result.output, "torch": "torch" in sys.modules}))
""")


@pytest.mark.parametrize("ranker", ["bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"])
def test_an_unknown_parameter_of_a_torch_ranker_is_named_before_any_work(tmp_path, ranker):
    study = tmp_path / "study.toml"
    study.write_text(STUDY.format(ranker=ranker))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(study), str(out)], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    got = json.loads(proc.stdout.splitlines()[-1])
    lines = [ln for ln in got["output"].splitlines() if ln.strip()]
    assert got["exit_code"] == 2
    assert len(lines) == 1 and f"rankers[0].params.colour: unknown parameter of {ranker!r}; known:" in lines[0]
    assert "max_length" in lines[0]  # the known names reach NeuralRanker's, through **params
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["study.toml"]
