"""The Bayesian comparison in one import: the fitted :class:`SystemComparison` and :func:`compare`.

A facade over the parts of :mod:`uncertank.bayes`, which import one way,
bottom to top:

1. :mod:`~uncertank.bayes.data`, :mod:`~uncertank.bayes.likelihood`,
   :mod:`~uncertank.bayes.cells`, :mod:`~uncertank.bayes.models`,
   :mod:`~uncertank.bayes.diagnostics`, :mod:`~uncertank.bayes.summaries`:
   frames, cells, models and checks;
2. :mod:`~uncertank.bayes.predictive` (posterior predictive replicates from
   :func:`~uncertank.bayes.predictive.posterior_predictive`, the model's own,
   which needs only the cells and the likelihood, so that
   :mod:`~uncertank.bayes.models` can re-export it),
   :mod:`~uncertank.bayes.risk_measures` (URisk, ZRisk and GeoRisk) and
   :mod:`~uncertank.bayes.plots` (figures): functions of a fit, typed by its
   interface :class:`~uncertank.bayes._fitted.Fitted`;
3. :mod:`~uncertank.bayes.result`: the result object, :class:`SystemComparison`
   (and :class:`Gate`), whose methods call the modules of step 2;
4. :mod:`~uncertank.bayes.fit` (:func:`compare`: models, samplers, the ESS
   gate) and :mod:`~uncertank.bayes.io` (files), which make results;
5. this module and :mod:`uncertank.bayes`, which only re-export.
"""

from __future__ import annotations

from uncertank.bayes.diagnostics import ConvergenceError, ConvergenceWarning, Diagnostics, SamplingError
from uncertank.bayes.fit import SAMPLERS, compare
from uncertank.bayes.result import Gate, SystemComparison

__all__ = [
    "SAMPLERS",
    "ConvergenceError",
    "ConvergenceWarning",
    "Diagnostics",
    "Gate",
    "SamplingError",
    "SystemComparison",
    "compare",
]
