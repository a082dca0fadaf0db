"""Linear regression, the baseline of Chapter 1: OLS, its risk, and gradient descent on least squares.

Model (Ch 1, eq. `eq-linreg-model`): y = X w + eps, eps ~ N(0, sigma^2 I_n), X of shape (n, d).
Loss for gradient descent: L(w) = 1/2 ||X w - y||^2 (a sum, not a mean), so grad L = X^T (X w - y) and
GD is stable for lr < 2 / lambda_max(X^T X) (Theorem `thm-linreg-implicit-bias`).

Theory (closed forms, float64): `ols_risk_theory`, `ols_risk_fixed` (eq. `eq-linreg-risk-fixed`), `bayes_risk`
(eq. `eq-linreg-bayes-risk`, the minimax lower bound of Theorem `thm-linreg-risk`), `gd_limit`
(eq. `eq-linreg-gd-limit`), `gd_stability_threshold`. Simulators they are checked against: `simulate_ols_risk`,
`simulate_bayes_risk`, `gd_least_squares`. References: Lehmann & Casella (1998), Muirhead (1982).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .core import DivergenceError, as_int, as_positive

__all__ = ["ols", "ols_risk_theory", "ols_risk_fixed", "simulate_ols_risk", "bayes_risk", "posterior_mean",
           "simulate_bayes_risk", "gd_least_squares", "gd_stability_threshold", "gd_limit", "min_norm_solution",
           "orthogonal_design"]

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
    if design == "orthogonal":
        if n < d:
            raise ValueError(f"an orthogonal design needs n >= d; got n={n}, d={d}")
        return sigma**2 * d / n
    if design == "gaussian":
        if n <= d + 1:
            raise ValueError(f"the Gaussian-design risk sigma^2 d/(n-d-1) exists only for n > d + 1; got n={n}, d={d}")
        return sigma**2 * d / (n - d - 1)
    raise ValueError(f"design must be 'gaussian' or 'orthogonal'; got {design!r}")


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
    y = np.asarray(y, dtype=float)
    if y.shape[-1:] != (X.shape[0],):
        raise ValueError(f"y must have shape (..., {X.shape[0]}) to match X; got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must be finite (found NaN or inf)")
    A = X.T @ X + (sigma / tau) ** 2 * np.eye(X.shape[1])
    return np.linalg.solve(A, (y @ X).T).T


def simulate_bayes_risk(X: np.ndarray, sigma: float, tau: float, reps: int, seed: int = 0) -> tuple[float, float]:
    """Monte Carlo Bayes risk of the posterior mean: w ~ N(0, tau^2 I), y = X w + eps; returns (mean, std. error)."""
    X = _validate_design(X)
    sigma, tau = as_positive("sigma", sigma), as_positive("tau", tau)
    reps = as_int("reps", reps, minimum=2)
    rng = np.random.default_rng(seed)
    w = tau * rng.standard_normal((reps, X.shape[1]))  # (reps, d)
    y = w @ X.T + sigma * rng.standard_normal((reps, X.shape[0]))  # (reps, n)
    err = np.sum((posterior_mean(X, y, sigma, tau) - w) ** 2, axis=1)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(reps))


def gd_stability_threshold(X: np.ndarray) -> float:
    """2 / lambda_max(X^T X): GD on 1/2 ||X w - y||^2 converges for 0 < lr below it and diverges above it."""
    X = _validate_design(X)
    lam_max = np.linalg.eigvalsh(X.T @ X)[-1]
    if lam_max <= 0:
        raise ValueError("X is zero: the loss is constant and every step size is stable")
    return float(2.0 / lam_max)


def gd_limit(X: np.ndarray, y: np.ndarray, w0: np.ndarray | None = None) -> np.ndarray:
    """The limit of GD on 1/2 ||X w - y||^2 from w0 for 0 < lr < 2/lambda_max, eq. `eq-linreg-gd-limit` (Ch 1, E1.5):

        X^+ y + (I - X^+ X) w0,

    the projection of w0 onto the affine set of least-squares solutions. For w0 = 0 (the default) it is the
    minimum-norm solution X^+ y (Theorem `thm-linreg-implicit-bias`).
    """
    X, y = _validate_xy(X, y)
    pinv = np.linalg.pinv(X)
    w_ls = pinv @ y
    if w0 is None:
        return w_ls
    w0 = np.asarray(w0, dtype=float)
    if w0.shape != (X.shape[1],):
        raise ValueError(f"w0 must have shape ({X.shape[1]},); got {w0.shape}")
    if not np.all(np.isfinite(w0)):
        raise ValueError("w0 must be finite (found NaN or inf)")
    return w_ls + w0 - pinv @ (X @ w0)


def orthogonal_design(n: int, d: int, seed: int = 0) -> np.ndarray:
    """A random n x d design with X^T X = n I exactly (scaled orthonormal columns)."""
    n, d = as_int("n", n, minimum=1), as_int("d", d, minimum=1)
    if n < d:
        raise ValueError(f"an orthogonal design needs n >= d; got n={n}, d={d}")
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, d)))
    return np.sqrt(n) * q


def simulate_ols_risk(n: int, d: int, sigma: float, reps: int, seed: int = 0,
                      design: Design = "gaussian", batch: int = 4096) -> tuple[float, float]:
    """Monte Carlo estimate of E ||w_hat - w||^2: returns (mean, standard error of the mean).

    gaussian: a fresh design X, noise and true w for every repetition (the risk averaged over designs).
    orthogonal: one fixed design with X^T X = n I, fresh noise and w each time.
    Repetitions run in batches of `batch` (one batched linear solve each).
    """
    ols_risk_theory(n, d, sigma, design)  # validates the arguments and that the risk exists
    reps = as_int("reps", reps, minimum=2)
    rng = np.random.default_rng(seed)
    X_fixed = orthogonal_design(n, d, seed=seed + 1) if design == "orthogonal" else None
    losses = []
    for start in range(0, reps, batch):
        b = min(batch, reps - start)
        X = rng.standard_normal((b, n, d)) if X_fixed is None else np.broadcast_to(X_fixed, (b, n, d))
        w = rng.standard_normal((b, d))
        y = np.einsum("bnd,bd->bn", X, w) + sigma * rng.standard_normal((b, n))
        XtX = np.einsum("bnd,bne->bde", X, X)  # (b, d, d)
        w_hat = np.linalg.solve(XtX, np.einsum("bnd,bn->bd", X, y)[..., None])[..., 0]
        losses.append(np.sum((w_hat - w) ** 2, axis=1))
    err = np.concatenate(losses)
    return float(err.mean()), float(err.std(ddof=1) / np.sqrt(reps))


def gd_least_squares(X: np.ndarray, y: np.ndarray, lr: float, steps: int,
                     w0: np.ndarray | None = None) -> np.ndarray:
    """`steps` of GD on L(w) = 1/2 ||X w - y||^2 from w0 (default 0): w <- w - lr X^T (X w - y).

    Raises `DivergenceError` naming the step if the iterate stops being finite (lr above 2/lambda_max diverges).
    """
    X, y = _validate_xy(X, y)
    lr = as_positive("lr", lr)
    steps = as_int("steps", steps, minimum=0)
    w = np.zeros(X.shape[1]) if w0 is None else np.array(w0, dtype=float)
    if w.shape != (X.shape[1],):
        raise ValueError(f"w0 must have shape ({X.shape[1]},); got {w.shape}")
    XtX, Xty = X.T @ X, X.T @ y
    for k in range(steps):
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, with its step
            w = w - lr * (XtX @ w - Xty)
        if not np.all(np.isfinite(w)):
            raise DivergenceError(f"gradient descent diverged at step {k + 1} (lr={lr:g}; "
                                  f"stable only for lr < 2/lambda_max(X^T X) = {2 / np.linalg.eigvalsh(XtX)[-1]:.3g})")
    return w


def min_norm_solution(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares solution X^+ y (pseudo-inverse, via the SVD); for n < d it interpolates."""
    X, y = _validate_xy(X, y)
    return np.linalg.lstsq(X, y, rcond=None)[0]


# ---------------------------------------------------------------------------------------------------------------
def _validate_design(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or 0 in X.shape:
        raise ValueError(f"X must be a non-empty 2-D design matrix (n, d); got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite (found NaN or inf)")
    return X


def _require_full_rank(X: np.ndarray) -> None:
    n, d = X.shape
    rank = np.linalg.matrix_rank(X)
    if n < d or rank < d:
        raise ValueError(f"X must have full column rank for OLS (rank {rank} < d = {d}); "
                         "use min_norm_solution for an under-determined problem")


def _validate_xy(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D design matrix (n, d); got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X; got {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite (found NaN or inf)")
    return X, y
