"""Simulators of deep linear networks (Ch 2): GD batched on a leading axis B, and a gradient-flow reference.

Re-exported by `learndyn.deep_linear`; use them from there. Conventions of that module: W1 (N2, N1), W2 (N3, N2),
Sigma = U S V^T (N3, N1), E = 1/2 ||Sigma - W2 W1||_F^2 (whitened inputs, eq. `eq-saxe-loss`), GD step k compared
with flow time t = k when tau = 1/eta. With correlated inputs (section "Greedy layer-wise pretraining, run"):
`train_deep_linear` (E = 1/2 E||y - P x||^2), the chains `gd_chains`, `train_greedy_pretraining`, `decoupled_form`.
Simulators run in float64 on `device` (default `learndyn.get_device()`) and return a `learndyn.core.History` whose
metrics have the recorded steps as leading axis: "modes" (K, [B,] r), "loss" (K, [B]), ... . A run that leaves the
finite numbers raises `DivergenceError` naming the step, or, with on_divergence="flag", records in
`final["diverged_at"]` the first non-finite step of each run (-1: none).

Arguments are checked once, as torch tensors on `device`; on the CPU the GD loops then run in numpy (a torch operation
on matrices this small costs 3-5 numpy ones), elsewhere in torch, written once in the operations both share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy import integrate

from .core import (
    DivergenceError,
    History,
    as_int,
    as_positive,
    as_real_array,
    as_real_tensor,
    as_seed,
    as_times,
    check_alloc,
    few_threads_if_small,
    get_device,
    make_generator,
    no_overflow,
)
from .tasks import Task

__all__ = ["decoupled_init", "small_random_init", "train_two_layer", "train_chain", "train_shallow", "flow_two_layer",
           "train_deep_linear", "gd_chains", "train_greedy_pretraining", "decoupled_form", "crossing_step"]

Tensor = torch.Tensor
Array = np.ndarray | Tensor          # what the GD loops run on: numpy arrays on the CPU, torch tensors on accelerators
OnDivergence = Literal["raise", "flag"]
TRACKS = ("modes", "loss", "balance_drift", "offdiag", "drift_bound")
_QUIET = {"over": "ignore", "invalid": "ignore"}  # numpy warns where torch does not; `_Divergence` reports a divergence


def decoupled_init(task: Task, N2: int, a0: ArrayLike, b0: ArrayLike, R: ArrayLike | None = None,
                   batch: int | None = None, seed: int = 0,
                   device: str | torch.device | None = None) -> tuple[Tensor, Tensor]:
    """Decoupled initial conditions, eq. `eq-saxe-decoupled-init`: W1 = R D1 V^T, W2 = U D2 R^T.

    R (N2, N2) is orthogonal (Haar-random from `seed` when not given, one per batch element); D1 (N2, N1) and
    D2 (N3, N2) are rectangular-diagonal with the mode amplitudes a0, b0 (scalars, shape (r,) or (B, r)).
    Needs N2 >= r = number of modes. Returns float64 tensors W1 ([B,] N2, N1), W2 ([B,] N3, N2).
    """
    if not all(hasattr(task, a) for a in ("svals", "Sigma", "U", "V")):
        raise TypeError(f"task must be a deep_linear.Task (with svals, Sigma, U, V); got {type(task).__name__}")
    N2 = as_int("N2", N2, minimum=1)
    seed, dev = as_seed("seed", seed), get_device(device)
    r, (N3, N1) = task.svals.size, task.Sigma.shape
    if N2 < r:
        raise ValueError(f"N2 must be >= the number of modes r = {r} for orthonormal hidden directions; got {N2}")
    a0, b0 = as_real_array("a0", a0, nonempty=True), as_real_array("b0", b0, nonempty=True)
    try:
        lead = np.broadcast_shapes(a0.shape, b0.shape, (r,))[:-1]
    except ValueError:
        lead = (0, 0)                                          # flagged just below
    if len(lead) > 1:
        raise ValueError(f"a0 and b0 must be scalars or of shape (r,) or (B, r) with r = {r}; "
                         f"got {a0.shape}, {b0.shape}")
    if batch is not None:
        batch = as_int("batch", batch, minimum=1)
        if lead and lead[0] != batch:
            raise ValueError(f"batch={batch} but a0/b0 have a leading axis of {lead[0]}")
        lead = (batch,)
    a0, b0 = np.broadcast_to(a0, (*lead, r)), np.broadcast_to(b0, (*lead, r))
    size = (math.prod(lead) or 1) * (2 * N2 * N2 + N2 * (N1 + N3))
    check_alloc(f"decoupled_init(N2={N2}, batch={lead})", size)
    gen = make_generator(seed)
    with few_threads_if_small(torch.device("cpu"), size):   # built on the CPU: one thread for small matrices
        if R is None:
            q, rr = torch.linalg.qr(torch.randn(*lead, N2, N2, generator=gen, dtype=torch.float64))
            Rt = q * torch.sign(torch.diagonal(rr, dim1=-2, dim2=-1)).unsqueeze(-2)
        else:
            Rt = torch.as_tensor(as_real_array("R", R))
            eye = torch.eye(N2, dtype=torch.float64)
            if Rt.shape[-2:] != (N2, N2) or not torch.allclose(Rt.transpose(-1, -2) @ Rt, eye, atol=1e-10):
                raise ValueError(f"R must be an orthogonal ({N2}, {N2}) matrix")
        D1, D2 = torch.zeros(*lead, N2, N1, dtype=torch.float64), torch.zeros(*lead, N3, N2, dtype=torch.float64)
        idx = torch.arange(r)
        D1[..., idx, idx], D2[..., idx, idx] = torch.as_tensor(a0.copy()), torch.as_tensor(b0.copy())
        U, V = torch.as_tensor(task.U), torch.as_tensor(task.V)
        W1, W2 = Rt @ D1 @ V.T, U @ D2 @ Rt.transpose(-1, -2)
    return W1.to(dev), W2.to(dev)


def small_random_init(N1: int, N2: int, N3: int, scale: float, batch: int | None = None, seed: int = 0,
                      device: str | torch.device | None = None) -> tuple[Tensor, Tensor]:
    """W1 ~ scale N(0, 1) of shape ([B,] N2, N1) and W2 ~ scale N(0, 1) of shape ([B,] N3, N2), float64.

    Drawn on the CPU from a generator seeded by `seed` (so a run does not depend on the device), then moved.
    """
    N1, N2, N3 = (as_int(n, v, minimum=1) for n, v in (("N1", N1), ("N2", N2), ("N3", N3)))
    scale = as_positive("scale", scale)
    lead = () if batch is None else (as_int("batch", batch, minimum=1),)
    seed, dev = as_seed("seed", seed), get_device(device)
    check_alloc(f"small_random_init(N1={N1}, N2={N2}, N3={N3}, batch={batch})",
                (lead[0] if lead else 1) * N2 * (N1 + N3))
    gen = make_generator(seed)
    W1 = scale * torch.randn(*lead, N2, N1, generator=gen, dtype=torch.float64)
    W2 = scale * torch.randn(*lead, N3, N2, generator=gen, dtype=torch.float64)
    return W1.to(dev), W2.to(dev)


def train_two_layer(Sigma: ArrayLike | Tensor, W1: ArrayLike | Tensor, W2: ArrayLike | Tensor,
                    eta: float | ArrayLike | Tensor, steps: int, record_every: int = 1,
                    U: ArrayLike | None = None, V: ArrayLike | None = None,
                    track: Sequence[str] = ("modes", "loss", "balance_drift"), device: str | torch.device | None = None,
                    on_divergence: OnDivergence = "raise") -> History:
    """Full-batch GD on E = 1/2 ||Sigma - W2 W1||_F^2, eq. `eq-saxe-gd`, batched over a leading axis of W1, W2.

        W1 <- W1 + eta W2^T G,  W2 <- W2 + eta G W1^T,  G = Sigma - W2 W1.

    `eta` is a float or a tensor of shape (B,) (one step size per run). Tracks any of "modes" (diag U^T W2 W1 V,
    (K, [B,] r)), "loss", "balance_drift" (||C_k - C_0||_2 with C = W1 W1^T - W2^T W2), "offdiag" (largest
    off-diagonal |entry| of U^T W2 W1 V) and "drift_bound" (eta sum_{j<k} eta ||grad E_j||_F^2, the bound of
    `thm-saxe-conservation` on the drift). U, V default to the SVD of Sigma. final: "W1", "W2" (numpy) and
    "diverged_at" with on_divergence="flag".
    """
    dev = get_device(device)
    Sig, W1, W2 = (_tensor(n, x, dev) for n, x in (("Sigma", Sigma), ("W1", W1), ("W2", W2)))
    if Sig.ndim != 2 or W1.shape[-2] != W2.shape[-1] or (W2.shape[-2], W1.shape[-1]) != tuple(Sig.shape) \
            or W1.shape[:-2] != W2.shape[:-2] or W1.ndim > 3:
        raise ValueError(f"shapes do not chain: Sigma {tuple(Sig.shape)}, W1 {tuple(W1.shape)}, W2 {tuple(W2.shape)};"
                         " expected Sigma (N3, N1), W1 ([B,] N2, N1), W2 ([B,] N3, N2) with the same B")
    steps, record_every = as_int("steps", steps), as_int("record_every", record_every, minimum=1)
    eta_t = _eta(eta, W1, dev)
    track = _tracks(track)
    Ut, Vt = _basis(Sig, U, V, dev)
    div = _Divergence(on_divergence, W1.shape[:-2])
    Sig, W1, W2, eta_t, UtT, Vt = _backend(dev, Sig, W1, W2, eta_t, Ut.T, Vt)
    C0, steps_rec, rec = W1 @ W1.swapaxes(-1, -2) - W2.swapaxes(-1, -2) @ W2, [], {name: [] for name in track}
    bound = abs(W1[..., 0, 0]) * 0.0                           # ([B]) zeros of the backend: the drift bound so far
    mm, sub = (np.matmul, np.subtract) if isinstance(W1, np.ndarray) else (torch.matmul, torch.sub)
    W1, W2, P, G, m1, m2 = W1 * 1.0, W2 * 1.0, W2 @ W1, Sig - W2 @ W1, W1 * 0.0, W2 * 0.0  # the loop's, in place
    with few_threads_if_small(dev, _numel(W1, W2)), np.errstate(**_QUIET):
        for k in range(steps + 1):
            mm(W2, W1, out=P)
            sub(Sig, P, out=G)
            if k % record_every == 0 or k == steps:
                steps_rec.append(k)
                for name, val in _metrics(track, G, P, W1, W2, UtT, Vt, C0, bound).items():
                    rec[name].append(val)
            if k == steps:
                break
            mm(W2.swapaxes(-1, -2), G, out=m1)                 # minus the gradients (bitwise: no negation)
            mm(G, W1.swapaxes(-1, -2), out=m2)
            if "drift_bound" in track:
                bound = bound + eta_t[..., 0, 0] ** 2 * ((m1**2).sum((-2, -1)) + (m2**2).sum((-2, -1)))
            for W, m in ((W1, m1), (W2, m2)):                  # W <- W + eta m, as W + eta * m rounds it
                m *= eta_t
                W += m
            div.check(k + 1, W1, W2)
    return _history(steps_rec, rec, {"W1": _np(W1), "W2": _np(W2), **div.final()})


def train_chain(Sigma: ArrayLike | Tensor, Ws: Sequence[ArrayLike | Tensor], eta: float | ArrayLike | Tensor,
                steps: int, record_every: int = 1, U: ArrayLike | None = None, V: ArrayLike | None = None,
                device: str | torch.device | None = None, on_divergence: OnDivergence = "raise") -> History:
    """GD on a depth-D linear chain, E = 1/2 ||Sigma - W_D ... W_1||_F^2 (Ch 2, eq. `eq-saxe-depth`); batched.

    Ws = [W_1, ..., W_D], W_j of shape ([B,] N_{j+1}, N_j); grad_{W_j} E = -(W_D..W_{j+1})^T G (W_{j-1}..W_1)^T.
    Records "modes" (diag U^T P V of the product P) and "loss"; final: the list "Ws" (numpy).
    """
    dev = get_device(device)
    Sig = _tensor("Sigma", Sigma, dev)
    Ws = _chain(Ws, Sig, dev)
    steps, record_every = as_int("steps", steps), as_int("record_every", record_every, minimum=1)
    eta_t = _eta(eta, Ws[0], dev)
    Ut, Vt = _basis(Sig, U, V, dev)
    div = _Divergence(on_divergence, Ws[0].shape[:-2])
    Sig, eta_t, UtT, Vt, *Ws = _backend(dev, Sig, eta_t, Ut.T, Vt, *Ws)
    steps_rec, rec = [], {"modes": [], "loss": []}
    with few_threads_if_small(dev, _numel(*Ws)), np.errstate(**_QUIET):
        for k in range(steps + 1):
            pre = [None]                                           # pre[j] = W_j .. W_1 (None: identity)
            for W in Ws:
                pre.append(W if pre[-1] is None else W @ pre[-1])
            G = Sig - pre[-1]
            if k % record_every == 0 or k == steps:
                steps_rec.append(k)
                rec["modes"].append(_diag(UtT @ pre[-1] @ Vt))
                rec["loss"].append(0.5 * (G**2).sum((-2, -1)))
            if k == steps:
                break
            back, grads = G, [None] * len(Ws)                      # back = (W_D .. W_{j+1})^T G
            for j in range(len(Ws) - 1, -1, -1):
                grads[j] = -(back if pre[j] is None else back @ pre[j].swapaxes(-1, -2))
                back = Ws[j].swapaxes(-1, -2) @ back if j else None  # not needed past j = 0
            Ws = [W - eta_t * g for W, g in zip(Ws, grads, strict=True)]
            div.check(k + 1, *Ws)
    return _history(steps_rec, rec, {"Ws": [_np(W) for W in Ws], **div.final()})


def train_shallow(Sigma: ArrayLike | Tensor, W0: ArrayLike | Tensor, eta: float | ArrayLike | Tensor, steps: int,
                  record_every: int = 1, U: ArrayLike | None = None, V: ArrayLike | None = None,
                  device: str | torch.device | None = None) -> History:
    """GD on the shallow network y = W x, E = 1/2 ||Sigma - W||_F^2: W <- W + eta (Sigma - W), eq. `eq-saxe-shallow-gd`.

    Records "modes" (diag U^T W V) and "loss"; batched over a leading axis of W0.
    """
    dev = get_device(device)
    Sig, W = _tensor("Sigma", Sigma, dev), _tensor("W0", W0, dev)
    if Sig.ndim != 2 or W.shape[-2:] != Sig.shape or W.ndim > 3:
        raise ValueError(f"W0 must have the shape of Sigma {tuple(Sig.shape)} (plus a batch axis); "
                         f"got {tuple(W.shape)}")
    steps, record_every = as_int("steps", steps), as_int("record_every", record_every, minimum=1)
    eta_t = _eta(eta, W, dev)
    Ut, Vt = _basis(Sig, U, V, dev)
    div = _Divergence("raise", W.shape[:-2])
    Sig, W, eta_t, UtT, Vt = _backend(dev, Sig, W, eta_t, Ut.T, Vt)
    steps_rec, rec = [], {"modes": [], "loss": []}
    with few_threads_if_small(dev, _numel(W)), np.errstate(**_QUIET):
        for k in range(steps + 1):
            G = Sig - W
            if k % record_every == 0 or k == steps:
                steps_rec.append(k)
                rec["modes"].append(_diag(UtT @ W @ Vt))
                rec["loss"].append(0.5 * (G**2).sum((-2, -1)))
                if k == 0:
                    no_overflow("Sigma and W0", rec["loss"][0])
            if k == steps:
                break
            W = W + eta_t * G
            div.check(k + 1, W)
    return _history(steps_rec, rec, {"W": _np(W)})


def flow_two_layer(Sigma: ArrayLike, W1: ArrayLike, W2: ArrayLike, t_eval: ArrayLike, rtol: float = 1e-10,
                   atol: float = 1e-12, tau: float = 1.0, U: ArrayLike | None = None, V: ArrayLike | None = None,
                   track: Sequence[str] = ("modes", "loss", "balance_drift", "W1", "W2")) -> History:
    """Reference gradient flow tau dW1/dt = W2^T G, tau dW2/dt = G W1^T (eq. `eq-saxe-flow`) by scipy's DOP853.

    Shares no code with the GD simulators. Unbatched; numpy in, `History` out with steps = t_eval (increasing,
    from t_eval[0] = 0) and the metrics in `track` (default all): "modes", "loss", "balance_drift" (as in
    `train_two_layer`) and the weights "W1", "W2" at every time. final: "W1", "W2" at t_eval[-1].
    """
    Sig, W1, W2 = (as_real_array(n, x, nonempty=True) for n, x in (("Sigma", Sigma), ("W1", W1), ("W2", W2)))
    if Sig.ndim != 2 or W1.ndim != 2 or W2.ndim != 2 or W1.shape[0] != W2.shape[1] \
            or (W2.shape[0], W1.shape[1]) != Sig.shape:
        raise ValueError(f"flow_two_layer is unbatched; shapes must chain: Sigma (N3, N1), W1 (N2, N1), W2 (N3, N2);"
                         f" got {Sig.shape}, {W1.shape}, {W2.shape}")
    t = as_times("t_eval", t_eval, strict=True, start_zero=True)
    tau, rtol, atol = as_positive("tau", tau), as_positive("rtol", rtol), as_positive("atol", atol)
    track = _tracks(track, ("modes", "loss", "balance_drift", "W1", "W2"))
    Ut, Vt = _basis(torch.as_tensor(Sig), U, V, torch.device("cpu"))
    UnT, Vn, n1, r = Ut.numpy().T, Vt.numpy(), W1.size, min(Sig.shape)

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        A, B = y[:n1].reshape(W1.shape), y[n1:].reshape(W2.shape)
        G = Sig - B @ A
        return np.concatenate([(B.T @ G).ravel(), (G @ A.T).ravel()]) / tau

    def metrics(y: np.ndarray) -> dict[str, np.ndarray]:              # at the states y (n1 + n2, K)
        A, B = y[:n1].T.reshape(-1, *W1.shape), y[n1:].T.reshape(-1, *W2.shape)
        P, out = B @ A, {"W1": A, "W2": B}
        if "modes" in track:
            out["modes"] = np.diagonal(UnT @ P @ Vn, axis1=-2, axis2=-1)[:, :r]
        if "loss" in track:
            out["loss"] = 0.5 * np.sum((Sig - P) ** 2, axis=(-2, -1))
        if "balance_drift" in track:
            C = A @ np.swapaxes(A, -1, -2) - np.swapaxes(B, -1, -2) @ B
            out["balance_drift"] = np.linalg.norm(C - C0, ord=2, axis=(-2, -1))
        return {name: out[name] for name in track}

    y0, C0 = np.concatenate([W1.ravel(), W2.ravel()]), W1 @ W1.T - W2.T @ W2
    if t[-1] == 0:                                     # t_eval = [0]: the start (solve_ivp needs a time span)
        parts, y_end = [metrics(y0[:, None])], y0
    else:
        sol = integrate.solve_ivp(rhs, (0.0, t[-1]), y0, method="DOP853", dense_output=True, rtol=rtol, atol=atol)
        if not sol.success:
            raise DivergenceError(f"solve_ivp failed: {sol.message}")
        # the dense output in chunks of times: the states of a long t_eval are never all held at once
        chunk = max(1, (1 << 19) // y0.size)
        parts = [metrics(sol.sol(t[i:i + chunk])) for i in range(0, t.size, chunk)]
        y_end = sol.y[:, -1]
    metrics_all = {name: np.concatenate([p[name] for p in parts]) for name in track}
    return History(t, metrics_all, {"W1": y_end[:n1].reshape(W1.shape), "W2": y_end[n1:].reshape(W2.shape)})


def train_deep_linear(Sigma: ArrayLike | Tensor, Sigma_xx: ArrayLike | Tensor, Ws: Sequence[ArrayLike | Tensor],
                      eta: float, steps: int, record_every: int = 1, U: ArrayLike | None = None,
                      V: ArrayLike | None = None, device: str | torch.device | None = None) -> History:
    """GD on a depth-D linear network with correlated inputs (Ch 2, eq. `eq-saxe-xx-loss`); batched, float64.

        E = 1/2 E||y - P x||^2,  P = W_D ... W_1,   grad_P E = -(Sigma - P Sigma_xx),
        grad_{W_j} E = -(W_D .. W_{j+1})^T (Sigma - P Sigma_xx) (W_{j-1} .. W_1)^T.

    Sigma = E[y x^T] (N_out, N_in); Sigma_xx = E[x x^T] symmetric positive definite; Ws = [W_1, ..., W_D] of shapes
    ([B,] N_{j+1}, N_j). Records "loss" = E - E_min = 1/2 tr((P - P_*) Sigma_xx (P - P_*)^T), P_* = Sigma Sigma_xx^-1
    (K, [B]); "modes" = diag(U^T P V) (K, [B,] r) and "offdiag", the largest |off-diagonal entry| of U^T P V (K, [B]),
    in the bases U, V (default: the SVD of Sigma). final: "Ws". Sigma_xx = I is `train_chain`; an autoencoder on
    inputs of correlation C is Sigma = Sigma_xx = C. Raises DivergenceError naming the step of a non-finite P.
    """
    dev = get_device(device)
    Sig, Sxx = _tensor("Sigma", Sigma, dev), _tensor("Sigma_xx", Sigma_xx, dev)
    if Sig.ndim != 2 or Sxx.shape != (Sig.shape[1], Sig.shape[1]):
        raise ValueError(f"Sigma_xx must be (N_in, N_in) with N_in = {Sig.shape[-1]} (the columns of Sigma "
                         f"{tuple(Sig.shape)}); got {tuple(Sxx.shape)}")
    if not torch.allclose(Sxx, Sxx.T, rtol=0.0, atol=1e-12 * float(Sxx.abs().max())) \
            or float(torch.linalg.eigvalsh(Sxx).min()) <= 0:
        raise ValueError("Sigma_xx must be symmetric positive definite (an input correlation of full rank)")
    Ws = _chain(Ws, Sig, dev)
    eta, steps, record_every = as_positive("eta", eta), as_int("steps", steps), as_int("record_every", record_every, 1)
    Ut, Vt = _basis(Sig, U, V, dev)
    Pstar = torch.linalg.solve(Sxx, Sig.T).T                   # Sigma Sigma_xx^-1 (Sigma_xx symmetric)
    Sig, Sxx, Pstar, UtT, Vt, *Ws = _backend(dev, Sig, Sxx, Pstar, Ut.T, Vt, *Ws)
    steps_rec, rec = [], {"loss": [], "modes": [], "offdiag": []}
    with few_threads_if_small(dev, _numel(*Ws)), np.errstate(**_QUIET):
        for k in range(steps + 1):
            pre = [Ws[0]]                                      # pre[j] = W_{j+1} .. W_1
            for W in Ws[1:]:
                pre.append(W @ pre[-1])
            if k % record_every == 0 or k == steps:
                if not _finite_runs(pre[-1]).all():
                    raise DivergenceError(f"train_deep_linear diverged by step {k} (eta={eta:g})")
                Dl, M = pre[-1] - Pstar, UtT @ pre[-1] @ Vt
                steps_rec.append(k)
                rec["loss"].append(0.5 * ((Dl @ Sxx) * Dl).sum((-2, -1)))
                rec["modes"].append(_diag(M))
                rec["offdiag"].append(_offdiag_max(M))
            if k == steps:
                break
            back, grads = Sig - pre[-1] @ Sxx, [None] * len(Ws)  # back = (W_D .. W_{j+1})^T (Sigma - P Sigma_xx)
            for j in range(len(Ws) - 1, -1, -1):
                grads[j] = back if j == 0 else back @ pre[j - 1].swapaxes(-1, -2)
                back = Ws[j].swapaxes(-1, -2) @ back if j else None
            Ws = [W + eta * g for W, g in zip(Ws, grads, strict=True)]
    return _history(steps_rec, rec, {"Ws": [_np(W) for W in Ws]})


def gd_chains(s: ArrayLike, lam: ArrayLike, a0: ArrayLike, eta: float, steps: int, record_every: int = 1) -> History:
    """GD on independent scalar chains, one per mode: the decoupled network with correlated inputs (Ch 2,
    eq. `eq-saxe-xx-chain`),

        a_{j,alpha} <- a_{j,alpha} + eta prod_{i != j} a_{i,alpha} (s_alpha - lam_alpha mu_alpha),
        mu_alpha = prod_j a_{j,alpha},

    GD on E_alpha = 1/2 lam_alpha (s_alpha / lam_alpha - mu_alpha)^2: the target is s_alpha / lam_alpha and the rate
    carries the factor lam_alpha (lam = 1: the whitened chains of `eq-saxe-deep-decoupled`). a0 (..., D, N): the
    amplitudes of layers j = 1..D for each mode (zeros allowed: the product over i != j divides by nothing); s, lam
    (N,) or scalars, positive. numpy float64. Records "modes" mu (K, ..., N) and "loss" sum_alpha 1/2 lam_alpha
    (mu_alpha - s_alpha / lam_alpha)^2 (K, ...); final: "a".
    """
    a = as_real_array("a0", a0, nonempty=True)
    s, lam = as_real_array("s", s, nonempty=True).ravel(), as_real_array("lam", lam, nonempty=True).ravel()
    if a.ndim < 2 or s.size not in (1, a.shape[-1]) or lam.size not in (1, a.shape[-1]):
        raise ValueError(f"a0 must have shape (..., D, N) and s, lam 1 or N values each; got a0 {a.shape}, s "
                         f"{s.size}, lam {lam.size}")
    if np.any(s <= 0) or np.any(lam <= 0):
        raise ValueError(f"s and lam must be positive; got s={s}, lam={lam}")
    eta, steps, record_every = as_positive("eta", eta), as_int("steps", steps), as_int("record_every", record_every, 1)
    D, target = a.shape[-2], s / lam
    left, right = np.ones_like(a), np.ones_like(a)        # prod_{i < j} a_i and prod_{i > j} a_i, filled each step
    left_out, right_out = left[..., 1:, :], right[..., -2::-1, :]
    prod, cumprod = np.multiply.reduce, np.multiply.accumulate   # the ufunc methods: no wrapper per call
    steps_rec, modes, losses = [], [], []
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps + 1):
            mu = prod(a, -2)
            loss = 0.5 * (lam * (mu - target) ** 2).sum(-1)
            if not (math.isfinite(loss) if loss.ndim == 0 else np.isfinite(loss).all()):  # NaN/inf in mu: here too
                raise DivergenceError(f"gd_chains diverged by step {k} (eta={eta:g})")
            if k % record_every == 0 or k == steps:
                steps_rec.append(k)
                modes.append(mu)
                losses.append(loss)
            if k == steps:
                break
            if D > 1:
                cumprod(a[..., :-1, :], -2, out=left_out)
                cumprod(a[..., :0:-1, :], -2, out=right_out)
            a = a + eta * left * right * (s - lam * mu)[..., None, :]
    return History(np.asarray(steps_rec), {"modes": np.stack(modes), "loss": np.stack(losses)}, {"a": a})


def train_greedy_pretraining(Sigma_xx: ArrayLike, layers: int, eta: float, steps: int, scale: float,
                             seed: int = 0, record_every: int = 1,
                             device: str | torch.device | None = None) -> History:
    """Greedy layer-wise pretraining of `layers` square layers by linear autoencoders (Ch 2, eq. `eq-saxe-ae-modes`).

    Layer j is the encoder W_j of the autoencoder h -> Wt_j W_j h on h = W_{j-1} .. W_1 x, of correlation
    C_j = W_{j-1} C_{j-1} W_{j-1}^T (C_1 = Sigma_xx): `train_deep_linear` with Sigma = Sigma_xx = C_j, `steps` GD steps
    of size `eta` from W_j, Wt_j with independent N(0, scale^2 / N) entries. In the eigenbasis of C_j every mode has
    the target 1 and the rate factor lam_alpha. Records "loss" (K, layers), each autoencoder's E - E_min. final:
    "Ws" (encoders), "decoders", "imbalance" and "imbalance0" (W_j W_j^T - Wt_j^T Wt_j at the end and at the start;
    the flow conserves it), "correlations" (the C_j). A converged autoencoder (Wt_j W_j = I) has W_j W_j^T = G with
    G - G^-1 = imbalance: W_j is orthogonal up to a quarter of its imbalance (eq. `eq-saxe-ae-departure`).
    """
    C = as_real_array("Sigma_xx", Sigma_xx, ndim=2, nonempty=True)
    if C.shape[0] != C.shape[1]:
        raise ValueError(f"Sigma_xx must be square (N, N); got {C.shape}")
    layers = as_int("layers", layers, minimum=1)
    eta, scale = as_positive("eta", eta), as_positive("scale", scale)
    steps, record_every = as_int("steps", steps), as_int("record_every", record_every, minimum=1)
    N, gen = C.shape[0], np.random.default_rng(as_seed("seed", seed))
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("Ws", "decoders", "imbalance", "imbalance0", "correlations")}
    losses = []
    for _ in range(layers):
        W0, Wt0 = (scale / math.sqrt(N) * gen.standard_normal((N, N)) for _ in range(2))
        run = train_deep_linear(C, C, [W0, Wt0], eta, steps, record_every=record_every, U=np.eye(N), V=np.eye(N),
                                device=device)
        W, Wt = run.final["Ws"]
        for key, val in zip(out, (W, Wt, W @ W.T - Wt.T @ Wt, W0 @ W0.T - Wt0.T @ Wt0, C), strict=True):
            out[key].append(val)
        losses.append(run["loss"])
        C = W @ C @ W.T
        C = 0.5 * (C + C.T)
    return History.from_records(run.steps, {"loss": np.stack(losses, -1)}, out)


def decoupled_form(Ws: Sequence[ArrayLike], V: ArrayLike, U: ArrayLike | None = None
                   ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Read square layers in the decoupled form W_j = R_{j+1} A_j R_j^T (Ch 2, eq. `eq-saxe-deep-decoupled`), R_1 = V.

    R_{j+1} is the orthogonal polar factor of W_j R_j (W_j R_j = R_{j+1} H_j, H_j symmetric positive semi-definite;
    H_j = A_j for an exactly decoupled layer with A_j >= 0). Returns R = [R_1, ..., R_{D+1}], the amplitudes
    A (D, N) = diag H_j and the departure delta (D,) = ||H_j - diag H_j||_F / ||diag H_j||_F (0 when H_j = 0). With U
    given, the last layer uses R_{D+1} = U (the output basis the task fixes): a zero top layer is decoupled for any U.
    """
    if isinstance(Ws, str | np.ndarray) or not isinstance(Ws, Sequence) or len(Ws) < 1:
        raise TypeError(f"Ws must be a non-empty list of square weight matrices; got {type(Ws).__name__}")
    bases = [as_real_array("V", V, ndim=2, nonempty=True)] + ([] if U is None else [as_real_array("U", U, ndim=2)])
    N = bases[0].shape[0]
    for name, B in zip(("V", "U"), bases, strict=False):
        if B.shape != (N, N) or not np.allclose(B.T @ B, np.eye(N), atol=1e-8):
            raise ValueError(f"{name} must be an orthogonal ({N}, {N}) matrix; got shape {B.shape}")
    Rs, A, delta = [bases[0]], [], []
    for j, W in enumerate(Ws):
        M = as_real_array(f"Ws[{j}]", W, shape=(N, N)) @ Rs[-1]
        u, _, vt = np.linalg.svd(M)
        Rs.append(bases[1] if U is not None and j == len(Ws) - 1 else u @ vt)   # the polar factor of W_j R_j
        H = Rs[-1].T @ M
        A.append(np.diag(H).copy())
        off = np.linalg.norm(H - np.diag(A[-1]))
        delta.append(off / np.linalg.norm(A[-1]) if off > 0 else 0.0)
    return Rs, np.array(A), np.array(delta)


def crossing_step(steps: ArrayLike, loss: ArrayLike, frac: float = 1e-3) -> np.ndarray:
    """First step at which loss <= frac * loss[0], interpolated linearly in ln(loss) between recorded steps.

    steps (K,), loss (K, ...) positive, as recorded by the simulators; returns (...) (NaN where it never gets there).
    Exact for a geometric decay, where ln(loss) is linear in the step.
    """
    k, y = as_real_array("steps", steps, ndim=1, nonempty=True), as_real_array("loss", loss, nonempty=True)
    frac = as_positive("frac", frac)
    if y.ndim < 1 or y.shape[0] != k.size or frac >= 1 or np.any(y <= 0):
        raise ValueError(f"loss must be positive, of shape (K, ...) with K = len(steps) = {k.size}, and frac in (0, 1);"
                         f" got loss {y.shape}, frac={frac!r}")
    y = np.log(y) - np.log(frac * y[0])                        # crosses zero downwards
    first = np.argmax(y <= 0, axis=0)
    found = np.take_along_axis(y <= 0, first[None], 0)[0] & (first > 0)
    i = np.maximum(first, 1)
    y1, y0 = np.take_along_axis(y, i[None], 0)[0], np.take_along_axis(y, (i - 1)[None], 0)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(found, k[i - 1] + (k[i] - k[i - 1]) * y0 / (y0 - y1), np.nan)


# ---------------------------------------------------------------------------------------------------------------
def _chain(Ws: Sequence[ArrayLike | Tensor], Sig: Tensor, dev: torch.device) -> list[Tensor]:
    """The checked layers [W_1, ..., W_D] of a chain whose product has the shape of Sigma (2-D)."""
    if isinstance(Ws, str | np.ndarray | Tensor) or not isinstance(Ws, Sequence):
        raise TypeError(f"Ws must be a list of weight matrices [W_1, ..., W_D]; got {type(Ws).__name__}")
    if len(Ws) < 1:
        raise ValueError("Ws must hold at least one weight matrix")
    Ws = [_tensor(f"Ws[{j}]", W, dev) for j, W in enumerate(Ws)]
    for j in range(1, len(Ws)):
        if Ws[j].shape[-1] != Ws[j - 1].shape[-2] or Ws[j].shape[:-2] != Ws[0].shape[:-2]:
            raise ValueError(f"Ws[{j}] {tuple(Ws[j].shape)} does not chain with Ws[{j - 1}] {tuple(Ws[j - 1].shape)}")
    if (Ws[-1].shape[-2], Ws[0].shape[-1]) != tuple(Sig.shape):
        raise ValueError(f"Sigma {tuple(Sig.shape)} must have shape (rows of Ws[-1], columns of Ws[0])")
    return Ws


def _numel(*Ws: Array) -> int:
    return sum(math.prod(W.shape) for W in Ws)


class _Divergence:
    """Per-step finiteness check: raise naming the step, or remember the first bad step of each run."""

    def __init__(self, mode: str, lead: tuple[int, ...]) -> None:
        if mode not in ("raise", "flag"):
            raise ValueError(f"on_divergence must be 'raise' or 'flag'; got {mode!r}")
        self.mode, self.at = mode, np.full(tuple(lead), -1, dtype=np.int64)

    def check(self, step: int, *Ws: Array) -> None:
        if math.isfinite(sum([float(W.sum()) for W in Ws])):   # one reduction per matrix: cheap on the happy path
            return
        ok = np.logical_and.reduce([_np(_finite_runs(W)) for W in Ws])
        if bool(ok.all()):                                     # only the sum overflowed
            return
        if self.mode == "raise":
            raise DivergenceError(f"the weights are no longer finite at step {step}: GD diverged (try a smaller eta)")
        self.at = np.where((~ok) & (self.at < 0), step, self.at)

    def final(self) -> dict[str, np.ndarray]:
        return {"diverged_at": self.at} if self.mode == "flag" else {}


def _tensor(name: str, x: ArrayLike | Tensor, dev: torch.device) -> Tensor:
    t = as_real_tensor(name, x)                       # real, finite, non-empty; no requires_grad
    if t.ndim < 2:
        raise ValueError(f"{name} must be a matrix (with an optional leading batch axis); got shape {tuple(t.shape)}")
    return t.to(device=dev, dtype=torch.float64)


def _eta(eta: float | ArrayLike | Tensor, W: Tensor, dev: torch.device) -> Tensor:
    """eta as a tensor broadcastable against W ([B,] n, m): shape () + (1, 1) or (B, 1, 1)."""
    if isinstance(eta, int | float | np.integer | np.floating) and not isinstance(eta, bool):
        return torch.tensor(as_positive("eta", eta), dtype=torch.float64, device=dev).reshape(1, 1)
    if isinstance(eta, bool) or eta is None or isinstance(eta, str | bytes | complex):
        raise TypeError(f"eta must be a positive float or one per run, shape (B,); got {eta!r}")
    t = torch.as_tensor(as_real_array("eta", eta))
    if t.ndim != 1 or W.ndim != 3 or t.shape[0] != W.shape[0]:
        raise ValueError(f"eta must be a positive float or of shape (B,) matching the batch of the weights "
                         f"{tuple(W.shape)}; got shape {tuple(t.shape)}")
    if not bool(torch.all(torch.isfinite(t) & (t > 0))):
        raise ValueError(f"eta must be positive and finite; got {t.tolist()}")
    return t.to(device=dev, dtype=torch.float64).reshape(-1, 1, 1)


def _tracks(track: Sequence[str], known: tuple[str, ...] = TRACKS) -> tuple[str, ...]:
    if not isinstance(track, str | Sequence):
        raise TypeError(f"track must be a metric name or a list of them from {known}; got {type(track).__name__}")
    track = (track,) if isinstance(track, str) else tuple(track)
    unknown = [t for t in track if t not in known]
    if unknown:
        raise ValueError(f"track: unknown metric(s) {unknown}; choose from {known}")
    return track


def _basis(Sig: Tensor, U: ArrayLike | None, V: ArrayLike | None, dev: torch.device) -> tuple[Tensor, Tensor]:
    with few_threads_if_small(dev, Sig.numel()):      # a threaded torch op on a small matrix costs milliseconds
        if U is None or V is None:
            Us, _, Vh = torch.linalg.svd(Sig.cpu().to(torch.float64), full_matrices=True)
            U, V = (Us if U is None else U), (Vh.T if V is None else V)
        Ut = as_real_tensor("U", U, device=dev, allow_grad=True).detach()
        Vt = as_real_tensor("V", V, device=dev, allow_grad=True).detach()
        if Ut.ndim != 2 or Vt.ndim != 2 or Ut.shape[0] != Sig.shape[0] or Vt.shape[0] != Sig.shape[1]:
            raise ValueError(f"U must have {Sig.shape[0]} rows and V {Sig.shape[1]} rows; got {tuple(Ut.shape)}, "
                             f"{tuple(Vt.shape)}")
        for name, B in (("U", Ut), ("V", Vt)):
            eye = torch.eye(B.shape[1], dtype=B.dtype, device=B.device)
            if B.shape[1] > B.shape[0] or not torch.allclose(B.T @ B, eye, atol=1e-8):
                raise ValueError(f"{name} must have orthonormal columns (singular vectors of Sigma); got shape "
                                 f"{tuple(B.shape)} with {name}^T {name} != I")
        return Ut, Vt


def _diag(M: Array) -> Array:  # the diagonal of M ([B,] n, m): the mode strengths when M = U^T P V
    return M.diagonal(0, -2, -1)[..., :min(M.shape[-2:])]


def _offdiag_max(M: Array) -> Array:
    """Largest |off-diagonal entry| of M ([B,] n, m), per run."""
    if isinstance(M, Tensor):
        return M.masked_fill(torch.eye(*M.shape[-2:], dtype=torch.bool, device=M.device), 0.0).abs().amax((-2, -1))
    return np.abs(np.where(np.eye(*M.shape[-2:], dtype=bool), 0.0, M)).max((-2, -1))


def _finite_runs(W: Array) -> Array:
    """Per run ([B] leading axes): whether every entry of the matrix W is finite."""
    fin = torch.isfinite(W) if isinstance(W, Tensor) else np.isfinite(W)
    return fin.reshape(*W.shape[:-2], -1).all(-1)


def _metrics(track: tuple[str, ...], G: Array, P: Array, W1: Array, W2: Array, UtT: Array, V: Array, C0: Array,
             bound: Array) -> dict[str, Array]:
    out: dict[str, Array] = {}
    if "modes" in track or "offdiag" in track:
        M = UtT @ P @ V
        if "modes" in track:
            out["modes"] = _diag(M)
        if "offdiag" in track:
            out["offdiag"] = _offdiag_max(M)
    if "loss" in track:
        out["loss"] = 0.5 * (G**2).sum((-2, -1))
    if "balance_drift" in track:
        D = W1 @ W1.swapaxes(-1, -2) - W2.swapaxes(-1, -2) @ W2 - C0
        where, svdvals = (torch.where, torch.linalg.svdvals) if isinstance(D, Tensor) else (np.where, np.linalg.svdvals)
        fin = _finite_runs(D)                                  # a flagged, diverged run records NaN; ||.||_2 = s_max
        out["balance_drift"] = where(fin, svdvals(where(fin[..., None, None], D, 0.0))[..., 0], math.nan)
    if "drift_bound" in track:
        out["drift_bound"] = bound
    return out


def _backend(dev: torch.device, *xs: Tensor) -> list[Array]:
    """The checked tensors as the loops use them: numpy arrays (sharing memory) on the CPU, tensors elsewhere."""
    return [x.numpy() for x in xs] if dev.type == "cpu" else list(xs)


def _history(steps_rec: list[int], rec: dict[str, list[Array]], final: dict[str, object]) -> History:
    """Stack the per-step records of a simulator (numpy arrays or tensors of one shape) into a History."""
    return History(np.asarray(steps_rec), {name: np.stack(vals) if not isinstance(vals[0], Tensor) else
                                           torch.stack(vals).cpu().numpy() for name, vals in rec.items()}, final)


def _np(x: Array) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x)
