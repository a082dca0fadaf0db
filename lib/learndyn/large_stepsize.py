"""Large step sizes in logistic regression (Ch 7): the edge-of-stability phase, the stable phase and acceleration.

Setup (Ch 7, eq. `eq-wu-loss`): rows z_i = y_i x_i of Z (n, d) with ||z_i|| <= 1, separable with margin gamma by a
unit w_*; the **mean** logistic loss L(w) = (1/n) sum_i l(<w, z_i>), l(m) = log(1 + e^{-m}); GD
w_{t+1} = w_t - eta grad L(w_t) from w_0 = 0 with a constant step eta (t counts steps; no flow time here).

Theory (numpy, float64, broadcasting): `logistic_loss`, `logistic_grad` (stable: log-add-exp and expit),
`gradient_potential` (G(w) = mean |l'(m_i)|), `sharpness_logistic` (the top Hessian eigenvalue at w),
`smoothness` (beta = lambda_max(Z^T Z / n) / 4, eq. `eq-wu-smoothness`), `eos_average_bound` (Theorem
`thm-wu-eos`, eq. `eq-wu-eos-bound`), `gradient_potential_bound` (Theorem `thm-wu-potential`, eq. `eq-wu-potential`),
`exit_step_bound` (Theorem `thm-wu-exit`), `stable_rate_bound` and `stable_rate_lower` (Theorem `thm-wu-rate`),
`stable_entry` (the hypothesis of Lemma `thm-wu-stable`), `last_increase`, `max_margin`.
Simulators (torch, float64, batched over step sizes on a leading axis B, on `device`): `gd_logistic`, `rate_sweep`;
an independent reference (scipy's DOP853 ODE solver): `gradient_flow_logistic`.
Data: `narrow_margin_2d` (the chapter's small-margin data set), `digits_01` (scikit-learn's bundled digits).
Reference: Wu, Bartlett, Telgarsky & Yu, "Large stepsize gradient descent for logistic loss" (COLT 2024).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy import optimize, special

from . import implicit_bias
from .core import (
    DivergenceError,
    History,
    as_bool,
    as_callable,
    as_choice,
    as_int,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_seed,
    as_steps,
    broadcast,
    few_threads_if_small,
    get_device,
    loglog_slope,
    no_overflow,
)
from .datasets import load_digits

__all__ = [
    "narrow_margin_2d",
    "digits_01",
    "max_margin",
    "logistic_loss",
    "logistic_grad",
    "smoothness",
    "gd_logistic",
    "eos_average_bound",
    "gradient_potential",
    "gradient_potential_bound",
    "exit_step_bound",
    "stable_rate_bound",
    "stable_rate_lower",
    "sharpness_logistic",
    "stable_entry",
    "last_increase",
    "rate_sweep",
    "gradient_flow_logistic",
    "RATE_CONSTANT",
]

_NORM_TOL = 1e-12  # rows rescaled to norm 1 may come out at 1 + a few ulps
LOSS_PER_SLOPE = 2.0 * np.log(2.0)  # sup_{m >= 0} l(m) / |l'(m)|, attained at m = 0 (Ch 7, eq. `eq-wu-loss-slope`)
LEMMA_COEF = 1.0 - np.exp(0.5) / 4.0  # the decrease coefficient of Lemma `thm-wu-stable`
RATE_CONSTANT = LEMMA_COEF / LOSS_PER_SLOPE**2  # a = 0.3059 of Theorem `thm-wu-rate`; 1/a = 3.27


# --- data -------------------------------------------------------------------------------------------------------
def narrow_margin_2d(n: int = 32, gamma: float = 0.05, spread: float = 0.02, seed: int = 0) -> np.ndarray:
    """The chapter's separable 2-D data set with a small margin (Ch 7); rows z_i = y_i x_i, shape (n, 2).

    z_i = (gamma + |N(0, spread^2)|, b_i) with b_i ~ U[-1, 1] sqrt(1 - gamma^2), each row then divided by
    max(1, ||z_i||) so that ||z_i|| <= 1. The unit vector e_1 separates the data with margin close to gamma; the
    max margin gamma_* (see `max_margin`) is slightly above gamma. The second coordinate, orthogonal to the
    separating direction, is where large steps oscillate.
    """
    n = as_int("n", n, minimum=2)
    gamma = as_positive("gamma", gamma)
    if gamma >= 1:
        raise ValueError(f"gamma (the margin) must be in (0, 1) for rows of norm <= 1; got {gamma!r}")
    spread = as_nonnegative("spread", spread)
    rng = np.random.default_rng(as_seed("seed", seed))
    first = gamma + np.abs(rng.normal(0.0, float(spread), size=n))
    second = rng.uniform(-1.0, 1.0, size=n) * np.sqrt(1.0 - gamma**2)
    Z = np.stack([first, second], axis=1)
    return Z / np.maximum(1.0, np.linalg.norm(Z, axis=1, keepdims=True))


def digits_01(center: bool = True) -> np.ndarray:
    """Digits 0 (label -1) against 1 (label +1) of scikit-learn's bundled 8x8 digits, as rows z_i = y_i x_i.

    Shape (360, 64). With `center`, the mean image is subtracted first (as in Ch 6); the pixels are then divided by
    the largest row norm, so ||z_i|| <= 1 (Ch 7, real data). No download: the data set ships with scikit-learn.
    """
    center = as_bool("center", center)
    X, y = load_digits(n_class=2)
    if center:
        X = X - X.mean(axis=0)
    X = X / np.linalg.norm(X, axis=1).max()
    return np.where(y == 1, 1.0, -1.0)[:, None] * X


def max_margin(Z: ArrayLike) -> tuple[np.ndarray, float]:
    """The max-margin direction and margin: w_* = argmax_{||w|| = 1} min_i <w, z_i>, gamma = min_i <w_*, z_i>.

    The hard-margin SVM of Chapter 5 (`implicit_bias.max_margin`: SLSQP with an exact refinement on the support),
    returned as a unit vector and its margin. Raises ValueError when Z is not linearly separable.
    """
    Z = _as_data(Z, separable=True)
    mm = implicit_bias.max_margin(Z)
    w_star = mm.w_hat / np.linalg.norm(mm.w_hat)
    return w_star, float(np.min(Z @ w_star))


# --- theory (numpy) ---------------------------------------------------------------------------------------------
def logistic_loss(Z: ArrayLike, w: ArrayLike) -> np.ndarray | float:
    """Mean logistic loss L(w) = (1/n) sum_i log(1 + exp(-<w, z_i>)), eq. `eq-wu-loss` (Ch 7).

    Computed as logaddexp(0, -m), exact for every margin m (no overflow at m = -1e6, no underflow to 0 before
    exp(-m) does). Z: (..., n, d); w: (..., d); leading axes broadcast (matmul rules). Returns a float for a
    single (Z, w), else an array of the broadcast batch shape.
    """
    Z = _as_data(Z)
    w = _as_weights(Z, w)
    out = np.logaddexp(0.0, -_margins(Z, w)).mean(axis=-1)
    return float(out) if out.ndim == 0 else out


def logistic_grad(Z: ArrayLike, w: ArrayLike) -> np.ndarray:
    """Gradient of the mean logistic loss, grad L(w) = (1/n) sum_i l'(<w, z_i>) z_i with l'(m) = -expit(-m).

    Eq. `eq-wu-grad` (Ch 7). Stable for every margin (scipy's expit). Shapes as in `logistic_loss`; returns
    (..., d).
    """
    Z = _as_data(Z)
    w = _as_weights(Z, w)
    s = special.expit(-_margins(Z, w))  # |l'(m_i)|, shape (..., n)
    return -(s[..., None, :] @ Z)[..., 0, :] / Z.shape[-2]


def smoothness(Z: ArrayLike) -> float | np.ndarray:
    """The global smoothness of the mean logistic loss, beta = lambda_max(Z^T Z / n) / 4, eq. `eq-wu-smoothness`.

    Since 0 < l'' <= 1/4, the Hessian (1/n) sum_i l''(m_i) z_i z_i^T is at most (1/4) Z^T Z / n, with equality at
    w = 0: beta is the largest sharpness the loss ever has. Classical GD analysis needs eta < 2 / beta.
    Z: (..., n, d); returns a float, or an array for batched Z.
    """
    Z = _as_data(Z)
    lam = np.linalg.eigvalsh(no_overflow("Z", np.swapaxes(Z, -1, -2) @ Z / Z.shape[-2]))[..., -1]
    out = lam / 4.0
    return float(out) if out.ndim == 0 else out


def eos_average_bound(t: ArrayLike, eta: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """Theorem `thm-wu-eos` (eq. `eq-wu-eos-bound`): for every step size eta > 0 and t >= 1 with gamma^2 eta t >= 1,

        (1/t) sum_{k<t} L(w_k) <= [1 + ln^2(gamma^2 eta t) + eta^2 / 4] / (gamma^2 eta t),

    for GD from w_0 = 0 on data with ||z_i|| <= 1 separated with margin gamma by a unit vector. Where
    gamma^2 eta t < 1 the comparator of the proof is not available and the value is +inf (no bound).
    Arguments broadcast; gamma in (0, 1].
    """
    t, eta, gamma = _bound_args(t, eta, gamma)
    x = gamma**2 * eta * t
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = (1.0 + np.log(x) ** 2 + eta**2 / 4.0) / x
    return np.where(x >= 1.0, bound, np.inf)


def gradient_potential(Z: ArrayLike, w: ArrayLike) -> np.ndarray | float:
    """G(w) = (1/n) sum_i |l'(<w, z_i>)| = mean expit(-m_i), eq. `eq-wu-gradbound` (Ch 7).

    The "gradient potential": ||grad L(w)|| <= G(w) <= min{1, L(w)} for rows of norm <= 1. Shapes as in
    `logistic_loss`.
    """
    Z = _as_data(Z)
    w = _as_weights(Z, w)
    out = special.expit(-_margins(Z, w)).mean(axis=-1)
    return float(out) if out.ndim == 0 else out


def sharpness_logistic(Z: ArrayLike, w: ArrayLike) -> np.ndarray | float:
    """The sharpness (top Hessian eigenvalue) of the mean logistic loss at w: lambda_max((1/n) Z^T D Z).

    D = diag(l''(m_i)) with l''(m) = expit(m) expit(-m) (Ch 7, eq. `eq-wu-selfbound`); at w = 0 it is `smoothness`.
    Shapes as in `logistic_loss` (Z (n, d), w (..., d)); returns a float or an array of the batch shape.
    """
    Z = _as_data(Z)
    w = _as_weights(Z, w)
    m = _margins(Z, w)
    d2 = special.expit(m) * special.expit(-m)  # (..., n)
    H = np.swapaxes(Z, -1, -2) @ (d2[..., :, None] * Z) / Z.shape[-2]
    out = np.linalg.eigvalsh(H)[..., -1]
    return float(out) if out.ndim == 0 else out


def gradient_potential_bound(t: ArrayLike, eta: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """Theorem `thm-wu-potential` (eq. `eq-wu-potential`): for GD from w_0 = 0 with any constant step eta > 0,

        sum_{k<t} G(w_k) <= [(eta + ln(gamma^2 eta t))^2 + 2] / (gamma^2 eta^2)      whenever gamma^2 eta t >= 1,

    from the split comparator with u_2 = (eta / gamma) w_* (twice that of Theorem `thm-wu-eos`). For
    eta >> ln(gamma^2 eta t) the total is about 1 / gamma^2: the perceptron scale. +inf where gamma^2 eta t < 1.
    Arguments broadcast; gamma in (0, 1].
    """
    t, eta, gamma = _bound_args(t, eta, gamma)
    x = gamma**2 * eta * t
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = ((eta + np.log(x)) ** 2 + 2.0) / (gamma**2 * eta**2)
    return np.where(x >= 1.0, bound, np.inf)


def exit_step_bound(eta: float, gamma: float, n: int) -> int:
    """Theorem `thm-wu-exit`: the smallest t with t eps > B(t) = `gradient_potential_bound`(t, eta, gamma).

    Here eps = min{1/(4 ln2 eta), 1/(2n)}.

    At most B(t) / eps of the steps k < t have G(w_k) > eps, so some k < t has G(w_k) <= eps; there every margin is
    >= 0 and L(w_k) <= 2 ln2 G(w_k) <= min{1/(2 eta), ln2 / n}: GD has entered the stable phase (the strong entry of
    `stable_entry` with n) before step t. For large eta the value is about max{4 ln2 eta, 2n} / gamma^2.
    """
    eta, gamma = as_positive("eta", eta), as_positive("gamma", gamma)
    if gamma > 1:
        raise ValueError(f"gamma (margin) must be in (0, 1] for rows of norm <= 1; got {gamma!r}")
    n = as_int("n", n, minimum=1)
    eps = min(1.0 / (2.0 * LOSS_PER_SLOPE * eta), 1.0 / (2.0 * n))

    def excess(t: np.ndarray) -> np.ndarray:
        return t * eps - gradient_potential_bound(t, eta, gamma)

    lo = max(1, int(np.ceil(1.0 / (gamma**2 * eta))))  # the bound needs gamma^2 eta t >= 1
    if excess(np.array(float(lo))) > 0:
        return lo
    grid = np.unique(np.geomspace(lo, lo * 1e15, 4000).astype(np.int64))
    ok = np.flatnonzero(excess(grid.astype(float)) > 0)
    if not ok.size:  # pragma: no cover - eps t grows linearly, B(t) like ln^2 t
        raise ValueError(f"no exit certificate found below t = {grid[-1]:.3g}")
    hi, low = int(grid[ok[0]]), int(grid[max(ok[0] - 1, 0)])
    while hi - low > 1:  # excess is convex in t beyond its minimum: one sign change in (low, hi]
        mid = (low + hi) // 2
        if excess(np.array(float(mid))) > 0:
            hi = mid
        else:
            low = mid
    return hi


def stable_rate_bound(t: ArrayLike, L_s: ArrayLike, eta: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """Theorem `thm-wu-rate` (upper bound): L(w_{s+t}) <= 1 / (1/L(w_s) + a gamma^2 eta t), a = `RATE_CONSTANT`.

    Valid for separable data (margin gamma, rows of norm <= 1) once L(w_s) <= min{1/(2 eta), ln2 / n}; hence
    L(w_{s+t}) <= 3.27 / (gamma^2 eta t). Arguments broadcast.
    """
    t, eta, gamma = _bound_args(t, eta, gamma)
    t, L_s, eta, gamma = broadcast("t, L_s, eta and gamma", t, _positive_array("L_s", L_s), eta, gamma)
    return 1.0 / (1.0 / L_s + RATE_CONSTANT * gamma**2 * eta * t)


def stable_rate_lower(t: ArrayLike, L_s: ArrayLike, eta: ArrayLike) -> np.ndarray:
    """Theorem `thm-wu-rate` (lower bound): L(w_{s+t}) >= 1 / (1/L(w_s) + eta t / (1 - eta L(w_s))).

    Valid for every data set with rows of norm <= 1 once eta L(w_s) <= 1/2 (convexity and ||grad L|| <= L). As
    t -> infinity, eta t L(w_{s+t}) >= 1 - o(1): no constant step size beats Theta(1/(eta t)). Arguments broadcast.
    """
    t = as_real_array("t", t, nonempty=True)
    if np.any(t < 0):
        raise ValueError("t (number of steps) must be >= 0")
    t, eta, L_s = broadcast("t, eta and L_s", t, _positive_array("eta", eta), _positive_array("L_s", L_s))
    if np.any(eta * L_s > 0.5):
        raise ValueError("eta * L_s must be <= 1/2 (the stable-phase hypothesis)")
    return 1.0 / (1.0 / L_s + eta * t / (1.0 - eta * L_s))


def stable_entry(losses: ArrayLike, eta: float, c: float = 0.5, n: int | None = None) -> int | None:
    """The first step s with eta L(w_s) <= c, the hypothesis of Lemma `thm-wu-stable` (c = 1/2), or None.

    With `n` (the number of data points) the stronger condition L(w_s) <= min{c / eta, ln2 / n} of Theorem
    `thm-wu-rate` (all margins positive as well). From s on, the lemma guarantees a monotone decrease: s is a
    *certificate*, reached well after the loss has stopped increasing (see `last_increase`).
    `losses`: the 1-D loss history L(w_0), ..., L(w_T) of one run.
    """
    losses = as_real_array("losses", losses, ndim=1, nonempty=True)
    eta, c = as_positive("eta", eta), as_positive("c", c)
    level = c / eta if n is None else min(c / eta, np.log(2.0) / as_int("n", n, minimum=1))
    hits = np.flatnonzero(losses <= level)
    return int(hits[0]) if hits.size else None


def last_increase(losses: ArrayLike) -> int:
    """The last step t with L(w_t) > L(w_{t-1}) in a 1-D loss history (0 when the loss never increases).

    The end of the oscillations, as opposed to the stable-phase certificate `stable_entry` (Ch 7).
    """
    losses = as_real_array("losses", losses, ndim=1, nonempty=True)
    up = np.flatnonzero(np.diff(losses) > 0)
    return int(up[-1] + 1) if up.size else 0


# --- simulators (torch) -----------------------------------------------------------------------------------------
def gd_logistic(Z: ArrayLike, eta: float | Sequence[float] | np.ndarray | torch.Tensor, steps: int,
                w0: ArrayLike | None = None, device: str | torch.device | None = None,
                record: Literal["all", "loss"] = "all") -> History:
    """GD on the mean logistic loss, batched over B step sizes: w_{t+1} = w_t - eta_b grad L(w_t), t = 0..steps-1;
    `eta` is one step size or a batch (B,) of them.

    float64 torch on `device` (default: CUDA when present). Z (n, d) must satisfy the chapter's assumptions
    (||z_i|| <= 1, linearly separable; eq. `eq-wu-assumptions`); w0 defaults to 0.
    Records, with time leading (History convention), steps 0..steps:
      "loss" (steps+1, B), "grad_norm2" (steps+1, B) = ||grad L(w_t)||^2, "G" (steps+1, B) = G(w_t)
      (`gradient_potential`), and with record="all" also "w" (steps+1, B, d).
    final: "w" (B, d), "etas" (B,). Raises DivergenceError (naming the step) if a loss is not finite.
    """
    Z = _as_data(Z, separable=True, unit_ball=True)
    n, d = Z.shape
    eta = _as_eta(eta)
    T = as_int("steps", steps, minimum=0)
    record = as_choice("record", record, ("all", "loss"))
    dev = get_device(device)
    B = eta.size
    Zt = torch.as_tensor(Z, dtype=torch.float64, device=dev)  # (n, d)
    W = _initial_weights(w0, B, d).to(dev)  # (B, d)
    eta_t = torch.as_tensor(eta, dtype=torch.float64, device=dev)[:, None]  # (B, 1)
    losses = torch.empty(T + 1, B, dtype=torch.float64, device=dev)
    gn2 = torch.empty(T + 1, B, dtype=torch.float64, device=dev)
    gpot = torch.empty(T + 1, B, dtype=torch.float64, device=dev)
    ws = torch.empty(T + 1, B, d, dtype=torch.float64, device=dev) if record == "all" else None
    zero = torch.zeros((), dtype=torch.float64, device=dev)
    with few_threads_if_small(dev, B * n * d, limit=200_000):
        W = _gd_loop(Zt, W, eta_t, T, losses, gn2, gpot, ws, zero)
    loss_np = losses.cpu().numpy()
    _raise_if_diverged(loss_np, eta)
    metrics = {"loss": loss_np, "grad_norm2": gn2.cpu().numpy(), "G": gpot.cpu().numpy()}
    if ws is not None:
        metrics["w"] = ws.cpu().numpy()
    return History(np.arange(T + 1), metrics, {"w": W.cpu().numpy(), "etas": eta})


def rate_sweep(Z: ArrayLike, budgets: Sequence[int], eta_fn: Callable[[int], float],
               device: str | torch.device | None = None) -> tuple[np.ndarray, float]:
    """Final losses L(w_T) for budgets T in `budgets` (numbers of steps), each run with its own step eta_fn(T), and
    their log-log slope.

    All budgets run in one batch of max(budgets) steps (the run with budget T is read at step T), so the cost is
    one run of the longest budget. Returns (L_T of shape (len(budgets),), slope of log L_T against log T). Ch 7:
    slope close to -1 for a fixed classical step and close to -2 for eta = T/40 (Theorem `thm-wu-accel`).
    """
    Ts = as_steps("budgets", budgets)
    if Ts.ndim != 1 or Ts.size < 2:
        raise ValueError(f"budgets must be a 1-D sequence of at least two integer budgets; got {Ts!r}")
    if np.any(Ts < 1) or np.any(np.diff(Ts) <= 0):
        raise ValueError(f"budgets must be increasing budgets >= 1; got {Ts.tolist()}")
    eta_fn = as_callable("eta_fn", eta_fn)
    etas = np.array([as_positive(f"eta_fn({T})", eta_fn(int(T))) for T in Ts])
    hist = gd_logistic(Z, etas, int(Ts.max()), device=device, record="loss")
    L_T = hist["loss"][Ts, np.arange(Ts.size)]
    return L_T, loglog_slope(Ts, L_T)


def gradient_flow_logistic(Z: ArrayLike, w0: ArrayLike, tau: ArrayLike, rtol: float = 1e-11) -> np.ndarray:
    """The gradient flow dw/dtau = -grad L(w) from w0, at the (increasing) flow times `tau`: shape (len(tau), d).

    scipy's DOP853 (an explicit Runge-Kutta method of order 8 with step-size control) on the numpy gradient of
    eq. `eq-wu-grad`: an integrator that shares no code with the torch GD of `gd_logistic`. GD with step eta after
    the stable entry tracks this flow at tau = eta t (Ch 7).
    """
    from scipy.integrate import solve_ivp  # local import: only this reference needs it

    Z = _as_data(Z)
    if Z.ndim != 2:
        raise ValueError(f"Z must be one data set of shape (n, d); got shape {Z.shape}")
    w0 = _as_weights(Z, w0, "w0")
    if w0.ndim != 1:
        raise ValueError(f"w0 must have shape ({Z.shape[1]},); got {w0.shape}")
    tau = np.atleast_1d(as_real_array("tau", tau, nonempty=True))
    if tau.ndim != 1 or np.any(tau < 0) or np.any(np.diff(tau) <= 0):
        raise ValueError("tau (flow times) must be >= 0 and increasing")
    rtol = as_positive("rtol", rtol)
    if tau[-1] == 0:                                   # only tau = 0 asked for: the start (solve_ivp needs a span)
        return w0[None].copy()
    n = Z.shape[0]
    sol = solve_ivp(lambda _, w: (special.expit(-(Z @ w)) @ Z) / n, (0.0, float(tau[-1])), w0, method="DOP853",
                    t_eval=tau, rtol=rtol, atol=rtol * 1e-3)
    if not sol.success:  # the field is smooth and bounded by max ||z_i||: only a huge Z gets here
        raise DivergenceError(f"gradient_flow_logistic: the ODE solver failed ({sol.message}); is Z huge?")
    return sol.y.T


# --- helpers ----------------------------------------------------------------------------------------------------
def _as_data(Z: ArrayLike, separable: bool = False, unit_ball: bool = False) -> np.ndarray:
    Z = as_real_array("Z", Z)
    if Z.ndim < 2 or Z.shape[-2] == 0 or Z.shape[-1] == 0:
        raise ValueError(f"Z must hold rows z_i = y_i x_i, shape (n, d) with n, d >= 1; got shape {Z.shape}")
    if unit_ball and np.linalg.norm(Z, axis=-1).max() > 1.0 + _NORM_TOL:
        raise ValueError(f"Z must have rows of norm <= 1 (the theory assumes it); largest row norm is "
                         f"{np.linalg.norm(Z, axis=-1).max():.6g}")
    if separable:
        if Z.ndim != 2:
            raise ValueError(f"Z must be one data set of shape (n, d); got shape {Z.shape}")
        if _separating_direction(Z) is None:
            raise ValueError("Z must be linearly separable (some w with <w, z_i> > 0 for all i); it is not")
    return Z


def _as_weights(Z: np.ndarray, w: ArrayLike, name: str = "w") -> np.ndarray:
    w = as_real_array(name, w, nonempty=True)
    if w.ndim == 0 or w.shape[-1] != Z.shape[-1]:
        raise ValueError(f"{name} must have shape (..., {Z.shape[-1]}) to match Z {Z.shape}; got {w.shape}")
    try:
        np.broadcast_shapes(Z.shape[:-2], w.shape[:-1])
    except ValueError as err:
        raise ValueError(f"the batch axes of Z {Z.shape} and {name} {w.shape} must broadcast") from err
    return w


def _bound_args(t: ArrayLike, eta: ArrayLike, gamma: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t, eta, gamma = (as_real_array(n, x, nonempty=True) for n, x in (("t", t), ("eta", eta), ("gamma", gamma)))
    if np.any(eta <= 0):
        raise ValueError(f"eta (step size) must be positive; got {eta}")
    if np.any(gamma <= 0) or np.any(gamma > 1):
        raise ValueError(f"gamma (margin) must be in (0, 1] for rows of norm <= 1; got {gamma}")
    if np.any(t < 0):
        raise ValueError("t (number of steps) must be >= 0")
    t, eta, gamma = broadcast("t, eta and gamma", t, eta, gamma)
    return t, eta, gamma


def _positive_array(name: str, value: ArrayLike) -> np.ndarray:
    arr = as_real_array(name, value, nonempty=True)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be positive; got {arr}")
    return arr


def _margins(Z: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (Z @ w[..., None])[..., 0]  # (..., n)


def _separating_direction(Z: np.ndarray) -> np.ndarray | None:
    """A v with Z v >= 1 (a linear program), or None when Z is not separable."""
    n, d = Z.shape
    res = optimize.linprog(np.zeros(d), A_ub=-Z, b_ub=-np.ones(n), bounds=[(None, None)] * d, method="highs")
    return res.x if res.status == 0 else None


def _as_eta(eta: float | Sequence[float] | np.ndarray | torch.Tensor) -> np.ndarray:
    eta = np.atleast_1d(as_real_array("eta", eta))
    if eta.ndim != 1 or eta.size == 0:
        raise ValueError(f"eta must be a step size or a 1-D sequence of step sizes; got shape {eta.shape}")
    if np.any(eta <= 0):
        raise ValueError(f"eta (step sizes) must be positive; got {eta.tolist()}")
    return eta


def _initial_weights(w0: ArrayLike | None, B: int, d: int) -> torch.Tensor:
    if w0 is None:
        return torch.zeros(B, d, dtype=torch.float64)
    w = as_real_array("w0", w0)
    if w.shape not in ((d,), (B, d)):
        raise ValueError(f"w0 must have shape ({d},) or ({B}, {d}); got shape {w.shape}")
    return torch.as_tensor(np.broadcast_to(w, (B, d)).copy(), dtype=torch.float64)


def _gd_loop(Zt: torch.Tensor, W: torch.Tensor, eta_t: torch.Tensor, T: int, losses: torch.Tensor,
             gn2: torch.Tensor, gpot: torch.Tensor, ws: torch.Tensor | None, zero: torch.Tensor,
             chunk_entries: int = 1 << 20) -> torch.Tensor:
    """The GD iteration of `gd_logistic`; fills losses, gn2, gpot (and ws) in place, returns the final weights.

    Per step only what the next step needs runs (minus the margins, |l'(m_i)|, the gradient, the update, all into
    preallocated buffers); the recorded reductions (mean log-add-exp, mean |l'|, ||grad||^2) are taken afterwards on
    chunks of steps at once, at most `chunk_entries` margins per chunk. The same operations on the same operands as
    a step-by-step loop, so the same numbers bit for bit: only the per-step operation count (the cost of these small
    problems) is lower.
    """
    B, (n, d) = W.shape[0], Zt.shape
    Zneg = -Zt  # negating an operand of a product is exact: W @ Zneg.T is -(W @ Zt.T) bit for bit
    ZnegT = Zneg.T  # the same (transposed) layout as before, so the same BLAS kernel and summation order
    K = max(1, min(T + 1, chunk_entries // (B * n)))
    negM = torch.empty(K, B, n, dtype=W.dtype, device=W.device)  # minus the margins, per step of the chunk
    slope = torch.empty_like(negM)  # |l'(m_i)| = sigmoid(-m_i)
    grad = torch.empty(K, B, d, dtype=W.dtype, device=W.device)
    per_step = list(zip(negM.unbind(0), slope.unbind(0), grad.unbind(0), strict=True))  # the K steps' slots
    w_at = ws.unbind(0) if ws is not None else None
    if w_at is not None:
        w_at[0].copy_(W)
    for t0 in range(0, T + 1, K):
        m = min(K, T + 1 - t0)
        for t, (negM_t, slope_t, grad_t) in zip(range(t0, t0 + m), per_step[:m], strict=True):
            if w_at is not None:
                W = w_at[t]
            torch.mm(W, ZnegT, out=negM_t)
            torch.sigmoid(negM_t, out=slope_t)
            torch.mm(slope_t, Zneg, out=grad_t)
            grad_t.div_(n)
            if t < T:
                W = W - eta_t * grad_t if w_at is None else torch.sub(W, eta_t * grad_t, out=w_at[t + 1])
        losses[t0:t0 + m] = torch.logaddexp(zero, negM[:m]).mean(dim=2)
        gpot[t0:t0 + m] = slope[:m].mean(dim=2)
        gn2[t0:t0 + m] = (grad[:m] * grad[:m]).sum(dim=2)
    return W


def _raise_if_diverged(losses: np.ndarray, eta: np.ndarray) -> None:
    bad = ~np.isfinite(losses)
    if bad.any():
        step, b = np.argwhere(bad)[0]
        raise DivergenceError(f"the logistic loss is no longer finite at step {step} (eta={eta[b]:g})")
