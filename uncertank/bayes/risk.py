"""Deprecated: renamed :mod:`uncertank.bayes.risk_measures` (removed in 0.3.0).

``uncertank.bayes.risk`` and :mod:`uncertank.uncertainty.risk` meant two
different things; the measures of systems on score matrices (URisk, ZRisk,
GeoRisk) now live in :mod:`uncertank.bayes.risk_measures`. Importing this module
warns once and re-exports the same objects.
"""

from __future__ import annotations

import warnings

from uncertank.bayes.risk_measures import (
    RISK_CONVENTIONS,
    RiskConvention,
    georisk,
    loss_weight,
    urisk,
    urisk_table,
    zrisk,
)

__all__ = ["RISK_CONVENTIONS", "RiskConvention", "georisk", "loss_weight", "urisk", "urisk_table", "zrisk"]

warnings.warn(
    "uncertank.bayes.risk is deprecated and will be removed in 0.3.0; import from uncertank.bayes.risk_measures",
    DeprecationWarning,
    stacklevel=2,
)
