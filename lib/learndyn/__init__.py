"""learndyn: the helper package of the book "Learning dynamics of gradient descent".

One module per subject, each naming the chapter and equations it implements:

- `core`        devices, threads, seeds, the `History` record, small numerics (`setup` starts every chapter)
- `checks`      `check_close` and friends: every numerical claim of the book goes through them
- `plotting`    the book's figure style
- `widgets`     interactive explorations (ipywidgets, imported lazily)
- `quadratic`   GD against gradient flow on a quadratic (Preface)
- `linreg`      OLS, its risk, GD on least squares (Ch 1)
- `deep_linear` deep linear networks, exact mode dynamics (Ch 1-2)
"""

from . import checks, core, deep_linear, linreg, plotting, quadratic, widgets
from .core import History, get_device, setup

__all__ = ["History", "checks", "core", "deep_linear", "get_device", "linreg", "plotting", "quadratic", "setup",
           "widgets"]
__version__ = "0.1.0"
