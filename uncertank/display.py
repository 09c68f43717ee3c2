"""Plots of calibration: reliability diagrams.

matplotlib is imported inside :meth:`ReliabilityDisplay.plot` only, and only
when it makes a new figure, so this module is as light to import as the rest
of the core. Install it with ``pip install "uncertank[plot]"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from uncertank._optional import require
from uncertank.metrics._inputs import LabelsInput, ScoresInput
from uncertank.metrics.binning import Strategy
from uncertank.metrics.calibration import ReliabilityCurve, expected_calibration_error, reliability_curve
from uncertank.validation import as_float_array, as_label_array, check_choice, check_probabilities

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.container import BarContainer
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.lines import Line2D

__all__ = ["ReliabilityDisplay"]

Kind = Literal["line", "bar"]


class ReliabilityDisplay:
    """A reliability diagram: fraction relevant against mean confidence per bin.

    Build it with :meth:`from_predictions` (which computes the curve and
    draws it), :meth:`from_bins` (which draws bins computed before, such as
    the curves a study stores), or from a
    :class:`~uncertank.metrics.ReliabilityCurve` and call :meth:`plot`.
    After plotting, ``ax_``, ``figure_`` and ``artist_`` (the line or the
    bar container) hold the matplotlib objects, as scikit-learn's
    ``CalibrationDisplay`` does.

    Parameters
    ----------
    curve : ReliabilityCurve
        Per-bin statistics from :func:`~uncertank.metrics.reliability_curve`.
    ece : float, optional
        The ECE to show in the legend.
    name : str, optional
        The system's name for the legend.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> disp = ReliabilityDisplay.from_predictions([0.1, 0.3, 0.8, 0.9], [0, 1, 1, 1],
    ...                                            n_bins=2, name="bert")
    >>> disp.curve.counts.tolist(), round(disp.ece, 3)
    ([2, 2], 0.225)
    >>> disp.ax_.get_legend_handles_labels()[1]
    ['perfectly calibrated', 'bert (ECE 0.225)']
    """

    def __init__(self, curve: ReliabilityCurve, *, ece: float | None = None, name: str | None = None) -> None:
        if not isinstance(curve, ReliabilityCurve):
            raise TypeError(
                f"curve must be a ReliabilityCurve (from uncertank.metrics.reliability_curve); "
                f"got {type(curve).__name__}"
            )
        self.curve = curve
        self.ece = ece
        self.name = name
        self.ax_: Axes | None = None
        self.figure_: Figure | SubFigure | None = None
        self.artist_: Line2D | BarContainer | None = None

    @classmethod
    def from_predictions(
        cls,
        probs: ScoresInput,
        labels: LabelsInput = None,
        *,
        n_bins: int = 10,
        strategy: Strategy = "uniform",
        name: str | None = None,
        kind: Kind = "line",
        ax: Axes | None = None,
        **plot_kwargs: Any,
    ) -> ReliabilityDisplay:
        """Compute the reliability curve and ECE of ``probs`` and draw the diagram.

        Parameters
        ----------
        probs, labels, n_bins, strategy
            As in :func:`~uncertank.metrics.reliability_curve`.
        name : str, optional
            Legend label.
        kind : {"line", "bar"}
            Markers joined by a line at the bins' mean confidence, or bars
            over the bins' extent (the style of Guo et al. 2017).
        ax : matplotlib Axes, optional
            Where to draw; a new figure when None.
        **plot_kwargs
            Passed to the matplotlib call that draws the curve.

        Returns
        -------
        ReliabilityDisplay
        """
        curve = reliability_curve(probs, labels, n_bins=n_bins, strategy=strategy)
        ece = expected_calibration_error(probs, labels, n_bins=n_bins, strategy=strategy)
        return cls(curve, ece=ece, name=name).plot(ax=ax, kind=kind, **plot_kwargs)

    @classmethod
    def from_bins(
        cls,
        mean_confidence: ArrayLike,
        fraction_relevant: ArrayLike,
        counts: ArrayLike,
        *,
        edges: ArrayLike | None = None,
        ece: float | None = None,
        name: str | None = None,
        kind: Kind = "line",
        ax: Axes | None = None,
        **plot_kwargs: Any,
    ) -> ReliabilityDisplay:
        """Draw the diagram of bins computed before: their mean confidence, fraction relevant and count.

        A study's ``results.json`` stores its reliability curves so (the
        filled bins only), and its report draws them with this method.

        Parameters
        ----------
        mean_confidence, fraction_relevant, counts : array-like of shape (n_bins,)
            Per-bin statistics, as the fields of
            :class:`~uncertank.metrics.ReliabilityCurve`; a bin whose count
            is 0 is not drawn (its statistics may be NaN).
        edges : array-like of shape (n_bins + 1,), optional
            The bins' edges, increasing; only ``kind="bar"`` needs them.
        ece, name
            As in the constructor: the ECE and the system's name, for the legend.
        kind, ax, **plot_kwargs
            As in :meth:`plot`.

        Returns
        -------
        ReliabilityDisplay
            With ``curve.edges`` NaN when ``edges`` was not given.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> disp = ReliabilityDisplay.from_bins([0.15, 0.85], [0.5, 1.0], [2, 2], name="bert")
        >>> disp.artist_.get_data()[1].tolist()
        [0.5, 1.0]
        """
        counts = as_label_array(counts, "counts")
        full = counts > 0
        stats = []
        for values, what in ((mean_confidence, "mean_confidence"), (fraction_relevant, "fraction_relevant")):
            arr = np.asarray(values, dtype=np.float64)
            if arr.shape != counts.shape:
                raise ValueError(f"{what} and counts must have the same shape; got {arr.shape} and {counts.shape}")
            if full.any():  # the filled bins' statistics: finite, in [0, 1]
                check_probabilities(as_float_array(arr[full], what), what)
            stats.append(arr)
        if edges is None:
            bounds = np.full(counts.size + 1, np.nan)
        else:
            bounds = as_float_array(edges, "edges")
            if bounds.shape != (counts.size + 1,) or (np.diff(bounds) <= 0).any():
                raise ValueError(f"edges must be {counts.size + 1} increasing values (one more than the bins); "
                                 f"got {bounds.tolist()}")
        curve = ReliabilityCurve(stats[0], stats[1], counts, bounds)
        return cls(curve, ece=ece, name=name).plot(ax=ax, kind=kind, **plot_kwargs)

    def plot(
        self,
        ax: Axes | None = None,
        *,
        name: str | None = None,
        kind: Kind = "line",
        ref_line: bool = True,
        **kwargs: Any,
    ) -> ReliabilityDisplay:
        """Draw the diagram.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw; a new figure and axes when None.
        name : str, optional
            Legend label; defaults to the display's ``name``.
        kind : {"line", "bar"}
            Line through the bins' (mean confidence, fraction relevant), or
            bars spanning each bin.
        ref_line : bool
            Draw the diagonal of perfect calibration (once per axes).
        **kwargs
            Passed to ``ax.plot`` (line) or ``ax.bar`` (bar); they replace
            the defaults (square markers; black edges and alpha 0.7).

        Returns
        -------
        ReliabilityDisplay
            ``self``, with ``ax_``, ``figure_`` and ``artist_`` set.
        """
        kind = check_choice(kind, "kind", ("line", "bar"))
        if kind == "bar" and np.isnan(self.curve.edges).any():
            raise ValueError('kind="bar" needs the bins\' edges; this curve has none (pass edges= to from_bins)')
        if ax is None:
            _, ax = require("matplotlib.pyplot", "plot", what="ReliabilityDisplay.plot").subplots()
        name = self.name if name is None else name
        label = name or "model"
        if self.ece is not None:
            label = f"{label} (ECE {self.ece:.3f})"
        ref_label = "perfectly calibrated"
        if ref_line and ref_label not in ax.get_legend_handles_labels()[1]:
            ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", label=ref_label)
        full = self.curve.counts > 0
        if kind == "line":
            (artist,) = ax.plot(
                self.curve.mean_confidence[full], self.curve.fraction_relevant[full],
                **{"marker": "s", **kwargs, "label": label},
            )
        else:
            edges = self.curve.edges
            widths = np.diff(edges)
            artist = ax.bar(
                edges[:-1][full], self.curve.fraction_relevant[full], width=widths[full],
                **{"align": "edge", "edgecolor": "black", "alpha": 0.7, **kwargs, "label": label},
            )
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="Mean predicted probability of relevance",
               ylabel="Fraction relevant")
        ax.legend(loc="upper left")
        self.ax_, self.figure_, self.artist_ = ax, ax.figure, artist
        return self
