"""Gradient descent and gradient flow on a quadratic, the model problem of the Preface (Ch 0).

L(w) = 1/2 w^T H w with H symmetric. Gradient flow dw/dt = -H w has w(t) = exp(-H t) w0 (eq. `eq-pre-flow-quad`);
GD with step lr is exactly w_k = (I - lr H)^k w0 (eq. `eq-pre-gd-quad`), compared with the flow at t = lr k.
To second order GD follows the modified flow of L + lr/4 ||grad L||^2, here exp(-(H + lr H^2 / 2) t) w0
(eq. `eq-pre-modified-quad`; Barrett & Dherin 2021).
"""

from __future__ import annotations

import numpy as np

from .core import DivergenceError, as_int, as_positive

__all__ = ["gd_quadratic", "gd_quadratic_closed_form", "flow_quadratic", "modified_flow_quadratic"]


def gd_quadratic(H: np.ndarray, w0: np.ndarray, lr: float, steps: int) -> np.ndarray:
    """The GD path w_0, ..., w_steps on 1/2 w^T H w, computed by iterating w <- w - lr H w. Shape (steps+1, d)."""
    H, w0 = _validate(H, w0)
    lr, steps = as_positive("lr", lr), as_int("steps", steps, minimum=0)
    path = np.empty((steps + 1, w0.size))
    path[0] = w0
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, with its step
        for k in range(steps):
            path[k + 1] = path[k] - lr * (H @ path[k])
            if not np.all(np.isfinite(path[k + 1])):
                raise DivergenceError(f"gradient descent diverged at step {k + 1} (lr={lr:g}; stable only for "
                                      f"lr < 2/lambda_max(H) = {2 / np.linalg.eigvalsh(H)[-1]:.3g})")
    return path


def gd_quadratic_closed_form(H: np.ndarray, w0: np.ndarray, lr: float, k: np.ndarray | int) -> np.ndarray:
    """(I - lr H)^k w0 through the eigendecomposition of H, eq. `eq-pre-gd-quad`; k broadcasts. Shape (*k, d)."""
    H, w0 = _validate(H, w0)
    lr = as_positive("lr", lr)
    k = np.asarray(k)
    if np.any(k < 0) or np.any(k != np.round(k)):
        raise ValueError("k must hold non-negative integers (step counts)")
    lam, Q = np.linalg.eigh(H)
    coef = np.power(1.0 - lr * lam, np.expand_dims(k, -1)) * (Q.T @ w0)  # (*k, d) in the eigenbasis
    return coef @ Q.T


def flow_quadratic(H: np.ndarray, w0: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Gradient flow exp(-H t) w0, eq. `eq-pre-flow-quad`; t broadcasts. Shape (*t, d)."""
    H, w0 = _validate(H, w0)
    return _expm_apply(H, w0, t)


def modified_flow_quadratic(H: np.ndarray, w0: np.ndarray, lr: float, t: np.ndarray | float) -> np.ndarray:
    """Modified flow exp(-(H + lr H^2/2) t) w0, eq. `eq-pre-modified-quad`: GD to second order in lr."""
    H, w0 = _validate(H, w0)
    lr = as_positive("lr", lr)
    return _expm_apply(H + 0.5 * lr * H @ H, w0, t)


# ---------------------------------------------------------------------------------------------------------------
def _expm_apply(A: np.ndarray, w0: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    if np.any(t < 0):
        raise ValueError("t must be non-negative")
    lam, Q = np.linalg.eigh(A)
    coef = np.exp(-np.multiply.outer(t, lam)) * (Q.T @ w0)  # (*t, d) in the eigenbasis
    return coef @ Q.T


def _validate(H: np.ndarray, w0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    H, w0 = np.asarray(H, dtype=float), np.asarray(w0, dtype=float)
    if H.ndim != 2 or H.shape[0] != H.shape[1]:
        raise ValueError(f"H must be a square matrix; got shape {H.shape}")
    if not np.allclose(H, H.T, atol=1e-12 * (1 + np.abs(H).max())):
        raise ValueError("H must be symmetric (it is the Hessian of the quadratic)")
    if w0.shape != (H.shape[0],):
        raise ValueError(f"w0 must have shape ({H.shape[0]},); got {w0.shape}")
    if not (np.all(np.isfinite(H)) and np.all(np.isfinite(w0))):
        raise ValueError("H and w0 must be finite")
    return H, w0
