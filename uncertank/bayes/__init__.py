"""Bayesian comparison of IR systems: Gaussian, ZOiB and ZOiB-rank models in PyMC.

After Benham, Moffat & Culpepper, "Bayesian System Inference on Shallow
Pools" (ECIR 2021), whose models were written in R with brms and Stan; here
they are PyMC models returning ArviZ objects. Needs the ``bayes`` extra
(``pip install "uncertank[bayes]"``); PyMC and ArviZ are imported only when a
model is built or a fit is read, so importing this package stays light.

Typical use::

    from uncertank.bayes import compare, frame_from_trec_covid

    cmp = compare(frame_from_trec_covid("zoib"), family="zoib", sampler="nutpie")
    cmp.system_effects()                     # posterior mean and 95% interval per system
    cmp.distinguishable("best")              # systems the best one is credibly better than
    cmp.urisk("bm25_baseline", r=2)          # URisk on posterior predictive replicates
"""

from __future__ import annotations

from uncertank.bayes.comparison import (
    SAMPLERS,
    ConvergenceError,
    ConvergenceWarning,
    Diagnostics,
    SystemComparison,
    compare,
)
from uncertank.bayes.data import check_frame, drop_bottom_systems, frame_from_runs, frame_from_trec_covid
from uncertank.bayes.likelihood import zoib_logp_graph, zoib_logpdf, zoib_rvs
from uncertank.bayes.models import FAMILIES, gaussian, zoib, zoib_rank
from uncertank.bayes.risk import CONVENTIONS, georisk, loss_weight, urisk, zrisk

__all__ = [
    "CONVENTIONS",
    "FAMILIES",
    "SAMPLERS",
    "ConvergenceError",
    "ConvergenceWarning",
    "Diagnostics",
    "SystemComparison",
    "check_frame",
    "compare",
    "drop_bottom_systems",
    "frame_from_runs",
    "frame_from_trec_covid",
    "gaussian",
    "georisk",
    "loss_weight",
    "urisk",
    "zoib",
    "zoib_logp_graph",
    "zoib_logpdf",
    "zoib_rank",
    "zoib_rvs",
    "zrisk",
]
