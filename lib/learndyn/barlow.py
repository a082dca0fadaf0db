"""Stepwise learning of eigenmodes in linear Barlow Twins (Ch 4, `ch-ssl2`): closed forms and their simulators.

Linear embedding f(x) = W x, W of shape (d, m). With the symmetrised cross-correlation of the two views
Gamma = 1/(2n) sum_i (x_i x_i'^T + x_i' x_i^T) (eq. `eq-ssl2-gamma`), the embedding cross-correlation is
C = W Gamma W^T (eq. `eq-ssl2-C`) and the loss is L(W) = ||C - I_d||_F^2 (eq. `eq-ssl2-loss`), with gradient
grad L = 4 (C - I) W Gamma (eq. `eq-ssl2-grad`). Along an eigenvector v_j of Gamma (eigenvalue lambda_j) the
strength a_j = lambda_j ||W v_j||^2 follows the logistic law da/dt = 8 lambda_j a (1 - a) (eq. `eq-ssl2-logistic`).

Time: GD step k is compared with gradient-flow time t = eta * k ("our normalisation", the chapter's admonition): a
source that trains alpha L at step size eta' is GD on L at eta = alpha eta', so its time eta' k is ours over alpha.
Also: the linear-phase criterion for the step times (eq. `eq-ssl2-linear-phase`), the frozen remainder of the
lower modes (eq. `eq-ssl2-frozen`), GD's largest lag (eq. `eq-ssl2-lag-max`), and linear VICReg and SimCLR
(eqs. `eq-ssl2-vicreg`, `eq-ssl2-simclr`).
Theory: numpy, float64, broadcasting over leading axes. Simulators: torch, float64, batched on a leading axis B,
on `device`.

Where the code lives: everything Chapter 4 needs is in this module, and Chapter 4 and `learndyn.exercises` call it
as `learndyn.barlow` (`ld.barlow.*`). `learndyn.ssl` (Chapter 3) re-exports these names only so that older code
written as `ld.ssl.barlow_*` keeps working.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from .core import (
    History,
    as_bool,
    as_int,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_real_tensor,
    as_seed,
    as_str,
    broadcast,
    check_finite,
    few_threads_if_small,
    get_device,
    make_generator,
    no_overflow,
)

__all__ = [
    "gamma_matrix",
    "make_gamma",
    "barlow_loss",
    "barlow_grad",
    "barlow_logistic",
    "barlow_time",
    "barlow_gd_map",
    "barlow_gd_steps",
    "barlow_lag_max",
    "nonlinear_gain",
    "effective_a0",
    "barlow_step_times",
    "linear_phase_a0",
    "frozen_remainder",
    "barlow_optimum",
    "aligned_init",
    "small_init",
    "train_barlow_linear",
    "train_barlow_views",
    "train_barlow_dual",
    "measured_step_times",
    "digits_views",
    "vicreg_loss",
    "vicreg_modes",
    "train_vicreg_linear",
    "info_nce_linear",
    "train_simclr_linear",
]


# ---- data and the cross-correlation ------------------------------------------------------------------------------
def gamma_matrix(X: ArrayLike, Xp: ArrayLike) -> np.ndarray:
    """Gamma = 1/(2n) sum_i (x_i x_i'^T + x_i' x_i^T) = (X^T X' + X'^T X) / (2n), eq. `eq-ssl2-gamma`.

    X and Xp hold the two views of the same n inputs as rows, shape (n, m). Symmetric; may be indefinite.
    """
    X, Xp = as_real_array("X", X), as_real_array("Xp", Xp)
    if X.ndim != 2 or X.shape != Xp.shape or 0 in X.shape:
        raise ValueError(f"X and Xp must both have shape (n, m) with n, m >= 1; got {X.shape} and {Xp.shape}")
    return (X.T @ Xp + Xp.T @ X) / (2 * X.shape[0])


def make_gamma(eigs: ArrayLike, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric (m, m) Gamma = V diag(eigs) V^T with Haar-random orthogonal V; returns (Gamma, V).

    `eigs` (at most m values, padded with zeros) may contain negative entries. Column j of V is the eigenvector
    of eigs[j], in the order given.
    """
    m = as_int("m", m, minimum=1)
    lam = as_real_array("eigs", eigs, nonempty=True).ravel()
    if lam.size > m:
        raise ValueError(f"eigs has {lam.size} values but m = {m}: give at most m eigenvalues")
    lam = np.concatenate([lam, np.zeros(m - lam.size)])
    q, r = np.linalg.qr(np.random.default_rng(as_seed("seed", seed)).standard_normal((m, m)))
    V = q * np.sign(np.diag(r))  # Haar measure (sign fix of the QR factor)
    G = (V * lam) @ V.T
    return 0.5 * (G + G.T), V


# ---- loss, gradient and closed forms -------------------------------------------------------------------------------
def barlow_loss(W: np.ndarray | torch.Tensor, Gamma: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """L = ||W Gamma W^T - I||_F^2, eq. `eq-ssl2-loss`; batched over leading axes of W; torch in, torch out."""
    if isinstance(W, torch.Tensor):
        G = torch.as_tensor(_gamma(Gamma), dtype=W.dtype, device=W.device)   # symmetric, as on the numpy path
        C = W @ G @ W.mT
        return ((C - torch.eye(W.shape[-2], dtype=W.dtype, device=W.device)) ** 2).sum(dim=(-2, -1))
    W, G = _check_pair(W, Gamma)
    C = W @ G @ np.swapaxes(W, -1, -2)
    return no_overflow("W", np.sum((C - np.eye(W.shape[-2])) ** 2, axis=(-2, -1)))


def barlow_grad(W: ArrayLike, Gamma: ArrayLike) -> np.ndarray:
    """grad_W L = 4 (C - I) W Gamma with C = W Gamma W^T, eq. `eq-ssl2-grad` (exercise `ex-ssl2-grad`); batched."""
    W, G = _check_pair(W, Gamma)
    WG = W @ G
    C = WG @ np.swapaxes(W, -1, -2)
    return no_overflow("W", 4.0 * (C - np.eye(W.shape[-2])) @ WG)


def barlow_logistic(t: ArrayLike, lam: ArrayLike, a0: ArrayLike) -> np.ndarray:
    """a(t) = a0 e^{8 lam t} / (1 - a0 + a0 e^{8 lam t}), eq. `eq-ssl2-logistic` (Theorem `thm-ssl2-aligned`).

    Solves da/dt = 8 lam a (1 - a) for a mode of the aligned family; t, lam, a0 broadcast. Written with
    e^{-8 lam t} so that it does not overflow for large t (lam > 0); for lam <= 0 the mode decays or stays.
    """
    t, lam, a0 = broadcast("t, lam and a0", *(as_real_array(n, x, nonempty=True)
                                              for n, x in (("t", t), ("lam", lam), ("a0", a0))))
    x = np.clip(-8.0 * lam * t, -700.0, 700.0)
    return no_overflow("a0", a0 / (a0 + (1.0 - a0) * np.exp(x)))


def barlow_time(lam: ArrayLike, a0: ArrayLike, level: float = 0.5) -> np.ndarray:
    """Time at which the logistic law reaches `level`: t = ln[level (1 - a0) / (a0 (1 - level))] / (8 lam).

    Eq. `eq-ssl2-step-time` (level 1/2: t = ln((1 - a0)/a0) / (8 lam)). Infinite where lam <= 0 (never learned).
    """
    lam, a0 = broadcast("lam and a0", as_real_array("lam", lam, nonempty=True), as_real_array("a0", a0, nonempty=True))
    level = _level(level)
    if np.any(a0 <= 0) or np.any(a0 >= 1):
        raise ValueError("a0 must lie in (0, 1) (a small initial mode strength)")
    with np.errstate(divide="ignore"):
        t = np.log(level * (1 - a0) / (a0 * (1 - level))) / (8.0 * lam)
    return np.where(lam > 0, t, np.inf)


def barlow_gd_map(lam: ArrayLike, a0: ArrayLike, eta: float, steps: int) -> np.ndarray:
    """GD on the aligned family, exactly: a_{k+1} = a_k (1 + 4 eta lam (1 - a_k))^2 (eq. `eq-ssl2-gd-map`).

    This is what W <- W - eta grad L does to a_j = lam_j varsigma_j^2 (varsigma <- varsigma (1 + 4 eta lam (1 - a))).
    lam and a0 broadcast; returns shape (steps + 1, *broadcast shape).
    """
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    lam, a = broadcast("lam and a0", as_real_array("lam", lam, nonempty=True), as_real_array("a0", a0, nonempty=True))
    out = np.empty((steps + 1, *lam.shape))
    out[0] = a
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps):
            out[k + 1] = out[k] * (1.0 + 4.0 * eta * lam * (1.0 - out[k])) ** 2
            check_finite("a", out[k + 1], step=k + 1)          # the first step that leaves the finite numbers
    return out


def barlow_gd_steps(lam: ArrayLike, a0: ArrayLike, eta: float, level: float = 0.5,
                    next_term: bool = False) -> np.ndarray:
    """GD steps for a mode to reach `level`, eq. `eq-ssl2-gd-steps`:

        k = t / eta + ln(level / a0) / 4 + ln((1 - level) / (1 - a0)) / 2,     t = `barlow_time`(lam, a0, level).

    In y = ln a one GD step adds D(y) = 2 ln(1 + r (1 - a) / 2), r = 8 eta lam; the steps needed are
    int dy / D + ln(D(y) / D(y0)) / 2 (Euler-Maclaurin), and 1/D = 1/(r (1 - a)) + 1/4 - r (1 - a) / 48 + O(r^2).
    The middle term is GD's lag (relative r/4), the last a fixed offset. Error O(r) steps: with `next_term`, the
    third term of 1/D is integrated too, -(r/48) (ln(level / a0) - level + a0) steps (GD crosses that much earlier),
    and what is left is O(r) without the logarithm (about r/10 on the exact map `barlow_gd_map`).
    """
    eta, level = as_positive("eta", eta), _level(level)
    a0 = as_real_array("a0", a0, nonempty=True)
    k = (barlow_time(lam, a0, level=level) / eta + 0.25 * np.log(level / a0)
         + 0.5 * np.log((1 - level) / (1 - a0)))
    if as_bool("next_term", next_term):
        k = k - 8.0 * eta * np.asarray(lam, dtype=float) / 48.0 * (np.log(level / a0) - level + a0)
    return k


def nonlinear_gain(W0: ArrayLike, Gamma: ArrayLike, d: int, a0: ArrayLike | None = None) -> np.ndarray:
    """First-order size of the nonlinear-phase gain of each mode, as a relative change of its strength; (..., d).

    While mode i < j saturates, the part of w_j along its Gram-Schmidt direction q_i stops growing only when mode i
    is learned, at ||q_i^T w_j(0)||^2 a_i^{-lam_j / lam_i}; at the crossing of mode j (where its orthogonal part has
    grown by 1 / a_j) that frozen part is a relative theta_j = sum_{i<j} chi_ij a_j a_i^{-lam_j / lam_i} of its
    strength, chi_ij = (q_i^T w_j(0))^2 / ||P_perp(<j) w_j(0)||^2. A relative change theta of the strength moves
    the crossing by theta rise times 1 / (8 lam_j). a0: the effective strengths (default `linear_phase_a0`).
    An order-of-magnitude estimate (it neglects the rotation of the saturated directions), not a correction.
    """
    W0, G = _check_pair(W0, Gamma, "W0")
    d = _check_d(d, W0, G, "W0")
    lam, V = _top_eigh(G, d)
    a = linear_phase_a0(W0, G, d) if a0 is None else np.broadcast_to(as_real_array("a0", a0), W0.shape[:-2] + (d,))
    w = (W0 @ V).reshape(-1, d, d)                               # column j is w_j = W0 v_j
    a = np.asarray(a, dtype=float).reshape(-1, d)
    out = np.zeros_like(a)
    for b in range(len(w)):
        q = np.linalg.qr(w[b])[0]
        for j in range(1, d):
            along = q[:, :j].T @ w[b][:, j]
            perp2 = np.sum((w[b][:, j] - q[:, :j] @ along) ** 2)
            out[b, j] = sum(along[i] ** 2 / perp2 * a[b, j] * a[b, i] ** (-lam[j] / lam[i]) for i in range(j))
    return out.reshape(W0.shape[:-2] + (d,))


def barlow_lag_max(lam: ArrayLike, a0: ArrayLike, eta: float) -> np.ndarray:
    """Largest |a_GD(k) - a_flow(eta k)| of one aligned mode, eq. `eq-ssl2-lag-max`.

    GD reaches level l late by dk(l) = ln(l / a0) / 4 + ln((1 - l) / (1 - a0)) / 2 steps (`barlow_gd_steps`), and
    the flow rises at da/dk = r l (1 - l) with r = 8 eta lam, so the gap is r l (1 - l) dk(l), maximised over l
    (a grid of 20 001 levels refined around its maximum). About (r/16) ln(1/a0) (1 - 3 ln 2 / ln(1/a0)).
    lam and a0 broadcast; lam > 0.
    """
    eta = as_positive("eta", eta)
    lam, a0 = broadcast("lam and a0", as_real_array("lam", lam, nonempty=True), as_real_array("a0", a0, nonempty=True))
    if np.any(lam <= 0):
        raise ValueError("lam must be positive (a mode that is learned)")
    if np.any(a0 <= 0) or np.any(a0 >= 0.5):
        raise ValueError("a0 must lie in (0, 1/2) (a small initial mode strength)")
    r = 8.0 * eta * lam

    def gap(level: np.ndarray) -> np.ndarray:
        return r * level * (1 - level) * (0.25 * np.log(level / a0) + 0.5 * np.log((1 - level) / (1 - a0)))

    grid = np.linspace(1e-4, 1 - 1e-4, 20_001).reshape((-1,) + (1,) * lam.ndim)
    g = gap(grid)
    best = np.take_along_axis(np.broadcast_to(grid, g.shape), np.argmax(g, axis=0)[None], axis=0)[0]
    fine = best + np.linspace(-1e-4, 1e-4, 2001).reshape((-1,) + (1,) * lam.ndim)
    return gap(np.clip(fine, 1e-12, 1 - 1e-12)).max(axis=0)


def effective_a0(W0: ArrayLike, Gamma: ArrayLike, d: int, refined: bool = True) -> np.ndarray:
    """Effective initial strengths of the top-d modes from a small init W0, eq. `eq-ssl2-a0-eff`.

    w_j = W0 v_j (embedding vector of mode j, eigenvalues in decreasing order). Naive: a_j = lam_j ||w_j||^2.
    Refined (Gram-Schmidt, the mechanism of Chapter 2): a_j = lam_j ||P_perp(w_1..w_{j-1}) w_j||^2, since once the
    earlier modes are learned (I - C) only lets w_j grow orthogonally to them. Returns (..., d); batched over W0.
    """
    W0, G = _check_pair(W0, Gamma, "W0")
    d = _check_d(d, W0, G, "W0")
    refined = as_bool("refined", refined)
    lam, V = _top_eigh(G, d)
    w = W0 @ V                                                   # (..., d, d): column j is w_j = W0 v_j
    if not refined:
        return no_overflow("W0", lam * np.sum(w**2, axis=-2))
    out = np.empty(w.shape[:-2] + (d,))
    basis: list[np.ndarray] = []                                 # orthonormal (..., d) vectors
    for j in range(d):
        v = w[..., :, j].copy()
        for q in basis:
            v -= np.sum(q * v, axis=-1, keepdims=True) * q
        norm = np.linalg.norm(v, axis=-1, keepdims=True)
        out[..., j] = lam[..., j] * norm[..., 0] ** 2
        basis.append(v / np.where(norm > 0, norm, 1.0))
    return no_overflow("W0", out)


def barlow_step_times(W0: ArrayLike, Gamma: ArrayLike, d: int, refined: bool = True,
                      level: float = 0.5) -> np.ndarray:
    """Predicted flow times at which the j-th eigenvalue of C crosses `level`, j = 1..d (eq. `eq-ssl2-step-time`).

    Logistic law with the effective initial strengths of `effective_a0` (refined: Gram-Schmidt). In our
    normalisation t = eta * k; inf for modes with lam_j <= 0. Shape (..., d), batched over leading axes of W0.
    """
    W0, G = _check_pair(W0, Gamma, "W0")
    lam, _ = _top_eigh(G, _check_d(d, W0, G, "W0"))
    return barlow_time(lam, effective_a0(W0, G, d, refined=refined), level=level)


def linear_phase_a0(W0: ArrayLike, Gamma: ArrayLike, d: int) -> np.ndarray:
    """Effective initial strengths from the linear-phase criterion, eq. `eq-ssl2-linear-phase`; shape (..., d).

    While C is small, W(t) = W0 e^{4 Gamma t} (eq. `eq-ssl2-linear`) and C_lin(t) = sum_k lam_k e^{8 lam_k t} w_k w_k^T
    over all m modes, w_k = W0 v_k. The j-th eigenvalue of C is predicted to cross 1/2 at the time t_j at which
    mu_j(C_lin(t)) (1 + e^{-8 lam_j t}) = 1 (the j-th eigenvalue of the linear-phase C reaches about 1). Returned is
    the initial strength of the logistic mode (rate 8 lam_j) that crosses 1/2 at t_j:
    a_j = x / (1 + x), x = e^{-8 lam_j t_j}, so that `barlow_time`(lam_j, a_j) = t_j and `barlow_gd_steps` applies.
    To leading order in well-separated eigenvalues this is the Gram-Schmidt `effective_a0`; unlike it, it keeps the
    competition of the smaller modes k > j for the same embedding directions.

    Numerics: C_lin spans many orders of magnitude. The modes whose columns are larger than 1e8 at time t are
    removed exactly (their span is that of the unscaled w_k), which changes the eigenvalues near 1 by a relative
    1e-8 at most; the rest is an ordinary float64 eigenvalue problem. Needs lam_d > 0.
    """
    W0, G = _check_pair(W0, Gamma, "W0")
    d = _check_d(d, W0, G, "W0")
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1].copy(), V[:, ::-1].copy()
    if lam[d - 1] <= 0:
        raise ValueError(f"Gamma has fewer than d = {d} positive eigenvalues: the d-th mode is never learned")
    w_all = W0 @ V                                               # (..., d, m): column k is w_k = W0 v_k
    flat = w_all.reshape(-1, d, G.shape[0])
    out = np.empty((flat.shape[0], d))
    for b, w in enumerate(flat):
        t_prev = 0.0
        for j in range(d):
            def g(t: float, w: np.ndarray = w, j: int = j) -> float:
                return float(np.clip(_log_mu(w, lam, t, j) + np.log1p(np.exp(-8.0 * lam[j] * t)), -1e3, 1e3))
            lo, hi = t_prev, max(t_prev, 1e-12)
            if g(lo) >= 0:
                raise ValueError("W0 is not small: the linear-phase C already has an eigenvalue near 1 at t = 0")
            step = 1.0 / (8.0 * lam[j])
            while g(hi) < 0:
                lo, hi = hi, hi + step
                step *= 2.0
            t_j = brentq(g, lo, hi, xtol=1e-13, rtol=1e-14)
            x = np.exp(-8.0 * lam[j] * t_j)
            out[b, j] = x / (1.0 + x)
            t_prev = t_j
    return out.reshape(w_all.shape[:-2] + (d,))


def _log_mu(w: np.ndarray, lam: np.ndarray, t: float, j: int) -> float:
    """log of the (j+1)-th largest eigenvalue of C_lin(t) = sum_k lam_k e^{8 lam_k t} w_k w_k^T (w: (d, m))."""
    log_scale = np.log(np.abs(lam) + 1e-300) + 8.0 * lam * t + 2.0 * np.log(np.linalg.norm(w, axis=0) + 1e-300)
    big = (log_scale > np.log(1e8)) & (lam > 0)
    nb = int(big.sum())
    if nb > j:
        return np.inf
    small = ~big
    Cs = (w[:, small] * (lam[small] * np.exp(np.minimum(8.0 * lam[small] * t, 700.0)))) @ w[:, small].T
    if nb:
        Qb = np.linalg.qr(w[:, big], mode="complete")[0]            # span of the big columns = span of unscaled w_k
        Qp = Qb[:, nb:]
        Cs = Qp.T @ Cs @ Qp
    mu = np.linalg.eigvalsh(0.5 * (Cs + Cs.T))[::-1][j - nb]
    return float(np.log(mu)) if mu > 0 else -np.inf


def frozen_remainder(W0: ArrayLike, Gamma: ArrayLike, d: int, eta: float, steps: int) -> np.ndarray:
    """Predicted ||w_k||^2 = ||W v_k||^2 of the lower modes k > d after `steps` GD steps, eq. `eq-ssl2-frozen`.

    While mode k stays small it only feels I - C. Along the Gram-Schmidt direction q_i of the i-th learned mode
    (i <= d), I - C = 1 - a_i, so GD multiplies the component q_i^T w_k by 1 + 4 eta lam_k (1 - a_i) per step, and
    the component freezes once a_i = 1:
    ||w_k||^2 = sum_i (q_i^T w_k(0))^2 prod_s (1 + 4 eta lam_k (1 - a_i^(s)))^2,
    with a_i^(s) the aligned GD map (eq. `eq-ssl2-gd-map`) started from the linear-phase strengths
    (`linear_phase_a0`). Valid for every sign of lam_k (modes with lam_k < 0 shrink, lam_k = 0 stay); the
    strengths are a_k = lam_k ||w_k||^2. Returns shape (..., m - d). Needs lam_d > 0.
    """
    W0, G = _check_pair(W0, Gamma, "W0")
    d = _check_d(d, W0, G, "W0")
    steps = as_int("steps", steps, minimum=0)
    eta = as_positive("eta", eta)
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1].copy(), V[:, ::-1].copy()
    a_top = linear_phase_a0(W0, G, d)                                # (..., d)
    traj = barlow_gd_map(lam[:d], a_top, eta, steps)[:-1]           # (steps, ..., d)
    w = W0 @ V                                                       # (..., d, m)
    q = np.linalg.qr(w[..., :, :d])[0]                               # (..., d, d): Gram-Schmidt directions
    proj2 = (np.swapaxes(q, -1, -2) @ w[..., :, d:]) ** 2           # (..., d, m - d): (q_i^T w_k(0))^2
    x = 4.0 * eta * lam[d:] * (1.0 - traj[..., :, None])             # (steps, ..., d, m - d)
    log_gain = 2.0 * np.sum(np.log1p(x), axis=0)
    return np.sum(proj2 * np.exp(log_gain), axis=-2)


def barlow_optimum(Gamma: ArrayLike, d: int) -> np.ndarray:
    """W_* = Lambda_d^{-1/2} V_d^T, shape (d, m): the whitened top-d eigen-features (Theorem `thm-ssl2-minima`).

    W_* Gamma W_*^T = I, and among all global minima Q W_* (Q orthogonal) have the smallest Frobenius norm.
    Needs lambda_d > 0 (otherwise C = I cannot be reached).
    """
    G = _gamma(Gamma)
    d = as_int("d", d, minimum=1)
    if d > G.shape[-1]:
        raise ValueError(f"d (embedding dimension) must be at most m = {G.shape[-1]}; got {d}")
    lam, V = _top_eigh(G, d)
    if np.any(lam <= 0):
        raise ValueError(f"Gamma has fewer than d = {d} positive eigenvalues: C = I is unreachable")
    return np.swapaxes(V, -1, -2) / np.sqrt(lam)[..., :, None]


def aligned_init(Gamma: ArrayLike, d: int, varsigma: ArrayLike, Q: ArrayLike | None = None) -> np.ndarray:
    """W = Q diag(varsigma) V_d^T (eq. `eq-ssl2-aligned`): the aligned family of Theorem `thm-ssl2-aligned`."""
    G = _gamma(Gamma)
    d = as_int("d", d, minimum=1)
    if d > G.shape[-1]:
        raise ValueError(f"d (embedding dimension) must be at most m = {G.shape[-1]}; got {d}")
    _, V = _top_eigh(G, d)
    s = as_real_array("varsigma", varsigma, nonempty=True)
    if s.size not in (1, d) or s.ndim > 1:
        raise ValueError(f"varsigma must be a number or have shape (d,) = ({d},); got shape {s.shape}")
    s = np.broadcast_to(s.ravel(), (d,))
    Q = np.eye(d) if Q is None else as_real_array("Q", Q)
    if Q.shape != (d, d) or not np.allclose(Q @ Q.T, np.eye(d), atol=1e-10):
        raise ValueError(f"Q must be an orthogonal ({d}, {d}) matrix")
    return Q @ (s[:, None] * V.T)


def small_init(d: int, m: int, eps: ArrayLike, seed: int = 0) -> np.ndarray:
    """W0 = eps * N(0, 1) / sqrt(m), shape (d, m), or (B, d, m) for B values of eps (one draw, rescaled)."""
    d, m = as_int("d", d, minimum=1), as_int("m", m, minimum=1)
    if d > m:
        raise ValueError(f"d (embedding dimension) must be at most m = {m}; got {d}")
    eps = as_real_array("eps", eps, nonempty=True)
    if np.any(eps <= 0):
        raise ValueError("eps (initialisation scale) must be positive")
    Z = np.random.default_rng(as_seed("seed", seed)).standard_normal((d, m)) / np.sqrt(m)
    return eps[..., None, None] * Z


# ---- simulators (torch) ----------------------------------------------------------------------------------------------
def train_barlow_linear(Gamma: ArrayLike, W0: ArrayLike, eta: float | ArrayLike, steps: int, record_every: int = 1,
                        device: str | torch.device | None = None) -> History:
    """Full-batch GD W <- W - eta * 4 (C - I) W Gamma on L = ||W Gamma W^T - I||^2 (eq. `eq-ssl2-gd`), in float64.

    W0 is (d, m) or a batch (B, d, m); eta a float or shape (B,). Records, at steps 0, record_every, ..., steps:
    "loss" (K,[B]), "eigC" (K,[B],d) eigenvalues of C in decreasing order, "modes" (K,[B],m) the strengths
    a_j = lam_j ||W v_j||^2 along the eigenvectors of Gamma (decreasing lam_j). final["W"]: last weights.
    Raises DivergenceError (with the step) if the weights leave the finite numbers.
    """
    G = _gamma(Gamma)
    W0 = as_real_array("W0", W0, nonempty=True)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, G, "W0")
    dev = get_device(device)
    Gt = torch.as_tensor(G, dtype=torch.float64, device=dev)
    with few_threads_if_small(dev, np.asarray(W0).size):
        return _gd_loop(W0, eta, steps, record_every, dev, lambda k: Gt, G)


def train_barlow_views(X: ArrayLike, Xp: ArrayLike, W0: ArrayLike, eta: float, steps: int, batch_size: int = 256,
                       record_every: int = 10, seed: int = 0, device: str | torch.device | None = None) -> History:
    """Minibatch GD on the view pairs (X, Xp): each step uses Gamma_b of a random batch (with replacement).

    The recorded metrics (as in `train_barlow_linear`) use the full-data Gamma = gamma_matrix(X, Xp).
    """
    X, Xp = as_real_array("X", X), as_real_array("Xp", Xp)
    G = gamma_matrix(X, Xp)
    batch_size = as_int("batch_size", batch_size, minimum=1)
    dev = get_device(device)
    Xt, Xpt = (torch.as_tensor(a, dtype=torch.float64, device=dev) for a in (X, Xp))
    gen = make_generator(seed, dev)

    def batch_gamma(k: int) -> torch.Tensor:
        idx = torch.randint(X.shape[0], (batch_size,), generator=gen, device=dev)
        a, b = Xt[idx], Xpt[idx]
        return (a.T @ b + b.T @ a) / (2 * batch_size)

    W0 = as_real_array("W0", W0, nonempty=True, ndim=(2, 3))
    _check_d(W0.shape[-2], W0, G, "W0")
    with few_threads_if_small(dev, np.asarray(W0).size):
        return _gd_loop(W0, eta, steps, record_every, dev, batch_gamma, G)


def train_barlow_dual(K: ArrayLike, B0: ArrayLike, eta: float, steps: int, record_every: int = 1,
                      device: str | torch.device | None = None) -> History:
    """GD on linear Barlow Twins in its dual (kernel) form, eq. `eq-ssl2-dual`, in float64.

    K is the (2n, 2n) kernel matrix of the 2n views ordered [x_1..x_n, x_1'..x_n'], K_ab = k(x_a, x_b); the
    embedding is f = B^T k(., views), i.e. W = B^T A for features A (rows phi of the views), with B (2n, d). With the
    swap J of the two halves, Gamma = A^T J A / (2n), so C = B^T K J K B / (2n) and GD W <- W - 4 eta (C - I) W Gamma
    becomes B^T <- B^T - 4 eta (C - I) B^T K J / (2n). B0 (2n, d) or (batch, 2n, d). Records "loss" and "eigC"
    (decreasing eigenvalues of C); final["B"].
    """
    K = as_real_array("K", K, nonempty=True)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] % 2:
        raise ValueError(f"K must be a square (2n, 2n) kernel matrix of the two views; got shape {K.shape}")
    if not np.allclose(K, K.T, atol=1e-10 * max(1.0, np.abs(K).max())):
        raise ValueError("K must be symmetric (a kernel matrix)")
    B0 = as_real_array("B0", B0)
    if B0.ndim not in (2, 3) or B0.shape[-2] != K.shape[0]:
        raise ValueError(f"B0 must have shape (2n, d) or (batch, 2n, d) with 2n = {K.shape[0]}; got {B0.shape}")
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    n2 = K.shape[0]
    KJ = np.concatenate([K[:, n2 // 2:], K[:, : n2 // 2]], axis=1)          # K J: swap the column halves
    dev = get_device(device)
    batched = B0.ndim == 3
    Bt = torch.as_tensor(np.swapaxes(B0 if batched else B0[None], -1, -2), dtype=torch.float64, device=dev).clone()
    KJt = torch.as_tensor(KJ / n2, dtype=torch.float64, device=dev)                 # K J / (2n)
    KJKt = torch.as_tensor(KJ @ K / n2, dtype=torch.float64, device=dev)            # K J K / (2n)
    eye = torch.eye(Bt.shape[-2], dtype=torch.float64, device=dev)
    rec, Cs = [], []
    with few_threads_if_small(dev, Bt.numel()):
        for k in range(steps + 1):
            C = Bt @ KJKt @ Bt.mT
            if k % record_every == 0 or k == steps:
                check_finite("B", Bt, step=k)
                rec.append(k)
                Cs.append(0.5 * (C + C.mT))
            if k == steps:
                break
            Bt = Bt - 4.0 * eta * (C - eye) @ Bt @ KJt
    C = torch.stack(Cs)
    eigC = torch.linalg.eigvalsh(C).flip(-1).cpu().numpy()
    loss = ((C - eye) ** 2).sum(dim=(-2, -1)).cpu().numpy()
    Bf = np.swapaxes(Bt.cpu().numpy(), -1, -2)
    if not batched:
        eigC, loss, Bf = eigC[:, 0], loss[:, 0], Bf[0]
    return History(np.asarray(rec), {"loss": loss, "eigC": eigC}, {"B": Bf})


def measured_step_times(hist: History, level: float = 0.5, key: str = "eigC") -> np.ndarray:
    """First recorded step at which each column of hist[key] crosses `level`, linearly interpolated; nan if never.

    Returns (..., n) in the units of hist.steps (multiply by eta for flow time).
    """
    if not isinstance(hist, History):
        raise TypeError(f"hist must be a History from a Barlow simulator; got {type(hist).__name__}")
    key, level = as_str("key", key), _level(level)
    if key not in hist:
        raise ValueError(f"hist has no metric key={key!r}; recorded: {sorted(hist.metrics)}")
    x = np.moveaxis(as_real_array(f"hist[{key!r}]", hist[key], finite=False), 0, -1)     # (..., n, K)
    s = as_real_array("hist.steps", hist.steps)
    above = x >= level
    first = np.argmax(above, axis=-1)
    out = np.full(first.shape, np.nan)
    hit = above.any(axis=-1)
    for idx in zip(*np.nonzero(hit), strict=True):
        i = first[idx]
        if i == 0:
            out[idx] = s[0]
            continue
        y0, y1 = x[idx][i - 1], x[idx][i]
        out[idx] = s[i - 1] + (level - y0) / (y1 - y0) * (s[i] - s[i - 1])
    return out


def digits_views(n: int, noise: float = 0.3, mask: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two augmented views of n digits (sklearn's bundled 8x8 digits, no download), shape (n, 64) each.

    Pixels are scaled to [0, 1] and centred by the mean image; each view adds Gaussian noise (std `noise`) and
    then sets a random fraction `mask` of the pixels to zero (the mean). Images are drawn with replacement.
    """
    from sklearn.datasets import load_digits  # local import: sklearn is needed only here

    n = as_int("n", n, minimum=1)
    noise, mask = as_nonnegative("noise", noise), as_nonnegative("mask", mask)   # zero noise: identical views
    if mask >= 1:
        raise ValueError(f"mask (fraction of masked pixels) must lie in [0, 1); got {mask!r}")
    images = load_digits().data / 16.0
    images = images - images.mean(axis=0)
    rng = np.random.default_rng(as_seed("seed", seed))
    x0 = images[rng.integers(0, images.shape[0], n)]
    views = []
    for _ in range(2):
        v = x0 + noise * rng.standard_normal(x0.shape)
        views.append(v * (rng.random(x0.shape) >= mask))
    return views[0], views[1]


# ---- other losses: linear VICReg and linear SimCLR (section "Other losses") ---------------------------------------
def vicreg_loss(W: np.ndarray | torch.Tensor, Sigma: ArrayLike, Gamma: ArrayLike,
                beta: float = 1.0) -> np.ndarray | torch.Tensor:
    """L = ||W Sigma W^T - I||_F^2 + beta tr(W Delta W^T), Delta = 2 (Sigma - Gamma), eq. `eq-ssl2-vicreg`.

    Sigma = (X^T X + X'^T X') / (2n) is the covariance of the views, Gamma their symmetrised cross-correlation, and
    tr(W Delta W^T) = (1/n) sum_i ||W x_i - W x_i'||^2 the invariance term. Batched over leading axes of W; torch in,
    torch out.
    """
    S, G = _gamma(Sigma, "Sigma"), _gamma(Gamma)
    beta = as_nonnegative("beta", beta)
    if isinstance(W, torch.Tensor):
        St = torch.as_tensor(S, dtype=W.dtype, device=W.device)
        Dt = torch.as_tensor(2.0 * (S - G), dtype=W.dtype, device=W.device)
        eye = torch.eye(W.shape[-2], dtype=W.dtype, device=W.device)
        return (((W @ St @ W.mT - eye) ** 2).sum(dim=(-2, -1))
                + beta * (W @ Dt * W).sum(dim=(-2, -1)))
    W, S = _check_pair(W, S)
    C = W @ S @ np.swapaxes(W, -1, -2)
    return no_overflow("W", np.sum((C - np.eye(W.shape[-2])) ** 2, axis=(-2, -1))
                       + beta * np.sum((W @ (2.0 * (S - G))) * W, axis=(-2, -1)))


def vicreg_modes(Sigma: ArrayLike, Gamma: ArrayLike, beta: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rates kappa_j, saturation levels a*_j and variances s_j of linear VICReg's modes, eq. `eq-ssl2-vicreg-modes`.

    For commuting Sigma and Gamma (common eigenvectors v_j, Gamma's eigenvalues lam_j in decreasing order,
    s_j = v_j^T Sigma v_j > 0): the aligned strength a_j = s_j ||W v_j||^2 obeys da/dt = 8 s_j a (a*_j - a) with
    a*_j = 1 - beta (1 - lam_j / s_j), so u = a / a* is logistic with rate kappa_j = 8 s_j a*_j
    = 8 ((1 - beta) s_j + beta lam_j). Raises ValueError if Sigma and Gamma do not commute.
    """
    S, G = _gamma(Sigma, "Sigma"), _gamma(Gamma)
    if S.shape != G.shape:
        raise ValueError(f"Sigma and Gamma must have the same shape; got {S.shape} and {G.shape}")
    scale = max(1.0, np.abs(S).max(), np.abs(G).max())
    if np.abs(S @ G - G @ S).max() > 1e-10 * scale**2:
        raise ValueError("Sigma and Gamma must commute (share eigenvectors) for the mode decomposition")
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1].copy(), V[:, ::-1].copy()
    s = np.einsum("ij,ik,kj->j", V, S, V)
    if np.any(s <= 0):
        raise ValueError("Sigma must be positive definite (the covariance of the views)")
    beta = as_nonnegative("beta", beta)
    a_star = 1.0 - beta * (1.0 - lam / s)
    return 8.0 * s * a_star, a_star, s


def train_vicreg_linear(Sigma: ArrayLike, Gamma: ArrayLike, W0: ArrayLike, eta: float, steps: int, beta: float = 1.0,
                        record_every: int = 1, device: str | torch.device | None = None) -> History:
    """Full-batch GD on `vicreg_loss`: W <- W - eta [4 (C - I) W Sigma + 2 beta W Delta], C = W Sigma W^T, float64.

    W0 (d, m) or (B, d, m). Records "loss" (K,[B]) and "eigC" (K,[B],d), the eigenvalues of C in decreasing order.
    """
    S, G = _gamma(Sigma, "Sigma"), _gamma(Gamma)
    beta = as_nonnegative("beta", beta)
    W0 = as_real_array("W0", W0, nonempty=True)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, S, "W0")
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    dev = get_device(device)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone()
    St = torch.as_tensor(S, dtype=torch.float64, device=dev)
    Dt = torch.as_tensor(2.0 * (S - G), dtype=torch.float64, device=dev)
    eye = torch.eye(W.shape[-2], dtype=torch.float64, device=dev)
    rec, Cs, losses = [], [], []
    with few_threads_if_small(dev, W0.size):
        for k in range(steps + 1):
            WS = W @ St
            C = WS @ W.mT
            if k % record_every == 0 or k == steps:
                check_finite("W", W, step=k)
                rec.append(k)
                Cs.append(0.5 * (C + C.mT))
                losses.append(((C - eye) ** 2).sum(dim=(-2, -1)) + beta * (W @ Dt * W).sum(dim=(-2, -1)))
            if k == steps:
                break
            W = W - eta * (4.0 * (C - eye) @ WS + 2.0 * beta * W @ Dt)
    eigC = torch.linalg.eigvalsh(torch.stack(Cs)).flip(-1).cpu().numpy()
    loss = torch.stack(losses).cpu().numpy()
    Wf = W.cpu().numpy()
    if not batched:
        loss, eigC, Wf = loss[:, 0], eigC[:, 0], Wf[0]
    return History(np.asarray(rec), {"loss": loss, "eigC": eigC}, {"W": Wf})


def info_nce_linear(W: torch.Tensor, X: torch.Tensor, Xp: torch.Tensor, tau: float) -> torch.Tensor:
    """Symmetric InfoNCE of the unnormalised linear embeddings z = W x, z' = W x', eq. `eq-ssl2-simclr`.

    L = (1/2n) sum_i [ -2 z_i.z_i'/tau + log sum_k e^{z_i.z_k'/tau} + log sum_k e^{z_k.z_i'/tau} ]: each view's
    partner against the other view's batch. W (d, m) or (B, d, m); returns a scalar or (B,).
    """
    W = as_real_tensor("W", W, dtype=None, ndim=(2, 3), allow_grad=True)      # differentiable in W
    X, Xp = (as_real_tensor(n, x, dtype=W.dtype, device=W.device, ndim=2) for n, x in (("X", X), ("Xp", Xp)))
    if X.shape[1] != W.shape[-1]:
        raise ValueError(f"X (n, m) must have m = {W.shape[-1]} columns, those of W {tuple(W.shape)}; got "
                         f"{tuple(X.shape)}")
    if X.shape != Xp.shape:
        raise ValueError(f"X and Xp must hold the same n inputs; got shapes {tuple(X.shape)} and {tuple(Xp.shape)}")
    return no_overflow("W, X and Xp", _info_nce(W, X, Xp, as_positive("tau", tau)))


def _info_nce(W: torch.Tensor, X: torch.Tensor, Xp: torch.Tensor, tau: float) -> torch.Tensor:
    Z, Zp = X @ W.mT, Xp @ W.mT                                       # (..., n, d)
    logits = Z @ Zp.mT / tau                                          # (..., n, n)
    pos = logits.diagonal(dim1=-2, dim2=-1)
    return (-pos + 0.5 * (torch.logsumexp(logits, dim=-1) + torch.logsumexp(logits, dim=-2))).mean(dim=-1)


def train_simclr_linear(X: ArrayLike, Xp: ArrayLike, W0: ArrayLike, eta: float, steps: int, tau: float = 1.0,
                        record_every: int = 1, device: str | torch.device | None = None) -> History:
    """Full-batch GD on `info_nce_linear` (torch autograd, float64) from W0 (d, m) or (B, d, m).

    Records "loss" (K,[B]), "eigC" (K,[B],d) the eigenvalues of C = W Gamma W^T (Gamma = `gamma_matrix`(X, Xp)) and
    "modes" (K,[B],m) the strengths lam_j ||W v_j||^2 along Gamma's eigenvectors (decreasing lam_j).
    """
    X, Xp = as_real_array("X", X), as_real_array("Xp", Xp)
    G = gamma_matrix(X, Xp)
    W0 = as_real_array("W0", W0, nonempty=True)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, G, "W0")
    eta, steps, tau = as_positive("eta", eta), as_int("steps", steps, minimum=0), as_positive("tau", tau)
    record_every = as_int("record_every", record_every, minimum=1)
    dev = get_device(device)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone().requires_grad_(True)
    Xt, Xpt = (torch.as_tensor(a, dtype=torch.float64, device=dev) for a in (X, Xp))
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1].copy(), V[:, ::-1].copy()
    Gt, Vt = (torch.as_tensor(a, dtype=torch.float64, device=dev) for a in (G, V))
    rec, Cs, WVs, losses = [], [], [], []
    with few_threads_if_small(dev, X.size + W0.size):
        _simclr_loop(W, Xt, Xpt, tau, eta, steps, record_every, Gt, Vt, rec, Cs, WVs, losses)
    C = torch.stack(Cs)
    eigC = torch.linalg.eigvalsh(0.5 * (C + C.mT)).flip(-1).cpu().numpy()
    modes = lam * (torch.stack(WVs) ** 2).sum(dim=-2).cpu().numpy()
    loss = torch.stack(losses).cpu().numpy()
    Wf = W.detach().cpu().numpy()
    if not batched:
        loss, eigC, modes, Wf = loss[:, 0], eigC[:, 0], modes[:, 0], Wf[0]
    return History(np.asarray(rec), {"loss": loss, "eigC": eigC, "modes": modes}, {"W": Wf})


def _simclr_loop(W: torch.Tensor, Xt: torch.Tensor, Xpt: torch.Tensor, tau: float, eta: float, steps: int,
                 record_every: int, Gt: torch.Tensor, Vt: torch.Tensor, rec: list, Cs: list, WVs: list,
                 losses: list) -> None:
    """The GD loop of `train_simclr_linear`: autograd of `info_nce_linear`, recording into the lists given."""
    for k in range(steps + 1):
        loss = _info_nce(W, Xt, Xpt, tau)
        if k % record_every == 0 or k == steps:
            check_finite("W", W.detach(), step=k)
            rec.append(k)
            Wd = W.detach()
            Cs.append(Wd @ Gt @ Wd.mT)
            WVs.append(Wd @ Vt)
            losses.append(loss.detach())
        if k == steps:
            break
        (grad,) = torch.autograd.grad(loss.sum(), W)
        with torch.no_grad():
            W -= eta * grad


# ---- helpers ------------------------------------------------------------------------------------------------------
def _gd_loop(W0: np.ndarray, eta: float | ArrayLike, steps: int, record_every: int, dev: torch.device,
             step_gamma: Callable[[int], torch.Tensor], G: np.ndarray) -> History:
    steps = as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone()   # (B, d, m)
    B, d, m = W.shape
    if isinstance(eta, bool):
        raise TypeError(f"eta must be a real number or an array of them; got {eta!r}")
    eta_arr = np.atleast_1d(as_real_array("eta", eta))
    if eta_arr.ndim != 1 or eta_arr.size not in (1, B):
        raise ValueError(f"eta must be a float or have shape (B,) = ({B},); got shape {eta_arr.shape}")
    if not np.all(np.isfinite(eta_arr)) or np.any(eta_arr <= 0):
        raise ValueError(f"eta (step size) must be positive and finite; got {eta!r}")
    eta_t = torch.as_tensor(np.broadcast_to(eta_arr, (B,)).copy(), device=dev)[:, None, None]     # (B, 1, 1)
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1].copy(), V[:, ::-1].copy()
    Vt = torch.as_tensor(V, dtype=torch.float64, device=dev)
    eye = torch.eye(d, dtype=torch.float64, device=dev)
    Gfull = torch.as_tensor(G, dtype=torch.float64, device=dev)
    rec_steps, Cs, WVs = [], [], []
    for k in range(steps + 1):
        if k % record_every == 0 or k == steps:
            check_finite("W", W, step=k)
            rec_steps.append(k)
            Cs.append(W @ Gfull @ W.mT)                                                            # (B, d, d)
            WVs.append(W @ Vt)                                                                  # (B, d, m)
        if k == steps:
            break
        WG = W @ step_gamma(k)
        W = W - eta_t * 4.0 * (WG @ W.mT - eye) @ WG
    C = torch.stack(Cs)                                                                         # (K, B, d, d)
    C = 0.5 * (C + C.mT)
    eigC = torch.linalg.eigvalsh(C).flip(-1).cpu().numpy()
    loss = ((C - eye) ** 2).sum(dim=(-2, -1)).cpu().numpy()
    modes = lam * (torch.stack(WVs) ** 2).sum(dim=-2).cpu().numpy()                            # (K, B, m)
    Wf = W.cpu().numpy()
    if not batched:
        loss, eigC, modes, Wf = loss[:, 0], eigC[:, 0], modes[:, 0], Wf[0]
    return History(np.asarray(rec_steps), {"loss": loss, "eigC": eigC, "modes": modes}, {"W": Wf})


def _gamma(Gamma: ArrayLike, name: str = "Gamma") -> np.ndarray:
    G = as_real_array(name, Gamma, nonempty=True)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"{name} must be a square (m, m) matrix; got shape {G.shape}")
    if not np.allclose(G, G.T, rtol=0, atol=1e-10 * max(1.0, np.abs(G).max())):
        raise ValueError(f"{name} must be symmetric (a covariance or symmetrised cross-correlation of the views)")
    return 0.5 * (G + G.T)


def _check_pair(W: ArrayLike, Gamma: ArrayLike, name: str = "W") -> tuple[np.ndarray, np.ndarray]:
    W, G = as_real_array(name, W, nonempty=True), _gamma(Gamma)
    if W.ndim < 2 or W.shape[-1] != G.shape[0]:
        raise ValueError(f"{name} must have shape (..., d, m) with m = {G.shape[0]} (the size of Gamma); got {W.shape}")
    return W, G


def _level(level: float) -> float:
    level = as_positive("level", level)
    if level >= 1:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    return level


def _check_d(d: int, W: np.ndarray, G: np.ndarray, name: str = "W") -> int:
    d = as_int("d", d, minimum=1)
    if d > G.shape[-1]:
        raise ValueError(f"d (embedding dimension) must be at most m = {G.shape[-1]}; got {d}")
    if W.shape[-2] != d:
        raise ValueError(f"{name} has {W.shape[-2]} rows but d = {d}")
    if W.shape[-1] != G.shape[-1]:
        raise ValueError(f"{name} must have m = {G.shape[-1]} columns (the size of Gamma); got {W.shape[-1]}")
    return d


def _top_eigh(G: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The d largest eigenvalues (decreasing) of the symmetric G and their eigenvectors as columns."""
    lam, V = np.linalg.eigh(G)
    return lam[::-1][:d].copy(), V[:, ::-1][:, :d].copy()
