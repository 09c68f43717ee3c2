# ruff: noqa: E501  (each reason is the error message as it was met, kept on one line)
"""Raw errors the fuzz harness finds in modules this part of the code does not own, left to their owners.

Each is run as an ``xfail(strict=True)``: when its module is fixed the case passes, the xfail fails, and the
entry is removed here. The reason is the first raw error the harness met: its type, where it was raised and
its message; the test's output shows the input.
"""

from __future__ import annotations

KNOWN_FAILURES: dict[str, str] = {
    "uncertank.nn.CrossEncoderModel": (
        "uncertank.nn.model: AttributeError raised at uncertank/nn/model.py:190: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.nn.NeuralRanker": (
        "uncertank.nn.ranker: ValueError from an operation, not a raise, at uncertank/nn/pretrained.py:537: ValueError: The truth value of an array with more than one ele"
    ),
    "uncertank.nn.PretrainedCrossEncoder": (
        "uncertank.nn.pretrained: ValueError from an operation, not a raise, at uncertank/nn/pretrained.py:352: ValueError: The truth value of an array with more than one ele"
    ),
    "uncertank.nn.autocast": (
        "uncertank.nn.runtime: AttributeError raised at uncertank/nn/runtime.py:100: AttributeError: 'QuerySet' object has no attribute 'type'"
    ),
    "uncertank.nn.build_backbone": (
        "uncertank.nn.model: OSError from a dependency at inside transformers OSError: It looks like the config file at 'tests/data/edge-a.run' is not a valid JSON file."
    ),
    "uncertank.nn.cross_entropy_loss": (
        "uncertank.nn.training: AttributeError raised at uncertank/nn/training.py:312: AttributeError: 'PosixPath' object has no attribute 'float'"
    ),
    "uncertank.nn.encode_text_pairs": (
        "uncertank.nn.pretrained: AttributeError raised at uncertank/nn/pretrained.py:203: AttributeError: 'float' object has no attribute 'turn_markers'"
    ),
    "uncertank.nn.head_dimensions": (
        "uncertank.nn.model: AttributeError raised at uncertank/nn/model.py:190: AttributeError: 'float' object has no attribute 'config'"
    ),
    "uncertank.nn.mc_implementation": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:479: AttributeError: 'QuerySet' object has no attribute 'type'"
    ),
    "uncertank.nn.mc_passes": (
        "uncertank.nn.inference: IndexError from an operation, not a raise, at uncertank/nn/inference.py:451: IndexError: only integers, slices (`:`), ellipsis (`...`), nump"
    ),
    "uncertank.nn.output_probabilities": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:218: AttributeError: 'PosixPath' object has no attribute 'float'"
    ),
    "uncertank.nn.pool_encoder": (
        "uncertank.nn.model: TypeError from an operation, not a raise, at uncertank/nn/model.py:235: TypeError: 'float' object is not callable"
    ),
    "uncertank.nn.save_pretrained": (
        "uncertank.nn.export: AttributeError raised at uncertank/nn/export.py:181: AttributeError: 'float' object has no attribute 'check_fitted'"
    ),
    "uncertank.nn.score_batches": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:279: AttributeError: 'float' object has no attribute 'n_pairs'"
    ),
    "uncertank.nn.score_probabilities": (
        "uncertank.nn.inference: AttributeError raised at uncertank/nn/inference.py:191: AttributeError: 'str' object has no attribute 'parameters'"
    ),
}
