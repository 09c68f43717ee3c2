"""Fine-tuning a cross-encoder: balanced pairs, AdamW, warm-up, clipping, best epoch kept.

The recipe of Penha & Hauff (EACL 2021, section 4): pointwise cross-entropy on
(context, response) pairs with as many non-relevant as relevant responses;
AdamW with a linear warm-up then linear decay; gradient-norm clipping;
validation after every epoch, and the weights of the best epoch kept. It runs
under Hugging Face Accelerate, so the same code trains on one CPU, one GPU
(bf16 autocast) or several processes (``accelerate launch``, ``torchrun``; DDP).

Data flows one way: the non-relevant responses are the training set's own
candidates, as the data layer built them (``uncertank.datasets.load(...,
negatives=...)``, which keeps every sampling rule); training never draws
negatives of its own.

A head with its own loss or state plugs in through ``loss_fn`` (the loss of a
batch from the model's output) and ``on_train_end`` (called once with the
final model and the training pairs, e.g. to compute a covariance).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from numpy.typing import NDArray

from uncertank._environment import environment
from uncertank._types import QuerySet
from uncertank.nn.inference import score_probabilities
from uncertank.nn.inputs import EncodedPairs, encode_pairs
from uncertank.nn.runtime import progress
from uncertank.validation import (
    check_instance,
    check_ndim,
    check_positive_int,
    check_seed,
    check_tokenizer,
    check_unit_interval,
)

if TYPE_CHECKING:
    from accelerate import Accelerator
    from transformers import PreTrainedTokenizerBase

__all__ = [
    "TrainingConfig",
    "TrainingHistory",
    "average_precision",
    "balanced_pairs",
    "training_pairs",
    "cross_entropy_loss",
    "train_cross_encoder",
]


@dataclass
class TrainingConfig:
    """Hyper-parameters of :func:`train_cross_encoder`.

    Parameters
    ----------
    max_length : int
        Tokens per pair (special tokens included).
    epochs : int
        Passes over the training pairs.
    batch_size : int
        Training pairs per step (per process).
    lr : float
        Peak AdamW learning rate.
    head_lr : float or None
        Peak learning rate of every parameter outside ``model.encoder`` (the
        randomly initialised head); None uses ``lr``. PG-DRR (Ye et al.,
        AAAI 2023, sec. 4.4) trains its GP layer at 3e-3 and the encoder at
        1e-5. It is not a cure for a head stuck at a loss of log 2: on the
        packaged MiniLM, ``sngp`` at ``head_lr=3e-3`` stayed there
        (docs/rankers.md). Warm-up and decay scale both rates alike.
    seed : int
        Seeds initialisation, the choice among a query's negatives, and shuffling.
    warmup_ratio : float
        Fraction of the steps with a linear warm-up, in [0, 1).
    weight_decay : float
        AdamW weight decay (not applied to biases and LayerNorm weights).
    max_grad_norm : float
        Gradient-norm clipping bound (0 switches clipping off).
    eval_batch_size : int
        Pairs per forward pass when validating and predicting: 32, the
        faster on a CPU (on 80 real pairs, ``bert``'s ``predict`` at 32 took
        0.98x sentence-transformers' ``CrossEncoder.predict``, at 64 1.12x;
        benchmarks/RESULTS.md); raise it on a GPU.
    show_progress : bool
        Progress bars on the main process.
    freeze_embeddings : bool
        Keep the encoder's embedding layer (word, position and type
        embeddings) as pretrained. On a CPU the AdamW update of MiniLM's
        11.7M word-embedding weights costs about a third of a training step
        of a 2-layer encoder (docs/experiments.md); the layers above still
        learn.
    freeze_encoder : bool
        Train the head only: every encoder parameter keeps its value and the
        encoder runs in eval mode (no dropout), so the head learns on the
        encoder's deterministic features. What a post-hoc head on a user's
        trained model (``pretrained=``) does.
    train_ratio : int or None
        Non-relevant training pairs per relevant one, drawn from the query's
        own candidates (:func:`training_pairs`): 1 (the default) trains on
        balanced pairs, as Penha & Hauff do; 9 on lists of ten as they are
        (1 relevant : 9 negatives), as the GP papers do; None on every
        candidate. The loss is not reweighted: a model trained at ratio k
        learns the base rate 1 / (k + 1) of its training pairs, so its
        probabilities are calibrated for lists of that ratio, while a
        balanced model's are calibrated for balanced pairs (docs/rankers.md).
    max_train_queries : int or None
        Train on a random subset of this many training queries (drawn once
        with ``seed``, the same in every epoch); None, the default, on all of
        them. With ``train_ratio`` it sets the cost of training: lists of ten
        from ``n`` queries give as many pairs as balanced pairs from ``5 n``.
    """

    max_length: int = 128
    epochs: int = 1
    batch_size: int = 16
    lr: float = 2e-5
    seed: int = 0
    head_lr: float | None = None
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    eval_batch_size: int = 32
    show_progress: bool = True
    freeze_embeddings: bool = False
    freeze_encoder: bool = False
    train_ratio: int | None = 1
    max_train_queries: int | None = None

    def __post_init__(self) -> None:
        for flag in ("freeze_embeddings", "freeze_encoder"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool; got {type(getattr(self, flag)).__name__}")
        for name in ("max_length", "epochs", "batch_size", "eval_batch_size"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.seed, "seed", minimum=0)
        for name in ("lr", "weight_decay", "max_grad_norm"):
            v = getattr(self, name)
            positive = name == "lr"
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and bool(np.isfinite(v))
            if not ok or v < 0 or (positive and v == 0):
                raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}; got {v!r}")
        h = self.head_lr
        if h is not None and (isinstance(h, bool) or not isinstance(h, (int, float)) or not np.isfinite(h) or h <= 0):
            raise ValueError(f"head_lr must be None or a finite number > 0; got {h!r}")
        check_unit_interval(self.warmup_ratio, "warmup_ratio", closed="left")
        if self.train_ratio is not None:
            check_positive_int(self.train_ratio, "train_ratio")
        if self.max_train_queries is not None:
            check_positive_int(self.max_train_queries, "max_train_queries")


@dataclass
class TrainingHistory:
    """What happened during training.

    Attributes
    ----------
    loss : list of float
        Training loss of every step (mean over the batch).
    valid_map : list of float
        Validation MAP after every epoch (empty without validation data).
    best_epoch : int
        The epoch whose weights were kept (0-based; the last without validation).
    environment : dict
        The versions and the machine that trained the model: uncertank,
        Python, numpy, the platform, torch's version, the CPU kernels it
        dispatched to and its thread count (and the CUDA device). The same
        recipe on other kernels or another thread count ends at other
        weights (docs/study.md, "Reproduce"); empty in checkpoints saved
        before it was recorded.
    own_head_valid_map : float or None
        For a post-hoc head fitted on a user's model with validation
        queries: the validation MAP of the model's own head, to compare with
        the new head's (``head_valid_map``). None otherwise.
    head_valid_map : float or None
        The fitted ranker's validation MAP as ``predict`` ranks (for a
        post-hoc head; None otherwise).
    """

    loss: list[float] = field(default_factory=list)
    valid_map: list[float] = field(default_factory=list)
    best_epoch: int = -1
    environment: dict[str, object] = field(default_factory=dict)
    own_head_valid_map: float | None = None
    head_valid_map: float | None = None

    @property
    def head_learned(self) -> bool | None:
        """Whether a post-hoc head ranks the validation queries at least as well as the model's own head.

        None when it was not checked (not a post-hoc head, or no validation queries).
        """
        if self.own_head_valid_map is None or self.head_valid_map is None:
            return None
        return self.head_valid_map >= self.own_head_valid_map


def average_precision(
    scores: NDArray[np.float64], labels: NDArray[np.int64], offsets: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Average precision of every query (for model selection); :func:`uncertank.metrics.mean_average_precision`.

    Parameters
    ----------
    scores, labels : ndarray of shape (n_pairs,)
        Ties are broken by input position (stable sort on descending score).
    offsets : ndarray of shape (n_queries + 1,)

    Returns
    -------
    ndarray of shape (n_queries,)
        AP of each query; 0 for a query with no relevant candidate.
    """
    from uncertank._types import RankedLists
    from uncertank.metrics import mean_average_precision

    return np.asarray(mean_average_precision(RankedLists.from_flat(scores, labels, offsets), per_query=True))


def training_pairs(
    train: QuerySet, *, ratio: int | None = 1, seed: int = 0
) -> tuple[list[list[str]], list[str], NDArray[np.int64], NDArray[np.int64]]:
    """Training pairs from the given candidates: every relevant one and ``ratio`` non-relevant per relevant.

    Every relevant candidate of a query is kept, with up to ``ratio`` of the
    same query's non-relevant candidates per relevant one, drawn without
    replacement (fewer when the query has fewer). ``ratio=1`` gives balanced
    pairs (:func:`balanced_pairs`), ``ratio=9`` a list of ten as it is when
    the query has one relevant and nine other candidates, ``None`` every
    candidate. The negatives are the ones the data layer put in ``train``:
    to train on other negatives, load or rebuild the training set with them
    (``uncertank.datasets``).

    Parameters
    ----------
    train : QuerySet
        Labelled queries; queries with no relevant candidate are skipped.
    ratio : int or None
        Non-relevant pairs per relevant one (at least 1), or None for all.
    seed : int
        Seeds the draw among a query's non-relevant candidates.

    Returns
    -------
    contexts : list of n_queries lists of str
        The queries that have a relevant candidate.
    candidates : list of n_train_pairs str
        The relevant responses first, then the non-relevant ones.
    query_index : ndarray of shape (n_train_pairs,)
        Index into ``contexts``.
    labels : ndarray of shape (n_train_pairs,)
        1 for relevant, 0 for non-relevant.
    """
    if not isinstance(train, QuerySet):
        raise TypeError(f"train must be a QuerySet; got {type(train).__name__}")
    if train.labels is None:
        raise ValueError(f"train must carry labels; QuerySet {train.name or '(unnamed)'} has none")
    if ratio is not None:
        check_positive_int(ratio, "ratio")
    check_seed(seed, "seed", allow_none=False, generator=False)
    rel = train.labels > 0
    qidx = train.query_index
    n_pos = np.bincount(qidx[rel], minlength=train.n_queries)
    keep = np.flatnonzero(n_pos > 0)
    if keep.size == 0:
        raise ValueError("train must hold at least one query with a relevant candidate; it has none")
    new_q = np.full(train.n_queries, -1, dtype=np.int64)
    new_q[keep] = np.arange(keep.size)
    contexts = [list(train.contexts[int(q)]) for q in keep]
    pos_idx = np.flatnonzero(rel)
    cands = np.asarray(train.candidates, dtype=object)
    rng = np.random.default_rng(seed)
    neg_idx = np.flatnonzero(~rel)
    # A random rank among each query's negatives; keep the first ratio * n_pos of them.
    key = rng.random(neg_idx.size)
    order = np.lexsort((key, qidx[neg_idx]))
    neg_sorted = neg_idx[order]
    q_sorted = qidx[neg_sorted]
    first = np.searchsorted(q_sorted, q_sorted, side="left")
    within = np.arange(neg_sorted.size) - first
    quota = n_pos[q_sorted] * (ratio if ratio is not None else neg_sorted.size + 1)
    chosen = neg_sorted[(within < quota) & (n_pos[q_sorted] > 0)]
    candidates = [str(t) for t in cands[pos_idx].tolist()] + [str(t) for t in cands[chosen].tolist()]
    query_index = np.concatenate([new_q[qidx[pos_idx]], new_q[qidx[chosen]]]).astype(np.int64)
    labels = np.concatenate([np.ones(pos_idx.size, np.int64), np.zeros(chosen.size, np.int64)])
    return contexts, candidates, query_index, labels


def balanced_pairs(
    train: QuerySet, *, seed: int = 0
) -> tuple[list[list[str]], list[str], NDArray[np.int64], NDArray[np.int64]]:
    """Training pairs with one non-relevant response per relevant one: :func:`training_pairs` at ``ratio=1``."""
    return training_pairs(train, ratio=1, seed=seed)


def cross_entropy_loss(output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The default training loss: cross-entropy of two logits against 0/1 labels.

    Parameters
    ----------
    output : Tensor of shape (batch, 2)
        The cross-encoder's logits.
    labels : Tensor of shape (batch,)
        int64 labels, 1 for relevant.

    Returns
    -------
    Tensor
        The mean over the batch (a scalar), in float32.
    """
    check_instance(output, "output", torch.Tensor, "a torch.Tensor of logits, shape (batch, 2)")
    check_instance(labels, "labels", torch.Tensor, "a torch.Tensor of int64 labels, shape (batch,)")
    check_ndim(output, "output", 2)
    check_ndim(labels, "labels", 1)
    if labels.shape[0] != output.shape[0]:
        raise ValueError(
            f"labels must hold one label per row of output ({output.shape[0]}); got shape {tuple(labels.shape)}"
        )
    try:
        return torch.nn.functional.cross_entropy(output.float(), labels)
    except (RuntimeError, IndexError) as exc:  # a label out of range, or labels of a float dtype
        raise ValueError(
            f"labels must be int64 class indices < output.shape[1] ({output.shape[1]}); got dtype {labels.dtype} "
            f"({exc})"
        ) from exc


def _param_groups(
    model: torch.nn.Module, weight_decay: float, lr: float, head_lr: float | None = None
) -> list[dict[str, object]]:
    """AdamW groups: decay or not (biases and norms), at ``lr`` or, outside ``model.encoder``, ``head_lr``."""
    encoder = getattr(model, "encoder", None)
    in_encoder = {id(p) for p in encoder.parameters()} if isinstance(encoder, torch.nn.Module) else set()
    groups: dict[tuple[bool, float], list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        decays = not (p.ndim < 2 or "LayerNorm" in name or "norm" in name.lower())
        rate = lr if head_lr is None or id(p) in in_encoder else head_lr
        groups.setdefault((decays, rate), []).append(p)
    return [
        {"params": params, "weight_decay": weight_decay if decays else 0.0, "lr": rate}
        for (decays, rate), params in groups.items()
    ]


def train_cross_encoder(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    train: QuerySet,
    valid: QuerySet | None = None,
    *,
    config: TrainingConfig | None = None,
    accelerator: Accelerator | None = None,
    loss_fn: Callable[[Any, torch.Tensor], torch.Tensor] | None = None,
    on_train_end: Callable[[torch.nn.Module, EncodedPairs, NDArray[np.int64], Accelerator], None] | None = None,
    encode: Callable[..., EncodedPairs] | None = None,
) -> TrainingHistory:
    """Fine-tune ``model`` in place on ``train``; keep the best validation epoch.

    Every epoch draws its balanced pairs from the given candidates
    (:func:`training_pairs` at ``config.train_ratio``, seed ``config.seed + epoch``), shuffles them and
    takes AdamW steps on ``loss_fn(model(**batch), labels)``.

    Parameters
    ----------
    model : nn.Module
        ``model(**batch)`` for a batch of ``input_ids``, ``attention_mask`` and
        ``token_type_ids`` returns what ``loss_fn`` takes; in eval mode, logits
        that :func:`uncertank.nn.output_probabilities` turns into P(relevant)
        (two logits or one). A :class:`CrossEncoderModel` by default. Trained
        in place; on return it holds the best epoch's weights, in eval mode.
    tokenizer : transformers tokenizer
        With ``[U]`` and ``[T]`` added.
    train : QuerySet
        Labelled training queries; its own non-relevant candidates are the negatives.
    valid : QuerySet, optional
        Labelled validation queries; scored (in eval mode) after every epoch,
        and the epoch with the highest MAP is kept.
    config : TrainingConfig, optional
    accelerator : accelerate.Accelerator, optional
        One for the CPU is made when omitted.
    loss_fn : callable, optional
        ``loss_fn(output, labels) -> scalar Tensor`` with ``labels`` an int64
        Tensor of shape (batch,) on the device; :func:`cross_entropy_loss` by
        default. It runs outside autocast, so it sees the output's own dtype.
    on_train_end : callable, optional
        ``on_train_end(model, pairs, labels, accelerator)``, called once on
        every process after the best weights are restored, with the unwrapped
        model in eval mode, the last epoch's training pairs (``EncodedPairs``)
        and their labels of shape (n_train_pairs,): the place to compute state
        that needs the final weights (a head's covariance, a memory bank).
        When ``freeze_encoder`` leaves no parameter to train (a
        non-parametric head, e.g. a GP layer reading the frozen features as
        they are), no step is taken and ``on_train_end`` alone fits the head.
    encode : callable, optional
        ``encode(contexts, candidates, query_index, max_length=...) ->
        EncodedPairs``, how pairs become token sequences:
        ``encode_pairs(tokenizer, ...)`` (``[U]``/``[T]`` separators) by
        default; a pretrained model's own format otherwise
        (:meth:`uncertank.nn.NeuralRanker.encode_texts`).

    Returns
    -------
    TrainingHistory
    """
    from accelerate.utils import set_seed
    from transformers import get_linear_schedule_with_warmup

    from uncertank.nn.runtime import get_accelerator

    check_instance(model, "model", torch.nn.Module, "a torch.nn.Module")
    check_tokenizer(tokenizer)
    cfg = config or TrainingConfig()
    loss_fn = cross_entropy_loss if loss_fn is None else loss_fn
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable as loss_fn(output, labels); got {type(loss_fn).__name__}")
    if on_train_end is not None and not callable(on_train_end):
        raise TypeError(
            "on_train_end must be callable as on_train_end(model, pairs, labels, accelerator); "
            f"got {type(on_train_end).__name__}"
        )
    if valid is not None:
        if not isinstance(valid, QuerySet):
            raise TypeError(f"valid must be a QuerySet or None; got {type(valid).__name__}")
        if valid.labels is None:
            raise ValueError("valid must carry labels to select the best epoch")
    acc = accelerator or get_accelerator("cpu")
    set_seed(cfg.seed)
    main = acc.is_main_process
    if encode is None:
        def encode(
            contexts: Sequence[Sequence[str]], candidates: Sequence[str], query_index: NDArray[np.int64], *,
            max_length: int,
        ) -> EncodedPairs:
            return encode_pairs(tokenizer, contexts, candidates, query_index, max_length=max_length)
    if cfg.max_train_queries is not None and train.n_queries > cfg.max_train_queries:
        keep = np.random.default_rng(cfg.seed).choice(train.n_queries, size=cfg.max_train_queries, replace=False)
        train = train.subset(np.sort(keep))
    epochs_pairs: list[tuple[EncodedPairs, NDArray[np.int64]]] = []
    for epoch in range(cfg.epochs):
        ctx, cands, qidx, labels = training_pairs(train, ratio=cfg.train_ratio, seed=cfg.seed + epoch)
        epochs_pairs.append((encode(ctx, cands, qidx, max_length=cfg.max_length), labels))
    valid_enc = (
        encode(valid.contexts, valid.candidates, valid.query_index, max_length=cfg.max_length)
        if valid is not None else None
    )

    steps_per_epoch = -(-epochs_pairs[0][0].n_pairs // (cfg.batch_size * acc.num_processes))
    total = steps_per_epoch * cfg.epochs
    if cfg.freeze_embeddings:
        embeddings = getattr(getattr(model, "encoder", None), "embeddings", None)
        if embeddings is None:
            raise ValueError("freeze_embeddings needs a model with encoder.embeddings (a BERT-like backbone)")
        for p in embeddings.parameters():
            p.requires_grad_(False)
    frozen = getattr(model, "encoder", None) if cfg.freeze_encoder else None
    if cfg.freeze_encoder:
        if not isinstance(frozen, torch.nn.Module):
            raise ValueError("freeze_encoder needs a model with an encoder module (model.encoder)")
        for p in frozen.parameters():
            p.requires_grad_(False)
        if not any(p.requires_grad for p in model.parameters()):
            if on_train_end is None:
                raise ValueError(
                    "freeze_encoder leaves nothing to train: the model has no parameter outside its encoder"
                )
            # a non-parametric head (a GP layer on the frozen features): its state is all on_train_end's
            model.eval()
            enc, labels = epochs_pairs[-1]
            on_train_end(model, enc, labels, acc)
            acc.free_memory()
            return TrainingHistory(best_epoch=cfg.epochs - 1, environment=environment())
    optimizer = torch.optim.AdamW(_param_groups(model, cfg.weight_decay, cfg.lr, cfg.head_lr), lr=cfg.lr)
    scheduler = get_linear_schedule_with_warmup(  # type: ignore[no-untyped-call]
        optimizer, int(cfg.warmup_ratio * total), total)
    wrapped, optimizer, scheduler = acc.prepare(model, optimizer, scheduler)
    history = TrainingHistory(environment=environment())
    best_state: dict[str, torch.Tensor] | None = None
    best = -np.inf
    gen = torch.Generator().manual_seed(cfg.seed)
    for epoch, (enc, labels) in enumerate(epochs_pairs):
        wrapped.train()
        if frozen is not None:
            frozen.eval()  # the head learns on the encoder's deterministic features
        perm = torch.randperm(enc.n_pairs, generator=gen).numpy()  # cpu: indices
        # Every process walks its own slice of the same permutation (DDP averages gradients).
        shard = -(-enc.n_pairs // acc.num_processes)
        perm = np.resize(perm, shard * acc.num_processes)[acc.process_index :: acc.num_processes]
        y_all = torch.from_numpy(labels)  # cpu: each batch's labels move to the device below
        with progress(perm.size, f"epoch {epoch + 1}/{cfg.epochs}", enabled=cfg.show_progress and main) as bar:
            for lo in range(0, perm.size, cfg.batch_size):
                idx = perm[lo : lo + cfg.batch_size]
                batch = enc.batch(idx, acc.device)
                y = y_all[idx].to(acc.device)
                with acc.autocast():
                    output = wrapped(**batch)
                loss = loss_fn(output, y)
                acc.backward(loss)
                if cfg.max_grad_norm > 0:
                    acc.clip_grad_norm_(wrapped.parameters(), cfg.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                history.loss.append(float(loss.detach()))
                bar.set_postfix(loss=f"{history.loss[-1]:.4f}")
                bar.update(idx.size)
        if valid is not None and valid_enc is not None:
            net = acc.unwrap_model(wrapped)
            probs = score_probabilities(
                [net], valid_enc, batch_size=cfg.eval_batch_size, accelerator=acc,
                show_progress=cfg.show_progress, desc=f"validating epoch {epoch + 1}",
            )[0]
            assert valid.labels is not None
            value = float(average_precision(probs, valid.labels, valid.offsets).mean())
            history.valid_map.append(value)
            if value > best:
                best, history.best_epoch = value, epoch
                best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    net = acc.unwrap_model(wrapped)
    if best_state is not None:
        net.load_state_dict(best_state)
    else:
        history.best_epoch = cfg.epochs - 1
    net.eval()
    if on_train_end is not None:
        enc, labels = epochs_pairs[-1]
        on_train_end(net, enc, labels, acc)
    acc.free_memory()
    return history
