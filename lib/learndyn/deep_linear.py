"""Deep linear networks: the loss, its symmetry and exact mode dynamics (Ch 1-2), with the simulators they are
checked against (the torch simulators live in `deep_linear_sim`, the teacher tasks in `tasks`; both are
re-exported here).

Two-layer model (Ch 1, eq. `eq-linreg-deep-loss`; Ch 2 for whitened inputs): E(W1, W2) = 1/2 ||Sigma - W2 W1||_F^2
with W1 of shape (N2, N1), W2 of shape (N3, N2), Sigma = U S V^T of shape (N3, N1). Batched arguments carry leading
axes (matmul broadcasting). GD step k is compared with flow time t = eta * k (Ch 2 writes tau = 1/eta).
Theory: numpy, float64, broadcasting. Saxe, McClelland & Ganguli (2014); Baldi & Hornik (1989).

Chapter 2 convention: tau dW/dt = -grad E with tau = 1/eta, so flow time t counts GD steps; the closed forms take
`tau` and the GD step k is compared with t = k (equivalently t / tau = eta k).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy import integrate, optimize, special

from .core import (
    DivergenceError,
    as_bool,
    as_callable,
    as_int,
    as_positive,
    as_real,
    as_real_array,
    as_real_tensor,
    as_seed,
    as_steps,
    as_times,
    broadcast,
    no_overflow,
)

# The tasks (Task, svd_task, hierarchical_task, tree_spectrum) live in `tasks`; re-exported here
from .tasks import Task, hierarchical_task, svd_task, tree_spectrum  # re-export

__all__ = [
    "two_layer_loss", "two_layer_grads", "balance", "origin_hessian_spectrum", "scalar_gd_path", "scalar_gd", "Task",
    "svd_task", "hierarchical_task", "riccati_u", "riccati_time", "gd_half_steps", "gd_riccati_lag_coefficient",
    "general_u_rhs", "general_u_flow", "hyperbolic_u", "hyperbolic_time", "shallow_flow", "shallow_gd",
    "deep_balanced_rhs", "deep_balanced_flow", "deep_balanced_time", "chain_sharpness", "deep_half_time_large_D",
    "deep_half_time_small_u0", "tree_spectrum", "mode_strengths", "effective_u0", "gram_schmidt_delay",
    "balanced_matrix_modes", "half_times", "check_effective_u0", "decoupled_init", "small_random_init",
    "train_two_layer", "train_chain", "train_shallow", "flow_two_layer", "train_deep_linear", "gd_chains",
    "train_greedy_pretraining", "decoupled_form", "crossing_step",
]


def two_layer_loss(Sigma: torch.Tensor | np.ndarray, W1: torch.Tensor | np.ndarray,
                   W2: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """E = 1/2 ||Sigma - W2 W1||_F^2 (per batch element); torch in, torch out (differentiable), numpy in, numpy out."""
    if any(isinstance(x, torch.Tensor) for x in (Sigma, W1, W2)):
        Sigma, W1, W2 = (as_real_tensor(n, x, dtype=None, allow_grad=True) for n, x in
                         (("Sigma", Sigma), ("W1", W1), ("W2", W2)))
        _check_layers(Sigma, W1, W2)
        dtype = torch.promote_types(torch.promote_types(Sigma.dtype, W1.dtype), W2.dtype)
        Sigma, W1, W2 = (x.to(device=W1.device, dtype=dtype) for x in (Sigma, W1, W2))
        R = Sigma - W2 @ W1
        return 0.5 * (R**2).sum(dim=(-2, -1))
    Sigma, W1, W2 = _check_layers(*(as_real_array(n, x) for n, x in (("Sigma", Sigma), ("W1", W1), ("W2", W2))))
    return no_overflow("Sigma, W1 and W2", 0.5 * np.sum((Sigma - W2 @ W1) ** 2, axis=(-2, -1)))


def two_layer_grads(Sigma: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dE/dW1, dE/dW2) = (-W2^T G, -G W1^T) with G = Sigma - W2 W1 (Ch 2, eq. `eq-saxe-grads`); batched."""
    Sigma, W1, W2 = _check_layers(*(as_real_array(n, x) for n, x in (("Sigma", Sigma), ("W1", W1), ("W2", W2))))
    G = Sigma - W2 @ W1
    return (no_overflow("Sigma, W1 and W2", -np.swapaxes(W2, -1, -2) @ G),
            no_overflow("Sigma, W1 and W2", -G @ np.swapaxes(W1, -1, -2)))


def balance(W1: np.ndarray, W2: np.ndarray) -> np.ndarray:
    """B = W1 W1^T - W2^T W2, the (N2, N2) quantity conserved by gradient flow (Ch 1; Ch 2,
    `thm-saxe-conservation`); batched."""
    W1, W2 = _real("W1", W1), _real("W2", W2)
    if W1.ndim < 2 or W2.ndim < 2 or W1.shape[-2] != W2.shape[-1]:
        raise ValueError(f"W1 (N2, N1) and W2 (N3, N2) must share N2; got W1 {W1.shape}, W2 {W2.shape}")
    _batch_shape("W1 and W2", W1, W2)
    return no_overflow("W1 and W2", W1 @ np.swapaxes(W1, -1, -2) - np.swapaxes(W2, -1, -2) @ W2)


def origin_hessian_spectrum(svals: np.ndarray, N2: int, N1: int | None = None, N3: int | None = None) -> np.ndarray:
    """Eigenvalues of the Hessian of E at W = 0, eq. `eq-linreg-origin-hessian` (Ch 1): +-s_alpha, each N2 times.

    With N1 and N3 given, the zero eigenvalues are added so that the count is the number of parameters
    N2 (N1 + N3). Sorted ascending.
    """
    s = _real("svals", svals).ravel()
    N2 = as_int("N2", N2, minimum=1)
    if np.any(s < 0):
        raise ValueError("svals must be non-negative (singular values)")
    eigs = [np.repeat(s, N2), np.repeat(-s, N2)]
    if N1 is not None or N3 is not None:
        if N1 is None or N3 is None:
            raise ValueError("give both N1 and N3 (or neither)")
        N1, N3 = as_int("N1", N1, minimum=1), as_int("N3", N3, minimum=1)
        if s.size > min(N1, N3):
            raise ValueError(f"at most min(N1, N3) = {min(N1, N3)} singular values; got {s.size}")
        eigs.append(np.zeros(N2 * (N1 + N3) - 2 * N2 * s.size))
    return np.sort(np.concatenate(eigs))


def scalar_gd_path(s: float | np.ndarray, a0: float | np.ndarray, b0: float | np.ndarray, eta: float,
                   steps: int) -> tuple[np.ndarray, np.ndarray]:
    """GD on the scalar model E(a, b) = 1/2 (s - a b)^2 (Ch 1, eq. `eq-linreg-scalar`; one mode of Ch 2):

        a <- a + eta b (s - a b),   b <- b + eta a (s - a b)      (simultaneous update).

    Arguments broadcast; returns the paths (a, b), each of shape (steps + 1, *broadcast shape).
    Raises `DivergenceError` with the step when the iterates overflow.
    """
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    s, a, b = broadcast("s, a0 and b0", *(as_real_array(n, x, nonempty=True)
                                          for n, x in (("s", s), ("a0", a0), ("b0", b0))))
    A, B = np.empty((steps + 1, *s.shape)), np.empty((steps + 1, *s.shape))
    A[0], B[0] = a, b
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps):
            r = s - a * b
            a, b = a + eta * b * r, b + eta * a * r
            A[k + 1], B[k + 1] = a, b
    # A NaN or inf never turns finite again (inf - inf and 0 * inf are NaN), so the run is checked once, at the end
    bad = ~(np.isfinite(A) & np.isfinite(B)).reshape(steps + 1, -1).all(axis=1)
    if bad.any():
        raise DivergenceError(f"scalar GD diverged at step {int(np.argmax(bad))} (eta={eta:g}); try a smaller eta")
    return A, B


def scalar_gd(s: float | np.ndarray, a0: float | np.ndarray, b0: float | np.ndarray, eta: float,
              steps: int) -> np.ndarray:
    """Mode strengths u_k = a_k b_k of scalar GD (see `scalar_gd_path`); shape (steps + 1, *broadcast shape)."""
    A, B = scalar_gd_path(s, a0, b0, eta, steps)
    return A * B


# ---------------------------------------------------------------------------------------------------------------
# Chapter 2: closed forms (numpy, broadcasting). Time t is in the units of tau (tau = 1/eta: t counts GD steps).
def riccati_u(t: ArrayLike, s: ArrayLike, u0: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """Balanced mode strength, eq. `eq-saxe-riccati`: the solution of tau du/dt = 2 u (s - u), u(0) = u0.

        u(t) = s / (1 + (s/u0 - 1) exp(-2 s t / tau))      (this form does not overflow for t -> inf).

    Holds for a balanced mode (a = b); u0 > 0, s > 0. Arguments broadcast.
    """
    t, s, u0 = broadcast("t, s and u0", _real("t", t), _positive("s", s), _positive("u0", u0))
    return s / (1.0 + (s / u0 - 1.0) * np.exp(-2.0 * s * t / as_positive("tau", tau)))


def riccati_time(u0: ArrayLike, uf: ArrayLike, s: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """Time for a balanced mode to go from u0 to uf, eq. `eq-saxe-time`:

        t = tau / (2 s) ln[ uf (s - u0) / (u0 (s - uf)) ].     Needs 0 < u0, uf < s.  t_1/2: uf = s / 2.
    """
    u0, uf, s = broadcast("u0, uf and s", _real("u0", u0), _real("uf", uf), _positive("s", s))
    u0, uf = _inside("u0", u0, 0.0, s), _inside("uf", uf, 0.0, s)
    tau = as_positive("tau", tau)
    return tau / (2.0 * s) * np.log(uf * (s - u0) / (u0 * (s - uf)))


def gd_half_steps(s: ArrayLike, u0: ArrayLike, eta: ArrayLike, corrected: bool = True) -> np.ndarray:
    """Steps GD needs to take a balanced mode from u0 to s/2, eq. `eq-saxe-gd-half` (Ch 2).

    Leading term (corrected=False), from the plateau growth factor (1 + eta s)^2 of u_{k+1} = u_k (1 + eta (s - u_k))^2:

        k_1/2 = ln((s - u0)/u0) / (2 ln(1 + eta s)).

    corrected=True (default) adds the two terms derived from the logit z = ln(u / (s - u)) (eq. `eq-saxe-logit-step`):
    - (3/4) ln(2 (1 - u0/s)) + (5/16 - ln(2)/8) eta s; the remainder is O((eta s)^2 + eta u0) steps.
    Needs 0 < u0 < s, eta > 0.
    """
    s, u0, eta = broadcast("s, u0 and eta", _positive("s", s), _real("u0", u0), _positive("eta", eta))
    u0 = _inside("u0", u0, 0.0, s)
    corrected = as_bool("corrected", corrected)
    k = np.log((s - u0) / u0) / (2.0 * np.log1p(eta * s))
    if not corrected:
        return k
    return k - 0.75 * np.log(2.0 * (1.0 - u0 / s)) + (5.0 / 16.0 - np.log(2.0) / 8.0) * eta * s


def gd_riccati_lag_coefficient(s: ArrayLike, u0: ArrayLike) -> np.ndarray:
    """First-order coefficient A of the largest gap between balanced GD and the Riccati law (Ch 2, eq. `eq-saxe-gap`):

        max_k |u_k - u(k)| = A eta + O(eta^2),  A = max_z 2 s^2 sigma(z) (1 - sigma(z)) |delta(z)|,
        delta(z) = (z - z0)/4 - (3/4) ln((1 + e^z)/(1 + e^{z0})),  z0 = ln(u0 / (s - u0)),

    delta being GD's delay in steps at logit z, and 2 eta s^2 sigma (1 - sigma) the flow's slope du/dk. The maximum is
    found on a grid in z refined by a bounded scalar minimisation. Needs 0 < u0 < s.
    """
    s, u0 = broadcast("s and u0", _positive("s", s), _real("u0", u0))
    u0 = _inside("u0", u0, 0.0, s)

    def one(sv: float, uv: float) -> float:
        z0 = np.log(uv / (sv - uv))

        def gap(z: np.ndarray | float) -> np.ndarray | float:      # on a grid of z at once, or at one z
            sig = 0.5 * (1.0 + np.tanh(0.5 * z))
            delta = (z - z0) / 4.0 - 0.75 * (np.logaddexp(0.0, z) - np.logaddexp(0.0, z0))
            return np.abs(2.0 * sv**2 * sig * (1.0 - sig) * delta)

        zs = np.linspace(z0, 40.0, 8001)
        i = int(np.argmax(gap(zs)))
        lo, hi = zs[max(i - 1, 0)], zs[min(i + 1, zs.size - 1)]
        res = optimize.minimize_scalar(lambda z: -gap(z), bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
        return max(-res.fun, gap(zs[i]))

    return np.vectorize(one, otypes=[float])(s, u0)


def general_u_rhs(u: ArrayLike, s: ArrayLike, c0: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """du/dt for one mode with conserved c0 = a^2 - b^2, eq. `eq-saxe-general-u`: sqrt(c0^2 + 4 u^2) (s - u) / tau."""
    u, s, c0 = broadcast("u, s and c0", _real("u", u), _positive("s", s), _real("c0", c0))
    return no_overflow("u and c0", _general_u_rhs(u, s, c0, as_positive("tau", tau)))


def _general_u_rhs(u: np.ndarray, s: float, c0: float, tau: float) -> np.ndarray:
    return np.sqrt(c0**2 + 4.0 * u**2) * (s - u) / tau


def general_u_flow(t_eval: ArrayLike, s: float, u0: float, c0: float, tau: float = 1.0, rtol: float = 1e-12,
                   atol: float = 1e-14) -> np.ndarray:
    """u(t) at the times t_eval (increasing, from 0) of the ODE of `general_u_rhs`, eq. `eq-saxe-general-u`, from u0:
    scipy's DOP853, the reference its closed forms are checked against (Ch 2). Checked once; the solver's calls not."""
    s, u0, c0, tau = as_positive("s", s), as_real("u0", u0), as_real("c0", c0), as_positive("tau", tau)
    return _scalar_flow(lambda _t, u: _general_u_rhs(u, s, c0, tau), t_eval, u0, rtol, atol)


def _scalar_flow(rhs: Callable[..., np.ndarray], t_eval: ArrayLike, u0: float, rtol: float, atol: float) -> np.ndarray:
    """DOP853 on a checked scalar ODE du/dt = rhs(t, u) from u0 at the times t_eval (checked here)."""
    t = as_times("t_eval", t_eval, strict=True, start_zero=True)
    rtol, atol = as_positive("rtol", rtol), as_positive("atol", atol)
    if t[-1] == 0:                                     # t_eval = [0]: the start (solve_ivp needs a time span)
        return np.full(1, u0)
    sol = integrate.solve_ivp(rhs, (0.0, t[-1]), [u0], method="DOP853", t_eval=t, rtol=rtol, atol=atol)
    if not sol.success or not np.all(np.isfinite(sol.y)):
        raise DivergenceError(f"solve_ivp failed: {sol.message} (u0 = {u0:g})")
    return sol.y[0]


def hyperbolic_u(t: ArrayLike, s: ArrayLike, a0: ArrayLike, b0: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """Exact mode strength u = a b of tau a' = b (s - ab), tau b' = a (s - ab) from any (a0, b0), eq. `eq-saxe-hyp-u`.

    With c = |a0^2 - b0^2|, R = sqrt(4 s^2 + c^2), x_pm = (2 s pm R) / c and x0 = exp(arcsinh(2 u0 / c)):

        x(t) = (x_+ - x_- K e^{-R t / tau}) / (1 - K e^{-R t / tau}),  K = (x0 - x_+)/(x0 - x_-),  u = c (x - 1/x) / 4.

    When |c0| < 1e-9 max(s, |u0|) the balanced solution is used instead (the limit c0 -> 0, where the formula above
    loses digits): the Riccati law for u0 > 0, its time reversal (decay to the saddle) for u0 < 0. Arguments broadcast.
    """
    t, s, a0, b0, tau = _real("t", t), _positive("s", s), _real("a0", a0), _real("b0", b0), as_positive("tau", tau)
    t, s, a0, b0 = broadcast("t, s, a0 and b0", t, s, a0, b0)
    c, u0 = np.abs(a0**2 - b0**2), a0 * b0
    bal = c < 1e-9 * np.maximum(s, np.abs(u0))
    cs = np.where(bal, 1.0, c)
    R = np.sqrt(4.0 * s**2 + cs**2)
    xp, xm = (2.0 * s + R) / cs, (2.0 * s - R) / cs
    x0 = np.exp(np.arcsinh(2.0 * u0 / cs))
    Ke = (x0 - xp) / (x0 - xm) * np.exp(-R * t / tau)
    x = (xp - xm * Ke) / (1.0 - Ke)
    u_hyp = cs * (x - 1.0 / x) / 4.0
    u0s = np.where(u0 == 0.0, 1.0, u0)
    u_bal = np.where(u0 == 0.0, 0.0, s / (1.0 + (s / u0s - 1.0) * np.exp(-2.0 * np.sign(u0) * s * t / tau)))
    return no_overflow("t, a0 and b0", np.where(bal, u_bal, u_hyp))


def hyperbolic_time(uf: ArrayLike, s: ArrayLike, a0: ArrayLike, b0: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """Time for the exact (unbalanced) mode of `hyperbolic_u` to reach uf, eq. `eq-saxe-hyp-time`:

        t = (tau / R) ln(K / y_f),  y_f = (x_f - x_+)/(x_f - x_-),  x_f = exp(arcsinh(2 uf / c)).

    uf must lie strictly between u0 = a0 b0 and s (the mode moves monotonically towards s). Balanced modes
    (|c0| below the threshold of `hyperbolic_u`) use `riccati_time`.
    """
    uf, s, a0, b0, tau = _real("uf", uf), _positive("s", s), _real("a0", a0), _real("b0", b0), as_positive("tau", tau)
    uf, s, a0, b0 = broadcast("uf, s, a0 and b0", uf, s, a0, b0)
    c, u0 = np.abs(a0**2 - b0**2), a0 * b0
    bal = c < 1e-9 * np.maximum(s, np.abs(u0))
    if np.any(bal & (u0 <= 0)):
        raise ValueError("a0, b0: a balanced mode with a0 b0 <= 0 never reaches s (it sits on the saddle's stable set)")
    lo, hi = np.minimum(u0, s), np.maximum(u0, s)
    if not np.all((uf > lo) & (uf < hi)):
        raise ValueError(f"uf must lie strictly between u0 = a0 b0 and s; got uf={uf}, u0={u0}, s={s}")
    cs = np.where(bal, 1.0, c)
    R = np.sqrt(4.0 * s**2 + cs**2)
    xp, xm = (2.0 * s + R) / cs, (2.0 * s - R) / cs
    x0, xf = np.exp(np.arcsinh(2.0 * u0 / cs)), np.exp(np.arcsinh(2.0 * uf / cs))
    t_hyp = tau / R * np.log(((x0 - xp) / (x0 - xm)) / ((xf - xp) / (xf - xm)))
    u0s = np.where(bal, u0, 0.5 * s)
    ufs = np.where(bal, uf, 0.5 * s)
    t_bal = tau / (2.0 * s) * np.log(ufs * (s - u0s) / (u0s * (s - ufs)))
    return no_overflow("a0 and b0", np.where(bal, t_bal, t_hyp))


def shallow_flow(t: ArrayLike, s: ArrayLike, a0: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """Shallow network y = W x, eq. `eq-saxe-shallow`: tau a' = s - a, a(t) = s + (a0 - s) exp(-t / tau)."""
    t, s, a0 = broadcast("t, s and a0", _real("t", t), _real("s", s), _real("a0", a0))
    return no_overflow("t and a0", s + (a0 - s) * np.exp(-t / as_positive("tau", tau)))


def shallow_gd(k: ArrayLike, s: ArrayLike, a0: ArrayLike, eta: ArrayLike) -> np.ndarray:
    """GD on the shallow network, exactly, eq. `eq-saxe-shallow-gd`: a_k = s + (a0 - s)(1 - eta)^k.

    Raises `DivergenceError` naming the first step k whose value overflows (eta > 2 grows without bound), as the
    iterated GD would.
    """
    k, s, a0, eta = broadcast("k, s, a0 and eta", as_steps("k", k), _real("s", s), _real("a0", a0),
                              _positive("eta", eta))
    with np.errstate(over="ignore", invalid="ignore"):
        out = s + (a0 - s) * (1.0 - eta) ** k
    bad = ~np.isfinite(out)
    if np.any(bad):
        raise DivergenceError(f"shallow GD diverged at step {int(k[bad].min())} (eta={float(eta[bad].flat[0]):g}; "
                              "stable only for eta < 2)")
    return out


def deep_balanced_rhs(u: ArrayLike, s: ArrayLike, D: int, tau: float = 1.0) -> np.ndarray:
    """du/dt of a balanced depth-D scalar chain u = a^D, eq. `eq-saxe-depth`: D u^(2 - 2/D) (s - u) / tau (u >= 0)."""
    D = as_int("D", D, minimum=1)
    u, s = broadcast("u and s", _real("u", u), _positive("s", s))
    if np.any(u < 0):
        raise ValueError("u must be non-negative for the balanced chain (u = a^D with a >= 0)")
    return _deep_balanced_rhs(u, s, D, as_positive("tau", tau))


def _deep_balanced_rhs(u: np.ndarray, s: float, D: int, tau: float) -> np.ndarray:
    return D * u ** (2.0 - 2.0 / D) * (s - u) / tau


def deep_balanced_flow(t_eval: ArrayLike, s: float, u0: float, D: int, tau: float = 1.0, rtol: float = 1e-12,
                       atol: float = 1e-14) -> np.ndarray:
    """u(t) at the times t_eval (increasing, from 0) of the balanced depth-D chain, the ODE of `deep_balanced_rhs`
    (eq. `eq-saxe-depth`), from u0 >= 0: scipy's DOP853 (Ch 2), checked once as `general_u_flow`."""
    s, u0, D, tau = as_positive("s", s), as_real("u0", u0), as_int("D", D, minimum=1), as_positive("tau", tau)
    if u0 < 0:
        raise ValueError(f"u0 must be non-negative for the balanced chain (u = a^D with a >= 0); got {u0!r}")
    return _scalar_flow(lambda _t, u: _deep_balanced_rhs(u, s, D, tau), t_eval, u0, rtol, atol)


def deep_balanced_time(u0: ArrayLike, uf: ArrayLike, s: ArrayLike, D: int, tau: float = 1.0) -> np.ndarray:
    """Time for the balanced depth-D chain to go from u0 to uf (0 < u0, uf < s), eq. `eq-saxe-depth-time`:

        t = tau int_{u0}^{uf} du / (D u^(2-2/D) (s - u)),   computed in the variable ln u (a smooth integrand).

    D = 2 gives `riccati_time`; for D >= 3 and u0 -> 0, t_1/2 ~ tau u0^(-(D-2)/D) / ((D - 2) s).
    """
    D = as_int("D", D, minimum=1)
    u0, uf, s = broadcast("u0, uf and s", _real("u0", u0), _real("uf", uf), _positive("s", s))
    u0, uf = _inside("u0", u0, 0.0, s), _inside("uf", uf, 0.0, s)
    tau = as_positive("tau", tau)

    def one(a: float, b: float, sv: float) -> float:
        f = lambda v: 1.0 / (D * np.exp(v * (1.0 - 2.0 / D)) * (sv - np.exp(v)))  # noqa: E731
        return tau * integrate.quad(f, np.log(a), np.log(b), epsabs=0.0, epsrel=1e-12, limit=200)[0]

    return np.vectorize(one, otypes=[float])(u0, uf, s)


def chain_sharpness(s: ArrayLike, D: int) -> np.ndarray:
    """Largest Hessian eigenvalue of E = 1/2 (s - a_1 ... a_D)^2 at the balanced minimum a_j = s^(1/D) (Ch 2).

    The residual vanishes there, so the Hessian is g g^T with g_j = s / a_j = s^(1 - 1/D): one eigenvalue
    D s^(2 - 2/D) (along (1, ..., 1)), the rest 0. GD converges to it only if eta < 2 / (D s^(2 - 2/D)),
    eq. `eq-saxe-depth-eta`. Needs s > 0, D >= 1.
    """
    D = as_int("D", D, minimum=1)
    s = _positive("s", s)
    return D * s ** (2.0 - 2.0 / D)


def deep_half_time_large_D(u0: ArrayLike, s: ArrayLike, D: int, tau: float = 1.0) -> np.ndarray:
    """Half-time of the balanced depth-D chain in the limit D -> infinity at fixed u0, eq. `eq-saxe-depth-largeD`:

        t_1/2 = (tau / D) [ (1/u0 - 2/s) / s + ln((s - u0)/u0) / s^2 ],

    from tau du/dt = D u^2 (s - u) (u^(-2/D) -> 1); relative correction -2 (ln(1/u0) - 1) / D + O(D^-2).
    Needs 0 < u0 < s/2, D >= 1.
    """
    D = as_int("D", D, minimum=1)
    u0, s = broadcast("u0 and s", _real("u0", u0), _positive("s", s))
    u0 = _inside("u0", u0, 0.0, s / 2)
    return as_positive("tau", tau) / D * ((1.0 / u0 - 2.0 / s) / s + np.log((s - u0) / u0) / s**2)


def deep_half_time_small_u0(u0: ArrayLike, s: ArrayLike, D: int, tau: float = 1.0, terms: int = 60) -> np.ndarray:
    """Small-u0 expansion of the half-time of the balanced depth-D chain, D >= 3, the expansion of eq.
    `eq-saxe-depth-time`:

        t_1/2 = tau u0^(-(D-2)/D) / ((D-2) s) + C_D - tau u0^(2/D) / (2 s^2) + O(u0^(1 + 2/D)),
        C_D = tau / (D s) s^(p-1) sum_n 2^(-(n+p)) / (n+p) - tau (s/2)^(p-1) / ((D-2) s),   p = 2/D,

    from 1/(s - u) = 1/s + u/(s (s - u)) in eq. `eq-saxe-depth-time` (the series is int_0^1/2 x^(p-1)/(1-x) dx,
    truncated after `terms` terms: error < 2^-terms). Needs 0 < u0 < s, D >= 3.
    """
    D = as_int("D", D, minimum=3)
    u0, s = broadcast("u0 and s", _real("u0", u0), _positive("s", s))
    u0 = _inside("u0", u0, 0.0, s)
    tau = as_positive("tau", tau)
    p = 2.0 / D
    n = np.arange(as_int("terms", terms, minimum=1))
    series = np.sum(0.5 ** (n + p) / (n + p))
    C = tau / (D * s) * s ** (p - 1.0) * series - tau * (s / 2) ** (p - 1.0) / ((D - 2) * s)
    return tau * u0 ** (-(D - 2) / D) / ((D - 2) * s) + C - tau * u0**p / (2.0 * s**2)


def mode_strengths(W1: ArrayLike, W2: ArrayLike, U: ArrayLike, V: ArrayLike) -> np.ndarray:
    """Mode strengths u_alpha = (U^T W2 W1 V)_{alpha alpha}, alpha <= min(N1, N3), eq. `eq-saxe-modes`; batched."""
    W1, W2, U, V = (as_real_array(n, x) for n, x in (("W1", W1), ("W2", W2), ("U", U), ("V", V)))
    _check_chain(W1, W2, U, V)
    M = np.swapaxes(U, -1, -2) @ W2 @ W1 @ V
    return np.diagonal(M, axis1=-2, axis2=-1)


def effective_u0(W1: ArrayLike, W2: ArrayLike, U: ArrayLike, V: ArrayLike, svals: ArrayLike,
                 refined: bool = True) -> np.ndarray:
    """Effective Riccati initial conditions of modes from a small random init, eq. `eq-saxe-u0-eff` (Ch 2,
    `prop-saxe-gram-schmidt`).

    a^alpha = column alpha of W1 V, b^alpha = row alpha of U^T W2, c_alpha = (a^alpha + b^alpha) / 2 (the part that
    grows like e^{s t / tau}). Naive (refined=False): u0_alpha = ||c_alpha||^2. Refined: Gram-Schmidt in decreasing
    order of s_alpha, u0_alpha = ||P_perp(c_1..c_{alpha-1}) c_alpha||^2 (later modes grow only in the hidden
    directions earlier modes left free). Returns (..., r) in the order of `svals`; batched over leading axes.
    """
    W1, W2, U, V = (as_real_array(n, x) for n, x in (("W1", W1), ("W2", W2), ("U", U), ("V", V)))
    _check_chain(W1, W2, U, V)
    s = _real("svals", svals).ravel()
    refined = as_bool("refined", refined)
    r = s.size
    if r > min(W1.shape[-1], W2.shape[-2]):
        raise ValueError(f"svals has {r} values but there are only min(N1, N3) = {min(W1.shape[-1], W2.shape[-2])} "
                         "modes")
    if U.shape[-1] < r or V.shape[-1] < r:
        raise ValueError(f"U and V need a column per singular value (r = {r}); got U {U.shape}, V {V.shape}")
    a = (W1 @ V)[..., :, :r]                                   # (..., N2, r): columns a^alpha
    b = np.swapaxes((np.swapaxes(U, -1, -2) @ W2)[..., :r, :], -1, -2)   # (..., N2, r): columns b^alpha
    c = no_overflow("W1, W2, U and V", 0.5 * (a + b))
    if not refined:
        return no_overflow("W1, W2, U and V", np.sum(c**2, axis=-2))
    out = np.empty(c.shape[:-2] + (r,))
    basis: list[np.ndarray] = []                               # orthonormal (..., N2) vectors
    for alpha in np.argsort(-s, kind="stable"):
        v = c[..., :, alpha].copy()
        for q in basis:
            v -= np.sum(q * v, axis=-1, keepdims=True) * q
        norm = np.linalg.norm(v, axis=-1, keepdims=True)
        out[..., alpha] = norm[..., 0] ** 2
        basis.append(v / np.where(norm > 0, norm, 1.0))
    return no_overflow("W1, W2, U and V", out)


def gram_schmidt_delay(N2: int, alpha: ArrayLike, s: ArrayLike | None = None, eta: ArrayLike | None = None
                       ) -> np.ndarray:
    """Mean delay of mode `alpha` (1-based rank) from a Gaussian small init, by the Gram-Schmidt rule (Ch 2).

    With psi^alpha = (a^alpha + b^alpha) / 2 i.i.d. isotropic Gaussian in R^N2, the fraction of ||psi^alpha||^2 left
    after projecting out the alpha - 1 stronger modes is beta ~ Beta((N2 - alpha + 1) / 2, (alpha - 1) / 2), so
    E ln(||psi||^2 / mu~) = digamma(N2 / 2) - digamma((N2 - alpha + 1) / 2) (eq. `eq-saxe-delay-mean`). Without
    `s` and `eta` this logit deficit is returned; with them, the mean delay in GD steps behind the decoupled
    prediction, the deficit divided by 2 ln(1 + eta s) (eq. `eq-saxe-gd-half`). Broadcasts over alpha, s, eta.
    """
    n = as_int("N2", N2, minimum=1)
    a = as_steps("alpha", alpha)
    if np.any(a < 1) or np.any(a > n):
        raise ValueError(f"alpha must hold integers in [1, N2] = [1, {n}]; got {alpha!r}")
    deficit = special.digamma(n / 2) - special.digamma((n - a + 1) / 2)
    if (s is None) != (eta is None):
        raise TypeError("give both s and eta (for the delay in steps) or neither (for the logit deficit)")
    if s is None:
        return np.asarray(deficit, dtype=float)
    deficit, eta, s = broadcast("alpha, eta and s", deficit, _positive("eta", eta), _positive("s", s))
    return deficit / (2 * np.log1p(eta * s))


def balanced_matrix_modes(t: ArrayLike, svals: ArrayLike, Psi: ArrayLike, tau: float = 1.0) -> np.ndarray:
    """Mode strengths of the two-layer flow from a balanced start a^alpha = b^alpha = Psi[:, alpha] (Ch 2).

    On the balanced set the mode equations give tau dA/dt = A S - A A^T A for A = [a^1 ... a^r] (N2, r), so
    M = A^T A obeys the matrix Riccati equation tau dM/dt = S M + M S - 2 M^2 and N = M^{-1} the linear one
    tau dN/dt = 2 I - S N - N S, whence (eq. `eq-saxe-matrix-riccati`)

        M(t) = [e^{-S t / tau} M0^{-1} e^{-S t / tau} + S^{-1} (I - e^{-2 S t / tau})]^{-1},  M0 = Psi^T Psi,

    with S = diag(svals). Returns the strengths mu_alpha(t) = M(t)_{alpha alpha}, shape (len(t), r). Needs Psi of full
    column rank (r <= N2); no separation of the singular values is assumed.
    """
    s = _positive("svals", svals).ravel()
    P = _real("Psi", Psi)
    if P.ndim != 2 or P.shape[1] != s.size:
        raise ValueError(f"Psi must have shape (N2, r) with r = len(svals) = {s.size}; got {P.shape}")
    if P.shape[0] < s.size or np.linalg.matrix_rank(P) < s.size:
        raise ValueError("Psi must have full column rank (r <= N2 and independent columns)")
    tau, tt = as_positive("tau", tau), _real("t", t).ravel()
    if np.any(tt < 0):
        raise ValueError("t must be non-negative")
    M0inv, d, out = np.linalg.inv(P.T @ P), np.arange(s.size), np.empty((tt.size, s.size))
    for i in range(0, tt.size, 256):                                       # 256 times at once: small temporaries
        E = np.exp(-np.outer(tt[i:i + 256], s) / tau)                       # (T, r)
        N = E[:, :, None] * M0inv[None] * E[:, None, :]
        N[:, d, d] += (1.0 - E**2) / s
        out[i:i + 256] = np.diagonal(np.linalg.inv(N), axis1=-2, axis2=-1)
    return out


def half_times(steps: ArrayLike, modes: ArrayLike, svals: ArrayLike, frac: float = 0.5) -> np.ndarray:
    """First time each mode reaches u = frac * s, linearly interpolated between recorded steps (NaN if never).

    steps (K,), modes (K, ..., r) as recorded by the simulators, svals (r,). Returns (..., r). The interpolation
    error is O(record_every^2) times the curvature of u, far below a step for the record intervals the book uses.
    """
    steps, modes = _real("steps", steps).ravel(), _real("modes", modes)
    s = _positive("svals", svals).ravel()
    frac = as_positive("frac", frac)
    if modes.ndim < 1 or modes.shape[0] != steps.size or modes.shape[-1] != s.size:
        raise ValueError(f"modes must have shape (K, ..., r) with K = len(steps) = {steps.size} and r = len(svals) = "
                         f"{s.size}; got {modes.shape}")
    if not 0 < frac < 1:
        raise ValueError(f"frac must lie in (0, 1); got {frac!r}")
    y = modes / s - frac                                       # crosses zero upwards at the half-time
    hit = y >= 0
    first = np.argmax(hit, axis=0)                             # index of the first recorded step at or above
    found = np.take_along_axis(hit, first[None], 0)[0] & (first > 0)
    i = np.maximum(first, 1)
    y1, y0 = np.take_along_axis(y, i[None], 0)[0], np.take_along_axis(y, (i - 1)[None], 0)[0]
    t1, t0 = steps[i], steps[i - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = t0 + (t1 - t0) * (-y0) / (y1 - y0)
    return np.where(found, t, np.nan)


def check_effective_u0(fn: Callable[..., ArrayLike], seed: int = 0) -> None:
    """Checker for exercise `ex-saxe-gram-schmidt` (Ch 2): compare fn(W1, W2, U, V, svals) with `effective_u0`.

    Uses unbatched random small weights (N1, N2, N3) = (6, 10, 8) and singular values given in a shuffled order (so
    the Gram-Schmidt order must follow s, not the index). Raises AssertionError naming the first wrong mode.
    """
    fn = as_callable("fn", fn)
    rng = np.random.default_rng(as_seed("seed", seed))
    task = svd_task(6, 8, [3.0, 2.0, 1.0, 0.5, 0.25, 0.1], seed=seed)
    perm = rng.permutation(6)
    U = task.U.copy()
    U[:, :6] = U[:, perm]
    V, svals = task.V[:, perm], task.svals[perm]
    W1, W2 = 1e-3 * rng.standard_normal((10, 6)), 1e-3 * rng.standard_normal((8, 10))
    expected = effective_u0(W1, W2, U, V, svals)
    got = as_real_array("fn(W1, W2, U, V, svals)", fn(W1, W2, U, V, svals), finite=False)
    if got.shape != expected.shape:
        raise AssertionError(f"effective u0 must have shape {expected.shape} (one value per mode); got {got.shape}")
    bad = np.flatnonzero(~np.isclose(got, expected, rtol=1e-8, atol=0.0))
    if bad.size:
        i = int(bad[0])
        raise AssertionError(f"mode with s = {svals[i]:g} (index {i}): got {got[i]:.6g}, expected {expected[i]:.6g}"
                             " (Gram-Schmidt in decreasing order of s, u0 = squared norm of the projected c)")
    print(f"check_effective_u0: all {got.size} modes agree with the Gram-Schmidt effective initial strengths to 1e-8")

# ---------------------------------------------------------------------------------------------------------------
def _real(name: str, x: ArrayLike) -> np.ndarray:
    """A non-empty real finite array argument (see `core.as_real_array`)."""
    return as_real_array(name, x, nonempty=True)


def _positive(name: str, x: ArrayLike) -> np.ndarray:
    arr = as_real_array(name, x, nonempty=True)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be positive; got {x!r}")
    return arr


def _batch_shape(names: str, *arrays: np.ndarray | torch.Tensor) -> tuple[int, ...]:
    """The broadcast batch shape (all axes but the last two) of matrices, or a ValueError naming them."""
    try:
        return tuple(np.broadcast_shapes(*(tuple(a.shape[:-2]) for a in arrays)))
    except ValueError as err:
        raise ValueError(f"{names}: the batch axes must broadcast; got shapes "
                         f"{', '.join(str(tuple(a.shape)) for a in arrays)}") from err


def _check_layers(Sigma: np.ndarray | torch.Tensor, W1: np.ndarray | torch.Tensor, W2: np.ndarray | torch.Tensor
                  ) -> tuple[np.ndarray | torch.Tensor, ...]:
    """Sigma (..., N3, N1), W1 (..., N2, N1), W2 (..., N3, N2) must chain, with broadcasting batch axes."""
    if Sigma.ndim < 2 or W1.ndim < 2 or W2.ndim < 2 or W1.shape[-2] != W2.shape[-1] \
            or tuple(Sigma.shape[-2:]) != (W2.shape[-2], W1.shape[-1]):
        raise ValueError(f"shapes do not chain: Sigma {tuple(Sigma.shape)}, W1 {tuple(W1.shape)}, W2 "
                         f"{tuple(W2.shape)}; expected Sigma (N3, N1), W1 (N2, N1), W2 (N3, N2)")
    _batch_shape("Sigma, W1 and W2", Sigma, W1, W2)
    return Sigma, W1, W2


def _inside(name: str, x: ArrayLike, lo: float, hi: np.ndarray) -> np.ndarray:
    arr = as_real_array(name, x, nonempty=True)
    if not np.all((arr > lo) & (arr < hi)):
        raise ValueError(f"{name} must lie strictly between 0 and s; got {name}={x!r}, s={hi!r}")
    return arr


def _check_chain(W1: np.ndarray, W2: np.ndarray, U: np.ndarray, V: np.ndarray) -> None:
    if W1.ndim < 2 or W2.ndim < 2 or W1.shape[-2] != W2.shape[-1]:
        raise ValueError(f"W1 (N2, N1) and W2 (N3, N2) do not chain: W1 {W1.shape}, W2 {W2.shape}")
    if U.ndim < 2 or V.ndim < 2 or U.shape[-2] != W2.shape[-2] or V.shape[-2] != W1.shape[-1]:
        raise ValueError(f"U must have N3 = {W2.shape[-2]} rows (those of W2) and V N1 = {W1.shape[-1]} rows (the "
                         f"columns of W1); got U {U.shape}, V {V.shape}")
    _batch_shape("W1, W2, U and V", W1, W2, U, V)


from .deep_linear_sim import (  # noqa: E402  (re-export; the simulators need nothing from this module at import)
    crossing_step,
    decoupled_form,
    decoupled_init,
    flow_two_layer,
    gd_chains,
    small_random_init,
    train_chain,
    train_deep_linear,
    train_greedy_pretraining,
    train_shallow,
    train_two_layer,
)
