"""Interactive explorations for the chapters' "Explore" sections.

ipywidgets is imported lazily: where it is missing (a plain Python session, a minimal install) the factories print
a note and return None, and the static figure beside every widget in the book still tells the story.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["interactive_plot", "float_slider", "log_slider", "int_slider"]


def _ipywidgets() -> Any | None:
    try:
        import ipywidgets
    except ImportError:
        print("ipywidgets is not installed: `pip install ipywidgets` to explore interactively; "
              "the static figure above shows representative settings.")
        return None
    return ipywidgets


def float_slider(value: float, lo: float, hi: float, step: float, description: str) -> Any | None:
    """A FloatSlider that recomputes on release (continuous_update=False), as the heavier plots need."""
    w = _ipywidgets()
    return None if w is None else w.FloatSlider(value=value, min=lo, max=hi, step=step, description=description,
                                                continuous_update=False)


def log_slider(value: float, lo_exp: float, hi_exp: float, description: str, step: float = 0.1) -> Any | None:
    """A FloatLogSlider from 10**lo_exp to 10**hi_exp, for scales (initialisation, step sizes)."""
    w = _ipywidgets()
    return None if w is None else w.FloatLogSlider(value=value, base=10, min=lo_exp, max=hi_exp, step=step,
                                                   description=description, continuous_update=False)


def int_slider(value: int, lo: int, hi: int, description: str, step: int = 1) -> Any | None:
    """An IntSlider that recomputes on release."""
    w = _ipywidgets()
    return None if w is None else w.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                                              continuous_update=False)


def interactive_plot(plot: Callable[..., None], **controls: Any) -> Any | None:
    """`ipywidgets.interactive(plot, **controls)`, or None (with a note) when ipywidgets is unavailable.

    `plot` draws one figure from keyword arguments; `controls` are sliders (or fixed values) for them. Other
    parameters of `plot` keep their defaults (no widget is made for them).
    """
    w = _ipywidgets()
    if w is None or any(c is None for c in controls.values()):
        return None

    def draw(**kwargs: Any) -> None:
        plot(**kwargs)

    return w.interactive(draw, **controls)
