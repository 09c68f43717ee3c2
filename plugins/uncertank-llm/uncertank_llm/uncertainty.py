r"""The uncertainty methods that fit a yes/no LLM reranker, each a :class:`uncertank.StochasticRanker`.

Every row of ``predict_samples`` is one joint draw over all pairs, and
``predict`` is the mean of the draws (the probit approximation for
``llm_laplace``):

- :class:`PromptEnsembleRanker` (``llm_prompts``): K wordings of the
  instruction; a draw is P(yes) under one wording. Its spread is the
  reranker's sensitivity to how the question is put (the prompt as a
  nuisance variable).
- :class:`LoRAEnsembleRanker` (``llm_lora_ensemble``): M LoRA adapters
  trained from different seeds over one frozen base held once in memory; a
  draw is one member (a deep ensemble of adapters; Wang et al., "LoRA
  ensembles for large language model fine-tuning", 2023).
- :class:`LoRADropoutRanker` (``llm_mc_dropout``): the adapters' dropout
  kept on at test time, T passes (MC dropout, Gal & Ghahramani 2016, on the
  adapters only: the base has no dropout to keep on in most LLMs).
- :class:`LLMLaplaceRanker` (``llm_laplace``): the answer logit difference
  ``l_yes - l_no = (w_yes - w_no)^T h`` is linear in the LM head's input
  ``h`` (the final hidden state at the answer position); its weights get the
  last-layer Laplace posterior of :func:`uncertank_laplace.fit_last_layer`
  (prior precision by marginal likelihood), ``predict`` is the probit
  approximation and a draw samples the weights.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from scipy.special import expit
from torch import nn
from typing_extensions import Self

from uncertank import CostRates, Predictions, PredictiveSamples, QuerySet
from uncertank.validation import check_instance, check_names, check_positive_int, check_real
from uncertank_llm.model import score_prompts
from uncertank_llm.ranker import LLMRanker

__all__ = [
    "INSTRUCTIONS",
    "LLMLaplaceRanker",
    "LoRADropoutRanker",
    "LoRAEnsembleRanker",
    "PromptEnsembleRanker",
    "lora_dropout_active",
]

#: Five wordings of a relevance instruction (the first is Qwen3-Reranker's default).
INSTRUCTIONS = (
    "Given a web search query, retrieve relevant passages that answer the query",
    "Decide whether the document is a relevant and helpful response to the query",
    "Judge if the passage answers the question or continues the conversation appropriately",
    "Given a user message, find responses that address it",
    "Is this document relevant to the query? Answer yes or no",
)


def _n_draws(n_samples: int | None, default: int, what: str, fixed: bool) -> int:
    """The draws asked for: ``default`` for None; at most ``default`` where they are a fixed set (members, prompts)."""
    if n_samples is None:
        return default
    n = check_positive_int(n_samples, "n_samples")
    if fixed and n > default:
        raise ValueError(f"n_samples must be at most {default}, the number of {what}; got {n}")
    return n


class _Sampled(LLMRanker):
    """A stochastic LLM ranker whose ``predict`` is the mean of its draws."""

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        raise NotImplementedError

    def predict(self, queries: QuerySet) -> Predictions:
        """The mean P(relevant) over the draws, shape (n_pairs,)."""
        s = self.predict_samples(queries)
        return Predictions(np.clip(s.samples.mean(0), 0.0, 1.0), queries.offsets, ranker=self.name)


class PromptEnsembleRanker(_Sampled):
    """A prompt ensemble: P(yes) under each of K wordings of the instruction (``llm_prompts``).

    The template must hold ``{instruction}`` (``qwen3-reranker`` does). ``fit``
    trains one adapter under the first wording (nothing for ``zero_shot``).

    Parameters
    ----------
    instructions : sequence of str, optional
        The K wordings; :data:`INSTRUCTIONS` (five) by default.
    **params
        Every parameter of :class:`~uncertank_llm.LLMRanker`.
    """

    name = "llm_prompts"

    def __init__(self, pretrained: Any = None, *, instructions: Sequence[str] | None = None, **params: Any) -> None:
        self.instructions = instructions
        super().__init__(pretrained, **params)

    def _check_params(self) -> None:
        instructions = self.instructions
        if instructions is not None:  # checked first: the checks behind (and format) read the first wording
            check_instance(instructions, "instructions", (list, tuple), "a list of str (the wordings)")
            check_names(instructions, "instructions")
            if len(instructions) < 2 or not all(i.strip() for i in instructions):
                raise ValueError(f"instructions must be at least two non-empty wordings; got {instructions!r}")
            if len(set(instructions)) != len(instructions):
                raise ValueError("instructions must differ from one another; some are given twice")
        super()._check_params()
        if "{instruction}" not in super().format.template:
            raise ValueError(
                f"the ranker {self.name} varies the instruction, but the template has no {{instruction}} field: "
                "use template='qwen3-reranker' or a template with {instruction}"
            )

    @property
    def format(self) -> Any:
        """The prompt format; without ``instruction``, with the first of the K wordings."""
        fmt = super().format
        return fmt if self.instruction is not None else replace(fmt, instruction=self.wordings[0])

    @property
    def wordings(self) -> list[str]:
        """The K instructions."""
        return list(self.instructions if self.instructions is not None else INSTRUCTIONS)

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """P(yes) under each wording: shape (K, n_pairs) (the first ``n_samples`` wordings)."""
        self.check_fitted()
        k = _n_draws(n_samples, len(self.wordings), "instruction wordings", fixed=True)
        rows = []
        for i, wording in enumerate(self.wordings[:k]):
            logits, _ = self.answer_logits(queries, fmt=replace(self.format, instruction=wording),
                                           desc=f"prompt {i + 1}/{k}")
            rows.append(expit(logits[:, 1] - logits[:, 0]))
        return PredictiveSamples(np.stack(rows), queries.offsets, ranker=self.name)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """K scorings per pair."""
        rates = super().cost_rates(warm_start=warm_start)
        return None if rates is None else CostRates(rates.fit_per_query, rates.predict_per_pair * len(self.wordings))


class LoRAEnsembleRanker(_Sampled):
    """M LoRA adapters from different seeds over one frozen base held once (``llm_lora_ensemble``).

    Member ``m`` is trained with seed ``seed + m`` (its adapters'
    initialisation, its pairs' draw and order). Memory: the base once, plus
    M adapters (:meth:`memory`).

    Parameters
    ----------
    n_members : int
        M (5 by default).
    **params
        Every parameter of :class:`~uncertank_llm.LLMRanker` but ``zero_shot``
        (an ensemble of adapters needs adapters).
    """

    name = "llm_lora_ensemble"

    def __init__(self, pretrained: Any = None, *, n_members: int = 5, **params: Any) -> None:
        self.n_members = n_members
        super().__init__(pretrained, **params)

    def _check_params(self) -> None:
        super()._check_params()
        check_positive_int(self.n_members, "n_members", minimum=2)
        if self.zero_shot:
            raise ValueError(f"the ranker {self.name} is an ensemble of trained LoRA adapters; zero_shot=True "
                             "leaves none to train (use llm_prompts for a zero-shot ensemble)")

    @property
    def is_fitted(self) -> bool:
        """True once all M adapters exist (one from ``init_from`` counts as member 0)."""
        return len(self.adapters_) >= self.n_members

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Train the M adapters, one after another, on ``train`` (from member 1 when warm-started); return self."""
        if not self.warm_started_:
            self._reset()
        kept = self.adapters_[:1] if self.warm_started_ else []
        self.adapters_ = list(kept)
        history = [self.train_adapter(train, valid, adapter=f"member{m}", seed=self.seed + m)
                   for m in range(len(kept), self.n_members)]
        self.history_ = {**(self.history_ or {}), "adapters": history}
        return self

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """P(yes) of each member: shape (M, n_pairs) (the first ``n_samples`` members)."""
        self.check_fitted()
        m = _n_draws(n_samples, len(self.adapters_), "members", fixed=True)
        ids = self.encode(queries)
        rows = []
        for adapter in self.adapters_[:m]:
            self.use_adapter(adapter)
            logits, _ = score_prompts(self.scorer, ids, batch_size=self.eval_batch_size, pad_id=self._pad_id(),
                                      device=self.torch_device, show_progress=self.show_progress,
                                      desc=f"{self.name}: {adapter}")
            rows.append(expit(logits[:, 1] - logits[:, 0]))
        return PredictiveSamples(np.stack(rows), queries.offsets, ranker=self.name)

    def memory(self) -> dict[str, int]:
        """Bytes of the base model's parameters and of each adapter's (the ensemble holds the base once)."""
        self.check_fitted()
        adapter_bytes = {a: 0 for a in self.adapters_}
        base = 0
        for name, p in self._lm.named_parameters():
            owner = next((a for a in self.adapters_ if f".{a}." in name or name.endswith(f".{a}")), None)
            if "lora_" in name and owner is not None:
                adapter_bytes[owner] += p.numel() * p.element_size()
            else:
                base += p.numel() * p.element_size()
        return {"base": base, **{f"adapter:{a}": b for a, b in adapter_bytes.items()}}

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """M fits (M - 1 when started from a trained ``llm``, whose adapter is member 0) and M scorings."""
        rates = super().cost_rates(warm_start=False)  # one member's
        fits = self.n_members - 1 if warm_start else self.n_members
        return None if rates is None else CostRates(rates.fit_per_query * fits,
                                                    rates.predict_per_pair * self.n_members)


def lora_dropout_modules(model: nn.Module) -> list[nn.Module]:
    """The dropout modules on the LoRA adapters' inputs (peft's ``lora_dropout``) with a rate above 0."""
    found: list[nn.Module] = []
    for name, module in model.named_modules():
        if ".lora_dropout." in f".{name}." and isinstance(module, nn.Dropout) and module.p > 0:
            found.append(module)
    return found


@contextlib.contextmanager
def lora_dropout_active(model: nn.Module) -> Iterator[int]:
    """Switch the adapters' dropout on (everything else stays in eval mode); yield how many sites.

    Raises
    ------
    ValueError
        When the model has no LoRA dropout above 0 (``lora_dropout=0``, or no adapters).
    """
    sites = lora_dropout_modules(model)
    if not sites:
        raise ValueError("MC dropout on the adapters needs LoRA dropout above 0; the model has none "
                         "(lora_dropout=0, or no adapters)")
    for m in sites:
        m.train()
    try:
        yield len(sites)
    finally:
        for m in sites:
            m.eval()


class LoRADropoutRanker(_Sampled):
    """MC dropout on the LoRA adapters: T passes with the adapters' dropout on (``llm_mc_dropout``).

    The base model runs in eval mode; only the dropout on each adapter's
    input (peft's ``lora_dropout``) is active, with a fresh mask in every
    pass, seeded by ``seed`` and the pass (draws are reproducible).

    Parameters
    ----------
    n_passes : int
        T (10 by default).
    **params
        Every parameter of :class:`~uncertank_llm.LLMRanker`; ``lora_dropout``
        must be above 0 and ``zero_shot`` False.
    """

    name = "llm_mc_dropout"

    def __init__(self, pretrained: Any = None, *, n_passes: int = 10, **params: Any) -> None:
        self.n_passes = n_passes
        super().__init__(pretrained, **params)

    def _check_params(self) -> None:
        super()._check_params()
        check_positive_int(self.n_passes, "n_passes", minimum=2)
        if self.lora_dropout == 0:
            raise ValueError(f"the ranker {self.name} keeps the LoRA adapters' dropout on at test time; "
                             "lora_dropout=0 leaves nothing random: set lora_dropout > 0 (0.05 by default) "
                             "and fine-tune, or use llm_lora_ensemble")
        if self.zero_shot:
            raise ValueError(f"the ranker {self.name} drops out the LoRA adapters' inputs; zero_shot=True has no "
                             "adapters (fine-tune them, or use llm_prompts for a zero-shot ensemble)")


    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """P(yes) of each pass: shape (T, n_pairs)."""
        self.check_fitted()
        t = _n_draws(n_samples, self.n_passes, "passes", fixed=False)
        ids = self.encode(queries)
        self.activate()
        gen_state = torch.random.get_rng_state()
        rows = []
        try:
            for p in range(t):
                torch.manual_seed(self.seed * 100_003 + p)
                with lora_dropout_active(self._lm):
                    logits, _ = score_prompts(self.scorer, ids, batch_size=self.eval_batch_size,
                                              pad_id=self._pad_id(), device=self.torch_device,
                                              show_progress=self.show_progress, desc=f"{self.name}: pass {p + 1}/{t}")
                rows.append(expit(logits[:, 1] - logits[:, 0]))
        finally:
            torch.random.set_rng_state(gen_state)
        return PredictiveSamples(np.stack(rows), queries.offsets, ranker=self.name)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """T scorings per pair."""
        rates = super().cost_rates(warm_start=warm_start)
        return None if rates is None else CostRates(rates.fit_per_query, rates.predict_per_pair * self.n_passes)


class LLMLaplaceRanker(_Sampled):
    """Last-layer Laplace on the answer logit difference (``llm_laplace``).

    ``l_yes - l_no = u^T h`` with ``u = w_yes - w_no`` (the two rows of the
    LM head) and ``h`` the head's input at the answer position. After the
    adapters are fine-tuned (or for ``zero_shot``, on the model as it is),
    ``h`` of the training pairs gives the Laplace posterior ``N(u*, S)`` of
    ``u`` (:func:`uncertank_laplace.fit_last_layer`, a one-logit layer,
    prior precision by marginal likelihood). ``predict`` is the probit
    approximation ``sigmoid(m / sqrt(1 + pi v / 8))``, ``m = u*^T h``,
    ``v = h^T S h``; a draw samples ``u`` once for all pairs.

    Parameters
    ----------
    n_samples : int
        Draws of ``predict_samples`` by default (30).
    laplace_pairs : int
        At most this many training pairs (a seeded subset) give the
        posterior's curvature (1,000 by default).
    prior_precision : float or "marglik"
        The prior precision ``delta``; ``"marglik"`` maximises the marginal likelihood.
    **params
        Every parameter of :class:`~uncertank_llm.LLMRanker`.
    """

    name = "llm_laplace"

    def __init__(
        self, pretrained: Any = None, *, n_samples: int = 30, laplace_pairs: int = 1000,
        prior_precision: float | str = "marglik", **params: Any,
    ) -> None:
        self.n_samples = n_samples
        self.laplace_pairs = laplace_pairs
        self.prior_precision = prior_precision
        super().__init__(pretrained, **params)
        self.posterior_: Any = None

    def _check_params(self) -> None:
        super()._check_params()
        check_positive_int(self.n_samples, "n_samples", minimum=2)
        check_positive_int(self.laplace_pairs, "laplace_pairs", minimum=2)
        if not (isinstance(self.prior_precision, str) and self.prior_precision == "marglik"):
            check_real(self.prior_precision, "prior_precision ('marglik' or a number)", minimum=0,
                       exclusive_minimum=True)

    @property
    def is_fitted(self) -> bool:
        """True once the posterior exists (fitted or loaded)."""
        return self.posterior_ is not None

    def check_fitted(self) -> None:
        """Raise :class:`uncertank.NotFittedError` until :meth:`fit` (or :meth:`load`) made the posterior."""
        from uncertank import NotFittedError

        if self.posterior_ is None:
            raise NotFittedError(f"ranker {self.name} has no posterior yet: call fit(train) (it fine-tunes the "
                                 "adapters unless zero_shot, then fits the posterior) or load(path)")

    def _contrast_row(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        weight, bias = self.scorer.answer_rows()
        u = (weight[1] - weight[0]).detach().double().cpu()[None]
        b = None if bias is None else (bias[1] - bias[0]).detach().double().cpu().reshape(1)
        return u, b

    def fit(self, train: QuerySet, valid: QuerySet | None = None) -> Self:
        """Fine-tune the adapters (unless ``zero_shot``), then fit the Laplace posterior on training pairs."""
        from uncertank_laplace import fit_last_layer  # type: ignore[import-not-found,unused-ignore]

        if not isinstance(train, QuerySet):
            raise TypeError(f"train must be a QuerySet; got {type(train).__name__}")
        if train.labels is None:
            raise ValueError(f"train must carry labels; QuerySet {train.name or '(unnamed)'} has none")
        if not self.zero_shot and not self.warm_started_:
            self._reset()
            self.history_ = {"adapters": [self.train_adapter(train, valid, adapter="default")]}
        self.posterior_ = None
        pick = train
        if train.n_pairs > self.laplace_pairs:
            # whole queries, seeded, until the pair budget is met
            order = np.random.default_rng(self.seed).permutation(train.n_queries)
            sizes = np.cumsum(train.lengths[order])
            keep = np.sort(order[: max(1, int(np.searchsorted(sizes, self.laplace_pairs, side="right")))])
            pick = train.subset(keep)
        _, feats = self.answer_logits(pick, features=True, desc="posterior features")
        assert feats is not None and pick.labels is not None
        u, b = self._contrast_row()
        self.posterior_ = fit_last_layer(feats, pick.labels, u, b, structure="full",
                                         prior_precision=self.prior_precision)
        return self

    def _latent(self, queries: QuerySet) -> tuple[NDArray[np.float64], torch.Tensor]:
        """The augmented features x of every pair (n, d[+1]) and nothing else computed twice."""
        _, feats = self.answer_logits(queries, features=True)
        assert feats is not None
        x = torch.as_tensor(feats, dtype=torch.float64)
        if self.posterior_.has_bias:
            x = torch.cat([x, torch.ones(x.shape[0], 1, dtype=torch.float64, device=x.device)], 1)
        return feats, x

    def latent_mean_variance(self, queries: QuerySet) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The answer logit difference's posterior mean and variance of every pair, shape (n_pairs,) each."""
        self.check_fitted()
        _, x = self._latent(queries)
        mean, cov = self.posterior_.contrast()
        m = x @ mean
        v = ((x @ cov) * x).sum(1).clamp_min(0)
        return m.numpy(), v.numpy()

    def predict(self, queries: QuerySet) -> Predictions:
        """The probit approximation of the posterior predictive P(relevant), shape (n_pairs,)."""
        from uncertank_laplace import probit  # type: ignore[import-not-found,unused-ignore]

        m, v = self.latent_mean_variance(queries)
        return Predictions(np.clip(probit(m, v), 0.0, 1.0), queries.offsets, ranker=self.name)

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Joint draws: ``u`` drawn from its posterior once per row, P(yes) = sigmoid(u^T h) of every pair."""
        self.check_fitted()
        n = _n_draws(n_samples, self.n_samples, "draws", fixed=False)
        _, x = self._latent(queries)
        mean, cov = self.posterior_.contrast()
        evals, evecs = torch.linalg.eigh(cov)
        root = (evecs * evals.clamp_min(0).sqrt()) @ evecs.T  # the principal square root: device independent
        gen = torch.Generator().manual_seed(self.seed)
        z = torch.randn(n, mean.shape[0], generator=gen, dtype=torch.float64, device="cpu")  # the posterior's device
        draws = mean[None] + z @ root
        return PredictiveSamples(expit((draws @ x.T).numpy()), queries.offsets, ranker=self.name)

    def save_extra(self, folder: Path) -> None:
        """The posterior's tensors, in ``laplace.safetensors``."""
        from safetensors.torch import save_file

        tensors, meta = self.posterior_.to_tensors()
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(folder / "laplace.safetensors"), metadata=meta)

    def load_extra(self, folder: Path, manifest: dict[str, Any]) -> None:
        """Read the posterior written by :meth:`save_extra`."""
        from safetensors import safe_open
        from uncertank_laplace import LastLayerPosterior  # type: ignore[import-not-found,unused-ignore]

        with safe_open(str(folder / "laplace.safetensors"), framework="pt") as fh:
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}
            meta = fh.metadata()
        self.posterior_ = LastLayerPosterior.from_tensors(tensors, meta)

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """One scoring per pair (the features), the fit plus the posterior's pairs."""
        return super().cost_rates(warm_start=warm_start)
