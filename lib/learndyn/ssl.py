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
References: Chen et al. (2020); Tian, Chen & Ganguli (2021); HaoChen et al. (2021).
Chapter 4 (Barlow Twins) lives in `barlow.py`; its functions are re-exported at the end of this module, so that
`ld.ssl.barlow_*` and `ld.barlow.barlow_*` are the same objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import torch
from scipy.integrate import solve_ivp

from .core import (
    History,
    as_bool,
    as_callable,
    as_choice,
    as_int,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_real_like,
    as_real_tensor,
    as_seed,
    check_alloc,
    check_finite,
    few_threads_if_small,
    get_device,
    make_generator,
    no_overflow,
    rk4_step_unchecked,
    steps_for,
)

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
    "tian_final_state_lambda0",
    "balanced_time",
    "optimal_predictor",
    "simulate_directpred",
    "alignment_rate",
    "integrate_modes_general",
    "info_nce_grad",
    "info_nce_collapse_curvature",
    "spectral_contrastive_loss",
    "spectral_contrastive_pop_grad",
    "spectral_contrastive_modes",
    "simulate_spectral_contrastive",
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
    p, s = as_real_array("p", p, nonempty=True), as_real_array("s", s, nonempty=True)
    tau = s if tau is None else as_real_array("tau", tau, nonempty=True)
    _broadcast("p, s and tau", p, s, tau)
    return _mode_rhs(p, s, 1.0 + sigma2, wd, alpha_p, tau)


def _mode_rhs(p: np.ndarray, s: np.ndarray, c: float, wd: float, alpha_p: float,
              tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arithmetic of `tian_mode_rhs` (c = 1 + sigma2) on checked arrays: the ODE solvers' right-hand side."""
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
    started on the aligned manifold (Ch 3, the check "aligned matrix flow = mode ODE").
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    t_eval = _times("t_eval", t_eval)
    p0, s0 = as_real_array("p0", p0, nonempty=True), as_real_array("s0", s0, nonempty=True)
    p0, s0 = _broadcast("p0 and s0", p0, s0)
    if np.any(s0 < 0):
        raise ValueError("s0 must be >= 0 (an eigenvalue of Phi Phi^T)")
    shape, n = p0.shape, p0.size
    if t_eval[-1] == 0:                                  # only t = 0 asked for: the start (solve_ivp needs a span)
        return (np.broadcast_to(p0, (t_eval.size, *shape)).copy(), np.broadcast_to(s0, (t_eval.size, *shape)).copy())

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        dp, ds = _mode_rhs(y[:n], y[n:], c, wd, 1.0, y[n:])
        return np.concatenate([dp, ds])

    c = 1.0 + sigma2
    y = _solve_modes("integrate_modes", rhs, np.concatenate([p0.ravel(), s0.ravel()]), t_eval, 1e-12, 1e-14,
                     n_vars=2, scale=float(np.max(np.abs(c * p0))))
    return y[:, :n].reshape(-1, *shape), y[:, n:].reshape(-1, *shape)


def commutator_ratio(A: Array, B: Array) -> np.ndarray:
    """||A B - B A||_F / (||A||_F ||B||_F), batched over leading axes; 0 when A or B is 0 (Ch 3, eigenspace alignment).

    Scale-free measure of how far A and B are from sharing eigenvectors (0 iff they commute).
    """
    A, B = (x.detach() if isinstance(x, torch.Tensor) else x for x in _same_kind("A", A, "B", B))
    if not (isinstance(A, torch.Tensor) and isinstance(B, torch.Tensor)):
        A, B = torch.as_tensor(_numpy(A)), torch.as_tensor(_numpy(B))
    if A.ndim < 2 or B.ndim < 2:
        raise ValueError(f"A and B must be square matrices; got shapes {tuple(A.shape)} and {tuple(B.shape)}")
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
    sigma2 = as_nonnegative("sigma2", sigma2)
    stopgrad = as_bool("stopgrad", stopgrad)
    Phi, P = _same_kind("Phi", Phi, "P", P)
    if target is not None:
        target, Phi = _same_kind("target", target, "Phi", Phi)
        P = _same_kind("P", P, "Phi", Phi)[0]
    _check_pair(Phi, P)
    if target is not None and (target.ndim < 2 or tuple(target.shape[-2:]) != tuple(Phi.shape[-2:])):
        raise ValueError(f"target must have the shape of Phi {tuple(Phi.shape)}; got {tuple(target.shape)}")
    if target is not None and not stopgrad:
        raise ValueError("stopgrad=False needs target=None: without StopGrad the target is Phi itself")
    return _pop_grads(Phi, P, 1.0 + sigma2, stopgrad, target)


def _pop_grads(Phi: Array, P: Array, c: float, stopgrad: bool, target: Array | None) -> tuple[Array, Array]:
    """The arithmetic of `noncontrastive_pop_grads` (c = 1 + sigma2) on checked arguments: the simulators' loop."""
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
    P (d2, d2). An unbiased estimate of `noncontrastive_pop_grads` with O(1/sqrt(n))
    error (Ch 3, the Monte Carlo checks of eq. `eq-ssl1-grads`).
    """
    sigma2 = as_nonnegative("sigma2", sigma2)
    n = as_int("n", n, minimum=1)
    stopgrad, seed = as_bool("stopgrad", stopgrad), as_seed("seed", seed)
    Phi, P = (torch.as_tensor(as_real_array(name, a, nonempty=True)) for name, a in (("Phi", Phi), ("P", P)))
    if Phi.ndim >= 2:
        check_alloc(f"noncontrastive_mc_grads with n = {n}", 3.0 * n * Phi.shape[-1])
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
    return no_overflow("Phi and P", (g_phi, g_p))


# ---- data and simulators (torch) ---------------------------------------------------------------------------------
def two_view_gaussian(n: int, d: int, sigma: float, seed: int = 0,
                      device: str | torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Two views x = x0 + eps, x' = x0 + eps' of n points, eq. `eq-ssl1-data` (Ch 3); each of shape (n, d).

    x0 ~ N(0, I_d); eps, eps' ~ N(0, sigma^2 I_d) iid and independent of x0 (`sigma` is the noise standard
    deviation, so sigma2 = sigma**2). Then E[x x^T] = (1 + sigma^2) I and E[x' x^T] = I. float64, seeded on the CPU.
    """
    n, d = as_int("n", n, minimum=1), as_int("d", d, minimum=1)
    sigma = as_nonnegative("sigma", sigma)
    check_alloc(f"two_view_gaussian(n={n}, d={d})", 5.0 * n * d)
    dev = get_device(device)
    gen = make_generator(seed)
    x0, e1, e2 = (torch.randn(n, d, generator=gen, dtype=torch.float64) for _ in range(3))
    return (x0 + sigma * e1).to(dev), (x0 + sigma * e2).to(dev)


def simulate_noncontrastive(Phi0: Array, P0: Array, sigma2: float, wd: float | Array = 0.0, h: float = 1e-2,
                            t_max: float = 200.0, symmetric_predictor: bool = True, stopgrad: bool = True,
                            use_predictor: bool = True, ema_beta: float | None = None,
                            method: Literal["rk4", "euler"] = "rk4", record_every: int = 100,
                            device: str | torch.device | None = None, alpha_p: float | Array = 1.0) -> History:
    """Integrate the population gradient flow of the linear non-contrastive model, eq. `eq-ssl1-flow` (Ch 3).

        dPhi/dt = -grad_Phi L - wd Phi,     dP/dt = -grad_P L - wd P      (gradients: `noncontrastive_pop_grads`)

    Phi0 (B, d2, d1) and P0 (B, d2, d2) (a 2-D pair is a batch of one); wd a float or one value per run, shape (B,).
    symmetric_predictor: use the symmetric part of dP/dt (P0 must then be symmetric). use_predictor=False fixes
    P = I. ema_beta: EMA target dPhi_a/dt = ema_beta (Phi - Phi_a), Phi_a(0) = Phi0, used inside StopGrad.
    alpha_p: the predictor's relative learning rate, dP/dt = -alpha_p grad_P L - wd P (eq. `eq-ssl1-modes-ema`), a
    float > 0 or one value > 0 per run.
    method "rk4" (classical Runge-Kutta, `core.rk4_step`) or "euler" (= gradient descent with learning rate h).
    Runs round(t_max / h) steps in float64 on `device` (default: CUDA when present).

    Returns a History with `steps` (recorded step indices, every `record_every` and the last) and metrics:
    "t" (K,), "loss" (K, B), "phi_norm" ||Phi||_F (K, B), "commutator" (K, B) = `commutator_ratio(P, F)`,
    "asym" ||P - P^T||_F (K, B), "eigP" eigenvalues of (P + P^T)/2 and "eigF" of F (K, B, d2), ascending,
    "modeP" (K, B, d2) = q_j^T P q_j along F's eigenvectors q_j (pairs with "eigF"), "balance" B = F - P^T P
    (K, B, d2, d2). final: "Phi", "P" (numpy). Raises DivergenceError naming the step if the run leaves the finite
    numbers (checked at every recorded step, so record_every=1 names the exact step).
    """
    sigma2 = as_nonnegative("sigma2", sigma2)
    n_steps = steps_for(t_max, h, "t_max")
    record_every = as_int("record_every", record_every, minimum=1)
    symmetric_predictor, stopgrad = as_bool("symmetric_predictor", symmetric_predictor), as_bool("stopgrad", stopgrad)
    use_predictor = as_bool("use_predictor", use_predictor)
    method = as_choice("method", method, ("rk4", "euler"))
    if ema_beta is not None:
        ema_beta = as_positive("ema_beta", ema_beta)
        if not stopgrad:
            raise ValueError("ema_beta needs stopgrad=True: the EMA target is never differentiated")
    dev = get_device(device)
    Phi, P = (as_real_tensor(name, a, device=dev) for name, a in (("Phi0", Phi0), ("P0", P0)))
    _check_pair(Phi, P, "Phi0", "P0")
    if Phi.ndim == 2:
        Phi, P = Phi[None], P[None]
    if Phi.ndim != 3 or P.ndim != 3 or Phi.shape[0] != P.shape[0]:
        raise ValueError(f"Phi0 must be (B, d2, d1) and P0 (B, d2, d2) with the same B; got {tuple(Phi.shape)}, "
                         f"{tuple(P.shape)}")
    check_alloc("simulate_noncontrastive's records", (n_steps // record_every + 2) * (P.numel() + 8 * Phi.shape[0]))
    if not use_predictor:
        P = torch.eye(P.shape[-1], dtype=torch.float64, device=dev).expand_as(P).clone()
    elif symmetric_predictor and not torch.allclose(P, P.mT, rtol=0, atol=1e-12 * (1 + float(P.abs().max()))):
        raise ValueError("P0 must be symmetric when symmetric_predictor=True (or pass symmetric_predictor=False)")
    lam = _wd_tensor(wd, Phi.shape[0], dev)
    alpha_p = (as_positive("alpha_p", alpha_p) if isinstance(alpha_p, int | float | np.integer | np.floating)
               else as_real_array("alpha_p", alpha_p, nonempty=True))
    if not (np.all(np.isfinite(alpha_p)) and np.all(alpha_p > 0)):
        raise ValueError(f"alpha_p (predictor learning rate) must be > 0, a float or one per run; got {alpha_p}")
    alpha_p = _wd_tensor(alpha_p, Phi.shape[0], dev, "alpha_p (predictor learning rate)")

    def rhs(state: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        phi, p = state[0], state[1]
        target = state[2] if ema_beta is not None else None
        g_phi, g_p = _pop_grads(phi, p, 1.0 + sigma2, stopgrad, target)
        d_phi = -g_phi - lam * phi
        d_p = -alpha_p * g_p - lam * p if use_predictor else torch.zeros_like(p)
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
                state = rk4_step_unchecked(rhs, state, h) if method == "rk4" else tuple(
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
    z1, z2 = _tensors("z1", z1, "z2", z2)
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
    fn, seed = as_callable("fn", fn), as_seed("seed", seed)
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


# ---- closed forms added for the dynamics of Ch 3 (final states, DirectPred, alignment, contrastive) -----------
def tian_final_state_lambda0(p0: np.ndarray | float, s0: np.ndarray | float,
                             sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """Where an aligned mode ends without weight decay, eq. `eq-ssl1-final-lambda0` (Ch 3, Theorem `thm-ssl1-modes`).

    At wd = 0 the imbalance D = s - p^2 is conserved, so a mode moves on the parabola s = p^2 + D until it meets the
    fixed line p = 1/c (it survives, with s = 1/c^2 + D) or the fixed line s = 0 (it collapses, at p = sqrt(-D) when it
    started at p0 > 1/c, at p = -sqrt(-D) when it started at p0 < 0). Survival iff D > -1/c^2 and not (p0 < 0 and
    D <= 0). Arguments broadcast (s0 >= 0); returns (p_inf, s_inf).
    """
    sigma2, _ = _sigma2_wd(sigma2, 0.0)
    p0, s0 = _broadcast("p0 and s0", as_real_array("p0", p0, nonempty=True), as_real_array("s0", s0, nonempty=True))
    if np.any(s0 < 0):
        raise ValueError("s0 must be >= 0 (an eigenvalue of Phi Phi^T)")
    c = 1.0 + sigma2
    imb = s0 - p0**2
    survive = (imb > -1.0 / c**2) & ~((p0 < 0) & (imb <= 0))
    root = np.sqrt(np.maximum(-imb, 0.0))
    p_inf = np.where(survive, 1.0 / c, np.where(p0 < 0, -root, root))
    s_inf = np.where(survive, 1.0 / c**2 + imb, 0.0)
    return no_overflow("p0 and s0", (p_inf, s_inf))


def balanced_time(p0: np.ndarray | float, p: np.ndarray | float, sigma2: float, wd: float) -> np.ndarray:
    """Time a balanced mode (s = p^2) takes from p0 to p under eq. `eq-ssl1-balanced` (Ch 3), in closed form.

    dp/dt = -c p (p - p*_-)(p - p*_+) separates; with a = p*_-, b = p*_+ (c a b = wd) partial fractions give

        t = -(1/c) [ ln|p|/(a b) + ln|p - a|/(a (a - b)) + ln|p - b|/(b (b - a)) ]_{p0}^{p}          (wd > 0),
        t = [ -1/p + c ln( p / |1 - c p| ) ]_{p0}^{p}                                             (wd = 0, p > 0),

    valid while p stays between the same fixed points as p0 (the result is then >= 0). This is also DirectPred's
    dynamics (`simulate_directpred`). Needs wd < 1/(4c); arguments broadcast.
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    c = 1.0 + sigma2
    p0, p = _broadcast("p0 and p", as_real_array("p0", p0, nonempty=True), as_real_array("p", p, nonempty=True))
    if wd == 0.0:
        if np.any((p0 <= 0) | (p <= 0) | ((p0 - 1 / c) * (p - 1 / c) <= 0)):
            raise ValueError("balanced_time at wd = 0 needs p0, p > 0 on the same side of the fixed point 1/c")

        def prim(q: np.ndarray) -> np.ndarray:
            return -1.0 / q + c * np.log(q / np.abs(1.0 - c * q))
        return prim(p) - prim(p0)
    fp = tian_fixed_points(sigma2, wd)
    if fp is None or fp[0] == fp[1]:
        raise ValueError(f"balanced_time needs wd < 1/(4c) = {1 / (4 * c):.6g}; got wd = {wd}")
    a, b = fp

    def prim(q: np.ndarray) -> np.ndarray:
        return -(np.log(np.abs(q)) / (a * b) + np.log(np.abs(q - a)) / (a * (a - b))
                 + np.log(np.abs(q - b)) / (b * (b - a))) / c
    return prim(p) - prim(p0)


def optimal_predictor(F: np.ndarray, sigma2: float, wd: float = 0.0) -> np.ndarray:
    """Loss-optimal predictor for a fixed encoder, eq. `eq-ssl1-optimal-predictor` (Ch 3): P = F (c F + wd I)^{-1}.

    Minimises L(P) + wd/2 |P|_F^2 with L of eq. `eq-ssl1-loss`, whose P-gradient is c P F - F + wd P. F = Phi Phi^T
    (d2, d2) symmetric PSD; for wd = 0 F must be invertible (then P = I/c). Batched over leading axes.
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    F = as_real_array("F", F, nonempty=True)
    square = F.ndim >= 2 and F.shape[-1] == F.shape[-2]
    if not square or not np.allclose(F, F.swapaxes(-1, -2), atol=1e-12 * (1 + abs(F).max())):
        raise ValueError(f"F must be a symmetric square matrix (Phi Phi^T); got shape {F.shape}")
    c = 1.0 + sigma2
    eye = np.eye(F.shape[-1])
    # P (cF + wd) = F  <=>  (cF + wd) P^T = F (both symmetric), solved without forming the inverse
    return np.linalg.solve(c * F + wd * eye, F).swapaxes(-1, -2)


def _batched_phi(Phi0: Array, dev: torch.device) -> torch.Tensor:
    """Phi0 as a (B, d2, d1) tensor on `dev`: a single (d2, d1) encoder becomes a batch of one."""
    Phi = as_real_tensor("Phi0", Phi0, device=dev)
    if Phi.ndim == 2:
        Phi = Phi[None]
    if Phi.ndim != 3:
        raise ValueError(f"Phi0 must be (B, d2, d1) or (d2, d1); got shape {tuple(Phi.shape)}")
    return Phi


def simulate_directpred(Phi0: Array, sigma2: float, wd: float | Array = 0.0, h: float = 1e-2, t_max: float = 100.0,
                        record_every: int = 100, device: str | torch.device | None = None) -> History:
    """DirectPred (Tian et al. 2021) in the population model of Ch 3: the predictor is *set*, P := F^{1/2}.

    Integrates dPhi/dt = P (I - c P) Phi - wd Phi with P = F^{1/2} (F = Phi Phi^T, eigenvalues clipped at 0) by RK4.
    Since P is a function of F, F keeps its eigenvectors and each eigenvalue s obeys ds/dt = 2 s^{3/2}(1 - c s^{1/2})
    - 2 wd s: with p = sqrt(s) this is the balanced-curve ODE eq. `eq-ssl1-balanced` (Ch 3, eq.
    `eq-ssl1-directpred`). Phi0 (B, d2, d1) or (d2, d1); wd a float or one per run. Returns a History with "t",
    "eigF" (K, B, d2) ascending, "phi_norm" (K, B); final "Phi".
    """
    sigma2 = as_nonnegative("sigma2", sigma2)
    n_steps = steps_for(t_max, h, "t_max")
    record_every = as_int("record_every", record_every, minimum=1)
    dev = get_device(device)
    Phi = _batched_phi(Phi0, dev)
    lam = _wd_tensor(wd, Phi.shape[0], dev)
    c = 1.0 + sigma2

    def rhs(state: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        phi = state[0]
        s, q = torch.linalg.eigh(phi @ phi.mT)
        root = s.clamp(min=0.0).sqrt()
        gain = (q * (root * (1.0 - c * root))[..., None, :]) @ q.mT     # P (I - c P) with P = F^{1/2}
        return (gain @ phi - lam * phi,)

    steps, records = [], {"t": [], "eigF": [], "phi_norm": []}
    state: tuple[torch.Tensor, ...] = (Phi,)
    with few_threads_if_small(Phi.device, Phi.numel()):
        for k in range(n_steps + 1):
            if k % record_every == 0 or k == n_steps:
                check_finite("Phi", state[0], step=k)
                steps.append(k)
                records["t"].append(k * h)
                records["eigF"].append(torch.linalg.eigvalsh(state[0] @ state[0].mT).cpu().numpy())
                records["phi_norm"].append(torch.linalg.matrix_norm(state[0]).cpu().numpy())
            if k < n_steps:
                state = rk4_step_unchecked(rhs, state, h)
    return History.from_records(steps, records, {"Phi": state[0].cpu().numpy()})


def alignment_rate(P: np.ndarray, F: np.ndarray, sigma2: float, wd: float = 0.0) -> np.ndarray:
    """Decay rate of the commutator K = [P, F] for a symmetric predictor, Theorem `thm-ssl1-alignment` (Ch 3).

    Along the symmetric-predictor flow, dK/dt = -(M K + K M) - 3 wd K with M = (c/2) F + c P^2 - P, so
    d|K|_F/dt <= -r |K|_F with r = min_{i != j} (m_i + m_j) + 3 wd over the eigenvalues m_i of M. Returns r,
    batched over leading axes (P, F symmetric, same shape).
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    P, F = as_real_array("P", P, nonempty=True), as_real_array("F", F, nonempty=True)
    if P.shape != F.shape or P.ndim < 2 or P.shape[-1] != P.shape[-2] or P.shape[-1] < 2:
        raise ValueError(f"P and F must be square matrices of the same size >= 2; got {P.shape} and {F.shape}")
    c = 1.0 + sigma2
    M = 0.5 * c * F + c * P @ P - P
    m = np.linalg.eigvalsh(0.5 * (M + M.swapaxes(-1, -2)))               # ascending
    return m[..., 0] + m[..., 1] + 3.0 * wd


def integrate_modes_general(p0: np.ndarray | float, phi0: np.ndarray | float, sigma2: float, wd: float,
                            t_eval: np.ndarray, alpha_p: float = 1.0,
                            ema_beta: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aligned modes with a predictor learning rate alpha_p and an EMA target, by scipy DOP853 (Ch 3, eq.
    `eq-ssl1-modes-ema`). Per mode: encoder singular value phi, EMA target phi_a, predictor eigenvalue p:

        dphi/dt = p (phi_a - c p phi) - wd phi,  dp/dt = alpha_p phi (phi_a - c p phi) - wd p,
        dphi_a/dt = ema_beta (phi - phi_a)          (ema_beta None: phi_a = phi, no EMA),

    with phi_a(0) = phi0. The matrix flow of `simulate_noncontrastive(..., alpha_p=, ema_beta=)` started aligned
    follows it. Returns (p, phi, phi_a), each (len(t_eval), *broadcast shape); s = phi^2.
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    alpha_p = as_positive("alpha_p", alpha_p)
    if ema_beta is not None:
        ema_beta = as_positive("ema_beta", ema_beta)
    t_eval = _times("t_eval", t_eval)
    p0, phi0 = _broadcast("p0 and phi0", as_real_array("p0", p0, nonempty=True),
                          as_real_array("phi0", phi0, nonempty=True))
    shape, n, c = p0.shape, p0.size, 1.0 + sigma2
    if t_eval[-1] == 0:                                  # only t = 0 asked for: the start (solve_ivp needs a span)
        p, phi = (np.broadcast_to(x, (t_eval.size, *shape)).copy() for x in (p0, phi0))
        return p, phi, phi.copy()

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        p, phi = y[:n], y[n:2 * n]
        phi_a = phi if ema_beta is None else y[2 * n:]
        drive = phi_a - c * p * phi
        out = [alpha_p * phi * drive - wd * p, p * drive - wd * phi]
        if ema_beta is not None:
            out.append(ema_beta * (phi - phi_a))
        return np.concatenate(out)

    y0 = [p0.ravel(), phi0.ravel()] + ([phi0.ravel()] if ema_beta is not None else [])
    y = _solve_modes("integrate_modes_general", rhs, np.concatenate(y0), t_eval, 1e-11, 1e-13,
                     n_vars=len(y0), scale=float(np.max(np.abs(c * p0))))
    p, phi = y[:, :n].reshape(-1, *shape), y[:, n:2 * n].reshape(-1, *shape)
    phi_a = phi if ema_beta is None else y[:, 2 * n:].reshape(-1, *shape)
    return p, phi, phi_a


def info_nce_grad(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient of `info_nce` with respect to the raw embeddings, eq. `eq-ssl1-ntxent-grad` (Ch 3).

    With zhat_k = z_k/|z_k|, Pi_ik = softmax_k(zhat_i . zhat_k / T) over k != i and E the positive-pair indicator,

        dL/dzhat_m = 1/(2N T) sum_i [(Pi - E)_im + (Pi - E)_mi] zhat_i,
        dL/dz_m = (I - zhat_m zhat_m^T) dL/dzhat_m / |z_m|:

    attraction to the partner (the -E terms), repulsion from the softmax-weighted others (the Pi terms), projected
    on the tangent space of the sphere. Returns (grad_z1, grad_z2), each (N, D).
    """
    temperature = as_positive("temperature", temperature)
    z1, z2 = _tensors("z1", z1, "z2", z2)
    if z1.ndim != 2 or z1.shape != z2.shape or z1.shape[0] < 1:
        raise ValueError(f"z1 and z2 must both be (N, D) with N >= 1; got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    z = torch.cat([z1, z2])
    norm = z.norm(dim=1, keepdim=True)
    zh = z / norm
    logits = (zh @ zh.T) / temperature
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    pi = torch.softmax(logits, dim=1)
    E = torch.zeros_like(pi)
    idx = torch.arange(2 * n, device=z.device)
    E[idx, (idx + n) % (2 * n)] = 1.0
    W = (pi - E) + (pi - E).T
    g_hat = (W @ zh) / (2 * n * temperature)
    g = (g_hat - (g_hat * zh).sum(dim=1, keepdim=True) * zh) / norm
    return g[:n], g[n:]


def info_nce_collapse_curvature(v: np.ndarray, temperature: float) -> float:
    """Second-order coefficient of NT-Xent at collapse, eq. `eq-ssl1-ntxent-saddle` (Ch 3).

    Embeddings z_i = u + eps v_i for both views of example i (v_i orthogonal to the unit vector u, partners equal):
    L(eps) = log(2N - 1) - kappa eps^2 + O(eps^4) with kappa = sum_{i != k} |v_i - v_k|^2 / (2 T (2N - 1) 2N), the
    sum over the 2N views. kappa > 0 unless all v_i are equal: spreading the examples lowers the loss, so
    collapse is a saddle. v has shape (N, D): one direction per example.
    """
    temperature = as_positive("temperature", temperature)
    v = as_real_array("v", v, nonempty=True)
    if v.ndim != 2 or v.shape[0] < 1:
        raise ValueError(f"v must be (N, D) with N >= 1; got shape {v.shape}")
    n = v.shape[0]
    views = np.concatenate([v, v])
    sq = ((views[:, None, :] - views[None, :, :]) ** 2).sum(-1)
    return float(no_overflow("v", sq.sum() / (2 * temperature * (2 * n - 1) * 2 * n)))


def spectral_contrastive_loss(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """Sample spectral contrastive loss (HaoChen et al. 2021), eq. `eq-ssl1-spectral` (Ch 3):

        L = -2/N sum_i z1_i . z2_i + 1/(N (N-1)) sum_{i != k} (z1_i . z2_k)^2,

    positives (z1_i, z2_i), negatives the other examples' second views. Unbiased for the population loss
    -2 tr(Phi E[x' x^T] Phi^T) + E[(x^T Phi^T Phi x~)^2] of a linear encoder. z1, z2 (N, D), N >= 2.
    """
    z1, z2 = _tensors("z1", z1, "z2", z2)
    if z1.ndim != 2 or z1.shape != z2.shape or z1.shape[0] < 2:
        raise ValueError(f"z1 and z2 must both be (N, D) with N >= 2; got {tuple(z1.shape)} and {tuple(z2.shape)}")
    n = z1.shape[0]
    pos = (z1 * z2).sum(dim=1)                                        # z1_i . z2_i
    all_pairs = ((z1.T @ z1) * (z2.T @ z2)).sum()                     # sum_{i,k} (z1_i . z2_k)^2, O(N D^2)
    return no_overflow("z1 and z2", -2.0 * pos.mean() + (all_pairs - (pos**2).sum()) / (n * (n - 1)))


def spectral_contrastive_pop_grad(Phi: Array, sigma2: float) -> Array:
    """Population gradient of the spectral contrastive loss for a linear encoder under eq. `eq-ssl1-data` (Ch 3):
    L = -2 tr F + c^2 tr F^2 (F = Phi Phi^T, c = 1 + sigma2), so grad = -4 Phi + 4 c^2 F Phi, eq.
    `eq-ssl1-spectral-grad`. numpy or torch, batched over leading axes."""
    sigma2 = as_nonnegative("sigma2", sigma2)
    Phi = as_real_like("Phi", Phi)
    if Phi.ndim < 2:
        raise ValueError(f"Phi must be a matrix (d2, d1); got shape {tuple(Phi.shape)}")
    return _spectral_grad(Phi, 1.0 + sigma2)


def _spectral_grad(Phi: Array, c: float) -> Array:
    """The arithmetic of `spectral_contrastive_pop_grad` on a checked Phi: the simulator's loop."""
    return -4.0 * Phi + 4.0 * c**2 * (Phi @ Phi.swapaxes(-1, -2)) @ Phi


def spectral_contrastive_modes(s0: np.ndarray | float, sigma2: float, wd: float,
                               t: np.ndarray | float) -> np.ndarray:
    """Eigenvalues of F under the spectral contrastive flow, eq. `eq-ssl1-spectral-logistic` (Ch 3): each one obeys
    the logistic ds/dt = r s (1 - s/K), r = 8 - 2 wd, K = (1 - wd/4)/c^2, so

        s(t) = K s0 e^{r t} / (K + s0 (e^{r t} - 1)).

    Every mode with s0 > 0 grows to K (for wd < 4): the collapse s = 0 is unstable. s0 >= 0 and t broadcast."""
    sigma2, wd = _sigma2_wd(sigma2, wd)
    if wd >= 4.0:
        raise ValueError(f"spectral_contrastive_modes needs wd < 4 (above it every mode collapses); got {wd}")
    s0, t = _broadcast("s0 and t", as_real_array("s0", s0, nonempty=True), as_real_array("t", t, nonempty=True))
    if np.any(s0 < 0) or np.any(t < 0):
        raise ValueError("s0 and t must be >= 0")
    c = 1.0 + sigma2
    r, K = 8.0 - 2.0 * wd, (1.0 - wd / 4.0) / c**2
    g = np.exp(-r * t)                                                # the stable form, no overflow at large t
    return K * s0 / (K * g + s0 * (1.0 - g))


def simulate_spectral_contrastive(Phi0: Array, sigma2: float, wd: float | Array = 0.0, h: float = 1e-2,
                                  t_max: float = 5.0, record_every: int = 10,
                                  device: str | torch.device | None = None) -> History:
    """RK4 on the population flow of the spectral contrastive loss, dPhi/dt = 4 (I - c^2 F) Phi - wd Phi (Ch 3).

    Phi0 (B, d2, d1) or (d2, d1). Returns a History with "t", "eigF" (K, B, d2) ascending and "loss" (K, B)
    = -2 tr F + c^2 tr F^2; final "Phi". The reference for `spectral_contrastive_modes`.
    """
    sigma2 = as_nonnegative("sigma2", sigma2)
    n_steps = steps_for(t_max, h, "t_max")
    record_every = as_int("record_every", record_every, minimum=1)
    dev = get_device(device)
    Phi = _batched_phi(Phi0, dev)
    lam = _wd_tensor(wd, Phi.shape[0], dev)
    c = 1.0 + sigma2
    steps, records = [], {"t": [], "eigF": [], "loss": []}
    state: tuple[torch.Tensor, ...] = (Phi,)
    with few_threads_if_small(Phi.device, Phi.numel()):
        for k in range(n_steps + 1):
            if k % record_every == 0 or k == n_steps:
                check_finite("Phi", state[0], step=k)
                F = state[0] @ state[0].mT
                steps.append(k)
                records["t"].append(k * h)
                records["eigF"].append(torch.linalg.eigvalsh(F).cpu().numpy())
                records["loss"].append((-2 * F.diagonal(dim1=-2, dim2=-1).sum(-1)
                                        + c**2 * (F * F).sum((-2, -1))).cpu().numpy())
            if k < n_steps:
                state = rk4_step_unchecked(lambda st: (-_spectral_grad(st[0], c) - lam * st[0],), state, h)
    return History.from_records(steps, records, {"Phi": state[0].cpu().numpy()})


# Work bound of the mode integrators: right-hand-side evaluations per attempt (each evaluates every mode at once).
# The chapter's integrations need a few thousand; a stiff start (|c p0| in the hundreds: the rate of p is c s and
# that of s is 2 p (1 - c p), so DOP853 at rtol 1e-12 needs ~1/|c p0|^2-sized steps) would need millions.
MODE_ODE_MAX_EVALS = 20_000


class _WorkBound(Exception):
    pass


def _solve_modes(name: str, rhs: Callable[[float, np.ndarray], np.ndarray], y0: np.ndarray, t_eval: np.ndarray,
                 rtol: float, atol: float, n_vars: int, scale: float) -> np.ndarray:
    """solve_ivp with a bounded amount of work: DOP853 first, then (stiff input) Radau, else a clear error.

    The state is n_vars blocks of n modes; modes do not interact, so Radau gets the block-diagonal sparsity of the
    Jacobian. Returns y of shape (len(t_eval), n_vars * n).
    """
    n = y0.size // n_vars
    idx = np.arange(y0.size)
    sparsity = (idx[:, None] % n == idx[None, :] % n).astype(float) if y0.size <= 3000 else None
    for method in ("DOP853", "Radau"):
        if method == "Radau" and sparsity is None:
            break
        def counted(t: float, y: np.ndarray, calls: list[int] = [0]) -> np.ndarray:  # noqa: B006 (a counter)
            calls[0] += 1
            if calls[0] > MODE_ODE_MAX_EVALS:
                raise _WorkBound
            return rhs(t, y)

        extra = {"jac_sparsity": sparsity} if method == "Radau" else {}
        try:
            sol = solve_ivp(counted, (0.0, float(t_eval[-1])), y0, method=method, t_eval=t_eval, rtol=rtol,
                            atol=atol, **extra)
        except _WorkBound:
            continue
        if not sol.success:
            raise RuntimeError(f"{name}: solve_ivp ({method}) failed: {sol.message}")
        return sol.y.T
    raise RuntimeError(f"{name}: the mode ODE is too stiff to integrate within the work bound "
                       f"({MODE_ODE_MAX_EVALS} evaluations per method, DOP853 then Radau); the largest initial rate "
                       f"|c p0| is {scale:.3g}. Start closer to the fixed points (|p0| of order 1/c) or integrate a "
                       "shorter span")


# ---- helpers -----------------------------------------------------------------------------------------------------
def _sigma2_wd(sigma2: float, wd: float) -> tuple[float, float]:
    sigma2 = as_nonnegative("sigma2", sigma2)
    if isinstance(wd, bool) or not isinstance(wd, int | float | np.integer | np.floating):
        raise TypeError(f"wd (weight decay) must be a real number; got {type(wd).__name__}")
    if not np.isfinite(wd) or wd < 0:
        raise ValueError(f"wd (weight decay) must be finite and >= 0; got {wd!r}")
    return sigma2, float(wd)


def _wd_tensor(wd: float | Array, batch: int, device: torch.device,
               what: str = "wd (weight decay)") -> torch.Tensor:
    if isinstance(wd, bool | int | float | np.integer | np.floating):
        _sigma2_wd(1.0, wd)
    w = as_real_array(what.split()[0], wd)
    if w.ndim == 0:
        w = np.full(batch, float(w))
    if w.shape != (batch,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{what} must be a float >= 0 or one value >= 0 per run, shape ({batch},); "
                         f"got {w.tolist()}")
    return torch.as_tensor(w, dtype=torch.float64, device=device)[:, None, None]


def _check_pair(Phi: Array, P: Array, name_phi: str = "Phi", name_p: str = "P") -> None:
    if Phi.ndim < 2 or P.ndim < 2:
        raise ValueError(f"{name_phi} and {name_p} must be matrices; got shapes {tuple(Phi.shape)} and "
                         f"{tuple(P.shape)}")
    if P.shape[-1] != P.shape[-2]:
        raise ValueError(f"{name_p} (predictor) must be square (d2, d2); got {tuple(P.shape)}")
    if P.shape[-1] != Phi.shape[-2]:
        raise ValueError(f"{name_p} {tuple(P.shape)} and {name_phi} {tuple(Phi.shape)} do not match: {name_p} must "
                         f"be (d2, d2) for {name_phi} (d2, d1)")
    if P.shape[:-2] != Phi.shape[:-2]:
        raise ValueError(f"{name_p} {tuple(P.shape)} and {name_phi} {tuple(Phi.shape)} must have the same batch axes")


def _times(name: str, t: np.ndarray) -> np.ndarray:
    t = as_real_array(name, t, nonempty=True).ravel()
    if np.any(np.diff(t) < 0) or t[0] < 0:
        raise ValueError(f"{name} must be an increasing array of times >= 0")
    return t


def _broadcast(names: str, *arrays: np.ndarray) -> list[np.ndarray]:
    try:
        return list(np.broadcast_arrays(*arrays))
    except ValueError as err:
        raise ValueError(f"{names} must broadcast together; got shapes {[a.shape for a in arrays]}") from err


def _same_kind(name_a: str, a: Array, name_b: str, b: Array) -> tuple[Array, Array]:
    """Validate two real arguments that work on numpy and torch alike; a numpy one joins a tensor partner."""
    a, b = as_real_like(name_a, a), as_real_like(name_b, b)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        ref = a if isinstance(a, torch.Tensor) else b
        dtype = torch.promote_types(a.dtype, b.dtype) if isinstance(a, torch.Tensor) and isinstance(
            b, torch.Tensor) else ref.dtype
        a, b = (torch.as_tensor(x).to(device=ref.device, dtype=dtype) for x in (a, b))
    return a, b


def _tensors(name_a: str, a: Array, name_b: str, b: Array) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = _same_kind(name_a, a, name_b, b)
    return torch.as_tensor(a), torch.as_tensor(b)


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
        "modeP": (q.mT @ psym @ q).diagonal(dim1=-2, dim2=-1), "balance": F - p.mT @ p,
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
