"""A fitted cross-encoder written as a plain Hugging Face / sentence-transformers folder.

:func:`save_pretrained` turns a fitted :class:`~uncertank.nn.NeuralRanker`
whose network is a plain cross-encoder (``bert``, ``mc_dropout``: the
encoder and its classification head, no GP layer) into a folder that
``AutoModelForSequenceClassification.from_pretrained`` and
sentence-transformers' ``CrossEncoder`` load as they load any other, and
that :func:`uncertank.nn.from_pretrained` loads back with the same scores.

The network maps one-to-one onto the library classifiers:

- a BERT encoder with ``[CLS]`` pooling: uncertank's head (dropout, dense,
  tanh, dropout, linear) is BERT's pooler (dense, tanh), its dropout and its
  classifier; the head's first dropout has no counterpart, so MC dropout on
  the exported model has one dropout site fewer (on the ``[CLS]`` vector)
  than ``mc_dropout`` on the ranker;
- a RoBERTa / XLM-R encoder with ``[CLS]`` (``<s>``) pooling: the head is
  ``RobertaClassificationHead`` exactly;
- a ranker made from a user's folder (``pretrained=``) is that classifier,
  saved as it is.

The two logits (softmax, column 1) become one: ``sigmoid(l1 - l0)`` equals
``softmax(l)[1]``, so the exported classifier has ``num_labels = 1`` and
P(relevant) is its sigmoid, which is what ``CrossEncoder.predict`` returns
by default. ``config.json`` records the pair format (``[U]``/``[T]`` turn
markers, :class:`~uncertank.nn.PairFormat` ``turn_markers``) and the
tokenizer the ranker's ``max_length``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from uncertank.validation import check_bool

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from uncertank.nn.pretrained import PretrainedCrossEncoder

__all__ = ["EXPORTABLE_ENCODERS", "save_pretrained"]

#: Encoder types whose [CLS]-pooled uncertank head maps onto a library classifier.
EXPORTABLE_ENCODERS = ("bert", "roberta", "xlm-roberta")

_SIGMOID = "torch.nn.modules.activation.Sigmoid"


def _one_logit(linear: nn.Linear) -> nn.Linear:
    """A 1-output copy of a 2-output linear layer: its logit is ``l1 - l0``."""
    out = nn.Linear(linear.in_features, 1, bias=linear.bias is not None)
    with torch.no_grad():
        out.weight.copy_(linear.weight[1:2] - linear.weight[0:1])
        if linear.bias is not None:
            out.bias.copy_(linear.bias[1:2] - linear.bias[0:1])
    return out


def _classifier_from_head(model: nn.Module) -> PreTrainedModel:
    """An ``AutoModelForSequenceClassification`` holding ``model``'s encoder and head (one logit)."""
    from transformers import AutoModelForSequenceClassification, PreTrainedModel

    from uncertank.nn.model import CrossEncoderModel

    if not (type(model) is CrossEncoderModel and isinstance(model, CrossEncoderModel)):
        raise ValueError(
            f"save_pretrained writes a plain cross-encoder (encoder + classification head); this ranker's "
            f"network is {type(model).__name__}, whose head (a GP layer, a memory bank) no Hugging Face "
            "classifier holds: save it with save() and load it with uncertank.nn.load_ranker"
        )
    if model.pooling != "cls":
        raise ValueError(
            f"save_pretrained needs pooling='cls' (Hugging Face classifiers read the first token); "
            f"this ranker pools with {model.pooling!r}"
        )
    encoder = model.encoder
    if not isinstance(encoder, PreTrainedModel):
        raise ValueError(
            f"save_pretrained writes a transformers encoder; this ranker's encoder is {type(encoder).__name__}"
        )
    cfg = encoder.config.__class__.from_dict(encoder.config.to_dict())
    kind = getattr(cfg, "model_type", None)
    if kind not in EXPORTABLE_ENCODERS:
        raise ValueError(
            f"save_pretrained supports {', '.join(EXPORTABLE_ENCODERS)} encoders (their classifier heads "
            f"are uncertank's); this ranker's encoder is {kind!r}"
        )
    dense, drop, out = model.head[1], model.head[3], model.head[4]
    if not (isinstance(dense, nn.Linear) and isinstance(drop, nn.Dropout) and isinstance(out, nn.Linear)):
        raise ValueError(f"save_pretrained needs uncertank's classification head; this ranker's is {model.head}")
    cfg.num_labels = 1
    cfg.classifier_dropout = float(drop.p)
    cfg.architectures = None
    # untyped: the auto class builds the classifier of cfg's model type, whose head modules differ by type
    clf = AutoModelForSequenceClassification.from_config(cfg)  # type: ignore[no-untyped-call]
    base = clf.base_model
    # an encoder's own pooler is unused by uncertank's head (and absent from RoBERTa's classifier)
    weights = {k: v for k, v in encoder.state_dict().items() if not k.startswith("pooler.")}
    missing, unexpected = base.load_state_dict(weights, strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise RuntimeError(
            f"encoder weights do not fit {type(clf).__name__}: missing {missing}, unexpected {unexpected}"
        )
    with torch.no_grad():
        if kind == "bert":
            base.pooler.dense.weight.copy_(dense.weight)
            base.pooler.dense.bias.copy_(dense.bias)
            clf.classifier = _one_logit(out)
        else:  # RobertaClassificationHead: dropout, dense, tanh, dropout, out_proj
            clf.classifier.dense.weight.copy_(dense.weight)
            clf.classifier.dense.bias.copy_(dense.bias)
            clf.classifier.out_proj = _one_logit(out)
    built: PreTrainedModel = clf
    return built


def _pretrained_classifier(model: PretrainedCrossEncoder, activation: str) -> PreTrainedModel:
    """The user's own classifier, with two softmax logits folded into one."""
    clf = model.classifier
    if activation == "sigmoid":
        return clf
    import copy

    clf = copy.deepcopy(clf)
    layer_name = next(
        (n for n, m in reversed(list(clf.named_modules())) if isinstance(m, nn.Linear) and m.out_features == 2),
        None,
    )
    if layer_name is None:
        raise ValueError(f"cannot find the 2-logit output layer of {type(clf).__name__}")
    parent_name, _, attr = layer_name.rpartition(".")
    parent = clf.get_submodule(parent_name) if parent_name else clf
    setattr(parent, attr, _one_logit(getattr(parent, attr)))
    clf.config.num_labels = 1
    return clf


def save_pretrained(ranker: Any, folder: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write a fitted plain cross-encoder ranker as a Hugging Face / sentence-transformers folder.

    Parameters
    ----------
    ranker : uncertank.nn.NeuralRanker
        Fitted, loaded, warm-started or made from a pretrained folder; its
        network a plain cross-encoder (``bert``, ``mc_dropout``).
    folder : str or path
        A new folder, an empty one, or one holding an earlier model this
        library saved there (which is replaced). A folder holding anything
        else is refused before any work, unless ``overwrite`` is true.
        Written atomically: a new folder beside it, renamed into place; an
        existing one file by file, each renamed over its earlier version.
    overwrite : bool
        Write into a folder that holds files the library did not write.
        Only the model's own files are replaced (those of this save, and
        those an earlier save recorded); every other file, and any folder
        beneath (the one the ranker was loaded from, say), is left as it is.

    Returns
    -------
    pathlib.Path
        ``folder``: ``config.json`` (one logit, the pair format under
        ``uncertank_pair_format``), ``model.safetensors``, the tokenizer
        (``model_max_length`` = the ranker's ``max_length``),
        ``config_sentence_transformers.json`` (activation Sigmoid) and
        ``uncertank-export.json`` (the files this save wrote, so that a
        later save replaces them and nothing else).

    Raises
    ------
    uncertank.NotFittedError
        When the ranker has no trained weights.
    ValueError
        When its network is not a plain cross-encoder (a GP head, mean
        pooling, an encoder type other than BERT or RoBERTa/XLM-R), or
        ``folder`` is a file.
    uncertank.FolderInUseError
        When ``folder`` holds files the library did not write and
        ``overwrite`` is false; the message names a few of them.

    Examples
    --------
    >>> ranker.save_pretrained("my-cross-encoder")  # doctest: +SKIP
    >>> from sentence_transformers import CrossEncoder  # doctest: +SKIP
    >>> CrossEncoder("my-cross-encoder").predict([(context_text, response)])  # doctest: +SKIP
    """
    from uncertank._folders import EXPORT_RECORD, check_save_folder, model_folder, write_export_record
    from uncertank.nn.pretrained import PretrainedCrossEncoder

    # NeuralRanker's module imports this one, so its class is read off the loaded module (loaded whenever a
    # NeuralRanker exists) instead of imported: ``ranker`` is typed Any above for the same reason
    ranker_module = sys.modules.get("uncertank.nn.ranker")
    if ranker_module is None or not isinstance(ranker, ranker_module.NeuralRanker):
        raise TypeError(f"ranker must be a fitted uncertank.nn.NeuralRanker; got {type(ranker).__name__}")
    check_bool(overwrite, "overwrite")
    ranker.check_fitted()
    check_save_folder(folder, overwrite=overwrite)
    model = ranker.build_model()
    if isinstance(model, PretrainedCrossEncoder):
        clf = _pretrained_classifier(model, model.activation)
        fmt = ranker.pair_format_.to_dict()
    else:
        clf = _classifier_from_head(model)
        fmt = {"turn_markers": True}
    import copy

    clf = copy.deepcopy(clf)
    clf.cpu()
    clf.train(False)  # eval mode
    clf.config.uncertank_pair_format = fmt
    tokenizer = copy.deepcopy(ranker._tokenizer())
    tokenizer.model_max_length = int(ranker.max_length_)
    import transformers

    st_config = {
        "__version__": {"pytorch": torch.__version__, "transformers": transformers.__version__},
        "activation_fn": _SIGMOID,
        "model_type": "CrossEncoder",
    }
    with model_folder(folder, overwrite=overwrite, last=(EXPORT_RECORD, "config.json")) as tmp:
        clf.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        with open(Path(tmp) / "config_sentence_transformers.json", "w", encoding="utf-8") as fh:
            json.dump(st_config, fh, indent=2)
            fh.write("\n")
        write_export_record(tmp)
    return Path(folder)
