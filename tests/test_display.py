from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from uncertank import RankedLists
from uncertank.display import ReliabilityDisplay
from uncertank.metrics import expected_calibration_error, reliability_curve


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def data(seed=0, n=500):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p**2).astype(int)


def test_from_predictions_draws_the_curve():
    p, y = data()
    disp = ReliabilityDisplay.from_predictions(p, y, n_bins=5, name="bert")
    curve = reliability_curve(p, y, n_bins=5)
    x, h = disp.artist_.get_data()
    np.testing.assert_allclose(x, curve.mean_confidence)
    np.testing.assert_allclose(h, curve.fraction_relevant)
    assert disp.ece == pytest.approx(expected_calibration_error(p, y, n_bins=5))
    labels = disp.ax_.get_legend_handles_labels()[1]
    assert labels == ["perfectly calibrated", f"bert (ECE {disp.ece:.3f})"]
    assert disp.figure_ is disp.ax_.figure
    assert disp.ax_.get_xlim() == (0.0, 1.0)


def test_bar_kind_spans_the_bins_and_skips_empty_ones():
    disp = ReliabilityDisplay.from_predictions([0.05, 0.1, 0.95], [0, 1, 1], n_bins=4, kind="bar")
    bars = list(disp.artist_)
    assert len(bars) == 2  # two bins are empty
    assert [b.get_x() for b in bars] == [0.0, 0.75]
    assert [b.get_width() for b in bars] == [0.25, 0.25]
    assert [b.get_height() for b in bars] == [0.5, 1.0]


def test_several_systems_share_one_axes_and_one_diagonal():
    p, y = data(1)
    _, ax = plt.subplots()
    ReliabilityDisplay.from_predictions(p, y, name="a", ax=ax)
    ReliabilityDisplay.from_predictions(np.sqrt(p), y, name="b", ax=ax, strategy="quantile")
    labels = ax.get_legend_handles_labels()[1]
    assert labels.count("perfectly calibrated") == 1
    assert len(labels) == 3


def test_plot_from_curve_and_ranked_lists(tmp_path):
    p, y = data(2, 60)
    rl = RankedLists.from_flat(p, y, [0, 30, 60])
    disp = ReliabilityDisplay(reliability_curve(rl)).plot(ref_line=False, name="x", color="red")
    assert disp.ax_.get_legend_handles_labels()[1] == ["x"]
    assert disp.artist_.get_color() == "red"
    out = tmp_path / "rel.png"
    disp.figure_.savefig(out)
    assert out.stat().st_size > 0


def test_errors():
    with pytest.raises(TypeError, match="curve must be a ReliabilityCurve"):
        ReliabilityDisplay([0.1, 0.2])
    with pytest.raises(ValueError, match="kind must be one of 'line', 'bar'; got 'pie'"):
        ReliabilityDisplay.from_predictions([0.1, 0.9], [0, 1], kind="pie")
    with pytest.raises(ValueError, match=r"probs must lie in \[0, 1\]"):
        ReliabilityDisplay.from_predictions([0.1, 1.9], [0, 1])


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    disp = ReliabilityDisplay(reliability_curve([0.1, 0.9], [0, 1]))
    with pytest.raises(ImportError, match=r'pip install "uncertank\[plot\]"'):
        disp.plot()


def test_from_bins_draws_the_bins_it_is_given():
    """A stored curve (its filled bins only) draws as the curve computed from the scores."""
    p, y = data(3)
    user = ReliabilityDisplay.from_predictions(p, y, n_bins=8, name="bert")
    full = user.curve.nonempty()
    stored = ReliabilityDisplay.from_bins(full.mean_confidence.tolist(), full.fraction_relevant.tolist(),
                                          full.counts.tolist(), ece=user.ece, name="bert")
    for got, want in zip(stored.artist_.get_data(), user.artist_.get_data(), strict=True):
        np.testing.assert_allclose(got, want)
    assert stored.ax_.get_legend_handles_labels()[1] == user.ax_.get_legend_handles_labels()[1]
    assert np.isnan(stored.curve.edges).all() and stored.curve.n_bins == full.n_bins


def test_from_bins_skips_empty_bins_and_draws_bars_over_given_edges():
    nan = float("nan")
    disp = ReliabilityDisplay.from_bins([0.1, nan, 0.9], [0.0, nan, 1.0], [3, 0, 2])
    assert disp.artist_.get_data()[0].tolist() == [0.1, 0.9]
    bars = ReliabilityDisplay.from_bins([0.1, nan, 0.9], [0.5, nan, 1.0], [3, 0, 2], edges=[0, 0.3, 0.6, 1.0],
                                        kind="bar")
    assert [b.get_x() for b in bars.artist_] == [0.0, 0.6]
    assert [b.get_height() for b in bars.artist_] == [0.5, 1.0]


def test_plot_keywords_replace_the_defaults():
    disp = ReliabilityDisplay.from_bins([0.2, 0.7], [0.1, 0.8], [5, 5], marker="none", color="red", lw=1.2)
    assert disp.artist_.get_marker() == "none" and disp.artist_.get_linewidth() == 1.2
    bars = ReliabilityDisplay.from_predictions([0.1, 0.9], [0, 1], n_bins=2, kind="bar", alpha=0.3)
    assert [b.get_alpha() for b in bars.artist_] == [0.3, 0.3]


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([0.1, 0.2], [0.1], [1, 1]), {}, r"fraction_relevant and counts must have the same shape; got \(1,\)"),
        (([0.1, 1.2], [0.1, 0.2], [1, 1]), {}, r"mean_confidence must lie in \[0, 1\]"),
        (([0.1, float("nan")], [0.1, 0.2], [1, 1]), {}, "mean_confidence must be finite"),
        (([0.1, 0.2], [0.1, 0.2], [1, -1]), {}, "counts must be integers >= 0"),
        (([0.1, 0.2], [0.1, 0.2], [1, 1]), {"edges": [0, 1]}, r"edges must be 3 increasing values"),
        (([0.1, 0.2], [0.1, 0.2], [1, 1]), {"edges": [0, 0.5, 0.5]}, r"edges must be 3 increasing values"),
        (([0.1, 0.2], [0.1, 0.2], [1, 1]), {"kind": "bar"}, r'kind="bar" needs the bins\' edges'),
    ],
)
def test_from_bins_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ReliabilityDisplay.from_bins(*args, **kwargs)
