"""uncertank-tfidf: a worked example of an uncertank plugin package.

What it registers (see :mod:`uncertank_tfidf.plugin`):

- rankers ``tfidf`` (:class:`~uncertank_tfidf.ranker.TfidfRanker`) and
  ``tfidf-bootstrap`` (:class:`~uncertank_tfidf.ranker.BootstrapTfidfRanker`,
  a stochastic ranker whose draws come from bootstrap resamples of the
  training documents);
- the metric ``precision_at_k`` (:data:`~uncertank_tfidf.metric.PRECISION_AT_K`);
- the recalibrator ``beta`` (:class:`~uncertank_tfidf.recalibration.BetaCalibration`);
- the dataset ``ubuntu-questions`` (:func:`~uncertank_tfidf.dataset.ubuntu_questions`).

Importing this package, or its plugin module, imports nothing beyond
uncertank itself: the classes load when first used.
"""

from __future__ import annotations

from uncertank.plugin_packages import lazy_exports

__version__ = "0.1.0"

__all__ = ["BetaCalibration", "BootstrapTfidfRanker", "TfidfRanker", "precision_at_k", "ubuntu_questions"]

__getattr__ = lazy_exports(__name__, {
    "TfidfRanker": "uncertank_tfidf.ranker",
    "BootstrapTfidfRanker": "uncertank_tfidf.ranker",
    "precision_at_k": "uncertank_tfidf.metric",
    "BetaCalibration": "uncertank_tfidf.recalibration",
    "ubuntu_questions": "uncertank_tfidf.dataset",
})
