"""A ranker whose head was never trained is not saved, and an old checkpoint of one is not loaded."""

from __future__ import annotations

import json

import numpy as np
import pytest

import uncertank
from uncertank import NotFittedError
from uncertank.nn import NeuralRanker
from uncertank.nn.testing import tiny_config, toy_queries

SMALL = dict(max_length=32, epochs=1, batch_size=8, show_progress=False, device="cpu")


@pytest.mark.parametrize("method", ["save", "save_pretrained"])
def test_an_unfitted_ranker_is_not_saved(tmp_path, method):
    ranker = uncertank.make_ranker("bert", backbone=tiny_config(), **SMALL)
    with pytest.raises(NotFittedError, match="is not fitted: its head is randomly initialised"):
        getattr(ranker, method)(tmp_path / "ck")
    assert not (tmp_path / "ck").exists()


def test_an_unfitted_ensemble_member_is_not_saved(tmp_path):
    ensemble = uncertank.make_ranker("ensemble", backbone=tiny_config(), n_members=2, **SMALL)
    with pytest.raises(NotFittedError, match=r"ensemble\[0\]"):
        ensemble.save(tmp_path / "ens")
    assert not (tmp_path / "ens").exists()


def test_a_checkpoint_records_where_its_weights_came_from_and_an_unfitted_one_is_refused(tmp_path):
    queries = toy_queries()
    ranker = NeuralRanker(tiny_config(), **SMALL).fit(queries)
    ranker.save(tmp_path / "ck")
    manifest_file = tmp_path / "ck" / "uncertank.json"
    manifest = json.loads(manifest_file.read_text())
    assert manifest["weights"] == "fit"
    np.testing.assert_array_equal(NeuralRanker.load(tmp_path / "ck").predict(queries).scores,
                                  ranker.predict(queries).scores)
    # a checkpoint written of an unfitted ranker (as earlier versions allowed) says so
    manifest["weights"], manifest["history"] = None, None
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(NotFittedError, match="never fitted"):
        NeuralRanker.load(tmp_path / "ck")


def test_the_example_plugin_save_keeps_the_users_files(tmp_path):
    tfidf = pytest.importorskip("uncertank_tfidf")
    queries = toy_queries()
    ranker = tfidf.TfidfRanker().fit(queries)
    folder = tmp_path / "project"
    (folder / "data").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    (folder / "data" / "train.tsv").write_text("a\tb\n")
    with pytest.raises(uncertank.FolderInUseError, match=r"data/, notes\.txt"):
        ranker.save(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["data", "notes.txt"]
    ranker.save(folder, overwrite=True)
    ranker.save(tmp_path / "own")
    ranker.save(tmp_path / "own")  # its own earlier save is replaced without overwrite
    assert (folder / "notes.txt").read_text() == "mine" and (folder / "data" / "train.tsv").read_text() == "a\tb\n"
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    np.testing.assert_array_equal(tfidf.TfidfRanker.load(folder).predict(queries).scores,
                                  ranker.predict(queries).scores)


def test_mc_dropout_refuses_a_model_whose_dropout_rates_are_all_zero(tmp_path):
    from uncertank.nn import TorchDropoutRanker, check_active_dropout, dropout_rates, from_pretrained
    from uncertank.nn.testing import tiny_classifier_folder

    folder = tiny_classifier_folder(tmp_path / "m")
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout=0.0)
    (folder / "config.json").write_text(json.dumps(config))
    ranker = from_pretrained(folder, "mc_dropout", n_passes=3)
    with pytest.raises(ValueError, match=r"MC dropout needs dropout: its \d+ dropout sites all have rate 0"):
        ranker.predict_samples(toy_queries())
    assert not any(r > 0 for r in dropout_rates(ranker.model))
    import torch

    with pytest.raises(ValueError, match="all have rate 0"):
        TorchDropoutRanker(lambda q: None, torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.0)))
    check_active_dropout(torch.nn.Sequential(torch.nn.Dropout(0.1)))  # a positive rate passes


def test_an_ensemble_refuses_the_same_folder_twice(tmp_path):
    from uncertank.nn.testing import tiny_classifier_folder

    folder = tiny_classifier_folder(tmp_path / "m")
    with pytest.raises(ValueError, match=r"pretrained\[1\] is the same folder as pretrained\[0\].*variance would be 0"):
        uncertank.make_ranker("ensemble", pretrained=[folder, tmp_path / "." / "m"])
