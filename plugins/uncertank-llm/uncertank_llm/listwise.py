r"""The ranker ``llm_listwise``: a listwise LLM reranker and its self-consistency over permutations.

The model reads the whole candidate list, each passage behind a label
(``[A] ...``, ``[B] ...``), and the prompt ends where the label of the most
relevant passage comes next (``The most relevant passage is [``). The
softmax over the shown labels' logits at that position is P(each passage is
ranked first), read in one forward pass (as FIRST reads the first
generated identifier: Reddy et al., 2024).

A listwise reranker's answer depends on the order it is shown (position
bias). Permutation self-consistency (Tang et al., NAACL 2024) shows the
list in S random orders and aggregates: here one joint draw of
``predict_samples`` is one permutation (every query of the set shown in its
own s-th order), and ``predict`` is the mean over the S permutations,
P(ranked first), which sums to 1 over a query's candidates. For lists with
one relevant candidate (the conversation data of this library) it is the
probability that this candidate is the relevant one, and calibration
measures compare it with the labels as they do any P(relevant).

``fit`` trains LoRA adapters with the cross-entropy of the label logits
against a relevant candidate's label, each training list shown in
``train_permutations`` random orders.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from uncertank import CostRates, Predictions, PredictiveSamples, QuerySet
from uncertank.validation import check_instance, check_names, check_positive_int
from uncertank_llm.model import _cut, score_prompts
from uncertank_llm.prompts import single_token_ids
from uncertank_llm.ranker import LLMRanker

__all__ = ["LISTWISE_TEMPLATE", "ListwiseFormat", "ListwiseRanker"]

#: The default listwise prompt: the passages' lines go in ``{passages}``; the label of the answer comes next.
LISTWISE_TEMPLATE = (
    "Rank the passages by their relevance to the query.\nQuery: {query}\n{passages}\n"
    "The most relevant passage is ["
)

_FIELD = re.compile(r"\{(query|passages|instruction)\}")


@dataclass(frozen=True)
class ListwiseFormat:
    r"""A listwise prompt: ``template`` with ``{query}`` and ``{passages}``, and the passages' labels.

    Parameters
    ----------
    template : str
        Holds ``{query}`` and ``{passages}`` once each (and optionally
        ``{instruction}``); the next token after it is a label.
    labels : sequence of str
        One per passage shown, each one token of the model's tokenizer
        (``A`` to ``Z`` by default: lists of at most 26 candidates).
    line : str
        One passage's line, with ``{label}`` and ``{passage}``.
    instruction : str

    Examples
    --------
    >>> print(ListwiseFormat().prompt("usb", ["mount it", "reboot"]))
    Rank the passages by their relevance to the query.
    Query: usb
    [A] mount it
    [B] reboot
    The most relevant passage is [
    """

    template: str = LISTWISE_TEMPLATE
    labels: tuple[str, ...] = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    line: str = "[{label}] {passage}"
    instruction: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.template, str):
            raise TypeError(f"template must be a str; got {type(self.template).__name__}")
        found = _FIELD.findall(self.template)
        for field in ("query", "passages"):
            if found.count(field) != 1:
                raise ValueError(f"a listwise template must hold {{{field}}} exactly once; it holds it "
                                 f"{found.count(field)} times: {self.template!r}")
        check_instance(self.labels, "labels", (list, tuple), "a list of str (one label per passage)")
        labels = tuple(check_names(self.labels, "labels"))
        distinct = len(set(labels)) == len(labels)
        if len(labels) < 2 or not distinct or not all(isinstance(lab, str) and lab for lab in labels):
            raise ValueError(f"labels must be two or more distinct non-empty strings; got {self.labels!r}")
        object.__setattr__(self, "labels", labels)
        check_instance(self.line, "line", str, "a str with {label} and {passage}")
        check_instance(self.instruction, "instruction", str, "a str")
        if "{label}" not in self.line or "{passage}" not in self.line:
            raise ValueError(f"line must hold {{label}} and {{passage}}; got {self.line!r}")

    def prompt(self, query: str, passages: Sequence[str]) -> str:
        """The prompt of one list, its passages in the order given."""
        if len(passages) > len(self.labels):
            raise ValueError(f"a list of {len(passages)} candidates has more than the {len(self.labels)} labels of "
                             "the listwise format; rank shorter lists or give more labels")
        lines = "\n".join(self.line.replace("{label}", lab).replace("{passage}", p)
                          for lab, p in zip(self.labels, passages, strict=False))
        values = {"query": query, "passages": lines, "instruction": self.instruction}
        return _FIELD.sub(lambda m: values[m.group(1)], self.template)

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON values."""
        out = asdict(self)
        out["labels"] = list(self.labels)
        return out


class ListwiseRanker(LLMRanker):
    """A listwise LLM reranker with permutation self-consistency (``llm_listwise``); see the module.

    Parameters
    ----------
    pretrained : str or path, optional
        A local causal LM folder or ``.gguf`` file; the packaged SmolLM2 by default.
    template : str or dict, optional
        The listwise prompt (:data:`LISTWISE_TEMPLATE`), or a dict of
        :class:`ListwiseFormat`'s fields.
    answers : sequence of str, optional
        The passages' labels (``A`` to ``Z``).
    n_permutations : int
        S, the random orders each list is shown in (10 by default).
    passage_tokens, query_tokens : int
        Each passage is cut to its first ``passage_tokens`` tokens and the
        query to its last ``query_tokens`` (the newest turns) before the
        prompt is built; a prompt still longer than ``max_length`` cuts its
        passages further, evenly.
    train_permutations : int
        The orders each training list is shown in by ``fit``.
    max_length : int
        Tokens per prompt (1,024 by default).
    **params
        Every other parameter of :class:`~uncertank_llm.LLMRanker`
        (``train_ratio`` is not used: a list is shown whole).
    """

    name = "llm_listwise"

    def __init__(
        self, pretrained: Any = None, *, template: Any = None, n_permutations: int = 10, passage_tokens: int = 48,
        query_tokens: int = 64, train_permutations: int = 1, max_length: int = 1024, **params: Any,
    ) -> None:
        self.n_permutations = n_permutations
        self.passage_tokens = passage_tokens
        self.query_tokens = query_tokens
        self.train_permutations = train_permutations
        super().__init__(pretrained, template=template, max_length=max_length, **params)

    def _check_params(self) -> None:
        super()._check_params()
        check_positive_int(self.n_permutations, "n_permutations")
        check_positive_int(self.passage_tokens, "passage_tokens")
        check_positive_int(self.query_tokens, "query_tokens")
        check_positive_int(self.train_permutations, "train_permutations")

    def read_template(self, template: Any, *, instruction: str | None, answers: Sequence[str | int] | None) -> Any:
        """The :class:`ListwiseFormat` the parameters describe."""
        if isinstance(template, ListwiseFormat):
            fields = template.to_dict()
        elif template is None or isinstance(template, str):
            fields = {"template": template or LISTWISE_TEMPLATE}
        elif isinstance(template, dict):
            fields = dict(template)
        else:
            raise TypeError(f"template must be a listwise template str, a dict or a ListwiseFormat; got "
                            f"{type(template).__name__}")
        if instruction is not None:
            fields["instruction"] = instruction
        if answers is not None:
            if not all(isinstance(a, str) for a in answers):
                raise TypeError(f"answers (the passages' labels) must be strings; got {list(answers)!r}")
            fields["labels"] = tuple(answers)
        unknown = sorted(set(fields) - set(ListwiseFormat.__dataclass_fields__))
        if unknown:
            raise ValueError(f"template has unknown key(s) {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(ListwiseFormat.__dataclass_fields__)}")
        return ListwiseFormat(**fields)

    def read_answer_ids(self, tokenizer: Any) -> tuple[int, ...]:
        """The token id of every label, each one token."""
        return tuple(single_token_ids(tokenizer, list(self.format.labels), "passage label"))

    def cost_rates(self, *, warm_start: bool = False) -> CostRates | None:
        """No measured rates: a list's cost depends on its length and the permutations."""
        return None

    # ---------------------------------------------------------------- prompts

    def _list_ids(self, query: str, passages: list[str]) -> list[int]:
        """The token ids of one list's prompt, its passages cut to fit ``max_length``."""
        tok = self._tok
        query = _cut(query, tok, self.query_tokens, from_left=True)
        budget = self.passage_tokens
        for _ in range(64):
            cut = [_cut(p, tok, budget, from_left=False) for p in passages]
            ids: list[int] = tok(self.format.prompt(query, cut), add_special_tokens=self._special_tokens())["input_ids"]
            over = len(ids) - self.max_length
            if over <= 0:
                return ids
            if budget <= 1:
                break
            budget = max(1, budget - max(1, -(-over // max(len(passages), 1))))
        raise ValueError(f"a list of {len(passages)} passages does not fit max_length {self.max_length} tokens even "
                         "with one token a passage; raise max_length or rank shorter lists")

    def _permutations(self, queries: QuerySet, n: int) -> list[list[NDArray[np.int64]]]:
        """Per query, ``n`` seeded random orders of its candidates (the same for every call)."""
        out = []
        for q, size in enumerate(queries.lengths.tolist()):
            rng = np.random.default_rng([self.seed, q, size])
            out.append([rng.permutation(size) for _ in range(n)])
        return out

    def _prompts(
        self, queries: QuerySet, perms: list[list[NDArray[np.int64]]]
    ) -> tuple[list[list[int]], list[tuple[int, int]]]:
        """The prompt of every (query, permutation), and which (query, permutation) each is."""
        qs, docs = self._pairs(queries)
        self.build()
        too_long = [q for q, size in enumerate(queries.lengths.tolist()) if size > len(self.format.labels)]
        if too_long:
            raise ValueError(f"queries: query {too_long[0]} has {int(queries.lengths[too_long[0]])} candidates, more "
                             f"than the {len(self.format.labels)} labels of the listwise format")
        ids, where = [], []
        for q in range(queries.n_queries):
            lo, hi = int(queries.offsets[q]), int(queries.offsets[q + 1])
            if hi == lo:
                continue
            for s, perm in enumerate(perms[q]):
                ids.append(self._list_ids(qs[lo], [docs[lo + i] for i in perm.tolist()]))
                where.append((q, s))
        return ids, where

    # ---------------------------------------------------------------- scoring

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """P(ranked first) of every candidate in each of S orders: shape (S, n_pairs); rows sum to 1 per query."""
        self.check_fitted()
        n = self.n_permutations if n_samples is None else check_positive_int(n_samples, "n_samples")
        perms = self._permutations(queries, n)
        ids, where = self._prompts(queries, perms)
        self.activate()
        logits, _ = score_prompts(self.scorer, ids, batch_size=self.eval_batch_size, pad_id=self._pad_id(),
                                  device=self.torch_device, show_progress=self.show_progress,
                                  desc=f"{self.name}: {len(ids)} lists")
        out = np.zeros((n, queries.n_pairs), dtype=np.float64)
        for row, (q, s) in enumerate(where):
            lo = int(queries.offsets[q])
            perm = perms[q][s]
            shown = logits[row, : perm.size]
            p = np.exp(shown - shown.max())
            out[s, lo + perm] = p / p.sum()
        return PredictiveSamples(out, queries.offsets, ranker=self.name)

    def predict(self, queries: QuerySet) -> Predictions:
        """P(ranked first), the mean over the S orders, shape (n_pairs,)."""
        s = self.predict_samples(queries)
        return Predictions(np.clip(s.samples.mean(0), 0.0, 1.0), queries.offsets, ranker=self.name)

    def logit_differences(self, queries: QuerySet) -> NDArray[np.float64]:
        """The logit of P(ranked first) of every pair (a listwise reranker has no yes/no logits)."""
        p = np.clip(self.predict(queries).scores, 1e-12, 1 - 1e-12)
        return np.log(p) - np.log1p(-p)

    # ---------------------------------------------------------------- training

    def training_examples(self, train: QuerySet, *, seed: int) -> tuple[list[list[int]], NDArray[np.int64]]:
        """Each training list with a relevant candidate, in ``train_permutations`` orders; target: its label."""
        assert train.labels is not None
        keep = [q for q in range(train.n_queries)
                if (train.labels[train.offsets[q]:train.offsets[q + 1]] > 0).any() and train.lengths[q] >= 2]
        if not keep:
            raise ValueError(f"train ({train.name or 'unnamed'}) has no list of two or more candidates with a "
                             "relevant one to learn from")
        sub = train.subset(np.asarray(keep))
        rng = np.random.default_rng(seed)
        perms = [[rng.permutation(size) for _ in range(self.train_permutations)] for size in sub.lengths.tolist()]
        ids, where = self._prompts(sub, perms)
        assert sub.labels is not None
        targets = []
        for q, s in where:
            lo = int(sub.offsets[q])
            relevant = np.flatnonzero(sub.labels[lo + perms[q][s]] > 0)
            targets.append(int(rng.choice(relevant)))
        return ids, np.asarray(targets, dtype=np.int64)

    def validation_loss(self, valid: QuerySet, adapter: str) -> float:
        """The mean log loss of P(ranked first) against relevance on ``valid``'s pairs."""
        assert valid.labels is not None
        self.use_adapter(adapter)
        p = np.clip(self.predict(valid).scores, 1e-12, 1 - 1e-12)
        y = valid.labels > 0
        return float(-np.mean(np.where(y, np.log(p), np.log1p(-p))))
