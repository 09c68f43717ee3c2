from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from uncertank import __version__
from uncertank.cli import cli


def test_plugins_command_lists_builtins_as_json():
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    names = {(r["kind"], r["name"]) for r in payload["registered"]}
    assert ("recalibrators", "platt") in names
    assert payload["failed"] == []


def test_plugins_command_table_and_kind_filter():
    result = CliRunner().invoke(cli, ["plugins", "--kind", "recalibrators"])
    assert result.exit_code == 0
    assert "temperature" in result.output
    bad = CliRunner().invoke(cli, ["plugins", "--kind", "widgets"])
    assert bad.exit_code != 0 and "widgets" in bad.output


def test_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert __version__ in result.output


def test_compare_command_is_attached():
    result = CliRunner().invoke(cli, ["compare", "--help"])
    assert result.exit_code == 0
    assert "zoib" in result.output
    listed = CliRunner().invoke(cli, ["--help"])
    assert "compare" in listed.output and "Bayesian" in listed.output


def test_importing_the_command_leaves_the_bayes_package_unloaded():
    code = "import sys, uncertank.cli; print('uncertank.bayes' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_run_command_reports_a_bad_config(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nnope = 1\n")
    result = CliRunner().invoke(cli, ["run", str(bad)])
    assert result.exit_code == 2
    assert "study.nope: unknown key; known: name, train_dataset" in result.output
    assert "study.train_dataset: missing: this key is required" in result.output
