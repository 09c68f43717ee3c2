"""Last-layer Laplace on a trained cross-encoder (ranker ``laplace``) for uncertank.

Importing this package is light: torch loads when a class is first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__all__ = [
    "STRUCTURES",
    "LaplaceRanker",
    "LastLayerPosterior",
    "fit_last_layer",
    "log_marginal_likelihood",
    "optimize_prior_precision",
    "probit",
]

__getattr__ = lazy_exports(__name__, {
    "LaplaceRanker": "uncertank_laplace.ranker",
    "STRUCTURES": "uncertank_laplace.posterior",
    "LastLayerPosterior": "uncertank_laplace.posterior",
    "fit_last_layer": "uncertank_laplace.posterior",
    "log_marginal_likelihood": "uncertank_laplace.posterior",
    "optimize_prior_precision": "uncertank_laplace.posterior",
    "probit": "uncertank_laplace.posterior",
})
