"""Bad-input fuzz test of learndyn's public functions (issue 20, item 6).

Every public function is listed once in `SPECS` with a small valid base call and the kind of each argument
("pos" = a positive float, "array" = a real array, ...). The test replaces one argument at a time by a bad value of
its kind (an enumerated pool, plus arrays that `hypothesis` generates: NaN/inf entries, complex values, empty or
random shapes, huge or subnormal entries) and accepts only the two good outcomes:

- **clear**: a `ValueError`/`TypeError` whose message names the argument (or one of its `aliases`), or, for a huge
  finite input, a `DivergenceError` that says so;
- **ok**: a finite result, for the values that are valid edge inputs or valid alternatives (a float32 array, a
  tensor, B = 1, d = 1, one step, zero noise).

Anything else is **unclear** (another exception, or an error that does not name the argument), **silent** (a bad
value accepted, or NaN/inf out) or **hang** (no result within `CASE_SECONDS`). To add a module, list its functions
in `SPECS`. `LEARNDYN_FUZZ_REPORT=FILE` records every outcome in FILE (JSON lines) instead of failing, and
`python tests/test_fuzz.py FILE` prints the clear / unclear / silent / hang counts by module.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import learndyn as ld  # noqa: E402
from learndyn import core, quadratic, ssl  # noqa: E402
from learndyn import deep_linear_sim as dls  # noqa: E402

CASE_SECONDS = 10.0
EXAMPLES = int(os.environ.get("LEARNDYN_FUZZ_EXAMPLES", "6"))   # hypothesis examples per array argument
REPORT = os.environ.get("LEARNDYN_FUZZ_REPORT")


# ---- the table ------------------------------------------------------------------------------------------------
@dataclass
class Spec:
    """One public function: a valid base call and the kind of each argument to fuzz."""

    module: str
    name: str
    func: Callable[..., Any]
    base: Callable[[], dict[str, Any]]          # fresh valid keyword arguments for every call
    args: dict[str, str]                        # argument -> kind (see POOLS; "array"/"barray"/"tensor" also fuzzed)
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)   # valid edge inputs: must give a finite result

    @property
    def id(self) -> str:
        return f"{self.module}.{self.name}"


def _enter(cm_factory: Callable[..., Any]) -> Callable[..., Any]:
    """A context-manager factory as a function: build it and enter it (generator context managers validate late)."""
    def call(**kw: Any) -> None:
        with cm_factory(**kw):
            pass
    return call


def _history(**kw: Any) -> Any:
    return core.History.from_records(**kw)


def _rk4(**kw: Any) -> Any:
    return core.rk4_step(**kw)


def _tensor(x: Any) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=float))


H2, W02 = np.diag([2.0, 0.5]), np.array([1.0, -1.0])
PHI0, P0 = 0.5 * np.eye(3, 4), 0.3 * np.eye(3)
_TASK = None


def _task() -> Any:
    global _TASK
    if _TASK is None:
        _TASK = ld.deep_linear.svd_task(4, 3, [3.0, 1.0, 0.5], seed=0)
    return _TASK


def _sigma() -> np.ndarray:
    return _task().Sigma.copy()


def _plot(**_: Any) -> None:
    return None


SPECS: list[Spec] = [
    # ---- core ----
    Spec("core", "get_device", core.get_device, lambda: {"device": "cpu"}, {"device": "device"}),
    Spec("core", "make_generator", core.make_generator, lambda: {"seed": 0, "device": "cpu"},
         {"seed": "seed", "device": "device"}),
    Spec("core", "loglog_slope", core.loglog_slope, lambda: {"x": np.array([1.0, 2.0, 4.0]),
                                                             "y": np.array([1.0, 0.5, 0.25])},
         {"x": "array", "y": "array"}, edges=[{"x": [1.0, 2.0], "y": [1.0, 0.5]}]),
    Spec("core", "first_crossing", core.first_crossing,
         lambda: {"x": np.array([0.1, 0.4, 0.7]), "thr": 0.5, "steps": np.array([0.0, 1.0, 2.0])},
         {"x": "array", "thr": "real", "steps": "array_or_none"}, edges=[{"x": [0.7], "steps": [3.0]}]),
    Spec("core", "rk4_step", _rk4, lambda: {"f": lambda s: tuple(-x for x in s), "state": (torch.ones(2),),
                                            "h": 0.1},
         {"f": "callable", "state": "tensors", "h": "pos"}),
    Spec("core", "check_finite", core.check_finite, lambda: {"name": "w", "value": np.ones(3), "step": 3},
         {"name": "str", "value": "finite_or_divergence", "step": "count0_or_none"},
         aliases={"value": ("w",)}),
    Spec("core", "as_positive", core.as_positive, lambda: {"name": "lr", "value": 0.1}, {"name": "str", "value": "pos"},
         aliases={"value": ("lr",)}),
    Spec("core", "as_int", core.as_int, lambda: {"name": "steps", "value": 3, "minimum": 0},
         {"name": "str", "value": "count0", "minimum": "int"}, aliases={"value": ("steps",)}),
    Spec("core", "as_real_array", core.as_real_array, lambda: {"name": "w", "value": np.ones(3), "nonempty": True},
         {"name": "str", "value": "barray"}, aliases={"value": ("w",)}),
    Spec("core", "few_threads_if_small", _enter(core.few_threads_if_small),
         lambda: {"device": torch.device("cpu"), "size": 10, "limit": 100},
         {"device": "device", "size": "count0", "limit": "count0"}, edges=[{"device": "cpu"}]),
    Spec("core", "History.from_records", _history,
         lambda: {"steps": [0, 1, 2], "records": {"loss": [1.0, 0.5, 0.25]}},
         {"steps": "array", "records": "records"}, edges=[{"steps": [0], "records": {"loss": [1.0]}}]),
    # ---- quadratic ----
    Spec("quadratic", "gd_quadratic", quadratic.gd_quadratic, lambda: {"H": H2, "w0": W02, "lr": 0.1, "steps": 5},
         {"H": "array", "w0": "array", "lr": "pos", "steps": "count0"},
         edges=[{"H": [[2.0]], "w0": [1.0], "steps": 1}, {"steps": 0}]),
    Spec("quadratic", "gd_quadratic_closed_form", quadratic.gd_quadratic_closed_form,
         lambda: {"H": H2, "w0": W02, "lr": 0.1, "k": np.arange(5)},
         {"H": "array", "w0": "array", "lr": "pos", "k": "steps_array"}, edges=[{"k": 0}, {"k": [1]}]),
    Spec("quadratic", "flow_quadratic", quadratic.flow_quadratic,
         lambda: {"H": H2, "w0": W02, "t": np.linspace(0, 1, 3)},
         {"H": "array", "w0": "array", "t": "times"}, edges=[{"t": 0.0}, {"H": [[1.0]], "w0": [2.0]}]),
    Spec("quadratic", "modified_flow_quadratic", quadratic.modified_flow_quadratic,
         lambda: {"H": H2, "w0": W02, "lr": 0.1, "t": np.linspace(0, 1, 3)},
         {"H": "array", "w0": "array", "lr": "pos", "t": "times"}),
    Spec("quadratic", "gd_error_expansion", quadratic.gd_error_expansion,
         lambda: {"lam": 1.0, "amp": 0.5, "against": "flow"}, {"lam": "pos", "amp": "real", "against": "enum"}),
    Spec("quadratic", "exact_modified_hessian", quadratic.exact_modified_hessian, lambda: {"H": H2, "lr": 0.1},
         {"H": "array", "lr": "pos"}, edges=[{"H": [[1.0]]}]),
    # ---- ssl (chapter 3; the Barlow Twins functions are listed with barlow) ----
    Spec("ssl", "two_view_gaussian", ssl.two_view_gaussian, lambda: {"n": 4, "d": 3, "sigma": 0.5, "device": "cpu"},
         {"n": "count", "d": "count", "sigma": "nonneg", "seed": "seed", "device": "device"},
         edges=[{"n": 1, "d": 1}, {"sigma": 0.0}]),
    Spec("ssl", "noncontrastive_pop_grads", ssl.noncontrastive_pop_grads,
         lambda: {"Phi": PHI0, "P": P0, "sigma2": 0.25},
         {"Phi": "barray", "P": "array", "sigma2": "nonneg", "stopgrad": "bool", "target": "array_or_none"},
         edges=[{"sigma2": 0.0}, {"Phi": [[0.5]], "P": [[0.3]]}]),
    Spec("ssl", "noncontrastive_mc_grads", ssl.noncontrastive_mc_grads,
         lambda: {"Phi": PHI0, "P": P0, "sigma2": 0.25, "n": 8},
         {"Phi": "barray", "P": "array", "sigma2": "nonneg", "n": "count", "stopgrad": "bool", "seed": "seed"},
         edges=[{"n": 1}]),
    Spec("ssl", "simulate_noncontrastive", ssl.simulate_noncontrastive,
         lambda: {"Phi0": PHI0, "P0": P0, "sigma2": 0.25, "h": 0.05, "T": 0.2, "record_every": 2, "device": "cpu"},
         {"Phi0": "barray", "P0": "array", "sigma2": "nonneg", "wd": "nonneg_or_batch", "h": "pos", "T": "nonneg",
          "symmetric_predictor": "bool", "stopgrad": "bool", "use_predictor": "bool", "ema_beta": "pos_or_none",
          "method": "enum", "record_every": "count", "device": "device", "alpha_p": "pos_or_batch"},
         edges=[{"T": 0.0}, {"T": 0.05}, {"Phi0": [[0.5]], "P0": [[0.3]]}, {"sigma2": 0.0}]),
    Spec("ssl", "tian_mode_rhs", ssl.tian_mode_rhs, lambda: {"p": 0.3, "s": 0.2, "sigma2": 0.25},
         {"p": "barray", "s": "barray", "sigma2": "nonneg", "wd": "nonneg", "alpha_p": "pos", "tau": "barray_or_none"}),
    Spec("ssl", "tian_fixed_points", ssl.tian_fixed_points, lambda: {"sigma2": 0.25, "wd": 0.01},
         {"sigma2": "nonneg", "wd": "nonneg"}),
    Spec("ssl", "integrate_modes", ssl.integrate_modes,
         lambda: {"p0": 0.3, "s0": 0.2, "sigma2": 0.25, "wd": 0.01, "t_eval": np.linspace(0, 1, 3)},
         {"p0": "barray", "s0": "barray", "sigma2": "nonneg", "wd": "nonneg", "t_eval": "times"},
         edges=[{"t_eval": [0.0]}]),
    Spec("ssl", "commutator_ratio", ssl.commutator_ratio, lambda: {"A": np.diag([1.0, 2.0]), "B": np.ones((2, 2))},
         {"A": "barray", "B": "barray"}, edges=[{"A": [[1.0]], "B": [[2.0]]}]),
    Spec("ssl", "info_nce", ssl.info_nce, lambda: {"z1": _tensor(np.eye(3, 2)), "z2": _tensor(np.ones((3, 2)))},
         {"z1": "array", "z2": "array", "temperature": "pos"}, edges=[{"z1": [[1.0]], "z2": [[2.0]]}]),
    Spec("ssl", "check_info_nce", ssl.check_info_nce,
         lambda: {"fn": lambda z1, z2, t: float(ssl.info_nce(_tensor(z1), _tensor(z2), t))},
         {"fn": "callable", "seed": "seed"}),
    Spec("ssl", "tian_final_state_lambda0", ssl.tian_final_state_lambda0,
         lambda: {"p0": 0.3, "s0": 0.2, "sigma2": 0.25},
         {"p0": "barray", "s0": "barray", "sigma2": "nonneg"}),
    Spec("ssl", "balanced_time", ssl.balanced_time, lambda: {"p0": 0.3, "p": 0.5, "sigma2": 0.25, "wd": 0.01},
         {"p0": "barray", "p": "barray", "sigma2": "nonneg", "wd": "nonneg"}),
    Spec("ssl", "optimal_predictor", ssl.optimal_predictor, lambda: {"F": np.diag([1.0, 2.0]), "sigma2": 0.25},
         {"F": "array", "sigma2": "nonneg", "wd": "nonneg"}, edges=[{"F": [[1.0]]}]),
    Spec("ssl", "simulate_directpred", ssl.simulate_directpred,
         lambda: {"Phi0": PHI0, "sigma2": 0.25, "h": 0.05, "T": 0.2, "record_every": 2, "device": "cpu"},
         {"Phi0": "barray", "sigma2": "nonneg", "wd": "nonneg_or_batch", "h": "pos", "T": "nonneg",
          "record_every": "count", "device": "device"}, edges=[{"T": 0.0}, {"Phi0": [[0.5]]}]),
    Spec("ssl", "alignment_rate", ssl.alignment_rate,
         lambda: {"P": np.diag([0.3, 0.4]), "F": np.diag([1.0, 2.0]), "sigma2": 0.25},
         {"P": "array", "F": "array", "sigma2": "nonneg", "wd": "nonneg"}),
    Spec("ssl", "integrate_modes_general", ssl.integrate_modes_general,
         lambda: {"p0": 0.3, "phi0": 0.4, "sigma2": 0.25, "wd": 0.01, "t_eval": np.linspace(0, 1, 3)},
         {"p0": "barray", "phi0": "barray", "sigma2": "nonneg", "wd": "nonneg", "t_eval": "times", "alpha_p": "pos",
          "ema_beta": "pos_or_none"}, edges=[{"t_eval": [0.0]}, {"ema_beta": 0.5}]),
    Spec("ssl", "info_nce_grad", ssl.info_nce_grad, lambda: {"z1": _tensor(np.eye(3, 2) + 0.1),
                                                               "z2": _tensor(np.ones((3, 2)))},
         {"z1": "array", "z2": "array", "temperature": "pos"}),
    Spec("ssl", "info_nce_collapse_curvature", ssl.info_nce_collapse_curvature,
         lambda: {"v": np.eye(3, 2), "temperature": 0.5}, {"v": "barray", "temperature": "pos"},
         edges=[{"v": [[1.0]]}]),
    Spec("ssl", "spectral_contrastive_loss", ssl.spectral_contrastive_loss,
         lambda: {"z1": _tensor(np.eye(3, 2)), "z2": _tensor(np.ones((3, 2)))}, {"z1": "array", "z2": "array"}),
    Spec("ssl", "spectral_contrastive_pop_grad", ssl.spectral_contrastive_pop_grad,
         lambda: {"Phi": PHI0, "sigma2": 0.25}, {"Phi": "barray", "sigma2": "nonneg"}, edges=[{"sigma2": 0.0}]),
    Spec("ssl", "spectral_contrastive_modes", ssl.spectral_contrastive_modes,
         lambda: {"s0": 0.1, "sigma2": 0.25, "wd": 0.01, "t": np.linspace(0, 1, 3)},
         {"s0": "barray", "sigma2": "nonneg", "wd": "nonneg", "t": "times"}),
    Spec("ssl", "simulate_spectral_contrastive", ssl.simulate_spectral_contrastive,
         lambda: {"Phi0": PHI0, "sigma2": 0.25, "h": 0.05, "T": 0.2, "record_every": 2, "device": "cpu"},
         {"Phi0": "barray", "sigma2": "nonneg", "wd": "nonneg_or_batch", "h": "pos", "T": "nonneg",
          "record_every": "count", "device": "device"}, edges=[{"T": 0.0}]),
    # ---- deep_linear_sim ----
    Spec("deep_linear_sim", "decoupled_init", dls.decoupled_init,
         lambda: {"task": _task(), "N2": 3, "a0": 0.1, "b0": 0.01, "device": "cpu"},
         {"task": "task", "N2": "count", "a0": "barray", "b0": "barray", "R": "array_or_none", "batch": "count_or_none",
          "seed": "seed", "device": "device"}, edges=[{"batch": 1}]),
    Spec("deep_linear_sim", "small_random_init", dls.small_random_init,
         lambda: {"N1": 4, "N2": 3, "N3": 3, "scale": 0.1, "device": "cpu"},
         {"N1": "count", "N2": "count", "N3": "count", "scale": "pos", "batch": "count_or_none", "seed": "seed",
          "device": "device"}, edges=[{"N1": 1, "N2": 1, "N3": 1}, {"batch": 1}]),
    Spec("deep_linear_sim", "train_two_layer", dls.train_two_layer,
         lambda: {"Sigma": _sigma(), "W1": 0.1 * np.ones((3, 4)), "W2": 0.1 * np.ones((3, 3)), "lr": 0.05,
                  "steps": 3, "device": "cpu"},
         {"Sigma": "array", "W1": "array", "W2": "array", "lr": "pos", "steps": "count0", "record_every": "count",
          "U": "barray_or_none", "V": "barray_or_none", "track": "tracks", "device": "device",
          "on_divergence": "enum"},
         edges=[{"steps": 0}, {"steps": 1}, {"W1": 0.1 * np.ones((1, 3, 4)), "W2": 0.1 * np.ones((1, 3, 3))}]),
    Spec("deep_linear_sim", "train_chain", dls.train_chain,
         lambda: {"Sigma": _sigma(), "Ws": [0.1 * np.ones((3, 4)), 0.1 * np.ones((3, 3))], "lr": 0.05, "steps": 3,
                  "device": "cpu"},
         {"Sigma": "array", "Ws": "tensors", "lr": "pos", "steps": "count0", "record_every": "count",
          "device": "device", "on_divergence": "enum"}, edges=[{"steps": 0}, {"Ws": [0.1 * np.ones((3, 4))]}]),
    Spec("deep_linear_sim", "train_shallow", dls.train_shallow,
         lambda: {"Sigma": _sigma(), "W0": 0.1 * np.ones((3, 4)), "lr": 0.05, "steps": 3, "device": "cpu"},
         {"Sigma": "array", "W0": "array", "lr": "pos", "steps": "count0", "record_every": "count",
          "device": "device"}, edges=[{"steps": 0}, {"Sigma": [[1.0]], "W0": [[0.5]]}]),
    Spec("deep_linear_sim", "flow_two_layer", dls.flow_two_layer,
         lambda: {"Sigma": _sigma(), "W1": 0.1 * np.ones((3, 4)), "W2": 0.1 * np.ones((3, 3)),
                  "t_eval": np.linspace(0, 1, 3)},
         {"Sigma": "array", "W1": "array", "W2": "array", "t_eval": "times", "rtol": "pos", "atol": "pos",
          "tau": "pos"}, edges=[{"t_eval": [0.0]}]),
    # ---- widgets ----
    Spec("widgets", "float_slider", ld.widgets.float_slider,
         lambda: {"value": 0.5, "lo": 0.0, "hi": 1.0, "step": 0.1, "description": "x"},
         {"value": "real", "lo": "real", "hi": "real", "step": "pos", "description": "str"}),
    Spec("widgets", "log_slider", ld.widgets.log_slider,
         lambda: {"value": 0.1, "lo_exp": -2.0, "hi_exp": 0.0, "description": "x"},
         {"value": "pos", "lo_exp": "real", "hi_exp": "real", "description": "str", "step": "pos"}),
    Spec("widgets", "int_slider", ld.widgets.int_slider,
         lambda: {"value": 5, "lo": 1, "hi": 10, "description": "n"},
         {"value": "int", "lo": "int", "hi": "int", "description": "str", "step": "count"}),
    Spec("widgets", "interactive_plot", ld.widgets.interactive_plot, lambda: {"plot": _plot}, {"plot": "callable"}),
    # ---- plotting ----
    Spec("plotting", "subplots", ld.plotting.subplots, lambda: {"ncols": 1, "nrows": 1},
         {"ncols": "count", "nrows": "count", "width": "pos", "height": "pos"}),
    Spec("plotting", "plot_theory_vs_sim", ld.plotting.plot_theory_vs_sim,
         lambda: {"ax": _axes(), "x": np.arange(3.0), "sim": np.ones((3, 2)), "theory": np.ones((3, 2)),
                  "labels": ["a", "b"]},
         {"ax": "axes", "x": "array", "sim": "plot_array", "theory": "plot_array_or_none", "labels": "labels"}),
    Spec("plotting", "add_slope_guide", ld.plotting.add_slope_guide,
         lambda: {"ax": _axes(), "x0": 1.0, "y0": 1.0, "slope": -1.0},
         {"ax": "axes", "x0": "pos", "y0": "pos", "slope": "real", "span": "pos", "label": "str_or_none"}),
    # ---- teach ----
    Spec("teach", "parse_title", ld.teach.parse_title, lambda: {"title": "Name (coding, ★★, 20 min)"},
         {"title": "str"}),
    Spec("teach", "chapter_name", ld.teach.chapter_name, lambda: {"stem": "00_preface"}, {"stem": "str"}),
    Spec("teach", "read_exercises", ld.teach.read_exercises, lambda: {"text": "no exercises", "chapter": "x"},
         {"text": "str", "chapter": "str"}),
    Spec("teach", "strip_solutions", ld.teach.strip_solutions, lambda: {"text": "no solutions", "mode": "remove"},
         {"text": "str", "mode": "enum"}),
    Spec("teach", "student_notebook", ld.teach.student_notebook, lambda: {"md_path": "chapters/00_preface.md"},
         {"md_path": "path"}),
    Spec("teach", "main", ld.teach.main, lambda: {"argv": ["list"]}, {"argv": "argv"}),
]


def _axes() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.close("all")
    return plt.subplots()[1]


# ---- bad values by kind ----------------------------------------------------------------------------------------
RAISE, EITHER = "raise", "either"     # the probe must get a clear error / a clear error or a finite result

_SCALAR_BAD = [("str", "0.1"), ("none", None), ("list_str", ["a"]), ("nan", math.nan), ("inf", math.inf),
               ("bool", True), ("complex", 1j), ("array2", np.ones(2))]
_COUNT_BAD = [("str", "5"), ("none", None), ("float", 2.5), ("float_int", 5.0), ("neg", -1), ("bool", True),
              ("list", [5])]
POOLS: dict[str, list[tuple[str, Any, str]]] = {
    "pos": [(n, v, RAISE) for n, v in _SCALAR_BAD + [("neg", -1.0), ("zero", 0.0)]]
    + [("float32", np.float32(0.1), EITHER), ("tensor0d", torch.tensor(0.1, dtype=torch.float64), EITHER)],
    "nonneg": [(n, v, RAISE) for n, v in _SCALAR_BAD + [("neg", -1.0)]] + [("zero", 0.0, EITHER)],
    "real": [(n, v, RAISE) for n, v in _SCALAR_BAD],
    "count": [(n, v, RAISE) for n, v in _COUNT_BAD + [("zero", 0)]] + [("np_int", np.int64(1), EITHER)],
    "count0": [(n, v, RAISE) for n, v in _COUNT_BAD] + [("zero", 0, EITHER)],
    "int": [(n, v, RAISE) for n, v in _COUNT_BAD if n != "neg"],
    "seed": [("str", "0", RAISE), ("none", None, RAISE), ("neg", -1, RAISE), ("float", 1.5, RAISE),
             ("huge", 2**64, RAISE), ("bool", True, RAISE)],
    "bool": [("str", "False", RAISE), ("none", None, RAISE), ("int2", 2, RAISE), ("float", 1.5, RAISE)],
    "enum": [("bogus", "bogus", RAISE), ("none", None, RAISE), ("int", 1, RAISE)],
    "device": [("gpu", "gpu", RAISE), ("int", 3, RAISE), ("list", ["cpu"], RAISE)]
    + ([] if torch.cuda.is_available() else [("cuda", "cuda", RAISE)]),
    "callable": [("none", None, RAISE), ("int", 5, RAISE)],
    "str": [("none", None, RAISE), ("int", 5, RAISE), ("bytes", b"x", RAISE)],
    "str_or_none": [("int", 5, RAISE), ("bytes", b"x", RAISE)],
    "path": [("none", None, RAISE), ("int", 5, RAISE), ("missing", "no/such/file.md", RAISE)],
    "argv": [("str", "list", RAISE), ("none_item", [None], RAISE), ("int", 5, RAISE)],
    "labels": [("short", ["a"], RAISE), ("int", 5, RAISE)],
    "axes": [("none", None, RAISE), ("int", 5, RAISE)],
    "task": [("none", None, RAISE), ("int", 5, RAISE)],
    "tracks": [("bogus", ["bogus"], RAISE), ("int", 5, RAISE), ("none", None, RAISE)],
    "records": [("none", None, RAISE), ("short", {"loss": [1.0, 0.5]}, RAISE), ("list", [1.0, 2.0, 3.0], RAISE),
                ("str_values", {"loss": ["a", "b", "c"]}, RAISE)],
    "tensors": [("none", None, RAISE), ("empty", [], RAISE), ("nan", "__nan_tensors__", RAISE),
                ("str_item", ["abc"], RAISE)],
    "finite_or_divergence": [("str", "abc", RAISE), ("none", None, RAISE), ("complex", np.array([1j]), RAISE)],
    "count_or_none": [(n, v, RAISE) for n, v in _COUNT_BAD if n != "none"] + [("zero", 0, RAISE)],
    "pos_or_none": [(n, v, RAISE) for n, v in _SCALAR_BAD if n not in ("none", "array2")]
    + [("neg", -1.0, RAISE), ("zero", 0.0, RAISE)],
}
POOLS["count0_or_none"] = [p for p in POOLS["count0"] if p[0] != "none"]
POOLS["nonneg_or_batch"] = [p for p in POOLS["nonneg"] if p[0] != "array2"] + [("batch_short", np.zeros(3), RAISE)]
POOLS["pos_or_batch"] = [p for p in POOLS["pos"] if p[0] != "array2"] + [("batch_short", np.ones(3), RAISE)]


def _array_pool(base: Any, strict: bool) -> list[tuple[str, Any, str]]:
    """Bad values for a real array argument of valid value `base`."""
    a = np.asarray(base.detach().numpy() if isinstance(base, torch.Tensor) else base, dtype=float)
    out: list[tuple[str, Any, str]] = [("str", "abc", RAISE), ("str_list", [["a", "b"]], RAISE),
                                       ("empty", np.zeros((0,) + a.shape[1:]), RAISE),
                                       ("complex", a + 1j, RAISE)]
    if a.size:
        for label, val in (("nan", np.nan), ("inf", np.inf)):
            b = a.copy()
            b.flat[0] = val
            out.append((label, b, RAISE))
    shape = EITHER if not strict else RAISE
    if a.ndim >= 1:
        out += [("axis_fewer", a[0], shape), ("axis_extra", a[..., None] + np.zeros(2), shape),
                ("last_short", a[..., :-1], shape)]
    out += [("float32", a.astype(np.float32), EITHER), ("tensor", torch.as_tensor(a), EITHER),
            ("tensor32", torch.as_tensor(a, dtype=torch.float32), EITHER),
            ("requires_grad", torch.as_tensor(a).requires_grad_(True), EITHER), ("list", a.tolist(), EITHER)]
    return out


def pool(spec: Spec, arg: str) -> list[tuple[str, Any, str]]:
    kind = spec.args[arg]
    base = spec.base().get(arg)
    if kind in ("array", "barray", "array_or_none", "barray_or_none", "plot_array", "plot_array_or_none") \
            and base is None:                      # an optional array: fuzz around a valid value of the right shape
        base = spec.base().get("Phi") if arg == "target" else None
        if base is None:
            base = {"tau": 0.2, "R": np.eye(3), "U": np.eye(3), "V": np.eye(4), "theory": np.ones((3, 2))}[arg]
    if kind in ("array", "barray", "array_or_none", "barray_or_none"):
        extra = [] if kind.endswith("_or_none") else [("none", None, RAISE)]
        return _array_pool(base, strict=kind.startswith("array")) + extra
    if kind.startswith("plot_array"):             # NaN/inf are gaps in a plot (a flagged diverged run): allowed
        extra = [] if kind.endswith("_or_none") else [("none", None, RAISE)]
        return [(n, v, EITHER if n in ("nan", "inf") else m) for n, v, m in _array_pool(base, strict=False)] + extra
    if kind == "times":
        return _array_pool(base, strict=False) + [("negative", -np.asarray(base) - 1.0, RAISE), ("none", None, RAISE)]
    if kind == "steps_array":
        return _array_pool(base, strict=False) + [("fraction", np.asarray(base) + 0.5, RAISE), ("none", None, RAISE)]
    return list(POOLS[kind])


# ---- running one case ------------------------------------------------------------------------------------------
class _Hang(BaseException):
    pass


def _alarm(*_: Any) -> None:
    raise _Hang


def _finite(x: Any) -> bool:
    if isinstance(x, torch.Tensor):
        return not x.is_floating_point() or bool(torch.isfinite(x.detach()).all())
    if isinstance(x, np.ndarray):
        return x.dtype.kind not in "fc" or bool(np.all(np.isfinite(x)))
    if isinstance(x, float | np.floating | complex):
        return bool(np.isfinite(x))
    if isinstance(x, core.History):
        return _finite(x.steps) and _finite(x.metrics) and _finite(x.final)
    if isinstance(x, dict):
        return all(_finite(v) for v in x.values())
    if isinstance(x, list | tuple):
        return all(_finite(v) for v in x)
    return True


def _resolve(value: Any) -> Any:
    if isinstance(value, str) and value == "__nan_tensors__":
        return [torch.full((3, 4), math.nan)]
    return value


def run_case(spec: Spec, override: dict[str, Any], must: str) -> tuple[str, str]:
    """Call spec.func with `override` on the base call; return (outcome, detail)."""
    kwargs = spec.base()
    kwargs.update({k: _resolve(v) for k, v in override.items()})
    names = set(override) | {a for k in override for a in spec.aliases.get(k, ())}
    threads = torch.get_num_threads()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = spec.func(**kwargs)
    except _Hang:
        return "hang", f"no result after {CASE_SECONDS} s"
    except (ValueError, TypeError, FileNotFoundError) as err:
        msg = str(err)
        if any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg) for n in names):
            return "clear", f"{type(err).__name__}: {msg[:200]}"
        return "unclear", f"{type(err).__name__} (argument not named): {msg[:200]}"
    except core.DivergenceError as err:
        return ("clear" if must == "huge" else "unclear"), f"DivergenceError: {str(err)[:200]}"
    except (Exception, SystemExit) as err:  # noqa: BLE001 (classifying every outcome is the point)
        return "unclear", f"{type(err).__name__}: {str(err)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        torch.set_num_threads(threads)
    if must == RAISE:
        return "silent", "a bad value was accepted"
    return ("ok", "finite") if _finite(result) else ("silent", "NaN or inf in the result")


def _record(spec: Spec, arg: str, probe: str, outcome: str, detail: str) -> None:
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"module": spec.module, "func": spec.name, "arg": arg, "probe": probe,
                                 "outcome": outcome, "detail": detail}) + "\n")


def _assert_good(results: list[tuple[str, str, str, str]], spec: Spec) -> None:
    bad = [r for r in results if r[2] not in ("clear", "ok")]
    if REPORT:
        return
    assert not bad, f"{spec.id}: {len(bad)} bad outcome(s):\n" + "\n".join(
        f"  {arg}={probe}: {outcome}: {detail}" for arg, probe, outcome, detail in bad[:20])


# ---- the tests -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_enumerated_bad_inputs(spec: Spec) -> None:
    """Each argument replaced by every value of its kind's pool: a clear error, or a finite result if valid."""
    assert spec.func(**spec.base()) is not False  # the base call itself is valid
    results = []
    for arg in spec.args:
        for probe, value, must in pool(spec, arg):
            outcome, detail = run_case(spec, {arg: value}, must)
            _record(spec, arg, probe, outcome, detail)
            results.append((arg, probe, outcome, detail))
    _assert_good(results, spec)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.edges], ids=lambda s: s.id)
def test_valid_edges(spec: Spec) -> None:
    """B = 1, d = 1, one step, zero steps, zero noise: a finite result."""
    results = []
    for edge in spec.edges:
        outcome, detail = run_case(spec, edge, EITHER)
        outcome = "unclear" if outcome == "clear" else outcome      # an error is not a good outcome here
        _record(spec, "edge", repr(edge)[:60], outcome, detail)
        results.append(("edge", repr(edge)[:80], outcome, detail))
    _assert_good(results, spec)


ARRAY_ARGS = [(s, a) for s in SPECS for a, k in s.args.items() if k in ("array", "barray", "times")
              and not isinstance(s.base()[a], list | tuple)]


@st.composite
def _bad_array(draw: Any, base: Any) -> tuple[str, Any, str]:
    """A generated array: NaN/inf entries, complex, empty, random shape and dtype, huge or subnormal entries."""
    a = np.asarray(base.detach().numpy() if isinstance(base, torch.Tensor) else base, dtype=float)
    kind = draw(st.sampled_from(["nonfinite", "complex", "empty", "shape", "huge", "values"]))
    if kind == "nonfinite" and a.size:
        b = a.copy()
        b.flat[draw(st.integers(0, a.size - 1))] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        return kind, b, RAISE
    if kind == "complex":
        return kind, a + 1j * draw(st.floats(0.1, 10.0)), RAISE
    if kind == "empty" or (kind == "nonfinite" and not a.size):
        ndim = draw(st.integers(1, 3))
        shape = draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim).filter(lambda s: 0 in s))
        return "empty", np.zeros(shape), RAISE
    if kind == "shape":
        ndim = draw(st.integers(0, 3))
        shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
        dtype = draw(st.sampled_from([np.float64, np.float32, np.int64]))
        return kind, (np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1).astype(dtype) * 0.1 \
            if dtype is not np.int64 else np.ones(shape, dtype=np.int64), EITHER
    if kind == "huge" and a.size:
        b = a.copy()
        b.flat[draw(st.integers(0, a.size - 1))] = draw(st.sampled_from([1e300, -1e300, 5e-324, 1e-310]))
        return kind, b, "huge"
    b = np.asarray(draw(st.lists(st.floats(-3.0, 3.0), min_size=max(a.size, 1), max_size=max(a.size, 1))))
    return "values", b[:a.size].reshape(a.shape) if a.size else b, "huge"


@pytest.mark.parametrize(("spec", "arg"), ARRAY_ARGS, ids=lambda x: x.id if isinstance(x, Spec) else x)
def test_generated_arrays(spec: Spec, arg: str) -> None:
    """hypothesis-generated arrays for each array argument (derandomized: every run sees the same examples)."""
    results: list[tuple[str, str, str, str]] = []

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=_bad_array(spec.base()[arg]))
    def sweep(case: tuple[str, Any, str]) -> None:
        probe, value, must = case
        outcome, detail = run_case(spec, {arg: value}, must)
        _record(spec, arg, f"hyp-{probe}", outcome, detail)
        results.append((arg, f"hyp-{probe}{np.shape(value)}", outcome, detail))

    sweep()
    _assert_good(results, spec)


# ---- report ----------------------------------------------------------------------------------------------------
def summarize(path: str) -> None:
    rows: dict[str, dict[str, int]] = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        rows.setdefault(r["module"], {}).setdefault(r["outcome"], 0)
        rows[r["module"]][r["outcome"]] += 1
    cols = ("clear", "unclear", "silent", "hang", "ok")
    print(f"{'module':18s}" + "".join(f"{c:>9s}" for c in cols))
    for mod, counts in rows.items():
        print(f"{mod:18s}" + "".join(f"{counts.get(c, 0):9d}" for c in cols))


if __name__ == "__main__":
    summarize(sys.argv[1])
