"""``uncertank compare`` checks ``--risk-r`` before the (slow) fit, not after it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from uncertank.cli.compare_cmd import compare_command


def _csv(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"system": np.repeat(["s0", "s1", "s2"], 6), "topic": np.tile(np.arange(6), 3),
                       "score": rng.random(18)})
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--risk-r", "-1"], "r must give a finite loss weight >= 0; got r=-1.0 under 'benham'"),
        (["--risk-r", "1", "--risk-r", "nan"], "r must give a finite loss weight >= 0; got r=nan under 'benham'"),
        (["--risk-r", "inf"], "r must give a finite loss weight >= 0; got r=inf under 'benham'"),
        (["--convention", "trec", "--risk-r", "-2"], "r must give a finite loss weight >= 0; got r=-2.0 under 'trec'"),
    ],
)
def test_a_bad_risk_weight_is_refused_before_the_fit(tmp_path, monkeypatch, args, message):
    from uncertank.bayes import fit

    fitted: list[int] = []

    def compare(*a, **kw):  # the fit: it must not start
        fitted.append(1)
        raise AssertionError("the fit ran before --risk-r was checked")

    monkeypatch.setattr(fit, "compare", compare)
    out = tmp_path / "out"
    res = CliRunner().invoke(compare_command, [str(_csv(tmp_path)), "--baseline", "s0", "-o", str(out), *args])
    assert res.exit_code == 2, res.output
    assert fitted == []
    assert "Invalid value for '--risk-r'" in res.output
    assert res.output.splitlines()[-1] == f"Error: Invalid value for '--risk-r': {message}"
    assert not out.exists()


def test_a_good_risk_weight_reaches_the_fit(tmp_path, monkeypatch):
    from uncertank.bayes import fit

    def compare(*a, **kw):
        raise ValueError("the fit was reached")

    monkeypatch.setattr(fit, "compare", compare)
    monkeypatch.chdir(tmp_path)
    csv = _csv(tmp_path)
    res = CliRunner().invoke(compare_command, [str(csv), "--risk-r", "0", "--convention", "trec", "--risk-r", "-1"])
    assert res.exit_code == 2
    assert res.output.splitlines()[-1] == f"Error: {csv}: the fit was reached"
