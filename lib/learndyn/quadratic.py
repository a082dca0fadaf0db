"""Gradient descent and gradient flow on a quadratic, the model problem of the Preface (Ch 0).

L(w) = 1/2 w^T H w with H symmetric. Gradient flow dw/dt = -H w has w(t) = exp(-H t) w0 (eq. `eq-pre-flow-quad`);
GD with step eta is exactly w_k = (I - eta H)^k w0 (eq. `eq-pre-gd-quad`), compared with the flow at t = eta k.
To second order GD follows the modified flow of L + eta/4 ||grad L||^2, here exp(-(H + eta H^2 / 2) t) w0
(eq. `eq-pre-modified-quad`; Barrett & Dherin 2021). The maximal GD error in one eigencomponent has the expansion
of `gd_error_expansion` (eqs. `eq-pre-error-constant`, `eq-pre-error-expansion`), and for eta lambda_max < 1 GD is
exactly the flow of the modified Hessian -log(I - eta H)/eta (`exact_modified_hessian`, exercise `ex-pre-exact`).
"""

from __future__ import annotations

import numpy as np

from .core import DivergenceError, as_choice, as_int, as_positive, as_real, as_real_array

__all__ = ["gd_quadratic", "gd_quadratic_closed_form", "flow_quadratic", "modified_flow_quadratic",
           "gd_error_expansion", "exact_modified_hessian"]


def gd_quadratic(H: np.ndarray, w0: np.ndarray, eta: float, steps: int) -> np.ndarray:
    """The GD path w_0, ..., w_steps on 1/2 w^T H w, computed by iterating w <- w - eta H w. Shape (steps+1, d)."""
    H, w0 = _validate(H, w0)
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    path = np.empty((steps + 1, w0.size))
    path[0] = w0
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, with its step
        for k in range(steps):
            path[k + 1] = path[k] - eta * (H @ path[k])
            if not np.all(np.isfinite(path[k + 1])):
                raise DivergenceError(f"gradient descent diverged at step {k + 1} (eta={eta:g}; stable only for "
                                      f"eta < 2/lambda_max(H) = {_threshold(np.linalg.eigvalsh(H))})")
    return path


def gd_quadratic_closed_form(H: np.ndarray, w0: np.ndarray, eta: float, k: np.ndarray | int) -> np.ndarray:
    """(I - eta H)^k w0 through the eigendecomposition of H, eq. `eq-pre-gd-quad`; k broadcasts. Shape (*k, d)."""
    H, w0 = _validate(H, w0)
    eta = as_positive("eta", eta)
    k = as_real_array("k", k, nonempty=True)
    if np.any(k < 0) or np.any(k != np.round(k)):
        raise ValueError("k must hold non-negative integers (step counts)")
    lam, Q = np.linalg.eigh(H)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, with its step
        coef = np.power(1.0 - eta * lam, np.expand_dims(k, -1)) * (Q.T @ w0)  # (*k, d) in the eigenbasis
        out = coef @ Q.T
    bad = ~np.all(np.isfinite(out), axis=-1)
    if np.any(bad):
        raise DivergenceError(f"gradient descent diverged at step {int(np.min(k[bad])):d} (eta={eta:g}; stable only "
                              f"for eta < 2/lambda_max(H) = {_threshold(lam)})")
    return out


def flow_quadratic(H: np.ndarray, w0: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Gradient flow exp(-H t) w0, eq. `eq-pre-flow-quad`; t broadcasts. Shape (*t, d)."""
    H, w0 = _validate(H, w0)
    return _expm_apply(H, w0, t)


def modified_flow_quadratic(H: np.ndarray, w0: np.ndarray, eta: float, t: np.ndarray | float) -> np.ndarray:
    """Modified flow exp(-(H + eta H^2/2) t) w0, eq. `eq-pre-modified-quad`: GD to second order in eta."""
    H, w0 = _validate(H, w0)
    eta = as_positive("eta", eta)
    return _expm_apply(H + 0.5 * eta * H @ H, w0, t)


def gd_error_expansion(lam: float, amp: float, against: str = "flow") -> tuple[float, float]:
    """(C, a) with max_{t >= 0} |GD - reference| in one eigencomponent = C eta^p (1 + a eta + O(eta^2)).

    The component has curvature `lam` > 0 and initial amplitude `amp` = <q, w0>. Against the gradient flow
    (p = 1): C = lam |amp| / (2e), a = 5 lam / 12, eqs. `eq-pre-error-constant` and `eq-pre-error-expansion`.
    Against the modified flow `modified_flow_quadratic` (p = 2, eq. `eq-pre-modified-expansion`):
    C = lam^2 |amp| / (3e), a = lam / 4. On the grid t = eta k the maximum differs from max over t only at O(eta^2).
    """
    lam = as_positive("lam", lam)
    amp = as_real("amp", amp)
    against = as_choice("against", against, ("flow", "modified"))
    if against == "flow":
        return lam * abs(amp) / (2 * np.e), 5 * lam / 12
    if against == "modified":
        return lam**2 * abs(amp) / (3 * np.e), lam / 4
    raise ValueError(f"against must be 'flow' or 'modified'; got {against!r}")


def exact_modified_hessian(H: np.ndarray, eta: float) -> np.ndarray:
    """-log(I - eta H) / eta = H + eta H^2/2 + eta^2 H^3/3 + ...: GD with step eta is exactly its flow at t = eta k.

    Exercise `ex-pre-exact`. Needs eta lambda < 1 for every eigenvalue lambda of H (otherwise I - eta H has an
    eigenvalue <= 0, and no symmetric matrix A has exp(-eta A) = I - eta H).
    """
    H = _validate_H(H)
    eta = as_positive("eta", eta)
    lam, Q = np.linalg.eigh(H)
    if np.any(eta * lam >= 1):
        raise ValueError(f"eta * lambda_max(H) = {eta * lam[-1]:.3g} >= 1: I - eta H is not positive definite, so GD "
                         "is not the flow of any quadratic (eta must be < 1/lambda_max)")
    return (Q * (-np.log1p(-eta * lam) / eta)) @ Q.T


# ---------------------------------------------------------------------------------------------------------------
def _expm_apply(A: np.ndarray, w0: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    t = as_real_array("t", t, nonempty=True)
    if np.any(t < 0):
        raise ValueError("t must be non-negative")
    lam, Q = np.linalg.eigh(A)
    with np.errstate(over="ignore", invalid="ignore"):
        coef = np.exp(-np.multiply.outer(t, lam)) * (Q.T @ w0)  # (*t, d) in the eigenbasis
        out = coef @ Q.T
    if not np.all(np.isfinite(out)):
        raise DivergenceError(f"the flow overflows (H has a negative eigenvalue {lam[0]:.3g}, so exp(-H t) grows "
                              f"without bound) before t = {float(np.max(t)):g}")
    return out


def _threshold(lam: np.ndarray) -> str:
    return f"{2 / lam[-1]:.3g}" if lam[-1] > 0 else "none: H has no positive eigenvalue, GD diverges at every eta"


def _validate_H(H: np.ndarray) -> np.ndarray:
    H = as_real_array("H", H)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.size == 0:
        raise ValueError(f"H must be a non-empty square matrix; got shape {H.shape}")
    if not np.allclose(H, H.T, atol=1e-12 * (1 + np.abs(H).max())):
        raise ValueError("H must be symmetric (it is the Hessian of the quadratic)")
    return H


def _validate(H: np.ndarray, w0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    H, w0 = _validate_H(H), as_real_array("w0", w0)
    if w0.shape != (H.shape[0],):
        raise ValueError(f"w0 must have shape ({H.shape[0]},) to match H {H.shape}; got {w0.shape}")
    return H, w0
