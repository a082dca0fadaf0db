"""Hessian-free curvature of a loss on parameter space (Ch 6): Hessian-vector products and the top eigenvalues.

Sharpness S(w) = lambda_max(grad^2 L(w)) (eq. `eq-eos-sharpness`) is estimated from Hessian-vector products by
power iteration, a Krylov (Lanczos with full reorthogonalisation) solver or scipy's Lanczos. `top_eigs` (all three
methods) takes its products from `hvp_operator`: reverse-over-reverse, one backward pass through a gradient graph
built once per call (`create_graph=True`), as PyHessian does; `hvp` (forward-over-reverse,
`torch.func.jvp(torch.func.grad(L))`) is the one-off product of the checks. `exact_hessian` forms the dense
matrix of tiny models for the float64 checks; `model_loss` turns a torch model and its data into the loss of a
parameter dict that all of them take.
Losses are functions of a parameter dict (`torch.func` style); vectors on parameter space are dicts of tensors of
the same shapes. Nothing here is specific to the edge of stability: `learndyn.sharpness` (the Ch 6 experiments)
builds on it and re-exports it, so `ld.sharpness.top_eigs` is `ld.hessian.top_eigs`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Literal

import numpy as np
import torch
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh
from torch import nn

from .core import (
    as_int,
    as_real_tensor,
    one_blas_thread,
)

__all__ = ["mse_loss", "model_loss", "hvp", "hvp_operator", "top_eigs", "EigResult", "EigenToleranceWarning",
           "exact_hessian", "MAX_DENSE_PARAMS", "Params", "LossFn"]


Params = dict[str, torch.Tensor]


LossFn = Callable[[Params], torch.Tensor]


#: `exact_hessian` refuses models with more parameters than this (a dense P x P matrix of P HVP-sized columns).
MAX_DENSE_PARAMS = 5000


def mse_loss(out: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Cohen et al.'s MSE, eq. `eq-eos-mse`: the mean over samples of 1/2 ||f(x) - y||^2."""
    for name, t in (("out", out), ("Y", Y)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a real floating torch tensor; got {type(t).__name__}"
                            + (f" of dtype {t.dtype}" if isinstance(t, torch.Tensor) else ""))
    if out.shape != Y.shape:
        raise ValueError(f"out and Y must have the same shape; got {tuple(out.shape)} and {tuple(Y.shape)}")
    return 0.5 * ((out - Y) ** 2).sum(dim=-1).mean()


def _model_data(model: nn.Module, X: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a model and its full-batch data: X (n, d_in) and Y (n, d_out), real, finite, in the model's dtype."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    dtype = next(iter(model.parameters()), torch.empty(0)).dtype
    X = as_real_tensor("X", X, dtype=None if isinstance(X, torch.Tensor) else dtype, ndim=2)  # arrays: the model's
    Y = as_real_tensor("Y", Y, dtype=None if isinstance(Y, torch.Tensor) else dtype, ndim=2)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must have one row per example; got {X.shape[0]} and {Y.shape[0]} rows")
    if X.dtype != dtype or Y.dtype != dtype:
        raise TypeError(f"X and Y must have the model's dtype {dtype}; got {X.dtype} and {Y.dtype} (use .to({dtype}))")
    return X, Y


def model_loss(model: nn.Module, X: torch.Tensor, Y: torch.Tensor, loss: str = "mse") -> tuple[LossFn, Params]:
    """The full-batch loss as a function of a parameter dict, and a detached copy of the model's parameters.

    `loss` is "mse" (eq. `eq-eos-mse`) or "ce" (cross-entropy against the labels argmax Y).
    """
    if loss not in ("mse", "ce"):
        raise ValueError(f"loss must be 'mse' or 'ce'; got {loss!r}")
    X, Y = _model_data(model, X, Y)
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    labels = Y.argmax(dim=-1)

    def loss_of_params(p: Params) -> torch.Tensor:
        out = torch.func.functional_call(model, p, (X,))
        return mse_loss(out, Y) if loss == "mse" else nn.functional.cross_entropy(out, labels)

    return loss_of_params, params


def hvp(loss_of_params: LossFn, params: Params, v: Params) -> Params:
    """The Hessian-vector product H v = d/de grad L(w + e v) at e = 0, forward-over-reverse (eq. `eq-eos-hvp`).

    One call costs about as much as two or three gradients; H is never formed.
    """
    if not isinstance(v, dict) or set(v) != set(params):
        raise ValueError(f"v must be a dict with the keys of params {sorted(params)}; got "
                         f"{sorted(v) if isinstance(v, dict) else type(v).__name__}")
    for name, t in v.items():
        if not isinstance(t, torch.Tensor) or t.shape != params[name].shape or t.dtype != params[name].dtype:
            raise ValueError(f"v[{name!r}] must be a tensor shaped and typed like params[{name!r}] "
                             f"({tuple(params[name].shape)}, {params[name].dtype})")
    return torch.func.jvp(torch.func.grad(loss_of_params), (params,), (v,))[1]


def hvp_operator(loss_of_params: LossFn, params: Params) -> Callable[[torch.Tensor], torch.Tensor]:
    """x -> H x on flattened parameters, for many products at one point (power iteration, Lanczos).

    Builds the gradient's graph once (reverse over reverse, `create_graph=True`) and differentiates it again for
    each product, as PyHessian does, instead of recomputing the forward and backward pass per product like `hvp`.
    The products agree with `hvp` to rounding (tested); each costs about one backward pass.
    """
    leaves = {nm: p.detach().requires_grad_(True) for nm, p in params.items()}
    with torch.enable_grad():
        grads = torch.autograd.grad(loss_of_params(leaves), list(leaves.values()), create_graph=True)

    def matvec(x: torch.Tensor) -> torch.Tensor:
        vs = [c.reshape(p.shape) for c, p in zip(_split(x, params), params.values(), strict=True)]
        hv = torch.autograd.grad(grads, list(leaves.values()), grad_outputs=vs, retain_graph=True)
        return torch.cat([h.reshape(-1) for h in hv])

    return matvec


class EigenToleranceWarning(UserWarning):
    """`top_eigs` did not reach the requested tolerance, or was asked for one below the precision of its products."""


class EigResult(tuple):
    """What `top_eigs` returns: the pair (values, vectors), so `vals, vecs = top_eigs(...)` works, with its record.

    Attributes: `values` (k,), descending by value; `vectors` (dict of (k, *p.shape) tensors); `hvps`, the
    Hessian-vector products used; `iters`, the iterations (power: block products; krylov: products; lanczos:
    products); `residuals` (k,), the achieved ||H v - lambda v|| / |lambda| of each returned pair; `converged`,
    whether the requested `tol` was met (None when tol = 0, a fixed budget); `method` and `tol`.
    """

    values: np.ndarray
    vectors: Params
    hvps: int
    iters: int
    residuals: np.ndarray
    converged: bool | None
    method: str
    tol: float

    def __new__(cls, values: np.ndarray, vectors: Params, **info: object) -> EigResult:
        self = super().__new__(cls, (values, vectors))
        self.values, self.vectors = values, vectors
        for key, val in info.items():
            setattr(self, key, val)
        return self


def top_eigs(loss_of_params: LossFn, params: Params, k: int = 1,
             method: Literal["power", "krylov", "lanczos"] = "power", iters: int = 20, v0: Params | None = None,
             shift: float = 0.0, tol: float = 1e-6, seed: int = 0, tol_rest: float | None = None) -> EigResult:
    """The top-k Hessian eigenvalues (descending by value) and eigenvectors, from Hessian-vector products only.

    method="power": (block) power iteration on H + shift I with Rayleigh-Ritz, `iters` block products at most
    (k HVPs each), stopping once the eigenvalues change by less than `tol` (relative). It finds the eigenvalues of
    largest *modulus* of H + shift I, so with shift = 0 it can return a negative eigenvalue when |lambda_min| >
    lambda_max; a shift above -(lambda_max + lambda_min)/2 fixes that. Its error after j iterations is of order
    (|lambda_{k+1}| / |lambda_k|)^(2j) (eq. `eq-eos-power-rate`).
    method="krylov": Rayleigh-Ritz on the block Krylov space span{V, HV, H^2 V, ...} of the start block V (Lanczos
    with full reorthogonalisation, in float64), `iters` HVPs at most, stopping once every relative residual is at
    most `tol`. Warm-started with the previous Ritz vectors it converges like Lanczos, not like the ratio
    lambda_2 / lambda_1, so clustered top eigenvalues (the edge of stability) cost few products. `tol_rest`
    (default `tol`) is the residual the Ritz pairs 2..k must reach.
    What a result guarantees (all methods): each Ritz value theta_j is at most lambda_j (Cauchy interlacing: the
    estimate never exceeds lambda_max), and some eigenvalue lies within residual_j * |theta_j| of it
    (min_i |lambda_i - theta| <= ||Hv - theta v|| for a unit v). The residual does NOT say that this eigenvalue is
    lambda_max: a Krylov space grown from a warm vector that has become the second eigenvector converges to
    lambda_2 with a small residual (an exact eigenvector's pair has residual 0 in any space that contains it, so
    adding random vectors to the block does not help a residual-based stop). A warm block of k >= 2 previous
    Ritz vectors contains the runner-up, so an eigenvector that overtakes the top from second place is in the
    space (tested on the lock-in of Chapter 6's network); one rising from outside the block is caught only by a
    cold start from a random vector, whose component along every eigenvector Krylov amplifies.
    method="lanczos": scipy's `eigsh(which='LA')` (the largest algebraic eigenvalues) on a float64
    `LinearOperator`, `iters` restarts at most, tolerance `tol` (plus k products to measure the residuals).
    `v0` (a warm start, e.g. the vectors of the previous call) is a dict of tensors shaped (k, *p.shape) or, for
    k = 1, like the parameters. Returns an `EigResult`: the pair (eigenvalues (k,), vectors as a dict of
    (k, *p.shape) tensors), which also records the products used and the achieved residuals ||Hv - lambda v|| /
    |lambda|. An `EigenToleranceWarning` says when tol > 0 was not met, or is below what products in the
    parameters' dtype can resolve (float32: about 1e-6).
    """
    names = list(params)
    n = sum(p.numel() for p in params.values())
    k = as_int("k", k, minimum=1)
    if k > n:
        raise ValueError(f"k must not exceed the number of parameters {n}; got k={k}")
    iters = as_int("iters", iters, minimum=1)
    if method not in ("power", "krylov", "lanczos"):
        raise ValueError(f"method must be 'power', 'krylov' or 'lanczos'; got {method!r}")
    if not np.isfinite(shift) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"shift must be finite and tol >= 0 and finite; got shift={shift}, tol={tol}")
    dtype = next(iter(params.values())).dtype
    floor = 10 * float(torch.finfo(dtype).eps) if dtype.is_floating_point else 0.0
    if 0 < tol < floor:
        warnings.warn(f"top_eigs: tol={tol:g} is below what {dtype} Hessian-vector products resolve (about "
                      f"{floor:.1g} relative); the parameters are {dtype}, so the tolerance may never be met",
                      EigenToleranceWarning, stacklevel=2)
    if tol_rest is not None and (method != "krylov" or not np.isfinite(tol_rest) or tol_rest < tol):
        raise ValueError(f"tol_rest (the tolerance of Ritz pairs 2..k) applies to method='krylov' only and must be "
                         f"finite and >= tol={tol:g}; got tol_rest={tol_rest!r} with method={method!r}")
    V = _start_block(params, k, v0, seed)  # (n, k)
    if method == "krylov" and v0 is None:
        V = V[:, :1]  # a cold start: one random vector, whose Krylov space finds the top k (a random block is slower)

    counted = [0]
    base = hvp_operator(loss_of_params, params)

    def matvec(x: torch.Tensor) -> torch.Tensor:
        counted[0] += 1
        return base(x)

    if method == "lanczos":
        vals, vecs, its, conv = _lanczos(matvec, n, k, iters, V[:, 0], tol, params)
        HV = torch.stack([matvec(vecs[:, j]) for j in range(k)], dim=1)
        res = ((HV - vecs * torch.as_tensor(vals, dtype=vecs.dtype, device=vecs.device)).norm(dim=0).double()
               .cpu().numpy() / np.maximum(np.abs(vals), 1e-300))
    elif method == "krylov":
        vals, vecs, res, its, conv = _krylov(matvec, V, iters, k, tol, tol if tol_rest is None else tol_rest)
    else:
        vals, vecs, res, its, conv = _power(matvec, V, iters, shift, tol)
    converged = None if tol == 0 else bool(conv)
    if converged is False:
        warnings.warn(f"top_eigs ({method}): tol={tol:g} not reached in {its} iterations ({counted[0]} products); "
                      f"achieved relative residuals {', '.join(f'{v:.1e}' for v in np.asarray(res))}",
                      EigenToleranceWarning, stacklevel=2)
    vectors = {nm: c.T.reshape(k, *params[nm].shape) for nm, c in zip(names, _split(vecs, params), strict=True)}
    return EigResult(vals, vectors, hvps=counted[0], iters=its, residuals=np.asarray(res, dtype=float),
                     converged=converged, method=method, tol=float(tol))


def exact_hessian(loss_of_params: LossFn, params: Params) -> np.ndarray:
    """The dense Hessian (P, P) in float64 numpy, flattened in the order of `params` (tiny models only)."""
    n = sum(p.numel() for p in params.values())
    if n > MAX_DENSE_PARAMS:
        raise ValueError(f"exact_hessian forms a dense {n} x {n} matrix: the model has {n} parameters, more than "
                         f"MAX_DENSE_PARAMS = {MAX_DENSE_PARAMS}; use top_eigs instead")
    flat = _flatten(params)
    H = torch.func.hessian(lambda x: loss_of_params(_unflatten(x, params)))(flat)
    H = H.detach().cpu().double().numpy()
    return 0.5 * (H + H.T)


def _flatten(p: Params) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in p.values()])


def _split(x: torch.Tensor, like: Params) -> list[torch.Tensor]:
    return list(torch.split(x, [t.numel() for t in like.values()], dim=0))


def _unflatten(x: torch.Tensor, like: Params) -> Params:
    return {nm: c.reshape(t.shape) for (nm, t), c in zip(like.items(), _split(x, like), strict=True)}


def _start_block(params: Params, k: int, v0: Params | None, seed: int) -> torch.Tensor:
    ref = next(iter(params.values()))
    n = sum(p.numel() for p in params.values())
    if v0 is None:
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        return torch.randn(n, k, generator=gen, dtype=ref.dtype).to(ref.device)
    if set(v0) != set(params):
        raise ValueError(f"v0 must have the keys of params {sorted(params)}; got {sorted(v0)}")
    cols = []
    for nm, p in params.items():
        t = v0[nm].to(device=ref.device, dtype=ref.dtype)
        if t.shape == p.shape and k == 1:
            t = t.unsqueeze(0)
        if t.shape != (k, *p.shape):
            raise ValueError(f"v0[{nm!r}] must have shape {(k, *p.shape)}; got {tuple(t.shape)}")
        cols.append(t.reshape(k, -1))
    return torch.cat(cols, dim=1).T.contiguous()


def _power(matvec: Callable, V: torch.Tensor, iters: int, shift: float,
           tol: float) -> tuple[np.ndarray, torch.Tensor, np.ndarray, int, bool]:
    """Block power iteration on H + shift I with Rayleigh-Ritz; V (n, k) -> (eigenvalues of H, vectors (n, k),
    relative residuals, iterations, converged).

    Each iteration costs k products: W = (H + shift I) V gives the Ritz pairs of span(V) (returned at the end,
    with the residuals ||(W - shift V) q - theta V q|| / |theta|, free) and the next block, orth(W). The block
    follows the eigenvalues of largest modulus; the returned pairs are sorted by value.
    """
    V = torch.linalg.qr(V)[0]
    vals, vecs, res, done, it = None, V, None, False, 0
    for _ in range(iters):
        it += 1
        W = torch.stack([matvec(V[:, j]) for j in range(V.shape[1])], dim=1) + shift * V  # (n, k)
        T = V.T @ W  # Rayleigh-Ritz on span(V)
        evals, Q = torch.linalg.eigh(0.5 * (T + T.T))
        order = torch.argsort(evals.abs(), descending=True)  # power iteration follows the modulus
        Q, evals = Q[:, order], evals[order]
        new, vecs = (evals - shift).double().cpu().numpy(), V @ Q
        hy = W @ Q - shift * vecs
        res = ((hy - vecs * (evals - shift)).norm(dim=0).double().cpu().numpy()
               / np.maximum(np.abs(new), 1e-300))
        done = vals is not None and bool(np.all(np.abs(new - vals) <= tol * np.abs(new)))
        vals = new
        if done:
            break
        V = torch.linalg.qr(W @ Q)[0]
    by_value = np.argsort(-vals, kind="stable")
    return vals[by_value], vecs[:, torch.as_tensor(by_value, device=vecs.device)], res[by_value], it, done


def _krylov(matvec: Callable, V: torch.Tensor, iters: int, k: int, tol: float,
            tol_rest: float) -> tuple[np.ndarray, torch.Tensor, np.ndarray, int, bool]:
    """Rayleigh-Ritz on the block Krylov space of the start block V (n, b), with at most `iters` products.

    The basis is built in float64 with full (twice repeated) Gram-Schmidt: the start vectors first, then each
    product H q orthogonalised against the basis, in the order they were made (block Lanczos). Every basis vector
    q is multiplied once, so the projection T = B^T H B and the residuals ||H y - theta y|| of the Ritz pairs are
    exact without further products. T is kept incrementally (a product adds one row and column), and a stopping
    test costs an m x m eigensolve, not a pass over the n x m basis: every product already orthogonalised lies in
    the span of B, so for a unit Ritz vector y = B s (T s = theta s) the residual H y - theta y is the part outside
    the span of the products not yet orthogonalised, sum_i s_i (w_i - B^T B w_i), and its squared norm is
    s_U^T (W_U W_U^T - C_U C_U^T) s_U over those few products (their images W_U, whose dot products are taken once
    as each arrives, and coefficients C_U = W_U B^T, which T needs anyway). That difference loses digits once the
    residual nears sqrt(eps) theta, so it only screens: the residuals that decide the stop, and those returned, are
    computed from the vectors. Returns the top-k Ritz pairs by value, their relative residuals, the number of
    products, and whether they reached their tolerances, `tol` for the top pair and `tol_rest` for the others
    (always False with tol = 0).
    """
    dt = V.dtype
    n = V.shape[0]
    cap = min(iters, n)
    # the orthonormal basis and its images, one row per vector, grown by doubling: a solve rarely needs more than a
    # few dozen rows, and buffers that small are recycled by the allocator, while a fresh `iters`-row buffer of
    # hundreds of MB is new memory whose every page faults on its first write (measured: 6x the cost of the write)
    B = torch.empty(min(cap, _ROWS), n, dtype=torch.float64, device=V.device)
    W = torch.empty_like(B)
    # the projection lives in numpy on the host: an m x m eigensolve there costs a tenth of torch's, and the
    # stopping test runs one per product
    T = np.zeros((cap, cap))
    # vectors to orthogonalise, each with its coefficients against the first rows of B when already known (a
    # product's B w, computed for T, is the first Gram-Schmidt pass of the same vector) and, for a product H q_i,
    # the row i of the vector q_i it multiplied (-1 for a start vector)
    pending: list[tuple[torch.Tensor, torch.Tensor | None, int]] = [
        (v, None, -1) for v in torch.linalg.qr(V.double())[0].T]
    gram: dict[tuple[int, int], float] = {}  # w_i . w_j of the pending products, by their rows (i <= j)
    m, done, res = 0, False, None
    starts_left = len(pending)  # no stopping before every start vector is in the space
    while m < iters and pending:
        q, known, _ = pending.pop(0)
        starts_left -= 1
        if m:
            Bm = B[:m]
            if known is None:
                c = Bm @ q
            elif known.numel() < m:  # rows added since the product was made (a block start)
                c = torch.cat([known, B[known.numel():m] @ q])
            else:
                c = known
            q = torch.addmv(q, Bm.T, c, alpha=-1.0)  # q - B^T c, one fused operation
            q = torch.addmv(q, Bm.T, Bm @ q, alpha=-1.0)  # twice is enough
        norm = float(q.norm())
        if norm < 1e-10:
            continue  # the space is invariant in this direction
        if m == B.shape[0]:
            B, W = _grown(B, m, cap), _grown(W, m, cap)
        q = torch.div(q, norm, out=B[m])  # normalised in place in the basis (no copy)
        w = matvec(q.to(dt)).double()
        W[m] = w
        # T's new column q_i^T H q_m, mirrored into its row (H is symmetric: (H q_i)^T q_m differs by the rounding
        # of the products, far below any tolerance, and would cost one more pass over W)
        bw = B[: m + 1] @ w
        col = bw.cpu().numpy()
        T[: m + 1, m], T[m, : m + 1] = col, col
        for v, _, r in pending:  # the screen's Gram matrix of the pending products: one dot per pair, made once
            if r >= 0:
                gram[r, m] = float(v @ w)
        gram[m, m] = float(w @ w)
        pending.append((w, bw, m))
        m += 1
        if tol > 0 and m >= k and starts_left <= 0 and m < iters:
            theta, S = _ritz_small(T[:m, :m], k)
            screen = _screen_residuals(B, pending, m, theta, S, gram)
            if screen[0] <= 2 * tol and np.all(screen[1:] <= 2 * tol_rest):
                res = _ritz_residuals(B[:m], W[:m], theta, S)
                if res[0] <= tol and np.all(res[1:] <= tol_rest):
                    done = True
                    break
    if m < k:
        raise ValueError(f"iters={iters} products span fewer than k={k} directions; use iters >= k")
    if not done:
        theta, S = _ritz_small(T[:m, :m], k)
        res = _ritz_residuals(B[:m], W[:m], theta, S)
        done = tol > 0 and bool(res[0] <= tol and np.all(res[1:] <= tol_rest))
    return theta, (torch.as_tensor(S.T, device=B.device) @ B[:m]).T.to(dt), res, m, done


#: Rows of `_krylov`'s first basis buffers (then doubled as needed): at Chapter 6's 27 710 parameters each takes
#: 14 MB in float64, under glibc's largest mmap threshold (32 MB), so a freed buffer is reused by the next solve
#: instead of going back to the system.
_ROWS = 64


def _grown(buf: torch.Tensor, m: int, cap: int) -> torch.Tensor:
    """`buf` with twice the rows (at most `cap`), its first m rows copied."""
    out = buf.new_empty(min(2 * buf.shape[0], cap), buf.shape[1])
    out[:m] = buf[:m]
    return out


def _screen_residuals(B: torch.Tensor, pending: list, m: int, theta: np.ndarray, S: np.ndarray,
                      gram: dict[tuple[int, int], float]) -> np.ndarray:
    """The Ritz pairs' relative residuals from the products not yet orthogonalised (see `_krylov`), without a pass
    over the basis: sqrt(s_U^T (W_U W_U^T - C_U C_U^T) s_U) / |theta|, with W_U W_U^T from `gram` (the pending
    products' dot products, kept as they arrive). Each pending product's coefficients are completed against the m
    rows of B in place, so its Gram-Schmidt pass reuses them."""
    for j, (w, known, row) in enumerate(pending):
        if known.numel() < m:
            pending[j] = (w, torch.cat([known, B[known.numel():m] @ w]), row)
    if len(pending) == 1:  # a single start vector (Lanczos): one product pending, R is a number
        (_, c, row), = pending
        return np.abs(S[row]) * max(gram[row, row] - float(c @ c), 0.0) ** 0.5 / np.maximum(np.abs(theta), 1e-300)
    rows = [row for _, _, row in pending]
    G = np.array([[gram[min(a, b), max(a, b)] for b in rows] for a in rows])
    C = np.stack([c.cpu().numpy() for _, c, _ in pending])
    Su = S[rows]
    res2 = np.einsum("ij,ik,kj->j", Su, G - C @ C.T, Su)
    return np.sqrt(np.maximum(res2, 0.0)) / np.maximum(np.abs(theta), 1e-300)


def _ritz_small(T: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top-k eigenpairs (theta, s) of the projected matrix T (m, m), by value."""
    evals, S = np.linalg.eigh(T)  # ascending
    return evals[::-1][:k].copy(), S[:, ::-1][:, :k].copy()


def _ritz_residuals(B: torch.Tensor, W: torch.Tensor, theta: np.ndarray, S: np.ndarray) -> np.ndarray:
    """||H y - theta y|| / |theta| for the Ritz vectors y = B^T s (B, W: one row per vector), from the vectors."""
    St, th = torch.as_tensor(S.T, device=B.device), torch.as_tensor(theta, device=B.device)
    return ((St @ W - th[:, None] * (St @ B)).norm(dim=1) / th.abs().clamp_min(1e-300)).cpu().numpy()


def _lanczos(matvec: Callable, n: int, k: int, iters: int, v0: torch.Tensor, tol: float,
             params: Params) -> tuple[np.ndarray, torch.Tensor, int, bool]:
    ref = next(iter(params.values()))
    calls = [0]

    def mv(x: np.ndarray) -> np.ndarray:  # scipy probes with other dtypes: always go through float64
        calls[0] += 1
        xt = torch.as_tensor(np.asarray(x, dtype=np.float64).ravel(), dtype=ref.dtype, device=ref.device)
        return matvec(xt).double().cpu().numpy()

    op = LinearOperator((n, n), matvec=mv, dtype=np.float64)
    converged = True
    try:
        with one_blas_thread():  # ARPACK's BLAS between torch's products (see its docstring)
            vals, vecs = eigsh(op, k=k, which="LA", v0=v0.double().cpu().numpy(), maxiter=iters, tol=tol,
                               ncv=min(n, max(2 * k + 1, 20)))
    except ArpackNoConvergence as err:  # keep what converged, say so through the residuals and a warning
        if len(err.eigenvalues) < k:
            raise
        vals, vecs, converged = err.eigenvalues, err.eigenvectors, False
    order = np.argsort(vals)[::-1]
    return vals[order], torch.as_tensor(vecs[:, order], dtype=ref.dtype, device=ref.device), calls[0], converged
