"""Simulators of Ch 4's linear self-supervised models (torch): GD on linear Barlow Twins (population, sampled views,
the kernel/dual form), on linear VICReg and on linear SimCLR, the step times read off a run, and the digits views.

Re-exported by `learndyn.barlow`, whose closed forms they are checked against; use them from there
(`ld.barlow.train_barlow_linear`). Conventions of that module: W (d, m), Gamma (m, m), C = W Gamma W^T,
L = ||C - I||_F^2; GD step k is compared with flow time t = eta k. Simulators run in float64, batched on a leading
axis B, on `device` (default `learndyn.get_device()`), and return a `learndyn.core.History`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike

from .core import (
    History,
    as_int,
    as_nonnegative,
    as_positive,
    as_real_array,
    as_real_tensor,
    as_seed,
    as_str,
    check_finite,
    few_threads_if_small,
    get_device,
    make_generator,
    no_overflow,
)
from .datasets import load_digits

__all__ = ["gamma_matrix", "train_barlow_linear", "train_barlow_views", "train_barlow_dual", "measured_step_times",
           "digits_views", "train_vicreg_linear", "info_nce_linear", "train_simclr_linear"]


def train_barlow_linear(Gamma: ArrayLike, W0: ArrayLike, eta: float | ArrayLike, steps: int, record_every: int = 1,
                        device: str | torch.device | None = None) -> History:
    """Full-batch GD W <- W - eta * 4 (C - I) W Gamma on L = ||W Gamma W^T - I||^2 (eq. `eq-ssl2-gd`), in float64.

    W0 is (d, m) or a batch (B, d, m); eta a float or shape (B,). Records, at steps 0, record_every, ..., steps:
    "loss" (K,[B]), "eigC" (K,[B],d) eigenvalues of C in decreasing order, "modes" (K,[B],m) the strengths
    a_j = lam_j ||W v_j||^2 along the eigenvectors of Gamma (decreasing lam_j). final["W"]: last weights.
    Raises DivergenceError (with the step) if the weights leave the finite numbers.
    """
    G = _gamma(Gamma)
    W0 = as_real_array("W0", W0, nonempty=True)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, G, "W0")
    dev = get_device(device)
    Gt = torch.as_tensor(G, dtype=torch.float64, device=dev)
    with few_threads_if_small(dev, np.asarray(W0).size):
        return _gd_loop(W0, eta, steps, record_every, dev, lambda k: Gt, G, full_batch=True)


def train_barlow_views(X: ArrayLike, Xp: ArrayLike, W0: ArrayLike, eta: float, steps: int, batch_size: int = 256,
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

    W0 = as_real_array("W0", W0, nonempty=True, ndim=(2, 3))
    _check_d(W0.shape[-2], W0, G, "W0")
    with few_threads_if_small(dev, np.asarray(W0).size):
        return _gd_loop(W0, eta, steps, record_every, dev, batch_gamma, G)


def train_barlow_dual(K: ArrayLike, B0: ArrayLike, eta: float, steps: int, record_every: int = 1,
                      device: str | torch.device | None = None) -> History:
    """GD on linear Barlow Twins in its dual (kernel) form, eq. `eq-ssl2-dual`, in float64.

    K is the (2n, 2n) kernel matrix of the 2n views ordered [x_1..x_n, x_1'..x_n'], K_ab = k(x_a, x_b); the
    embedding is f = B^T k(., views), i.e. W = B^T A for features A (rows phi of the views), with B (2n, d). With the
    swap J of the two halves, Gamma = A^T J A / (2n), so C = B^T K J K B / (2n) and GD W <- W - 4 eta (C - I) W Gamma
    becomes B^T <- B^T - 4 eta (C - I) B^T K J / (2n). B0 (2n, d) or (batch, 2n, d). Records "loss" and "eigC"
    (decreasing eigenvalues of C); final["B"].
    """
    K = as_real_array("K", K, nonempty=True)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] % 2:
        raise ValueError(f"K must be a square (2n, 2n) kernel matrix of the two views; got shape {K.shape}")
    if not np.allclose(K, K.T, atol=1e-10 * max(1.0, np.abs(K).max())):
        raise ValueError("K must be symmetric (a kernel matrix)")
    B0 = as_real_array("B0", B0)
    if B0.ndim not in (2, 3) or B0.shape[-2] != K.shape[0]:
        raise ValueError(f"B0 must have shape (2n, d) or (batch, 2n, d) with 2n = {K.shape[0]}; got {B0.shape}")
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    n2 = K.shape[0]
    dev = get_device(device)
    batched = B0.ndim == 3
    Bt = torch.as_tensor(np.swapaxes(B0 if batched else B0[None], -1, -2), dtype=torch.float64, device=dev).clone()
    Kt = torch.as_tensor(0.5 * (K + K.T), dtype=torch.float64, device=dev)
    swap = torch.as_tensor(np.roll(np.arange(n2), n2 // 2), device=dev)  # columns of X J: X[:, swap]
    eye = torch.eye(Bt.shape[-2], dtype=torch.float64, device=dev)
    rec, Cs, Bs = [], [], []
    with few_threads_if_small(dev, Bt.numel()):
        for k in range(steps + 1):
            P = Bt @ Kt                                           # B^T K: the step's one product with K
            PJ = P[..., swap] / n2                                # B^T K J / (2n)
            C = PJ @ P.mT                                         # B^T K J K B / (2n), K symmetric
            if k % record_every == 0 or k == steps:
                rec.append(k)
                Cs.append(0.5 * (C + C.mT))
                Bs.append(Bt)
            if k == steps:
                break
            Bt = Bt - 4.0 * eta * (C - eye) @ PJ
    _check_records("B", Bs, rec)
    C = torch.stack(Cs)
    eigC = torch.linalg.eigvalsh(C).flip(-1).cpu().numpy()
    loss = ((C - eye) ** 2).sum(dim=(-2, -1)).cpu().numpy()
    Bf = np.swapaxes(Bt.cpu().numpy(), -1, -2)
    if not batched:
        eigC, loss, Bf = eigC[:, 0], loss[:, 0], Bf[0]
    return History(np.asarray(rec), {"loss": loss, "eigC": eigC}, {"B": Bf})


def measured_step_times(hist: History, level: float = 0.5, key: str = "eigC") -> np.ndarray:
    """First recorded step at which each column of hist[key] crosses `level`, linearly interpolated; nan if never.

    Returns (..., n) in the units of hist.steps (multiply by eta for flow time).
    """
    if not isinstance(hist, History):
        raise TypeError(f"hist must be a History from a Barlow simulator; got {type(hist).__name__}")
    key, level = as_str("key", key), _level(level)
    if key not in hist:
        raise ValueError(f"hist has no metric key={key!r}; recorded: {sorted(hist.metrics)}")
    x = np.moveaxis(as_real_array(f"hist[{key!r}]", hist[key], finite=False), 0, -1)     # (..., n, K)
    s = as_real_array("hist.steps", hist.steps)
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
    n = as_int("n", n, minimum=1)
    noise, mask = as_nonnegative("noise", noise), as_nonnegative("mask", mask)   # zero noise: identical views
    if mask >= 1:
        raise ValueError(f"mask (fraction of masked pixels) must lie in [0, 1); got {mask!r}")
    images = load_digits()[0] / 16.0
    images = images - images.mean(axis=0)
    rng = np.random.default_rng(as_seed("seed", seed))
    x0 = images[rng.integers(0, images.shape[0], n)]
    views = []
    for _ in range(2):
        v = x0 + noise * rng.standard_normal(x0.shape)
        views.append(v * (rng.random(x0.shape) >= mask))
    return views[0], views[1]


def train_vicreg_linear(Sigma: ArrayLike, Gamma: ArrayLike, W0: ArrayLike, eta: float, steps: int, beta: float = 1.0,
                        record_every: int = 1, device: str | torch.device | None = None) -> History:
    """Full-batch GD on `vicreg_loss`: W <- W - eta [4 (C - I) W Sigma + 2 beta W Delta], C = W Sigma W^T, float64.

    W0 (d, m) or (B, d, m). Records "loss" (K,[B]) and "eigC" (K,[B],d), the eigenvalues of C in decreasing order.
    """
    S, G = _gamma(Sigma, "Sigma"), _gamma(Gamma)
    beta = as_nonnegative("beta", beta)
    W0 = as_real_array("W0", W0, nonempty=True)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, S, "W0")
    eta, steps = as_positive("eta", eta), as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    dev = get_device(device)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone()
    St = torch.as_tensor(S, dtype=torch.float64, device=dev)
    Dt = torch.as_tensor(2.0 * (S - G), dtype=torch.float64, device=dev)
    eye = torch.eye(W.shape[-2], dtype=torch.float64, device=dev)
    rec, Cs, Ws = [], [], []
    with few_threads_if_small(dev, W0.size):
        for k in range(steps + 1):
            WS = W @ St
            C = WS @ W.mT
            if k % record_every == 0 or k == steps:
                rec.append(k)
                Cs.append(C)
                Ws.append(W)
            if k == steps:
                break
            W = W - eta * (4.0 * (C - eye) @ WS + 2.0 * beta * W @ Dt)
        _check_records("W", Ws, rec)
        C, Wr = torch.stack(Cs), torch.stack(Ws)                                      # (K, B, d, d), (K, B, d, m)
        losses = ((C - eye) ** 2).sum(dim=(-2, -1)) + beta * (Wr @ Dt * Wr).sum(dim=(-2, -1))
        Cs = 0.5 * (C + C.mT)
    eigC = torch.linalg.eigvalsh(Cs).flip(-1).cpu().numpy()
    loss = losses.cpu().numpy()
    Wf = W.cpu().numpy()
    if not batched:
        loss, eigC, Wf = loss[:, 0], eigC[:, 0], Wf[0]
    return History(np.asarray(rec), {"loss": loss, "eigC": eigC}, {"W": Wf})


def info_nce_linear(W: torch.Tensor, X: torch.Tensor, Xp: torch.Tensor, tau: float) -> torch.Tensor:
    """Symmetric InfoNCE of the unnormalised linear embeddings z = W x, z' = W x', eq. `eq-ssl2-simclr`.

    L = (1/2n) sum_i [ -2 z_i.z_i'/tau + log sum_k e^{z_i.z_k'/tau} + log sum_k e^{z_k.z_i'/tau} ]: each view's
    partner against the other view's batch. W (d, m) or (B, d, m); returns a scalar or (B,).
    """
    W = as_real_tensor("W", W, dtype=None, ndim=(2, 3), allow_grad=True)      # differentiable in W
    X, Xp = (as_real_tensor(n, x, dtype=W.dtype, device=W.device, ndim=2) for n, x in (("X", X), ("Xp", Xp)))
    if X.shape[1] != W.shape[-1]:
        raise ValueError(f"X (n, m) must have m = {W.shape[-1]} columns, those of W {tuple(W.shape)}; got "
                         f"{tuple(X.shape)}")
    if X.shape != Xp.shape:
        raise ValueError(f"X and Xp must hold the same n inputs; got shapes {tuple(X.shape)} and {tuple(Xp.shape)}")
    return no_overflow("W, X and Xp", _info_nce(W, X, Xp, as_positive("tau", tau)))


def _info_nce(W: torch.Tensor, X: torch.Tensor, Xp: torch.Tensor, tau: float) -> torch.Tensor:
    Z, Zp = X @ W.mT, Xp @ W.mT                                       # (..., n, d)
    logits = Z @ Zp.mT / tau                                          # (..., n, n)
    pos = logits.diagonal(dim1=-2, dim2=-1)
    return (-pos + 0.5 * (torch.logsumexp(logits, dim=-1) + torch.logsumexp(logits, dim=-2))).mean(dim=-1)


def train_simclr_linear(X: ArrayLike, Xp: ArrayLike, W0: ArrayLike, eta: float, steps: int, tau: float = 1.0,
                        record_every: int = 1, device: str | torch.device | None = None) -> History:
    """Full-batch GD on `info_nce_linear` (torch autograd, float64) from W0 (d, m) or (B, d, m).

    Records "loss" (K,[B]), "eigC" (K,[B],d) the eigenvalues of C = W Gamma W^T (Gamma = `gamma_matrix`(X, Xp)) and
    "modes" (K,[B],m) the strengths lam_j ||W v_j||^2 along Gamma's eigenvectors (decreasing lam_j).
    """
    X, Xp = as_real_array("X", X), as_real_array("Xp", Xp)
    G = gamma_matrix(X, Xp)
    W0 = as_real_array("W0", W0, nonempty=True)
    if W0.ndim not in (2, 3):
        raise ValueError(f"W0 must have shape (d, m) or (B, d, m); got {W0.shape}")
    _check_d(W0.shape[-2], W0, G, "W0")
    eta, steps, tau = as_positive("eta", eta), as_int("steps", steps, minimum=0), as_positive("tau", tau)
    record_every = as_int("record_every", record_every, minimum=1)
    dev = get_device(device)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone().requires_grad_(True)
    Xt, Xpt = (torch.as_tensor(a, dtype=torch.float64, device=dev) for a in (X, Xp))
    lam, V = _eigh_desc(G)
    Gt, Vt = (torch.tensor(a, dtype=torch.float64, device=dev) for a in (G, V))  # copies: the cached V is read-only
    rec, Cs, WVs, losses = [], [], [], []
    with few_threads_if_small(dev, X.size + W0.size):
        _simclr_loop(W, Xt, Xpt, tau, eta, steps, record_every, Gt, Vt, rec, Cs, WVs, losses)
    C = torch.stack(Cs)
    eigC = torch.linalg.eigvalsh(0.5 * (C + C.mT)).flip(-1).cpu().numpy()
    modes = lam * (torch.stack(WVs) ** 2).sum(dim=-2).cpu().numpy()
    loss = torch.stack(losses).cpu().numpy()
    Wf = W.detach().cpu().numpy()
    if not batched:
        loss, eigC, modes, Wf = loss[:, 0], eigC[:, 0], modes[:, 0], Wf[0]
    return History(np.asarray(rec), {"loss": loss, "eigC": eigC, "modes": modes}, {"W": Wf})


def _simclr_loop(W: torch.Tensor, Xt: torch.Tensor, Xpt: torch.Tensor, tau: float, eta: float, steps: int,
                 record_every: int, Gt: torch.Tensor, Vt: torch.Tensor, rec: list, Cs: list, WVs: list,
                 losses: list) -> None:
    """The GD loop of `train_simclr_linear`: autograd of `info_nce_linear`, recording into the lists given."""
    for k in range(steps + 1):
        loss = _info_nce(W, Xt, Xpt, tau)
        if k % record_every == 0 or k == steps:
            rec.append(k)
            Wd = W.detach()
            Cs.append(Wd @ Gt @ Wd.mT)
            WVs.append(Wd @ Vt)
            losses.append(loss.detach())
        if k == steps:
            break
        (grad,) = torch.autograd.grad(loss.sum(), W)
        with torch.no_grad():
            W -= eta * grad
    _check_records("W", WVs, rec)  # W V (V orthogonal) is finite exactly when W is


def _gd_loop(W0: np.ndarray, eta: float | ArrayLike, steps: int, record_every: int, dev: torch.device,
             step_gamma: Callable[[int], torch.Tensor], G: np.ndarray, full_batch: bool = False) -> History:
    """GD W <- W - 4 eta (W Gamma_k W^T - I) W Gamma_k with Gamma_k = step_gamma(k), recording C = W G W^T and
    W V at every `record_every`-th step. full_batch: step_gamma(k) is G itself, so the step's W Gamma_k W^T is the
    recorded C (computed once). The finiteness of W is checked once, on the records, after the loop."""
    steps = as_int("steps", steps, minimum=0)
    record_every = as_int("record_every", record_every, minimum=1)
    batched = W0.ndim == 3
    W = torch.as_tensor(W0 if batched else W0[None], dtype=torch.float64, device=dev).clone()   # (B, d, m)
    B, d, m = W.shape
    if isinstance(eta, bool):
        raise TypeError(f"eta must be a real number or an array of them; got {eta!r}")
    eta_arr = np.atleast_1d(as_real_array("eta", eta))
    if eta_arr.ndim != 1 or eta_arr.size not in (1, B):
        raise ValueError(f"eta must be a float or have shape (B,) = ({B},); got shape {eta_arr.shape}")
    if not np.all(np.isfinite(eta_arr)) or np.any(eta_arr <= 0):
        raise ValueError(f"eta (step size) must be positive and finite; got {eta!r}")
    eta_t = torch.as_tensor(np.broadcast_to(eta_arr, (B,)).copy(), device=dev)[:, None, None]     # (B, 1, 1)
    lam, V = _eigh_desc(G)
    Vt = torch.tensor(V, dtype=torch.float64, device=dev)  # a copy: the cached V is read-only
    eye = torch.eye(d, dtype=torch.float64, device=dev)
    Gfull = torch.as_tensor(G, dtype=torch.float64, device=dev)
    rec_steps, Cs, Ws = [], [], []
    for k in range(steps + 1):
        if full_batch:
            WG = W @ Gfull
            WGW = WG @ W.mT
        if k % record_every == 0 or k == steps:
            rec_steps.append(k)
            Cs.append(WGW if full_batch else W @ Gfull @ W.mT)                                      # (B, d, d)
            Ws.append(W)
        if k == steps:
            break
        if not full_batch:
            WG = W @ step_gamma(k)
            WGW = WG @ W.mT
        W = W - eta_t * 4.0 * (WGW - eye) @ WG
    _check_records("W", Ws, rec_steps)
    C = torch.stack(Cs)                                                                         # (K, B, d, d)
    C = 0.5 * (C + C.mT)
    eigC = torch.linalg.eigvalsh(C).flip(-1).cpu().numpy()
    loss = ((C - eye) ** 2).sum(dim=(-2, -1)).cpu().numpy()
    modes = lam * (torch.stack([Wk @ Vt for Wk in Ws]) ** 2).sum(dim=-2).cpu().numpy()        # (K, B, m)
    Wf = W.cpu().numpy()
    if not batched:
        loss, eigC, modes, Wf = loss[:, 0], eigC[:, 0], modes[:, 0], Wf[0]
    return History(np.asarray(rec_steps), {"loss": loss, "eigC": eigC, "modes": modes}, {"W": Wf})


_EIGH_CACHE: dict[tuple, tuple[bytes, np.ndarray, np.ndarray]] = {}


def _eigh_desc(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lam, V) of the symmetric G, eigenvalues in decreasing order, eigenvectors as columns; read-only arrays.

    The closed forms and simulators of Ch 4 ask for the decomposition of one Gamma many times (a 512 x 512 Gamma
    costs a fraction of a second each time): the last few are kept, keyed by the bytes of G (compared in full on a
    hit, so a different matrix never gets another's eigenvectors)."""
    G = np.ascontiguousarray(G, dtype=np.float64)
    raw = G.tobytes()
    key = (G.shape, hash(raw))
    hit = _EIGH_CACHE.get(key)
    if hit is not None and hit[0] == raw:
        return hit[1], hit[2]
    lam, V = np.linalg.eigh(G)
    lam, V = lam[::-1].copy(), V[:, ::-1].copy()
    lam.flags.writeable = V.flags.writeable = False
    if len(_EIGH_CACHE) >= 8:
        _EIGH_CACHE.pop(next(iter(_EIGH_CACHE)))
    _EIGH_CACHE[key] = (raw, lam, V)
    return lam, V


def _check_records(name: str, records: list[torch.Tensor], steps: list[int]) -> None:
    """Raise `DivergenceError` at the first recorded step whose weights are not finite, checked after the loop.

    A GD iterate that leaves the finite numbers never comes back (inf - inf, inf * 0 and every operation on NaN give
    NaN), so a finite last record means finite records throughout: one reduction instead of one per recorded step;
    the records are searched only when the run diverged."""
    if not records or bool(torch.isfinite(records[-1]).all()):
        return
    first = next(i for i, r in enumerate(records) if not bool(torch.isfinite(r).all()))
    check_finite(name, records[first], step=steps[first])


def gamma_matrix(X: ArrayLike, Xp: ArrayLike) -> np.ndarray:
    """Gamma = 1/(2n) sum_i (x_i x_i'^T + x_i' x_i^T) = (X^T X' + X'^T X) / (2n), eq. `eq-ssl2-gamma`.

    X and Xp hold the two views of the same n inputs as rows, shape (n, m). Symmetric; may be indefinite.
    """
    X, Xp = as_real_array("X", X), as_real_array("Xp", Xp)
    if X.ndim != 2 or X.shape != Xp.shape or 0 in X.shape:
        raise ValueError(f"X and Xp must both have shape (n, m) with n, m >= 1; got {X.shape} and {Xp.shape}")
    return (X.T @ Xp + Xp.T @ X) / (2 * X.shape[0])


def _gamma(Gamma: ArrayLike, name: str = "Gamma") -> np.ndarray:
    G = as_real_array(name, Gamma, nonempty=True)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"{name} must be a square (m, m) matrix; got shape {G.shape}")
    if not np.allclose(G, G.T, rtol=0, atol=1e-10 * max(1.0, np.abs(G).max())):
        raise ValueError(f"{name} must be symmetric (a covariance or symmetrised cross-correlation of the views)")
    return 0.5 * (G + G.T)


def _level(level: float) -> float:
    level = as_positive("level", level)
    if level >= 1:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    return level


def _check_d(d: int, W: np.ndarray, G: np.ndarray, name: str = "W") -> int:
    d = as_int("d", d, minimum=1)
    if d > G.shape[-1]:
        raise ValueError(f"d (embedding dimension) must be at most m = {G.shape[-1]}; got {d}")
    if W.shape[-2] != d:
        raise ValueError(f"{name} has {W.shape[-2]} rows but d = {d}")
    if W.shape[-1] != G.shape[-1]:
        raise ValueError(f"{name} must have m = {G.shape[-1]} columns (the size of Gamma); got {W.shape[-1]}")
    return d
