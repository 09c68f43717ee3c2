"""The documented schema of a study's output: docs/results.schema.json and the predictions files.

The committed schema is what :func:`uncertank.experiment.result.results_schema` generates now (regenerate it with
``python tests/experiment/test_results_schema.py``), and the ``results.json`` a real study writes validates against
it with an independent validator (jsonschema) as well as with the pydantic model. The predictions files hold the
arrays docs/results-schema.md lists, with the shapes and types it gives.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from uncertank.experiment.result import StudyResult, results_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "docs" / "results.schema.json"

_WORDS = ["disk", "mount", "kernel", "wifi", "driver", "sound", "grub", "boot", "apt", "python", "screen", "mouse"]


def _generated() -> str:
    return json.dumps(results_schema(), indent=2, ensure_ascii=False) + "\n"


def test_the_committed_schema_is_what_the_code_generates():
    assert SCHEMA.read_text(encoding="utf-8") == _generated(), \
        "docs/results.schema.json is stale: regenerate it with python tests/experiment/test_results_schema.py"


def test_the_docs_page_names_every_key_of_the_result():
    page = (ROOT / "docs" / "results-schema.md").read_text(encoding="utf-8")
    schema = results_schema()
    missing = [f"{name}.{key}" for name in ("StudyResult", "Evaluation", "StepInfo", "BayesOutcome", "Significance",
                                            "Comparison", "RiskOutcome", "CalibrationDetail", "SelectiveOutcome",
                                            "NotaOutcome", "Curve", "RiskTest", "ConformalOutcome",
                                            "ExternalRunOutcome", "PaperTable")
               for key in schema["$defs"][name]["properties"] if f"`{key}`" not in page]
    assert missing == [], "docs/results-schema.md does not describe these keys"


def _validate(document: dict) -> None:
    """Validate with jsonschema when installed (an independent validator), and always with the pydantic model."""
    try:
        import jsonschema
    except ImportError:  # the pydantic model alone
        jsonschema = None
    if jsonschema is not None:
        jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA.read_text()))
        jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    StudyResult.from_json(json.dumps(document))


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """The output folder of a small real study: BM25 and, when installed, a stochastic probabilistic ranker."""
    pytest.importorskip("bm25s")
    from uncertank.experiment import ConditionConfig, RankerConfig, StudyConfig, run_study
    from uncertank.experiment.config import BayesConfig
    from uncertank.plugins import registry

    folder = tmp_path_factory.mktemp("real")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UNCERTANK_CACHE", str(folder / "cache"))
        (folder / "data").mkdir()
        for split in ("train", "valid", "test"):
            lines = []
            for q in range(12):
                word = _WORDS[q]
                lines.append(f"1\thow do I fix my {word} today\tcheck the {word} settings first")
                lines += [f"0\thow do I fix my {word} today\ttry the {_WORDS[(q + j) % 12]} tool {j}"
                          for j in (1, 2, 3)]
            (folder / "data" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
        dataset = f"tsv:{folder}/data/{{split}}.tsv"
        rankers = [RankerConfig("bm25")]
        if "tfidf-bootstrap" in registry("rankers"):
            rankers.append(RankerConfig("tfidf-bootstrap"))
        config = StudyConfig(
            name="schema", train_dataset=dataset, train_negatives="file", n_candidates=4,
            conditions=(ConditionConfig("in-domain", dataset, "file"), ConditionConfig("again", dataset, "file")),
            rankers=tuple(rankers), risk_grid=(0.0, 0.2), nota=False, bayes=BayesConfig(enabled=False),
        )
        run_study(config, folder / "out")
    return folder / "out"


def test_a_real_results_json_validates_against_the_committed_schema(real_run):
    document = json.loads((real_run / "results.json").read_text())
    _validate(document)
    assert {e["ranker"] for e in document["evaluations"]} >= {"bm25"}


def test_a_result_with_significance_bayes_and_risk_validates():
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from test_report import make_full_result
    finally:
        sys.path.pop(0)
    document = make_full_result().to_dict()
    assert document["bayes"] and document["significance"]["tables"]
    assert any(e["risk"] for e in document["evaluations"])
    _validate(document)


@pytest.mark.parametrize(("edit", "where"), [
    (lambda d: d["evaluations"][0]["metrics"].update(MAP="high"), "'high' is not of type 'number'"),
    (lambda d: d.update(extra=1), "Additional properties are not allowed ('extra' was unexpected)"),
    (lambda d: d.pop("sizes"), "'sizes' is a required property"),
    (lambda d: d["steps"]["data"].update(resumed=0), "0 is not of type 'boolean'"),
    (lambda d: d["metric_info"]["MAP"].update(kind="speed"), "'speed' is not one of ['ranking', 'calibration']"),
])
def test_the_schema_refuses_what_the_report_refuses(real_run, edit, where):
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads((real_run / "results.json").read_text())
    edit(document)
    with pytest.raises(jsonschema.ValidationError) as info:
        jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    errors = [e.message for e in jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
              .iter_errors(document)] + [info.value.message] + [c.message for c in info.value.context or []]
    assert any(where in e for e in errors), errors
    with pytest.raises(ValueError):
        StudyResult.from_json(json.dumps(document))


def test_the_predictions_files_hold_what_the_docs_say(real_run):
    document = json.loads((real_run / "results.json").read_text())
    files = sorted((real_run / "predictions").glob("*.npz"))
    n_conditions = len(document["sizes"]["test"])
    assert len(files) == len(document["config"]["rankers"]) * (1 + n_conditions)  # valid + each condition
    for path in files:
        ranker, split = next((r["label"] or r["name"], s) for r in document["config"]["rankers"]
                             for s in ("valid", *document["sizes"]["test"])
                             if path.name.startswith(f"{r['label'] or r['name']}-{s}-"))
        key = path.stem.rsplit("-", 1)[1]
        assert document["steps"][f"predict {ranker} {split}"]["key"] == key
        n_pairs = 4 * (document["sizes"]["valid"] if split == "valid" else document["sizes"]["test"][split])
        with np.load(path) as z:
            stochastic = bool(z["stochastic"])
            assert set(z.files) == {"mean", "stochastic", "probabilistic", "seconds"} | ({"samples"} if stochastic
                                                                                        else set())
            assert z["mean"].dtype == np.float64 and z["mean"].shape == (n_pairs,)
            assert z["stochastic"].dtype == z["probabilistic"].dtype == np.bool_ and z["stochastic"].shape == ()
            assert z["seconds"].dtype == np.float64 and z["seconds"].shape == ()
            if stochastic:
                samples = z["samples"]
                assert samples.dtype == np.float64 and samples.ndim == 2 and samples.shape[1] == n_pairs
                np.testing.assert_allclose(samples.mean(axis=0), z["mean"])
        record = path.with_name(path.name + ".sha256").read_text()
        assert record == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"


if __name__ == "__main__":  # rewrite docs/results.schema.json from the code
    SCHEMA.write_text(_generated(), encoding="utf-8")
