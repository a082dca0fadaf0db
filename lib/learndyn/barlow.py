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

Layout: this module holds the closed forms; the torch simulators, the view data and the cross-correlation
`gamma_matrix` live in `learndyn.barlow_sim` and are re-exported here, so Chapter 4 and `learndyn.exercises` call
everything as `ld.barlow.*` (`ld.barlow.train_barlow_linear` is `ld.barlow_sim.train_barlow_linear`).
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from .barlow_sim import (  # re-export: the simulators the closed forms are checked against
    _check_d,
    _eigh_desc,
    _gamma,
    _level,
    digits_views,
    gamma_matrix,
    info_nce_linear,
    measured_step_times,
    train_barlow_dual,
    train_barlow_linear,
    train_barlow_views,
    train_simclr_linear,
    train_vicreg_linear,
)
from .core import (
    as_bool,
    as_int,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_seed,
    broadcast,
    check_finite,
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
    rate = 4.0 * eta * lam
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps):
            a = a * (1.0 + rate * (1.0 - a)) ** 2
            out[k + 1] = a
    finite = np.isfinite(out.reshape(steps + 1, -1)).all(axis=1)
    if not finite.all():                                          # the first step that leaves the finite numbers
        first = int(np.argmin(finite))
        check_finite("a", out[first], step=first)
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


def nonlinear_gain(W0: ArrayLike, Gamma: ArrayLike, d: int, a0: ArrayLike | None = None,
                   between_steps: bool = False) -> np.ndarray:
    """First-order size of the nonlinear-phase gain of each mode, as a relative change of its strength; (..., d).

    While mode i < j saturates, the part of w_j along its Gram-Schmidt direction q_i stops growing only when mode i
    is learned, at ||q_i^T w_j(0)||^2 a_i^{-lam_j / lam_i}; at the crossing of mode j (where its orthogonal part has
    grown by 1 / a_j) that frozen part is a relative theta_j = sum_{i<j} chi_ij a_j a_i^{-lam_j / lam_i} of its
    strength, chi_ij = (q_i^T w_j(0))^2 / ||P_perp(<j) w_j(0)||^2. A relative change theta of the strength moves
    the crossing by theta rise times 1 / (8 lam_j). a0: the effective strengths (default `linear_phase_a0`).
    An order-of-magnitude estimate (it neglects the rotation of the saturated directions), not a correction.

    between_steps: add the next order, the gain's effect on the growth rate. In the Gram matrix of the modes,
    G = A^T A with A = W0-columns sqrt(lam_k) w_k (its nonzero eigenvalues are those of C), the flow is
    dG/dt = 4 [Lam (G - G^2) + (G - G^2) Lam] and d ln det G / dt = 8 tr(Lam (I - G)). After mode i saturates,
    the frozen off-diagonal entry g_ij^2 = theta_ij holds 1 - n_i at theta_ij, so the j-th eigenvalue of C grows at
    8 lam_j (1 - c_j) + 8 (lam_i - lam_j) theta_ij until it crosses: (lam_i - lam_j) 8 (t_j - t_i) theta_ij rise
    times more, t the flow step times of `barlow_time`(lam, a0). Returned then: sum_{i<j} theta_ij
    (1 + 8 (lam_i - lam_j)(t_j - t_i)), an upper estimate (g_ij decays once mode j is of order 1).
    """
    W0, G = _check_pair(W0, Gamma, "W0")
    d = _check_d(d, W0, G, "W0")
    between_steps = as_bool("between_steps", between_steps)
    lam, V = _top_eigh(G, d)
    a = linear_phase_a0(W0, G, d) if a0 is None else np.broadcast_to(as_real_array("a0", a0), W0.shape[:-2] + (d,))
    w = (W0 @ V).reshape(-1, d, d)                               # column j is w_j = W0 v_j
    a = np.asarray(a, dtype=float).reshape(-1, d)
    out = np.zeros_like(a)
    for b in range(len(w)):
        q = np.linalg.qr(w[b])[0]
        t = barlow_time(lam, a[b]) if between_steps else None
        for j in range(1, d):
            along = q[:, :j].T @ w[b][:, j]
            perp2 = np.sum((w[b][:, j] - q[:, :j] @ along) ** 2)
            theta = along**2 / perp2 * a[b, j] * a[b, :j] ** (-lam[j] / lam[:j])
            if t is not None:
                theta = theta * (1.0 + 8.0 * (lam[:j] - lam[j]) * (t[j] - t[:j]))
            out[b, j] = theta.sum()
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
    lam, V = _eigh_desc(G)
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
    lam, V = _eigh_desc(G)
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
    lam, V = _eigh_desc(G)
    s = np.einsum("ij,ik,kj->j", V, S, V)
    if np.any(s <= 0):
        raise ValueError("Sigma must be positive definite (the covariance of the views)")
    beta = as_nonnegative("beta", beta)
    a_star = 1.0 - beta * (1.0 - lam / s)
    return 8.0 * s * a_star, a_star, s


# ---- helpers ------------------------------------------------------------------------------------------------------


def _check_pair(W: ArrayLike, Gamma: ArrayLike, name: str = "W") -> tuple[np.ndarray, np.ndarray]:
    W, G = as_real_array(name, W, nonempty=True), _gamma(Gamma)
    if W.ndim < 2 or W.shape[-1] != G.shape[0]:
        raise ValueError(f"{name} must have shape (..., d, m) with m = {G.shape[0]} (the size of Gamma); got {W.shape}")
    return W, G


def _top_eigh(G: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The d largest eigenvalues (decreasing) of the symmetric G and their eigenvectors as columns."""
    lam, V = _eigh_desc(G)
    return lam[:d].copy(), V[:, :d].copy()
