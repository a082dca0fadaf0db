"""The teacher tasks of Ch 2: a regression task through its input-output correlation Sigma = U S V^T, one with
chosen singular values and Haar-random singular vectors, and Saxe et al.'s hierarchically structured (tree) data with
its expected spectrum.

    Sigma = U S V^T,   U in O(N3), V in O(N1), S rectangular-diagonal, s_1 >= ... >= s_r   (Ch 2, eq. `eq-saxe-svd`)

`learndyn.deep_linear` re-exports this module (`ld.deep_linear.svd_task` is `ld.tasks.svd_task`); it imports nothing
from there. numpy, float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .core import as_int, as_nonnegative, as_real_array, as_seed, check_alloc

__all__ = ["Task", "svd_task", "hierarchical_task", "tree_spectrum"]


@dataclass
class Task:
    """A whitened-input regression task through its input-output correlation Sigma = U S V^T (Ch 2, `eq-saxe-svd`).

    Sigma (N3, N1); U (N3, N3) and V (N1, N1) orthogonal; S (N3, N1) rectangular-diagonal; svals (r,) the
    singular values s_1 >= ... >= s_r, r = min(N1, N3). All numpy float64.
    """

    Sigma: np.ndarray
    U: np.ndarray
    S: np.ndarray
    V: np.ndarray
    svals: np.ndarray


def svd_task(N1: int, N3: int, svals: np.ndarray | list[float], seed: int = 0) -> Task:
    """Sigma = U S V^T with the given singular values and Haar-random orthogonal U (N3, N3), V (N1, N1)."""
    N1, N3 = as_int("N1", N1, minimum=1), as_int("N3", N3, minimum=1)
    s = as_real_array("svals", svals, nonempty=True).ravel()
    if s.size == 0 or s.size > min(N1, N3) or np.any(s < 0):
        raise ValueError(f"svals must hold 1..min(N1, N3) = {min(N1, N3)} non-negative values; got {s}")
    s = np.concatenate([np.sort(s)[::-1], np.zeros(min(N1, N3) - s.size)])
    rng = np.random.default_rng(as_seed("seed", seed))
    U, V = _haar_orthogonal(N3, rng), _haar_orthogonal(N1, rng)
    S = np.zeros((N3, N1))
    S[np.arange(s.size), np.arange(s.size)] = s
    return Task(U @ S @ V.T, U, S, V, s)


def hierarchical_task(levels: int = 5, n_features: int = 1000, flip: float = 0.1, seed: int = 0) -> Task:
    """Saxe et al.'s hierarchically structured data (Ch 2, section 'Saxe's hierarchical data'): 2**levels items,
    X = I, features from a tree.

    Each feature takes a random sign at the root of a binary tree and copies it down, each child flipping it
    with probability `flip`; the leaves are the items. With X = I the task is Sigma = Y (n_features, 2**levels),
    whose singular values come in groups of sizes 1, 1, 2, 4, ... (one per level of the tree).
    """
    levels, n_features = as_int("levels", levels, minimum=1), as_int("n_features", n_features, minimum=1)
    flip = _flip(flip)
    rng = np.random.default_rng(as_seed("seed", seed))
    items = 2.0**levels                                # the SVD's U (F, F) and V (2^L, 2^L) dominate the memory
    check_alloc(f"hierarchical_task(levels={levels}, n_features={n_features})",
                n_features**2 + items**2 + 2 * n_features * items)
    Y = rng.choice([-1.0, 1.0], size=(n_features, 1))
    for _ in range(levels):
        Y = np.repeat(Y, 2, axis=1)
        Y = Y * np.where(rng.random(Y.shape) < flip, -1.0, 1.0)
    U, s, Vt = np.linalg.svd(Y, full_matrices=True)
    S = np.zeros_like(Y)
    S[np.arange(s.size), np.arange(s.size)] = s
    return Task(Y, U, S, Vt.T, s)


def tree_spectrum(levels: int = 5, n_features: int = 1000, flip: float = 0.1) -> np.ndarray:
    """Expected singular values of `hierarchical_task` data, sqrt(F lambda), descending (Ch 2, eq. `eq-saxe-tree`).

    The item covariance E[y_i y_j] = rho^h(i, j), rho = (1 - 2 flip)^2, h(i, j) = levels from the leaves to the common
    ancestor, is diagonalised by the Haar vectors of the tree: the constant vector, lambda = S(L), and for each node
    h levels above the leaves (2^(L-h) of them) lambda_h = S(h - 1) - 2^(h-1) rho^h, with
    S(m) = 1 + sum_{l=1}^m 2^(l-1) rho^l. The singular values of Sigma = Y are then sqrt(F lambda) to O(sqrt(F)).
    """
    L, F = as_int("levels", levels, minimum=1), as_int("n_features", n_features, minimum=1)
    flip = _flip(flip)
    check_alloc(f"tree_spectrum(levels={L})", 2.0**L)
    rho = (1.0 - 2.0 * flip) ** 2
    S = lambda m: 1.0 + sum(2.0 ** (j - 1) * rho**j for j in range(1, m + 1))  # noqa: E731
    lam = [S(L)] + [S(h - 1) - 2.0 ** (h - 1) * rho**h for h in range(L, 0, -1) for _ in range(2 ** (L - h))]
    return np.sqrt(F * np.array(lam))


def _flip(flip: float) -> float:
    flip = as_nonnegative("flip", flip)
    if flip >= 0.5:
        raise ValueError(f"flip must be a probability in [0, 0.5); got {flip!r}")
    return flip


def _haar_orthogonal(n: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))
