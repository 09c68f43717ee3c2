"""``uncertank evaluate`` and the metric options: every bad input refused before any metric is computed.

- ``--probabilities`` checks that the scores lie in [0, 1] whatever the
  metrics, in every run, before the first metric;
- an integer option of a metric beyond its bound (``rbp:depth=1e20``) or
  not finite is refused by name, at resolution, not by an OverflowError
  (or a run that never ends) inside numpy;
- an invalid option of a ``-m`` spec names the spec it came from.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.evaluate import evaluate_runs
from uncertank.metrics import Metric, rank_biased_precision, resolve_metrics

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 1\n2 0 a 1\n2 0 d 0\n"


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A qrels file, a run of probabilities and a run with one score (1.7) outside [0, 1]."""
    qrels = tmp_path / "qrels"
    qrels.write_text(QRELS)
    good = tmp_path / "good.run"
    good.write_text("1 Q0 a 1 0.9 x\n1 Q0 b 2 0.8 x\n2 Q0 a 1 0.4 x\n2 Q0 d 2 0.7 x\n")
    bad = tmp_path / "bad.run"
    bad.write_text("1 Q0 a 1 0.9 x\n1 Q0 b 2 0.8 x\n2 Q0 a 1 0.4 x\n2 Q0 d 2 1.7 x\n")
    return qrels, good, bad


def _evaluate(*args: str) -> tuple[int, list[str]]:
    res = CliRunner().invoke(cli, ["evaluate", *args])
    return res.exit_code, res.output.splitlines()


# --------------------------------------------------------------------------- 1. --probabilities


def test_probabilities_are_checked_whatever_the_metrics(tmp_path):
    qrels, _, bad = _files(tmp_path)
    for metric in ("map", "ndcg:k=5", "ece"):
        code, out = _evaluate("--run", str(bad), "--qrels", str(qrels), "--probabilities", "-m", metric)
        assert code == 2, out
        assert out == [f"uncertank evaluate: run file {bad}: --probabilities needs scores in [0, 1]; "
                       "1 scores lie outside, e.g. 1.7"]


def test_every_run_is_checked_before_any_metric_is_computed(tmp_path):
    qrels, good, bad = _files(tmp_path)
    calls: list[int] = []

    def spy(scores, labels=None, *, per_query=False):
        calls.append(1)
        return np.zeros(2) if per_query else 0.0

    with pytest.raises(ValueError, match=r"bad\.run: --probabilities needs scores in \[0, 1\]; 1 scores lie"):
        evaluate_runs([good, bad], qrels, metrics=[Metric(spy, name="spy", kind="ranking")], probabilities=True)
    assert calls == []  # the good run was not scored before the bad one was refused
    # without the flag the same run is a ranking like any other
    assert evaluate_runs([bad], qrels, metrics=["map"]).runs[0].summary["MAP"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- 6. bounds of integer options


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "rbp", "depth": 10**20}, "depth must be an integer from 1 to 1000000000; got 100000000000000000000"),
        ({"name": "rbp", "max_grade": 10**20}, "max_grade must be an integer from 1 to 1000000000; got 1"),
        ({"name": "ndcg", "k": 10**20}, "k must be an integer from 1 to 1000000000; got 1"),
        ({"name": "map", "rel": 10**20}, "rel must be an integer from 1 to 1000000000; got 1"),
        ({"name": "recall_at_k", "k": 1, "n": 10**20}, "n must be an integer from 1 to 1000000000; got 1"),
        ({"name": "ece", "n_bins": 10**20}, "n_bins must be an integer from 1 to 1000000; got 1"),
        ({"name": "ece", "balanced": True, "n_subsamples": 10**20},
         "n_subsamples must be an integer from 1 to 10000; got 1"),
        ({"name": "rbp", "depth": 0}, "depth must be an integer >= 1; got 0"),
        ({"name": "nll", "eps": 0.7}, "eps must be a finite number > 0 and < 0.5; got 0.7"),
    ],
)
def test_an_option_beyond_its_bound_is_refused_by_name_when_resolved(entry, message):
    with pytest.raises(ValueError, match=message):
        resolve_metrics([entry])


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e20])
def test_an_integer_option_that_is_not_a_finite_integer_is_refused_by_name(value):
    with pytest.raises(TypeError, match=r"depth must be an integer >= 1; got float"):
        resolve_metrics([{"name": "rbp", "depth": value}])
    with pytest.raises(TypeError, match=r"n_bins must be an integer >= 1; got float"):
        resolve_metrics([{"name": "ece", "n_bins": value}])


def test_the_metric_functions_refuse_a_huge_cutoff_themselves():
    with pytest.raises(ValueError, match="depth must be an integer from 1 to 1000000000; got 100000000000000000000"):
        rank_biased_precision([[0.9, 0.5, 0.7]], [[1, 1, 0]], depth=10**20)  # was an OverflowError
    metric = resolve_metrics(["rbp"])[0]
    with pytest.raises(ValueError, match="max_grade must be an integer from 1 to 1000000000"):
        metric([[0.9, 0.5, 0.7]], [[1, 1, 0]], max_grade=10**20)


# --------------------------------------------------------------------------- 7. -m names the spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("recall_at_k:n=10,k=0", "k must be an integer >= 1; got 0"),
        ("rbp:depth=1e20", "depth must be an integer >= 1; got float 1e+20"),
        ("rbp:depth=100000000000000000000",
         "depth must be an integer from 1 to 1000000000; got 100000000000000000000"),
        ("nDCG@99999999999999999999", "k must be an integer from 1 to 1000000000; got 99999999999999999999"),
        ("ece:n_bins=100000000000000000000", "n_bins must be an integer from 1 to 1000000; got 100000000000000000000"),
        ("ece:balanced=true,seed=-1", "seed must be an integer >= 0, a numpy Generator or None; got -1"),
        ("ndcg:kk=3", "metric 'ndcg' has no option 'kk'; its options are: k, rel"),
        ("mapp", "unknown metric 'mapp'; known metrics: "),
    ],
)
def test_a_bad_metric_spec_is_named_on_the_command_line(tmp_path, spec, message):
    qrels, good, _ = _files(tmp_path)
    code, out = _evaluate("--run", str(good), "--qrels", str(qrels), "--probabilities", "-m", "map", "-m", spec)
    assert code == 2, out
    assert len(out) == 1
    assert out[0].startswith(f"uncertank evaluate: -m {spec!r}: {message}"), out


def test_a_good_spec_still_evaluates(tmp_path):
    qrels, good, _ = _files(tmp_path)
    code, out = _evaluate("--run", str(good), "--qrels", str(qrels), "--probabilities", "-m", "rbp:depth=2",
                          "-m", "ece:n_bins=2,balanced=true,seed=3")
    assert code == 0, out
    # two bins, not the default ten: the label says so (ECE balanced is another measure)
    assert out[0].split() == ["run", "queries", "RBP(0.8)@2", "ECE", "balanced[n_bins=2]"]
