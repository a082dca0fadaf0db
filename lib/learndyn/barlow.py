"""Stepwise learning of eigenmodes in linear Barlow Twins (Ch 4, `ch-ssl2`): closed forms and their simulators.

Linear embedding f(x) = W x, W of shape (d, m). With the symmetrised cross-correlation of the two views
Gamma = 1/(2n) sum_i (x_i x_i'^T + x_i' x_i^T) (eq. `eq-ssl2-gamma`), the embedding cross-correlation is
C = W Gamma W^T (eq. `eq-ssl2-C`) and the loss is L(W) = ||C - I_d||_F^2 (eq. `eq-ssl2-loss`), with gradient
grad L = 4 (C - I) W Gamma (eq. `eq-ssl2-grad`). Along an eigenvector v_j of Gamma (eigenvalue lambda_j) the
strength a_j = lambda_j ||W v_j||^2 follows the logistic law da/dt = 8 lambda_j a (1 - a) (eq. `eq-ssl2-logistic`).

Time: GD step k is compared with gradient-flow time t = lr * k ("our normalisation": Simon et al. (2023) scale
loss and time differently, so their time constants differ from ours by a constant factor).
Theory: numpy, float64, broadcasting over leading axes. Simulators: torch, float64, batched on a leading axis B,
on `device`. The lead re-exports this module from `learndyn.ssl`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike

from .core import (
    History,
    as_int,
    as_positive,
    as_real_array,
    check_finite,
    few_threads_if_small,
    get_device,
    make_generator,
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
    "effective_a0",
    "barlow_step_times",
    "barlow_optimum",
    "aligned_init",
    "small_init",
    "train_barlow_linear",
    "train_barlow_views",
    "measured_step_times",
    "digits_views",
]


# ---- data and the cross-correlation ------------------------------------------------------------------------------
def gamma_matrix(X: ArrayLike, Xp: ArrayLike) -> np.ndarray:
    """Gamma = 1/(2n) sum_i (x_i x_i'^T + x_i' x_i^T) = (X^T X' + X'^T X) / (2n), eq. `eq-ssl2-gamma` (slide 19).

    X and Xp hold the two views of the same n inputs as rows, shape (n, m). Symmetric; may be indefinite.
    """
    X, Xp = as_real_array("X", X), as_real_array("Xp", Xp)
    if X.ndim != 2 or X.shape != Xp.shape:
        raise ValueError(f"X and Xp must both have shape (n, m); got {X.shape} and {Xp.shape}")
    return (X.T @ Xp + Xp.T @ X) / (2 * X.shape[0])


def make_gamma(eigs: ArrayLike, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric (m, m) Gamma = V diag(eigs) V^T with Haar-random orthogonal V; returns (Gamma, V).

    `eigs` (at most m values, padded with zeros) may contain negative entries. Column j of V is the eigenvector
    of eigs[j], in the order given.
    """
    m = as_int("m", m, minimum=1)
    lam = as_real_array("eigs", eigs).ravel()
    if lam.size > m:
        raise ValueError(f"eigs has {lam.size} values but m = {m}: give at most m eigenvalues")
    lam = np.concatenate([lam, np.zeros(m - lam.size)])
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((m, m)))
    V = q * np.sign(np.diag(r))  # Haar measure (sign fix of the QR factor)
    G = (V * lam) @ V.T
    return 0.5 * (G + G.T), V


# ---- loss, gradient and closed forms -------------------------------------------------------------------------------
def barlow_loss(W: np.ndarray | torch.Tensor, Gamma: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    """L = ||W Gamma W^T - I||_F^2, eq. `eq-ssl2-loss`; batched over leading axes of W; torch in, torch out."""
    if isinstance(W, torch.Tensor):
        G = torch.as_tensor(Gamma, dtype=W.dtype, device=W.device)
        C = W @ G @ W.mT
        return ((C - torch.eye(W.shape[-2], dtype=W.dtype, device=W.device)) ** 2).sum(dim=(-2, -1))
    W, G = _check_pair(W, Gamma)
    C = W @ G @ np.swapaxes(W, -1, -2)
    return np.sum((C - np.eye(W.shape[-2])) ** 2, axis=(-2, -1))


def barlow_grad(W: ArrayLike, Gamma: ArrayLike) -> np.ndarray:
    """grad_W L = 4 (C - I) W Gamma with C = W Gamma W^T, eq. `eq-ssl2-grad` (exercise `ex-ssl2-grad`); batched."""
    W, G = _check_pair(W, Gamma)
    WG = W @ G
    C = WG @ np.swapaxes(W, -1, -2)
    return 4.0 * (C - np.eye(W.shape[-2])) @ WG


def barlow_logistic(t: ArrayLike, lam: ArrayLike, a0: ArrayLike) -> np.ndarray:
    """a(t) = a0 e^{8 lam t} / (1 - a0 + a0 e^{8 lam t}), eq. `eq-ssl2-logistic` (Theorem `thm-ssl2-aligned`).

    Solves da/dt = 8 lam a (1 - a) for a mode of the aligned family; t, lam, a0 broadcast. Written with
    e^{-8 lam t} so that it does not overflow for large t (lam > 0); for lam <= 0 the mode decays or stays.
    """
    t, lam, a0 = (as_real_array(n, x) for n, x in (("t", t), ("lam", lam), ("a0", a0)))
    x = np.clip(-8.0 * lam * t, -700.0, 700.0)
    return a0 / (a0 + (1.0 - a0) * np.exp(x))


def barlow_time(lam: ArrayLike, a0: ArrayLike, level: float = 0.5) -> np.ndarray:
    """Time at which the logistic law reaches `level`: t = ln[level (1 - a0) / (a0 (1 - level))] / (8 lam).

    Eq. `eq-ssl2-step-time` (level 1/2: t = ln((1 - a0)/a0) / (8 lam)). Infinite where lam <= 0 (never learned).
    """
    lam, a0 = as_real_array("lam", lam), as_real_array("a0", a0)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    if np.any(a0 <= 0) or np.any(a0 >= 1):
        raise ValueError("a0 must lie in (0, 1) (a small initial mode strength)")
    with np.errstate(divide="ignore"):
        t = np.log(level * (1 - a0) / (a0 * (1 - level))) / (8.0 * lam)
    return np.where(lam > 0, t, np.inf)


def barlow_gd_map(lam: ArrayLike, a0: ArrayLike, lr: float, steps: int) -> np.ndarray:
    """GD on the aligned family, exactly: a_{k+1} = a_k (1 + 4 lr lam (1 - a_k))^2 (eq. `eq-ssl2-gd-map`).

    This is what W <- W - lr grad L does to a_j = lam_j varsigma_j^2 (varsigma <- varsigma (1 + 4 lr lam (1 - a))).
    lam and a0 broadcast; returns shape (steps + 1, *broadcast shape).
    """
    lr, steps = as_positive("lr", lr), as_int("steps", steps, minimum=0)
    lam, a = np.broadcast_arrays(as_real_array("lam", lam), as_real_array("a0", a0))
    out = np.empty((steps + 1, *lam.shape))
    out[0] = a
    for k in range(steps):
        out[k + 1] = out[k] * (1.0 + 4.0 * lr * lam * (1.0 - out[k])) ** 2
    check_finite("a", out, step=steps)
    return out


def barlow_gd_steps(lam: ArrayLike, a0: ArrayLike, lr: float, level: float = 0.5) -> np.ndarray:
    """GD steps for a mode to reach `level`, eq. `eq-ssl2-gd-steps`:

        k = t / lr + ln(level / a0) / 4 + ln((1 - level) / (1 - a0)) / 2,     t = `barlow_time`(lam, a0, level).

    In y = ln a one GD step adds D(y) = 2 ln(1 + r (1 - a) / 2), r = 8 lr lam; the steps needed are
    int dy / D + ln(D(y) / D(y0)) / 2 (Euler-Maclaurin), and 1/D = 1/(r (1 - a)) + 1/4 + O(r). The middle term is
    GD's lag (relative r/4), the last a fixed offset. Error O(r) steps.
    """
    lr = as_positive("lr", lr)
    a0 = as_real_array("a0", a0)
    return (barlow_time(lam, a0, level=level) / lr + 0.25 * np.log(level / a0)
            + 0.5 * np.log((1 - level) / (1 - a0)))


def effective_a0(W0: ArrayLike, Gamma: ArrayLike, d: int, refined: bool = True) -> np.ndarray:
    """Effective initial strengths of the top-d modes from a small init W0, eq. `eq-ssl2-a0-eff`.

    w_j = W0 v_j (embedding vector of mode j, eigenvalues in decreasing order). Naive: a_j = lam_j ||w_j||^2.
    Refined (Gram-Schmidt, the mechanism of Chapter 2): a_j = lam_j ||P_perp(w_1..w_{j-1}) w_j||^2, since once the
    earlier modes are learned (I - C) only lets w_j grow orthogonally to them. Returns (..., d); batched over W0.
    """
    W0, G = _check_pair(W0, Gamma)
    d = _check_d(d, W0, G)
    lam, V = _top_eigh(G, d)
    w = W0 @ V                                                   # (..., d, d): column j is w_j = W0 v_j
    if not refined:
        return lam * np.sum(w**2, axis=-2)
    out = np.empty(w.shape[:-2] + (d,))
    basis: list[np.ndarray] = []                                 # orthonormal (..., d) vectors
    for j in range(d):
        v = w[..., :, j].copy()
        for q in basis:
            v -= np.sum(q * v, axis=-1, keepdims=True) * q
        norm = np.linalg.norm(v, axis=-1, keepdims=True)
        out[..., j] = lam[..., j] * norm[..., 0] ** 2
        basis.append(v / np.where(norm > 0, norm, 1.0))
    return out


def barlow_step_times(W0: ArrayLike, Gamma: ArrayLike, d: int, refined: bool = True,
                      level: float = 0.5) -> np.ndarray:
    """Predicted flow times at which the j-th eigenvalue of C crosses `level`, j = 1..d (eq. `eq-ssl2-step-time`).

    Logistic law with the effective initial strengths of `effective_a0` (refined: Gram-Schmidt). In our
    normalisation t = lr * k; inf for modes with lam_j <= 0. Shape (..., d), batched over leading axes of W0.
    """
    W0, G = _check_pair(W0, Gamma)
    lam, _ = _top_eigh(G, _check_d(d, W0, G))
    return barlow_time(lam, effective_a0(W0, G, d, refined=refined), level=level)


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
    s = np.broadcast_to(as_real_array("varsigma", varsigma), (d,))
    Q = np.eye(d) if Q is None else as_real_array("Q", Q)
    if Q.shape != (d, d) or not np.allclose(Q @ Q.T, np.eye(d), atol=1e-10):
        raise ValueError(f"Q must be an orthogonal ({d}, {d}) matrix")
    return Q @ (s[:, None] * V.T)


def small_init(d: int, m: int, eps: ArrayLike, seed: int = 0) -> np.ndarray:
    """W0 = eps * N(0, 1) / sqrt(m), shape (d, m), or (B, d, m) for B values of eps (one draw, rescaled)."""
    d, m = as_int("d", d, minimum=1), as_int("m", m, minimum=1)
    if d > m:
        raise ValueError(f"d (embedding dimension) must be at most m = {m}; got {d}")
    eps = as_real_array("eps", eps)
    if np.any(eps <= 0):
        raise ValueError("eps (initialisation scale) must be positive")
    Z = np.random.default_rng(seed).standard_normal((d, m)) / np.sqrt(m)
    return eps[..., None, None] * Z


# ---- simulators (torch) ----------------------------------------------------------------------------------------------
def train_barlow_linear(Gamma: ArrayLike, W0: ArrayLike, lr: float | ArrayLike, steps: int, record_every: int = 1,
                        device: str | torch.device | None = None) -> History:
    """Full-batch GD W <- W - lr * 4 (C - I) W Gamma on L = ||W Gamma W^T - I||^2 (eq. `eq-ssl2-gd`), in float64.

    W0 is (d, m) or a batch (B, d, m); lr a float or shape (B,). Records, at steps 0, record_every, ..., steps:
    "loss" (K,[B]), "eigC" (K,[B],d) eigenvalues of C in decreasing order, "modes" (K,[B],m) the strengths
    a_j = lam_j ||W v_j||^2 along the eigenvectors of Gamma (decreasing lam_j). final["W"]: last weights.
    Raises DivergenceError (with the step) if the weights leave the finite numbers.
    """
    G = _gamma(Gamma)
    W0 = as_real_array("W0", W0)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, G)
    dev = get_device(device)
    Gt = torch.as_tensor(G, dtype=torch.float64, device=dev)
    with few_threads_if_small(dev, np.asarray(W0).size):
        return _gd_loop(W0, lr, steps, record_every, dev, lambda k: Gt, G)


def train_barlow_views(X: ArrayLike, Xp: ArrayLike, W0: ArrayLike, lr: float, steps: int, batch_size: int = 256,
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

    W0 = as_real_array("W0", W0)
    _check_d(W0.shape[-2], W0, G)
    with few_threads_if_small(dev, np.asarray(W0).size):
        return _gd_loop(W0, lr, steps, record_every, dev, batch_gamma, G)


def measured_step_times(hist: History, level: float = 0.5, key: str = "eigC") -> np.ndarray:
    """First recorded step at which each column of hist[key] crosses `level`, linearly interpolated; nan if never.

    Returns (..., n) in the units of hist.steps (multiply by lr for flow time).
    """
    x = np.moveaxis(np.asarray(hist[key], dtype=float), 0, -1)     # (..., n, K)
    s = np.asarray(hist.steps, dtype=float)
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
    noise = as_positive("noise", noise)
    if not 0 <= mask < 1:
        raise ValueError(f"mask (fraction of masked pixels) must lie in [0, 1); got {mask!r}")
    images = load_digits().data / 16.0
    images = images - images.mean(axis=0)
    rng = np.random.default_rng(seed)
    x0 = images[rng.integers(0, images.shape[0], n)]
    views = []
    for _ in range(2):
        v = x0 + noise * rng.standard_normal(x0.shape)
        views.append(v * (rng.random(x0.shape) >= mask))
    return views[0], views[1]


# ---- helpers ------------------------------------------------------------------------------------------------------
def _gd_loop(W0: np.ndarray, lr: float | ArrayLike, steps: int, record_every: int, dev: torch.device,
             step_gamma: Callable[[int], torch.Tensor], G: np.ndarray) -> History:
    steps = as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone()   # (B, d, m)
    B, d, m = W.shape
    lr_arr = np.atleast_1d(np.asarray(lr, dtype=float))
    if lr_arr.ndim != 1 or lr_arr.size not in (1, B):
        raise ValueError(f"lr must be a float or have shape (B,) = ({B},); got shape {lr_arr.shape}")
    if not np.all(np.isfinite(lr_arr)) or np.any(lr_arr <= 0):
        raise ValueError(f"lr (learning rate) must be positive and finite; got {lr!r}")
    lr_t = torch.as_tensor(np.broadcast_to(lr_arr, (B,)).copy(), device=dev)[:, None, None]     # (B, 1, 1)
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
        W = W - lr_t * 4.0 * (WG @ W.mT - eye) @ WG
    C = torch.stack(Cs)                                                                         # (K, B, d, d)
    C = 0.5 * (C + C.mT)
    eigC = torch.linalg.eigvalsh(C).flip(-1).cpu().numpy()
    loss = ((C - eye) ** 2).sum(dim=(-2, -1)).cpu().numpy()
    modes = lam * (torch.stack(WVs) ** 2).sum(dim=-2).cpu().numpy()                            # (K, B, m)
    Wf = W.cpu().numpy()
    if not batched:
        loss, eigC, modes, Wf = loss[:, 0], eigC[:, 0], modes[:, 0], Wf[0]
    return History(np.asarray(rec_steps), {"loss": loss, "eigC": eigC, "modes": modes}, {"W": Wf})


def _gamma(Gamma: ArrayLike) -> np.ndarray:
    G = as_real_array("Gamma", Gamma)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"Gamma must be a square (m, m) matrix; got shape {G.shape}")
    if not np.allclose(G, G.T, rtol=0, atol=1e-10 * max(1.0, np.abs(G).max())):
        raise ValueError("Gamma must be symmetric (it is the symmetrised cross-correlation of the two views)")
    return 0.5 * (G + G.T)


def _check_pair(W: ArrayLike, Gamma: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    W, G = as_real_array("W", W), _gamma(Gamma)
    if W.ndim < 2 or W.shape[-1] != G.shape[0]:
        raise ValueError(f"W must have shape (..., d, m) with m = {G.shape[0]} (the size of Gamma); got {W.shape}")
    return W, G


def _check_d(d: int, W: np.ndarray, G: np.ndarray) -> int:
    d = as_int("d", d, minimum=1)
    if d > G.shape[-1]:
        raise ValueError(f"d (embedding dimension) must be at most m = {G.shape[-1]}; got {d}")
    if W.shape[-2] != d:
        raise ValueError(f"W has {W.shape[-2]} rows but d = {d}")
    if W.shape[-1] != G.shape[-1]:
        raise ValueError(f"W must have m = {G.shape[-1]} columns (the size of Gamma); got {W.shape[-1]}")
    return d


def _top_eigh(G: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The d largest eigenvalues (decreasing) of the symmetric G and their eigenvectors as columns."""
    lam, V = np.linalg.eigh(G)
    return lam[::-1][:d].copy(), V[:, ::-1][:, :d].copy()
