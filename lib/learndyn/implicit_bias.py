"""Implicit bias of gradient descent on linearly separable data (Ch 5; Soudry, Hoffer, Nacson, Gunasekar & Srebro 2018).

Conventions (Ch 5). Data enter only through z_i = y_i x_i, the rows of Z (n, d); the margin of w on z_i is
m_i = <w, z_i>. The loss is a sum L(w) = sum_i l(m_i) (`reduction="sum"`, as in Soudry et al.) or a mean
(`reduction="mean"`, as in Ch 7; GD on the mean with step eta is GD on the sum with step eta / n).
Exponential loss l(m) = exp(-m), computed directly; logistic loss l(m) = log(1 + exp(-m)), computed stably.
Gradient-flow bounds (eq-soudry-loss-bounds, eq-soudry-norm-bounds) are in flow time t; the asymptotic expansion
w(k) = w_hat ln k + w_tilde + o(1) (eq-soudry-asymptotics) is in GD steps k (flow time is t = eta k).
Theory: numpy float64. Simulator: torch, batched over step sizes on a leading axis B, float64, `device=`.
The max-margin SVM (`max_margin`, `kkt_residuals`, `second_margin`) lives in `learndyn.svm` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch
from numpy.typing import ArrayLike

from .core import (
    History,
    as_bool,
    as_choice,
    as_int,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_seed,
    as_steps,
    check_finite,
    few_threads_if_small,
    get_device,
    no_overflow,
)
from .svm import (  # re-export: the max-margin direction the theory is written in
    MaxMargin,
    _as_Z,
    _check_mm,
    _mm_type,
    kkt_residuals,
    max_margin,
    second_margin,
)

__all__ = [
    "separable_with_svs",
    "wedge_dataset",
    "to_xy",
    "check_unit_ball",
    "MaxMargin",
    "max_margin",
    "kkt_residuals",
    "second_margin",
    "residual_matrix",
    "residual_exponent",
    "expansion_constants",
    "stability_limit",
    "descent_step_limit",
    "gd_separable",
    "flow_log_time",
    "normalized_gd",
    "soudry_w_tilde",
    "asymptotic_w",
    "gf_loss_bounds",
    "gf_norm_bounds",
    "gd_loss_bound",
    "margin_bounds",
]


# ---------------------------------------------------------------------------------------------------- data
def separable_with_svs(n: int = 24, svs: ArrayLike = ((0.45, -0.1), (0.15, 0.35)), margin_ratio: float = 2.0,
                       seed: int = 0, exact: bool = False) -> np.ndarray:
    """Z (n, d) whose max-margin solution is fixed by the support vectors `svs` (the first rows of Z).

    The remaining n - len(svs) rows are drawn uniformly from the unit ball subject to <w_hat, z> >= margin_ratio,
    where w_hat is the SVM of `svs` alone; w_hat stays feasible, hence optimal, for the whole set. So every
    non-support margin is at least `margin_ratio` times the SVM margin (Ch 5, the "fast" dataset). With
    `exact=True` the first non-support row has margin exactly `margin_ratio` (margin_ratio w_hat / ||w_hat||^2 plus
    a random component orthogonal to w_hat, half-way to the unit sphere), so `second_margin` is exactly
    `margin_ratio` (needs n > len(svs)).
    """
    n = as_int("n", n, minimum=1)
    margin_ratio = as_positive("margin_ratio", margin_ratio)
    exact = as_bool("exact", exact)
    S = np.atleast_2d(as_real_array("svs", svs, nonempty=True))
    if S.ndim != 2 or S.shape[0] > n:
        raise ValueError(f"svs must be a (k, d) array with k <= n = {n}; got shape {S.shape}")
    if np.any(np.linalg.norm(S, axis=1) > 1.0):
        raise ValueError("svs must lie in the unit ball (||z_i|| <= 1), as the bounds of Ch 5 require")
    mm = max_margin(S)
    if len(mm.support) < len(S) or np.any(mm.alpha <= 0):
        raise ValueError("svs are not all support vectors with positive multipliers of their own max-margin problem")
    if margin_ratio < 1.0 or margin_ratio * mm.gamma >= 1.0:
        raise ValueError(f"margin_ratio must lie in [1, 1/gamma) = [1, {1 / mm.gamma:.4g}) so points in the unit "
                         f"ball can have it; got {margin_ratio}")
    rng = np.random.default_rng(as_seed("seed", seed))
    rows: list[np.ndarray] = []
    for _ in range(10_000):
        cand = _uniform_ball(rng, 4 * (n - len(S)) + 16, S.shape[1])
        rows += list(cand[cand @ mm.w_hat >= margin_ratio])
        if len(rows) >= n - len(S):
            break
    else:  # pragma: no cover - the region has positive volume, so this needs absurd parameters
        raise ValueError("could not sample points with the requested margin_ratio; lower it")
    rest = np.asarray(rows[: n - len(S)]).reshape(-1, S.shape[1])
    if exact:
        if len(rest) == 0:
            raise ValueError("exact=True needs n > len(svs): a row to put at the second margin")
        on_axis = margin_ratio * mm.w_hat / (mm.w_hat @ mm.w_hat)  # margin exactly margin_ratio
        side = rng.standard_normal(S.shape[1])
        side -= (side @ mm.w_hat) / (mm.w_hat @ mm.w_hat) * mm.w_hat
        room = np.sqrt(max(0.0, 1.0 - on_axis @ on_axis))  # stay in the unit ball; off the w_hat axis so that
        rest[0] = on_axis + (0.5 * room / max(np.linalg.norm(side), 1e-300)) * side  # it pushes both ways
    return np.vstack([S, rest])


def wedge_dataset(n: int = 30, seed: int = 1) -> np.ndarray:
    """A random "slow" Z (n, 2): points in a narrow wedge, rescaled so the largest row has norm exactly 1.

    Many points sit just behind the support vectors, so the second-smallest margin is close to the SVM margin
    and the asymptotics of eq-soudry-asymptotics set in slowly (Ch 5, "A slow dataset"); see `residual_exponent`.
    """
    n = as_int("n", n, minimum=3)
    rng = np.random.default_rng(as_seed("seed", seed))
    angle = rng.uniform(0.15, 0.85, n)
    radius = rng.uniform(0.5, 1.0, n)
    Z = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return Z / np.linalg.norm(Z, axis=1).max()


def to_xy(Z: ArrayLike, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random labels y_i = +-1 and inputs x_i = y_i z_i (for plotting a classification problem); y_i x_i = z_i."""
    Z = _as_Z(Z)
    y = np.random.default_rng(as_seed("seed", seed)).choice([-1.0, 1.0], size=Z.shape[0])
    return y[:, None] * Z, y


def check_unit_ball(Z: ArrayLike, rescale: bool = False) -> np.ndarray:
    """Z itself if every row has ||z_i|| <= 1 (the bounds of eq-soudry-self-bounding need it).

    Otherwise raise ValueError, or, only when `rescale=True`, return Z divided by its largest row norm.
    """
    Z = _as_Z(Z)
    rescale = as_bool("rescale", rescale)
    top = float(np.linalg.norm(Z, axis=1).max())
    if top <= 1.0 + 1e-12:
        return Z
    if not rescale:
        raise ValueError(f"Z has a row of norm {top:.6g} > 1; the bounds need ||z_i|| <= 1 (pass rescale=True to "
                         "divide Z by its largest row norm)")
    return Z / top


# ------------------------------------------------------------------------------------------- the SVM


# ---------------------------------------------------------------------------------------------- theory
def soudry_w_tilde(Z: ArrayLike, mm: MaxMargin, eta: ArrayLike,
                   reduction: Literal["sum", "mean"] = "sum") -> np.ndarray:
    """The limit w_tilde of the residual w(k) - w_hat ln k of GD (eq-soudry-w-tilde), k counting steps.

    Solves eta' exp(-<w_tilde, z_i>) = alpha_i on the support, i.e. Z_S w_tilde = ln(eta' / alpha_S), with
    eta' = eta (sum loss) or eta / n (mean loss); the same for the exponential and the logistic loss (same tail).
    Exact when the support vectors span R^d (the chapter's data); otherwise the least-norm solution, whose
    component outside span(Z_S) GD does not determine this way. `eta` broadcasts: shape eta.shape + (d,).
    """
    Z = _as_Z(Z)
    _check_mm(Z, mm)
    eta = as_real_array("eta", eta, nonempty=True)
    if np.any(eta <= 0):
        raise ValueError(f"eta must be positive; got {eta}")
    eta_eff = eta / _reduction_scale(reduction, len(Z))
    S = np.asarray(mm.support)
    a = np.asarray(mm.alpha, dtype=float)[S]
    if S.size == 0 or np.any(a <= 0):
        raise ValueError("every support vector needs a positive multiplier (strict complementarity) for w_tilde; "
                         f"got alpha on the support = {a}")
    rhs = np.log(eta_eff)[..., None] - np.log(a)  # (..., |S|)
    pinv = np.linalg.pinv(Z[S])  # (d, |S|)
    return rhs @ pinv.T


def asymptotic_w(t: ArrayLike, mm: MaxMargin, w_tilde: ArrayLike) -> np.ndarray:
    """w_hat ln t + w_tilde (eq-soudry-asymptotics) at GD step t >= 1; shape t.shape + w_tilde.shape."""
    _mm_type(mm)
    t, w_tilde = as_real_array("t", t, nonempty=True), as_real_array("w_tilde", w_tilde, nonempty=True)
    if np.any(t <= 0):
        raise ValueError("t (GD steps) must be positive")
    if w_tilde.shape[-1:] != np.shape(mm.w_hat):
        raise ValueError(f"w_tilde must end in d = {np.size(mm.w_hat)}; got shape {w_tilde.shape}")
    lt = np.log(t).reshape(t.shape + (1,) * w_tilde.ndim)
    return lt * np.asarray(mm.w_hat, dtype=float) + w_tilde


def gf_loss_bounds(t: ArrayLike, L0: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient-flow bounds 1/(1/L0 + t) <= L(t) <= 1/(1/L0 + gamma^2 t) (eq-soudry-loss-bounds).

    Exponential sum loss, ||z_i|| <= 1, gamma the margin of a unit separator (at most the SVM margin); t is flow
    time (t = eta k for GD). Returns (lower, upper).
    """
    t = _as_time(t)
    L0, gamma = as_positive("L0", L0), _as_gamma(gamma)
    return 1.0 / (1.0 / L0 + t), 1.0 / (1.0 / L0 + gamma**2 * t)


def gf_norm_bounds(t: ArrayLike, L0: float, gamma: float, n: int, r0: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Gradient-flow bounds on r = ||w|| (eq-soudry-norm-bounds): returns (lower, upper) with

    lower = ln(n (1/L0 + gamma^2 t))   (from L >= n e^{-r} and the upper loss bound),
    upper = r0 + min(gamma^-2 ln(1 + gamma^2 L0 t), gamma^-1 ln(1 + L0 t)): the first from r - r0 <= int L and the
    upper loss bound, the second from r - r0 <= int ||grad L|| <= gamma^-1 ln(L0 / L(t)) and the lower loss bound
    (the tighter one for large t; its constant gamma^-1 is the true growth rate when gamma is the SVM margin).
    """
    t = _as_time(t)
    L0, gamma, n = as_positive("L0", L0), _as_gamma(gamma), as_int("n", n, minimum=1)
    r0 = as_nonnegative("r0", r0)
    upper = r0 + np.minimum(np.log1p(gamma**2 * L0 * t) / gamma**2, np.log1p(L0 * t) / gamma)
    return np.log(n * (1.0 / L0 + gamma**2 * t)), upper


def gd_loss_bound(k: ArrayLike, eta: float, L0: float, gamma: float, R: float = 1.0) -> np.ndarray:
    """A proven bound L_k <= B_k for GD on the exponential sum loss (eq-soudry-gd-descent), for eta < 2 / (L0 R^2):

        1/B_{k+1} = 1/B_k + eta (1 - eta R^2 B_k / 2) gamma^2,    B_0 = L0,
    from the descent lemma on the sublevel set {L <= L_k} (Hessian <= L_k R^2, R = max ||z_i||) and
    ||grad L|| >= gamma L. B_k ~ 1/(gamma^2 eta k), the flow bound at t = eta k. `k`: steps >= 0 (any shape).
    """
    k = as_steps("k", k)
    eta, L0, gamma, R = as_positive("eta", eta), as_positive("L0", L0), _as_gamma(gamma), as_positive("R", R)
    if eta * L0 * R**2 >= 2.0:
        raise ValueError(f"eta must be below 2 / (L0 R^2) = {2.0 / (L0 * R**2):.6g} for the descent lemma; got {eta}")
    kmax = int(k.max()) if k.size else 0
    inv = np.empty(kmax + 1)
    inv[0] = 1.0 / L0
    for j in range(kmax):
        inv[j + 1] = inv[j] + eta * (1.0 - 0.5 * eta * R**2 / inv[j]) * gamma**2
    return 1.0 / inv[k]


def margin_bounds(r: ArrayLike, n: int, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient flow from w0 = 0 (eq-soudry-margin-bound): at norm r = ||w(t)|| > 0, with gamma the SVM margin,

    margin gap   gamma - min_i <w, z_i>/||w||  <=  ln(n) / r,
    angle gap    ||w/||w|| - w_hat/||w_hat|| ||  <=  sqrt(2 (ln(n)/r) / gamma)  while ln(n)/r < gamma (the margin is
                 then positive), else the trivial 2.
    Returns (margin-gap bound, angle-gap bound).
    """
    r = as_real_array("r", r, nonempty=True)
    if np.any(r <= 0):
        raise ValueError("r (the norm ||w||) must be positive")
    n, gamma = as_int("n", n, minimum=1), _as_gamma(gamma)
    gap = no_overflow("r (too small)", np.log(n) / r)
    return gap, np.where(gap < gamma, np.sqrt(2.0 * gap / gamma), 2.0)


def stability_limit(Z: ArrayLike, loss: Literal["exp", "logistic"] = "exp",
                    reduction: Literal["sum", "mean"] = "sum", w0: ArrayLike | None = None) -> float:
    """2 / lambda_max of the Hessian at w0: the linear-stability threshold of the *start* only.

    exp: the Hessian sum_i e^{-m_i(w0)} z_i z_i^T at w0 (Z^T Z at w0 = 0); logistic: lambda_max(Z^T Z) / 4, the
    global curvature bound. Divided by n for the mean loss. This is not a convergence condition on separable data:
    the exponential loss has no minimum to be stable around, and GD from w0 = 0 typically converges, monotonically,
    well above it (Ch 5, "Where the theory stops"). `descent_step_limit` is the provable condition.
    """
    Z = _as_Z(Z)
    scale = _reduction_scale(reduction, len(Z))
    loss = as_choice("loss", loss, ("exp", "logistic"))
    if loss == "exp":
        w = np.zeros(Z.shape[1]) if w0 is None else as_real_array("w0", w0, shape=(Z.shape[1],))
        weights = np.exp(-np.clip(Z @ w, -700.0, None))
        beta = np.linalg.eigvalsh((Z * weights[:, None]).T @ Z)[-1]
    elif loss == "logistic":
        beta = np.linalg.eigvalsh(Z.T @ Z)[-1] / 4.0
    else:
        raise ValueError(f"loss must be 'exp' or 'logistic'; got {loss!r}")
    return float(no_overflow("Z and w0", 2.0 * scale / no_overflow("Z and w0", beta)))


def descent_step_limit(Z: ArrayLike, loss: Literal["exp", "logistic"] = "exp",
                       reduction: Literal["sum", "mean"] = "sum", w0: ArrayLike | None = None) -> float:
    """The step 2 / beta below which the descent lemma proves that GD decreases the loss at every step (Ch 5).

    exp: beta = L(w0) max_i ||z_i||^2 bounds the Hessian sum_i e^{-m_i} z_i z_i^T on the sublevel set
    {L <= L(w0)}, which GD then never leaves (so 2 / (n max ||z_i||^2) from w0 = 0, the sum loss);
    logistic: beta = lambda_max(Z^T Z) / 4 = sigma_max(Z)^2 / 4, global (Soudry et al.'s eta < 2 / (beta sigma_max^2)).
    Divided by n for the mean loss.
    """
    Z = _as_Z(Z)
    scale = _reduction_scale(reduction, len(Z))
    loss = as_choice("loss", loss, ("exp", "logistic"))
    if loss == "exp":
        w = np.zeros(Z.shape[1]) if w0 is None else as_real_array("w0", w0, shape=(Z.shape[1],))
        beta = float(np.exp(-np.clip(Z @ w, -700.0, None)).sum() * np.max(np.sum(Z**2, axis=1)))
    elif loss == "logistic":
        beta = float(np.linalg.eigvalsh(Z.T @ Z)[-1] / 4.0)
    else:
        raise ValueError(f"loss must be 'exp' or 'logistic'; got {loss!r}")
    return 2.0 * scale / beta


def residual_matrix(Z: ArrayLike, mm: MaxMargin) -> np.ndarray:
    """H_inf = sum_{i in S} alpha_i z_i z_i^T (eq-soudry-linearised): the residual e = w - w_hat ln t - w_tilde_1 of
    gradient flow obeys de / d ln t = -H_inf e + O(|e|^2) + O(t^-(m2 - 1)); H_inf is the limit of t Hessian(L).

    H_inf w_hat = w_hat exactly (the time-shift mode, eigenvalue 1).
    """
    Z = _as_Z(Z)
    _check_mm(Z, mm)
    S = np.asarray(mm.support)
    a = np.asarray(mm.alpha, dtype=float)[S]
    if S.size == 0 or a.shape != (S.size,):
        raise ValueError("mm must have a non-empty support with one multiplier per support vector")
    return (Z[S].T * a) @ Z[S]


def residual_exponent(Z: ArrayLike, mm: MaxMargin) -> tuple[float, float, float]:
    """(lambda_min, m2, exponent) of eq-soudry-residual-rate: ||w(t) - w_hat ln t - w_tilde_1|| = O(t^-exponent).

    lambda_min = the smallest eigenvalue of `residual_matrix` on span{z_i : i in S} (<= 1), m2 = `second_margin`,
    exponent = min(lambda_min, m2 - 1). In the plane with two support vectors lambda_min = alpha_1 alpha_2 det(Z_S)^2.
    """
    Z = _as_Z(Z)
    _check_mm(Z, mm)
    S = np.asarray(mm.support)
    A = residual_matrix(Z, mm)
    basis = np.linalg.svd(Z[S], full_matrices=False)[2]  # orthonormal rows spanning the support vectors
    basis = basis[np.linalg.svd(Z[S], compute_uv=False) > 1e-12 * np.abs(Z[S]).max()]
    mu = float(np.linalg.eigvalsh(basis @ A @ basis.T)[0])
    m2 = second_margin(Z, mm)
    return mu, m2, float(min(mu, m2 - 1.0))


def expansion_constants(Z: ArrayLike, mm: MaxMargin, w_tilde: ArrayLike) -> dict[str, float]:
    """The constants of the 1/ln t laws (eq-soudry-angle, eq-soudry-margin-gap); a = ||w_hat||, u_hat = w_hat / a:

    "angle":  ||P w_tilde|| / a, the limit of angle gap x (ln k + shift), next term x (1 - 3 angle^2 / (8 T^2));
    "margin": -min_{i in S} <P w_tilde, z_i> / a, the limit of margin gap x (ln k + shift) (> 0 unless P w_tilde
              is orthogonal to every support vector);
    "shift":  <u_hat, w_tilde> / a,
    where P projects orthogonally to w_hat. k counts the steps for which w_tilde was computed.
    """
    Z = _as_Z(Z)
    _check_mm(Z, mm)
    wt = as_real_array("w_tilde", w_tilde)
    if wt.shape != np.shape(mm.w_hat):
        raise ValueError(f"w_tilde must have shape {np.shape(mm.w_hat)}; got {wt.shape}")
    a = float(np.linalg.norm(mm.w_hat))
    u_hat = mm.w_hat / a
    perp = wt - (wt @ u_hat) * u_hat
    out = {"angle": float(np.linalg.norm(perp) / a), "margin": float(-np.min(Z[mm.support] @ perp) / a),
           "shift": float(wt @ u_hat / a)}
    no_overflow("w_tilde", list(out.values()))
    return out


# -------------------------------------------------------------------------------------------- simulator
def gd_separable(Z: ArrayLike, eta: float | Sequence[float] | np.ndarray, steps: int, checkpoints: int | ArrayLike = 60,
                 loss: Literal["exp", "logistic"] = "exp", reduction: Literal["sum", "mean"] = "sum",
                 w0: ArrayLike | None = None, device: str | torch.device | None = None,
                 mm: MaxMargin | None = None) -> History:
    """GD w_{k+1} = w_k - eta grad L(w_k) on separable data, batched over the step sizes `eta` (float or (B,)),
    in float64.

    Records at `checkpoints` (a count of log-spaced steps in [1, steps], or explicit steps), always with 0 and steps:
    "loss" (K, B), "norm" ||w|| (K, B), "angle_gap" ||w/||w|| - w_hat/||w_hat|||| (K, B; NaN where w = 0),
    "margin_gap" gamma - min_i <w, z_i>/||w|| (K, B) and "w" (K, B, d). final: "w" (B, d), "etas", "mm".
    `mm`: the max-margin solution of Z if already computed (else solved here; it defines the gaps).
    On the CPU the loop runs on one thread. Any positive step is accepted: `descent_step_limit` is the provable
    condition, `stability_limit` only the curvature at the start, and GD on separable data often converges above
    both. Raises ValueError for bad input (non-separable Z, eta <= 0, shapes, unknown loss or reduction),
    DivergenceError if the iterates leave the finite numbers (naming the step where this was detected).
    """
    Z = _as_Z(Z)
    n, d = Z.shape
    steps = as_int("steps", steps, minimum=0)
    loss = as_choice("loss", loss, ("exp", "logistic"))
    scale = _reduction_scale(reduction, n)
    eta = np.atleast_1d(as_real_array("eta", eta, nonempty=True))
    w_init = np.zeros(d) if w0 is None else as_real_array("w0", w0, shape=(d,))
    if eta.ndim != 1:
        raise ValueError(f"eta must be a float or a 1-D sequence; got shape {eta.shape}")
    if np.any(eta <= 0):
        raise ValueError(f"eta must be positive; got {eta}")
    mm = max_margin(Z) if mm is None else _check_mm(Z, mm)  # raises for non-separable Z
    rec_steps = _checkpoint_steps(steps, checkpoints)
    dev = get_device(device)
    Zt = torch.as_tensor(Z, dtype=torch.float64, device=dev)  # (n, d)
    ZnegT = (-Zt).T.contiguous()  # (d, n)
    W = torch.as_tensor(np.tile(w_init, (len(eta), 1)), dtype=torch.float64, device=dev)  # (B, d)
    eta_col = torch.as_tensor(eta / scale, dtype=torch.float64, device=dev)[:, None]  # (B, 1)
    recs: list[torch.Tensor] = []
    with few_threads_if_small(dev, W.numel() * Zt.shape[0]):  # (B, n) tensors: thread hand-offs cost more
        _gd_loop(W, Zt, ZnegT, eta_col, rec_steps, loss, recs)
    Ws = torch.stack(recs).cpu().numpy()  # (K, B, d)
    return History(steps=rec_steps, metrics=_metrics(Ws, Z, mm, loss, scale),
                   final={"w": Ws[-1], "etas": eta, "mm": mm})


def flow_log_time(Z: ArrayLike, t: ArrayLike, mm: MaxMargin | None = None, rtol: float = 1e-11) -> np.ndarray:
    """rho(t) = w(t) - w_hat ln t along gradient flow dw/dt = -grad L (exponential sum loss, w(0) = 0), at the
    increasing times t > 0, which may be astronomically large (t = e^40 costs as little as t = 10).

    Up to t = 1 it integrates dw/dt itself; after that it integrates v = w - w_hat s in log time s = ln t,
        dv/ds = sum_i exp(-(m_i - 1) s - <v, z_i>) z_i - w_hat,     m_i = <w_hat, z_i>     (eq-soudry-log-time),
    whose right side stays O(1), so the residual v - w_tilde is resolved to ~1e-12 even when ||w|| ~ 100. SciPy
    DOP853 at relative tolerance `rtol`. Returns shape t.shape + (d,). For GD at step eta compare at t = eta k.
    """
    from scipy.integrate import solve_ivp

    Z = _as_Z(Z)
    mm = max_margin(Z) if mm is None else _check_mm(Z, mm)
    t = as_real_array("t", t, nonempty=True)
    flat = t.ravel()
    if np.any(flat <= 0) or np.any(np.diff(flat) <= 0):
        raise ValueError("t must be positive and strictly increasing")
    rtol = as_positive("rtol", rtol)
    w_hat = np.asarray(mm.w_hat, dtype=float)
    m = Z @ w_hat
    out = np.empty((flat.size, Z.shape[1]))
    early = flat < 1.0
    sol = solve_ivp(lambda _, w: np.exp(-(Z @ w)) @ Z, (0.0, 1.0), np.zeros(Z.shape[1]), method="DOP853",
                    t_eval=np.r_[flat[early], 1.0], rtol=rtol, atol=1e-14)
    out[early] = sol.y[:, :-1].T - np.log(flat[early])[:, None] * w_hat
    if np.any(~early):
        s_eval = np.log(flat[~early])
        sol2 = solve_ivp(lambda s, v: np.exp(-(m - 1.0) * s - Z @ v) @ Z - w_hat, (0.0, s_eval[-1]), sol.y[:, -1],
                         method="DOP853", t_eval=s_eval, rtol=rtol, atol=1e-14)
        if not sol2.success:  # pragma: no cover - smooth, bounded right-hand side
            raise RuntimeError(f"log-time integration failed: {sol2.message}")
        out[~early] = sol2.y.T
    return out.reshape(t.shape + (Z.shape[1],))


def normalized_gd(Z: ArrayLike, eta0: float, steps: int, checkpoints: int | ArrayLike = 60, power: float = 0.5,
                  mm: MaxMargin | None = None) -> History:
    """GD on the exponential sum loss with the loss-normalised step eta_k = eta0 / (L(w_k) (k + 1)^power), w0 = 0:

        w_{k+1} = w_k + eta0 (k + 1)^-power sum_i q_i z_i,    q = softmax(-Z w_k)   (eq-soudry-normalized).
    The steps compensate for the vanishing gradient (Nacson et al. 2019). Same records as `gd_separable`, B = 1.
    """
    Z = _as_Z(Z)
    eta0, power = as_positive("eta0", eta0), as_nonnegative("power", power)
    steps = as_int("steps", steps, minimum=0)
    mm = max_margin(Z) if mm is None else _check_mm(Z, mm)
    rec_steps = _checkpoint_steps(steps, checkpoints)
    w = np.zeros(Z.shape[1])
    recs, k = [], 0
    for target in rec_steps:
        while k < target:
            m = Z @ w
            q = np.exp(m.min() - m)
            w = w + eta0 * (k + 1.0) ** (-power) / q.sum() * (q @ Z)
            k += 1
        recs.append(w.copy())
    Ws = np.asarray(recs)[:, None, :]  # (K, 1, d)
    return History(steps=rec_steps, metrics=_metrics(Ws, Z, mm, "exp", 1.0),
                   final={"w": Ws[-1], "etas": np.array([eta0]), "mm": mm})


# ------------------------------------------------------------------------------------------------- helpers
def _gd_loop(W: torch.Tensor, Zt: torch.Tensor, ZnegT: torch.Tensor, eta_col: torch.Tensor, steps: np.ndarray,
             loss: str, recs: list[torch.Tensor]) -> None:
    """The GD iteration in place on W (B, d), appending a copy of W at every step of `steps`."""
    log_eta = eta_col.log()
    k = 0
    for target in steps:
        while k < target:
            if loss == "exp":  # eta' e^{-m} = exp(ln eta' - m), clipped so a bad start cannot overflow
                G = torch.addmm(log_eta, W, ZnegT).clamp_(max=700.0).exp_()  # (B, n)
            else:
                G = torch.mm(W, ZnegT).sigmoid_().mul_(eta_col)  # eta' * (-l'(m)) = eta' sigma(-m)
            W.addmm_(G, Zt)
            k += 1
            if k % 4096 == 0:
                check_finite("w", W, k)
        check_finite("w", W, k)
        recs.append(W.clone())


def _as_time(t: ArrayLike) -> np.ndarray:
    t = as_real_array("t", t, nonempty=True)
    if np.any(t < 0):
        raise ValueError("t (flow time) must be >= 0")
    return t


def _as_gamma(gamma: float) -> float:
    gamma = as_positive("gamma", gamma)
    if gamma > 1.0 + 1e-9:
        raise ValueError(f"gamma must lie in (0, 1] (a margin of data with ||z_i|| <= 1); got {gamma}")
    return gamma


def _reduction_scale(reduction: str, n: int) -> float:
    return 1.0 if as_choice("reduction", reduction, ("sum", "mean")) == "sum" else float(n)


def _checkpoint_steps(T: int, checkpoints: int | ArrayLike) -> np.ndarray:
    if isinstance(checkpoints, int | np.integer) and not isinstance(checkpoints, bool):
        c = as_int("checkpoints", checkpoints, minimum=2)
        steps = np.round(np.geomspace(1, max(T, 1), c)).astype(np.int64) if T else np.zeros(0, np.int64)
    else:
        steps = as_steps("checkpoints", checkpoints)
        if steps.ndim != 1 or np.any(steps > T):
            raise ValueError(f"checkpoints must be a count >= 2 or 1-D integer steps in [0, T={T}]")
    return np.unique(np.r_[0, steps, T]).astype(np.int64)


def _metrics(Ws: np.ndarray, Z: np.ndarray, mm: MaxMargin, loss: str, scale: float) -> dict[str, np.ndarray]:
    m = Ws @ Z.T  # (K, B, n)
    ell = np.exp(-np.clip(m, -700.0, None)) if loss == "exp" else np.logaddexp(0.0, -m)
    norm = np.linalg.norm(Ws, axis=-1)  # (K, B)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(norm[..., None] > 0, Ws / norm[..., None], np.nan)
        u_hat = mm.w_hat / np.linalg.norm(mm.w_hat)
        return {"loss": ell.sum(-1) / scale, "norm": norm, "angle_gap": np.linalg.norm(u - u_hat, axis=-1),
                "margin_gap": mm.gamma - np.min(u @ Z.T, axis=-1), "w": Ws}


def _uniform_ball(rng: np.random.Generator, size: int, d: int) -> np.ndarray:
    x = rng.standard_normal((size, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x * rng.uniform(0, 1, (size, 1)) ** (1.0 / d)
