"""How fast is a sharpness estimate? `learndyn.sharpness.top_eigs` against PyHessian and the dense Hessian (Ch 6).

On the Ch 6 digits MLP (1000 digits, 64-100-100-100-10 tanh, MSE, float64 so that 1e-4 is far above rounding), the
time to estimate the top Hessian eigenvalue to 1e-4 relative accuracy, measured in one process:
- ours, power iteration and Lanczos (`top_eigs`), with the number of Hessian-vector products (HVPs) each used;
- PyHessian's `hessian(...).eigenvalues()` power method, if `pyhessian` is installed (`pip install pyhessian`);
- the dense Hessian + `eigvalsh`, on the small 64-8-10 model of check V6.2 where it fits (610 parameters).
Prints the ratios: the targets are "no slower than PyHessian at equal accuracy" and "within 1.3x of
(number of HVPs) x (time of one HVP)". Run from the repository root: `.venv/bin/python bench/bench_sharpness.py`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import learndyn as ld
from learndyn import sharpness as sh


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    """Best wall time of `repeat` calls (seconds) and the last result."""
    best, out = np.inf, None
    for _ in range(repeat):
        tic = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - tic)
    return best, out


def count_hvps(fn) -> tuple[float, object, int]:
    """Run fn with `sh.hvp_operator` wrapped so that every product it returns is counted: (seconds, result, count).

    top_eigs builds its operator through the module attribute, so the wrapper sees every Hessian-vector product."""
    original, calls = sh.hvp_operator, [0]

    def counting(*args, **kwargs):
        matvec = original(*args, **kwargs)

        def counted(x):
            calls[0] += 1
            return matvec(x)

        return counted

    sh.hvp_operator = counting
    try:
        seconds, out = timed(fn)
    finally:
        sh.hvp_operator = original
    return seconds, out, calls[0]


def ours(loss, params, ref: float, target: float) -> list[tuple[str, float, float, int]]:
    rows = []
    for iters in range(5, 400, 5):  # the fewest power iterations that reach the target (cold start, seed 0)
        if abs(sh.top_eigs(loss, params, iters=iters, tol=0.0)[0][0] - ref) <= target * ref:
            break
    sec, (vals, _), n = count_hvps(lambda: sh.top_eigs(loss, params, iters=iters, tol=0.0))
    rows.append(("ours, power", sec, abs(vals[0] - ref) / ref, n))
    sec, (vals, _), n = count_hvps(lambda: sh.top_eigs(loss, params, method="lanczos", tol=target / 10))
    rows.append(("ours, Lanczos", sec, abs(vals[0] - ref) / ref, n))
    return rows


def pyhessian_row(model, X, Y, ref: float, target: float) -> tuple[str, float, float, int] | None:
    try:
        from pyhessian import hessian  # optional: pip install pyhessian
    except ImportError:
        print("PyHessian is not installed (`pip install pyhessian`): skipped")
        return None
    h = hessian(model, sh.mse_loss, data=(X, Y), cuda=X.is_cuda)
    for tol in (1e-3, 1e-4, 1e-5, 1e-6):
        sec, (vals, _) = timed(lambda tol=tol: h.eigenvalues(maxIter=1000, tol=tol, top_n=1))
        err = abs(vals[0] - ref) / ref
        if err <= target:
            return (f"PyHessian power (tol {tol:g})", sec, err, -1)
    return ("PyHessian power (target not reached)", sec, err, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=1e-4, help="relative accuracy of the top eigenvalue")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n", type=int, default=1000, help="number of digits (a smoke test uses fewer)")
    parser.add_argument("--width", type=int, default=100)
    args = parser.parse_args()
    device = ld.setup("bench_sharpness", threads=args.threads)
    X, Y, _ = sh.digits_tensors(args.n, device=device, dtype=torch.float64)
    model = sh.make_mlp(width=args.width, seed=0, dtype=torch.float64).to(device)
    loss, params = sh.model_loss(model, X, Y)
    ref = float(sh.top_eigs(loss, params, k=1, method="lanczos", tol=1e-12)[0][0])
    v = {k: torch.randn_like(t) for k, t in params.items()}
    sh.hvp(loss, params, v)  # warm-up
    t_hvp, _ = timed(lambda: sh.hvp(loss, params, v), repeat=20)
    t_grad, _ = timed(lambda: torch.func.grad(loss)(params), repeat=20)
    print(f"digits MLP, {sum(p.numel() for p in params.values())} parameters, float64, {device}; "
          f"top eigenvalue {ref:.8f}")
    print(f"one HVP {t_hvp * 1e3:.2f} ms = {t_hvp / t_grad:.2f} gradients ({t_grad * 1e3:.2f} ms)")
    rows = ours(loss, params, ref, args.target)
    py = pyhessian_row(model, X, Y, ref, args.target)
    print(f"{'method':38s} {'time (s)':>9s} {'rel. error':>11s} {'HVPs':>5s} {'time / (HVPs x t_hvp)':>22s}")
    for name, sec, err, n in rows + ([py] if py else []):
        ratio = f"{sec / (n * t_hvp):22.2f}" if n > 0 else f"{'-':>22s}"
        print(f"{name:38s} {sec:9.3f} {err:11.2e} {n if n > 0 else '-':>5} {ratio}")
    if py:
        print(f"PyHessian / ours (power): {py[1] / rows[0][1]:.2f}   "
              f"PyHessian / ours (Lanczos): {py[1] / rows[1][1]:.2f}")
    # the dense Hessian where it fits: the 610-parameter model of V6.2
    Xs, Ys, _ = sh.digits_tensors(200, device="cpu", dtype=torch.float64)
    small_loss, small_params = sh.model_loss(sh.make_mlp(width=8, depth=1, dtype=torch.float64), Xs, Ys)
    t_dense, top = timed(lambda: np.linalg.eigvalsh(sh.exact_hessian(small_loss, small_params))[-1])
    small = ours(small_loss, small_params, float(top), args.target)
    print(f"small model (610 parameters): dense Hessian + eigvalsh {t_dense:.3f} s")
    for name, sec, _, n in small:
        print(f"  {name}: {sec:.3f} s ({n} HVPs); dense / ours = {t_dense / sec:.1f}")


if __name__ == "__main__":
    main()
