"""The report's figures are drawn by the public display and plot functions a user calls.

A user's reliability diagram and the report's are one drawing
(:meth:`~uncertank.display.ReliabilityDisplay.from_bins`), and so are a
fit's posterior predictive check and the report's, drawn from the curves the
study stores (:func:`~uncertank.bayes.plots.plot_ppc_densities`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pd = pytest.importorskip("pandas")

from uncertank.bayes import plots  # noqa: E402
from uncertank.display import ReliabilityDisplay  # noqa: E402
from uncertank.experiment import systems  # noqa: E402
from uncertank.experiment.report.figures import Figures  # noqa: E402
from uncertank.files import atomic_path  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture
def drawn(monkeypatch):
    """The figures :meth:`Figures._save` is handed, by file name (still open)."""
    figs: dict[str, object] = {}
    save = Figures._save

    def keep(self, fig, name):
        figs[name] = fig
        return save(self, fig, name)

    monkeypatch.setattr(Figures, "_save", keep)
    return figs


def _evaluations():
    from tests.experiment.test_report import make_result

    result = make_result()
    evs = [e for e in result.evaluations if e.reliability is not None]
    return result, evs, list(dict.fromkeys(e.condition for e in evs))


def test_the_reliability_figure_is_drawn_by_reliability_display(tmp_path: Path, drawn, monkeypatch):
    result, evs, conds = _evaluations()
    made: list[ReliabilityDisplay] = []
    from_bins = ReliabilityDisplay.from_bins.__func__

    def spy(cls, *args, **kwargs):
        made.append(from_bins(cls, *args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ReliabilityDisplay, "from_bins", classmethod(spy))
    figs = Figures(tmp_path, [e.ranker for e in result.evaluations])
    assert figs.reliability(evs, conds) == "figures/reliability.png"
    assert (tmp_path / "figures" / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = drawn["reliability.png"]
    drawn_order = [e for cond in conds for e in evs if e.condition == cond]  # panel by panel
    assert len(made) == len(evs)  # one display per ranker and condition
    for e, disp in zip(drawn_order, made, strict=True):
        c = e.reliability
        assert c is not None and disp.name == e.ranker and disp.ax_ in fig.axes
        assert disp.ax_.get_title() == e.condition
        x, y = disp.artist_.get_data()
        np.testing.assert_allclose(x, c.mean_confidence)
        np.testing.assert_allclose(y, c.fraction_relevant)
        np.testing.assert_array_equal(disp.curve.counts, c.count)
        assert disp.artist_.get_color() == figs.colours[e.ranker]
    # the report's look: its labels, one diagonal per panel, the rankers in the legend
    panel = made[0].ax_
    assert panel.get_xlabel() == "" and panel.get_ylabel() == "fraction relevant"
    labels = panel.get_legend_handles_labels()[1]
    assert labels == ["perfectly calibrated", *[e.ranker for e in evs if e.condition == conds[0]]]


def test_a_users_reliability_diagram_and_the_reports_draw_the_same_curve(tmp_path: Path, drawn):
    """from_bins of the stored (filled) bins draws what from_predictions draws of the scores."""
    rng = np.random.default_rng(3)
    p = rng.random(400) ** 2
    y = (rng.random(400) < p).astype(int)
    user = ReliabilityDisplay.from_predictions(p, y, n_bins=10, name="bert")
    curve = user.curve.nonempty()
    from uncertank.experiment.result import Curve, Evaluation

    ev = Evaluation("bert", "in-domain", True, False, {}, reliability=Curve(
        curve.mean_confidence.tolist(), curve.fraction_relevant.tolist(), curve.counts.tolist()))
    Figures(tmp_path, ["bert"]).reliability([ev], ["in-domain"])
    ax = drawn["reliability.png"].axes[0]
    (line,) = [ln for ln in ax.lines if ln.get_label() == "bert"]
    for got, want in zip(line.get_data(), user.artist_.get_data(), strict=True):
        np.testing.assert_allclose(got, want)


class _Fit:
    """What the posterior predictive check reads of a fit: its family, data and replicates."""

    def __init__(self, family, scores, replicates):
        self.family = family
        self.data = pd.DataFrame({"score": scores})
        self._rep = np.asarray(replicates, dtype=float)

    def posterior_predictive(self, n, *, seed=None):
        return self._rep[:n]


@pytest.mark.parametrize("family", ["gaussian", "zoib_rank"])
def test_the_reports_ppc_and_plot_ppc_are_one_drawing(tmp_path: Path, drawn, monkeypatch, family):
    rng = np.random.default_rng(0)
    rep = rng.normal(0.5, 0.5, (120, 50))
    if family != "gaussian":  # the beta families' replicates stay in [0, 1]
        rep = np.clip(rep, 0.0, 1.0)
    fit = _Fit(family, rng.random(50), rep)
    # the curves the study stores are the bayes package's
    stored = systems.ppc_curves(fit, seed=0)
    mine = plots.ppc_densities(fit, systems.PPC_REPLICATES, seed=0, points=systems.PPC_GRID)
    assert stored.keys() == mine.keys()
    for key in stored:
        np.testing.assert_array_equal(stored[key], mine[key])
    with atomic_path(tmp_path / "c.npz") as tmp, tmp.open("wb") as fh:
        np.savez(fh, **stored)
    with np.load(tmp_path / "c.npz") as npz:
        loaded = dict(npz)

    calls = []
    draw = plots.plot_ppc_densities

    def spy(*args, **kwargs):
        calls.append(kwargs.get("title"))
        return draw(*args, **kwargs)

    monkeypatch.setattr(plots, "plot_ppc_densities", spy)
    name = Figures(tmp_path, []).ppc(family, loaded, condition="in domain")
    assert name == f"figures/bayes-{family}-in-domain-ppc.png" and (tmp_path / name).is_file()
    assert calls == [f"posterior predictive check: {family}, in domain"]
    report_ax = drawn[name.removeprefix("figures/")].axes[0]

    user_ax = plots.plot_ppc(fit, systems.PPC_REPLICATES, seed=0)
    assert len(report_ax.lines) == len(user_ax.lines) == systems.PPC_REPLICATES + 2
    for a, b in zip(report_ax.lines, user_ax.lines, strict=True):
        np.testing.assert_allclose(a.get_xydata(), b.get_xydata())
        assert a.get_label() == b.get_label() and a.get_color() == b.get_color()
    assert report_ax.get_xlim() == user_ax.get_xlim()
    assert report_ax.get_xlabel() == user_ax.get_xlabel() == ("score" if family == "gaussian" else "per-rank gain")
    user_title, report_title = user_ax.get_title().split("\n"), report_ax.get_title().split("\n")
    assert report_title[0] == f"{user_title[0]}, in domain" and report_title[1:] == user_title[1:]
    assert (len(user_title) == 2) == (family == "gaussian")


def test_plot_ppc_densities_rejects_curves_of_other_grids():
    grid = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="the grid's 5 points"):
        plots.plot_ppc_densities({"grid": grid, "observed": grid[:4], "replicates": np.ones((2, 5)),
                                  "outside": 0.0}, "zoib")


class _Effects:
    """What plot_effects reads of a fit: its family, systems and effects (best first)."""

    def __init__(self, family, effects):
        self.family = family
        self.frame = pd.DataFrame(effects).sort_values("mean", ascending=False, ignore_index=True)
        self.systems = list(self.frame["system"])

    def system_effects(self, *, prob=0.95):
        assert prob == 0.95
        return self.frame


def test_the_reports_system_effects_and_plot_effects_are_one_drawing(tmp_path: Path, drawn, monkeypatch):
    from tests.experiment.test_report import make_result

    fams = list(make_result().bayes.values())  # stored rows, worst first: the report orders them itself
    calls = []
    draw = plots.plot_effect_intervals

    def spy(*args, **kwargs):
        calls.append(args[1])
        return draw(*args, **kwargs)

    monkeypatch.setattr(plots, "plot_effect_intervals", spy)
    assert Figures(tmp_path, []).system_effects(fams) == "figures/bayes-system-effects.png"
    assert calls == [b.family for b in fams]
    for b, ax in zip(fams, drawn["bayes-system-effects.png"].axes, strict=True):
        user = plots.plot_effects(_Effects(b.family, b.effects))
        np.testing.assert_allclose(ax.lines[0].get_xydata(), user.lines[0].get_xydata())
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == [t.get_text() for t in user.get_yticklabels()]
        assert dict(zip(ax.get_yticks(), labels, strict=True))[len(labels) - 1] == max(
            b.effects, key=lambda r: r["mean"])["system"]  # the best on top
        assert ax.get_xlabel() == user.get_xlabel() == (
            f"system effect ({'score' if b.family == 'gaussian' else 'log-odds'}), mean and 95% interval")
        assert ax.get_title() == f"{b.family} ({b.n_systems} systems)"
        assert user.get_title() == f"{b.family}: {b.n_systems} systems"


def test_plot_effect_intervals_needs_a_system():
    with pytest.raises(ValueError, match="at least one system"):
        plots.plot_effect_intervals([], "zoib")
