"""Self-supervised learning dynamics (Ch 3-4): closed forms and the simulators they are checked against.

Chapter 3 (`ch-ssl1`): contrastive (SimCLR's NT-Xent) and non-contrastive (BYOL/SimSiam) learning.
Linear model of Tian, Chen & Ganguli (2021), eq. `eq-ssl1-loss`:

    L(Phi, P) = 1/2 E || P Phi x - SG(Phi x') ||^2,   x = x0 + eps,  x' = x0 + eps',

encoder Phi (d2, d1), predictor P (d2, d2) (the paper's W_p; the book writes P), E[x0 x0^T] = I, eps, eps' iid
with covariance sigma2 I, so E[x x^T] = c I and E[x' x^T] = I with c = 1 + sigma2 (eq. `eq-ssl1-moments`).
Gradient flow with weight decay wd (eq. `eq-ssl1-flow`), F = Phi Phi^T:

    dPhi/dt = P^T (I - c P) Phi - wd Phi,   dP/dt = (I - c P) F - wd P.

Time is gradient-flow time; GD with step h is the Euler method of the same flow at t = h k.
Theory: numpy, float64, broadcasting. Simulators (`ssl_sim`): torch, float64, batched on a leading axis B.
References: Chen et al. (2020); Tian, Chen & Ganguli (2021); HaoChen et al. (2021).
Layout: this module holds the closed forms (numpy); the torch simulators and gradients they are checked against live
in `learndyn.ssl_sim` and are re-exported here (`ld.ssl.simulate_noncontrastive` is
`ld.ssl_sim.simulate_noncontrastive`). Chapter 4 (Barlow Twins, VICReg, linear SimCLR) is `learndyn.barlow`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from scipy.integrate import solve_ivp

from .core import (
    as_positive,
    as_real_array,
    no_overflow,
)
from .ssl_sim import (  # re-export: the simulators the closed forms are checked against
    _sigma2_wd,
    check_info_nce,
    commutator_ratio,
    info_nce,
    info_nce_grad,
    noncontrastive_mc_grads,
    noncontrastive_pop_grads,
    simulate_directpred,
    simulate_noncontrastive,
    simulate_spectral_contrastive,
    spectral_contrastive_loss,
    spectral_contrastive_mc_grad,
    spectral_contrastive_pop_grad,
    two_view_gaussian,
)

__all__ = [
    # Chapter 3
    "two_view_gaussian",
    "noncontrastive_pop_grads",
    "noncontrastive_mc_grads",
    "simulate_noncontrastive",
    "tian_mode_rhs",
    "tian_mode_field",
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
    "spectral_contrastive_mc_grad",
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


def tian_mode_field(sigma2: float, wd: float = 0.0,
                    alpha_p: float = 1.0) -> Callable[[float, np.ndarray], np.ndarray]:
    """The mode ODE of `tian_mode_rhs` (no EMA) as a vector field f(t, y) for scipy's `solve_ivp` (Ch 3).

    y = (p, s), shape (2,) (or (2, ...) for a `vectorized` solve); f returns (dp/dt, ds/dt) of eq. `eq-ssl1-modes`
    in the same shape. sigma2, wd and alpha_p are checked once here, not at each of the solver's thousands of calls.
    """
    sigma2, wd = _sigma2_wd(sigma2, wd)
    alpha_p = as_positive("alpha_p", alpha_p)
    c = 1.0 + sigma2

    def field(_t: float, y: np.ndarray) -> np.ndarray:
        return np.stack(_mode_rhs(y[0], y[1], c, wd, alpha_p, y[1]))
    return field


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


# ---- gradients ---------------------------------------------------------------------------------------------------


# ---- data and simulators (torch) ---------------------------------------------------------------------------------


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


def info_nce_collapse_curvature(v: np.ndarray, temperature: float) -> float:
    """Second-order coefficient of NT-Xent at collapse, eq. `eq-ssl1-ntxent-saddle` (Ch 3).

    Embeddings z_i = u + eps v_i for both views of example i (v_i orthogonal to the unit vector u, partners equal):
    L(eps) = log(2N - 1) - chi eps^2 + O(eps^4) with chi = sum_{i != k} |v_i - v_k|^2 / (2 T (2N - 1) 2N), the
    sum over the 2N views. chi > 0 unless all v_i are equal: spreading the examples lowers the loss, so
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
