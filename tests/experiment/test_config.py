"""The study file's schema: every key, type, range and cross-reference, each error one line with its path."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from uncertank.experiment import StudyConfigError, load_config, study_schema
from uncertank.experiment.config import BayesConfig, ConditionConfig, RankerConfig, StudyConfig

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
[study]
name = "my study"
train_dataset = "ubuntu-sample"
max_test_queries = 20
risk_grid = [0, 0.5]
nota = true
seed = 1

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"
negatives = "bm25"

[[rankers]]
name = "bm25"

[[rankers]]
name = "bert"
label = "bert-small"
params = { epochs = 1, max_length = 32 }

[[rankers]]
name = "mc_dropout"
init_from = "bert-small"
params = { n_passes = 3 }

[bayes]
enabled = false
families = ["zoib"]
"""


def _load(tmp_path: Path, text: str) -> StudyConfig:
    p = tmp_path / "study.toml"
    p.write_text(text)
    return load_config(p)


def _errors(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(StudyConfigError) as info:
        _load(tmp_path, text)
    lines = str(info.value).splitlines()
    assert len(lines) == len(info.value.errors) >= 1
    return lines


def test_load_config_round_trip(tmp_path):
    cfg = _load(tmp_path, GOOD)
    assert cfg.name == "my study" and cfg.max_test_queries == 20 and cfg.seed == 1
    assert cfg.risk_grid == (0.0, 0.5)
    assert [r.key for r in cfg.rankers] == ["bm25", "bert-small", "mc_dropout"]
    assert cfg.rankers[1].params == {"epochs": 1, "max_length": 32}
    assert cfg.conditions[0] == ConditionConfig("in-domain", "ubuntu-sample", "bm25")
    assert cfg.bayes.enabled is False and cfg.bayes.families == ("zoib",)
    assert cfg.reference == "bm25"  # the first ranker when the file names none
    assert _load(tmp_path, GOOD.replace("seed = 1", 'seed = 1\nreference = "bert-small"')).reference == "bert-small"
    unnamed = _load(tmp_path, GOOD.replace('name = "my study"\n', ""))
    assert unnamed.name == "study"  # the file's name


# Every case of issue 21 and more: (replace this, by this, the one line expected).
CASES = [
    ('max_test_queries = 20', 'max_test_queries = 20\nn_candidates = "4"',
     "study.n_candidates: must be an integer; got the string '4'"),
    ('params = { n_passes = 3 }', 'params = "n_passes=3"',
     "rankers[2].params: must be a table of the factory's keyword arguments, e.g. params = { n_passes = 3 }; "
     "got the string 'n_passes=3'"),
    ("max_test_queries = 20", "max_test_queries = 0", "study.max_test_queries: must be >= 1; got 0"),
    ("seed = 1", "seed = 1.5", "study.seed: must be an integer; got 1.5"),
    ("seed = 1", "seed = -1", "study.seed: must be >= 0; got -1"),
    ("risk_grid = [0, 0.5]", "risk_grid = []", "study.risk_grid: must hold at least 1 value; got an empty list"),
    ("risk_grid = [0, 0.5]", 'risk_grid = [0, "0.5"]', "study.risk_grid[1]: must be a number; got the string '0.5'"),
    ("risk_grid = [0, 0.5]", "risk_grid = [0, nan]", "study.risk_grid[1]: must be a finite number; got nan"),
    ('families = ["zoib"]', 'families = "gaussian"',
     'bayes.families: must be a list (write ["gaussian"]); got the string \'gaussian\''),
    ('families = ["zoib"]', 'families = ["gaussian", "poisson"]',
     "bayes.families[1]: must be one of 'gaussian', 'zoib' or 'zoib_rank'; got the string 'poisson'"),
    ('families = ["zoib"]', 'families = ["zoib", "zoib"]', "bayes.families[1]: 'zoib' is listed twice; give each "
     "family once"),
    ("enabled = false", 'enabled = "no"', "bayes.enabled: must be true or false; got the string 'no'"),
    ("nota = true", 'nota = "no"', "study.nota: must be true or false; got the string 'no'"),
    ("nota = true", "nota = 1", "study.nota: must be true or false; got 1"),
    ("enabled = false", "enabled = false\ndraws = 0", "bayes.draws: must be >= 1; got 0"),
    ("enabled = false", "enabled = false\ndrop_bottom = 1.0", "bayes.drop_bottom: must be < 1.0; got 1.0"),
    ("enabled = false", 'enabled = false\nsampler = "stan"',
     "bayes.sampler: must be one of 'auto', 'pymc', 'nutpie' or 'numpyro'; got the string 'stan'"),
    ('label = "bert-small"', 'label = "bm25"', "rankers[1].label: 'bm25' is already the label of rankers[0]; labels "
     "must be distinct (set label = ...)"),
    ('init_from = "bert-small"', 'init_from = "bert"', "rankers[2].init_from: must name an earlier ranker's label; "
     "got 'bert' (earlier: 'bm25', 'bert-small')"),
    ('init_from = "bert-small"', 'init_from = "bert-small"\ncheckpoint = "ckpt"',
     "rankers[2]: give init_from or checkpoint, not both (got init_from = 'bert-small' and checkpoint = '{tmp}/ckpt')"),
    ('init_from = "bert-small"', 'init_from = "bert-small"\npretrained = "model"',
     "rankers[2]: give init_from or pretrained, not both "
     "(got init_from = 'bert-small' and pretrained = '{tmp}/model')"),
    ('label = "bert-small"', 'label = "bert-small"\npretrained = 3',
     "rankers[1].pretrained: must be a model folder (a string), or a list of folders for a ranker of several models; "
     "got 3"),
    ('label = "bert-small"', 'label = "bert-small"\npretrained = []',
     "rankers[1].pretrained: must be a model folder (a string), or a list of folders for a ranker of several models; "
     "got an empty list"),
    ('label = "bert-small"', 'label = "bert-small"\ncheckpoint = 3',
     "rankers[1].checkpoint: must be a folder path (a string); got 3"),
    ("seed = 1", 'seed = 1\nreference = "bert"',
     "study.reference: must be the label of a ranker of the study ('bm25', 'bert-small', 'mc_dropout'); got 'bert'"),
    ("max_test_queries = 20", "max_tests = 20",
     "study.max_tests: unknown key; known: name, train_dataset, train_negatives, n_candidates, max_train_queries, "
     "max_valid_queries, max_test_queries, max_context_turns, n_bins, risk_grid, nota, metrics, recalibrators, "
     "seed, reference"),
    ('negatives = "bm25"', 'negatives = "bm25"\nweight = 2',
     "conditions[0].weight: unknown key; known: name, dataset, negatives"),
    ('label = "bert-small"', 'label = "bert-small"\nparmas = {}',
     "rankers[1].parmas: unknown key; known: name, params, label, init_from, checkpoint, pretrained, save_to, "
     "overwrite"),
    ('label = "bert-small"', 'label = "bert-small"\ncheckpoint = "ckpt"\nsave_to = "out"',
     "rankers[1].save_to: a checkpoint is loaded, not trained: nothing new to save (got checkpoint = '{tmp}/ckpt')"),
    ('init_from = "bert-small"', 'init_from = "bert-small"\nsave_to = "m"\n[[rankers]]\nname = "bert"\n'
     'label = "again"\nsave_to = "m"',
     "rankers[3].save_to: '{tmp}/m' is already the save_to of rankers[2]; folders must be distinct"),
    ('name = "in-domain"\n', "", "conditions[0].name: missing: this key is required"),
    ('train_dataset = "ubuntu-sample"', 'train_dataset = ""', "study.train_dataset: must not be empty"),
    ("[[conditions]]", "[conditions]", "conditions: must be a list of [[conditions]] tables; got a table with keys "
     "name, dataset, negatives"),
    ("seed = 1", 'seed = 1\nmetrics = ["map", { k = 1 }]',
     "study.metrics[1].name: a metric table needs a name (a string); got keys ['k']"),
    ("seed = 1", "seed = 1\nmetrics = [3]", "study.metrics[0]: must be a metric name or a table {name = ..., "
     "options}; got 3"),
    ("seed = 1", 'seed = 1\nrecalibrators = "platt"', 'study.recalibrators: must be a list (write ["platt"]); got '
     "the string 'platt'"),
    (GOOD, GOOD + "\n[extra]\nx = 1\n", "extra: unknown table; known: study, conditions, rankers, bayes, conformal, "
     "report"),
    ("seed = 1", 'seed = 1\nrankers = ["bm25"]', "study.rankers: give rankers as [[rankers]] tables, not inside "
     "[study]"),
    (GOOD, "[study\n", "not valid TOML: "),
]


@pytest.mark.parametrize(("old", "new", "expected"), CASES, ids=[c[2][:50] for c in CASES])
def test_each_error_is_one_line_with_its_path(tmp_path, old, new, expected):
    assert old in GOOD
    lines = _errors(tmp_path, GOOD.replace(old, new, 1))
    expected = expected.replace("{tmp}", str(tmp_path.resolve()))
    if expected.endswith(": "):
        assert len(lines) == 1 and lines[0].startswith(expected)
    else:
        assert lines == [expected]


def test_several_errors_are_several_lines(tmp_path):
    text = GOOD.replace("seed = 1", "seed = 1.5").replace("nota = true", 'nota = "no"')
    text = text.replace('families = ["zoib"]', 'families = "zoib"')
    assert _errors(tmp_path, text) == [
        "study.nota: must be true or false; got the string 'no'",
        'bayes.families: must be a list (write ["zoib"]); got the string \'zoib\'',
        "study.seed: must be an integer; got 1.5",
    ]


def test_missing_file_and_python_construction(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    # built in Python, the same schema: pydantic's ValidationError, a ValueError
    with pytest.raises(ValidationError, match="at least 1 item"):
        StudyConfig("x", "ubuntu-sample", (), (RankerConfig("bm25"),))
    with pytest.raises(ValueError, match="at least 1 item"):
        StudyConfig("x", "ubuntu-sample", (ConditionConfig("a", "ubuntu-sample"),), ())
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        StudyConfig("x", "d", (ConditionConfig("a", "d"),), (RankerConfig("bm25"),), n_candidates=1)
    with pytest.raises(ValueError, match=r"conditions\[1\].name: 'a' is already the name of conditions\[0\]"):
        StudyConfig("x", "d", (ConditionConfig("a", "d"), ConditionConfig("a", "e")), (RankerConfig("bm25"),))
    with pytest.raises(ValueError, match="valid integer"):
        BayesConfig(draws="4")  # type: ignore[arg-type]
    ok = StudyConfig("x", "d", [ConditionConfig("a", "d")], [RankerConfig("bm25"), RankerConfig("bert")])
    assert ok.rankers[1].key == "bert" and ok.reference == "bm25" and isinstance(ok.conditions, tuple)
    # dataclasses.replace validates again (the demo's --no-bayes uses it)
    assert replace(ok, bayes=replace(ok.bayes, enabled=False)).bayes.enabled is False
    with pytest.raises(ValueError, match="reference: must be the label of a ranker"):
        replace(ok, reference="nobody")
    assert asdict(ok)["rankers"][1] == {"name": "bert", "params": {}, "label": "", "init_from": None,
                                        "checkpoint": None, "pretrained": None, "save_to": None,
                                        "overwrite": False}


def test_checkpoint_and_pretrained_folders_are_taken_from_the_files_folder(tmp_path):
    study = tmp_path / "studies" / "s.toml"
    study.parent.mkdir()
    study.write_text(
        '[study]\ntrain_dataset = "ubuntu-sample"\n[[conditions]]\nname = "in-domain"\ndataset = "ubuntu-sample"\n'
        '[[rankers]]\nname = "bert"\npretrained = "../models/mine"\n'
        '[[rankers]]\nname = "ensemble"\npretrained = ["../models/a", "/abs/b"]\n'
        '[[rankers]]\nname = "trained"\ncheckpoint = "ckpt"\n'
        '[[rankers]]\nname = "trained"\nlabel = "t2"\nsave_to = "../shared/t2"\n'
    )
    config = load_config(study)
    assert config.rankers[3].save_to == str((tmp_path / "shared" / "t2").resolve())
    assert config.rankers[0].pretrained == str((tmp_path / "models" / "mine").resolve())
    assert config.rankers[1].pretrained == [str((tmp_path / "models" / "a").resolve()), "/abs/b"]
    assert config.rankers[2].checkpoint == str((tmp_path / "studies" / "ckpt").resolve())


def test_families_are_the_bayes_modules():
    from uncertank.bayes.cells import FAMILIES

    assert set(study_schema()["$defs"]["BayesConfig"]["properties"]["families"]["items"]["enum"]) == set(FAMILIES)


def _schema_block() -> str:
    return "<!-- study-schema:start -->\n```json\n" + json.dumps(study_schema(), indent=2) + \
        "\n```\n<!-- study-schema:end -->"


def test_the_docs_show_the_models_json_schema():
    text = (ROOT / "docs" / "experiments.md").read_text()
    shown = re.search(r"<!-- study-schema:start -->.*?<!-- study-schema:end -->", text, flags=re.S)
    assert shown is not None, "docs/experiments.md lost its study-schema markers"
    assert shown.group(0) == _schema_block(), "regenerate it: python tests/experiment/test_config.py"
    schema = study_schema()
    assert schema["required"] == ["study", "conditions", "rankers"]
    assert schema["properties"]["study"]["required"] == ["train_dataset"]
    assert "pretrained" in schema["$defs"]["RankerConfig"]["properties"]
    assert "reference" in schema["properties"]["study"]["properties"]


def test_a_study_file_validates_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    import tomllib

    jsonschema.validate(tomllib.loads(GOOD), study_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tomllib.loads(GOOD.replace("seed = 1", 'seed = "1"')), study_schema())


if __name__ == "__main__":  # rewrite the schema shown in docs/experiments.md
    path = ROOT / "docs" / "experiments.md"
    path.write_text(re.sub(r"<!-- study-schema:start -->.*?<!-- study-schema:end -->", lambda m: _schema_block(),
                           path.read_text(), flags=re.S))


def test_every_shipped_study_file_validates_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    import tomllib

    root = Path(__file__).resolve().parents[2]
    files = [*sorted((root / "docs" / "studies").glob("*.toml")), *sorted((root / "uncertank").rglob("*.toml"))]
    assert len(files) > 10
    for path in files:
        jsonschema.validate(tomllib.loads(path.read_text()), study_schema())
        load_config(path)  # and the library's own validation agrees


def test_a_study_file_that_is_a_folder_or_not_utf8_is_named(tmp_path):
    with pytest.raises(IsADirectoryError, match=r"is a folder; give the study file \(a \.toml\) in it$"):
        load_config(tmp_path)
    binary = tmp_path / "study.toml"
    binary.write_bytes(b"\xff\xfe not text")
    with pytest.raises(StudyConfigError, match=r"^not valid TOML: a study file is UTF-8 text; "):
        load_config(binary)
    with pytest.raises(TypeError, match=r"^path must be a path \(a str or os.PathLike\); got float 0.5$"):
        load_config(0.5)
