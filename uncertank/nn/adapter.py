"""Any torch model as a stochastic ranker by MC dropout: a bi-encoder, a custom module, a ranker of yours.

:class:`TorchDropoutRanker` takes the scoring function and the
``torch.nn.Module`` it uses. Each of the T passes runs the function with
dropout switched on at every site of the module (every dropout module and
attention kernel, nothing else leaves eval mode; the masks drawn by
:func:`uncertank.nn.fast_mc_dropout` where it applies, else by
:func:`uncertank.nn.dropout_active`), seeded, and the module's own train/eval modes are restored afterwards, also
when the function raises.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from uncertank._types import Predictions, PredictiveSamples, QuerySet
from uncertank.adapters import CallableRanker
from uncertank.nn.dropout import fast_mc_dropout, fast_path_problem
from uncertank.nn.inference import check_active_dropout, dropout_active, dropout_owners
from uncertank.validation import as_float_array, check_positive_int

__all__ = ["TorchDropoutRanker"]


class TorchDropoutRanker:
    """A scoring function over a torch module as a :class:`~uncertank.StochasticRanker` by MC dropout.

    Parameters
    ----------
    fn : callable
        ``fn(context, candidates) -> scores`` (one call per query: the
        context's turns and the candidate texts, one score per candidate), or
        with ``per_query=False`` ``fn(queries) -> scores`` of shape
        (n_pairs,) for a whole :class:`~uncertank.QuerySet` (batch inside
        ``fn`` as you like). Scores are probabilities of relevance in [0, 1],
        as a tensor, an array or a list.
    module : torch.nn.Module
        The module ``fn`` runs, whose dropout is switched on for the passes.
        It must hold at least one dropout site.
    n_passes : int
        T, the passes :meth:`predict_samples` runs by default (10).
    seed : int
        Seeds the dropout masks (pass ``t`` is seeded ``seed + t``), so
        predictions are reproducible; torch's global generator is left as it was.
    per_query : bool
        How ``fn`` is called (see ``fn``).
    mc_impl : {"auto", "fast", "reference"}
        How the masks are drawn: ``"fast"`` is
        :func:`uncertank.nn.fast_mc_dropout` (the masks from one seeded
        stream, attention kept in a fused kernel; CPU modules of the kinds
        :func:`uncertank.nn.fast_path_problem` accepts), ``"reference"`` is
        :func:`uncertank.nn.dropout_active` (torch's own dropout, pass ``t``
        seeded ``seed + t``); ``"auto"`` takes the fast path where it applies.
        Both sample from the same distribution.
    name : str, optional
        Report name; ``fn``'s ``__name__`` by default.

    Examples
    --------
    >>> import torch
    >>> from uncertank import QuerySet
    >>> net = torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Linear(3, 1))
    >>> def score(context, candidates):
    ...     x = torch.tensor([[len(c), len(context), 1.0] for c in candidates])
    ...     return torch.sigmoid(net(x))[:, 0]
    >>> qs = QuerySet.from_lists([["hi"]], [["a", "bb"]], [[1, 0]])
    >>> TorchDropoutRanker(score, net, n_passes=4).predict_samples(qs).samples.shape
    (4, 2)
    """

    def __init__(
        self,
        fn: Callable[..., ArrayLike | torch.Tensor],
        module: torch.nn.Module,
        *,
        n_passes: int = 10,
        seed: int = 0,
        per_query: bool = True,
        mc_impl: str = "auto",
        name: str | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable; got {type(fn).__name__}")
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"module must be a torch.nn.Module; got {type(module).__name__}")
        if not dropout_owners(module):
            raise ValueError(
                f"module must hold at least one dropout site for MC dropout; {type(module).__name__} has none"
            )
        check_active_dropout(module)
        self.fn = fn
        self.module = module
        self.n_passes = check_positive_int(n_passes, "n_passes")
        self.seed = check_positive_int(seed, "seed", minimum=0)
        self.per_query = bool(per_query)
        if mc_impl not in ("auto", "fast", "reference"):
            raise ValueError(f"mc_impl must be 'auto', 'fast' or 'reference'; got {mc_impl!r}")
        if mc_impl == "fast":
            problem = self._fast_problem()
            if problem is not None:
                raise ValueError(f"mc_impl='fast' cannot run this module: {problem}")
        self.mc_impl = mc_impl
        self.name: str = name or str(getattr(fn, "__name__", type(fn).__name__))

    def _fast_problem(self) -> str | None:
        if any(p.device.type != "cpu" for p in self.module.parameters()):
            return "its parameters are not on the CPU"
        return fast_path_problem(self.module)

    @property
    def uses_fast_path(self) -> bool:
        """Whether :meth:`predict_samples` draws its masks with :func:`uncertank.nn.fast_mc_dropout`."""
        return self.mc_impl != "reference" and self._fast_problem() is None

    def _scores(self, queries: QuerySet) -> NDArray[np.float64]:
        if not self.per_query:
            out = _as_array(self.fn(queries), f"scores returned by {self.name}")
            if out.shape != (queries.n_pairs,):
                raise ValueError(
                    f"{self.name} must return one score per pair ({queries.n_pairs},); got shape {out.shape}"
                )
            return out
        def per_query(context: list[str], candidates: list[str]) -> NDArray[np.float64]:
            return _as_array(self.fn(context, candidates), f"scores returned by {self.name}")

        return CallableRanker(per_query, name=self.name).predict(queries).scores

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """T passes with dropout on, shape (n_samples, n_pairs); row ``t`` is one joint draw.

        Parameters
        ----------
        queries : QuerySet
        n_samples : int, optional
            Passes to run; ``n_passes`` by default.
        """
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        t = self.n_passes if n_samples is None else check_positive_int(n_samples, "n_samples")
        rows = np.empty((t, queries.n_pairs), dtype=np.float64)
        if self.uses_fast_path:
            with fast_mc_dropout(self.module, seed=self.seed), torch.inference_mode():
                for i in range(t):
                    rows[i] = self._scores(queries)
            return PredictiveSamples(rows, queries.offsets, ranker=self.name)
        devices = [p.device for p in self.module.parameters() if p.device.type == "cuda"][:1]
        with torch.random.fork_rng(devices=devices), dropout_active(self.module), torch.inference_mode():
            for i in range(t):
                torch.manual_seed(self.seed + i)
                rows[i] = self._scores(queries)
        return PredictiveSamples(rows, queries.offsets, ranker=self.name)

    def predict(self, queries: QuerySet) -> Predictions:
        """The mean of the T passes, shape (n_pairs,) (the MC dropout prediction)."""
        return self.predict_samples(queries).to_predictions()

    def predict_deterministic(self, queries: QuerySet) -> Predictions:
        """One pass with the module in eval mode (dropout off), shape (n_pairs,)."""
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        before = {m: m.training for m in self.module.modules()}
        self.module.eval()
        try:
            with torch.inference_mode():
                scores = self._scores(queries)
        finally:
            for m, flag in before.items():
                m.training = flag
        return Predictions(scores, queries.offsets, ranker=self.name)

    def __repr__(self) -> str:
        return f"TorchDropoutRanker({self.name!r}, n_passes={self.n_passes})"


def _as_array(value: ArrayLike | torch.Tensor, what: str) -> NDArray[np.float64]:
    if isinstance(value, torch.Tensor):
        return as_float_array(value.detach().float().cpu().numpy(), what)
    return as_float_array(value, what)
