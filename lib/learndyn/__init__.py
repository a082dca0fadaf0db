"""learndyn: the helper package of the book "Learning dynamics of gradient descent".

One module per subject, each naming the chapter and equations it implements:

- `core`        devices, threads, seeds (`seed`: the $LEARNDYN_SEED knob), the `History` record, small numerics
                (`setup` starts every chapter)
- `checks`      `check_close` and friends: every numerical claim of the book goes through them
- `plotting`    the book's figure style
- `widgets`     interactive explorations (ipywidgets, imported lazily)
- `quadratic`   GD against gradient flow on a quadratic (Preface)
- `linreg`      OLS, its risk, GD on least squares (Ch 1)
- `deep_linear` deep linear networks, exact mode dynamics (Ch 1-2)
- `ssl`         self-supervised learning dynamics (Ch 3-4; the Barlow Twins part lives in `barlow`)
- `implicit_bias`  implicit bias of GD on separable data, the max-margin SVM (Ch 5)
- `sharpness`   Hessian-free sharpness and the edge of stability (Ch 6)
- `large_stepsize`  large-step GD on separable logistic regression (Ch 7)
- `diagonal`    diagonal linear networks: hyperbolic entropy, saddle-to-saddle recursion, large steps (Ch 8)
- `exercises`   self-checks for the coding exercises (`check_<name>(answer)`)
- `teach`       student notebooks and nbgrader assignments (`python -m learndyn.teach --help`)
- `colab`       the Colab editions of the chapters: MyST written as plain Markdown (`python -m learndyn.colab`)

Subject modules are imported on first use (`ld.deep_linear`), so `import learndyn` stays light.
"""

import importlib
from types import ModuleType

from . import checks, core
from .core import History, get_device, seed, setup

__version__ = "0.1.0"
_SUBMODULES = ("plotting", "widgets", "quadratic", "linreg", "deep_linear", "ssl", "barlow", "implicit_bias",
               "sharpness", "large_stepsize", "diagonal", "exercises", "teach")
__all__ = ["History", "checks", "core", "get_device", "seed", "setup", *_SUBMODULES]


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'learndyn' has no attribute {name!r}")
