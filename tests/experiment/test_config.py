from __future__ import annotations

import pytest

from uncertank.experiment import load_config
from uncertank.experiment.config import ConditionConfig, RankerConfig, StudyConfig, demo_config

GOOD = """
[study]
name = "my study"
train_dataset = "ubuntu-sample"
max_test_queries = 20
risk_grid = [0, 0.5]

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

[bayes]
enabled = false
families = ["zoib"]
"""


def test_load_config_round_trip(tmp_path):
    p = tmp_path / "study.toml"
    p.write_text(GOOD)
    cfg = load_config(p)
    assert cfg.name == "my study" and cfg.max_test_queries == 20
    assert cfg.risk_grid == (0.0, 0.5)
    assert [r.key for r in cfg.rankers] == ["bm25", "bert-small"]
    assert cfg.rankers[1].params == {"epochs": 1, "max_length": 32}
    assert cfg.conditions[0] == ConditionConfig("in-domain", "ubuntu-sample", "bm25")
    assert cfg.bayes.enabled is False and cfg.bayes.families == ("zoib",)


@pytest.mark.parametrize(
    ("text", "exc", "match"),
    [
        (GOOD.replace('max_test_queries = 20', 'max_tests = 20'), ValueError, r"\[study\] has unknown keys max_tests"),
        (GOOD.replace('negatives = "bm25"', 'negatives = "bm25"\nweight = 2'), ValueError,
         r"\[conditions\] has unknown keys weight"),
        (GOOD + "\n[extra]\nx = 1\n", ValueError, "unknown tables extra"),
        (GOOD.replace("[[conditions]]", "[[nothing]]"), ValueError, "unknown tables nothing"),
        ("[study\n", ValueError, "not valid TOML"),
        (GOOD.replace('label = "bert-small"', 'label = "bm25"'), ValueError, "distinct labels; bm25 appear twice"),
    ],
)
def test_load_config_errors(tmp_path, text, exc, match):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(exc, match=match):
        load_config(p)


def test_missing_file_and_empty_sections(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ValueError, match="at least one condition"):
        StudyConfig("x", "ubuntu-sample", (), (RankerConfig("bm25"),))
    with pytest.raises(ValueError, match="at least one ranker"):
        StudyConfig("x", "ubuntu-sample", (ConditionConfig("a", "ubuntu-sample"),), ())
    with pytest.raises(ValueError, match="n_candidates must be >= 2"):
        StudyConfig("x", "d", (ConditionConfig("a", "d"),), (RankerConfig("bm25"),), n_candidates=1)
    with pytest.raises(ValueError, match="distinct names"):
        StudyConfig("x", "d", (ConditionConfig("a", "d"), ConditionConfig("a", "e")), (RankerConfig("bm25"),))


def test_demo_config_sizes():
    quick, default, full = demo_config("quick"), demo_config("default"), demo_config("full")
    assert quick.rankers[0].name == "bm25"
    assert quick.max_train_queries is not None and full.max_train_queries is None
    assert quick.conditions[0].name == "in-domain"
    by_key = {r.key: r for r in default.rankers}
    # S-BERT^D: mc_dropout starts from bert's weights; the ensemble keeps bert as member 0
    assert by_key["mc_dropout"].init_from == "bert" and by_key["ensemble"].init_from == "bert"
    assert by_key["mc_dropout"].params["n_passes"] == 10
    for gp in ("sngp", "gpf_bert", "pgdrr"):  # a GP head on bert's fine-tuned encoder, when installed
        if gp in by_key:
            assert by_key[gp].init_from == "bert" and by_key[gp].params["pooling"] == "mean"
    # the default pools MiniLM by the mean over tokens, as it was trained (docs/experiments.md)
    assert by_key["bert"].params["pooling"] == "mean" and by_key["bert"].params["num_hidden_layers"] == 3
    # the full study is the paper's setting: all six layers, M = 5, T = 10
    full_keys = {r.key: r for r in full.rankers}
    assert "num_hidden_layers" not in full_keys["bert"].params
    assert full_keys["bert"].params["pooling"] == "cls"
    assert full_keys["ensemble"].params["n_members"] == 5 and full_keys["mc_dropout"].params["n_passes"] == 10
    with pytest.raises(ValueError, match="size must be one of"):
        demo_config("huge")  # type: ignore[arg-type]
