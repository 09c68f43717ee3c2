"""MC dropout: T stochastic passes of a cross-encoder with dropout on at every site (or in its top layers)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn
from typing_extensions import Self

from uncertank import CostRates, Predictions, QuerySet
from uncertank.nn import (
    EncodedPairs,
    NeuralRanker,
    SamplingRanker,
    dropout_active,
    fast_mc_dropout,
    get_accelerator,
    mc_implementation,
    mc_passes,
    output_probabilities,
    score_batches,
)
from uncertank.validation import check_positive_int

__all__ = ["MCDropoutRanker"]


class MCDropoutRanker(SamplingRanker, NeuralRanker):
    """A cross-encoder whose dropout stays on at test time (Gal & Ghahramani, ICML 2016).

    Penha & Hauff (EACL 2021, section 3.2) fine-tune the BERT ranker as usual
    and then score every pair ``T`` times with dropout active; the mean of
    the passes is the prediction and their spread its uncertainty. Dropout is
    switched on at *every* site, attention included: with transformers 5 the
    attention kernels read their own module's training flag, so switching on
    only the ``nn.Dropout`` modules would leave attention dropout off (see
    :func:`uncertank.nn.dropout_active`; a test pins it). Nothing else changes
    mode (BERT has no batch norm).

    Each pass is one joint draw over every pair: row ``t`` of
    :meth:`predict_samples` holds pass ``t``. Passes run batch by batch (the
    batch is encoded once and run ``T`` times), never one example at a time.

    With ``mc_layers=k``, dropout stays on only in the top ``k`` encoder
    layers and the head; the embeddings and the lower layers run once per
    batch, in eval mode, and the T passes reuse their output, so a pass
    costs about ``k / n_layers`` of a full one. ``k = 0`` keeps dropout in
    the head only: the whole encoder runs once per batch and each pass is
    the head alone. ``k`` equal to the number of layers (or ``None``) is
    plain MC dropout.

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        As in :class:`uncertank.nn.NeuralRanker`.
    n_passes : int
        T, the number of stochastic passes (10 by default, as in the paper).
    mc_layers : int, optional
        Dropout only in the top ``mc_layers`` encoder layers (and the head),
        an integer from 0 (the head only) to the number of layers; all
        layers by default. Needs a BERT-style encoder (``encoder.encoder.layer``).
    **params
        Every other parameter of :class:`uncertank.nn.NeuralRanker`; ``seed``
        also seeds the dropout masks, so predictions are reproducible.
    """

    name = "mc_dropout"
    samples_param = "n_passes"

    def __init__(
        self, backbone: Any = None, *, n_passes: int = 10, mc_layers: int | None = None, **params: Any
    ) -> None:
        self.n_passes = n_passes
        self.mc_layers = mc_layers
        super().__init__(backbone, **params)

    def _check_params(self) -> None:
        super()._check_params()
        check_positive_int(self.n_passes, "n_passes")
        if self.mc_layers is not None:
            check_positive_int(self.mc_layers, "mc_layers", minimum=0)

    @classmethod
    def from_ranker(  # type: ignore[override]
        cls, ranker: NeuralRanker, *, n_passes: int = 10, mc_layers: int | None = None, **params: Any
    ) -> Self:
        """Share the weights of a fitted :class:`~uncertank.nn.NeuralRanker` (``bert``).

        The new ranker takes ``ranker``'s parameters; ``params`` (any of the
        constructor's, e.g. ``eval_batch_size`` or ``show_progress``) replace them.

        Raises
        ------
        ValueError
            When ``mc_layers`` is not an integer from 0 to the number of the
            model's encoder layers (or the model has no ``encoder.layer`` list).
        """
        if not isinstance(ranker, NeuralRanker):
            raise TypeError(f"ranker must be a NeuralRanker (such as bert); got {type(ranker).__name__}")
        shared = set(NeuralRanker.param_names()) - {"name", "backbone"}
        inherited = {k: v for k, v in ranker.get_params().items() if k in shared}
        new = cls(ranker.backbone, n_passes=n_passes, mc_layers=mc_layers, **{**inherited, **params})
        new.read_pairs_like(ranker, keep=params)
        new.model, new.tokenizer_, new.history_ = ranker.build_model(), ranker.tokenizer_, ranker.history_
        new.weights_source_ = ranker.weights_source_
        if mc_layers is not None:
            _split_layers(new.model, mc_layers)
        return new

    def sample_probabilities(self, queries: QuerySet, n_samples: int) -> NDArray[np.float64]:
        """The passes of :meth:`predict_samples` (``n_passes`` by default), shape (n_samples, n_pairs)."""
        if self.mc_layers is None:
            return self.score(queries, n_passes=n_samples, mc=True, seed=self.seed)
        return self.score_top_layers(queries, n_passes=n_samples, mc_layers=self.mc_layers)

    def score_top_layers(
        self, queries: QuerySet | EncodedPairs, *, n_passes: int, mc_layers: int
    ) -> NDArray[np.float64]:
        """T passes with dropout only in the top ``mc_layers`` layers and the head; shape (n_passes, n_pairs).

        Per batch, the first pass runs the whole model and keeps the output of
        the last lower layer; the other passes replay it and run only the top
        layers and the head (only the head when ``mc_layers`` is 0: every
        layer is replayed). The lower layers (and the embeddings) are in
        eval mode. The passes run on the same implementation as :meth:`score`
        (:func:`uncertank.nn.mc_implementation`: the fast masks on the CPU
        for supported encoders), seeded by ``seed`` in the same order of
        draws, so ``mc_layers`` equal to the number of layers gives exactly
        the passes of ``score(queries, n_passes=..., mc=True, seed=seed)``.

        Parameters
        ----------
        queries : QuerySet or EncodedPairs
            The pairs to score, or their token sequences already encoded
            (:meth:`encode`), e.g. to time the network alone.
        n_passes : int
            T.
        mc_layers : int
            From 0 (dropout in the head only) to the number of encoder layers.

        Raises
        ------
        ValueError
            When the encoder has no ``encoder.layer`` list, or ``mc_layers``
            is not an integer from 0 to its number of layers.
        """
        model: Any = self.build_model()
        layers, n_lower = _split_layers(model, mc_layers)
        n_passes = check_positive_int(n_passes, "n_passes")
        enc = queries if isinstance(queries, EncodedPairs) else self.encode(queries)
        acc = get_accelerator(self.device)
        model.to(acc.device)
        lower: list[nn.Module] = [model.encoder.embeddings, *layers[:n_lower]] if n_lower else []

        fast = mc_implementation([model], acc.device) == "fast"

        def fn(batch: dict[str, torch.Tensor]) -> torch.Tensor:
            if not n_lower:
                if fast:  # as score() does, so that mc_layers = all gives its passes
                    return mc_passes(model, batch, n_passes)
                return torch.stack([output_probabilities(model(**batch)) for _ in range(n_passes)], dim=1)
            kept: list[torch.Tensor] = []
            hook = layers[n_lower - 1].register_forward_hook(lambda mod, args, out: kept.append(out))
            try:
                passes = [output_probabilities(model(**batch))]
            finally:
                hook.remove()
            with _replay(model.encoder, layers, n_lower, kept[0]):
                passes += [output_probabilities(model(**batch)) for _ in range(n_passes - 1)]
            return torch.stack(passes, dim=1)

        rank = int(acc.process_index)
        device = acc.device
        seed = int(self.seed) + rank
        rng = torch.random.fork_rng(devices=[device] if device.type == "cuda" else [])
        with contextlib.ExitStack() as stack:
            stack.enter_context(rng)
            torch.manual_seed(seed)
            if fast:
                stack.enter_context(fast_mc_dropout(model, seed=seed, exclude=lower))
            else:
                stack.enter_context(dropout_active(model))
                for module in lower:
                    for sub in module.modules():
                        sub.training = False
            stack.enter_context(torch.inference_mode())
            out = score_batches(
                enc, fn, batch_size=self.eval_batch_size, accelerator=acc,
                show_progress=self.show_progress, desc=f"{self.name} (top {mc_layers} layers)",
            )
        return np.ascontiguousarray(out.T)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """The encoder's rates, ``predict`` at this ranker's passes; started from a ranker it trains nothing.

        ``predict`` with 10 passes took 395.9 s on 6,000 pairs on the real
        run (docs/results/real_run.json, two CPU cores); it scales with the
        passes. With ``mc_layers`` set, only the top layers run per pass, so
        the estimate is an upper bound.
        """
        base = super().cost_rates()
        fit = 0.0 if warm_start or base is None else base.fit_per_query
        return CostRates(fit, 395.9 / 6000 * self.n_passes / 10)

    def predict(self, queries: QuerySet) -> Predictions:
        """The mean over the ``n_passes`` passes, shape (n_pairs,)."""
        return self.predict_samples(queries).to_predictions()


def _split_layers(model: Any, mc_layers: Any) -> tuple[nn.ModuleList, int]:
    """The encoder's layer list and how many of them run once per batch (``n_layers - mc_layers``)."""
    layers = getattr(getattr(getattr(model, "encoder", None), "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError("mc_layers needs a BERT-style encoder (model.encoder.encoder.layer); this model has none")
    n_lower = len(layers) - check_positive_int(mc_layers, "mc_layers", minimum=0)
    if n_lower < 0:
        raise ValueError(f"mc_layers must be <= the encoder's {len(layers)} layers; got {mc_layers}")
    return layers, n_lower


class _Replay(nn.Module):
    """Stands in for the embeddings (returns the kept hidden state) and the lower layers (pass it on)."""

    def __init__(self, hidden: torch.Tensor | None) -> None:
        super().__init__()
        self.hidden = hidden

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return args[0] if self.hidden is None else self.hidden


@contextlib.contextmanager
def _replay(bert: nn.Module, layers: nn.ModuleList, n_lower: int, hidden: torch.Tensor) -> Iterator[None]:
    """Replace ``bert.embeddings`` and ``layers[:n_lower]`` by :class:`_Replay` stand-ins for the block.

    The embeddings' stand-in returns ``hidden`` (the last lower layer's
    output, of the embeddings' shape), the lower layers pass it on, so
    neither the embeddings nor a lower layer computes anything. The modules
    are restored on exit.
    """
    embeddings = bert.embeddings
    saved = [layers[i] for i in range(n_lower)]
    try:
        bert.embeddings = _Replay(hidden)
        for i in range(n_lower):
            layers[i] = _Replay(None)
        yield
    finally:
        bert.embeddings = embeddings
        for i, layer in enumerate(saved):
            layers[i] = layer
