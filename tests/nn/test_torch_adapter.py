"""Any torch model as a stochastic ranker by MC dropout: passes differ, are seeded, and modes come back."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from uncertank import QuerySet, StochasticRanker
from uncertank.nn import TorchDropoutRanker


def _queries() -> QuerySet:
    return QuerySet.from_lists(
        [["my wifi is down"], ["sound is broken", "since the update"]],
        [["restart it", "no idea", "reinstall the driver"], ["check alsamixer", "hello"]],
        [[1, 0, 0], [1, 0]],
    )


class BiEncoder(torch.nn.Module):
    """A toy bi-encoder: bag-of-characters embeddings with dropout and a batch norm left in eval mode."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.EmbeddingBag(128, 16)
        self.drop = torch.nn.Dropout(0.3)
        self.norm = torch.nn.BatchNorm1d(16)

    def encode(self, texts: list[str]) -> torch.Tensor:
        ids = [torch.tensor([ord(c) % 128 for c in t] or [0]) for t in texts]
        offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
        return self.norm(self.drop(self.embed(torch.cat(ids), offsets)))


def _score_fn(net: BiEncoder):
    def score(context: list[str], candidates: list[str]) -> torch.Tensor:
        q = net.encode([" ".join(context)])
        return torch.sigmoid((net.encode(candidates) * q).sum(1) / 4)

    return score


def test_passes_differ_are_seeded_and_the_mean_is_the_prediction():
    net = BiEncoder().eval()
    ranker = TorchDropoutRanker(_score_fn(net), net, n_passes=20, seed=3)
    assert isinstance(ranker, StochasticRanker)
    qs = _queries()
    samples = ranker.predict_samples(qs).samples
    assert samples.shape == (20, qs.n_pairs) and samples.std(axis=0).min() > 0
    np.testing.assert_array_equal(ranker.predict_samples(qs).samples, samples)
    np.testing.assert_allclose(ranker.predict(qs).scores, samples.mean(axis=0))
    det = ranker.predict_deterministic(qs).scores
    np.testing.assert_array_equal(det, ranker.predict_deterministic(qs).scores)
    assert np.abs(samples.mean(axis=0) - det).max() < 0.2


def _dropout_active(net: BiEncoder) -> bool:
    """Whether the module's dropout drops now (by the reference path's training flag or the fast path's hook)."""
    with torch.inference_mode():
        return bool((net.drop(torch.ones(256)) == 0).any())


@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_only_dropout_is_switched_on_and_modes_are_restored(impl):
    net = BiEncoder()
    net.eval()
    net.embed.train()  # a mode of the user's own, kept as it was
    seen: list[tuple[bool, bool]] = []

    def score(context, candidates):
        seen.append((_dropout_active(net), net.norm.training))
        return _score_fn(net)(context, candidates)

    ranker = TorchDropoutRanker(score, net, n_passes=2, mc_impl=impl)
    assert ranker.uses_fast_path is (impl == "fast")
    ranker.predict_samples(_queries())
    assert set(seen) == {(True, False)}  # dropout on, the batch norm still in eval mode
    assert not net.drop.training and not net.norm.training and net.embed.training
    assert not _dropout_active(net)


@pytest.mark.parametrize("impl", ["fast", "reference"])
def test_modes_are_restored_when_the_function_raises(impl):
    net = BiEncoder().eval()

    def broken(context, candidates):
        assert _dropout_active(net)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        TorchDropoutRanker(broken, net, mc_impl=impl).predict_samples(_queries())
    assert not any(m.training for m in net.modules())
    assert not _dropout_active(net) and not net.drop._forward_hooks
    net.train()

    def broken_in_eval(context, candidates):
        assert not net.drop.training
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        TorchDropoutRanker(broken_in_eval, net).predict_deterministic(_queries())
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())


def test_the_fast_and_the_reference_masks_give_the_same_predictive():
    net = BiEncoder().eval()
    qs = _queries()
    auto = TorchDropoutRanker(_score_fn(net), net, n_passes=400, seed=1)
    assert auto.uses_fast_path
    fast = auto.predict_samples(qs).samples
    ref = TorchDropoutRanker(_score_fn(net), net, n_passes=400, seed=1, mc_impl="reference").predict_samples(qs).samples
    assert not np.array_equal(fast, ref)
    se = np.sqrt(fast.var(axis=0) / 400 + ref.var(axis=0) / 400)
    assert (np.abs(fast.mean(axis=0) - ref.mean(axis=0)) < 4 * se).all()
    np.testing.assert_allclose(fast.std(axis=0), ref.std(axis=0), rtol=0.2)


def test_a_batched_function_over_the_whole_query_set():
    net = BiEncoder().eval()
    per_query = _score_fn(net)

    def batched(queries: QuerySet) -> np.ndarray:
        return np.concatenate([per_query(*queries.query(q)[:2]).numpy() for q in range(queries.n_queries)])

    a = TorchDropoutRanker(batched, net, per_query=False, n_passes=3).predict_samples(_queries()).samples
    b = TorchDropoutRanker(per_query, net, n_passes=3).predict_samples(_queries()).samples
    np.testing.assert_allclose(a, b)


def test_errors():
    net = BiEncoder()
    with pytest.raises(TypeError, match="fn must be callable; got int"):
        TorchDropoutRanker(3, net)
    with pytest.raises(TypeError, match=r"module must be a torch\.nn\.Module; got str"):
        TorchDropoutRanker(_score_fn(net), "net")
    with pytest.raises(ValueError, match="module must hold at least one dropout site"):
        TorchDropoutRanker(_score_fn(net), torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"must return one score per candidate \(3\) for query 0; got shape \(2,\)"):
        TorchDropoutRanker(lambda c, cands: [0.5, 0.5], net).predict_samples(_queries())
    with pytest.raises(ValueError, match=r"one score per pair \(5,\); got shape \(1,\)"):
        TorchDropoutRanker(lambda qs: [0.5], net, per_query=False).predict_samples(_queries())
    with pytest.raises(TypeError, match="queries must be a QuerySet"):
        TorchDropoutRanker(_score_fn(net), net).predict_samples([("a", "b")])
    with pytest.raises(ValueError, match="mc_impl must be 'auto', 'fast' or 'reference'; got 'quick'"):
        TorchDropoutRanker(_score_fn(net), net, mc_impl="quick")
    alpha = torch.nn.Sequential(torch.nn.AlphaDropout(0.2), torch.nn.Dropout(0.1))
    with pytest.raises(ValueError, match="mc_impl='fast' cannot run this module: model has an AlphaDropout"):
        TorchDropoutRanker(_score_fn(net), alpha, mc_impl="fast")
    assert not TorchDropoutRanker(_score_fn(net), alpha).uses_fast_path  # auto: the reference path
