"""learndyn: the helper package of the book "Learning dynamics of gradient descent".

One module per subject, each naming the chapter and equations it implements:

- `setup`       (here) one call at the top of every chapter: threads, seeds, figure style, the checks' chapter
- `core`        devices, threads, seeds (`seed`: the $LEARNDYN_SEED knob), the `History` record, small numerics
- `checks`      `check_close` and friends: every numerical claim of the book goes through them
- `plotting`    the book's figure style
- `widgets`     interactive explorations (ipywidgets, imported lazily)
- `datasets`    the chapters' data: scikit-learn's bundled digits, read without importing `sklearn.datasets`
- `quadratic`   GD against gradient flow on a quadratic (Preface)
- `linreg`      OLS, its risk, GD on least squares (Ch 1)
- `deep_linear` deep linear networks, exact mode dynamics (Ch 1-2); re-exports `deep_linear_sim`, its simulators,
                and `tasks`, its teacher tasks (chosen singular values, hierarchical data)
- `ssl`         self-supervised learning dynamics, closed forms (Ch 3); re-exports `ssl_sim`, its simulators
- `barlow`      Barlow Twins, VICReg, linear SimCLR, closed forms (Ch 4); re-exports `barlow_sim`, its simulators
- `implicit_bias`  implicit bias of GD on separable data (Ch 5); re-exports `svm`, the max-margin SVM
- `sharpness`   the edge of stability: GD with its sharpness tracked, the flow, the toy models (Ch 6);
                re-exports `hessian`, the Hessian-free estimators (Hessian-vector products, top eigenvalues)
- `large_stepsize`  large-step GD on separable logistic regression (Ch 7)
- `diagonal`    diagonal linear networks: hyperbolic entropy, saddle-to-saddle recursion, large steps (Ch 8)
- `exercises`   self-checks for the coding exercises (`check_<name>(answer)`)
- `teach`       student notebooks and nbgrader assignments (`python -m learndyn.teach --help`)
- `colab`       the Colab editions of the chapters: MyST written as plain Markdown (`python -m learndyn.colab`)

A subject whose code outgrew one sitting is two modules: the closed forms, and the simulators they are checked
against (`*_sim`; `hessian`, the estimators; `tasks`, Ch 2's data); the first re-exports the second, which imports
nothing from it, so a chapter calls one name (`ld.ssl.simulate_noncontrastive`) and no two modules import each other.
Subject modules are imported on first use (`ld.deep_linear`), so `import learndyn` stays light.
"""

import importlib
from types import ModuleType

import torch

from . import checks, core
from .core import History, get_device, seed

__version__ = "0.1.0"
_SUBMODULES = ("plotting", "widgets", "datasets", "quadratic", "linreg", "deep_linear", "deep_linear_sim", "tasks",
               "ssl", "ssl_sim", "barlow", "barlow_sim", "implicit_bias", "svm", "hessian", "sharpness",
               "large_stepsize", "diagonal", "exercises", "teach")
__all__ = ["History", "checks", "core", "get_device", "seed", "setup", *_SUBMODULES]


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'learndyn' has no attribute {name!r}")


def setup(chapter: str, seed: int = 0, threads: int | None = None, flush_denormal: bool = False) -> torch.device:
    """One call at the top of every chapter: threads, seeds, figure style, and the chapter name for the checks.

    threads: torch's CPU threads. None (the default) follows OMP_NUM_THREADS when it is set (`make` sets 2, the
    book's reference: chapter 6's float32 runs print the book's numbers only at 2 threads), else 2. A reader with
    more cores can pass `threads=8` or export OMP_NUM_THREADS=8; the checks hold at any count.
    flush_denormal: opt in to `torch.set_flush_denormal(True)`, which sets the CPU's flush-to-zero flags for the
    *whole process* (numpy included: afterwards 1e-310 * 1.0 == 0.0). Off by default; no chapter needs it.
    Returns the device the chapter's simulators will use (CUDA when present). Theory checks stay in float64.
    torch's global generator is seeded with `seed(seed)`, so it follows the $LEARNDYN_SEED knob too.
    """
    from . import plotting  # imported here: plotting pulls in matplotlib

    chapter = core.as_str("chapter", chapter)
    seed = core.as_seed("seed", seed)
    flush_denormal = core.as_bool("flush_denormal", flush_denormal)
    core.set_threads(threads)
    torch.manual_seed(seed + core.seed_offset())
    if flush_denormal:
        torch.set_flush_denormal(True)
    plotting.set_style()
    checks.start_chapter(chapter)
    return get_device()
