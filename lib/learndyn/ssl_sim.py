"""Simulators of the self-supervised models of Ch 3 (torch): the gradients, the two-view data, and GD / RK4 on the
non-contrastive (BYOL/SimSiam), DirectPred and spectral contrastive losses; InfoNCE and its gradient.

Re-exported by `learndyn.ssl`, whose closed forms they are checked against; use them from there
(`ld.ssl.simulate_noncontrastive`). Conventions of that module: encoder Phi (d2, d1), predictor P (d2, d2),
c = 1 + sigma2, weight decay wd, gradient-flow time t (GD with step h is the Euler method at t = h k).
Simulators run in float64, batched on a leading axis B, on `device` (default `learndyn.get_device()`), and return a
`learndyn.core.History`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import ModuleType
from typing import Literal

import numpy as np
import torch

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

__all__ = ["two_view_gaussian", "noncontrastive_pop_grads", "noncontrastive_mc_grads", "simulate_noncontrastive",
           "simulate_directpred", "info_nce", "check_info_nce", "info_nce_grad", "spectral_contrastive_loss",
           "spectral_contrastive_pop_grad", "spectral_contrastive_mc_grad", "simulate_spectral_contrastive",
           "commutator_ratio"]

Array = np.ndarray | torch.Tensor


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
    error (Ch 3, the Monte Carlo checks of eq. `eq-ssl1-grads`). The sample loss is evaluated through the sample
    second moments S = 1/n sum_i z_i z_i^T of z_i = (x_i, x'_i): with M = [P Phi, -SG(Phi)] it is 1/2 tr(M S M^T),
    the same number as the sum over pairs at O(d1^2) cost per call. S (a few KiB) is kept for the last 64
    (n, d1, sigma2, seed), so the StopGrad and no-StopGrad gradients of one sample share its draw.
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
    S = _two_view_moments(n, Phi.shape[1], sigma2, seed)
    M = torch.cat([P @ Phi, -(Phi.detach() if stopgrad else Phi)], dim=1)  # P Phi x_i - SG(Phi x'_i) = M z_i
    loss = 0.5 * ((M @ S) * M).sum()
    g_phi, g_p = torch.autograd.grad(loss, (Phi, P))
    return no_overflow("Phi and P", (g_phi, g_p))


@functools.lru_cache(maxsize=64)
def _two_view_moments(n: int, d: int, sigma2: float, seed: int) -> torch.Tensor:
    """S = 1/n sum_i z_i z_i^T, (2d, 2d), of the pairs z_i = (x_i, x'_i) of `two_view_gaussian(n, d, sqrt(sigma2),
    seed)` (read only: cached)."""
    z = torch.cat(two_view_gaussian(n, d, math.sqrt(sigma2), seed=seed, device="cpu"), dim=1)
    return (z.T @ z) / n


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
    "modeP" (K, B, d2) = q_j^T P q_j along F's eigenvectors q_j (pairs with "eigF"), "balance" B = F - P^T P,
    "P" and "F" = Phi Phi^T themselves (K, B, d2, d2). final: "Phi", "P" (numpy). Raises DivergenceError naming the
    step if the run leaves the finite numbers (checked at every recorded step, so record_every=1 names the exact
    step). On the CPU the loop runs on numpy views of the tensors (a batch of small matrices costs per-operation
    overhead, about 3x less in numpy than in torch); on other devices on the tensors.
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
    check_alloc("simulate_noncontrastive's records", (n_steps // record_every + 2) * (3 * P.numel() + 8 * Phi.shape[0]))
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

    lam, alpha_p = _host(lam), _host(alpha_p)
    c = 1.0 + sigma2

    def rhs(state: tuple[Array, ...]) -> tuple[Array, ...]:
        phi, p = state[0], state[1]
        target = state[2] if ema_beta is not None else None
        g_phi, g_p = _pop_grads(phi, p, c, stopgrad, target)
        d_phi = -g_phi - lam * phi
        d_p = -alpha_p * g_p - lam * p if use_predictor else 0.0 * p
        if symmetric_predictor:
            d_p = 0.5 * (d_p + d_p.swapaxes(-1, -2))
        return (d_phi, d_p) if ema_beta is None else (d_phi, d_p, ema_beta * (phi - state[2]))

    state = tuple(_host(x) for x in ((Phi, P) if ema_beta is None else (Phi, P, Phi.clone())))
    steps, records = [], {k: [] for k in ("t", "loss", "phi_norm", "commutator", "asym", "eigP", "eigF", "modeP",
                                          "balance", "P", "F")}
    with few_threads_if_small(Phi.device, Phi.numel() + P.numel()), _quiet_overflow():
        for k in range(n_steps + 1):
            if k % record_every == 0 or k == n_steps:
                steps.append(k)
                for name, value in _metrics(state, c, k * h, k).items():
                    records[name].append(value)
            if k < n_steps:
                state = rk4_step_unchecked(rhs, state, h) if method == "rk4" else tuple(
                    x + h * dx for x, dx in zip(state, rhs(state), strict=True))
    return History.from_records(steps, records, {"Phi": _numpy(state[0]), "P": _numpy(state[1])})


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
    lam = _host(_wd_tensor(wd, Phi.shape[0], dev))
    c = 1.0 + sigma2
    la = _linalg(lam)

    def rhs(state: tuple[Array, ...]) -> tuple[Array, ...]:
        phi = state[0]
        s, q = la.eigh(phi @ phi.swapaxes(-1, -2))
        root = s.clip(min=0.0) ** 0.5
        gain = (q * (root * (1.0 - c * root))[..., None, :]) @ q.swapaxes(-1, -2)  # P (I - c P), P = F^{1/2}
        return (gain @ phi - lam * phi,)

    steps, records = [], {"t": [], "eigF": [], "phi_norm": []}
    state = (_host(Phi),)
    with few_threads_if_small(Phi.device, Phi.numel()), _quiet_overflow():
        for k in range(n_steps + 1):
            if k % record_every == 0 or k == n_steps:
                check_finite("Phi", _torch(state[0]), step=k)
                steps.append(k)
                records["t"].append(k * h)
                records["eigF"].append(la.eigvalsh(state[0] @ state[0].swapaxes(-1, -2)))
                records["phi_norm"].append(_fro(state[0]))
            if k < n_steps:
                state = rk4_step_unchecked(rhs, state, h)
    return History.from_records(steps, records, {"Phi": _numpy(state[0])})


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


def spectral_contrastive_loss(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """Sample spectral contrastive loss (HaoChen et al. 2021), eq. `eq-ssl1-spectral` (Ch 3):

        L = -2/N sum_i z1_i . z2_i + 1/(N (N-1)) sum_{i != k} (z1_i . z2_k)^2,

    positives (z1_i, z2_i), negatives the other examples' second views. Unbiased for the population loss
    -2 tr(Phi E[x' x^T] Phi^T) + E[(x^T Phi^T Phi x~)^2] of a linear encoder. z1, z2 (N, D), N >= 2.
    """
    z1, z2 = _tensors("z1", z1, "z2", z2)
    if z1.ndim != 2 or z1.shape != z2.shape or z1.shape[0] < 2:
        raise ValueError(f"z1 and z2 must both be (N, D) with N >= 2; got {tuple(z1.shape)} and {tuple(z2.shape)}")
    return no_overflow("z1 and z2", _spectral_loss(z1, z2))


def _spectral_loss(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """The arithmetic of `spectral_contrastive_loss` on checked (N, D) tensors, N >= 2."""
    n = z1.shape[0]
    pos = (z1 * z2).sum(dim=1)                                        # z1_i . z2_i
    all_pairs = ((z1.T @ z1) * (z2.T @ z2)).sum()                     # sum_{i,k} (z1_i . z2_k)^2, O(N D^2)
    return -2.0 * pos.mean() + (all_pairs - (pos**2).sum()) / (n * (n - 1))


def spectral_contrastive_mc_grad(Phi: Array, sigma2: float, n: int, seed: int = 0) -> torch.Tensor:
    """Monte Carlo gradient of the spectral contrastive loss by autograd (Ch 3, the check of eq.
    `eq-ssl1-spectral-grad`): `spectral_contrastive_loss`(x Phi^T, x' Phi^T) on the n pairs of
    `two_view_gaussian`(n, d1, sqrt(sigma2), seed), differentiated with respect to Phi.

    Unbatched: Phi (d2, d1); float64 on the CPU; n >= 2. An unbiased estimate of `spectral_contrastive_pop_grad`
    with O(1/sqrt(n)) error. The pairs are drawn here, so they are not checked again.
    """
    sigma2 = as_nonnegative("sigma2", sigma2)
    n, seed = as_int("n", n, minimum=2), as_seed("seed", seed)
    Phi = torch.tensor(as_real_array("Phi", Phi, ndim=2, nonempty=True), requires_grad=True)
    check_alloc(f"spectral_contrastive_mc_grad with n = {n}", 2.0 * n * (Phi.shape[0] + Phi.shape[1]))
    x, xp = two_view_gaussian(n, Phi.shape[1], math.sqrt(sigma2), seed=seed, device="cpu")
    return no_overflow("Phi", torch.autograd.grad(_spectral_loss(x @ Phi.T, xp @ Phi.T), Phi)[0])


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
    lam = _host(_wd_tensor(wd, Phi.shape[0], dev))
    c = 1.0 + sigma2
    steps, records = [], {"t": [], "eigF": [], "loss": []}
    state = (_host(Phi),)
    with few_threads_if_small(Phi.device, Phi.numel()), _quiet_overflow():
        for k in range(n_steps + 1):
            if k % record_every == 0 or k == n_steps:
                check_finite("Phi", _torch(state[0]), step=k)
                F = state[0] @ state[0].swapaxes(-1, -2)
                steps.append(k)
                records["t"].append(k * h)
                records["eigF"].append(_linalg(F).eigvalsh(F))
                records["loss"].append(-2 * (state[0] ** 2).sum((-2, -1)) + c**2 * (F * F).sum((-2, -1)))
            if k < n_steps:
                state = rk4_step_unchecked(lambda st: (-_spectral_grad(st[0], c) - lam * st[0],), state, h)
    return History.from_records(steps, records, {"Phi": _numpy(state[0])})


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


def _metrics(state: tuple[Array, ...], c: float, t: float, step: int) -> dict[str, Array | float]:
    """What `simulate_noncontrastive` records at a step, on the loop's arrays (numpy or torch alike)."""
    phi, p = state[0], state[1]
    tgt = state[2] if len(state) > 2 else phi
    F = phi @ phi.swapaxes(-1, -2)
    pf = p @ phi
    # 1/2 E||P Phi x - Phi_a x'||^2 = 1/2 [c ||P Phi||^2 - 2 tr(P Phi Phi_a^T) + c ||Phi_a||^2]
    loss = 0.5 * (c * (pf**2).sum((-2, -1)) - 2 * (pf * tgt).sum((-2, -1)) + c * (tgt**2).sum((-2, -1)))
    # one reduction on the happy path: a NaN or infinity in Phi, P or Phi_a reaches the loss, one in F its sum
    if not math.isfinite(float(loss.sum()) + float(F.sum())):
        for name, x in (("Phi", phi), ("P", p), ("Phi_a", tgt), ("F = Phi Phi^T", F)):
            check_finite(name, _torch(x), step=step)
    la = _linalg(F)
    eig_f, q = la.eigh(F)
    psym = 0.5 * (p + p.swapaxes(-1, -2))
    return {
        "t": t, "loss": loss, "phi_norm": _fro(phi), "commutator": _commutator_ratio(p, F),
        "asym": _fro(p - p.swapaxes(-1, -2)), "eigP": la.eigvalsh(psym), "eigF": eig_f,
        "modeP": (q * (psym @ q)).sum(-2), "balance": F - p.swapaxes(-1, -2) @ p, "P": p, "F": F,
    }


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
    return _numpy(_commutator_ratio(A, B))


def _commutator_ratio(A: Array, B: Array) -> Array:
    """The arithmetic of `commutator_ratio` on checked square matrices of one kind (numpy or torch)."""
    den = _fro(A) * _fro(B)
    return _fro(A @ B - B @ A) / (den + (den == 0))                 # 0 / 1 where A or B is 0


def _fro(x: Array) -> Array:
    """Frobenius norm over the last two axes, numpy or torch."""
    return (x**2).sum((-2, -1)) ** 0.5


def _linalg(x: Array) -> ModuleType:
    return torch.linalg if isinstance(x, torch.Tensor) else np.linalg


def _host(x: torch.Tensor) -> Array:
    """The array a simulator's loop runs on: a numpy view of a CPU tensor (batches of small matrices cost
    per-operation overhead, about 3x less in numpy than in torch), any other tensor unchanged."""
    return x.numpy() if x.device.type == "cpu" else x


def _quiet_overflow() -> np.errstate:
    """numpy's loop overflows silently, as torch's does: a run that leaves the finite numbers is reported by the
    DivergenceError at the next recorded step."""
    return np.errstate(over="ignore", invalid="ignore")


def _torch(x: Array) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


def _sigma2_wd(sigma2: float, wd: float) -> tuple[float, float]:
    sigma2 = as_nonnegative("sigma2", sigma2)
    if isinstance(wd, bool) or not isinstance(wd, int | float | np.integer | np.floating):
        raise TypeError(f"wd (weight decay) must be a real number; got {type(wd).__name__}")
    if not np.isfinite(wd) or wd < 0:
        raise ValueError(f"wd (weight decay) must be finite and >= 0; got {wd!r}")
    return sigma2, float(wd)


def _numpy(x: Array | float) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)
