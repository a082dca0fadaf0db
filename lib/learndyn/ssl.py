"""Self-supervised learning dynamics (Ch 3-4): closed forms and the simulators they are checked against.

Chapter 3 (`ch-ssl1`): contrastive (SimCLR's NT-Xent) and non-contrastive (BYOL/SimSiam) learning.
Linear model of Tian, Chen & Ganguli (2021), eq. `eq-ssl1-loss`:

    L(Phi, P) = 1/2 E || P Phi x - SG(Phi x') ||^2,   x = x0 + eps,  x' = x0 + eps',

encoder Phi (d2, d1), predictor P (d2, d2) (the paper's W_p; the book writes P), E[x0 x0^T] = I, eps, eps' iid
with covariance sigma2 I, so E[x x^T] = c I and E[x' x^T] = I with c = 1 + sigma2 (eq. `eq-ssl1-moments`).
Gradient flow with weight decay wd (eq. `eq-ssl1-flow`), F = Phi Phi^T:

    dPhi/dt = P^T (I - c P) Phi - wd Phi,   dP/dt = (I - c P) F - wd P.

Time is gradient-flow time; GD with step h is the Euler method of the same flow at t = h k.
Theory: numpy, float64, broadcasting. Simulators: torch, float64, batched on a leading axis B, on `device`.
References: Chen et al. (2020); Tian, Chen & Ganguli (2021). Chapter 4 (Barlow Twins) adds its own section below.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import torch
from scipy.integrate import solve_ivp

from .core import History, as_int, as_positive, check_finite, few_threads_if_small, get_device, make_generator, rk4_step

__all__ = [
    # Chapter 3
    "two_view_gaussian",
    "noncontrastive_pop_grads",
    "noncontrastive_mc_grads",
    "simulate_noncontrastive",
    "tian_mode_rhs",
    "tian_fixed_points",
    "integrate_modes",
    "commutator_ratio",
    "info_nce",
    "check_info_nce",
]

Array = np.ndarray | torch.Tensor


# =================================================================================================================
# Chapter 3 — contrastive and non-contrastive dynamics (Chen et al. 2020; Tian, Chen & Ganguli 2021)
# =================================================================================================================

# ---- theory (numpy, broadcasting) ---------------------------------------------------------------------------------
def tian_mode_rhs(p: np.ndarray | float, s: np.ndarray | float, sigma2: float, wd: float = 0.0,
                  alpha_p: float = 1.0, tau: np.ndarray | float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Right-hand side of the decoupled mode ODE, eq. `eq-ssl1-modes` (Ch 3, Theorem `thm-ssl1-modes`).

    With P = Q diag(p) Q^T and F = Phi Phi^T = Q diag(s) Q^T (aligned, symmetric predictor), c = 1 + sigma2:

        dp/dt = alpha_p (tau - c p s) - wd p,      ds/dt = 2 p (tau - c p s) - 2 wd s,

    where tau is the eigenvalue of Phi_a Phi^T for an EMA target Phi_a; without EMA tau = s (the default), which gives
    dp/dt = s (1 - c p) - wd p and ds/dt = 2 p s (1 - c p) - 2 wd s. alpha_p is the predictor's relative learning
    rate. Arguments broadcast; returns (dp/dt, ds/dt).
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    alpha_p = as_positive("alpha_p", alpha_p)
    p, s = np.asarray(p, dtype=float), np.asarray(s, dtype=float)
    tau = s if tau is None else np.asarray(tau, dtype=float)
    c = 1.0 + sigma2
    drive = tau - c * p * s
    return alpha_p * drive - wd * p, 2.0 * p * drive - 2.0 * wd * s


def tian_fixed_points(sigma2: float, wd: float) -> tuple[float, float] | None:
    """Non-collapsed fixed points (p*_-, p*_+) of the mode ODE, eq. `eq-ssl1-fixed-points` (Ch 3).

    On s = p^2 they solve c p^2 - p + wd = 0:  p*_pm = (1 pm sqrt(1 - 4 c wd)) / (2 c), c = 1 + sigma2, with s* = p*^2.
    They exist iff wd <= 1 / (4 c) (the weight-decay threshold); returns None above it. p*_+ is stable, p*_- a
    saddle; (0, 0) is the collapsed fixed point (stable for wd > 0). For wd = 0: (0, 1/c).
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    c = 1.0 + sigma2
    disc = 1.0 - 4.0 * c * wd
    if disc < 0:
        return None
    root = math.sqrt(disc)
    return (1.0 - root) / (2.0 * c), (1.0 + root) / (2.0 * c)


def integrate_modes(p0: np.ndarray | float, s0: np.ndarray | float, sigma2: float, wd: float,
                    t_eval: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve the mode ODE `tian_mode_rhs` (no EMA) from (p0, s0) with scipy's DOP853 (rtol 1e-12, atol 1e-14).

    p0 and s0 broadcast (one ODE per entry); t_eval is increasing and starts at t >= 0 with the initial values at
    t = 0. Returns (p, s), each of shape (len(t_eval), *broadcast shape). The reference for the matrix simulator
    started on the aligned manifold (Ch 3, check V3.5).
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    t_eval = np.asarray(t_eval, dtype=float).ravel()
    if t_eval.size == 0 or np.any(np.diff(t_eval) < 0) or t_eval[0] < 0 or not np.all(np.isfinite(t_eval)):
        raise ValueError("t_eval must be a non-empty, finite, increasing array of times >= 0")
    p0, s0 = np.broadcast_arrays(np.asarray(p0, dtype=float), np.asarray(s0, dtype=float))
    if np.any(s0 < 0) or not (np.all(np.isfinite(p0)) and np.all(np.isfinite(s0))):
        raise ValueError("s0 must be >= 0 (an eigenvalue of Phi Phi^T) and p0, s0 finite")
    shape, n = p0.shape, p0.size

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        dp, ds = tian_mode_rhs(y[:n], y[n:], sigma2, wd)
        return np.concatenate([dp, ds])

    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), np.concatenate([p0.ravel(), s0.ravel()]), method="DOP853",
                    t_eval=t_eval, rtol=1e-12, atol=1e-14)
    if not sol.success:
        raise RuntimeError(f"integrate_modes: solve_ivp failed: {sol.message}")
    y = sol.y.T
    return y[:, :n].reshape(-1, *shape), y[:, n:].reshape(-1, *shape)


def commutator_ratio(A: Array, B: Array) -> np.ndarray:
    """||A B - B A||_F / (||A||_F ||B||_F), batched over leading axes; 0 when A or B is 0 (Ch 3, eigenspace alignment).

    Scale-free measure of how far A and B are from sharing eigenvectors (0 iff they commute).
    """
    if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor)):
        A, B = torch.as_tensor(_numpy(A)), torch.as_tensor(_numpy(B))
    if A.shape[-2:] != B.shape[-2:] or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A and B must be square matrices of the same size; got {tuple(A.shape)} and {tuple(B.shape)}")
    num = torch.linalg.matrix_norm(A @ B - B @ A)
    den = torch.linalg.matrix_norm(A) * torch.linalg.matrix_norm(B)
    return (num / torch.where(den > 0, den, torch.ones_like(den))).cpu().numpy()


# ---- gradients ---------------------------------------------------------------------------------------------------
def noncontrastive_pop_grads(Phi: Array, P: Array, sigma2: float, stopgrad: bool = True,
                             target: Array | None = None) -> tuple[Array, Array]:
    """Population gradients of L = 1/2 E||P Phi x - SG(Phi_a x')||^2, eq. `eq-ssl1-grads` (Theorem `thm-ssl1-grads`).

    With c = 1 + sigma2 and the target Phi_a = `target` (default: Phi itself, i.e. no EMA):

        grad_Phi = c P^T P Phi - P^T Phi_a                          (StopGrad: the target is a constant)
        grad_Phi = c P^T P Phi - P^T Phi - P Phi + c Phi             (no StopGrad, target = Phi)
        grad_P   = c P Phi Phi^T - Phi_a Phi^T                       (both cases)

    Works on numpy arrays and torch tensors alike (same type out), batched over leading axes.
    """
    sigma2 = as_positive("sigma2", sigma2)
    _check_pair(Phi, P)
    if target is not None and tuple(target.shape[-2:]) != tuple(Phi.shape[-2:]):
        raise ValueError(f"target must have the shape of Phi {tuple(Phi.shape)}; got {tuple(target.shape)}")
    if target is not None and not stopgrad:
        raise ValueError("stopgrad=False needs target=None: without StopGrad the target is Phi itself")
    c = 1.0 + sigma2
    tgt = Phi if target is None else target
    pf = P @ Phi
    resid = c * pf - tgt  # E[(P Phi x - Phi_a x') x^T] = c P Phi - Phi_a
    g_phi = P.swapaxes(-1, -2) @ resid
    if not stopgrad:  # the target's own gradient: -E[(P Phi x - Phi x') x'^T] = -P Phi + c Phi
        g_phi = g_phi - pf + c * Phi
    return g_phi, resid @ Phi.swapaxes(-1, -2)


def noncontrastive_mc_grads(Phi: Array, P: Array, sigma2: float, n: int, stopgrad: bool = True,
                            seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte Carlo gradients of 1/n sum_i 1/2 ||P Phi x_i - SG(Phi x'_i)||^2 by autograd, StopGrad as `.detach()`.

    Pairs from `two_view_gaussian(n, d1, sqrt(sigma2), seed)`; float64 on the CPU. Unbatched: Phi (d2, d1),
    P (d2, d2). An unbiased estimate of `noncontrastive_pop_grads` with O(1/sqrt(n)) error (Ch 3, check V3.1).
    """
    sigma2 = as_positive("sigma2", sigma2)
    n = as_int("n", n, minimum=1)
    Phi, P = (torch.as_tensor(_numpy(a), dtype=torch.float64) for a in (Phi, P))
    _check_pair(Phi, P)
    if Phi.ndim != 2:
        raise ValueError(f"noncontrastive_mc_grads takes one unbatched pair; got Phi of shape {tuple(Phi.shape)}")
    Phi, P = Phi.clone().requires_grad_(True), P.clone().requires_grad_(True)
    x, xp = two_view_gaussian(n, Phi.shape[1], math.sqrt(sigma2), seed=seed, device="cpu")
    target = xp @ Phi.T
    if stopgrad:
        target = target.detach()
    loss = 0.5 * ((x @ Phi.T @ P.T - target) ** 2).sum(dim=1).mean()
    g_phi, g_p = torch.autograd.grad(loss, (Phi, P))
    return g_phi, g_p


# ---- data and simulators (torch) ---------------------------------------------------------------------------------
def two_view_gaussian(n: int, d: int, sigma: float, seed: int = 0,
                      device: str | torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Two views x = x0 + eps, x' = x0 + eps' of n points, eq. `eq-ssl1-data` (Ch 3); each of shape (n, d).

    x0 ~ N(0, I_d); eps, eps' ~ N(0, sigma^2 I_d) iid and independent of x0 (`sigma` is the noise standard
    deviation, so sigma2 = sigma**2). Then E[x x^T] = (1 + sigma^2) I and E[x' x^T] = I. float64, seeded on the CPU.
    """
    n, d = as_int("n", n, minimum=1), as_int("d", d, minimum=1)
    sigma = as_positive("sigma", sigma)
    gen = make_generator(seed)
    x0, e1, e2 = (torch.randn(n, d, generator=gen, dtype=torch.float64) for _ in range(3))
    dev = get_device(device)
    return (x0 + sigma * e1).to(dev), (x0 + sigma * e2).to(dev)


def simulate_noncontrastive(Phi0: Array, P0: Array, sigma2: float, wd: float | Array = 0.0, h: float = 1e-2,
                            T: float = 200.0, symmetric_predictor: bool = True, stopgrad: bool = True,
                            use_predictor: bool = True, ema_beta: float | None = None,
                            method: Literal["rk4", "euler"] = "rk4", record_every: int = 100,
                            device: str | torch.device | None = None) -> History:
    """Integrate the population gradient flow of the linear non-contrastive model, eq. `eq-ssl1-flow` (Ch 3).

        dPhi/dt = -grad_Phi L - wd Phi,     dP/dt = -grad_P L - wd P      (gradients: `noncontrastive_pop_grads`)

    Phi0 (B, d2, d1) and P0 (B, d2, d2) (a 2-D pair is a batch of one); wd a float or one value per run, shape (B,).
    symmetric_predictor: use the symmetric part of dP/dt (P0 must then be symmetric). use_predictor=False fixes
    P = I. ema_beta: EMA target dPhi_a/dt = ema_beta (Phi - Phi_a), Phi_a(0) = Phi0, used inside StopGrad.
    method "rk4" (classical Runge-Kutta, `core.rk4_step`) or "euler" (= gradient descent with learning rate h).
    Runs round(T / h) steps in float64 on `device` (default: CUDA when present).

    Returns a History with `steps` (recorded step indices, every `record_every` and the last) and metrics:
    "t" (K,), "loss" (K, B), "phi_norm" ||Phi||_F (K, B), "commutator" (K, B) = `commutator_ratio(P, F)`,
    "asym" ||P - P^T||_F (K, B), "eigP" eigenvalues of (P + P^T)/2 and "eigF" of F (K, B, d2), ascending,
    "modeP" (K, B, d2) = q_j^T P q_j along F's eigenvectors q_j (pairs with "eigF"), "balance" P^T P - F
    (K, B, d2, d2). final: "Phi", "P" (numpy). Raises DivergenceError naming the step if the run leaves the finite
    numbers (checked at every recorded step, so record_every=1 names the exact step).
    """
    sigma2 = as_positive("sigma2", sigma2)
    h, T = as_positive("h", h), as_positive("T", T)
    record_every = as_int("record_every", record_every, minimum=1)
    if method not in ("rk4", "euler"):
        raise ValueError(f"method must be 'rk4' or 'euler'; got {method!r}")
    if ema_beta is not None:
        ema_beta = as_positive("ema_beta", ema_beta)
        if not stopgrad:
            raise ValueError("ema_beta needs stopgrad=True: the EMA target is never differentiated")
    dev = get_device(device)
    Phi, P = (torch.as_tensor(_numpy(a), dtype=torch.float64, device=dev) for a in (Phi0, P0))
    _check_pair(Phi, P)
    if Phi.ndim == 2:
        Phi, P = Phi[None], P[None]
    if Phi.ndim != 3 or P.ndim != 3 or Phi.shape[0] != P.shape[0]:
        raise ValueError(f"Phi0 must be (B, d2, d1) and P0 (B, d2, d2) with the same B; got {tuple(Phi.shape)}, "
                         f"{tuple(P.shape)}")
    if not use_predictor:
        P = torch.eye(P.shape[-1], dtype=torch.float64, device=dev).expand_as(P).clone()
    elif symmetric_predictor and not torch.allclose(P, P.mT, rtol=0, atol=1e-12 * (1 + float(P.abs().max()))):
        raise ValueError("P0 must be symmetric when symmetric_predictor=True (or pass symmetric_predictor=False)")
    lam = _wd_tensor(wd, Phi.shape[0], dev)
    n_steps = max(1, round(T / h))

    def rhs(state: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        phi, p = state[0], state[1]
        target = state[2] if ema_beta is not None else None
        g_phi, g_p = noncontrastive_pop_grads(phi, p, sigma2, stopgrad=stopgrad, target=target)
        d_phi = -g_phi - lam * phi
        d_p = -g_p - lam * p if use_predictor else torch.zeros_like(p)
        if symmetric_predictor:
            d_p = 0.5 * (d_p + d_p.mT)
        return (d_phi, d_p) if ema_beta is None else (d_phi, d_p, ema_beta * (phi - state[2]))

    state: tuple[torch.Tensor, ...] = (Phi, P) if ema_beta is None else (Phi, P, Phi.clone())
    steps, records = [], {k: [] for k in ("t", "loss", "phi_norm", "commutator", "asym", "eigP", "eigF", "modeP",
                                          "balance")}
    with few_threads_if_small(Phi.device, Phi.numel() + P.numel()):
        for k in range(n_steps + 1):
            if k % record_every == 0 or k == n_steps:
                steps.append(k)
                for name, value in _metrics(state, sigma2, k * h, k).items():
                    records[name].append(value)
            if k < n_steps:
                state = rk4_step(rhs, state, h) if method == "rk4" else tuple(
                    x + h * dx for x, dx in zip(state, rhs(state), strict=True))
    final = {"Phi": state[0].cpu().numpy(), "P": state[1].cpu().numpy()}
    return History.from_records(steps, records, final)


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """SimCLR's NT-Xent loss, eq. `eq-ssl1-ntxent` (Ch 3), averaged over all 2N anchors.

    z1, z2 (N, D): the two views' embeddings, (z1[i], z2[i]) a positive pair. With the 2N views z_k and cosine
    similarity sim, ell_{i,j} = -log( exp(sim(z_i, z_j)/T) / sum_{k != i} exp(sim(z_i, z_k)/T) ). At collapse (all
    z equal) every term is log(2N - 1). Differentiable; stable (log-sum-exp).
    """
    temperature = as_positive("temperature", temperature)
    z1, z2 = torch.as_tensor(z1), torch.as_tensor(z2)
    if z1.ndim != 2 or z1.shape != z2.shape or z1.shape[0] < 1:
        raise ValueError(f"z1 and z2 must both be (N, D) with N >= 1; got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    z = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)  # (2N, D)
    logits = (z @ z.T) / temperature
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    positive = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z.device)
    return torch.nn.functional.cross_entropy(logits, positive)


def check_info_nce(fn: Callable[[np.ndarray, np.ndarray, float], float], seed: int = 0) -> None:
    """Checker for Exercise `ex-ssl1-ntxent` (Ch 3): `fn(z1, z2, temperature)` on numpy (N, D) arrays must return
    the NT-Xent loss (`info_nce`) to 1e-8 on random embeddings, and log(2N - 1) at collapse.
    Raises AssertionError naming the failing case."""
    rng = np.random.default_rng(seed)
    for n, d, temp in ((1, 3, 0.5), (4, 5, 0.2), (7, 2, 2.0)):
        z1, z2 = rng.normal(size=(n, d)), rng.normal(size=(n, d))
        want = info_nce(torch.as_tensor(z1), torch.as_tensor(z2), temp).item()
        got = float(fn(z1, z2, temp))
        if not abs(got - want) <= 1e-8 * max(1.0, abs(want)):
            raise AssertionError(f"NT-Xent of random embeddings (N={n}, D={d}, T={temp}): got {got}, expected {want}")
        z = np.outer(0.5 + rng.random(2 * n), rng.normal(size=d))  # collapse: one direction, any lengths
        got = float(fn(z[:n], z[n:], temp))
        if not abs(got - math.log(2 * n - 1)) <= 1e-8:
            raise AssertionError(f"NT-Xent at collapse (N={n}, T={temp}): got {got}, expected log(2N-1) = "
                                 f"{math.log(2 * n - 1)}")
    print("check_info_nce: all cases passed")


# ---- helpers -----------------------------------------------------------------------------------------------------
def _sigma2_wd(sigma2: float, wd: float) -> tuple[float, float]:
    sigma2 = as_positive("sigma2", sigma2)
    if isinstance(wd, bool) or not isinstance(wd, int | float | np.integer | np.floating):
        raise TypeError(f"wd (weight decay) must be a real number; got {type(wd).__name__}")
    if not np.isfinite(wd) or wd < 0:
        raise ValueError(f"wd (weight decay) must be finite and >= 0; got {wd!r}")
    return sigma2, float(wd)


def _wd_tensor(wd: float | Array, batch: int, device: torch.device) -> torch.Tensor:
    w = np.asarray(_numpy(wd), dtype=float)
    if w.ndim == 0:
        _sigma2_wd(1.0, float(w))
        w = np.full(batch, float(w))
    if w.shape != (batch,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"wd (weight decay) must be a float >= 0 or one value >= 0 per run, shape ({batch},); "
                         f"got {w.tolist()}")
    return torch.as_tensor(w, dtype=torch.float64, device=device)[:, None, None]


def _check_pair(Phi: Array, P: Array) -> None:
    if Phi.ndim < 2 or P.ndim < 2:
        raise ValueError(f"Phi and P must be matrices; got shapes {tuple(Phi.shape)} and {tuple(P.shape)}")
    if P.shape[-1] != P.shape[-2]:
        raise ValueError(f"P (predictor) must be square (d2, d2); got {tuple(P.shape)}")
    if P.shape[-1] != Phi.shape[-2]:
        raise ValueError(f"P {tuple(P.shape)} and Phi {tuple(Phi.shape)} do not match: P must be (d2, d2) for Phi "
                         "(d2, d1)")


def _metrics(state: tuple[torch.Tensor, ...], sigma2: float, t: float, step: int) -> dict[str, np.ndarray | float]:
    phi, p = state[0], state[1]
    tgt = state[2] if len(state) > 2 else phi
    c = 1.0 + sigma2
    F = phi @ phi.mT
    for name, x in (("Phi", phi), ("P", p), ("Phi_a", tgt), ("F = Phi Phi^T", F)):
        check_finite(name, x, step=step)
    pf = p @ phi
    # 1/2 E||P Phi x - Phi_a x'||^2 = 1/2 [c ||P Phi||^2 - 2 tr(P Phi Phi_a^T) + c ||Phi_a||^2]
    loss = 0.5 * (c * (pf**2).sum((-2, -1)) - 2 * (pf * tgt).sum((-2, -1)) + c * (tgt**2).sum((-2, -1)))
    eig_f, q = torch.linalg.eigh(F)
    psym = 0.5 * (p + p.mT)
    return {
        "t": t, "loss": loss, "phi_norm": torch.linalg.matrix_norm(phi),
        "commutator": commutator_ratio(p, F), "asym": torch.linalg.matrix_norm(p - p.mT),
        "eigP": torch.linalg.eigvalsh(psym), "eigF": eig_f,
        "modeP": (q.mT @ psym @ q).diagonal(dim1=-2, dim2=-1), "balance": p.mT @ p - F,
    }


def _numpy(x: Array | float) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


# =================================================================================================================
# Chapter 4 — Barlow Twins and stepwise learning (Simon et al. 2023): implemented in `barlow.py`, re-exported here
# =================================================================================================================
from .barlow import *  # noqa: E402, F403
from .barlow import __all__ as _barlow_all  # noqa: E402

__all__ += _barlow_all
