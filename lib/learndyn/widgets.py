"""Interactive explorations for the chapters' "Explore" sections.

ipywidgets is imported lazily: where it is missing (a plain Python session, a minimal install) the factories print
a note and return None, and the static figure beside every widget in the book still tells the story.

`interactive_plot` draws into its output area *from the kernel* (it captures the figure and sets the Output
widget's `outputs`), instead of `with output_widget:`. The latter asks the front end to redirect the cell's outputs
into the widget (the widget's `msg_id`); nbclient, which executes the book for `make book`, mimics that front end
by sending `comm_msg` updates back to the kernel on the shell channel while it is waiting for the cell's reply,
and about one widget cell in 25 then stalled until the cell timeout (nbclient issue 312). Drawn from the kernel,
no message goes from nbclient back to the kernel, and Jupyter, Colab and the static site show the same figure.
"""

from __future__ import annotations

import base64
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from .core import as_callable, as_positive, as_real, as_str

__all__ = ["interactive_plot", "float_slider", "log_slider", "int_slider"]


def _ipywidgets() -> Any | None:
    try:
        import ipywidgets
    except ImportError:
        print("ipywidgets is not installed: `pip install ipywidgets` to explore interactively; "
              "the static figure above shows representative settings.")
        return None
    return ipywidgets


def _range(value: float, lo: float, hi: float, names: tuple[str, str, str] = ("value", "lo", "hi")) -> None:
    if not lo < hi:
        raise ValueError(f"{names[1]} must be < {names[2]}; got {names[1]}={lo!r}, {names[2]}={hi!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{names[0]} must lie in [{names[1]}, {names[2]}] = [{lo:g}, {hi:g}]; got {value!r}")


def float_slider(value: float, lo: float, hi: float, step: float, description: str) -> Any | None:
    """A FloatSlider that recomputes on release (continuous_update=False), as the heavier plots need."""
    value, lo, hi = as_real("value", value), as_real("lo", lo), as_real("hi", hi)
    step, description = as_positive("step", step), as_str("description", description)
    _range(value, lo, hi)
    w = _ipywidgets()
    return None if w is None else w.FloatSlider(value=value, min=lo, max=hi, step=step, description=description,
                                                continuous_update=False)


def log_slider(value: float, lo_exp: float, hi_exp: float, description: str, step: float = 0.1) -> Any | None:
    """A FloatLogSlider from 10**lo_exp to 10**hi_exp, for scales (initialisation, step sizes)."""
    value, lo_exp, hi_exp = as_positive("value", value), as_real("lo_exp", lo_exp), as_real("hi_exp", hi_exp)
    step, description = as_positive("step", step), as_str("description", description)
    _range(float(np.log10(value)), lo_exp, hi_exp, ("log10(value)", "lo_exp", "hi_exp"))
    w = _ipywidgets()
    return None if w is None else w.FloatLogSlider(value=value, base=10, min=lo_exp, max=hi_exp, step=step,
                                                   description=description, continuous_update=False)


def int_slider(value: int, lo: int, hi: int, description: str, step: int = 1) -> Any | None:
    """An IntSlider that recomputes on release."""
    for name, v in (("value", value), ("lo", lo), ("hi", hi), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise TypeError(f"{name} must be an int; got {v!r}")
    if step < 1:
        raise ValueError(f"step must be >= 1; got {step}")
    description = as_str("description", description)
    _range(value, lo, hi)
    w = _ipywidgets()
    return None if w is None else w.IntSlider(value=int(value), min=int(lo), max=int(hi), step=int(step),
                                              description=description, continuous_update=False)


def interactive_plot(plot: Callable[..., None], **controls: Any) -> Any | None:
    """`ipywidgets.interactive(plot, **controls)`, or None (with a note) when ipywidgets is unavailable.

    `plot` draws one figure from keyword arguments; `controls` are sliders (or fixed values, or lists of choices)
    for them. Other parameters of `plot` keep their defaults (no widget is made for them). The figure is drawn
    in the kernel and placed in the widget's output area (see the module docstring).
    """
    plot = as_callable("plot", plot)
    w = _ipywidgets()
    if w is None or any(c is None for c in controls.values()):
        return None

    class _Interactive(w.interactive):
        def update(self, *args: Any) -> None:       # ipywidgets' update, drawing without `with self.out:`
            _show_figures()                           # figures of the cell so far stay in the cell, as in interact
            self.kwargs = {widget._kwarg: widget.get_interact_value() for widget in self.kwargs_widgets}
            self.out.outputs = _capture(lambda: plot(**self.kwargs))

    def draw(**kwargs: Any) -> None:
        plot(**kwargs)

    return _Interactive(draw, **controls)


def _capture(fn: Callable[[], None]) -> tuple[dict[str, Any], ...]:
    """Run fn, returning what it printed and displayed (figures included) as nbformat outputs; never raises."""
    from IPython.utils.capture import capture_output

    outputs: list[dict[str, Any]] = []
    with capture_output(stdout=True, stderr=True, display=True) as cap:
        try:
            fn()
            _show_figures()
        except Exception:  # noqa: BLE001 (a failing plot shows its traceback in the widget, as interact does)
            cap_err = traceback.format_exc()
        else:
            cap_err = ""
    for name, text in (("stdout", cap.stdout), ("stderr", cap.stderr + cap_err)):
        if text:
            outputs.append({"output_type": "stream", "name": name, "text": text})
    for out in cap.outputs:
        data = {k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v for k, v in out.data.items()}
        outputs.append({"output_type": "display_data", "data": data, "metadata": out.metadata or {}})
    return tuple(outputs)


def _show_figures() -> None:
    """Display and close the open matplotlib figures, as the inline backend does at the end of a cell (ipywidgets'
    own helper: a no-op outside IPython's inline backend)."""
    from ipywidgets.widgets.interaction import show_inline_matplotlib_plots

    show_inline_matplotlib_plots()
