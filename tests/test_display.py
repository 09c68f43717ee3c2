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
