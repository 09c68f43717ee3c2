"""Are the calibration and the test queries exchangeable? A two-sample test on their scores.

Every guarantee of :mod:`uncertank.conformal` assumes that a new query is
drawn as the calibration queries were. That cannot be checked on labels
the test queries do not have, but it can be refuted on their scores: if the
distribution of a per-query summary of the scores (the top score, by
default) differs between calibration and test queries, they are not
exchangeable, and the guarantee does not hold for the test queries.
:func:`exchangeability_test` runs the two-sample Kolmogorov-Smirnov test on
that summary and names the broken guarantee in its message, so that a shift
is reported rather than silent.

A test that does not reject is no proof of exchangeability: it has little
power on few queries, and a shift in what the scores do not show (in the
labels given the scores) is invisible to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from uncertank._types import Predictions, RankedLists, query_index
from uncertank.conformal.lists import query_max
from uncertank.validation import check_choice, check_unit_interval

__all__ = ["ExchangeabilityCheck", "exchangeability_test"]

Summary = Literal["top", "mean"]


@dataclass(frozen=True)
class ExchangeabilityCheck:
    """The outcome of :func:`exchangeability_test`.

    Attributes
    ----------
    statistic : float
        The Kolmogorov-Smirnov distance between the two empirical
        distributions of the summary.
    p_value : float
        Its p-value (``scipy.stats.ks_2samp``).
    level : float
        The level the p-value is compared with.
    n_calibration, n_test : int
        Queries on each side.
    summary : str
        The per-query summary compared (``"top"``: the top score;
        ``"mean"``: the mean score).
    exchangeable : bool
        False when the test rejects exchangeability at ``level``.
    message : str
        One sentence for the user.
    """

    statistic: float
    p_value: float
    level: float
    n_calibration: int
    n_test: int
    summary: str
    exchangeable: bool
    message: str

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"statistic": self.statistic, "p_value": self.p_value, "level": self.level,
                "n_calibration": self.n_calibration, "n_test": self.n_test, "summary": self.summary,
                "exchangeable": self.exchangeable, "message": self.message}


def _summary(scores: Predictions | RankedLists, summary: str, name: str) -> NDArray[np.float64]:
    if not isinstance(scores, (Predictions, RankedLists)):
        raise TypeError(f"{name} must be Predictions or RankedLists; got {type(scores).__name__}")
    s, off = scores.scores, scores.offsets
    if summary == "top":
        return query_max(s, off)
    return np.bincount(query_index(off), weights=s) / np.diff(off)


def exchangeability_test(
    calibration: Predictions | RankedLists,
    test: Predictions | RankedLists,
    *,
    level: float = 0.05,
    summary: Summary = "top",
) -> ExchangeabilityCheck:
    """Two-sample Kolmogorov-Smirnov test of a per-query score summary, calibration against test.

    Parameters
    ----------
    calibration, test : Predictions or RankedLists
        Conformity scores of the calibration and of the test queries.
    level : float
        Reject exchangeability when the p-value is below it.
    summary : {"top", "mean"}
        The per-query summary compared.

    Returns
    -------
    ExchangeabilityCheck

    Examples
    --------
    >>> import numpy as np
    >>> from uncertank import RankedLists
    >>> rng = np.random.default_rng(0)
    >>> cal = RankedLists.from_dense(rng.random((300, 5)), np.zeros((300, 5), int))
    >>> shifted = RankedLists.from_dense(rng.random((300, 5)) ** 3, np.zeros((300, 5), int))
    >>> exchangeability_test(cal, shifted).exchangeable
    False
    """
    from scipy.stats import ks_2samp

    level = check_unit_interval(level, "level")
    check_choice(summary, "summary", ("top", "mean"))
    a = _summary(calibration, summary, "calibration")
    b = _summary(test, summary, "test")
    res = ks_2samp(a, b)
    stat, p = float(res.statistic), float(res.pvalue)
    ok = p >= level
    what = "top scores" if summary == "top" else "mean scores"
    if ok:
        message = (f"no evidence against exchangeability: the queries' {what} do not differ (KS D = {stat:.3f}, "
                   f"p = {p:.3g} >= {level:g}; {a.size} calibration, {b.size} test queries)")
    else:
        message = (f"calibration and test queries are not exchangeable: their {what} differ (KS D = {stat:.3f}, "
                   f"p = {p:.3g} < {level:g}); the conformal guarantee does not hold for the test queries "
                   "(calibrate on queries drawn as they are, or reweight under covariate shift with "
                   "uncertank.conformal.weighted_conformal)")
    return ExchangeabilityCheck(stat, p, level, int(a.size), int(b.size), summary, ok, message)
