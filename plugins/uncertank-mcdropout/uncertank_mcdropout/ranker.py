"""MC dropout: T stochastic passes of a cross-encoder with dropout on at every site."""

from __future__ import annotations

from typing import Any

from typing_extensions import Self

from uncertank import Predictions, PredictiveSamples, QuerySet
from uncertank.nn import NeuralRanker
from uncertank.validation import check_positive_int

__all__ = ["MCDropoutRanker"]


class MCDropoutRanker(NeuralRanker):
    """A cross-encoder whose dropout stays on at test time (Gal & Ghahramani, ICML 2016).

    Penha & Hauff (EACL 2021, section 3.2) fine-tune the BERT ranker as usual
    and then score every pair ``T`` times with dropout active; the mean of
    the passes is the prediction and their spread its uncertainty. Dropout is
    switched on at *every* site, attention included: with transformers 5 the
    attention kernels read their own module's training flag, so switching on
    only the ``nn.Dropout`` modules would leave attention dropout off (see
    :func:`uncertank.nn.mc_dropout`; a test pins it). Nothing else changes
    mode (BERT has no batch norm).

    Each pass is one joint draw over every pair: row ``t`` of
    :meth:`predict_samples` holds pass ``t``. Passes run batch by batch (the
    batch is encoded once and run ``T`` times), never one example at a time.

    Parameters
    ----------
    backbone : None, str, path or transformers.PretrainedConfig
        As in :class:`uncertank.nn.NeuralRanker`.
    n_passes : int
        T, the number of stochastic passes (10 by default, as in the paper).
    **params
        Every other parameter of :class:`uncertank.nn.NeuralRanker`; ``seed``
        also seeds the dropout masks, so predictions are reproducible.
    """

    name = "mc_dropout"

    def __init__(self, backbone: Any = None, *, n_passes: int = 10, **params: Any) -> None:
        super().__init__(backbone, **params)
        self.n_passes = check_positive_int(n_passes, "n_passes")

    @classmethod
    def from_ranker(cls, ranker: NeuralRanker, *, n_passes: int = 10) -> Self:
        """Share the weights of a fitted :class:`~uncertank.nn.NeuralRanker` (``bert``)."""
        if not isinstance(ranker, NeuralRanker):
            raise TypeError(f"ranker must be a NeuralRanker (such as bert); got {type(ranker).__name__}")
        new = cls(ranker.backbone, n_passes=n_passes, **{
            k: v for k, v in ranker.get_params().items() if k != "name"
        })
        new.training_config = ranker.training_config
        new.model, new.tokenizer, new.history_ = ranker.build_model(), ranker.tokenizer, ranker.history_
        return new

    def extra_params(self) -> dict[str, Any]:
        """``n_passes``, stored in checkpoints."""
        return {"n_passes": self.n_passes}

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Joint draws of P(relevant), shape (n_samples, n_pairs).

        Parameters
        ----------
        queries : QuerySet
        n_samples : int, optional
            Passes to run; ``n_passes`` by default.
        """
        queries = self.check_queries(queries)
        t = self.n_passes if n_samples is None else check_positive_int(n_samples, "n_samples")
        probs = self.score(queries, n_passes=t, mc=True, seed=self.training_config.seed)
        return PredictiveSamples(probs, queries.offsets, ranker=self.name)

    def predict(self, queries: QuerySet) -> Predictions:
        """The mean over the ``n_passes`` passes, shape (n_pairs,)."""
        return self.predict_samples(queries).to_predictions()
