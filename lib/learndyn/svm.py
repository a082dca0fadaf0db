"""The hard-margin SVM of Ch 5, the direction gradient descent converges to on separable data: the solver, its
KKT residuals and the second margin.

    w_hat = argmin ||w||^2  subject to  <w, z_i> >= 1 for all i         (eq. `eq-soudry-svm`)

Data enter through z_i = y_i x_i, the rows of Z (n, d), as in `learndyn.implicit_bias`, which re-exports this module
(`ld.implicit_bias.max_margin` is `ld.svm.max_margin`). The solver is SciPy's SLSQP on the primal, refined exactly on
the detected support set, or, as an independent cross-check, scikit-learn's SVC with a very large C; the KKT
residuals certify the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from .core import as_choice, as_positive, as_real_array, no_overflow

__all__ = ["MaxMargin", "max_margin", "kkt_residuals", "second_margin"]


@dataclass
class MaxMargin:
    """The hard-margin SVM through the origin, min 1/2 ||w||^2 s.t. <w, z_i> >= 1 (eq-soudry-svm).

    w_hat:   the solution (d,); gamma = 1 / ||w_hat|| is the margin of the unit vector w_hat / ||w_hat||.
    support: indices of the points on the margin, <w_hat, z_i> = 1 (up to `support_tol`), increasing.
    alpha:   Lagrange multipliers (n,), zero off the support; w_hat = Z^T alpha (eq-soudry-kkt).
    """

    w_hat: np.ndarray
    gamma: float
    support: np.ndarray
    alpha: np.ndarray


def max_margin(Z: ArrayLike, method: Literal["slsqp", "sklearn"] = "slsqp", support_tol: float = 1e-6) -> MaxMargin:
    """The hard-margin SVM through the origin (eq-soudry-svm) with its multipliers (eq-soudry-kkt).

    "slsqp": SciPy SLSQP on the primal (ftol=1e-15), then an exact refinement on the detected support
    S = {i: <w, z_i> < 1 + support_tol}: solve (Z_S Z_S^T) lambda = 1 (non-negative least squares if the plain
    least-squares multipliers are negative) and set w_hat = Z_S^T lambda, so <w_hat, z_i> = 1 on S to rounding.
    "sklearn": scikit-learn's SVC (linear kernel, C=1e10, tol=1e-10) on the symmetrised data {(z_i, +1), (-z_i, -1)},
    whose symmetry forces the intercept to 0: an independent solver for cross-checks (no refinement).
    Raises ValueError when no w has <w, z_i> > 0 for all i (data not separable through the origin).
    """
    Z = _as_Z(Z)
    support_tol = as_positive("support_tol", support_tol)
    method = as_choice("method", method, ("slsqp", "sklearn"))
    w_feasible = _separating_vector(Z)
    if method == "slsqp":
        res = optimize.minimize(lambda w: 0.5 * w @ w, w_feasible, jac=lambda w: w, method="SLSQP",
                                constraints=[{"type": "ineq", "fun": lambda w: Z @ w - 1.0, "jac": lambda w: Z}],
                                options={"ftol": 1e-15, "maxiter": 1000})
        w, alpha = _refine(Z, res.x, support_tol)
    elif method == "sklearn":
        from sklearn.svm import SVC

        clf = SVC(kernel="linear", C=1e10, tol=1e-10).fit(np.vstack([Z, -Z]), np.r_[np.ones(len(Z)), -np.ones(len(Z))])
        w = clf.coef_[0].astype(float)
        alpha = np.zeros(len(Z))
        np.add.at(alpha, clf.support_ % len(Z), np.abs(clf.dual_coef_[0]))  # lambda_i = a_i + b_i (both copies)
    else:
        raise ValueError(f"method must be 'slsqp' or 'sklearn'; got {method!r}")
    support = np.flatnonzero(Z @ w < 1.0 + support_tol)
    return MaxMargin(w_hat=w, gamma=float(1.0 / np.linalg.norm(w)), support=support, alpha=alpha)


def kkt_residuals(Z: ArrayLike, mm: MaxMargin) -> dict[str, float]:
    """How far (w_hat, alpha) is from the KKT conditions of the SVM (eq-soudry-kkt); all are 0 at the optimum.

    primal: max_i (1 - <w, z_i>)_+;  dual: max_i (-alpha_i)_+;  stationarity: ||w - Z^T alpha||;
    complementarity: max_i |alpha_i (<w, z_i> - 1)|.
    """
    Z = _as_Z(Z)
    w, alpha = _mm_arrays(Z, mm)
    m = Z @ w
    res = {"primal": float(max(0.0, np.max(1.0 - m))), "dual": float(max(0.0, np.max(-alpha))),
           "stationarity": float(np.linalg.norm(w - Z.T @ alpha)),
           "complementarity": float(np.max(np.abs(alpha * (m - 1.0))))}
    no_overflow("Z and mm", list(res.values()))
    return res


def second_margin(Z: ArrayLike, mm: MaxMargin) -> float:
    """The smallest margin off the support in units of the SVM margin, min_{i not in S} <w_hat, z_i> (>= 1).

    The non-support points fade like t^-(m2 - 1), one of the two clocks of eq-soudry-residual-rate; inf if none.
    """
    Z = _as_Z(Z)
    _check_mm(Z, mm)
    off = np.setdiff1d(np.arange(len(Z)), mm.support)
    return float(np.min(Z[off] @ mm.w_hat)) if off.size else float("inf")


def _as_Z(Z: ArrayLike) -> np.ndarray:
    Z = as_real_array("Z", Z, ndim=2)
    if Z.shape[0] < 1 or Z.shape[1] < 1:
        raise ValueError(f"Z must be an (n, d) array with n, d >= 1; got shape {Z.shape}")
    return Z


def _mm_type(mm: MaxMargin) -> MaxMargin:
    if not isinstance(mm, MaxMargin):
        raise TypeError(f"mm must be the MaxMargin of Z (from max_margin(Z)); got {type(mm).__name__}")
    return mm


def _mm_arrays(Z: np.ndarray, mm: MaxMargin) -> tuple[np.ndarray, np.ndarray]:
    """mm's (w_hat, alpha), checked against the shapes of Z."""
    w = as_real_array("mm.w_hat", _mm_type(mm).w_hat)
    alpha = as_real_array("mm.alpha", mm.alpha)
    if w.shape != (Z.shape[1],) or alpha.shape != (Z.shape[0],):
        raise ValueError(f"mm does not match Z {Z.shape}: w_hat {w.shape}, alpha {alpha.shape}")
    return w, alpha


def _check_mm(Z: np.ndarray, mm: MaxMargin, tol: float = 1e-6) -> MaxMargin:
    """mm, if it is the max-margin solution of Z (its KKT conditions hold to `tol`, relative); else ValueError.

    An `mm` computed from other data would silently measure every gap against the wrong SVM.
    """
    _mm_arrays(Z, mm)
    res = kkt_residuals(Z, mm)
    scale = 1.0 + float(np.linalg.norm(mm.w_hat))
    if max(res.values()) > tol * scale:
        worst = max(res, key=res.get)
        raise ValueError(f"mm is not the max-margin solution of this Z (KKT {worst} residual {res[worst]:.3g}); "
                         "compute it with max_margin(Z) for the same data")
    return mm


def _separating_vector(Z: np.ndarray) -> np.ndarray:
    """A w with Z w >= 1 (linear programme), or ValueError: the data are not separable through the origin."""
    res = optimize.linprog(np.zeros(Z.shape[1]), A_ub=-Z, b_ub=-np.ones(len(Z)), bounds=[(None, None)] * Z.shape[1],
                           method="highs")
    if res.status != 0 or np.min(Z @ res.x) < 1.0 - 1e-7:
        raise ValueError("Z is not linearly separable through the origin: no w has <w, z_i> > 0 for every row, so "
                         "the max-margin problem has no solution")
    return res.x


def _refine(Z: np.ndarray, w: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact KKT solve on the support S detected from w: (Z_S Z_S^T) lam = 1, lam >= 0, w = Z_S^T lam."""
    S = np.flatnonzero(Z @ w < 1.0 + tol)
    G = Z[S] @ Z[S].T
    lam = np.linalg.lstsq(G, np.ones(len(S)), rcond=None)[0]
    if np.any(lam < 0):
        lam = optimize.nnls(G, np.ones(len(S)))[0]
    w_ref = Z[S].T @ lam
    if np.min(Z @ w_ref) < 1.0 - 1e-9 or np.linalg.norm(w_ref - w) > 1e-4 * (1.0 + np.linalg.norm(w)):
        raise ValueError("SLSQP and the refinement on its support disagree; try another support_tol")
    alpha = np.zeros(len(Z))
    alpha[S] = lam
    return w_ref, alpha
