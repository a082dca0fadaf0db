"""One figure style for the whole book, and the few plotting helpers chapters share.

Figures have an opaque white background and dark ink, so they read the same on the site's light and dark themes
and in print; colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies), with
its three light colours (orange, sky blue, yellow) darkened to at least 3:1 contrast on white, so that thin lines
stay visible (WCAG non-text contrast). In a notebook, figures are sent as 2x ("retina") PNGs shown at their
1x size, so they are sharp on high-density screens. This is the only module of `learndyn` that imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .core import as_int, as_positive, as_real, as_real_array, as_str

__all__ = ["COLORS", "THEORY", "set_style", "subplots", "plot_theory_vs_sim", "add_slope_guide"]

#: Okabe-Ito palette: blue, vermillion, green, orange, sky blue, reddish purple, yellow, black. Orange (#E69F00),
#: sky blue (#56B4E9) and yellow (#F0E442) are darkened at the same hue to >= 3:1 contrast on white (3.14, 3.15,
#: 3.22); the others already pass (5.19, 3.87, 3.42, 3.06, 21).
COLORS = ["#0072B2", "#D55E00", "#009E73", "#C18600", "#1D99DF", "#CC79A7", "#9C920C", "#000000"]
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
    _retina_inline()


def _retina_inline() -> None:
    """In an IPython kernel, send inline figures as 2x PNGs with width/height metadata of the 1x size."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def subplots(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.4, **kwargs):
    """`plt.subplots` sized per panel (inches), in the book style."""
    ncols, nrows = as_int("ncols", ncols, minimum=1), as_int("nrows", nrows, minimum=1)
    width, height = as_positive("width", width), as_positive("height", height)
    set_style()
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kwargs)


def plot_theory_vs_sim(ax, x: np.ndarray, sim: np.ndarray, theory: np.ndarray | None = None,
                       labels: Sequence[str] | None = None, sim_kw: dict | None = None) -> None:
    """Simulation as coloured lines (one per column of `sim`), the closed form as black dashes on top."""
    _check_axes(ax)
    x = as_real_array("x", x, ndim=1, nonempty=True)
    sim = _columns("sim", sim, x.size)
    if labels is not None:
        if isinstance(labels, str) or not hasattr(labels, "__len__") or len(labels) != sim.shape[1]:
            raise ValueError(f"labels must hold one label per column of sim ({sim.shape[1]}); got {labels!r}")
    if sim_kw is not None and not isinstance(sim_kw, dict):
        raise TypeError(f"sim_kw must be a dict of matplotlib keyword arguments; got {type(sim_kw).__name__}")
    for j in range(sim.shape[1]):
        label = labels[j] if labels is not None else None
        ax.plot(x, sim[:, j], color=COLORS[j % len(COLORS)], label=label, **(sim_kw or {}))
    if theory is not None:
        theory = _columns("theory", theory, x.size)
        for j in range(theory.shape[1]):
            ax.plot(x, theory[:, j], **THEORY, label="theory" if j == 0 else None)


def add_slope_guide(ax, x0: float, y0: float, slope: float, span: float = 4.0, label: str | None = None) -> None:
    """A dotted reference line y = y0 (x/x0)^slope on log-log axes, from x0 to span * x0."""
    _check_axes(ax)
    x0, y0 = as_positive("x0", x0), as_positive("y0", y0)   # log-log axes: both must be > 0
    slope, span = as_real("slope", slope), as_positive("span", span)
    if label is not None:
        label = as_str("label", label)
    xs = np.array([x0, x0 * span])
    ax.plot(xs, y0 * (xs / x0) ** slope, color="#666666", linestyle=":", linewidth=1.2,
            label=label if label is not None else f"slope {slope:g}")


def _check_axes(ax) -> None:
    if not callable(getattr(ax, "plot", None)):
        raise TypeError(f"ax must be a matplotlib Axes; got {type(ax).__name__}")


def _columns(name: str, values, n: int) -> np.ndarray:
    """values as (n, columns): one row per x, with a clear error when the leading axis does not match x."""
    arr = as_real_array(name, values, finite=False)      # NaN is allowed in a plot: matplotlib leaves a gap
    if arr.ndim == 0 or arr.shape[0] != n or arr.ndim > 2:
        raise ValueError(f"{name} must have shape ({n},) or ({n}, k), one row per entry of x; got {arr.shape}")
    return arr.reshape(n, -1)
