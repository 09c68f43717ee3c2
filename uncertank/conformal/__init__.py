"""A threshold a user can ship: conformal candidate sets, risk control and abstention for any ranker.

Calibrate once on labelled calibration queries held out from the test
queries; the threshold (or ``k``) then carries a finite-sample guarantee for
new queries exchangeable with them:

- :func:`split_conformal`: candidate sets that hold a relevant candidate
  with probability ``>= 1 - alpha`` (score threshold, top-k, adaptive sets);
- :func:`conformal_risk_control`: sets whose expected miss rate
  (1 - recall) is ``<= alpha``;
- :func:`fdr_control`: sets whose false discovery rate is ``<= alpha`` with
  probability ``>= 1 - delta`` (Learn-then-Test, :mod:`.ltt`);
- :func:`conformal_abstention`: answer only above a threshold, with an error
  rate among answered queries ``<= alpha`` w.p. ``>= 1 - delta`` (conformal
  NOTA);
- :func:`weighted_conformal`: sets under covariate shift, with
  likelihood-ratio weights from a domain classifier
  (:func:`domain_weights`); :func:`exchangeability_test` names a shift that
  breaks the guarantee.

:func:`calibrate_threshold` and :func:`apply_threshold` put them behind
one call, as ``uncertank threshold`` does on TREC runs. The conformity score
is the user's choice (:func:`conformity_scores`), and every procedure is
vectorised over flat scores with CSR ``offsets``. See docs/conformal.md.
"""

from __future__ import annotations

from uncertank.conformal.abstention import (
    abstention_curve,
    abstention_data,
    answer,
    conformal_abstention,
    nota_abstention_data,
)
from uncertank.conformal.calibrated import Answers, CandidateSets, ConformalThreshold, WeightedSets
from uncertank.conformal.exchangeability import ExchangeabilityCheck, exchangeability_test
from uncertank.conformal.fdr import fdr_control, fdr_curve
from uncertank.conformal.levels import conformal_rank, min_certifiable
from uncertank.conformal.ltt import fixed_sequence, hoeffding_bentkus, learn_then_test, threshold_grid
from uncertank.conformal.risk_control import conformal_risk_control
from uncertank.conformal.scores import SCORES, conformity_scores, labelled_scores
from uncertank.conformal.sets import candidate_sets, conformal_quantile, split_conformal
from uncertank.conformal.split import QuerySplit, split_queries
from uncertank.conformal.threshold import RISKS, apply_threshold, calibrate_threshold
from uncertank.conformal.weighted import (
    LikelihoodRatioWeights,
    domain_weights,
    weighted_conformal,
    weighted_thresholds,
)

__all__ = [
    "RISKS",
    "SCORES",
    "Answers",
    "CandidateSets",
    "ConformalThreshold",
    "ExchangeabilityCheck",
    "LikelihoodRatioWeights",
    "QuerySplit",
    "WeightedSets",
    "abstention_curve",
    "abstention_data",
    "answer",
    "apply_threshold",
    "calibrate_threshold",
    "candidate_sets",
    "conformal_abstention",
    "conformal_quantile",
    "conformal_rank",
    "conformal_risk_control",
    "conformity_scores",
    "domain_weights",
    "exchangeability_test",
    "fdr_control",
    "fdr_curve",
    "fixed_sequence",
    "hoeffding_bentkus",
    "labelled_scores",
    "learn_then_test",
    "min_certifiable",
    "nota_abstention_data",
    "split_conformal",
    "split_queries",
    "threshold_grid",
    "weighted_conformal",
    "weighted_thresholds",
]
