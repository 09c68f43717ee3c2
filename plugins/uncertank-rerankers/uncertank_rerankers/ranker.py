"""The ranker ``rerankers``: any ``rerankers.Reranker`` (AnswerDotAI's rerankers) as an uncertank ranker.

rerankers puts many rerankers behind one call, ``reranker.rank(query, docs,
doc_ids=...)``: cross-encoders, T5 rankers, ColBERT, FlashRank, API
services, LLM rankers. What their scores *are* differs by backend, and
:func:`score_kind` says it for each: a probability of relevance where the
backend gives one (or gives logits of a known link), scores otherwise, ranks
for the listwise rankers that give no score.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from uncertank import Predictions, QuerySet
from uncertank.validation import as_float_array, check_instance, check_name, check_positive_int

__all__ = ["SCORE_KINDS", "RerankersRanker", "score_kind"]

#: What a backend's scores are: ``"sigmoid"`` (one logit), ``"softmax"`` (two logits), ``"difference"``
#: (rerankers' ``l1 - l0`` for monoBERT), ``"probability"`` (given as one), ``"scores"``, ``"ranks"``.
SCORE_KINDS = ("sigmoid", "softmax", "difference", "probability", "scores", "ranks")
_PROBABILITY_KINDS = ("sigmoid", "softmax", "difference", "probability")


def _require_rerankers() -> Any:
    try:
        return importlib.import_module("rerankers")
    except ImportError as exc:
        raise ImportError(
            "the ranker rerankers needs the optional dependency rerankers; "
            f'install it with pip install "uncertank[rerankers]" ({exc})'
        ) from exc


def score_kind(reranker: Any) -> tuple[str, str]:
    """What ``reranker``'s scores are, and a sentence that says so.

    - ``TransformerRanker`` (rerankers' ``"cross-encoder"``) returns the
      classifier's logits: one logit (``"sigmoid"``: P(relevant) is its
      sigmoid, as sentence-transformers' ``CrossEncoder`` and
      :func:`uncertank.nn.from_pretrained` read it), two (``"softmax"``:
      column 1 of their softmax), or monoBERT's ``l1 - l0`` (``"difference"``).
    - ``T5Ranker`` without ``return_logits`` returns the softmax probability
      of its "true" token against "false" (``"probability"``).
    - Every other backend (ColBERT's MaxSim, FlashRank, the API services'
      relevance scores, LLM rankers) gives ``"scores"``: they rank, but are not
      claimed as probabilities of relevance. A listwise ranker that returns
      no score gives ``"ranks"`` (found when it ranks: see :meth:`RerankersRanker.predict`).

    Returns
    -------
    kind : str
        One of :data:`SCORE_KINDS` but ``"ranks"``.
    statement : str
    """
    cls = type(reranker).__name__
    if cls == "TransformerRanker":
        n = int(getattr(getattr(getattr(reranker, "model", None), "config", None), "num_labels", 1))
        if getattr(reranker, "is_monobert", False):
            return "difference", ("P(relevant) = sigmoid(l1 - l0), the softmax's column 1 of the monoBERT "
                                  "cross-encoder's two logits (rerankers gives l1 - l0)")
        if n == 1:
            return "sigmoid", "P(relevant) = sigmoid of the cross-encoder's one logit (rerankers gives the logit)"
        if n == 2:
            return "softmax", ("P(relevant) = softmax column 1 of the cross-encoder's two logits (rerankers "
                               "gives both)")
        return "scores", f"the cross-encoder has {n} logits: no single P(relevant); its first logit is the score"
    if cls == "T5Ranker" and not getattr(reranker, "return_logits", True):
        return "probability", ("P(relevant) = the T5 ranker's probability of its 'true' token against 'false', "
                               "as rerankers gives it")
    return "scores", (f"rerankers' {cls} gives scores, not probabilities of relevance: ranking metrics only "
                      "(calibration, recalibration and NOTA need probabilities; probabilities=True declares "
                      "scores in [0, 1] to be some)")


class RerankersRanker:
    """Any ``rerankers.Reranker`` as a :class:`~uncertank.Ranker`: its scores, as probabilities where they are.

    Each query is ranked with one ``reranker.rank(query, candidates,
    doc_ids=...)`` call (the backend batches it), the query text being the
    context's utterances joined by ``context_sep``; the results are put back
    in the candidates' order by their ids.

    Parameters
    ----------
    reranker : rerankers.models.ranker.BaseRanker, optional
        A reranker built by ``rerankers.Reranker(...)``. Or give ``pretrained``
        or ``model`` and it is built on first use.
    pretrained : str or path, optional
        A local model folder (a study's ``pretrained``), built as
        ``Reranker(folder, model_type=model_type or "cross-encoder", **options)``.
    model : str, optional
        A model name or provider that ``rerankers.Reranker`` takes (``"cohere"``,
        ``"colbert"``, a hub name); rerankers may need the network for it.
    model_type : str, optional
        rerankers' ``model_type`` (``"cross-encoder"``, ``"t5"``, ``"colbert"``, ...).
    probabilities : {"auto", True, False}
        ``"auto"``: P(relevant) where :func:`score_kind` finds one, the
        backend's scores otherwise (``probabilistic=False``); ``True``: P(relevant)
        or an error (scores of an unknown kind are accepted when they all lie
        in [0, 1]); ``False``: the backend's raw scores (logits stay logits;
        two logits become ``l1 - l0``).
    context_sep : str
        Joins a context's utterances into the query text.
    batch_size : int, optional
        Passed to ``rank`` (backends that batch); the backend's own by default.
    name : str, optional
        Report name; ``"rerankers"`` by default.
    **options
        Passed to ``rerankers.Reranker`` (``device``, ``dtype``, ``batch_size``,
        ...); ``verbose=0`` unless given.
    """

    name = "rerankers"

    def __init__(
        self,
        reranker: Any = None,
        *,
        pretrained: str | os.PathLike[str] | None = None,
        model: str | None = None,
        model_type: str | None = None,
        probabilities: bool | str = "auto",
        context_sep: str = " ",
        batch_size: int | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        self.reranker = reranker
        self.pretrained = pretrained
        self.model = model
        self.model_type = model_type
        self.probabilities = probabilities
        self.context_sep = context_sep
        self.batch_size = batch_size
        self._options = dict(options)
        if name is not None:
            self.name = name
        self._check_params()
        self._built: Any = None

    def _check_params(self) -> None:
        """Raise for a bad parameter (called by the constructor and :meth:`set_params`); nothing is stored."""
        given = [k for k, v in (("reranker", self.reranker), ("pretrained", self.pretrained), ("model", self.model))
                 if v is not None]
        if len(given) != 1:
            raise ValueError(f"give one of reranker, pretrained or model; got {', '.join(given) or 'none'}")
        if self.reranker is not None and not callable(getattr(self.reranker, "rank", None)):
            raise TypeError(
                f"reranker must be a rerankers reranker (with rank(query, docs, doc_ids=...)); "
                f"got {type(self.reranker).__name__}"
            )
        if self.pretrained is not None and not isinstance(self.pretrained, (str, os.PathLike)):
            raise TypeError(f"pretrained must be a local model folder (a path); got {type(self.pretrained).__name__}")
        if self.model is not None:
            check_instance(self.model, "model", str, "a model name (str)")
        if self.model_type is not None:
            check_instance(self.model_type, "model_type", str, "a rerankers model type (str)")
        if "name" in vars(self):
            check_name(vars(self)["name"], "name")
        probabilities = self.probabilities
        if not ((isinstance(probabilities, str) and probabilities == "auto") or isinstance(probabilities, bool)):
            raise ValueError(f"probabilities must be 'auto', True or False; got {probabilities!r}")
        if not isinstance(self.context_sep, str):
            raise TypeError(f"context_sep must be a str; got {type(self.context_sep).__name__}")
        if self.batch_size is not None:
            check_positive_int(self.batch_size, "batch_size")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters as given, ``**options`` by their own names (scikit-learn's ``get_params``)."""
        import inspect

        named = [p.name for p in inspect.signature(type(self)).parameters.values()
                 if p.kind is not inspect.Parameter.VAR_KEYWORD]
        params = {k: vars(self).get(k) if k == "name" else getattr(self, k) for k in named}
        return {**params, **self._options}

    def set_params(self, **params: Any) -> RerankersRanker:
        """Set constructor parameters (an unknown name is one of ``**options``), checked as the constructor checks them.

        A reranker already built from the old parameters is dropped.
        """
        before = dict(vars(self))
        try:
            for key, value in params.items():
                if key == "name" and value is None:
                    vars(self).pop("name", None)
                elif key in self.get_params() and key not in self._options:
                    setattr(self, key, value)
                else:
                    self._options = {**self._options, key: value}
            self._check_params()
        except Exception:
            vars(self).clear()
            vars(self).update(before)
            raise
        self._built = None
        return self

    @property
    def options(self) -> dict[str, Any]:
        """What ``rerankers.Reranker`` is built with: ``**options``, ``verbose=0`` unless given."""
        return {"verbose": 0, **self._options}

    @property
    def reranker_(self) -> Any:
        """The rerankers reranker: ``reranker``, or built from ``pretrained`` or ``model`` on first use."""
        if self.reranker is not None:
            return self.reranker
        if self._built is None:
            lib = _require_rerankers()
            if self.pretrained is not None:
                self._built = lib.Reranker(str(self.pretrained), model_type=self.model_type or "cross-encoder",
                                           **self.options)
            else:
                self._built = lib.Reranker(self.model, model_type=self.model_type, **self.options)
        return self._built

    @property
    def kind(self) -> str:
        """What the backend's scores are (:func:`score_kind`)."""
        return score_kind(self.reranker_)[0]

    @property
    def statement(self) -> str:
        """One sentence on what :meth:`predict` returns for this backend (:func:`score_kind`)."""
        return score_kind(self.reranker_)[1]

    @property
    def probabilistic(self) -> bool:
        """Whether :meth:`predict` returns P(relevant) (before any prediction: as :func:`score_kind` expects)."""
        if self.probabilities is False:
            return False
        return self.probabilities is True or self.kind in _PROBABILITY_KINDS

    def _rank(self, text: str, candidates: list[str]) -> list[tuple[Any, Any]]:
        """(score, rank) of every candidate, in the candidates' order."""
        kwargs = {} if self.batch_size is None else {"batch_size": int(self.batch_size)}
        results = self.reranker_.rank(text, candidates, doc_ids=list(range(len(candidates))), **kwargs)
        got: dict[int, tuple[Any, Any]] = {}
        for r in results:
            got[int(r.document.doc_id)] = (r.score, r.rank)
        missing = [i for i in range(len(candidates)) if i not in got]
        if missing:
            raise ValueError(f"rerankers returned no result for {len(missing)} of {len(candidates)} candidates")
        return [got[i] for i in range(len(candidates))]

    def raw_scores(self, queries: QuerySet) -> tuple[NDArray[np.float64], str]:
        """The backend's own score of every pair, shape (n_pairs,), and its kind.

        Two logits become ``l1 - l0``; a backend that gives ranks only gives
        ``-rank`` (kind ``"ranks"``).
        """
        if not isinstance(queries, QuerySet):
            raise TypeError(f"queries must be a QuerySet; got {type(queries).__name__}")
        kind = self.kind
        out = np.empty(queries.n_pairs, dtype=np.float64)
        ranks_only = False
        for q in range(queries.n_queries):
            context, candidates, _ = queries.query(q)
            if not candidates:
                continue
            pairs = self._rank(self.context_sep.join(context), list(candidates))
            lo = int(queries.offsets[q])
            for i, (score, rank) in enumerate(pairs):
                if score is None:
                    if rank is None:
                        raise ValueError("rerankers returned a result with neither score nor rank")
                    ranks_only = True
                    out[lo + i] = -float(rank)
                    continue
                value = np.asarray(score, dtype=np.float64).reshape(-1)
                if value.size == 2 and kind == "softmax":
                    out[lo + i] = value[1] - value[0]
                elif value.size == 1:
                    out[lo + i] = value[0]
                else:
                    raise ValueError(f"rerankers returned a score of {value.size} values for one pair; expected one"
                                     + (" or two logits" if kind == "softmax" else ""))
        return as_float_array(out, f"scores returned by {self.name}"), ("ranks" if ranks_only else kind)

    def predict(self, queries: QuerySet) -> Predictions:
        """P(relevant) of every pair where the backend gives one, its scores otherwise; shape (n_pairs,).

        Raises
        ------
        ValueError
            With ``probabilities=True`` when the backend gives scores outside
            [0, 1] or ranks only.
        """
        raw, kind = self.raw_scores(queries)
        if self.probabilities is False:
            return Predictions(raw, queries.offsets, ranker=self.name, probabilistic=False)
        if kind in ("sigmoid", "softmax", "difference"):
            probs = 1.0 / (1.0 + np.exp(-raw))
            return Predictions(probs, queries.offsets, ranker=self.name, probabilistic=True)
        if kind == "probability":
            return Predictions(raw, queries.offsets, ranker=self.name, probabilistic=True)
        if self.probabilities is True:
            if kind == "ranks" or (raw.size and not ((raw >= 0) & (raw <= 1)).all()):
                outside = raw[(raw < 0) | (raw > 1)]
                what = "ranks only" if kind == "ranks" else f"scores outside [0, 1] (e.g. {outside[0]:.4g})"
                raise ValueError(f"probabilities=True, but rerankers' {type(self.reranker_).__name__} gives {what}: "
                                 "they are not probabilities of relevance")
            return Predictions(raw, queries.offsets, ranker=self.name, probabilistic=True)
        return Predictions(raw, queries.offsets, ranker=self.name, probabilistic=False)

    def __repr__(self) -> str:
        source = str(self.pretrained) if self.pretrained is not None else self.model or type(self.reranker).__name__
        return f"RerankersRanker({self.name!r}, {source!r})"
