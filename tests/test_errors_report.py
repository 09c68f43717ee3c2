"""``uncertank report`` validates results.json as a whole before drawing anything.

A results.json whose structure was altered (a key missing or unknown, a
value of the wrong type) gives one line per error naming the file and the
JSON path at fault, exit status 2, never a KeyError or TypeError traceback;
a folder named results.json is called a folder.
"""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from uncertank.cli import cli
from uncertank.experiment.report import render_report
from uncertank.experiment.result import (
    BayesOutcome,
    Curve,
    Evaluation,
    ResultsFileError,
    RiskOutcome,
    SelectiveOutcome,
    StepInfo,
    StudyResult,
)

INFO = {"kind": "ranking", "higher_is_better": True, "needs_probabilities": False, "name": "recall_at_k",
        "options": {"k": 1}}
ECE = {"kind": "calibration", "higher_is_better": False, "needs_probabilities": True, "name": "ece", "options": {}}


def _result() -> StudyResult:
    evs = [
        Evaluation(r, c, True, r == "b", {"R@1": 0.5 + 0.1 * i, "ECE": 0.1}, {"R@1": [0.0, 1.0]},
                   imbalance={1: 0.1, 2: 0.2},
                   risk=RiskOutcome(0.5, {0.0: 0.4, 0.5: 0.5}, {0.0: 0.4, 0.5: 0.45}, 0.4, 0.45, 0.3)
                   if r == "b" else None)
        for i, (r, c) in enumerate([("a", "in"), ("a", "out"), ("b", "in"), ("b", "out")])
    ]
    evs[0].reliability = Curve([0.1, 0.5], [0.0, 1.0], [3, 4])
    evs[0].selective = SelectiveOutcome("probability", [0.5, 1.0], [0.0, 0.5], 0.2, 0.1)
    bayes = {"zoib": BayesOutcome("zoib", 2, 1, 1, True, {"max_rhat": 1.0},
                                  [{"system": "s0", "mean": 0.1, "lower": 0.0, "upper": 0.2}])}
    return StudyResult({"name": "altered"}, {"train": 10, "valid": 5, "test": {"in": 2, "out": 2}},
                       {"R@1": INFO, "ECE": ECE}, evs, bayes=bayes, steps={"data": StepInfo("k", 1.0)})


def _report(path) -> tuple[int, list[str]]:
    res = CliRunner().invoke(cli, ["report", str(path)])
    return res.exit_code, res.output.splitlines()


def _altered(tmp_path, change) -> tuple[int, list[str]]:
    data = copy.deepcopy(_result().to_dict())
    change(data)
    (tmp_path / "results.json").write_text(json.dumps(data, indent=2))
    return _report(tmp_path)


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda d: d["evaluations"][3]["metrics"].__setitem__("ECE", "abc"),
         "evaluations[3].metrics.ECE: must be a number; got the string 'abc'"),
        (lambda d: d["evaluations"][1].pop("ranker"), "evaluations[1].ranker: missing: this key is required"),
        (lambda d: d.pop("sizes"), "sizes: missing: this key is required"),
        (lambda d: d["evaluations"][0].__setitem__("probabilistic", 1),
         "evaluations[0].probabilistic: must be true or false; got the number 1"),
        (lambda d: d["evaluations"][2]["risk"].__setitem__("valid_curve", [0.4, 0.5]),
         "evaluations[2].risk.valid_curve: must be an object; got a list"),
        (lambda d: d["evaluations"][2]["imbalance"].__setitem__("one", 0.3),
         "evaluations[2].imbalance.one (a key): must be an integer; got the string 'one'"),
        (lambda d: d.__setitem__("evaluations", {"a": 1}), "evaluations: must be a list; got an object"),
        (lambda d: d["evaluations"][0].__setitem__("ece", 0.1),
         "evaluations[0].ece: unknown key; known: ranker, condition, probabilistic, stochastic, metrics, "),
        (lambda d: d["steps"]["data"].__setitem__("seconds", None),
         "steps.data.seconds: must be a number; got null"),
        (lambda d: d["metric_info"]["R@1"].pop("kind"), 'metric_info["R@1"].kind: missing: this key is required'),
        (lambda d: d["metric_info"]["ECE"].__setitem__("higher_is_better", "no"),
         "metric_info.ECE.higher_is_better: must be true or false; got the string 'no'"),
        (lambda d: d["bayes"]["zoib"]["effects"][0].pop("mean"),
         "bayes.zoib.effects[0].mean: missing: this key is required"),
        (lambda d: d["sizes"].__setitem__("test", 4), "sizes.test: must be an object; got the number 4"),
        (lambda d: d["config"].__setitem__("name", ["x"]), "config.name: must be a string; got a list"),
        (lambda d: d["bayes"]["zoib"]["diagnostics"].__setitem__("problems", 1.5),
         "bayes.zoib.diagnostics.problems: must be a list; got the number 1.5"),
    ],
)
def test_an_altered_results_json_names_the_key_at_fault(tmp_path, change, line):
    code, out = _altered(tmp_path, change)
    assert code == 2, out
    assert len(out) == 1, out
    assert out[0].startswith(f"uncertank report: {tmp_path / 'results.json'}: {line}"), out
    assert not (tmp_path / "report.md").exists()  # nothing drawn from a bad file


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda d: d["config"].__setitem__("reference", "c"),
         "config.reference: must be one of the rankers of evaluations ['a', 'b']; got 'c'"),
        (lambda d: d["evaluations"][0]["reliability"]["count"].pop(),
         "evaluations[0].reliability: must hold as many fraction_relevant and count as mean_confidence (one per "
         "bin); got 2, 2 and 1"),
        (lambda d: d["evaluations"][0]["selective"]["risk"].append(0.9),
         "evaluations[0].selective: must hold one risk per coverage; got 2 coverage and 3 risk values"),
        (lambda d: d["bayes"]["zoib"]["effects"][0].__setitem__("mean", 1.5),
         "bayes.zoib.effects[0]: must have lower <= mean <= upper; got lower 0.0, mean 1.5, upper 0.2"),
    ],
)
def test_a_well_typed_results_json_that_cannot_be_drawn_names_the_key(tmp_path, change, line):
    code, out = _altered(tmp_path, change)
    assert code == 2, out
    assert out == [f"uncertank report: {tmp_path / 'results.json'}: {line}"]  # not matplotlib's words


def test_every_error_is_listed_one_line_each(tmp_path):
    def change(d):
        d["evaluations"][0]["metrics"]["R@1"] = "high"
        d["evaluations"][1].pop("condition")
        d["smoke"] = "no"

    code, out = _altered(tmp_path, change)
    assert code == 2
    path = tmp_path / "results.json"
    assert out == [
        f"uncertank report: {path}: evaluations[0].metrics[\"R@1\"]: must be a number; got the string 'high'",
        f"uncertank report: {path}: evaluations[1].condition: missing: this key is required",
        f"uncertank report: {path}: smoke: must be true or false; got the string 'no'",
    ]
    with pytest.raises(ResultsFileError) as info:
        render_report(tmp_path)
    assert isinstance(info.value, ValueError)
    assert [p for p, _ in info.value.errors] == ['evaluations[0].metrics["R@1"]', "evaluations[1].condition", "smoke"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[1, 2]", "the document must be an object; got a list"),
        ('{"config": {', "is not valid JSON: EOF while parsing"),
        ("", "is not valid JSON: EOF while parsing a value at line 1 column 0"),
    ],
)
def test_a_results_json_that_is_not_a_result_document(tmp_path, text, line):
    (tmp_path / "results.json").write_text(text)
    code, out = _report(tmp_path)
    assert code == 2
    assert out[0].startswith(f"uncertank report: {tmp_path / 'results.json'}: {line}"), out


def test_a_results_json_that_is_not_utf8(tmp_path):
    (tmp_path / "results.json").write_bytes(b'{"config": "\xff"}')
    code, out = _report(tmp_path)
    assert code == 2
    assert out == [f"uncertank report: {tmp_path / 'results.json'}: is not UTF-8 text (invalid start byte at byte 12)"]


def test_a_folder_named_results_json_is_called_a_folder(tmp_path):
    (tmp_path / "results.json").mkdir()
    code, out = _report(tmp_path)
    assert code == 2
    assert out == [f"uncertank report: {tmp_path / 'results.json'}: is a folder, not a file; give the folder that "
                   "holds the results.json a study wrote (uncertank run --out DIR)"]


def test_from_dict_validates_and_round_trips():
    result = _result()
    assert StudyResult.from_dict(result.to_dict()) == result
    assert StudyResult.from_json(json.dumps(result.to_dict())) == result
    bad = result.to_dict()
    bad["evaluations"][0]["per_query"]["R@1"] = [0.0, "1"]
    with pytest.raises(ResultsFileError, match=r"^results: evaluations\[0\]\.per_query\[\"R@1\"\]\[1\]: must be a "
                                               r"number; got the string '1'$"):
        StudyResult.from_dict(bad)


def test_an_unaltered_results_json_still_draws_the_report(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "results.json").write_text(json.dumps(_result().to_dict(), indent=2))
    code, out = _report(tmp_path)
    assert code == 0, out
    assert (tmp_path / "report.md").is_file()
