"""Diagonal linear networks w = u_+ * u_+ - u_- * u_- (Chapter 8): implicit bias, saddles and large steps.

Conventions: the loss is L(w) = 1/2 ||X w - y||^2 (Chapter 1), the layers start at u_+ = u_- = alpha (so w_0 = 0),
and the flow is du_+/dt = -grad_{u_+} L = -2 u_+ * g, du_-/dt = +2 u_- * g with g = X^T (X w - y). GD step k is
compared with flow time t = eta k. Theory: numpy and scipy, float64. Simulators: torch, batched over runs (one
alpha and one eta per run), on `device`.

- `hyperbolic_entropy`, `mirror_map`: Q_alpha and its gradient (eq-diag-entropy, eq-diag-mirror-map).
- `entropy_interpolator`: argmin Q_alpha(w) subject to X w = y, by damped Newton on its dual program (the
  independent side of the implicit-bias checks); alpha may be one number or one per coordinate.
- `basis_pursuit`: argmin ||w||_1 subject to X w = y, by linear programming (scipy.optimize.linprog, HiGHS).
- `kkt_distance_bound`: the a-posteriori bound eq-diag-kkt-bound on the distance of an interpolator to argmin Q_alpha.
- `l2_correction`: the leading correction eq-diag-l2-corr of argmin Q_alpha to X^+ y for large alpha.
- `saddle_sequence`: the saddle-to-saddle recursion eq-diag-jump of Pesme & Flammarion (2023) for alpha -> 0.
- `l1_statistical_dimension`: ALMT's upper bound on the statistical dimension of the l1 descent cone (Amelunxen,
  Lotz, McCoy & Tropp 2014, Prop. 4.5); `l1_descent_cone_distances`: per-sample draws whose mean is the exact one.
- `depth_h`, `depth_mirror_map`, `depth_entropy`, `depth_interpolator`: the depth-D entropy Q^D_alpha of
  Woodworth et al. (2020) for w = u^D - v^D, D >= 3 (eq-diag-depth-h, eq-diag-depth-entropy), its gradient
  h_D^{-1}(w / alpha^D) and argmin Q^D_alpha subject to X w = y; `gd_depth`: plain GD on that model.
- `gd_diagonal`: batched GD on (u_+, u_-), with the exact shrinkage sum of eq-diag-gd-alpha.

References: Woodworth et al. (2020), Pesme & Flammarion (2023), Even, Pesme, Gunasekar & Flammarion (2023).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import LinearConstraint, linprog, lsq_linear, minimize, minimize_scalar
from scipy.stats import norm

from .core import History, as_int, as_positive, as_real_array, as_seed, get_device, no_overflow

__all__ = ["hyperbolic_entropy", "mirror_map", "entropy_interpolator", "basis_pursuit", "kkt_distance_bound",
           "l2_correction", "saddle_sequence", "depth_h", "depth_mirror_map", "depth_entropy",
           "depth_interpolator", "gd_depth", "Saddles", "l1_statistical_dimension", "l1_descent_cone_distances",
           "gd_diagonal"]


# --- theory ------------------------------------------------------------------------------------------------------
def hyperbolic_entropy(w: np.ndarray, alpha: float | np.ndarray) -> float:
    """Q_alpha(w) = sum_i alpha_i^2 q(w_i / alpha_i^2), q(z) = 2 - sqrt(4 + z^2) + z arcsinh(z / 2), eq-diag-entropy."""
    w, a2 = _w_alpha2(w, alpha)
    z = w / a2
    return float(no_overflow("w", np.sum(a2 * (2 - np.sqrt(4 + z**2) + z * np.arcsinh(z / 2)))))


def mirror_map(w: np.ndarray, alpha: float | np.ndarray) -> np.ndarray:
    """The mirror map psi = grad Q_alpha(w) = arcsinh(w / (2 alpha^2)), eq-diag-mirror-map."""
    w, a2 = _w_alpha2(w, alpha)
    return np.arcsinh(w / (2 * a2))


def entropy_interpolator(X: np.ndarray, y: np.ndarray, alpha: float | np.ndarray,
                         bias: np.ndarray | None = None) -> np.ndarray:
    """argmin Q_alpha(w) + <bias, w> subject to X w = y, by damped Newton on the dual program.

    `bias` (default 0) is the perturbed reference point of gradient descent's exact characterisation
    (final["bend"] of `gd_diagonal`); with it the optimality system is grad Q_alpha(w) + bias in range(X^T).

    The program is strictly convex (the Hessian of Q_alpha is diag(1/sqrt(w^2 + 4 alpha^4)) > 0). Its dual,
    min over lambda in R^n of sum_i 2 alpha_i^2 cosh((X^T lambda - bias)_i) - <y, lambda>, is smooth and strictly
    convex (X of full row rank), and its minimiser gives w = 2 alpha^2 sinh(X^T lambda - bias); Newton steps, capped
    at a change of 2 in X^T lambda and backtracked (Armijo), converge from lambda = 0 at every scale, alpha = 1e-128
    included (the exponentials are formed as exp(z + ln alpha^2)), until X w = y holds to 1e-13 max(1, |y|); a solve
    that does not reach 1e-9 raises. The point is then polished by Newton steps on the primal optimality system
    (eq-diag-kkt) written with `mirror_map`, so that the answer rests on Q_alpha as the library writes it; at the
    smallest scales (about alpha < 1e-20), where that system is too ill-conditioned in float64, the dual's point is
    kept. alpha: a number or one per coordinate.
    """
    X, y = _design(X, y)
    n, d = X.shape
    _, a2 = _w_alpha2(np.zeros(d), alpha)
    b = np.zeros(d) if bias is None else as_real_array("bias", bias)
    if b.shape != (d,):
        raise ValueError(f"bias must have shape ({d},); got {b.shape}")
    log_a2, scale = np.log(a2), max(1.0, float(np.abs(y).max()))

    def primal(lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """w(lambda), the weights 2 alpha^2 cosh(z) of the dual Hessian, and the dual objective."""
        z = X.T @ lam - b
        with np.errstate(over="ignore"):
            up, down = np.exp(z + log_a2), np.exp(-z + log_a2)
        return up - down, up + down, float(np.sum(up + down) - y @ lam)

    lam = np.zeros(n)
    w, c, f = primal(lam)
    for _ in range(3000):
        r = X @ w - y
        if np.abs(r).max() <= 1e-13 * scale:
            break
        m = c.max()
        H = (X * (c / m)) @ X.T  # the dual Hessian X diag(c) X^T over its largest weight
        step = np.linalg.solve(H + 1e-15 * np.trace(H) * np.eye(n), r / m)
        dz = float(np.abs(X.T @ step).max())
        t, decrease, size = min(1.0, 2.0 / dz) if dz > 0 else 1.0, float(r @ step), np.linalg.norm(r)
        for _halving in range(50):  # Armijo on the dual objective, or (where rounding hides it) on |X w - y|
            w_t, c_t, f_t = primal(lam - t * step)
            if f_t <= f - 0.25 * t * decrease or np.linalg.norm(X @ w_t - y) <= (1 - 0.25 * t) * size:
                break
            t /= 2
        else:
            break  # no decrease left at float64 precision
        lam, w, c, f = lam - t * step, w_t, c_t, f_t
    residual = float(np.abs(X @ w - y).max())
    if not np.all(np.isfinite(w)) or residual > 1e-9 * scale:
        raise RuntimeError(f"entropy_interpolator did not converge at alpha = {alpha}: |X w - y| = {residual:.1e}")
    return _polish(X, y, w, lam, a2, b)


def _polish(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: np.ndarray, a2: np.ndarray,
            b: np.ndarray) -> np.ndarray:
    """Newton on the primal optimality system F(w, lam) = (mirror_map(w) + b - X^T lam, X w - y) = 0 (eq-diag-kkt),
    written with `mirror_map` and the Hessian of `hyperbolic_entropy`, from the dual's point; its result if it
    converges and interpolates at least as well, else the dual's point (the system is too ill-conditioned in float64
    at the smallest scales)."""
    n, d = X.shape
    w0, r0 = w, float(np.abs(X @ w - y).max())
    for _ in range(30):
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            F = np.concatenate([mirror_map(w, np.sqrt(a2)) + b - X.T @ lam, X @ w - y])
            J = np.block([[np.diag(1 / np.sqrt(w**2 + 4 * a2**2)), -X.T], [X, np.zeros((n, n))]])
            try:
                step = np.linalg.solve(J, F)
            except np.linalg.LinAlgError:
                return w0
        w, lam = w - step[:d], lam - step[d:]
        if not np.all(np.isfinite(w)):
            return w0
        if np.max(np.abs(step[:d])) <= 1e-15 * max(1.0, np.max(np.abs(w))):
            return w if float(np.abs(X @ w - y).max()) <= max(r0, 1e-15) else w0
    return w0


def depth_h(s: np.ndarray, depth: int) -> np.ndarray:
    """h_D(s) = (1 - s)^(-D/(D-2)) - (1 + s)^(-D/(D-2)) on -1 < s < 1, for depth D >= 3 (eq-diag-depth-h).

    The depth-D flow from u = v = alpha (w = u^D - v^D) is w(t) = alpha^D h_D(s(t)) with s(t) in range(X^T)
    (Woodworth et al. 2020): u^(2-D) and v^(2-D) move by -+D (D-2) int g dt. Odd, increasing, onto R.
    """
    depth = _depth(depth)
    s = as_real_array("s", s)
    if np.any(np.abs(s) >= 1):
        raise ValueError("s must lie in (-1, 1)")
    return _depth_h(s, depth)


def _depth_h(s: np.ndarray, depth: int) -> np.ndarray:
    """`depth_h` on checked arguments (the bisection of `depth_mirror_map` calls it hundreds of times)."""
    e = -depth / (depth - 2)
    return (1 - s) ** e - (1 + s) ** e


def depth_mirror_map(w: np.ndarray, alpha: float, depth: int) -> np.ndarray:
    """grad Q^D_alpha(w) = h_D^{-1}(w / alpha^D), the inverse of `depth_h` (eq-diag-depth-entropy).

    Solved coordinatewise by (at most) 200 bisection steps on (-1, 1) followed by two Newton steps (h_D is
    increasing with h_D'(s) = D/(D-2) ((1 - s)^(-(2D-2)/(D-2)) + (1 + s)^(-(2D-2)/(D-2))) > 0), to float64
    accuracy. The bisection stops once a step changes no bracket: from there on every step would repeat it.
    """
    depth = _depth(depth)
    w = as_real_array("w", w)
    alpha = as_positive("alpha", alpha)
    z = no_overflow("w", w / alpha**depth)
    lo, hi = np.full(z.shape, -1.0), np.full(z.shape, 1.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        above = _depth_h(mid, depth) > z
        lo_new, hi_new = np.where(above, lo, mid), np.where(above, mid, hi)
        if np.array_equal(lo_new, lo) and np.array_equal(hi_new, hi):
            break
        lo, hi = lo_new, hi_new
    s = 0.5 * (lo + hi)
    for _ in range(2):
        s_new = s - (_depth_h(s, depth) - z) / _depth_h_prime(s, depth)
        s = np.where(np.abs(s_new) < 1, s_new, s)
    return s


def depth_entropy(w: np.ndarray, alpha: float, depth: int) -> float:
    """Q^D_alpha(w) = alpha^D sum_i q_D(w_i / alpha^D), q_D(z) = int_0^z h_D^{-1}(t) dt (eq-diag-depth-entropy).

    By the Legendre identity q_D(z) = z s - q_D*(s) at s = h_D^{-1}(z), with q_D*(s) = int_0^s h_D
    = (D - 2)/2 ((1 - s)^(-2/(D-2)) + (1 + s)^(-2/(D-2)) - 2). Strictly convex; for depth D >= 3.
    """
    depth = _depth(depth)
    alpha = as_positive("alpha", alpha)
    w = as_real_array("w", w, ndim=1, nonempty=True)
    s = depth_mirror_map(w, alpha, depth)
    c = 2 / (depth - 2)
    q_star = (depth - 2) / 2 * ((1 - s) ** -c + (1 + s) ** -c - 2)
    return float(alpha**depth * np.sum(w / alpha**depth * s - q_star))


def depth_interpolator(X: np.ndarray, y: np.ndarray, alpha: float, depth: int) -> np.ndarray:
    """argmin Q^D_alpha(w) subject to X w = y (depth D >= 3), by scipy's trust-constr on the primal program.

    The Hessian of Q^D_alpha is diag(1 / (alpha^D h_D'(s))) at s = h_D^{-1}(w / alpha^D); the result is polished
    by Newton steps on X w = y, h_D^{-1}(w / alpha^D) in range(X^T), to float64 accuracy.
    """
    X, y = _design(X, y)
    depth, alpha = _depth(depth), as_positive("alpha", alpha)
    scale = alpha**depth

    def hess(w: np.ndarray) -> np.ndarray:
        return np.diag(1 / (scale * _depth_h_prime(depth_mirror_map(w, alpha, depth), depth)))

    res = minimize(lambda w: depth_entropy(w, alpha, depth), np.linalg.pinv(X) @ y,
                   jac=lambda w: depth_mirror_map(w, alpha, depth), hess=hess, method="trust-constr",
                   constraints=[LinearConstraint(X, y, y)], options={"gtol": 1e-12, "xtol": 1e-15, "maxiter": 4000})
    w = res.x
    n, d = X.shape
    lam = np.linalg.lstsq(X.T, depth_mirror_map(w, alpha, depth), rcond=None)[0]
    for _ in range(30):  # Newton on F(w, lam) = (h_D^{-1}(w / alpha^D) - X^T lam, X w - y) = 0
        F = np.concatenate([depth_mirror_map(w, alpha, depth) - X.T @ lam, X @ w - y])
        J = np.block([[hess(w), -X.T], [X, np.zeros((n, n))]])
        step = np.linalg.solve(J, F)
        w, lam = w - step[:d], lam - step[d:]
        if np.max(np.abs(step[:d])) <= 1e-15 * max(1.0, np.max(np.abs(w))):
            break
    return w


def gd_depth(X: np.ndarray, y: np.ndarray, alpha: float, depth: int, eta: float, steps: int) -> np.ndarray:
    """GD on L = 1/2 ||X (u^D - v^D) - y||^2 from u = v = alpha (numpy, float64): the end point w = u^D - v^D.

    u <- u - eta D u^(D-1) g, v <- v + eta D v^(D-1) g, g = X^T (X w - y); the flow's limit is
    `depth_interpolator` (Woodworth et al. 2020), GD's differs from it by O(eta).
    """
    X, y = _design(X, y)
    depth, alpha, eta = _depth(depth), as_positive("alpha", alpha), as_positive("eta", eta)
    steps = as_int("steps", steps, minimum=0)
    u, v = np.full(X.shape[1], alpha), np.full(X.shape[1], alpha)
    for _ in range(steps):
        g = X.T @ (X @ (u**depth - v**depth) - y)
        u, v = u - eta * depth * u ** (depth - 1) * g, v + eta * depth * v ** (depth - 1) * g
    return no_overflow("w", u**depth - v**depth)


def basis_pursuit(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin ||w||_1 subject to X w = y, as the linear program min 1^T (p + m), X (p - m) = y, p, m >= 0 (HiGHS)."""
    X, y = _design(X, y)
    d = X.shape[1]
    res = linprog(np.ones(2 * d), A_eq=np.hstack([X, -X]), b_eq=y, bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        raise ValueError(f"basis_pursuit: the linear program failed ({res.message}); is X w = y solvable?")
    return res.x[:d] - res.x[d:]


def kkt_distance_bound(X: np.ndarray, w: np.ndarray, alpha: float | np.ndarray) -> tuple[float, np.ndarray]:
    """A-posteriori bound eq-diag-kkt-bound on the distance of an interpolator w to w* = argmin Q_alpha.

    With H = diag(1/sqrt(w^2 + 4 alpha^4)) and the defect p = psi(w) - X^T lam (lam by H^-1-weighted least
    squares), ||w - w*||_H <= ||H^{-1/2} p|| to first order in w - w*, hence |w_i - w*_i| <= that / sqrt(H_ii).
    Returns (the H-norm bound, the coordinate-wise bounds). w must interpolate (X w = y) for the bound to hold.
    """
    X = as_real_array("X", X, nonempty=True)
    w, a2 = _w_alpha2(w, alpha)
    if X.ndim != 2 or X.shape[1] != w.size:
        raise ValueError(f"X must be (n, {w.size}) to match w; got {X.shape}")
    h_inv_sqrt = no_overflow("w", (w**2 + 4 * a2**2) ** 0.25)  # H^{-1/2}
    psi = mirror_map(w, np.sqrt(a2))
    lam = np.linalg.lstsq((X * h_inv_sqrt).T, h_inv_sqrt * psi, rcond=None)[0]
    e_h = float(np.linalg.norm(h_inv_sqrt * (psi - X.T @ lam)))
    return e_h, e_h * h_inv_sqrt


def l2_correction(X: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Leading large-alpha correction eq-diag-l2-corr: argmin Q_alpha - X^+ y = Pi_ker((X^+ y)^3) / (24 alpha^4)."""
    X, y = _design(X, y)
    alpha = as_positive("alpha", alpha)
    pinv = np.linalg.pinv(X)
    cube = (pinv @ y) ** 3
    return (cube - pinv @ (X @ cube)) / (24 * alpha**4)


@dataclass
class Saddles:
    """The saddle sequence of `saddle_sequence`: jump times in accelerated time and the plateaus after them.

    times:   (M,) accelerated jump times t~_m = 4 t / ln(1/alpha^2), m = 1..M, increasing
    points:  (M + 1, d) the saddles w^(0) = 0, w^(1), ..., w^(M) (the last one interpolates)
    losses:  (M + 1,) L(w^(m))
    """

    times: np.ndarray
    points: np.ndarray
    losses: np.ndarray


def saddle_sequence(X: np.ndarray, y: np.ndarray, max_jumps: int = 100, tol: float = 1e-10) -> Saddles:
    """The alpha -> 0 limit of the flow in accelerated time (Pesme & Flammarion 2023), eq-diag-jump.

    s(t~) = -int_0^t~ grad L(w) is piecewise linear. From a saddle w^(m) at time t~_m, s moves with velocity
    -grad L(w^(m)) until a coordinate with |s_i| < 1 (or one on the boundary whose w_i = 0 and which moves inwards)
    reaches +-1; the next saddle minimises L subject to w_i = 0 where |s_i| < 1 and sign(w_i) = s_i where
    |s_i| = 1 (bounded least squares, scipy lsq_linear). Stops when L(w) <= tol L(0).
    """
    X, y = _design(X, y)
    max_jumps, tol = as_int("max_jumps", max_jumps, minimum=1), as_positive("tol", tol)
    n, d = X.shape
    w, s, t = np.zeros(d), np.zeros(d), 0.0
    times, points, losses = [], [w.copy()], [0.5 * float(y @ y)]
    for _ in range(max_jumps):
        g = X.T @ (X @ w - y)
        if 0.5 * np.sum((X @ w - y) ** 2) <= tol * losses[0]:
            break
        gscale = np.max(np.abs(g))
        moving = np.abs(g) > 1e-9 * gscale
        target = -np.sign(g)
        dist = 1 - target * s
        ok = moving & (dist > 1e-12)
        if not np.any(ok):
            break
        dt = np.where(ok, dist / np.where(ok, np.abs(g), 1.0), np.inf)
        i = int(np.argmin(dt))
        t += float(dt[i])
        s = s - dt[i] * g
        s[i] = target[i]
        s = np.clip(s, -1, 1)
        on = np.abs(np.abs(s) - 1) <= 1e-12
        lo = np.where(on & (s > 0), 0.0, np.where(on, -np.inf, 0.0))
        hi = np.where(on & (s < 0), 0.0, np.where(on, np.inf, 0.0))
        cols = np.flatnonzero(on)
        w = np.zeros(d)
        res = lsq_linear(X[:, cols], y, bounds=(lo[cols], hi[cols]), method="bvls", tol=1e-14)
        w[cols] = res.x
        times.append(t)
        points.append(w.copy())
        losses.append(0.5 * float(np.sum((X @ w - y) ** 2)))
    return Saddles(np.array(times), np.array(points), np.array(losses))


def l1_descent_cone_distances(d: int, p: int, samples: int, seed: int) -> np.ndarray:
    """min_{tau >= 0} dist^2(g, tau * subdifferential of ||.||_1 at a p-sparse vector), one per Gaussian draw g.

    Their mean is the statistical dimension delta of the l1 descent cone (ALMT 2014, Prop. 4.5 with the minimum
    inside the expectation; eq-diag-statdim-exact). By symmetry the support is the first p coordinates with signs
    +1: f(tau) = sum_S (g_i - tau)^2 + sum_off (|g_i| - tau)_+^2, convex and piecewise quadratic, minimised exactly
    on the interval of sorted |g_off| that contains its stationary point. The draws g are seeded by `seed`.
    Returns shape (samples,).
    """
    d, p, samples = as_int("d", d, minimum=2), as_int("p", p, minimum=1), as_int("samples", samples, minimum=1)
    if not 0 < p < d:
        raise ValueError(f"need 0 < p < d; got p = {p}, d = {d}")
    g = np.random.default_rng(as_seed("seed", seed)).standard_normal((samples, d))
    g_s, a = g[:, :p], -np.sort(-np.abs(g[:, p:]), axis=1)  # off-support magnitudes, decreasing
    k = np.arange(d - p + 1)  # number of off-support entries above tau
    tau = (g_s.sum(1)[:, None] + np.concatenate([np.zeros((samples, 1)), np.cumsum(a, 1)], 1)) / (p + k)
    upper = np.concatenate([np.full((samples, 1), np.inf), a], 1)
    lower = np.concatenate([a, np.zeros((samples, 1))], 1)
    pick = np.argmax((tau <= upper) & (tau >= lower), axis=1)  # exactly one interval holds the stationary point
    t = np.maximum(tau[np.arange(samples), pick], 0.0)[:, None]
    return ((g_s - t) ** 2).sum(1) + (np.maximum(a - t, 0.0) ** 2).sum(1)


def l1_statistical_dimension(d: int, p: int) -> float:
    """ALMT's upper bound n_l1 >= delta on the statistical dimension of the l1 descent cone at a p-sparse vector
    in R^d (ALMT 2014, Prop. 4.5: n_l1 - 2 sqrt(d/p) <= delta <= n_l1; eq-diag-statdim).

    n_l1 = min_{tau >= 0} p (1 + tau^2) + (d - p) E[(|g| - tau)_+^2] (the minimum outside the expectation),
    E[(|g| - tau)_+^2] = 2 ((1 + tau^2) Phi(-tau) - tau phi(tau)) for g ~ N(0, 1).
    """
    d, p = as_int("d", d, minimum=2), as_int("p", p, minimum=1)
    if not 0 < p < d:
        raise ValueError(f"need 0 < p < d; got p = {p}, d = {d}")

    def f(tau: float) -> float:
        tail = 2 * ((1 + tau**2) * norm.cdf(-tau) - tau * norm.pdf(tau))
        return p * (1 + tau**2) + (d - p) * tail

    res = minimize_scalar(f, bounds=(0.0, 10.0), method="bounded", options={"xatol": 1e-12})
    return float(res.fun)


# --- simulator ---------------------------------------------------------------------------------------------------
def gd_diagonal(X: np.ndarray, y: np.ndarray, alpha: np.ndarray, eta: np.ndarray, steps: int,
                record_every: int = 0, device: str | torch.device | None = None, bend: bool = True) -> History:
    """Batched GD on L = 1/2 ||X (u_+^2 - u_-^2) - y||^2 from u_+ = u_- = alpha, one (alpha, eta) per run, float64.

    u_+ <- u_+ (1 - 2 eta g), u_- <- u_- (1 + 2 eta g), g = X^T (X w - y), the exact product form of eq-diag-gd-alpha.
    Records the loss at every step ("loss", (steps + 1, B)) and w every `record_every` steps ("w", (K, B, d)) when
    record_every > 0. final: "w" (B, d); "log_shrink" (B, d) = sum_k ln|1 - 4 eta^2 g_k^2|; "bend" (B, d) =
    sum_k (ln|(1 + 2 eta g_k) / (1 - 2 eta g_k)| - 4 eta g_k), the bent mirror (= 2 artanh(2 eta g_k) - 4 eta g_k
    while |2 eta g_k| < 1; the absolute values keep it exact after a factor 1 -+ 2 eta g_k changes sign);
    "max_step" (B,) = max_k max_i |2 eta g_k,i| (above 1: some factor 1 -+ 2 eta g changed sign); "diverged" (B,)
    bool. At every step, w_k = -2 alpha_k^2 sinh(4 eta sum g + bend) exactly (eq-diag-gd-alpha,
    eq-diag-gd-abs), with alpha_k^2 = alpha^2 exp(log_shrink).
    bend=False skips that sum (final["bend"] is then None) for long runs that do not need it.
    """
    X, y = _design(X, y)
    alpha = np.atleast_1d(as_real_array("alpha", alpha, nonempty=True))
    eta = np.atleast_1d(as_real_array("eta", eta, nonempty=True))
    if alpha.ndim != 1 or alpha.shape != eta.shape:
        raise ValueError(f"alpha and eta must be 1-d of one length (one per run); got {alpha.shape}, {eta.shape}")
    if np.any(alpha <= 0) or np.any(eta <= 0):
        raise ValueError("alpha and eta must be positive")
    steps, record_every = as_int("steps", steps, minimum=0), as_int("record_every", record_every, minimum=0)
    dev = get_device(device) if device is not None else torch.device("cpu")
    Xt, yt = torch.tensor(X, device=dev), torch.tensor(y, device=dev)
    a = torch.tensor(alpha, device=dev)[:, None]
    e2 = 2 * torch.tensor(eta, device=dev)[:, None]
    up, um = a.repeat(1, X.shape[1]), a.repeat(1, X.shape[1])
    log_shrink = torch.zeros_like(up)
    max_step = torch.zeros(alpha.size, dtype=torch.float64, device=dev)
    bend_sum = torch.zeros_like(up) if bend else None
    losses = torch.empty(steps + 1, alpha.size, dtype=torch.float64, device=dev)
    ws, rec = [], []
    threads = torch.get_num_threads()
    if dev.type == "cpu":
        torch.set_num_threads(1)  # tiny tensors: a second thread only spins (measured: 20 x the CPU time)
    try:
        up, um, log_shrink, w = _gd_loop(Xt, yt, e2, up, um, log_shrink, bend_sum, max_step, losses, steps,
                                         record_every, ws, rec)
    finally:
        torch.set_num_threads(threads)
    loss = losses.cpu().numpy()
    metrics = {"loss": loss}
    if record_every:
        metrics["w"] = np.array(ws)
    return History(np.array(rec) if record_every else np.arange(steps + 1), metrics,
                   {"w": w.cpu().numpy(), "log_shrink": log_shrink.cpu().numpy(),
                    "bend": None if bend_sum is None else bend_sum.cpu().numpy(),
                    "max_step": max_step.cpu().numpy(),
                    "diverged": ~np.isfinite(loss[-1])})


def _gd_loop(Xt: torch.Tensor, yt: torch.Tensor, e2: torch.Tensor, up: torch.Tensor, um: torch.Tensor,
             log_shrink: torch.Tensor, bend: torch.Tensor | None, max_step: torch.Tensor, losses: torch.Tensor,
             steps: int, record_every: int, ws: list, rec: list, chunk_entries: int = 1 << 20
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The iteration of `gd_diagonal`. Per step only what the next step needs runs (w, the residual r, 2 eta g and
    the product update), into preallocated per-step slots; the loss, the shrinkage ln|1 - (2 eta g)^2|, the bend and
    the largest |2 eta g| are formed afterwards on chunks of steps at once and added up step by step in the same
    order, at most `chunk_entries` entries of 2 eta g per chunk."""
    B, (n, d) = up.shape[0], Xt.shape
    XtT = Xt.T
    K = max(1, min(steps + 1, chunk_entries // (B * max(n, d))))
    res = torch.empty(K, B, n, dtype=up.dtype, device=up.device)   # r at each step of the chunk
    egs = torch.empty(K, B, d, dtype=up.dtype, device=up.device)   # 2 eta g at each step of the chunk
    slots = list(zip(res.unbind(0), egs.unbind(0), strict=True))
    for k0 in range(0, steps + 1, K):
        m = min(K, steps + 1 - k0)
        for k, (r, eg) in zip(range(k0, k0 + m), slots, strict=False):
            w = up * up - um * um
            torch.sub(w @ XtT, yt, out=r)
            if record_every and k % record_every == 0:
                ws.append(w.cpu().numpy())
                rec.append(k)
            if k == steps:
                break
            torch.mul(e2, r @ Xt, out=eg)  # 2 eta g, (B, d)
            up, um = up * (1 - eg), um * (1 + eg)
        losses[k0:k0 + m] = 0.5 * (res[:m] * res[:m]).sum(2)
        E = egs[:min(m, steps - k0)]  # the steps of the chunk that moved
        if not len(E):
            continue
        log_shrink = _running_sum(log_shrink, torch.log(torch.abs(1 - E * E)))
        torch.maximum(max_step, torch.abs(E).amax((0, 2)), out=max_step)
        if bend is not None:
            # 2 artanh(eg) while |eg| < 1; ln|(1 + eg) / (1 - eg)| after a factor has changed sign
            big = torch.abs(E) >= 1
            two_at = torch.where(big, torch.log(torch.abs(1 + E)) - torch.log(torch.abs(1 - E)),
                                 2 * torch.atanh(torch.where(big, 0.0, E)))
            bend.copy_(_running_sum(bend, two_at - 2 * E))
    return up, um, log_shrink, w


def _running_sum(total: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """total + rows[0] + rows[1] + ..., added in that order (a cumulative sum along the steps is sequential, so
    this is the step-by-step `total += row` bit for bit)."""
    return torch.cumsum(torch.cat([total[None], rows]), dim=0)[-1]


# --- helpers -----------------------------------------------------------------------------------------------------
def _design(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = as_real_array("X", X, ndim=2)
    if 0 in X.shape:
        raise ValueError(f"X must be a non-empty (n, d) design; got shape {X.shape}")
    y = as_real_array("y", y, shape=(X.shape[0],))
    no_overflow("X", X.T @ X)
    no_overflow("y", y @ y)
    return X, y


def _depth(depth: int) -> int:
    return as_int("depth", depth, minimum=3)


def _depth_h_prime(s: np.ndarray, depth: int) -> np.ndarray:
    e = -(2 * depth - 2) / (depth - 2)
    return depth / (depth - 2) * ((1 - s) ** e + (1 + s) ** e)


def _w_alpha2(w: np.ndarray, alpha: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = as_real_array("w", w, ndim=1, nonempty=True)
    a = as_real_array("alpha", alpha, nonempty=True)
    if a.ndim > 1 or (a.ndim == 1 and a.shape != w.shape) or not np.all(a > 0):
        raise ValueError(f"alpha must be positive: one number or one per coordinate of w ({w.size}); got {alpha!r}")
    return w, np.broadcast_to(a**2, w.shape)
