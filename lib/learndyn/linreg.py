"""Linear regression, the baseline of Chapter 1: OLS, its risk, and gradient descent on least squares.

Model (Ch 1, eq. `eq-linreg-model`): y = X w + eps, eps ~ N(0, sigma^2 I_n), X of shape (n, d).
Loss for gradient descent: L(w) = 1/2 ||X w - y||^2 (a sum, not a mean), so grad L = X^T (X w - y) and
GD is stable for eta < 2 / lambda_max(X^T X) (Theorem `thm-linreg-implicit-bias`).

Theory (closed forms, float64): `ols_risk_theory`, `ols_risk_fixed` (eq. `eq-linreg-risk-fixed`), `bayes_risk`
(eq. `eq-linreg-bayes-risk`, the minimax lower bound of Theorem `thm-linreg-risk`), `gd_limit`
(eq. `eq-linreg-gd-limit`), `gd_stability_threshold`. Simulators they are checked against: `simulate_ols_risk`,
`simulate_bayes_risk`, `gd_least_squares`. References: Lehmann & Casella (1998), Muirhead (1982).

Stein's paradox (Ch 1, eq. `eq-linreg-js-risk`): `james_stein`, `james_stein_risk`, `simulate_james_stein_risk`.
Early stopping as ridge (Ch 1, eqs. `eq-linreg-gd-filter`, `eq-linreg-filter-risk`; Ali, Kolter & Tibshirani
2019): `gd_filter`, `ridge_filter`, `filter_risk`, `gd_risk`, `ridge_risk`, `gd_early_stopped`, simulated by
`simulate_gd_risk`.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .core import (
    DivergenceError,
    as_callable,
    as_choice,
    as_int,
    as_positive,
    as_real_array,
    as_seed,
    as_steps,
    broadcast,
)

__all__ = ["ols", "ols_risk_theory", "ols_risk_fixed", "simulate_ols_risk", "bayes_risk", "posterior_mean",
           "simulate_bayes_risk", "gd_least_squares", "gd_stability_threshold", "gd_limit", "min_norm_solution",
           "orthogonal_design", "james_stein", "james_stein_risk", "simulate_james_stein_risk", "gd_filter",
           "ridge_filter", "filter_risk", "gd_risk", "ridge_risk", "gd_early_stopped", "simulate_gd_risk"]

Design = Literal["gaussian", "orthogonal"]


def ols(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Ordinary least squares w_hat = (X^T X)^{-1} X^T y, eq. `eq-linreg-ols` (Ch 1). Needs full column rank."""
    X, y = _validate_xy(X, y)
    _require_full_rank(X)
    return np.linalg.lstsq(X, y, rcond=None)[0]


def ols_risk_theory(n: int, d: int, sigma: float, design: Design = "gaussian") -> float:
    """E ||w_hat - w||^2 of OLS, Theorem `thm-linreg-risk` (Ch 1).

    orthogonal design (X^T X = n I): sigma^2 d / n.
    gaussian design (X_ij iid N(0,1)): sigma^2 d / (n - d - 1), the inverse-Wishart mean; exists only for n > d + 1.
    """
    n, d = as_int("n", n, minimum=1), as_int("d", d, minimum=1)
    sigma = as_positive("sigma", sigma)
    design = as_choice("design", design, ("gaussian", "orthogonal"))
    if design == "orthogonal":
        if n < d:
            raise ValueError(f"an orthogonal design needs n >= d; got n={n}, d={d}")
        return sigma**2 * d / n
    if n <= d + 1:
        raise ValueError(f"the Gaussian-design risk sigma^2 d/(n-d-1) exists only for n > d + 1; got n={n}, d={d}")
    return sigma**2 * d / (n - d - 1)


def ols_risk_fixed(X: np.ndarray, sigma: float) -> float:
    """E ||w_hat - w||^2 = sigma^2 tr (X^T X)^{-1} for a fixed design of full column rank, eq. `eq-linreg-risk-fixed`.

    The same for every true w (OLS is unbiased); also the minimax risk over w (Theorem `thm-linreg-risk`).
    """
    X = _validate_design(X)
    sigma = as_positive("sigma", sigma)
    _require_full_rank(X)
    return float(sigma**2 * np.sum(1.0 / np.linalg.eigvalsh(X.T @ X)))


def bayes_risk(X: np.ndarray, sigma: float, tau: float) -> float:
    """Bayes risk sigma^2 tr (X^T X + (sigma/tau)^2 I)^{-1} under the prior w ~ N(0, tau^2 I), eq.
    `eq-linreg-bayes-risk`.

    Attained by the posterior mean (`posterior_mean`); a lower bound on the minimax risk for every tau, and it
    tends to `ols_risk_fixed` as tau -> infinity (Ch 1, proof of Theorem `thm-linreg-risk`, Exercise E1.2).
    For X^T X = n I it is d sigma^2 tau^2 / (n tau^2 + sigma^2). X may have any rank here.
    """
    X = _validate_design(X)
    sigma, tau = as_positive("sigma", sigma), as_positive("tau", tau)
    eig = np.clip(np.linalg.eigvalsh(X.T @ X), 0.0, None)
    return float(sigma**2 * np.sum(1.0 / (eig + (sigma / tau) ** 2)))


def posterior_mean(X: np.ndarray, y: np.ndarray, sigma: float, tau: float) -> np.ndarray:
    """Posterior mean (X^T X + (sigma/tau)^2 I)^{-1} X^T y of w under the prior N(0, tau^2 I) (ridge regression).

    `y` may carry leading batch axes: shape (..., n) gives (..., d).
    """
    X = _validate_design(X)
    sigma, tau = as_positive("sigma", sigma), as_positive("tau", tau)
    y = as_real_array("y", y)
    if y.shape[-1:] != (X.shape[0],):
        raise ValueError(f"y must have shape (..., {X.shape[0]}) to match X; got {y.shape}")
    A = X.T @ X + (sigma / tau) ** 2 * np.eye(X.shape[1])
    return np.linalg.solve(A, (y @ X).T).T


def simulate_bayes_risk(X: np.ndarray, sigma: float, tau: float, reps: int, seed: int = 0) -> tuple[float, float]:
    """Monte Carlo Bayes risk of the posterior mean: w ~ N(0, tau^2 I), y = X w + eps; returns (mean, std. error)."""
    X = _validate_design(X)
    sigma, tau = as_positive("sigma", sigma), as_positive("tau", tau)
    reps = as_int("reps", reps, minimum=2)
    rng = np.random.default_rng(as_seed("seed", seed))
    w = tau * rng.standard_normal((reps, X.shape[1]))  # (reps, d)
    y = w @ X.T + sigma * rng.standard_normal((reps, X.shape[0]))  # (reps, n)
    err = np.sum((posterior_mean(X, y, sigma, tau) - w) ** 2, axis=1)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(reps))


def gd_stability_threshold(X: np.ndarray) -> float:
    """2 / lambda_max(X^T X): GD on 1/2 ||X w - y||^2 converges for 0 < eta below it and diverges above it."""
    X = _validate_design(X)
    lam_max = np.linalg.eigvalsh(X.T @ X)[-1]
    if lam_max <= 0:
        raise ValueError("X is zero: the loss is constant and every step size is stable")
    return float(2.0 / lam_max)


def gd_limit(X: np.ndarray, y: np.ndarray, w0: np.ndarray | None = None) -> np.ndarray:
    """The limit of GD on 1/2 ||X w - y||^2 from w0 for 0 < eta < 2/lambda_max, eq. `eq-linreg-gd-limit` (Ch 1, E1.5):

        X^+ y + (I - X^+ X) w0,

    the projection of w0 onto the affine set of least-squares solutions. For w0 = 0 (the default) it is the
    minimum-norm solution X^+ y (Theorem `thm-linreg-implicit-bias`).
    """
    X, y = _validate_xy(X, y)
    pinv = np.linalg.pinv(X)
    w_ls = pinv @ y
    if w0 is None:
        return w_ls
    w0 = as_real_array("w0", w0, shape=(X.shape[1],))
    return w_ls + w0 - pinv @ (X @ w0)


def orthogonal_design(n: int, d: int, seed: int = 0) -> np.ndarray:
    """A random n x d design with X^T X = n I exactly (scaled orthonormal columns)."""
    n, d = as_int("n", n, minimum=1), as_int("d", d, minimum=1)
    if n < d:
        raise ValueError(f"an orthogonal design needs n >= d; got n={n}, d={d}")
    q, _ = np.linalg.qr(np.random.default_rng(as_seed("seed", seed)).standard_normal((n, d)))
    return np.sqrt(n) * q


def simulate_ols_risk(n: int, d: int, sigma: float, reps: int, seed: int = 0,
                      design: Design = "gaussian", batch: int = 4096) -> tuple[float, float]:
    """Monte Carlo estimate of E ||w_hat - w||^2: returns (mean, standard error of the mean).

    gaussian: a fresh design X, noise and true w for every repetition (the risk averaged over designs).
    orthogonal: one fixed design with X^T X = n I, fresh noise and w each time.
    Repetitions run in batches of `batch` (one batched linear solve each).
    """
    ols_risk_theory(n, d, sigma, design)  # validates the arguments and that the risk exists
    reps, batch = as_int("reps", reps, minimum=2), as_int("batch", batch, minimum=1)
    rng = np.random.default_rng(as_seed("seed", seed))
    X_fixed = orthogonal_design(n, d, seed=seed + 1) if design == "orthogonal" else None
    losses = []
    for start in range(0, reps, batch):
        b = min(batch, reps - start)
        X = rng.standard_normal((b, n, d)) if X_fixed is None else np.broadcast_to(X_fixed, (b, n, d))
        w = rng.standard_normal((b, d))
        y = np.einsum("bnd,bd->bn", X, w) + sigma * rng.standard_normal((b, n))
        XtX = np.swapaxes(X, 1, 2) @ X  # (b, d, d)
        w_hat = np.linalg.solve(XtX, np.einsum("bnd,bn->bd", X, y)[..., None])[..., 0]
        losses.append(np.sum((w_hat - w) ** 2, axis=1))
    err = np.concatenate(losses)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(reps))


def gd_least_squares(X: np.ndarray, y: np.ndarray, eta: float, steps: int,
                     w0: np.ndarray | None = None) -> np.ndarray:
    """`steps` of GD on L(w) = 1/2 ||X w - y||^2 from w0 (default 0), eq. `eq-linreg-gd` (Ch 1).

    A = X^T X and b = X^T y are formed once; each step then computes w <- w - eta (A w - b), which is
    w - eta X^T (X w - y) in exact arithmetic but not in floating point: Chapter 1's rounding bound (the per-step
    error delta before the check that GD reaches X^+ y) is derived for this form, with the errors of A and b counted.

    Raises `DivergenceError` naming the step if the iterate stops being finite (eta above 2/lambda_max diverges);
    bad input (a NaN in X, y or w0, a wrong shape) is a ValueError/TypeError naming the argument. steps=0 gives w0.
    """
    X, y = _validate_xy(X, y)
    eta = as_positive("eta", eta)
    steps = as_int("steps", steps, minimum=0)
    w = np.zeros(X.shape[1]) if w0 is None else as_real_array("w0", w0, shape=(X.shape[1],)).copy()
    XtX, Xty = X.T @ X, X.T @ y
    block = 256  # finiteness is checked once per block of steps; a block that fails is replayed step by step
    for k0 in range(0, steps, block):
        w_start, n_steps = w, min(block, steps - k0)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, with its step
            for _ in range(n_steps):
                w = w - eta * (XtX @ w - Xty)
            if np.all(np.isfinite(w)):  # a non-finite iterate stays so (inf - inf, NaN): the block was finite
                continue
            w = w_start
            for k in range(k0, k0 + n_steps):
                w = w - eta * (XtX @ w - Xty)
                if not np.all(np.isfinite(w)):
                    raise DivergenceError(f"gradient descent diverged at step {k + 1} (eta={eta:g}; stable only for "
                                          f"eta < 2/lambda_max(X^T X) = {2 / np.linalg.eigvalsh(XtX)[-1]:.3g})")
    return w


def min_norm_solution(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares solution X^+ y (pseudo-inverse, via the SVD); for n < d it interpolates."""
    X, y = _validate_xy(X, y)
    return np.linalg.lstsq(X, y, rcond=None)[0]


# --- Stein's paradox ---------------------------------------------------------------------------------------------
def james_stein(w_hat: np.ndarray, noise_var: float) -> np.ndarray:
    """James-Stein estimator (1 - (d - 2) v / ||w_hat||^2) w_hat of the mean of w_hat ~ N(w, v I_d) (Ch 1).

    For the orthogonal design, w_hat is OLS and v = sigma^2 / n. `w_hat` may carry leading batch axes (..., d).
    """
    w_hat = as_real_array("w_hat", w_hat)
    noise_var = as_positive("noise_var", noise_var)
    if w_hat.ndim == 0 or w_hat.shape[-1] < 3:
        raise ValueError(f"w_hat must have shape (..., d) with d >= 3 (Stein shrinkage needs d >= 3); "
                         f"got {w_hat.shape}")
    d = w_hat.shape[-1]
    sq = np.sum(w_hat**2, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(sq > 0, 1.0 - (d - 2) * noise_var / sq, 0.0)
    return factor * w_hat


def james_stein_risk(w_norm: float | np.ndarray, d: int, noise_var: float) -> np.ndarray:
    """E ||w_JS - w||^2 for w_hat ~ N(w, v I_d), eq. `eq-linreg-js-risk` (Ch 1):

        v [d - (d - 2)^2 E 1/Q],  Q = ||w_hat||^2 / v ~ noncentral chi^2_d(||w||^2 / v),
        E 1/Q = sum_j Poisson(j; ||w||^2 / (2 v)) / (d - 2 + 2 j),

    the Poisson mixture of central chi^2_{d+2j}. At w = 0 it is 2 v, for every w below the OLS risk d v
    (Stein 1956; James & Stein 1961). `w_norm` broadcasts.
    """
    from scipy import special

    d = as_int("d", d, minimum=3)
    v = as_positive("noise_var", noise_var)
    w_norm = as_real_array("w_norm", w_norm, nonempty=True)
    if np.any(w_norm < 0):
        raise ValueError(f"w_norm must be finite and >= 0; got {w_norm}")
    inv_q = np.empty(w_norm.shape)
    for idx, wn in np.ndenumerate(w_norm):
        mean = wn**2 / (2 * v)  # Poisson mean; its weight beyond 12 standard deviations (+ 40) is below 1e-16
        j = np.arange(int(max(0.0, mean - 12 * np.sqrt(mean) - 40)), int(mean + 12 * np.sqrt(mean + 1) + 40) + 1)
        pmf = np.clip(np.exp(special.xlogy(j, mean) - special.gammaln(j + 1) - mean), 0, 1)  # scipy.stats' formula
        inv_q[idx] = np.sum(pmf / (d - 2 + 2 * j))
    return v * (d - (d - 2) ** 2 * inv_q)


def simulate_james_stein_risk(w: np.ndarray, noise_var: float, reps: int, seed: int = 0,
                              batch: int = 100_000) -> tuple[float, float]:
    """Monte Carlo risk of `james_stein` at the true mean w: w_hat = w + sqrt(v) z; returns (mean, std. error)."""
    w = as_real_array("w", w, ndim=1)
    if w.size < 3:
        raise ValueError(f"w must be a vector with d >= 3 entries (Stein shrinkage needs d >= 3); got shape {w.shape}")
    noise_var = as_positive("noise_var", noise_var)
    reps, batch = as_int("reps", reps, minimum=2), as_int("batch", batch, minimum=1)
    rng = np.random.default_rng(as_seed("seed", seed))
    losses = []
    for start in range(0, reps, batch):
        w_hat = w + np.sqrt(noise_var) * rng.standard_normal((min(batch, reps - start), w.size))
        losses.append(np.sum((james_stein(w_hat, noise_var) - w) ** 2, axis=1))
    err = np.concatenate(losses)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(reps))


# --- early stopping as ridge ---------------------------------------------------------------------------------------
def gd_filter(s: float | np.ndarray, eta: float, steps: int | np.ndarray) -> np.ndarray:
    """Spectral filter of k steps of GD from 0, 1 - (1 - eta s)^k, eq. `eq-linreg-gd-filter` (Ch 1). Broadcasts."""
    eta = as_positive("eta", eta)
    s, k = as_real_array("s", s, nonempty=True), as_steps("steps", steps)
    if np.any(s < 0):
        raise ValueError("s (eigenvalues of X^T X) must be >= 0")
    s, k = broadcast("s and steps", s, k)
    with np.errstate(over="ignore", invalid="ignore"):
        out = 1.0 - (1.0 - eta * s) ** k
    if not np.all(np.isfinite(out)):
        raise DivergenceError(f"the GD filter overflows: eta * s > 2 makes (1 - eta s)^k grow without bound "
                              f"(eta={eta:g}, max s={s.max():g}); GD diverges there")
    return out


def ridge_filter(s: float | np.ndarray, lam: float | np.ndarray) -> np.ndarray:
    """Spectral filter of ridge regression, s / (s + lam), eq. `eq-linreg-gd-filter` (Ch 1). Broadcasts."""
    s, lam = as_real_array("s", s, nonempty=True), as_real_array("lam", lam, nonempty=True)
    if np.any(s < 0):
        raise ValueError("s (eigenvalues of X^T X) must be >= 0")
    if np.any(lam <= 0):
        raise ValueError(f"lam must be > 0; got {lam}")
    s, lam = broadcast("s and lam", s, lam)
    return s / (s + lam)


def filter_risk(X: np.ndarray, sigma: float, filt, *, w: np.ndarray | None = None,
                tau: float | None = None) -> np.ndarray:
    """Risk of the spectral estimator V diag(f(s_i)/s_i) V^T X^T y, eq. `eq-linreg-filter-risk` (Ch 1).

    `filt(s)` maps the eigenvalues s (shape (d,), positive) of X^T X to filter values of shape (..., d).
    With the true w:          sum_i (1 - f_i)^2 (v_i^T w)^2 + sigma^2 sum_i f_i^2 / s_i.
    Averaged over w ~ N(0, tau^2 I): sum_i tau^2 (1 - f_i)^2 + sigma^2 f_i^2 / s_i (minimised by ridge,
    f_i = s_i / (s_i + sigma^2/tau^2), where it equals `bayes_risk`). Exactly one of w, tau. Needs full column rank.
    """
    X = _validate_design(X)
    sigma = as_positive("sigma", sigma)
    if (w is None) == (tau is None):
        raise ValueError("give exactly one of w (the true weights) or tau (the prior scale)")
    filt = as_callable("filt", filt)
    _require_full_rank(X)
    s, V = np.linalg.eigh(X.T @ X)
    f = as_real_array("filt(s)", filt(s))
    if f.shape[-1:] != s.shape:
        raise ValueError(f"filt(s) must end in the axis of the {s.size} eigenvalues; got shape {f.shape}")
    if tau is not None:
        signal = as_positive("tau", tau) ** 2 * np.ones_like(s)
    else:
        w = as_real_array("w", w, shape=s.shape)
        signal = (V.T @ w) ** 2
    return np.sum(signal * (1 - f) ** 2 + sigma**2 * f**2 / s, axis=-1)


def gd_risk(X: np.ndarray, sigma: float, eta: float, steps: int | np.ndarray, *, w: np.ndarray | None = None,
            tau: float | None = None) -> np.ndarray:
    """Risk of k steps of GD from 0 on 1/2 ||X w - y||^2 (early stopping), eqs. `eq-linreg-gd-filter` and
    `eq-linreg-filter-risk` (Ch 1); `steps` broadcasts (an array of k gives the curve against k)."""
    k = as_steps("steps", steps)[..., None]
    return filter_risk(X, sigma, lambda s: gd_filter(s, eta, k), w=w, tau=tau)


def ridge_risk(X: np.ndarray, sigma: float, lam: float | np.ndarray, *, w: np.ndarray | None = None,
               tau: float | None = None) -> np.ndarray:
    """Risk of ridge regression (X^T X + lam I)^{-1} X^T y, eq. `eq-linreg-filter-risk` with s/(s+lam); `lam`
    broadcasts. Averaged over w ~ N(0, tau^2 I) at lam = sigma^2/tau^2 it is the Bayes risk `bayes_risk`."""
    lam = as_real_array("lam", lam, nonempty=True)[..., None]
    return filter_risk(X, sigma, lambda s: ridge_filter(s, lam), w=w, tau=tau)


def gd_early_stopped(X: np.ndarray, y: np.ndarray, eta: float, steps: int) -> np.ndarray:
    """Closed form of k GD steps from 0 on 1/2 ||X w - y||^2: V diag(phi_k(s_i) / sqrt(s_i)) U^T y with the SVD
    X = U diag(sqrt(s)) V^T and phi_k = `gd_filter`, eq. `eq-linreg-gd-filter` (Ch 1). Any rank."""
    X, y = _validate_xy(X, y)
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    U, sv, Vt = np.linalg.svd(X, full_matrices=False)
    keep = sv > sv.max(initial=0.0) * max(X.shape) * np.finfo(float).eps
    U, sv, Vt = U[:, keep], sv[keep], Vt[keep]
    return Vt.T @ (gd_filter(sv**2, eta, steps) / sv * (U.T @ y))


def simulate_gd_risk(X: np.ndarray, sigma: float, tau: float, eta: float, steps: np.ndarray | list[int],
                     reps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo risk of early-stopped GD, averaged over w ~ N(0, tau^2 I) and the noise: `reps` runs of GD from 0,
    batched, recorded after each number of steps in `steps`; returns (means, standard errors), one per entry."""
    X = _validate_design(X)
    sigma, tau, eta = as_positive("sigma", sigma), as_positive("tau", tau), as_positive("eta", eta)
    reps = as_int("reps", reps, minimum=2)
    ks = as_steps("steps", steps)
    if ks.ndim != 1 or np.any(np.diff(ks) <= 0):
        raise ValueError(f"steps must be an increasing 1-D list of non-negative integers; got {steps!r}")
    rng = np.random.default_rng(as_seed("seed", seed))
    w = tau * rng.standard_normal((reps, X.shape[1]))  # (reps, d)
    Xty = (w @ X.T + sigma * rng.standard_normal((reps, X.shape[0]))) @ X  # (reps, d): X^T y per run
    XtX, W = X.T @ X, np.zeros_like(w)
    means, ses, k = [], [], 0
    for target in ks:
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, with its step
            for _ in range(int(target) - k):
                W = W - eta * (W @ XtX - Xty)
        k = int(target)
        if not np.all(np.isfinite(W)):
            raise DivergenceError(f"gradient descent diverged by step {k} (eta={eta:g})")
        err = np.sum((W - w) ** 2, axis=1)
        means.append(err.mean())
        ses.append(err.std(ddof=1) / np.sqrt(reps))
    return np.array(means), np.array(ses)


# ---------------------------------------------------------------------------------------------------------------
def _validate_design(X: np.ndarray) -> np.ndarray:
    X = as_real_array("X", X, ndim=2)
    if 0 in X.shape:
        raise ValueError(f"X must be a non-empty 2-D design matrix (n, d); got shape {X.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        if not np.all(np.isfinite(X.T @ X)):
            raise ValueError("X is too large: X^T X overflows float64 (rescale the design)")
    return X


def _require_full_rank(X: np.ndarray) -> None:
    n, d = X.shape
    rank = np.linalg.matrix_rank(X)
    if n < d or rank < d:
        raise ValueError(f"X must have full column rank for OLS (rank {rank} < d = {d}); "
                         "use min_norm_solution for an under-determined problem")


def _validate_xy(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = _validate_design(X)
    y = as_real_array("y", y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X; got {y.shape}")
    return X, y
