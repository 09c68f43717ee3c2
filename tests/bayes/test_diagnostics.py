"""Trace validation and convergence checks on hand-built traces (no sampling)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from uncertank.bayes import ConvergenceWarning, SamplingError, SystemComparison, check_frame
from uncertank.bayes.diagnostics import diagnose, validate_trace

az = pytest.importorskip("arviz")
pd = pytest.importorskip("pandas")

SYSTEMS = ["a", "b", "c"]
TOPICS = [1, 2, 3, 4]


def _idata(n_chains=4, n_draws=300, seed=0, nan_tail=None):
    """iid draws of the zoib parameters; ``nan_tail[c] = k`` pads the last k draws of chain c with NaN."""
    rng = np.random.default_rng(seed)
    shape = (n_chains, n_draws)
    post = {
        "Intercept": rng.normal(0.1, 0.05, shape), "sd_system": np.abs(rng.normal(0.5, 0.05, shape)),
        "sd_topic": np.abs(rng.normal(0.4, 0.05, shape)), "r_system": rng.normal(0, 0.3, (*shape, len(SYSTEMS))),
        "r_topic": rng.normal(0, 0.3, (*shape, len(TOPICS))), "phi": np.abs(rng.normal(5, 0.2, shape)),
        "zoi": rng.uniform(0.05, 0.1, shape), "coi": rng.uniform(0.3, 0.4, shape),
    }
    if nan_tail is not None:  # what nutpie's aborted run looks like: chains padded with NaN
        for c, k in enumerate(nan_tail):
            if k:
                for v in post.values():
                    v[c, n_draws - k:] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.from_dict(posterior=post, sample_stats={"diverging": np.zeros(shape, dtype=bool)},
                            coords={"system": SYSTEMS, "topic": TOPICS},
                            dims={"r_system": ["system"], "r_topic": ["topic"]})


def _data():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"system": np.repeat(SYSTEMS, len(TOPICS)), "topic": np.tile(TOPICS, len(SYSTEMS)),
                       "score": rng.uniform(size=len(SYSTEMS) * len(TOPICS))})
    return check_frame(df, "zoib")


def test_whole_trace_passes():
    idata = _idata()
    validate_trace(idata, chains=4, draws=300)
    d = diagnose(idata)
    assert d.ok and d.rhat_available and d.max_rhat < 1.01 and d.min_ess_bulk > 800
    assert d.summary().startswith("R-hat max 1.0")


@pytest.mark.parametrize(
    ("make", "kwargs", "match"),
    [
        # nutpie interrupted mid-run: half of one chain NaN, another chain never started
        (lambda: _idata(nan_tail=[0, 150, 300, 0]), {}, r"'Intercept' holds .* NaN .*per chain: \[0, 150, 300, 0\]"),
        (lambda: _idata(), {"draws": 1000}, "expected 1000 draws per chain; the trace has 300"),
        (lambda: _idata(), {"chains": 2}, "expected 2 chains; the trace has 4"),
        (lambda: _idata(n_draws=0), {}, r"no draws \(4 chains x 0 draws\)"),
        (lambda: az.InferenceData(), {}, "no posterior group"),
    ],
)
def test_validate_trace_rejects_partial_traces(make, kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = make()
    with pytest.raises(SamplingError, match=match):
        validate_trace(idata, **kwargs)


def test_nan_trace_is_never_summarised():
    """The old failure: a NaN-padded trace gave R-hat -inf, ESS inf and ok=True; now it is refused."""
    with pytest.raises(SamplingError, match="NaN or infinite"):
        SystemComparison(_idata(nan_tail=[0, 100, 0, 0]), _data(), family="zoib", sampler="nutpie")


def test_nan_diagnostics_count_as_failures():
    idata = _idata()
    idata.posterior["sd_topic"][:] = 0.4  # constant: R-hat and ESS are NaN
    d = diagnose(idata)
    assert not d.ok
    assert np.isnan(d.max_rhat) and d.worst_rhat == "sd_topic"
    assert any("R-hat is NaN (sd_topic)" in p for p in d.problems)
    assert "R-hat NaN (sd_topic)" in d.summary()


def test_nan_ess_counts_as_failure(monkeypatch):
    arviz = pytest.importorskip("arviz")
    real_ess = arviz.ess

    def ess_with_nan(data, **kwargs):
        out = real_ess(data, **kwargs)
        if kwargs.get("method") == "bulk":
            out["phi"] = out["phi"] * np.nan
        return out

    monkeypatch.setattr(arviz, "ess", ess_with_nan)
    d = diagnose(_idata())
    assert np.isnan(d.min_ess_bulk) and d.worst_ess == "phi"
    assert "bulk ESS is NaN (phi)" in d.problems and not d.ok


def test_one_chain_reports_rhat_unavailable():
    d = diagnose(_idata(n_chains=1, n_draws=600))
    assert not d.rhat_available and np.isnan(d.max_rhat) and d.worst_rhat == ""
    assert d.problems == ["R-hat unavailable with 1 chain (it compares at least 2)"]
    assert d.summary().startswith("R-hat unavailable (1 chain), bulk ESS min ")
    assert d.to_dict()["rhat_available"] is False and d.to_dict()["ok"] is False
    cmp = SystemComparison(_idata(n_chains=1, n_draws=600), _data(), family="zoib", sampler="test")
    with pytest.warns(ConvergenceWarning, match="R-hat unavailable"):
        assert cmp.diagnostics().n_chains == 1
