"""Batched scoring: one model, T MC-dropout passes, or M ensemble members.

All three go through :func:`score_probabilities`: the pairs are sorted by
length (less padding), cut into batches, and every batch is encoded once and
fed to each model ``n_passes`` times, so the work beyond one deterministic
pass is exactly the extra passes. Under several processes (``accelerate
launch``, ``torchrun``) each process scores a contiguous shard of the sorted
pairs and the shards are gathered, so every process returns the full result.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from uncertank.nn import runtime
from uncertank.nn.dropout import fast_mc_dropout, fast_path_problem
from uncertank.nn.inputs import EncodedPairs
from uncertank.nn.runtime import progress
from uncertank.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_instances,
    check_name,
    check_ndim,
    check_positive_int,
    check_seed,
)

if TYPE_CHECKING:
    from accelerate import Accelerator

__all__ = [
    "MC_IMPLEMENTATIONS",
    "PASS_TOKENS",
    "check_active_dropout",
    "dropout_active",
    "dropout_owners",
    "dropout_rates",
    "mc_implementation",
    "mc_passes",
    "model_device",
    "output_probabilities",
    "score_batches",
    "score_probabilities",
]

#: How :func:`score_probabilities` runs MC dropout: ``"fast"`` (:func:`uncertank.nn.fast_mc_dropout`
#: where the model and device allow it, the reference otherwise) or ``"reference"`` (:func:`dropout_active`).
MC_IMPLEMENTATIONS: tuple[Literal["fast", "reference"], ...] = ("fast", "reference")

_DROPOUT_TYPES = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
_MODE_SENSITIVE = (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)


def dropout_owners(model: nn.Module) -> list[nn.Module]:
    """The modules whose training flag turns a dropout on.

    These are every dropout module, every module holding a dropout module as
    a direct child (attention modules in transformers 5 read their *own*
    ``training`` flag to pass ``dropout_p`` to the attention kernel), and every
    module with a positive float attribute whose name contains ``dropout``
    (attention modules that keep the rate as a float).

    Raises
    ------
    ValueError
        When one of them also changes behaviour in training mode for another
        reason (batch or instance norm); BERT-style encoders have none.
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    owners: list[nn.Module] = []
    for module in model.modules():
        own = isinstance(module, _DROPOUT_TYPES)
        own = own or any(isinstance(c, _DROPOUT_TYPES) for c in module.children())
        own = own or any(
            "dropout" in k and isinstance(v, float) and v > 0 for k, v in vars(module).items()
        )
        if own:
            if isinstance(module, _MODE_SENSITIVE):
                raise ValueError(
                    f"model has a {type(module).__name__} that owns a dropout; MC dropout would "
                    "also switch its batch statistics to training mode"
                )
            owners.append(module)
    return owners


def dropout_rates(model: nn.Module) -> list[float]:
    """The rates of every dropout site in ``model``: dropout modules and float ``*dropout*`` attributes.

    Examples
    --------
    >>> from torch import nn
    >>> dropout_rates(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1), nn.Dropout(0.0)))
    [0.1, 0.0]
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    rates: list[float] = []
    for module in model.modules():
        if isinstance(module, _DROPOUT_TYPES):
            rates.append(float(module.p))
        rates.extend(float(v) for k, v in vars(module).items() if "dropout" in k and isinstance(v, float))
    return rates


def check_active_dropout(model: nn.Module) -> None:
    """Raise ValueError unless some dropout site of ``model`` has a positive rate.

    With every rate 0, MC dropout's passes are all the same model: their
    variance is 0 (or rounding noise, about 1e-16), which would read as a
    certain model rather than as no uncertainty estimate at all.
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    rates = dropout_rates(model)
    if not any(r > 0 for r in rates):
        found = f"its {len(rates)} dropout sites all have rate 0" if rates else "it has no dropout site"
        raise ValueError(
            f"MC dropout needs dropout: {found}, so every pass would give the same scores (variance 0). "
            "Give the model positive dropout rates (for a Hugging Face model, hidden_dropout_prob and "
            "attention_probs_dropout_prob in its config.json, as during its training), or estimate "
            "uncertainty another way (an ensemble, a post-hoc GP head)"
        )


@contextlib.contextmanager
def dropout_active(model: nn.Module) -> Iterator[list[nn.Module]]:
    """Evaluation mode everywhere except the dropout sites, attention included.

    Only the modules returned by :func:`dropout_owners` go to training mode,
    so dropout is active at every site (Gal & Ghahramani 2016; Penha & Hauff
    2021, section 3.2) and nothing else changes. The previous modes are
    restored on exit.

    Yields
    ------
    list of nn.Module
        The modules switched to training mode.
    """
    before = {m: m.training for m in model.modules()}
    model.eval()
    owners = dropout_owners(model)
    for m in owners:
        m.training = True
    try:
        yield owners
    finally:
        for m, flag in before.items():
            m.training = flag


def _stacked_call(models: Sequence[nn.Module]) -> Callable[[dict[str, torch.Tensor]], torch.Tensor]:
    """One call that evaluates all ``models`` (same architecture) with ``torch.func.vmap``."""
    from torch.func import functional_call, stack_module_state, vmap

    params, buffers = stack_module_state(list(models))
    base = copy.deepcopy(models[0]).to("meta")

    def one(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], batch: dict[str, torch.Tensor]) -> torch.Tensor:
        out: torch.Tensor = functional_call(base, (p, b), (), batch)
        return out

    batched = vmap(one, in_dims=(0, 0, None), randomness="different")

    def call(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        with _vmap_attention(batch["input_ids"].device):
            return batched(params, buffers, batch)

    return call


def _vmap_attention(device: torch.device) -> contextlib.AbstractContextManager[None]:
    """The attention kernel a ``vmap`` over stacked members may use on ``device``.

    Off the CPU, ``scaled_dot_product_attention``'s fused kernels (flash,
    memory-efficient, cuDNN) check the attention mask's batch dimension
    against the query's, and under ``vmap`` the query carries the members'
    axis folded into its batch while the mask, shared by all members, does
    not: "attn_bias: wrong shape (batch dimension)" (seen on an H100).
    PyTorch's math kernel, built of ordinary batched operations, broadcasts
    the mask. The CPU accepts the stacked call with its default kernels.
    """
    if device.type == "cpu":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


def model_device(model: nn.Module) -> torch.device:
    """The device of ``model``'s first parameter or buffer; the CPU for a module that holds neither.

    Examples
    --------
    >>> from torch import nn
    >>> model_device(nn.Linear(2, 1))
    device(type='cpu')
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        return tensor.device
    return torch.device("cpu")


def output_probabilities(output: torch.Tensor) -> torch.Tensor:
    """P(relevant) from a model's output, the conversion every scoring path uses.

    Parameters
    ----------
    output : Tensor of shape (..., 2), (..., 1) or (batch,)
        Two logits (the cross-encoder's head): the softmax of the second; one
        logit (a single-output head such as SNGP's): its sigmoid.

    Returns
    -------
    Tensor of shape (...,) or (batch,)
        float32 probabilities.

    Examples
    --------
    >>> import torch
    >>> output_probabilities(torch.tensor([[0.0, 0.0], [0.0, 50.0]])).tolist()
    [0.5, 1.0]
    >>> output_probabilities(torch.tensor([0.0])).tolist()
    [0.5]
    """
    check_instance(output, "output", torch.Tensor, "a torch.Tensor")
    out = output.float()
    if out.ndim >= 2 and out.shape[-1] == 2:
        return torch.softmax(out, dim=-1)[..., 1]
    if out.ndim >= 2 and out.shape[-1] == 1:
        return torch.sigmoid(out[..., 0])
    if out.ndim == 1:
        return torch.sigmoid(out)
    raise ValueError(
        f"output must have shape (..., 2) (two logits), (..., 1) or (batch,) (one logit); got {tuple(output.shape)}"
    )


def score_batches(
    encoded: EncodedPairs,
    fn: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    *,
    batch_size: int = 64,
    device: torch.device | None = None,
    accelerator: Accelerator | None = None,
    show_progress: bool = False,
    desc: str = "scoring",
) -> NDArray[np.float64]:
    """Run ``fn`` over every pair in length-sorted batches; the machinery of all scoring.

    The pairs are sorted by length (less padding) and cut into batches; each
    batch is padded once and handed to ``fn``. Under several processes each
    process runs a contiguous shard of the sorted pairs and the shards are
    gathered, so every process returns the full result, in input order. The
    caller sets the modes (eval, MC dropout, ``torch.inference_mode``); this
    function adds bf16 autocast on CUDA.

    A batch that runs out of the device's memory (``torch.OutOfMemoryError``)
    is run again at half the size, and the rest of the pass keeps the smaller
    size, down to one pair (whose own out-of-memory error is raised), so a
    large ``batch_size`` fits itself to the device: the scores are the same
    up to the float rounding of another batch layout (dropout draws of a
    batch run again are drawn anew).

    Parameters
    ----------
    encoded : EncodedPairs
        The ``n_pairs`` pairs.
    fn : callable
        ``fn(batch) -> Tensor of shape (b, k)`` for a batch dict of
        ``input_ids``, ``attention_mask`` and ``token_type_ids`` of shape
        (b, length), on the device.
    batch_size : int
        Pairs per call.
    device : torch.device, optional
        Where to run on one process (CPU by default); ignored under several processes.
    accelerator : accelerate.Accelerator, optional
        Gives the process index, count and device, and gathers the shards.
    show_progress : bool
        Show a progress bar on the main process.
    desc : str
        The bar's label.

    Returns
    -------
    ndarray of shape (n_pairs, k)
        Row ``i`` is ``fn``'s output for pair ``i``, as float64.
    """
    check_instance(encoded, "encoded", EncodedPairs, "EncodedPairs (uncertank.nn.encode_pairs)")
    check_callable(fn, "fn", "a function of a batch dict returning a tensor")
    batch_size = check_positive_int(batch_size, "batch_size")
    _check_placement(device, accelerator)
    check_bool(show_progress, "show_progress")
    check_name(desc, "desc")
    world, rank = 1, 0
    if accelerator is not None:
        world, rank = int(accelerator.num_processes), int(accelerator.process_index)
        device = accelerator.device
    device = device or torch.device("cpu")
    n = encoded.n_pairs
    order = np.argsort(encoded.lengths, kind="stable")
    shard = -(-n // world)
    padded = np.concatenate([order, np.full(shard * world - n, order[-1] if n else 0, dtype=np.int64)])
    mine = padded[rank * shard : (rank + 1) * shard]
    parts: list[torch.Tensor] = []
    with progress(mine.size, desc, enabled=show_progress and rank == 0) as bar:
        lo = 0
        while lo < mine.size:
            idx = mine[lo : lo + batch_size]
            batch = encoded.batch(idx, device)
            try:
                with runtime.autocast(device):
                    value = fn(batch)
            except torch.OutOfMemoryError:
                if idx.size == 1:
                    raise
                del batch
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                batch_size = max(1, idx.size // 2)  # this batch again, and the rest, at half the size
                continue
            check_instance(value, "fn's output", torch.Tensor, "a torch.Tensor")
            if value.ndim != 2 or value.shape[0] != idx.size:
                raise ValueError(
                    f"fn must return a tensor of shape ({idx.size}, k) for a batch of {idx.size} pairs; "
                    f"got {tuple(value.shape)}"
                )
            parts.append(value.detach().float().cpu())
            bar.update(idx.size)
            lo += idx.size
    out = torch.cat(parts) if parts else torch.empty((0, 0))  # cpu: the scores are gathered on the CPU
    if world > 1 and accelerator is not None:
        out = accelerator.gather(out.to(device)).cpu()
    out = out[:n]
    result = np.empty((n, out.shape[1] if out.ndim == 2 else 0), dtype=np.float64)
    result[order] = out.numpy().astype(np.float64)
    return result


def score_probabilities(
    models: Sequence[nn.Module],
    encoded: EncodedPairs,
    *,
    n_passes: int = 1,
    mc: bool = False,
    batch_size: int = 64,
    device: torch.device | None = None,
    accelerator: Accelerator | None = None,
    seed: int | None = None,
    stacked: bool = False,
    mc_impl: Literal["fast", "reference"] = "fast",
    show_progress: bool = False,
    desc: str = "scoring",
) -> NDArray[np.float64]:
    """P(relevant) of every pair under every model and pass.

    Every batch is encoded once and fed to each model ``n_passes`` times
    (:func:`score_batches`); each output goes through
    :func:`output_probabilities`, so two-logit and one-logit heads both work.

    Parameters
    ----------
    models : sequence of nn.Module
        One model, or the members of an ensemble: ``model(**batch)`` returns
        logits (see :func:`output_probabilities`).
    encoded : EncodedPairs
        The ``n_pairs`` pairs to score.
    n_passes : int
        Forward passes per model (T for MC dropout).
    mc : bool
        Run with dropout on at every site (:func:`dropout_active`); otherwise in
        evaluation mode. A model whose dropout rates are all 0 is refused
        (:func:`check_active_dropout`).
    batch_size : int
        Pairs per forward pass.
    seed : int, optional
        Seeds the dropout masks (per process: ``seed + process_index``)
        without touching the global generator.
    stacked : bool
        Evaluate all models in one ``torch.func.vmap`` call per batch
        (needs identical architectures) instead of one call per model.
    mc_impl : {"fast", "reference"}
        With ``mc=True``: ``"fast"`` draws the same masks' distribution
        faster (:func:`uncertank.nn.fast_mc_dropout`), several passes of a
        batch per call (:func:`mc_passes`), where :func:`mc_implementation`
        allows it (a supported encoder on the CPU, not ``stacked``) and
        falls back to the reference otherwise;
        ``"reference"`` always switches the dropout modules to training mode
        (:func:`dropout_active`). The two give different draws for one seed.
    device : torch.device, optional
        Where to run on one process; by default where the first model's
        weights are (:func:`model_device`), so a model on the GPU stays
        there. Ignored under several processes.
    accelerator, show_progress, desc
        As in :func:`score_batches`.

    Returns
    -------
    ndarray of shape (n_models * n_passes, n_pairs)
        Row ``m * n_passes + t`` is pass ``t`` of model ``m``: a joint draw
        over all pairs.
    """
    models = check_instances(models, "models", nn.Module, "a torch.nn.Module")
    if not models:
        raise ValueError("models must hold at least one model; got none")
    check_instance(encoded, "encoded", EncodedPairs, "EncodedPairs (uncertank.nn.encode_pairs)")
    n_passes = check_positive_int(n_passes, "n_passes")
    mc = check_bool(mc, "mc")
    check_positive_int(batch_size, "batch_size")
    _check_placement(device, accelerator)
    seed = check_seed(seed, "seed", generator=False, maximum=2**63 - 1)
    stacked = check_bool(stacked, "stacked")
    mc_impl = check_choice(mc_impl, "mc_impl", MC_IMPLEMENTATIONS)
    check_bool(show_progress, "show_progress")
    check_name(desc, "desc")
    if accelerator is not None:
        device = accelerator.device
    device = device or model_device(models[0])
    rank = int(accelerator.process_index) if accelerator is not None else 0
    for m in models:
        m.to(device)
        if mc:
            check_active_dropout(m)
    fast = mc and mc_implementation(models, device, mc_impl=mc_impl, stacked=stacked) == "fast"
    rng = torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])
    with contextlib.ExitStack() as stack:
        stack.enter_context(rng)
        if seed is not None:
            torch.manual_seed(int(seed) + rank)
        if fast:
            # Unseeded, the masks' seed comes from torch's generator, so torch.manual_seed still governs them.
            base = int(seed) + rank if seed is not None else int(torch.randint(0, 2**62, ()).item())  # cpu: a seed
            for i, m in enumerate(models):
                stack.enter_context(fast_mc_dropout(m, seed=base if i == 0 else _member_seed(base, i)))
        else:
            for m in models:
                stack.enter_context(dropout_active(m) if mc else _eval_mode(m))
        stack.enter_context(torch.inference_mode())
        call = _stacked_call(models) if stacked and len(models) > 1 else None

        def fn(batch: dict[str, torch.Tensor]) -> torch.Tensor:
            if call is not None:
                # (M, B, ...) per pass -> columns ordered m * n_passes + t
                passes = [output_probabilities(call(batch)) for _ in range(n_passes)]
                return torch.stack(passes, dim=1).reshape(-1, passes[0].shape[-1]).T
            if fast:
                return torch.cat([mc_passes(model, batch, n_passes) for model in models], dim=1)
            cols = [output_probabilities(model(**batch)) for model in models for _ in range(n_passes)]
            return torch.stack(cols, dim=1)

        out = score_batches(
            encoded, fn, batch_size=batch_size, device=device, accelerator=accelerator,
            show_progress=show_progress, desc=desc,
        )
    return np.ascontiguousarray(out.T)


#: Tokens (pairs x padded length) in one call of :func:`mc_passes`: the passes of a short batch are
#: stacked into one call up to this size (one call's overhead for several passes). Larger stacks are
#: slower on a quiet 2-core CPU (64 pairs x 74 tokens, T = 10: 14.5x bert stacked 6 per call against
#: 12.2x one per call, benchmarks/RESULTS.md), so a batch of the default size runs one pass per call.
PASS_TOKENS = 1 << 12


def mc_passes(
    model: nn.Module, batch: dict[str, torch.Tensor], n_passes: int, *, passes_per_call: int | None = None
) -> torch.Tensor:
    """P(relevant) of ``n_passes`` stochastic passes over one batch, several passes per call.

    The batch is repeated ``passes_per_call`` times along its first axis and
    scored in one call, so each copy draws its own masks: the passes are
    independent, as when run one by one, and cost less on the CPU (the
    benchmark in ``benchmarks/bench_inference.py`` measures both). Run it
    with the dropout sites on (:func:`uncertank.nn.fast_mc_dropout`).

    Parameters
    ----------
    model : nn.Module
        ``model(**batch)`` returns logits (see :func:`output_probabilities`).
    batch : dict of Tensor of shape (b, length)
    n_passes : int
    passes_per_call : int, optional
        Copies per call; by default as many as fit in :data:`PASS_TOKENS`
        tokens (at least 1). 1 runs the passes one by one.

    Returns
    -------
    Tensor of shape (b, n_passes)
        Column ``t`` is pass ``t``.
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    _check_batch(batch)
    n_passes = check_positive_int(n_passes, "n_passes")
    rows, length = batch["input_ids"].shape
    if passes_per_call is None:
        passes_per_call = max(1, PASS_TOKENS // max(1, rows * length))
    per_call = min(n_passes, check_positive_int(passes_per_call, "passes_per_call"))
    cols: list[torch.Tensor] = []
    for done in range(0, n_passes, per_call):
        k = min(per_call, n_passes - done)
        stacked = batch if k == 1 else {key: v.repeat(k, *([1] * (v.ndim - 1))) for key, v in batch.items()}
        cols.append(output_probabilities(model(**stacked)).view(k, rows).T)
    return torch.cat(cols, dim=1)


def mc_implementation(
    models: Sequence[nn.Module],
    device: torch.device,
    *,
    mc_impl: Literal["fast", "reference"] = "fast",
    stacked: bool = False,
) -> Literal["fast", "reference"]:
    """Which MC-dropout implementation :func:`score_probabilities` runs for ``models`` on ``device``.

    ``"fast"`` when it was asked for, the device is the CPU, the models are
    not evaluated ``stacked`` (several at once) and
    :func:`uncertank.nn.fast_path_problem` accepts every model; otherwise
    ``"reference"``: correctness first, an unsupported architecture always
    gets the reference path.
    """
    models = check_instances(models, "models", nn.Module, "a torch.nn.Module")
    check_instance(device, "device", torch.device, "a torch.device")
    mc_impl = check_choice(mc_impl, "mc_impl", MC_IMPLEMENTATIONS)
    stacked = check_bool(stacked, "stacked")
    if mc_impl == "reference" or device.type != "cpu" or (stacked and len(models) > 1):
        return "reference"
    return "fast" if all(fast_path_problem(m) is None for m in models) else "reference"


def _check_placement(device: object, accelerator: object) -> None:
    """Raise unless ``device`` is None or a torch.device, and ``accelerator`` None or an accelerate.Accelerator."""
    if device is not None:
        check_instance(device, "device", torch.device, "a torch.device or None")
    if accelerator is not None:
        from accelerate import Accelerator

        check_instance(accelerator, "accelerator", Accelerator, "an accelerate.Accelerator or None")


def _check_batch(batch: object) -> None:
    """Raise unless ``batch`` is a dict of tensors holding ``input_ids`` of shape (batch, length)."""
    checked: dict[object, object] = check_instance(
        batch, "batch", dict, "a dict of tensors (input_ids, attention_mask, token_type_ids)"
    )
    for key, value in checked.items():
        check_instance(value, f"batch[{key!r}]", torch.Tensor, "a torch.Tensor")
    if "input_ids" not in checked:
        raise ValueError(f"batch must hold 'input_ids'; got the keys {sorted(map(str, checked))}")
    check_ndim(checked["input_ids"], "batch['input_ids']", 2)


def _member_seed(base: int, index: int) -> int:
    """A seed for model ``index`` of several, independent of ``base``'s stream."""
    return int(np.random.SeedSequence([base, index]).generate_state(1, np.uint64)[0] >> 1)


@contextlib.contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    before = {m: m.training for m in model.modules()}
    model.eval()
    try:
        yield
    finally:
        for m, flag in before.items():
            m.training = flag
