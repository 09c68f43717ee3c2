r"""MC dropout at about the cost of an evaluation pass: the same masks, drawn and applied faster.

:func:`fast_mc_dropout` runs a model's forward passes with dropout on at
every site, exactly as :func:`uncertank.nn.dropout_active` does (the method of
Gal & Ghahramani 2016 as Penha & Hauff 2021 use it, attention-probability
dropout included), but produces the masks and applies them differently:

- **Masks.** Two seeded NumPy SFC64 streams (one thread each) fill a
  reused float32 buffer, in chunks that stay in cache. An element is dropped
  when a uniform 32-bit word is below ``round(p * 2**32)``; the word's top
  byte decides alone except for one element in 256, which draws the other 24
  bits, so an element costs one random byte and is kept, independently of
  every other, with probability ``1 - p`` to within ``2**-33`` (torch's own
  ``bernoulli_`` compares a 24-bit uniform with ``p``). Kept values are
  scaled by ``1 / (1 - p)``. This replaces ``aten::bernoulli_``'s serial
  draw of a float per element.
- **Hidden-state sites** (every ``nn.Dropout``: embeddings, attention and
  feed-forward outputs, the ranker's head) stay in evaluation mode, where
  they return their input, and a forward hook multiplies the output by the
  scaled mask.
- **Attention-probability dropout.** With ``dropout_p > 0``, PyTorch's CPU
  scaled-dot-product attention does not dispatch to its fused flash kernel
  but to the unfused math path (a profile shows ``bmm``, ``_softmax``,
  ``where`` and ``bernoulli_`` in its place), and calling the flash kernel
  directly takes no boolean or dropout mask. Here the attention
  modules call a function registered in transformers' ``AttentionInterface``
  that computes ``softmax(q k^T / sqrt(d) + mask)`` into one reused buffer,
  multiplies it in place by the keep mask and multiplies by ``v``, scaling the
  (smaller) output by ``1 / (1 - p)``: the method's dropout of the attention
  probabilities, without renormalisation, in four passes over the scores.

Only what the method requires is redone per pass: every site draws a fresh
mask, so nothing after the embeddings' dropout can be shared; the attention
mask is built once per forward and reused by every layer.

Supported encoders are the transformers BERT family whose attention modules
hand their dropout to the attention interface (:data:`SUPPORTED_MODEL_TYPES`),
under any head built of ``nn.Dropout`` modules. :func:`fast_path_problem`
names what rules a model out; the caller then uses the reference path
(:func:`uncertank.nn.dropout_active`), which is also what runs on devices other
than the CPU (the fast path draws its masks on the host).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn
from torch.utils.hooks import RemovableHandle

from uncertank.validation import check_instance, check_positive_int

__all__ = ["SUPPORTED_MODEL_TYPES", "DropoutMasks", "fast_mc_dropout", "fast_path_problem"]

#: ``config.model_type`` of the transformers encoders whose attention hands
#: its dropout rate to the attention interface (checked against transformers 5's
#: modeling code) and whose other dropout sites are ``nn.Dropout`` modules.
SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta", "camembert", "electra", "distilbert")

_ATTENTION_KEY = "uncertank_mc_dropout"
#: Draws of at least this many elements are split over two threads.
_PARALLEL_FILL = 1 << 16
#: Elements drawn and converted at a time (256 KiB of float32, in the core's cache).
_CHUNK = 1 << 16
_OTHER_DROPOUTS = (nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)


class DropoutMasks:
    """Seeded keep masks of dropout: each element is kept (1) with probability ``1 - p``, else 0.

    The uniforms come from two NumPy SFC64 streams spawned from ``seed``: a
    draw of ``n`` elements takes its first ``n // 2`` from the first stream
    and the rest from the second (one thread each when torch uses more than
    one), so a seed and a sequence of shapes give the same masks on any
    machine and with any number of threads.

    Parameters
    ----------
    seed : int
        A non-negative integer.

    Examples
    --------
    >>> masks = DropoutMasks(seed=0)
    >>> m = masks.scaled((4, 1000), 0.5)
    >>> sorted(set(m.unique().tolist()))
    [0.0, 2.0]
    >>> masks.close()
    """

    def __init__(self, seed: int) -> None:
        self.seed = check_positive_int(seed, "seed", minimum=0)
        streams = np.random.SeedSequence(self.seed).spawn(2)
        self._rngs = [np.random.Generator(np.random.SFC64(s)) for s in streams]
        self._buffer = np.empty(0, dtype=np.float32)
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Stop the helper thread, if one was started."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _draw(self, rng: np.random.Generator, u: NDArray[np.float32], p: float, scale: float) -> None:
        """Fill ``u`` with the mask (0 or ``scale``), chunk by chunk in cache.

        An element is dropped when a uniform 32-bit word ``W`` is below
        ``t = round(p * 2**32)``. ``W``'s top byte decides alone unless it
        equals ``t``'s (one element in 256): only those draw the other 24 bits.
        So each element costs one random byte, and the keep probability is
        ``1 - t / 2**32``, within ``2**-33`` of ``1 - p``.
        """
        bits = rng.bit_generator
        t = round(p * 2**32)
        high, low = t >> 24, t & 0xFFFFFF
        keep = np.empty(min(u.size, _CHUNK), dtype=bool)
        for lo in range(0, u.size, _CHUNK):
            part = u[lo : lo + _CHUNK]
            word = bits.random_raw(-(-part.size // 8)).view(np.uint8)[: part.size]
            kept = np.greater(word, high, out=keep[: part.size])
            tie = np.flatnonzero(word == high)
            if tie.size:
                kept[tie] = (bits.random_raw(tie.size) & 0xFFFFFF) >= low
            part[...] = kept
            if scale != 1.0:
                part *= np.float32(scale)

    def _mask(self, shape: tuple[int, ...] | torch.Size, p: float, scale: float) -> torch.Tensor:
        n = math.prod(shape)
        if self._buffer.size < n:
            self._buffer = np.empty(n, dtype=np.float32)
        u = self._buffer[:n]
        half = n // 2
        first, second = u[:half], u[half:]
        if torch.get_num_threads() > 1 and n >= _PARALLEL_FILL:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="uncertank-masks")
            job = self._pool.submit(self._draw, self._rngs[1], second, p, scale)
            self._draw(self._rngs[0], first, p, scale)
            job.result()
        else:
            self._draw(self._rngs[0], first, p, scale)
            self._draw(self._rngs[1], second, p, scale)
        return torch.from_numpy(u).view(tuple(shape))  # cpu: the fast path runs on the CPU only

    def keep(self, shape: tuple[int, ...] | torch.Size, p: float) -> torch.Tensor:
        """A float32 mask of ``shape`` holding 1 (kept, probability ``1 - p``) or 0.

        The tensor is a view of a buffer that the next draw overwrites: use it
        before asking for another.
        """
        if p >= 1.0:
            return torch.zeros(tuple(shape))  # cpu: the fast path runs on the CPU only
        return self._mask(shape, p, 1.0)

    def scaled(self, shape: tuple[int, ...] | torch.Size, p: float) -> torch.Tensor:
        """:meth:`keep` times ``1 / (1 - p)`` (in float32): the multiplier of inverted dropout."""
        return self._mask(shape, p, 1.0 / (1.0 - p))

    def apply(self, x: torch.Tensor, p: float) -> torch.Tensor:
        """Dropout of ``x`` with rate ``p`` (a new tensor; ``x`` is left as it is)."""
        if p <= 0.0:
            return x
        if p >= 1.0:
            return torch.zeros_like(x)
        return torch.mul(x, self.scaled(x.shape, p).to(x.dtype))


class _Session:
    """What one :func:`fast_mc_dropout` block shares between its hooks and attention calls."""

    def __init__(self, masks: DropoutMasks) -> None:
        self.masks = masks
        self.scores = torch.empty(0)  # cpu: the fast path runs on the CPU only

    def scores_buffer(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        n = math.prod(shape)
        if self.scores.numel() < n or self.scores.dtype != dtype:
            self.scores = torch.empty(n, dtype=dtype)  # cpu: the fast path runs on the CPU only
        return self.scores[:n].view(shape)


_SESSIONS: dict[int, _Session] = {}


def _mc_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,  # transformers attention interface: each keyword of its own type
) -> tuple[torch.Tensor, None]:
    """Attention with dropout of its probabilities, in the signature of transformers' attention interface.

    ``query``, ``key``, ``value`` have shape (batch, heads, length, head_dim);
    ``attention_mask`` is additive, of shape (batch, 1, q_length, k_length),
    or None. Returns the output in shape (batch, length, heads, head_dim).
    Modules outside a :func:`fast_mc_dropout` block, and passes without
    dropout, go to transformers' own scaled-dot-product attention.
    """
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    session = _SESSIONS.get(id(module))
    if session is None or dropout <= 0.0 or query.device.type != "cpu":
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    scale = query.shape[-1] ** -0.5 if scaling is None else scaling
    if torch.is_grad_enabled():  # the same computation, differentiable (no reused buffers)
        probs = torch.softmax(
            torch.matmul(query * scale, key.transpose(-1, -2)) + (0.0 if attention_mask is None else attention_mask),
            dim=-1,
        )
        probs = probs * session.masks.scaled(probs.shape, dropout) if dropout < 1.0 else torch.zeros_like(probs)
        return torch.matmul(probs, value).transpose(1, 2), None
    b, h, lq, d = query.shape
    lk = key.shape[-2]
    q = torch.empty((b, h, lq, d), dtype=query.dtype, device=query.device)
    torch.mul(query, scale, out=q)  # scaled and laid out for bmm in one pass
    scores = session.scores_buffer((b, h, lq, lk), query.dtype)
    flat = scores.view(b * h, lq, lk)
    torch.bmm(q.view(b * h, lq, d), key.reshape(b * h, lk, d).transpose(1, 2), out=flat)
    if attention_mask is not None:
        scores.add_(attention_mask)
    torch.ops.aten._softmax.out(flat, -1, False, out=flat)
    if dropout >= 1.0:
        flat.zero_()
    else:
        flat.mul_(session.masks.keep(flat.shape, dropout))
    out = torch.bmm(flat, value.reshape(b * h, lk, value.shape[-1])).view(b, h, lq, -1)
    if dropout < 1.0:
        out.mul_(1.0 / (1.0 - dropout))
    return out.transpose(1, 2), None


def _register_attention() -> None:
    """Add :func:`_mc_attention` (and its mask format, additive floats) to transformers' registries, once."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    if _ATTENTION_KEY not in AttentionInterface._global_mapping:
        AttentionInterface.register(_ATTENTION_KEY, _mc_attention)
    if _ATTENTION_KEY not in AttentionMaskInterface._global_mapping:
        AttentionMaskInterface.register(_ATTENTION_KEY, eager_mask)


def _is_transformers_model(module: nn.Module) -> bool:
    config = getattr(module, "config", None)
    return type(module).__module__.startswith("transformers.") and hasattr(config, "model_type")


def fast_path_problem(model: nn.Module) -> str | None:
    """Why :func:`fast_mc_dropout` cannot run ``model``, or None when it can.

    A model qualifies when its dropout sites are all ``nn.Dropout`` modules,
    apart from the attention of transformers encoders of
    :data:`SUPPORTED_MODEL_TYPES` (which hand their rate to the attention
    interface), and no module keeps a dropout rate of its own as a float
    (which it would apply with ``F.dropout``).

    Examples
    --------
    >>> from torch import nn
    >>> fast_path_problem(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))) is None
    True
    >>> fast_path_problem(nn.Sequential(nn.AlphaDropout(0.1)))
    'model has an AlphaDropout at 0, which the fast path does not draw'
    >>> fast_path_problem(nn.Sequential(nn.Linear(2, 2, device="meta"), nn.Dropout(0.1)))
    'model is on meta; the fast path runs on the CPU (its masks are drawn there)'
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    placed = next(itertools.chain(model.parameters(), model.buffers()), None)
    if placed is not None and placed.device.type != "cpu":
        return f"model is on {placed.device}; the fast path runs on the CPU (its masks are drawn there)"
    for name, module in model.named_modules():
        where = name or "the top level"
        if isinstance(module, _OTHER_DROPOUTS) or (isinstance(module, nn.Dropout) and type(module) is not nn.Dropout):
            return f"model has an {type(module).__name__} at {where}, which the fast path does not draw"
        if _is_transformers_model(module):
            config = getattr(module, "config", None)
            model_type = getattr(config, "model_type", None)
            if model_type not in SUPPORTED_MODEL_TYPES:
                return (
                    f"model has a transformers {type(module).__name__} (model_type {model_type!r}) at {where}; "
                    f"the fast path supports {', '.join(SUPPORTED_MODEL_TYPES)}"
                )
            if getattr(config, "is_decoder", False):
                return f"model has a decoder ({type(module).__name__} at {where}); the fast path supports encoders"
        floats = [k for k, v in vars(module).items() if "dropout" in k and isinstance(v, float) and v > 0]
        if floats:
            return (
                f"{type(module).__name__} at {where} keeps a dropout rate as a float ({floats[0]}), "
                "which the fast path cannot intercept"
            )
    return None


def _attention_modules(model: nn.Module) -> list[nn.Module]:
    """The attention modules of transformers: they read their ``dropout`` child's rate and pass it to the interface."""
    return [
        m
        for m in model.modules()
        if type(m).__module__.startswith("transformers.models.")
        and type(m).__name__.endswith("Attention")
        and isinstance(getattr(m, "dropout", None), nn.Dropout)
    ]


@contextlib.contextmanager
def fast_mc_dropout(
    model: nn.Module, *, seed: int, exclude: Iterable[nn.Module] = ()
) -> Iterator[DropoutMasks]:
    """Evaluation mode with dropout at every site, the masks drawn by :class:`DropoutMasks`.

    Inside the block ``model(...)`` samples from the same distribution as
    under :func:`uncertank.nn.dropout_active`: every site keeps each element with
    probability ``1 - p`` and scales it by ``1 / (1 - p)``, attention
    probabilities included. The model's modes, attention implementation and
    hooks are restored on exit.

    Parameters
    ----------
    model : nn.Module
        A model :func:`fast_path_problem` accepts, on the CPU.
    seed : int
        Seeds the masks: the same seed and inputs give the same passes.
    exclude : iterable of nn.Module
        Submodules whose sites stay off (e.g. the lower layers under
        ``mc_layers``).

    Yields
    ------
    DropoutMasks
        The masks' source.

    Raises
    ------
    ValueError
        When :func:`fast_path_problem` finds a reason the model is not supported.
    """
    problem = fast_path_problem(model)
    if problem is not None:
        raise ValueError(f"fast_mc_dropout cannot run this model: {problem}; use uncertank.nn.dropout_active")
    _register_attention()
    masks = DropoutMasks(seed)
    session = _Session(masks)
    off = {id(m) for e in exclude for m in e.modules()}
    before = {m: m.training for m in model.modules()}
    configs = {
        id(cfg): (cfg, cfg._attn_implementation)
        for cfg in (cast(Any, m).config for m in model.modules() if _is_transformers_model(m))
    }
    hooks: list[RemovableHandle] = []
    attention = [m for m in _attention_modules(model) if id(m) not in off]
    model.eval()
    try:
        for config, _ in configs.values():
            config._attn_implementation = _ATTENTION_KEY
        for m in attention:
            m.training = True
            _SESSIONS[id(m)] = session
        for m in model.modules():
            if type(m) is nn.Dropout and id(m) not in off:
                hooks.append(m.register_forward_hook(_hidden_hook(masks)))
        yield masks
    finally:
        for hook in hooks:
            hook.remove()
        masks.close()
        for m in attention:
            _SESSIONS.pop(id(m), None)
        for config, implementation in configs.values():
            config._attn_implementation = implementation
        for m, flag in before.items():
            m.training = flag


def _hidden_hook(masks: DropoutMasks) -> Callable[[nn.Module, tuple[object, ...], torch.Tensor], torch.Tensor]:
    def hook(module: nn.Module, args: tuple[object, ...], output: torch.Tensor) -> torch.Tensor:
        return masks.apply(output, float(module.p))  # type: ignore[arg-type]

    return hook
