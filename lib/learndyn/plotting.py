"""One figure style for the whole book, and the few plotting helpers chapters share.

Figures have an opaque white background and dark ink, so they read the same on the site's light and dark themes
and in print; colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies), with
its three light colours (orange, sky blue, yellow) darkened to at least 3:1 contrast on white, so that thin lines
stay visible (WCAG non-text contrast). In a notebook, figures are sent as 2x ("retina") PNGs shown at their
1x size, so they are sharp on high-density screens; each PNG records the size of the smallest text drawn in it
(`MIN_FONT_KEY`, in pixels of the PNG), so a test of the built site can tell how large that text is on the page.
`subplots` puts at most two panels in a row, so that a figure of many panels is not shrunk to a thumbnail in the
text column. This is the only module of `learndyn` that imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .core import as_int, as_positive, as_real, as_real_array, as_str

__all__ = ["COLORS", "THEORY", "MAX_PANELS_PER_ROW", "MIN_FONT_KEY", "PANELS_KEY", "COLUMN_INCHES", "set_style",
           "subplots", "retina_png", "png_text", "panels_per_row", "plot_theory_vs_sim", "add_slope_guide"]

#: Okabe-Ito palette: blue, vermillion, green, orange, sky blue, reddish purple, yellow, black. Orange (#E69F00),
#: sky blue (#56B4E9) and yellow (#F0E442) are darkened at the same hue to >= 3:1 contrast on white (3.14, 3.15,
#: 3.22); the others already pass (5.19, 3.87, 3.42, 3.06, 21).
COLORS = ["#0072B2", "#D55E00", "#009E73", "#C18600", "#1D99DF", "#CC79A7", "#9C920C", "#000000"]
#: Line style of a closed-form prediction drawn over a simulation.
THEORY = {"color": "black", "linestyle": "--", "linewidth": 1.4}
#: Panels in one row of a figure at most; more are wrapped onto further rows (see `subplots`).
MAX_PANELS_PER_ROW = 2
#: PNG text key under which inline figures record the height in PNG pixels of their smallest drawn text.
MIN_FONT_KEY = "learndyn:min-font-px"
#: PNG text key under which inline figures record the largest number of panels side by side in one row.
PANELS_KEY = "learndyn:panels-per-row"
#: Width of the website's text column in inches of a figure at its 1x size (784 CSS px at 100 dpi): `subplots`
#: scales a wider figure down to it, so that its text is shown at its point size instead of being shrunk.
COLUMN_INCHES = 7.8


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
    """In an IPython kernel, send inline figures as 2x PNGs with width/height metadata of the 1x size, each
    recording the size of its smallest text (`MIN_FONT_KEY`)."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    set_matplotlib_formats("retina")
    from matplotlib.figure import Figure

    shell.display_formatter.formatters["image/png"].for_type(Figure, retina_png)


def retina_png(fig) -> tuple[str, dict] | None:
    """The figure as a base64 2x PNG and its 1x display width (only the width: a height beside it would squash
    the figure wherever the column is narrower, as on a phone), with the pixel size of the smallest text drawn in
    it stored under `MIN_FONT_KEY` (the sizes of all text the Agg renderer draws, so hidden labels do not count)."""
    import zlib
    from binascii import b2a_base64
    from io import BytesIO

    from matplotlib.backends.backend_agg import RendererAgg

    if not fig.axes and not fig.lines and not fig.texts and not fig.images and not fig.patches:
        return None
    sizes: list[float] = []
    dpi = 2 * fig.dpi
    original = RendererAgg.draw_text

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if str(s).strip():
            sizes.append(prop.get_size_in_points() * dpi / 72)
        return original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    buf = BytesIO()
    RendererAgg.draw_text = draw_text
    try:
        fig.canvas.print_figure(buf, format="png", dpi=dpi, bbox_inches="tight",
                                facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    finally:
        RendererAgg.draw_text = original
    data = buf.getvalue()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    # tEXt chunks right after the header chunk (8 + 25 bytes): the sizes are known only once the figure is drawn
    chunks = b""
    for key, value in ((MIN_FONT_KEY, f"{min(sizes, default=0.0):.2f}"), (PANELS_KEY, str(panels_per_row(fig)))):
        text = key.encode("latin-1") + b"\0" + value.encode("ascii")
        chunks += len(text).to_bytes(4, "big") + b"tEXt" + text + zlib.crc32(b"tEXt" + text).to_bytes(4, "big")
    data = data[:33] + chunks + data[33:]
    width = int.from_bytes(data[16:20], "big")
    return b2a_base64(data, newline=False).decode("ascii"), {"width": width // 2}


def png_text(path: str | Path) -> dict[str, str]:
    """The tEXt chunks of a PNG up to its image data: what `retina_png` records (MIN_FONT_KEY, PANELS_KEY)."""
    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a str or Path to a PNG file; got {type(path).__name__}")
    data, pos, out = Path(path).read_bytes(), 8, {}
    while pos + 8 <= len(data):
        length, kind = int.from_bytes(data[pos:pos + 4], "big"), data[pos + 4:pos + 8]
        if kind == b"tEXt":
            key, _, value = data[pos + 8:pos + 8 + length].partition(b"\0")
            out[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IDAT":
            break
        pos += 12 + length
    return out


def panels_per_row(fig) -> int:
    """The most panels side by side in a figure: visible axes at least a tenth of the figure wide (colour bars and
    insets are not panels) whose vertical extents overlap, counted per row."""
    boxes = [ax.get_position() for ax in fig.axes if ax.get_visible() and ax.get_position().width >= 0.1]
    best = 0
    for b in boxes:
        mid = (b.y0 + b.y1) / 2
        best = max(best, sum(1 for o in boxes if o.y0 <= mid <= o.y1 and o.x0 < 0.98))
    return best


def subplots(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.4, **kwargs):
    """`plt.subplots` sized per panel (inches), in the book style, returning axes of shape (nrows, ncols).

    At most `MAX_PANELS_PER_ROW` panels are placed in a row: with more than two columns the panels are laid out
    in reading order, two to a row (an odd last slot is left out), so that they keep their size in the text column
    and on a phone. Code indexes the panels as it asked for them (axes[0, 2] is the third panel of the first
    requested row). With
    `sharex`/`sharey` of "row" or "col", `gridspec_kw`, `width_ratios` or `height_ratios` the grid is kept as
    asked. A figure wider than the text column (`COLUMN_INCHES`) is scaled down to it."""
    ncols, nrows = as_int("ncols", ncols, minimum=1), as_int("nrows", nrows, minimum=1)
    width, height = as_positive("width", width), as_positive("height", height)
    set_style()
    keep = (ncols <= MAX_PANELS_PER_ROW or any(k in kwargs for k in ("gridspec_kw", "width_ratios", "height_ratios"))
            or any(kwargs.get(k) in ("row", "col") for k in ("sharex", "sharey")))
    if keep:
        return plt.subplots(nrows, ncols, figsize=_fit(width * ncols, height * nrows), squeeze=False, **kwargs)
    per_row = MAX_PANELS_PER_ROW
    rows = -(-nrows * ncols // per_row)  # the panels in reading order, two to a row
    fig, grid = plt.subplots(rows, per_row, figsize=_fit(width * per_row, height * rows), squeeze=False, **kwargs)
    axes = np.empty((nrows, ncols), dtype=object)
    for k in range(nrows * ncols):
        axes[k // ncols, k % ncols] = grid[k // per_row, k % per_row]
    for k in range(nrows * ncols, rows * per_row):  # the empty last slot of an odd number of panels
        grid[k // per_row, k % per_row].remove()
    return fig, axes


def _fit(width: float, height: float) -> tuple[float, float]:
    """A figure size no wider than the text column, at the same aspect ratio."""
    scale = min(1.0, COLUMN_INCHES / width)
    return width * scale, height * scale


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
