"""score_batches fits a large batch to the device: a batch that runs out of memory is run again at half the size."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from uncertank.nn import encode_queries, score_batches
from uncertank.nn.testing import toy_queries


@pytest.fixture(scope="module")
def encoded(tokenizer):
    return encode_queries(tokenizer, toy_queries(4, 5), max_length=32)


def _score(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """A deterministic score per pair: its tokens' sum, as one column."""
    return (batch["input_ids"] * batch["attention_mask"]).sum(dim=1, keepdim=True).float()


def test_a_batch_out_of_memory_is_run_again_at_half_the_size(encoded):
    seen: list[int] = []

    def limited(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        seen.append(batch["input_ids"].shape[0])
        if batch["input_ids"].shape[0] > 3:  # a device that holds three pairs at once
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return _score(batch)

    expected = score_batches(encoded, _score, batch_size=64)
    got = score_batches(encoded, limited, batch_size=16)
    np.testing.assert_array_equal(got, expected)
    assert seen[:3] == [16, 8, 4] and max(seen[3:]) <= 2  # halved until it fit, then kept small
    assert sum(s for s in seen if s <= 3) == encoded.n_pairs  # every pair scored once


def test_one_pair_out_of_memory_is_raised(encoded):
    def never(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    with pytest.raises(torch.OutOfMemoryError):
        score_batches(encoded, never, batch_size=8)
