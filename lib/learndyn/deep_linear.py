"""Deep linear networks: the loss, its symmetry and exact mode dynamics (Ch 1-2), with the simulators they are
checked against.

Two-layer model (Ch 1, eq. `eq-linreg-deep-loss`; Ch 2 for whitened inputs): E(W1, W2) = 1/2 ||Sigma - W2 W1||_F^2
with W1 of shape (N2, N1), W2 of shape (N3, N2), Sigma = U S V^T of shape (N3, N1). Batched arguments carry leading
axes (matmul broadcasting). GD step k is compared with flow time t = lr * k (Ch 2 writes tau = 1/lr).
Theory: numpy, float64, broadcasting. Saxe, McClelland & Ganguli (2014); Baldi & Hornik (1989).
"""

from __future__ import annotations

import numpy as np
import torch

from .core import DivergenceError, as_int, as_positive

__all__ = [
    "two_layer_loss",
    "two_layer_grads",
    "balance",
    "origin_hessian_spectrum",
    "scalar_gd_path",
    "scalar_gd",
]


def two_layer_loss(Sigma: torch.Tensor | np.ndarray, W1: torch.Tensor | np.ndarray,
                   W2: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """E = 1/2 ||Sigma - W2 W1||_F^2 (per batch element); torch in, torch out (differentiable), numpy in, numpy out."""
    R = Sigma - W2 @ W1
    if isinstance(R, torch.Tensor):
        return 0.5 * (R**2).sum(dim=(-2, -1))
    return 0.5 * np.sum(np.asarray(R) ** 2, axis=(-2, -1))


def two_layer_grads(Sigma: np.ndarray, W1: np.ndarray, W2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dE/dW1, dE/dW2) = (-W2^T G, -G W1^T) with G = Sigma - W2 W1 (Ch 2, eq. `eq-saxe-grads`); batched."""
    Sigma, W1, W2 = (np.asarray(x, dtype=float) for x in (Sigma, W1, W2))
    if W1.shape[-2] != W2.shape[-1] or Sigma.shape[-2:] != (W2.shape[-2], W1.shape[-1]):
        raise ValueError(f"shapes do not chain: Sigma {Sigma.shape}, W1 {W1.shape}, W2 {W2.shape}; "
                         "expected Sigma (N3, N1), W1 (N2, N1), W2 (N3, N2)")
    G = Sigma - W2 @ W1
    return -np.swapaxes(W2, -1, -2) @ G, -G @ np.swapaxes(W1, -1, -2)


def balance(W1: np.ndarray, W2: np.ndarray) -> np.ndarray:
    """C = W1 W1^T - W2^T W2, the (N2, N2) quantity conserved by gradient flow (Ch 1 E1.4, Ch 2 T2.2); batched."""
    W1, W2 = np.asarray(W1, dtype=float), np.asarray(W2, dtype=float)
    return W1 @ np.swapaxes(W1, -1, -2) - np.swapaxes(W2, -1, -2) @ W2


def origin_hessian_spectrum(svals: np.ndarray, N2: int, N1: int | None = None, N3: int | None = None) -> np.ndarray:
    """Eigenvalues of the Hessian of E at W = 0, eq. `eq-linreg-origin-hessian` (Ch 1): +-s_alpha, each N2 times.

    With N1 and N3 given, the zero eigenvalues are added so that the count is the number of parameters
    N2 (N1 + N3). Sorted ascending.
    """
    s = np.asarray(svals, dtype=float).ravel()
    N2 = as_int("N2", N2, minimum=1)
    if np.any(s < 0) or not np.all(np.isfinite(s)):
        raise ValueError("svals must be finite and non-negative (singular values)")
    eigs = [np.repeat(s, N2), np.repeat(-s, N2)]
    if N1 is not None or N3 is not None:
        if N1 is None or N3 is None:
            raise ValueError("give both N1 and N3 (or neither)")
        N1, N3 = as_int("N1", N1, minimum=1), as_int("N3", N3, minimum=1)
        if s.size > min(N1, N3):
            raise ValueError(f"at most min(N1, N3) = {min(N1, N3)} singular values; got {s.size}")
        eigs.append(np.zeros(N2 * (N1 + N3) - 2 * N2 * s.size))
    return np.sort(np.concatenate(eigs))


def scalar_gd_path(s: float | np.ndarray, a0: float | np.ndarray, b0: float | np.ndarray, eta: float,
                   steps: int) -> tuple[np.ndarray, np.ndarray]:
    """GD on the scalar model E(a, b) = 1/2 (s - a b)^2 (Ch 1, eq. `eq-linreg-scalar`; one mode of Ch 2):

        a <- a + eta b (s - a b),   b <- b + eta a (s - a b)      (simultaneous update).

    Arguments broadcast; returns the paths (a, b), each of shape (steps + 1, *broadcast shape).
    Raises `DivergenceError` with the step when the iterates overflow.
    """
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    s, a, b = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (s, a0, b0)))
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("s, a0 and b0 must be finite")
    A, B = np.empty((steps + 1, *s.shape)), np.empty((steps + 1, *s.shape))
    A[0], B[0] = a, b
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps):
            r = s - A[k] * B[k]
            A[k + 1], B[k + 1] = A[k] + eta * B[k] * r, B[k] + eta * A[k] * r
            if not (np.all(np.isfinite(A[k + 1])) and np.all(np.isfinite(B[k + 1]))):
                raise DivergenceError(f"scalar GD diverged at step {k + 1} (eta={eta:g}); try a smaller eta")
    return A, B


def scalar_gd(s: float | np.ndarray, a0: float | np.ndarray, b0: float | np.ndarray, eta: float,
              steps: int) -> np.ndarray:
    """Mode strengths u_k = a_k b_k of scalar GD (see `scalar_gd_path`); shape (steps + 1, *broadcast shape)."""
    A, B = scalar_gd_path(s, a0, b0, eta, steps)
    return A * B
