"""The edge of stability (Ch 6): GD on a network with its sharpness tracked, the flow it is compared with, and the
closed-form models.

Sharpness S(w) = lambda_max(grad^2 L(w)) (eq. `eq-eos-sharpness`) is estimated without forming the Hessian by the
estimators of `learndyn.hessian` (`top_eigs`, `hvp`, `hvp_operator`, `exact_hessian`, `model_loss`), re-exported
here. `train_gd_sharpness` runs full-batch GD with a warm-started sharpness estimate every `eig_every` steps
(Cohen et al. 2021), `gf_reference` integrates gradient flow by RK4 with step alpha / S (the idea of Cohen et al.'s
`flow.py`); the (u, v) toy L = 1/2 (uv - 1)^2 (eq. `eq-eos-uv-loss`), the quadratic (eq. `eq-eos-quad-gd`) and the
minimal edge-of-stability model (eq. `eq-eos-model`) have closed forms.
Conventions: GD step k is compared with flow time t = eta * k; the EoS runs use float32 (the spec's setup), the
exactness checks float64. Losses are functions of a parameter dict (`torch.func` style).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from . import quadratic
from .core import (
    DivergenceError,
    History,
    as_bool,
    as_int,
    as_nonnegative,
    as_positive,
    as_real,
    as_real_array,
    as_seed,
    as_times,
    broadcast,
    check_finite,
    get_device,
    no_overflow,
    rk4_step_unchecked,
)
from .datasets import load_digits

# The Hessian-free estimators live in `hessian` (nothing there is specific to the edge of stability); they are
# re-exported here, so a chapter says `ld.sharpness.top_eigs` as it says `ld.sharpness.train_gd_sharpness`.
from .hessian import (  # re-export
    MAX_DENSE_PARAMS,
    EigenToleranceWarning,
    EigResult,
    Params,
    _flatten,
    _model_data,
    exact_hessian,
    hvp,
    hvp_operator,
    model_loss,
    mse_loss,
    top_eigs,
)

__all__ = [
    "digits_tensors",
    "make_mlp",
    "mse_loss",
    "model_loss",
    "hvp",
    "hvp_operator",
    "top_eigs",
    "EigResult",
    "EigenToleranceWarning",
    "exact_hessian",
    "train_gd_sharpness",
    "eos_summary",
    "stored_eos_traces",
    "gf_reference",
    "eos_sweep",
    "uv_loss",
    "uv_toy_gd",
    "uv_sharpness",
    "uv_flow_limit_sharpness",
    "quadratic_gd",
    "edge_model_gd",
    "edge_model_orbit",
    "MAX_DENSE_PARAMS",
]

_ACTS = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU, "softplus": nn.Softplus, "elu": nn.ELU}


# ---------------------------------------------------------------------------------------------------- data, model
def digits_tensors(n: int = 1000, center: bool = True, device: str | torch.device | None = None,
                   dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The first `n` of scikit-learn's bundled 8x8 digits (1797 images, no download): X/16, centred; one-hot Y; labels.

    Returns X (n, 64), Y (n, 10) one-hot, y (n,) int64, on `device` (default `get_device()`).
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point or dtype.is_complex:
        raise TypeError(f"dtype must be a real floating torch dtype (torch.float32 or torch.float64); got {dtype!r}")
    center = as_bool("center", center)
    pixels, target = load_digits()
    n = as_int("n", n, minimum=1)
    if n > len(target):
        raise ValueError(f"n must be at most {len(target)} (the size of the digits data); got {n}")
    X = pixels[:n] / 16.0
    if center:
        X = X - X.mean(axis=0)
    y = target[:n]
    dev = get_device(device)
    Y = np.eye(10)[y]
    return (torch.as_tensor(X, dtype=dtype, device=dev), torch.as_tensor(Y, dtype=dtype, device=dev),
            torch.as_tensor(y, dtype=torch.int64, device=dev))


def make_mlp(in_dim: int = 64, width: int = 100, depth: int = 3, out_dim: int = 10, act: str = "tanh",
             seed: int = 0, dtype: torch.dtype = torch.float32) -> nn.Module:
    """A fully connected net in_dim -> width (x depth hidden layers, activation `act`) -> out_dim, with biases.

    PyTorch's default initialisation, drawn in float32 under `torch.manual_seed(seed)` (the global generator is
    restored afterwards), then cast to `dtype`: the float64 model starts from the same weights as the float32 one.
    """
    for name, v in (("in_dim", in_dim), ("width", width), ("out_dim", out_dim)):
        as_int(name, v, minimum=1)
    as_int("depth", depth, minimum=1)
    if act not in _ACTS:
        raise ValueError(f"act must be one of {sorted(_ACTS)}; got {act!r}")
    seed = as_seed("seed", seed)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point or dtype.is_complex:
        raise TypeError(f"dtype must be a real floating torch dtype; got {dtype!r}")
    dims = [in_dim] + [width] * depth
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:], strict=True):
            layers += [nn.Linear(a, b), _ACTS[act]()]
        layers.append(nn.Linear(dims[-1], out_dim))
        model = nn.Sequential(*layers)
    return model.to(dtype)


# ------------------------------------------------------------------------------------------------ Hessian tools


# ------------------------------------------------------------------------------------------------ training loops
def train_gd_sharpness(model: nn.Module, X: torch.Tensor, Y: torch.Tensor, eta: float, steps: int,
                       eig_every: int = 25, eig_iters: int = 40, loss: str = "mse",
                       device: str | torch.device | None = None, first_iters: int = 20, eig_k: int = 2,
                       eig_method: Literal["power", "krylov", "lanczos"] = "krylov",
                       record_params_every: int | None = None, stop_acc: float | None = None,
                       eig_tol: float = 1e-3, record_eig_params: bool = False, cold_every: int | None = 10,
                       cold_iters: int = 200, seed: int = 0) -> History:
    """Full-batch GD w <- w - eta grad L(w) with the sharpness tracked along the way (Cohen et al. 2021).

    Every `eig_every` steps (and at the last step) the top-`eig_k` Hessian eigenvalues are estimated with
    `top_eigs`: `first_iters` products the first time, then at most `eig_iters` warm-started from the previous
    `eig_k` Ritz vectors, stopping once the relative residual ||Hv - Sv|| / S of the top pair is below `eig_tol`
    and those of the others below 10 `eig_tol` (krylov; for power and lanczos `eig_tol` is their own tolerance).
    What is guaranteed (eq. `eq-eos-residual` of Ch 6): every estimate is a Ritz value, so it is at most
    lambda_max (Cauchy interlacing), and its residual r puts *some* eigenvalue within r S of it -- not
    necessarily lambda_max. A warm start misses an eigenvector that rises past the top from outside the warm
    block (with eig_k = 1, the second eigenvector overtaking the first: Ch 6's off-setting runs, 0.56-0.65 %
    low; the default eig_k = 2 keeps the runner-up in the block). The guard against the rest: at every
    `cold_every`-th estimate (None: never) the eigenproblem is solved again by Krylov from a fresh random vector
    (seed `seed` + the estimate's index; at most `cold_iters` products, the same tolerances), which has a
    component along every eigenvector; if its top Ritz value is larger (by more than ten rounding units of the
    parameters' dtype: a tie keeps the warm block), it replaces the warm one (both are at
    most lambda_max, so the larger is the closer) and its Ritz vectors re-seed the warm block. So a missed top
    eigenvalue is caught at the next cold solve that finds it: a random start has a component along q_1 almost
    surely and Krylov amplifies it, so a cold solve finds lambda_max with high probability, but nothing makes
    that certain at the few dozen products used (the Kuczynski-Wozniakowski bound for a random start is vacuous
    at N ~ 3e4 parameters and ~25 products). Chapter 6 compares every estimate of its runs with an independent
    ARPACK solve from another random start (evidence that both found lambda_max, not a certificate), and
    `bench/eos_traces.py --validate` other seeds and step sizes; the unit tests compare every estimate of a
    float64 run with the dense spectrum.
    The model is not modified. Returns a History over steps 0..steps with metrics
    "loss" and "acc"; `final` holds "eig_steps", "sharpness" (top eigenvalue), "eigs" (all k), "eig_residual"
    (the relative residual ||Hv - Sv|| / S of each sharpness estimate), "eig_hvps" (products per estimate,
    the cold solve's included), "eig_cold" (whether a cold solve was made), "cold_sharpness" (its top Ritz
    value, NaN where none), "eig_caught" (whether it was larger, replacing the warm estimate),
    "params" (numpy dict), if `record_params_every` is set, "param_steps" and "params_path" (flattened
    parameters, float64), and with `record_eig_params` "eig_params" (flattened parameters at each estimate step,
    in the model's dtype). With `stop_acc`, training stops at the first step whose training accuracy reaches it.
    A non-finite loss raises `DivergenceError` with the step.
    """
    eta = as_positive("eta", eta)
    steps = as_int("steps", steps, minimum=0)  # steps = 0: the start, with its sharpness
    eig_every = as_int("eig_every", eig_every, minimum=1)
    eig_iters, first_iters = as_int("eig_iters", eig_iters, minimum=1), as_int("first_iters", first_iters, minimum=1)
    if not np.isfinite(eig_tol) or eig_tol < 0:
        raise ValueError(f"eig_tol must be finite and >= 0; got {eig_tol}")
    record_eig_params = as_bool("record_eig_params", record_eig_params)
    eig_k = as_int("eig_k", eig_k, minimum=1)
    if cold_every is not None:
        cold_every = as_int("cold_every", cold_every, minimum=1)
    cold_iters = as_int("cold_iters", cold_iters, minimum=eig_k)
    seed = as_seed("seed", seed)
    if eig_method == "krylov" and eig_k > min(eig_iters, first_iters):
        raise ValueError(f"eig_k={eig_k} needs eig_iters and first_iters >= eig_k (Krylov spans one direction per "
                         f"product); got eig_iters={eig_iters}, first_iters={first_iters}")
    X, Y = _model_data(model, X, Y)
    dev = get_device(device)
    X, Y = X.to(dev), Y.to(dev)
    model = _copy_to(model, dev)
    loss_fn, params = model_loss(model, X, Y, loss)
    labels = Y.argmax(dim=-1)
    grad_fn = _grad_and_value(lambda p: _loss_and_out(model, p, X, Y, loss))
    losses, accs, eig_steps, eigs, p_steps, p_path, eig_res, eig_hvps = [], [], [], [], [], [], [], []
    eig_p: list[np.ndarray] = []
    cold_vals: list[float] = []
    caught: list[bool] = []
    vecs = None
    tie = 10 * float(torch.finfo(next(iter(params.values())).dtype).eps)
    k = 0
    for k in range(steps + 1):
        if record_params_every and k % record_params_every == 0:
            p_steps.append(k)
            p_path.append(_flatten(params).double().cpu().numpy())
        g, (value, out) = grad_fn(params)
        check_finite("the training loss", value, step=k)
        losses.append(value.item())
        accs.append((out.argmax(dim=-1) == labels).float().mean().item())
        done = k == steps or (stop_acc is not None and accs[-1] >= stop_acc)
        if k % eig_every == 0 or done:
            iters = first_iters if vecs is None else eig_iters
            tol = 0.0 if vecs is None else eig_tol
            rest = 10 * tol if eig_method == "krylov" else None
            j = len(eig_steps)  # this estimate's index
            est = top_eigs(loss_fn, params, k=eig_k, method=eig_method, iters=iters, v0=vecs, tol=tol,
                           tol_rest=rest)
            hvps, cold_top, better = est.hvps, float("nan"), False
            if cold_every is not None and vecs is not None and j % cold_every == 0:
                cold = top_eigs(loss_fn, params, k=eig_k, method="krylov", iters=cold_iters, tol=eig_tol,
                                tol_rest=10 * eig_tol, seed=seed + j)
                hvps, cold_top = hvps + cold.hvps, float(cold.values[0])
                # both are <= lambda_max: the larger is the closer; larger by more than the rounding of the
                # products (a tie, two solves of one eigenvalue, keeps the warm block)
                better = cold_top > float(est.values[0]) + tie * abs(float(est.values[0]))
                est = cold if better else est
            vals, vecs = est
            cold_vals.append(cold_top)
            caught.append(better)
            eig_steps.append(k)
            if record_eig_params:
                eig_p.append(_flatten(params).cpu().numpy())
            eigs.append(vals)
            eig_res.append(float(est.residuals[0]))
            eig_hvps.append(hvps)
        if done:
            break
        params = {nm: p - eta * g[nm] for nm, p in params.items()}
    final = {"eig_steps": np.array(eig_steps), "eigs": np.array(eigs), "sharpness": np.array(eigs)[:, 0],
             "eig_residual": np.array(eig_res), "eig_hvps": np.array(eig_hvps),
             "eig_cold": ~np.isnan(cold_vals), "cold_sharpness": np.array(cold_vals),
             "eig_caught": np.array(caught),
             "params": {nm: p.cpu().numpy() for nm, p in params.items()}, "eta": eta}
    if record_params_every:
        final.update(param_steps=np.array(p_steps), params_path=np.array(p_path))
    if record_eig_params:
        final["eig_params"] = np.array(eig_p)
    return History(np.arange(k + 1), {"loss": np.array(losses), "acc": np.array(accs)}, final)


def eos_summary(hist: History, eta: float, frac: float = 0.95, burn: int = 100) -> dict[str, float | int | None]:
    """The edge-of-stability statistics of a `train_gd_sharpness` run (Ch 6, the edge-of-stability checks).

    cross_step: the first sharpness step with S >= frac * 2/eta (None if none); pre_cross_increases: steps before it
    where the loss went up; median/max/min_ratio: S eta / 2 at sharpness steps >= cross_step + burn;
    post_increase_frac: the fraction of steps after the crossing where the loss went up; loss_drop:
    L_end / L_cross. Without a crossing the statistics after it are NaN.
    """
    eta = as_positive("eta", eta)
    burn = as_int("burn", burn, minimum=0)
    if not 0 < frac <= 1:
        raise ValueError(f"frac must be in (0, 1]; got {frac}")
    loss, es, S = hist["loss"], hist.final["eig_steps"], hist.final["sharpness"]
    up = np.diff(loss) > 0  # up[k]: the loss rose from step k to k + 1
    hit = np.flatnonzero(S >= frac * 2.0 / eta)
    nan = float("nan")
    if hit.size == 0:
        return {"cross_step": None, "pre_cross_increases": int(up.sum()), "median_ratio": nan, "max_ratio": nan,
                "min_ratio": nan, "post_increase_frac": nan, "loss_drop": nan}
    cross = int(es[hit[0]])
    ratio = S[es >= cross + burn] * eta / 2.0
    stats = (float(np.median(ratio)), float(ratio.max()), float(ratio.min())) if ratio.size else (nan, nan, nan)
    return {"cross_step": cross, "pre_cross_increases": int(up[:cross].sum()), "median_ratio": stats[0],
            "max_ratio": stats[1], "min_ratio": stats[2],
            "post_increase_frac": float(up[cross:].mean()) if up[cross:].size else nan,
            "loss_drop": float(loss[-1] / loss[cross])}


def gf_reference(model: nn.Module, X: torch.Tensor, Y: torch.Tensor, t_max: float, alpha: float = 1.0,
                 t_record: np.ndarray | None = None, eig_every: int = 20, loss: str = "mse",
                 device: str | torch.device | None = None) -> History:
    """Gradient flow dw/dt = -grad L(w) by RK4 with step h = alpha / S (the idea of Cohen et al.'s `flow.py`).

    S is re-estimated (warm-started power iteration, 6 products) every `eig_every` RK4 steps. The integration
    lands exactly on every time of `t_record` (default: 50 equal intervals of [0, t_max]), where it records the
    loss, the sharpness estimate and the flattened parameters (float64, in `final["params_path"]`).
    """
    t_max, alpha = as_nonnegative("t_max", t_max), as_positive("alpha", alpha)  # t_max = 0: the start
    eig_every = as_int("eig_every", eig_every, minimum=1)
    t_rec = np.linspace(0.0, t_max, 51 if t_max > 0 else 1) if t_record is None else np.sort(
        as_times("t_record", t_record))
    if t_rec.size == 0 or t_rec[0] < 0 or t_rec[-1] > t_max * (1 + 1e-12):
        raise ValueError(f"t_record must be a non-empty set of times in [0, t_max={t_max}]")
    X, Y = _model_data(model, X, Y)
    dev = get_device(device)
    X, Y = X.to(dev), Y.to(dev)
    model = _copy_to(model, dev)
    loss_fn, params = model_loss(model, X, Y, loss)
    names = list(params)
    grad = _grad_and_value(lambda p: (loss_fn(p), None))

    def field(state: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        g = grad(dict(zip(names, state, strict=True)))[0]
        return tuple(-g[nm] for nm in names)

    state, t, n_steps, vecs, S = tuple(params[nm] for nm in names), 0.0, 0, None, None
    records: dict[str, list] = {"loss": [], "sharpness": [], "h": []}
    path = []
    for target in t_rec:
        while t < target - 1e-12:
            if n_steps % eig_every == 0 or S is None:
                vals, vecs = top_eigs(loss_fn, dict(zip(names, state, strict=True)), iters=20 if vecs is None else 6,
                                      v0=vecs, tol=0.0)
                S = max(float(vals[0]), 1e-8)
            h = min(alpha / S, target - t)
            state = rk4_step_unchecked(field, state, h)
            t, n_steps = t + h, n_steps + 1
        p = dict(zip(names, state, strict=True))
        value = loss_fn(p)
        check_finite("the gradient-flow loss", value, step=n_steps)
        records["loss"].append(value.item())
        records["sharpness"].append(np.nan if S is None else S)
        records["h"].append(alpha / S if S else np.nan)
        path.append(_flatten(p).double().cpu().numpy())
    return History.from_records(t_rec, records, {"params_path": np.array(path), "rk4_steps": n_steps})


def stored_eos_traces() -> tuple[dict[str, np.ndarray], str]:
    """Chapter 6's stored sharpness traces (`bench/eos_traces.py`) at the book's seed knob, and where they are from.

    At LEARNDYN_SEED=k, in this order: the file `make robust` regenerates at that seed
    (`_build/robust/eos_traces-seed-k.npz` of the enclosing book), the file shipped with the package for that seed
    (`learndyn/data/eos_traces.npz` for seed 0, `learndyn/data/eos_traces-seed-k.npz` for the seeds shipped, 1 =
    CI's second seed), else the shipped seed-0 traces, and the returned description says so.
    """
    from pathlib import Path

    from .core import seed_offset

    def load(path: Path) -> dict[str, np.ndarray]:
        traces = dict(np.load(path).items())
        if "lrs" in traces:                  # files written before the library said eta for the step size
            traces["eta"] = traces.pop("lrs")
        return traces

    k = seed_offset()
    data = Path(__file__).parent / "data"
    shipped = data / "eos_traces.npz"
    if k:
        for folder in [Path.cwd(), *Path.cwd().parents]:
            fresh = folder / "_build" / "robust" / f"eos_traces-seed-{k}.npz"
            if fresh.is_file():
                return load(fresh), f"regenerated at seed {k} ({fresh.name})"
        if (data / f"eos_traces-seed-{k}.npz").is_file():
            return load(data / f"eos_traces-seed-{k}.npz"), f"stored at seed {k} (shipped with learndyn)"
    if not shipped.is_file():
        raise FileNotFoundError(f"{shipped} is missing: run bench/eos_traces.py to regenerate it")
    return load(shipped), "stored at seed 0 (shipped with learndyn)"


def eos_sweep(eta: list[float] | np.ndarray, steps: int, seed: int = 0, n: int = 1000, eig_every: int = 25,
              device: str | torch.device | None = None, cold_every: int | None = 10) -> dict[str, np.ndarray]:
    """The Ch 6 digits setup (64-100-100-100-10 tanh, MSE, float32) trained with each step size of `eta`.

    `cold_every` is the training loop's cold-start guard (`train_gd_sharpness`).
    Returns arrays for `np.savez`: "eta" (B,), "loss" (B, steps + 1), "eig_steps" (K,), "sharpness" (B, K).
    `bench/eos_traces.py` stores this for the chapter's widget and plateau check.
    """
    eta = as_real_array("eta", eta, ndim=1, nonempty=True)
    eta = np.asarray([as_positive("eta entry", float(v)) for v in eta])
    X, Y, _ = digits_tensors(n, device=device)
    runs = [train_gd_sharpness(make_mlp(seed=seed), X, Y, float(e), steps, eig_every=eig_every, device=device,
                               cold_every=cold_every) for e in eta]
    return {"eta": eta, "loss": np.stack([h["loss"] for h in runs]), "eig_steps": runs[0].final["eig_steps"],
            "sharpness": np.stack([h.final["sharpness"] for h in runs]), "seed": np.array(seed),
            "n": np.array(n)}


# ------------------------------------------------------------------------------------------ closed-form toy models
def _uv(names: tuple[str, str], u: np.ndarray | float, v: np.ndarray | float) -> list[np.ndarray]:
    """Validated, broadcast (u, v) arrays of the toy."""
    return broadcast(f"{names[0]} and {names[1]}", as_real_array(names[0], u), as_real_array(names[1], v))


def _uv_loss(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return 0.5 * (u * v - 1.0) ** 2


def _uv_sharpness(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return 0.5 * (u**2 + v**2) + np.sqrt(0.25 * (u**2 - v**2) ** 2 + (2 * u * v - 1.0) ** 2)


def uv_loss(u: np.ndarray | float, v: np.ndarray | float) -> np.ndarray:
    """The toy loss L(u, v) = 1/2 (u v - 1)^2 of eq. `eq-eos-uv-loss` (the scalar net of Ch 2 with s = 1)."""
    return no_overflow("u and v", _uv_loss(*_uv(("u", "v"), u, v)))


def uv_sharpness(u: np.ndarray | float, v: np.ndarray | float) -> np.ndarray:
    """lambda_max of the toy's Hessian [[v^2, 2uv - 1], [2uv - 1, u^2]] (eq. `eq-eos-uv-hessian`); broadcasts.

    lambda_max = (u^2 + v^2)/2 + sqrt(((u^2 - v^2)/2)^2 + (2uv - 1)^2), which equals u^2 + v^2 on uv = 1.
    """
    return no_overflow("u and v", _uv_sharpness(*_uv(("u", "v"), u, v)))


def uv_flow_limit_sharpness(u0: np.ndarray | float, v0: np.ndarray | float) -> np.ndarray:
    """Sharpness sqrt(c0^2 + 4) of the minimum that gradient flow reaches from (u0, v0), c0 = u0^2 - v0^2.

    Eq. `eq-eos-uv-limit`: the flow conserves c0 (valid when u0 v0 > 0, so that the flow reaches uv = 1).
    """
    u0, v0 = _uv(("u0", "v0"), u0, v0)
    return no_overflow("u0 and v0", np.sqrt((u0**2 - v0**2) ** 2 + 4.0))


def uv_toy_gd(u0: np.ndarray | float, v0: np.ndarray | float, eta: float, steps: int,
              on_divergence: Literal["raise", "flag"] = "raise") -> History:
    """GD on L = 1/2 (uv - 1)^2 from (u0, v0) (arrays broadcast: a batch of runs), eq. `eq-eos-uv-gd`.

    u <- u - eta (uv - 1) v,  v <- v - eta (uv - 1) u. Metrics "u", "v", "loss", "sharpness" of shape
    (steps + 1, *batch). A run that leaves |u v| < 1e8 diverged: with on_divergence="raise" a `DivergenceError`
    names the step; with "flag" its entries become NaN from then on and `final["diverged"]` (bool) and
    `final["diverge_step"]` (-1 if none) say which runs did.
    """
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    if on_divergence not in ("raise", "flag"):
        raise ValueError(f"on_divergence must be 'raise' or 'flag'; got {on_divergence!r}")
    u, v = _uv(("u0", "v0"), u0, v0)
    u, v = u.copy(), v.copy()
    U, V = np.empty((steps + 1, *u.shape)), np.empty((steps + 1, *u.shape))
    U[0], V[0] = u, v
    div_step = np.full(u.shape, -1)
    with np.errstate(over="ignore", invalid="ignore"):
        uv = u * v
        for k in range(steps):
            r = eta * (uv - 1.0)
            u, v = u - r * v, v - r * u
            uv = u * v
            if not np.abs(uv).max(initial=0.0) < 1e8:  # one reduction on the happy path; NaN fails it too
                bad = ~(np.abs(uv) < 1e8) & (div_step < 0)
                if bad.any():
                    if on_divergence == "raise":
                        raise DivergenceError(f"the (u, v) toy diverged at step {k + 1} (eta={eta:g}): |uv| "
                                              "exceeded 1e8")
                    div_step[bad] = k + 1
                    u, v, uv = np.array(u), np.array(v), np.array(uv)  # a scalar run's are numpy scalars
                    u[bad], v[bad], uv[bad] = np.nan, np.nan, np.nan  # NaN from then on (it propagates)
            U[k + 1], V[k + 1] = u, v
    metrics = {"u": U, "v": V, "loss": _by_rows(_uv_loss, U, V), "sharpness": _by_rows(_uv_sharpness, U, V)}
    return History(np.arange(steps + 1), metrics, {"diverged": div_step >= 0, "diverge_step": div_step})


def _by_rows(f: Callable[[np.ndarray, np.ndarray], np.ndarray], U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """f(U, V) elementwise, a block of rows at a time (its temporaries stay in cache on long runs of big batches)."""
    out = np.empty_like(U)
    rows = max(1, 2**16 // max(1, U[0].size))
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(0, U.shape[0], rows):
            out[i:i + rows] = f(U[i:i + rows], V[i:i + rows])
    return out


def edge_model_gd(x0: np.ndarray | float, y0: np.ndarray | float, eta: float, s0: float, chi: float,
                  kappa: np.ndarray | float, steps: int) -> History:
    """GD on the minimal edge-of-stability model L(x, y) = 1/2 (s0 + y) x^2 - chi y + 1/2 kappa y^2 (Ch 6).

    On the valley x = 0 the sharpness is S = s0 + y with grad S = e_y; the drive chi sharpens it towards the flow's
    limit s0 + chi / kappa. GD, eq. `eq-eos-model-gd`: x <- (1 - eta S) x, y <- y + eta (chi - kappa y) - eta x^2 / 2
    (the last term is the self-stabilisation of eq. `eq-eos-self-stab-dS`, exact here). `x0`, `y0` and `kappa`
    broadcast (a batch of runs). Metrics "x", "y", "sharpness" (s0 + y) and "loss" of shape (steps + 1, *batch);
    a run whose |x| or |y| passes 1e100 raises `DivergenceError` with the step.
    """
    s0, chi = as_real("s0", s0), as_real("chi", chi)
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    kap = as_real_array("kappa", kappa, nonempty=True)
    if np.any(kap < 0):
        raise ValueError("kappa must be >= 0")
    try:
        x, y, kap = (a.copy() for a in np.broadcast_arrays(as_real_array("x0", x0, nonempty=True),
                                                            as_real_array("y0", y0, nonempty=True), kap))
    except ValueError as err:
        raise ValueError(f"x0, y0 and kappa must broadcast together: {err}") from None
    xs, ys = np.empty((steps + 1, *x.shape)), np.empty((steps + 1, *x.shape))
    xs[0], ys[0] = x, y
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps):
            x, y = (1.0 - eta * (s0 + y)) * x, y + eta * (chi - kap * y) - 0.5 * eta * x * x
            if not (np.all(np.abs(x) < 1e100) and np.all(np.abs(y) < 1e100)):
                raise DivergenceError(f"the edge-of-stability model diverged at step {k + 1} (eta={eta:g})")
            xs[k + 1], ys[k + 1] = x, y
    loss = 0.5 * (s0 + ys) * xs**2 - chi * ys + 0.5 * kap * ys**2
    return History(np.arange(steps + 1), {"x": xs, "y": ys, "sharpness": s0 + ys, "loss": loss}, {})


def edge_model_orbit(eta: float, s0: float, chi: float, kappa: float) -> dict[str, float]:
    """The period-2 orbit of `edge_model_gd` and its stability (eqs. `eq-eos-model-orbit`, `eq-eos-model-kc`).

    S* = 2 / eta, y* = 2 / eta - s0, x*^2 = 2 (chi - kappa y*) (Damian et al.'s equilibrium amplitude
    2 alpha / ||grad S||^2 with alpha = -grad L . grad S = chi - kappa y* and ||grad S|| = 1); the linearisation in
    (ln|x|, y) has determinant det = 1 - eta kappa + eta^2 x*^2, so the orbit attracts iff kappa > kappa_c =
    2 eta chi / (1 + 2 eta y*). Requires x*^2 > 0, i.e. the flow's limit s0 + chi / kappa above 2 / eta.
    """
    eta, s0, chi = as_positive("eta", eta), as_real("s0", s0), as_real("chi", chi)
    kappa = as_nonnegative("kappa", kappa)
    y_star = 2.0 / eta - s0
    x2 = 2.0 * (chi - kappa * y_star)
    if x2 <= 0:
        raise ValueError(f"no orbit: the flow's limit sharpness s0 + chi/kappa must exceed 2/eta = {2 / eta:g}")
    return {"sharpness": 2.0 / eta, "y": y_star, "x2": x2, "det": 1.0 - eta * kappa + eta**2 * x2,
            "kappa_c": 2.0 * eta * chi / (1.0 + 2.0 * eta * y_star)}


def quadratic_gd(lam: float, eta: float, x0: float, steps: int) -> np.ndarray:
    """GD x <- x - eta lam x on 1/2 lam x^2: the path x_0..x_steps, equal to (1 - eta lam)^k x0 (eq. `eq-eos-quad-gd`).

    Iterates the update (through `learndyn.quadratic.gd_quadratic`, which raises `DivergenceError` on overflow).
    """
    if isinstance(lam, bool) or not isinstance(lam, int | float | np.integer | np.floating) or not np.isfinite(lam):
        raise ValueError(f"lam must be a finite real number; got {lam!r}")
    if isinstance(x0, bool) or not isinstance(x0, int | float | np.integer | np.floating) or not np.isfinite(x0):
        raise ValueError(f"x0 must be a finite real number; got {x0!r}")
    eta = as_positive("eta", eta)
    return quadratic.gd_quadratic(np.array([[float(lam)]]), np.array([float(x0)]), eta, steps)[:, 0]


# ---------------------------------------------------------------------------------------------------- helpers


def _loss_and_out(model: nn.Module, p: Params, X: torch.Tensor, Y: torch.Tensor,
                  loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.func.functional_call(model, p, (X,))
    value = mse_loss(out, Y) if loss == "mse" else nn.functional.cross_entropy(out, Y.argmax(dim=-1))
    return value, out.detach()


def _grad_and_value(f: Callable[[Params], tuple[torch.Tensor, Any]]) -> Callable[[Params], tuple[Params, tuple]]:
    """p -> (grad of the scalar f(p)[0], (f(p)[0], f(p)[1])) by one reverse pass of autograd.

    The same numbers as `torch.func.grad_and_value(f, has_aux=True)` (the same operations, differentiated once),
    without functorch's per-call wrapping: about 13 % less time per step on Chapter 6's network (the training
    loop and the gradient-flow reference take thousands of gradients).
    """
    def grad_and_value(p: Params) -> tuple[Params, tuple]:
        leaves = {nm: t.detach().requires_grad_(True) for nm, t in p.items()}
        with torch.enable_grad():
            value, aux = f(leaves)
            grads = torch.autograd.grad(value, list(leaves.values()))
        return dict(zip(leaves, grads, strict=True)), (value.detach(), aux)

    return grad_and_value


def _copy_to(model: nn.Module, device: torch.device) -> nn.Module:
    return copy.deepcopy(model).to(device)
