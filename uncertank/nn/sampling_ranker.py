"""The ``predict_samples`` template of the neural rankers that draw joint samples.

:class:`SamplingRanker`, put before :class:`~uncertank.nn.NeuralRanker` among
a ranker's bases, writes the preamble once: the queries are checked, the
number of draws is the argument or the constructor's default (the parameter
that ``samples_param`` names) and must be a positive integer, the ranker must
be fitted, and the draws come back as
:class:`~uncertank.PredictiveSamples`. A ranker gives only its draws:

- :meth:`SamplingRanker.sample_batch` (the usual hook): a function of
  ``(model, batch)`` returning the batch's draws, shape ``(batch, n_samples)``;
  :meth:`~uncertank.nn.NeuralRanker.batch_outputs` runs it over every batch
  (the network on the accelerator's device, in eval mode, without
  gradients);
- :meth:`SamplingRanker.sample_probabilities`, for draws that are not made
  batch by batch (MC dropout's passes, a GP's joint draws per query).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray

from uncertank._types import PredictiveSamples, QuerySet
from uncertank.validation import check_positive_int

if TYPE_CHECKING:
    from uncertank.nn.ranker import NeuralRanker

    _Base = NeuralRanker
else:
    _Base = object

__all__ = ["SamplingRanker"]

#: What :meth:`SamplingRanker.sample_batch` returns: ``fn(model, batch)`` -> Tensor of shape (batch, n_samples).
BatchSampler = Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]


class SamplingRanker(_Base):
    """``predict_samples`` written once for a :class:`~uncertank.nn.NeuralRanker` that draws joint samples."""

    #: The constructor parameter giving the number of draws when ``predict_samples`` is given none.
    samples_param: ClassVar[str] = "n_samples"

    def predict_samples(self, queries: QuerySet, *, n_samples: int | None = None) -> PredictiveSamples:
        """Joint draws of P(relevant), shape (n_samples, n_pairs): row ``s`` is one draw over every pair.

        Parameters
        ----------
        queries : QuerySet
        n_samples : int, optional
            The draws; the constructor's (``samples_param``) by default.

        Raises
        ------
        uncertank.NotFittedError
            Before :meth:`fit` or :meth:`load`.
        """
        queries = self.check_queries(queries)
        if n_samples is None:
            s = int(getattr(self, self.samples_param))
        else:
            s = check_positive_int(n_samples, "n_samples")
        self.check_fitted()
        probs = self.sample_probabilities(queries, s)
        return PredictiveSamples(np.ascontiguousarray(probs), queries.offsets, ranker=self.name)

    def sample_probabilities(self, queries: QuerySet, n_samples: int) -> NDArray[np.float64]:
        """The draws of every pair, shape (n_samples, n_pairs): :meth:`sample_batch` over every batch.

        Called by :meth:`predict_samples` once the queries, the count and
        the fitted state are checked; override it for draws that are not
        made batch by batch.
        """
        draw = self.sample_batch(n_samples)
        samples: NDArray[np.float64] = self.batch_outputs(queries, draw, f"{self.name} samples").T
        return samples

    def sample_batch(self, n_samples: int) -> BatchSampler:
        """The per-batch draws: ``fn(model, batch)`` -> Tensor of shape (batch, n_samples); override it.

        Called once per :meth:`predict_samples`, before any batch: what the
        batches share (posterior draws from a seeded generator) is drawn
        here, so that every batch applies the same draws.
        """
        raise NotImplementedError(f"{type(self).__name__} must override sample_batch or sample_probabilities")
