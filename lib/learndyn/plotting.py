"""One figure style for the whole book, and the few plotting helpers chapters share.

Figures have an opaque white background and dark ink, so they read the same on the site's light and dark themes
and in print; colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies).
This is the only module of `learndyn` that imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

__all__ = ["COLORS", "THEORY", "set_style", "subplots", "plot_theory_vs_sim", "add_slope_guide"]

#: Okabe-Ito palette: blue, vermillion, green, orange, sky blue, reddish purple, yellow, black.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7", "#F0E442", "#000000"]
#: Line style of a closed-form prediction drawn over a simulation.
THEORY = {"color": "black", "linestyle": "--", "linewidth": 1.4}


def set_style() -> None:
    """Apply the book's matplotlib style (idempotent)."""
    mpl.rcParams.update({
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "axes.facecolor": "white",
        "axes.edgecolor": "#333333",
        "axes.labelcolor": "#111111",
        "text.color": "#111111",
        "xtick.color": "#333333",
        "ytick.color": "#333333",
        "axes.prop_cycle": mpl.cycler(color=COLORS),
        "axes.grid": True,
        "grid.color": "#dddddd",
        "grid.linewidth": 0.6,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.titlesize": 12,
        "axes.labelsize": 11,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "lines.linewidth": 1.8,
        "figure.constrained_layout.use": True,
    })


def subplots(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.4, **kwargs):
    """`plt.subplots` sized per panel (inches), in the book style."""
    set_style()
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kwargs)


def plot_theory_vs_sim(ax, x: np.ndarray, sim: np.ndarray, theory: np.ndarray | None = None,
                       labels: Sequence[str] | None = None, sim_kw: dict | None = None) -> None:
    """Simulation as coloured lines (one per column of `sim`), the closed form as black dashes on top."""
    sim = np.asarray(sim).reshape(len(x), -1)
    for j in range(sim.shape[1]):
        label = labels[j] if labels is not None else None
        ax.plot(x, sim[:, j], color=COLORS[j % len(COLORS)], label=label, **(sim_kw or {}))
    if theory is not None:
        theory = np.asarray(theory).reshape(len(x), -1)
        for j in range(theory.shape[1]):
            ax.plot(x, theory[:, j], **THEORY, label="theory" if j == 0 else None)


def add_slope_guide(ax, x0: float, y0: float, slope: float, span: float = 4.0, label: str | None = None) -> None:
    """A dotted reference line y = y0 (x/x0)^slope on log-log axes, from x0 to span * x0."""
    xs = np.array([x0, x0 * span])
    ax.plot(xs, y0 * (xs / x0) ** slope, color="#666666", linestyle=":", linewidth=1.2,
            label=label if label is not None else f"slope {slope:g}")
