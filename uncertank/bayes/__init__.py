"""Bayesian comparison of IR systems: Gaussian, ZOiB and ZOiB-rank models in PyMC.

After Benham, Moffat & Culpepper, "Bayesian System Inference on Shallow
Pools" (ECIR 2021), whose models were written in R with brms and Stan; here
they are PyMC models returning ArviZ objects. Needs the ``bayes`` extra
(``pip install "uncertank[bayes]"``); PyMC and ArviZ are imported only when a
model is built or a fit is read, so importing this package stays light.

Typical use::

    from uncertank.bayes import compare, frame_from_trec_covid

    cmp = compare(frame_from_trec_covid("zoib"), family="zoib", target_ess=10_000)
    cmp.diagnostics().ok                     # R-hat, ESS, divergences all pass
    cmp.system_effects()                     # posterior mean and 95% interval per system
    cmp.distinguishable("best")              # systems the best one is credibly better than
    cmp.urisk("bm25_baseline", r=2)          # URisk on posterior predictive replicates
    cmp.write_ppc_figure("ppc.png")          # the posterior predictive check, into a file

The modules import one way, bottom to top:

1. :mod:`~uncertank.bayes.data`, :mod:`~uncertank.bayes.likelihood`,
   :mod:`~uncertank.bayes.cells`, :mod:`~uncertank.bayes.models`,
   :mod:`~uncertank.bayes.diagnostics`, :mod:`~uncertank.bayes.summaries`:
   frames, cells, models and checks;
2. :mod:`~uncertank.bayes.predictive` (posterior predictive replicates, the
   model's own, which needs only the cells and the likelihood),
   :mod:`~uncertank.bayes.risk_measures` (URisk, ZRisk and GeoRisk) and
   :mod:`~uncertank.bayes.plots` (figures): functions of a fit, typed by its
   interface :class:`~uncertank.bayes._fitted.Fitted`;
3. :mod:`~uncertank.bayes.comparison`: the result object, :class:`SystemComparison`
   (and :class:`Gate`), whose methods call the modules of step 2;
4. :mod:`~uncertank.bayes.fit` (:func:`compare`: models, samplers, the ESS
   gate), which makes results (a result writes and reads its own file:
   :meth:`SystemComparison.to_netcdf` and :meth:`SystemComparison.from_netcdf`);
5. this package, which only re-exports.
"""

from __future__ import annotations

from uncertank.bayes.cells import FAMILIES, Design, design, linear_predictor
from uncertank.bayes.comparison import Gate, SystemComparison
from uncertank.bayes.data import check_frame, drop_bottom_systems, frame_from_runs, frame_from_trec_covid
from uncertank.bayes.diagnostics import ConvergenceError, ConvergenceWarning, Diagnostics, SamplingError
from uncertank.bayes.fit import SAMPLERS, compare
from uncertank.bayes.likelihood import zoib_logp_graph, zoib_logpdf, zoib_rvs
from uncertank.bayes.models import gaussian, zoib, zoib_rank
from uncertank.bayes.predictive import posterior_predictive
from uncertank.bayes.risk_measures import RISK_CONVENTIONS, georisk, loss_weight, urisk, zrisk

__all__ = [
    "RISK_CONVENTIONS",
    "FAMILIES",
    "SAMPLERS",
    "ConvergenceError",
    "ConvergenceWarning",
    "Design",
    "Diagnostics",
    "Gate",
    "SamplingError",
    "SystemComparison",
    "check_frame",
    "compare",
    "design",
    "drop_bottom_systems",
    "frame_from_runs",
    "frame_from_trec_covid",
    "gaussian",
    "georisk",
    "linear_predictor",
    "loss_weight",
    "posterior_predictive",
    "urisk",
    "zoib",
    "zoib_logp_graph",
    "zoib_logpdf",
    "zoib_rank",
    "zoib_rvs",
    "zrisk",
]
