"""The fast MC-dropout path: the masks' distribution at every site, reproducibility, and the reference's predictive."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from torch import nn

from uncertank.nn import (
    CrossEncoderModel,
    DropoutMasks,
    build_backbone,
    encode_queries,
    fast_mc_dropout,
    fast_path_problem,
    mc_implementation,
    mc_passes,
    score_probabilities,
    seed_everything,
)
from uncertank.nn import dropout as fast
from uncertank.nn.testing import tiny_config, toy_queries

CPU = torch.device("cpu")


def tiny_model(**overrides):
    seed_everything(0)
    encoder, tok = build_backbone(tiny_config(**overrides))
    return CrossEncoderModel(encoder), tok


def _within(kept: int, n: int, p: float) -> bool:
    """The observed keep rate lies within 4 standard errors of 1 - p."""
    se = np.sqrt(p * (1 - p) / n)
    return abs(kept / n - (1 - p)) <= 4 * se


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_masks_keep_at_rate_one_minus_p_and_scale_exactly(p):
    masks = DropoutMasks(seed=3)
    m = masks.scaled((200, 1000), p)
    kept = int((m != 0).sum())
    assert _within(kept, m.numel(), p)
    assert set(m.unique().tolist()) == {0.0, float(torch.tensor(1 / (1 - p), dtype=torch.float32))}
    x = torch.randn(300, 700)
    y = masks.apply(x, p)
    on = y != 0
    assert _within(int(on.sum()), x.numel(), p)
    assert torch.equal(y[on], x[on] * (1 / (1 - p)))  # the scale of inverted dropout, to the last bit
    assert masks.apply(x, 0.0) is x and torch.equal(masks.apply(x, 1.0), torch.zeros_like(x))
    assert not masks.keep((3, 4), 1.0).any() and masks.keep((3, 4), 0.0).all()
    masks.close()


def test_masks_are_independent_of_the_number_of_threads():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = DropoutMasks(seed=5).keep((70_000, 3), 0.1).clone()
        torch.set_num_threads(2)
        two = DropoutMasks(seed=5).keep((70_000, 3), 0.1).clone()
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)
    assert not torch.equal(one, DropoutMasks(seed=6).keep((70_000, 3), 0.1))


def test_every_site_draws_a_mask_of_its_shape():
    """Embeddings, then per layer attention probabilities, attention output and feed-forward output, then the head."""
    model, tok = tiny_model()
    enc = encode_queries(tok, toy_queries(2, 3), max_length=24)
    batch = enc.batch(np.arange(enc.n_pairs))
    b, length = batch["input_ids"].shape
    shapes: list[tuple[int, ...]] = []
    rates: list[float] = []
    with fast_mc_dropout(model, seed=0) as masks, torch.inference_mode():
        draw = masks._mask

        def spy(shape, p, scale):
            shapes.append(tuple(shape))
            rates.append(p)
            return draw(shape, p, scale)

        masks._mask = spy  # type: ignore[method-assign]
        model(**batch)
    hidden = (b, length, 32)
    layer = [(b * 2, length, length), hidden, hidden]  # 2 heads
    assert shapes == [hidden, *layer, *layer, (b, 32), (b, 32)]
    assert rates == [0.1] * len(shapes)


@pytest.mark.parametrize("p", [0.1, 0.4])
def test_hidden_sites_keep_at_rate_one_minus_p_and_scale_exactly(p):
    model, tok = tiny_model(hidden_dropout_prob=p, attention_probs_dropout_prob=0.0)
    enc = encode_queries(tok, toy_queries(), max_length=32)
    batch = enc.batch(np.arange(enc.n_pairs))
    seen: dict[str, list[torch.Tensor]] = {}

    def record(name):
        def hook(module, args, output):
            x = args[0]
            on = x != 0
            ratio = output[on] / x[on]
            seen.setdefault(name, []).append(ratio)

        return hook

    with fast_mc_dropout(model, seed=1), torch.inference_mode():
        # registered after the fast path's own hooks, so they see its output
        handles = [m.register_forward_hook(record(n)) for n, m in model.named_modules() if type(m) is nn.Dropout]
        for _ in range(3):
            model(**batch)
    for h in handles:
        h.remove()
    assert len(seen) == 1 + 2 * 2 + 2  # embeddings, 2 per layer, 2 in the head
    scale = torch.tensor(1 / (1 - p), dtype=torch.float32)
    for name, ratios in seen.items():
        r = torch.cat(ratios)
        kept = r != 0
        assert _within(int(kept.sum()), r.numel(), p), name
        torch.testing.assert_close(r[kept], scale.expand(int(kept.sum())), rtol=2e-7, atol=0, msg=name)


class _Attention(nn.Module):
    """Stands in for an attention module inside a fast block."""


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_attention_probabilities_keep_at_rate_one_minus_p_unrenormalised(p):
    """With v the identity, attention returns its dropped probabilities: 0 or P / (1 - p)."""
    torch.manual_seed(0)
    b, h, length = 8, 3, 40
    q, k = torch.randn(b, h, length, 16), torch.randn(b, h, length, 16)
    v = torch.eye(length).expand(b, h, length, length)
    lengths = torch.randint(5, length + 1, (b,))
    valid = torch.arange(length)[None, :] < lengths[:, None]
    mask = torch.zeros(b, 1, length, length).masked_fill(~valid[:, None, None, :], torch.finfo(torch.float32).min)
    module = _Attention()
    fast._SESSIONS[id(module)] = fast._Session(DropoutMasks(seed=2))
    try:
        out, _ = fast._mc_attention(module, q, k, v, mask, dropout=p, scaling=0.25)
    finally:
        del fast._SESSIONS[id(module)]
    probs = torch.softmax(q @ k.transpose(-1, -2) * 0.25 + mask, dim=-1)
    dropped = out.transpose(1, 2)  # (b, h, length, length)
    live = valid[:, None, None, :].expand_as(probs)
    kept = (dropped != 0) & live
    assert _within(int(kept.sum()), int(live.sum()), p)
    torch.testing.assert_close(dropped[kept], probs[kept] / (1 - p), rtol=1e-5, atol=0)
    assert not dropped[~live].any()  # padding stays out


def test_attention_dropout_alone_gives_variance_on_the_fast_path():
    model, tok = tiny_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.3)
    model.head[0].p = model.head[3].p = 0.0
    enc = encode_queries(tok, toy_queries(), max_length=32)
    assert mc_implementation([model], CPU) == "fast"
    probs = score_probabilities([model], enc, n_passes=4, mc=True, seed=0)
    assert probs.var(axis=0).mean() > 1e-8


def test_seeded_runs_reproduce_and_seeds_differ():
    model, tok = tiny_model()
    enc = encode_queries(tok, toy_queries(), max_length=32)
    a = score_probabilities([model], enc, n_passes=3, mc=True, seed=4, batch_size=16)
    b = score_probabilities([model], enc, n_passes=3, mc=True, seed=4, batch_size=16)
    c = score_probabilities([model], enc, n_passes=3, mc=True, seed=5, batch_size=16)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-6
    assert np.abs(a[0] - a[1]).max() > 1e-6  # passes differ
    torch.manual_seed(9)
    d = score_probabilities([model], enc, n_passes=2, mc=True)
    torch.manual_seed(9)
    np.testing.assert_array_equal(d, score_probabilities([model], enc, n_passes=2, mc=True))


def test_the_block_restores_modes_attention_and_hooks():
    model, tok = tiny_model()
    model.train()
    model.encoder.encoder.layer[0].eval()
    modes = {n: m.training for n, m in model.named_modules()}
    enc = encode_queries(tok, toy_queries(1, 4), max_length=24)
    with pytest.raises(RuntimeError, match="inside"), fast_mc_dropout(model, seed=0):
        assert model.encoder.config._attn_implementation == fast._ATTENTION_KEY
        model(**enc.batch(np.arange(enc.n_pairs)))
        raise RuntimeError("inside")
    assert {n: m.training for n, m in model.named_modules()} == modes
    assert model.encoder.config._attn_implementation == "sdpa"
    assert not any(m._forward_hooks for m in model.modules())
    assert not fast._SESSIONS


def test_excluded_modules_keep_their_sites_off():
    model, tok = tiny_model()
    enc = encode_queries(tok, toy_queries(2, 3), max_length=24)
    batch = enc.batch(np.arange(enc.n_pairs))
    lower = [model.encoder.embeddings, model.encoder.encoder.layer[0]]
    outs = []
    hook = model.encoder.encoder.layer[0].register_forward_hook(lambda m, a, o: outs.append(o.clone()))
    with torch.inference_mode():
        model.eval()
        model(**batch)
        for seed in (0, 1):
            with fast_mc_dropout(model, seed=seed, exclude=lower):
                model(**batch)
    hook.remove()
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])


@pytest.mark.slow
def test_predictive_distribution_matches_the_reference():
    """200 passes of each implementation: a KS test per pair (Bonferroni) and the mean variance."""
    model, tok = tiny_model(hidden_dropout_prob=0.2, attention_probs_dropout_prob=0.2)
    enc = encode_queries(tok, toy_queries(2, 10), max_length=32)
    n = 200
    ours = score_probabilities([model], enc, n_passes=n, mc=True, seed=0, mc_impl="fast")
    ref = score_probabilities([model], enc, n_passes=n, mc=True, seed=0, mc_impl="reference")
    assert ours.var(axis=0).mean() > 1e-6
    alpha = 0.01 / enc.n_pairs
    pvalues = [stats.ks_2samp(ours[:, j], ref[:, j]).pvalue for j in range(enc.n_pairs)]
    assert min(pvalues) > alpha, pvalues
    rng = np.random.default_rng(0)

    def mean_var_and_se(x):
        boot = [x[rng.integers(0, n, n)].var(axis=0, ddof=1).mean() for _ in range(300)]
        return x.var(axis=0, ddof=1).mean(), np.std(boot)

    (va, sa), (vb, sb) = mean_var_and_se(ours), mean_var_and_se(ref)
    assert abs(va - vb) <= 4 * np.hypot(sa, sb), (va, vb, sa, sb)


def test_unsupported_models_fall_back_to_the_reference():
    model, tok = tiny_model()
    enc = encode_queries(tok, toy_queries(1, 4), max_length=24)
    odd = nn.Sequential(model, nn.AlphaDropout(0.1))
    assert "AlphaDropout" in fast_path_problem(odd)
    assert mc_implementation([odd], CPU) == "reference"
    with pytest.raises(ValueError, match="fast_mc_dropout cannot run this model: model has an AlphaDropout"):
        with fast_mc_dropout(odd, seed=0):
            pass

    class FloatRate(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_dropout = 0.1

    assert "keeps a dropout rate as a float" in fast_path_problem(nn.Sequential(FloatRate()))
    assert mc_implementation([model], torch.device("cuda")) == "reference"
    assert mc_implementation([model], CPU, mc_impl="reference") == "reference"
    assert mc_implementation([model, model], CPU, stacked=True) == "reference"
    with pytest.raises(ValueError, match=r"mc_impl must be one of 'fast', 'reference'; got 'quick'"):
        score_probabilities([model], enc, mc=True, mc_impl="quick")  # type: ignore[arg-type]


def test_unsupported_transformers_architecture_is_named():
    from transformers import GPT2Config, GPT2Model

    gpt = GPT2Model(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=16))
    problem = fast_path_problem(gpt)
    assert problem is not None and "'gpt2'" in problem
    assert mc_implementation([gpt], CPU) == "reference"


@pytest.mark.parametrize("kind", ["roberta", "electra", "distilbert"])
def test_other_supported_encoders_run_with_every_site_on(kind):
    from transformers import AutoConfig, AutoModel

    params = {
        "roberta": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37),
        "electra": dict(hidden_size=32, embedding_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37),
        "distilbert": dict(dim=32, n_layers=2, n_heads=2, hidden_dim=37),
    }[kind]
    torch.manual_seed(0)
    config = AutoConfig.for_model(kind, vocab_size=60, max_position_embeddings=40, **params)
    encoder = AutoModel.from_config(config)
    model = CrossEncoderModel(encoder, dropout=0.0)
    assert fast_path_problem(model) is None
    ids = torch.randint(5, 60, (6, 12))
    mask = torch.ones_like(ids)
    mask[:3, 8:] = 0
    calls: list[tuple[int, ...]] = []
    with fast_mc_dropout(model, seed=0) as masks, torch.inference_mode():
        draw = masks._mask
        masks._mask = lambda shape, p, scale: calls.append(tuple(shape)) or draw(shape, p, scale)  # type: ignore
        a, b = model(ids, mask), model(ids, mask)
    assert not torch.equal(a, b)
    # attention probabilities, (batch * heads, q, k), in both layers of both passes
    assert calls.count((12, 12, 12)) == 2 * 2
    hidden = {"roberta": 5, "electra": 5, "distilbert": 3}[kind]  # embeddings, then 2 (distilbert: 1) per layer
    assert calls.count((6, 12, 32)) == 2 * hidden, calls


def test_stacked_passes_are_independent_draws_like_passes_one_by_one():
    model, tok = tiny_model()
    enc = encode_queries(tok, toy_queries(2, 10), max_length=32)
    batch = enc.batch(np.arange(enc.n_pairs))
    with fast_mc_dropout(model, seed=0), torch.inference_mode():
        one_call = mc_passes(model, batch, 4)
    with fast_mc_dropout(model, seed=0), torch.inference_mode():
        two_calls = mc_passes(model, batch, 4, passes_per_call=2)
    assert one_call.shape == two_calls.shape == (20, 4)
    assert np.abs((one_call - two_calls).numpy()).max() > 1e-6  # other calls, other draws
    assert len({tuple(c.tolist()) for c in one_call.T}) == 4  # every pass differs
    with pytest.raises(ValueError, match="passes_per_call must be"):
        mc_passes(model, batch, 2, passes_per_call=0)
